// Channels-last averages by rows of pixels (README "Pixels"): the data recast with the
// channels innermost, (N, 1, H, W, C) with a unit window over C (dmlops.backends.cpu). A task
// takes whole output rows, pixel by pixel, a register of channels at a time: each pixel's
// window summed in row-major order (its rows, then its columns: the plain kernel's order, so
// its bits), divided and stored; the window's tables from SeparableGeometry. The row walk
// (avg_pool_rows.h) instead took each pixel as a row of its own: its machinery (tasks, window
// rows, counts, the finish) once per pixel.
// Precondition (avg_pixel_path): averages of float32 or float16 (summed in float32); x of
// rank 5 whose last dimension (the channels) is packed and at least a register of sums; the
// window's last dimension a unit at stride 1 without padding.
#pragma once
#include <cstdint>

#include "avg_pool/avg_pool.h"
#include "avg_pool/avg_pool_registers.h"
#include "common/prefetch.h"
#include "common/separable.h"
#include "common/simd.h"
#include "common/threads.h"
#include "common/window.h"

namespace dmlops {

template <class T, class A> inline bool avg_pixel_path(const SumPoolCall& c) {
  const Window& w = c.w;
  if (c.plain || c.q.count != 0 || c.x.rank != 5 || w.k != 3) return false;
  if (w.size[2] != 1 || w.stride[2] != 1 || w.start[2] != 0 || w.end[2] != 0) return false;
  const int64_t ch = c.x.sizes[4];
  return SumLanes<T, A>::kFits && ch >= SumLanes<T, A>::L && ch == c.y.sizes[4] &&
         c.x.strides[4] == 1 &&
         w.size[0] <= kMostRegisterOffsets;
}

template <class T, class A> void average_pool_pixels(const SumPoolCall& c) {
  using Lanes = SumLanes<T, A>;
  using Raw = typename Lanes::Raw;
  using VR = typename Lanes::VR;
  using V = typename Lanes::VA;
  constexpr int L = Lanes::L;
  const SeparableGeometry geo(c.x, c.y, c.w);  // (over H and W: the window's tables)
  const Dim &rows = geo.rows, &cols = geo.last;
  const int64_t oh = c.y.sizes[2], ow = c.y.sizes[3], ch = c.x.sizes[4];
  const int64_t xw = c.x.strides[3], yw = c.y.strides[3], yc = c.y.strides[4];
  const bool padded = c.include_padding;
  // the rows that the output row kPrefetchRowsAhead rows on reads anew, asked for pixel by
  // pixel from the last window row's: without, a row's loads waited on memory (addresses
  // past the plane are asked for in vain, never read)
  const int64_t fresh_rows = rows.stride < rows.window ? rows.stride : rows.window;
  const int64_t pitch = c.x.strides[2] * int64_t(sizeof(T));
  const int64_t ahead = (kPrefetchRowsAhead * rows.stride - fresh_rows + 1) * pitch;
  const int64_t fresh = cols.stride * xw * int64_t(sizeof(T));
  const double work = double(c.y.count()) * double(rows.window * cols.window);
  parallel_for(c.y.sizes[0] * c.y.sizes[1] * oh, work, c.threads, [&](int64_t lo, int64_t hi) {
    const Raw* xrows[kMostRegisterOffsets];
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t oy = item % oh, p = item / oh;
      const int64_t n = p / c.y.sizes[1], i = p % c.y.sizes[1];
      const Raw* x = c.x.template at<Raw>(n * c.x.strides[0] + i * c.x.strides[1]);
      T* y = c.y.template at<T>(n * c.y.strides[0] + i * c.y.strides[1] + oy * c.y.strides[2]);
      const int64_t count = geo.each_window_row(
          oy, [&](int64_t m, int64_t r) { xrows[m] = x + r * c.x.strides[2]; });
      const int64_t row_factor = geo.row_factor(oy, padded);
      // pixel by pixel, a register of channels at a time (the last overlapping the one
      // before); the row's registers of channels one after another measured 1.1 times as long
      for (int64_t o = 0; o < ow; ++o) {
        const Span js = geo.column_offsets(o);
        const int64_t first = input_coord(cols, o, js.lo) * xw;
        if (count > 0 && js.hi > js.lo)
          for (int64_t r = 0; r < fresh_rows; ++r)
            prefetch_span(xrows[count - 1] + first, ahead + r * pitch, fresh);
        const int64_t divisor = row_factor * geo.column_factor(o, padded);
        sweep<L>(0, ch, [&](int64_t q) {
          V sum{};
          for (int64_t m = 0; m < count; ++m) {
            const Raw* px = xrows[m] + first + q;
            for (int64_t j = js.lo; j < js.hi; ++j, px += cols.dilation * xw)
              sum += Lanes::widen_lanes(load_vec<VR>(px));
          }
          store_averages<T, A, L>(y + o * yw + q * yc, yc, divisor > 0 ? sum / A(divisor) : V{});
        }, [](int64_t) {});
      }
    }
  });
}

}  // namespace dmlops
