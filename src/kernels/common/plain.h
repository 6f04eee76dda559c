// What the plain kernels share: an output's coordinates from its flat position, and the
// real elements of its window in row-major offset order (ascending flat input index).
#pragma once
#include <cstdint>

#include "common/tensor.h"
#include "common/threads.h"
#include "common/window.h"

namespace dmlops {

// o = the coordinates of row-major position `flat` over t's sizes; returns t's element offset.
inline int64_t coords_of(int64_t flat, const Tensor& t, int64_t* o) {
  int64_t offset = 0;
  for (int d = t.rank - 1; d >= 0; --d) {
    o[d] = flat % t.sizes[d];
    flat /= t.sizes[d];
    offset += o[d] * t.strides[d];
  }
  return offset;
}

// fn(o, yoff) for every output of y (its coordinates and element offset), shared out among
// `threads` threads; a window of `window` elements per output sizes the work.
template <class F>
inline void for_each_output(const Tensor& y, double window, int threads, F&& fn) {
  const int64_t outputs = y.count();
  parallel_for(outputs, double(outputs) * window, threads, [&](int64_t lo, int64_t hi) {
    int64_t o[kMaxRank];
    for (int64_t flat = lo; flat < hi; ++flat) fn(o, coords_of(flat, y, o));
  });
}

// fn(xoff, foff) for each real element of output o's window, in row-major offset order: its
// element offset into x and its flat index through `pitch` (nullptr: 0); returns how many.
template <class F>
inline int64_t for_each_real_element(const Tensor& x, const Window& w, const int64_t* o,
                                     const int64_t* pitch, F&& fn) {
  const int k = x.rank - 2;
  Span spans[kMaxSpatial];
  int64_t j[kMaxSpatial], count = 1;
  for (int i = 0; i < k; ++i) {
    spans[i] = real_offsets(dim_of(w, i, x.sizes[i + 2]), o[i + 2]);
    if (spans[i].hi <= spans[i].lo) return 0;
    count *= spans[i].hi - spans[i].lo;
    j[i] = spans[i].lo;
  }
  for (;;) {
    int64_t xoff = o[0] * x.strides[0] + o[1] * x.strides[1], foff = 0;
    if (pitch != nullptr) foff = o[0] * pitch[0] + o[1] * pitch[1];
    for (int i = 0; i < k; ++i) {
      int64_t xi = input_coord(dim_of(w, i, x.sizes[i + 2]), o[i + 2], j[i]);
      xoff += xi * x.strides[i + 2];
      if (pitch != nullptr) foff += xi * pitch[i + 2];
    }
    fn(xoff, foff);
    int i = k - 1;
    while (i >= 0 && ++j[i] == spans[i].hi) {
      j[i] = spans[i].lo;
      --i;
    }
    if (i < 0) return count;
  }
}

}  // namespace dmlops
