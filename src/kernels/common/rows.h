// The row walk shared by the pooling kernels' fast paths: outputs are taken a row (the last
// spatial dimension) at a time, a tile of it per task; for each window offset of the other
// dimensions, in row-major order, the last dimension's offsets each cover a contiguous range
// of the row's outputs (real_outputs), so the innermost loop has no bounds checks.
#pragma once
#include <cstdint>

#include "common/tensor.h"
#include "common/window.h"

namespace dmlops {

struct RowTask {
  int64_t o[kMaxRank];  // the row's output coordinates but the last
  int64_t t0, t1;       // the tile: outputs [t0, t1) of the row
};

// Row `item / tiles`, tile `item % tiles` of outputs `y_sizes` (rank dims).
inline RowTask row_task(int64_t item, int64_t tiles, int rank, const int64_t* y_sizes,
                        int64_t tile) {
  RowTask t;
  int64_t r = item / tiles, part = item - r * tiles;
  for (int d = rank - 2; d >= 0; --d) {
    t.o[d] = r % y_sizes[d];
    r /= y_sizes[d];
  }
  int64_t ow = y_sizes[rank - 1];
  t.t0 = part * tile;
  t.t1 = t.t0 + tile < ow ? t.t0 + tile : ow;
  return t;
}

// Visits every window offset of the spatial dimensions but the last that reads a real
// element for the row `t`, in row-major order: fn(xoff, foff) with the element offset into x
// and the flat-index offset (through `pitch`) of that row of the window; false when there is
// none (every output of the row then has an empty window).
template <class F>
inline bool for_each_leading_offset(const Tensor& x, const Window& w, const int64_t* pitch,
                                    const RowTask& t, F&& fn) {
  const int rank = x.rank, lead = rank - 3;  // spatial dims before the last
  Span spans[kMaxSpatial];
  int64_t j[kMaxSpatial];
  for (int i = 0; i < lead; ++i) {
    spans[i] = real_offsets(dim_of(w, i, x.sizes[i + 2]), t.o[i + 2]);
    if (spans[i].hi <= spans[i].lo) return false;
    j[i] = spans[i].lo;
  }
  for (;;) {
    int64_t xoff = t.o[0] * x.strides[0] + t.o[1] * x.strides[1];
    int64_t foff = t.o[0] * pitch[0] + t.o[1] * pitch[1];
    for (int i = 0; i < lead; ++i) {
      int64_t xi = input_coord(dim_of(w, i, x.sizes[i + 2]), t.o[i + 2], j[i]);
      xoff += xi * x.strides[i + 2];
      foff += xi * pitch[i + 2];
    }
    fn(xoff, foff);
    int i = lead - 1;
    while (i >= 0 && ++j[i] == spans[i].hi) {
      j[i] = spans[i].lo;
      --i;
    }
    if (i < 0) return true;
  }
}

// For each last-dimension offset j (ascending) whose real outputs meet the tile:
// fn(lo, hi, x0) with the tile's outputs [lo, hi) and the input coordinate x0 of output lo.
template <class F>
inline void for_each_last_offset(const Dim& d, Span reach, int64_t ow, int64_t t0, int64_t t1,
                                 F&& fn) {
  for (int64_t j = reach.lo; j < reach.hi; ++j) {
    Span s = real_outputs(d, j, ow);
    int64_t lo = s.lo > t0 ? s.lo : t0, hi = s.hi < t1 ? s.hi : t1;
    if (lo < hi) fn(lo, hi, input_coord(d, lo, j));
  }
}

}  // namespace dmlops
