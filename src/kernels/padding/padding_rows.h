// Padding a row (the last dimension) at a time: the source row is found once per output
// row from the other dimensions' maps, then the row is three runs: the start padding (each
// element through the last dimension's map), the input row itself (a straight copy, which
// the compiler turns into vector moves when both rows are packed) and the end padding.
// A row whose source lies in CONSTANT's padding is filled with the value. Precondition: none.
#pragma once
#include <cstdlib>
#include <new>

#include "common/threads.h"
#include "padding/padding.h"

namespace dmlops {

template <class T>
void padding_rows(const PadCall& c) {
  const int rank = c.y.rank, last = rank - 1;
  const int64_t out = c.y.sizes[last], n = c.x.sizes[last], lead = c.start[last];
  const T value = T(c.value);
  // the source of each output coordinate, per dimension (-1: CONSTANT's padding)
  int64_t total = 0;
  for (int d = 0; d < rank; ++d) total += c.y.sizes[d];
  int64_t* maps = static_cast<int64_t*>(std::malloc(sizeof(int64_t) * size_t(total)));
  if (maps == nullptr) throw std::bad_alloc();
  int64_t* map_of[kMaxRank];
  for (int d = 0, at = 0; d < rank; at += int(c.y.sizes[d]), ++d) {
    map_of[d] = maps + at;
    for (int64_t o = 0; o < c.y.sizes[d]; ++o)
      map_of[d][o] = pad_source(c.mode, c.x.sizes[d], o - c.start[d]);
  }
  const int64_t rows = c.y.count() / out;
  const int64_t mid_lo = lead < out ? lead : out;
  const int64_t mid_hi = lead + n < out ? lead + n : out;
  const int64_t xs = c.x.strides[last], ys = c.y.strides[last];
  parallel_for(rows, double(c.y.count()), c.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      int64_t rest = r, xoff = 0, yoff = 0;
      bool outside = false;
      for (int d = last - 1; d >= 0; --d) {
        int64_t o = rest % c.y.sizes[d];
        rest /= c.y.sizes[d];
        int64_t src = map_of[d][o];
        outside = outside || src < 0;
        xoff += src * c.x.strides[d];
        yoff += o * c.y.strides[d];
      }
      T* y = c.y.template at<T>(yoff);
      if (outside) {
        for (int64_t o = 0; o < out; ++o) y[o * ys] = value;
        continue;
      }
      const T* x = c.x.template at<T>(xoff);
      auto border = [&](int64_t a, int64_t b) {
        for (int64_t o = a; o < b; ++o) {
          int64_t src = map_of[last][o];
          y[o * ys] = src < 0 ? value : x[src * xs];
        }
      };
      border(0, mid_lo);
      if (xs == 1 && ys == 1) {
        for (int64_t o = mid_lo; o < mid_hi; ++o) y[o] = x[o - lead];
      } else {
        for (int64_t o = mid_lo; o < mid_hi; ++o) y[o * ys] = x[(o - lead) * xs];
      }
      border(mid_hi > mid_lo ? mid_hi : mid_lo, out);
    }
  });
  std::free(maps);
}

}  // namespace dmlops
