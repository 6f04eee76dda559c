// 2-D averages a plane's output row at a time (README "Planes"): the row's interior by the
// registers path (avg_pool_registers.h), its averages stored there, and its border outputs
// one at a time, with each row's window rows, divisors and asks for input ahead worked out
// here from the window's geometry. The row walk (avg_pool_rows.h), for any rank and layout,
// spent a third of a 56-wide row's time on its machinery (tasks, window rows, kept counts, the
// finish of the borders).
// Precondition (plane_path): averages; x and y of rank 4 (2-D windows), their rows packed;
// the window's stride along the row 1 or 2; at most kMostRegisterOffsets window rows.
#pragma once
#include <cstdint>
#include <vector>

#include "avg_pool/avg_pool.h"
#include "avg_pool/avg_pool_registers.h"
#include "common/prefetch.h"
#include "common/threads.h"
#include "common/window.h"

namespace dmlops {

template <class T, class A> inline bool plane_path(const SumPoolCall& c) {
  const Window& w = c.w;
  return SumLanes<T, A>::kFits && !c.plain && c.q.count == 0 && c.x.rank == 4 && w.k == 2 &&
         c.x.strides[3] == 1 && c.y.strides[3] == 1 && (w.stride[1] == 1 || w.stride[1] == 2) &&
         w.size[0] <= kMostRegisterOffsets && c.y.sizes[3] > 0;
}

template <class T, class A> void average_pool_planes(const SumPoolCall& c) {
  const Dim rows = dim_of(c.w, 0, c.x.sizes[2]), last = dim_of(c.w, 1, c.x.sizes[3]);
  const int64_t oh = c.y.sizes[2], ow = c.y.sizes[3];
  const Span interior{real_outputs(last, 0, ow).lo, real_outputs(last, last.window - 1, ow).hi};
  // the input rows the output row kPrefetchRowsAhead on reads anew (common/rows.h RowsAhead)
  const int64_t fresh_rows = rows.stride < rows.window ? rows.stride : rows.window;
  const int64_t pitch = c.x.strides[2] * int64_t(sizeof(T));
  const int64_t ahead = (kPrefetchRowsAhead * rows.stride - fresh_rows + 1) * pitch;
  const int64_t row_bytes = last.in * int64_t(sizeof(T));
  const double work = double(c.y.count()) * double(rows.window * last.window);
  // each output row's real window rows and divisor factor, each output column's (their
  // divisions once per call: per row, they cost 2b a tenth of its time)
  struct Position {
    Span js;
    int64_t factor;
  };
  std::vector<Position> row_pos(static_cast<size_t>(oh)), col_pos(static_cast<size_t>(ow));
  for (int64_t o = 0; o < oh; ++o)
    row_pos[o] = Position{real_offsets(rows, o), divisor_factor(rows, o, c.include_padding)};
  for (int64_t o = 0; o < ow; ++o)
    col_pos[o] = Position{real_offsets(last, o), divisor_factor(last, o, c.include_padding)};
  parallel_for(c.y.sizes[0] * c.y.sizes[1] * oh, work, c.threads, [&](int64_t lo, int64_t hi) {
    const T* xrows[kMostRegisterOffsets];
    A scratch[1];  // (the registers path's sums go to y here, never to scratch)
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t oy = item % oh, p = item / oh;
      const int64_t n = p / c.y.sizes[1], i = p % c.y.sizes[1];
      const T* x = c.x.template at<T>(n * c.x.strides[0] + i * c.x.strides[1]);
      T* y = c.y.template at<T>(n * c.y.strides[0] + i * c.y.strides[1] + oy * c.y.strides[2]);
      const Span rs = row_pos[oy].js;
      int64_t count = 0;
      for (int64_t j = rs.lo; j < rs.hi; ++j)
        xrows[count++] = x + input_coord(rows, oy, j) * c.x.strides[2];
      if (count > 0)
        for (int64_t r = 0; r < fresh_rows; ++r)
          prefetch_span(xrows[count - 1], ahead + r * pitch, row_bytes);
      const int64_t row_factor = row_pos[oy].factor;
      int64_t va = interior.lo, vb = interior.hi > interior.lo ? interior.hi : interior.lo;
      const int64_t inner = row_factor * last.window;  // every interior output's divisor
      if (!(count > 0 && inner > 0 && va < vb &&
            sum_pool_registers<T, A>(last, xrows, count, va, vb,
                                     SumsTo<T, A>{scratch, y, A(inner)}, 0)))
        va = vb = 0;
      // the borders (or the whole row), one output at a time
      auto one = [&](int64_t o) {
        const Span js = col_pos[o].js;
        A sum = A(0);
        for (int64_t m = 0; m < count; ++m)
          for (int64_t j = js.lo; j < js.hi; ++j)
            sum += widen<A>(load(xrows[m] + input_coord(last, o, j)));
        y[o] = average_of<T, A>(sum, row_factor * col_pos[o].factor);
      };
      for (int64_t o = 0; o < va; ++o) one(o);
      for (int64_t o = vb; o < ow; ++o) one(o);
    }
  });
}

}  // namespace dmlops
