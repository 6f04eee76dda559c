// 2-D averages a plane's output row at a time (README "Planes"): the row's interior by the
// registers path (avg_pool_registers.h), its averages stored there, and its border outputs
// one at a time, with each row's window rows and divisors from the window's tables
// (SeparableGeometry) and its input asked for ahead (RowsAhead). The row walk
// (avg_pool_rows.h), for any rank and layout, spent a third of a 56-wide row's time on its
// machinery (tasks, window rows, kept counts, the finish of the borders).
// Precondition (plane_path): averages; x and y of rank 4 (2-D windows), their rows packed;
// the window's stride along the row 1 or 2; at most kMostRegisterOffsets window rows.
#pragma once
#include <cstdint>

#include "avg_pool/avg_pool.h"
#include "avg_pool/avg_pool_registers.h"
#include "common/rows.h"
#include "common/separable.h"
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
  // (the window's tables once per call: their divisions per row cost 2b a tenth of its time)
  const SeparableGeometry geo(c.x, c.y, c.w);
  const Dim &rows = geo.rows, &last = geo.last;
  const int64_t oh = c.y.sizes[2], ow = c.y.sizes[3];
  const bool padded = c.include_padding;
  const RowsAhead ahead(c.x, c.w);
  const double work = double(c.y.count()) * double(rows.window * last.window);
  parallel_for(c.y.sizes[0] * c.y.sizes[1] * oh, work, c.threads, [&](int64_t lo, int64_t hi) {
    int64_t xoffs[kMostRegisterOffsets];
    const T* xrows[kMostRegisterOffsets];
    A scratch[1];  // (the registers path's sums go to y here, never to scratch)
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t oy = item % oh, p = item / oh;
      const int64_t n = p / c.y.sizes[1], i = p % c.y.sizes[1];
      const T* x = c.x.template at<T>(n * c.x.strides[0] + i * c.x.strides[1]);
      T* y = c.y.template at<T>(n * c.y.strides[0] + i * c.y.strides[1] + oy * c.y.strides[2]);
      const int64_t count = geo.each_window_row(oy, [&](int64_t m, int64_t r) {
        xoffs[m] = r * c.x.strides[2];
        xrows[m] = x + xoffs[m];
      });
      ahead.ask(x, xoffs, count);
      const int64_t row_factor = geo.row_factor(oy, padded);
      const int64_t inner = row_factor * last.window;  // every interior output's divisor
      const bool interior =
          count > 0 && inner > 0 && geo.interior.lo < geo.interior.hi &&
          sum_pool_registers<T, A>(last, xrows, count, geo.interior.lo, geo.interior.hi,
                                   SumsTo<T, A>{scratch, y, A(inner)}, 0);
      // the edges (or, where the registers path did not take the interior, the whole row),
      // one output at a time
      auto one = [&](int64_t o, Span js) {
        A sum = A(0);
        for (int64_t m = 0; m < count; ++m)
          for (int64_t j = js.lo; j < js.hi; ++j)
            sum += widen<A>(load(xrows[m] + input_coord(last, o, j)));
        y[o] = average_of<T, A>(sum, row_factor * geo.column_factor(o, padded));
      };
      if (interior) {
        for (size_t e = 0; e < geo.edges.size(); ++e) one(geo.edges[e], geo.edge_offsets[e]);
      } else {
        for (int64_t o = 0; o < ow; ++o) one(o, geo.column_offsets(o));
      }
    }
  });
}

}  // namespace dmlops
