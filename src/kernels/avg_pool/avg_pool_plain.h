// The plain summing kernel: one output at a time, its window's real elements in row-major
// offset order. Every fast path must give its bits.
#pragma once
#include "avg_pool/avg_pool.h"
#include "common/threads.h"

namespace dmlops {

// finish(coordinates, offset of the output row, o, 1, &sum, &real, &divisor) for every
// output o (the last coordinate), with the sum of its window's real elements, their count
// and its divisor; A is the accumulator type.
template <class T, class A, class F>
void sum_pool_plain(const SumPoolCall& c, F&& finish) {
  const int rank = c.x.rank, k = rank - 2;
  const int64_t outputs = c.y.count();
  parallel_for(outputs, double(outputs) * double(c.w.size[0]), c.threads,
               [&](int64_t lo, int64_t hi) {
    int64_t o[kMaxRank], j[kMaxSpatial];
    for (int64_t flat = lo; flat < hi; ++flat) {
      int64_t rest = flat, yoff = 0;
      for (int d = rank - 1; d >= 0; --d) {
        o[d] = rest % c.y.sizes[d];
        rest /= c.y.sizes[d];
        yoff += o[d] * c.y.strides[d];
      }
      Span spans[kMaxSpatial];
      bool any = true;
      int64_t real = 1, divisor = 1;
      for (int i = 0; i < k; ++i) {
        Dim d = dim_of(c.w, i, c.x.sizes[i + 2]);
        spans[i] = real_offsets(d, o[i + 2]);
        any = any && spans[i].hi > spans[i].lo;
        real *= spans[i].hi - spans[i].lo;
        divisor *= divisor_factor(d, o[i + 2], c.include_padding);
        j[i] = spans[i].lo;
      }
      A sum = A(0);
      while (any) {
        int64_t xoff = o[0] * c.x.strides[0] + o[1] * c.x.strides[1];
        for (int i = 0; i < k; ++i)
          xoff += input_coord(dim_of(c.w, i, c.x.sizes[i + 2]), o[i + 2], j[i]) *
                  c.x.strides[i + 2];
        sum += widen<A>(load(c.x.template at<T>(xoff)));
        int i = k - 1;
        while (i >= 0 && ++j[i] == spans[i].hi) {
          j[i] = spans[i].lo;
          --i;
        }
        if (i < 0) break;
      }
      const int64_t at = o[rank - 1], none = 0;
      finish(o, yoff - at * c.y.strides[rank - 1], at, 1, &sum, any ? &real : &none, &divisor);
    }
  });
}

}  // namespace dmlops
