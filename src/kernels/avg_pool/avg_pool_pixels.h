// Channels-last averages by rows of pixels (README "Pixels"): the data recast with the
// channels innermost, (N, 1, H, W, C) with a unit window over C (dmlops.backends.cpu). A task
// takes whole output rows: a register of channels at a time, across the row's pixels, each
// pixel's window summed in row-major order (its rows, then its columns: the plain kernel's
// order, so its bits), divided and stored. The row walk (avg_pool_rows.h) instead took each
// pixel as a row of its own, all its channels at once: its machinery once per pixel, and the
// three input rows a pixel's window reads (28 KB apart at 64 channels) too large for the
// first-level cache, where a register of channels' share of them fits.
// Precondition (avg_pixel_path): averages of float32 or float16 (summed in float32); x of
// rank 5 whose last dimension (the channels) is packed and at least a register of sums; the
// window's last dimension a unit at stride 1 without padding.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

#include "avg_pool/avg_pool.h"
#include "avg_pool/avg_pool_registers.h"
#include "common/prefetch.h"
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

// A register of averages r (NaNs canonical) to y[0], y[yc], ..: one store where packed.
template <class T, class A, int L> inline void store_averages(T* y, int64_t yc, Vec<A, L> r) {
  if constexpr (std::is_same_v<T, Half>) {
    float f[16] = {};  // (floats_to_halves16 makes NaNs canonical)
    uint16_t h[16];
    store_vec(f, r);
    floats_to_halves16(f, h);
    if (yc == 1) {
      std::memcpy(static_cast<void*>(y), h, sizeof(uint16_t) * L);
    } else {
      for (int k = 0; k < L; ++k) y[k * yc] = Half{h[k]};
    }
  } else {
    r = r != r ? Vec<A, L>{} + canonical(A(NAN)) : r;
    if (yc == 1) {
      store_vec(y, r);
    } else {
      // (channels not packed: a C-contiguous output, SPEC 4's default for any input)
      for (int k = 0; k < L; ++k) y[k * yc] = r[k];
    }
  }
}

template <class T, class A> void average_pool_pixels(const SumPoolCall& c) {
  using Lanes = SumLanes<T, A>;
  using Raw = typename Lanes::Raw;
  using VR = typename Lanes::VR;
  using V = typename Lanes::VA;
  constexpr int L = Lanes::L;
  const Dim rows = dim_of(c.w, 0, c.x.sizes[2]), cols = dim_of(c.w, 1, c.x.sizes[3]);
  const int64_t oh = c.y.sizes[2], ow = c.y.sizes[3], ch = c.x.sizes[4];
  const int64_t xw = c.x.strides[3], yw = c.y.strides[3], yc = c.y.strides[4];
  // per output pixel of a row: its real columns and its divisor's factor along W
  struct Column {
    Span js;
    int64_t factor;
  };
  Column* columns = static_cast<Column*>(std::malloc(sizeof(Column) * size_t(ow)));
  if (columns == nullptr) throw std::bad_alloc();
  for (int64_t o = 0; o < ow; ++o)
    columns[o] = Column{real_offsets(cols, o), divisor_factor(cols, o, c.include_padding)};
  // the rows that the output row kPrefetchRowsAhead rows on reads anew, asked for pixel by
  // pixel: without, a row's loads waited on memory (common/rows.h, RowsAhead)
  const int64_t fresh_rows = rows.stride < rows.window ? rows.stride : rows.window;
  const int64_t ahead_rows = kPrefetchRowsAhead * rows.stride;
  const int64_t fresh = cols.stride * xw * int64_t(sizeof(T));
  const double work = double(c.y.count()) * double(rows.window * cols.window);
  auto run = [&](int64_t lo, int64_t hi) {
    const Raw* xrows[kMostRegisterOffsets];
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t oy = item % oh, p = item / oh;
      const int64_t n = p / c.y.sizes[1], i = p % c.y.sizes[1];
      const Raw* x = c.x.template at<Raw>(n * c.x.strides[0] + i * c.x.strides[1]);
      T* y = c.y.template at<T>(n * c.y.strides[0] + i * c.y.strides[1] + oy * c.y.strides[2]);
      const Span rs = real_offsets(rows, oy);
      int64_t count = 0;
      for (int64_t j = rs.lo; j < rs.hi; ++j)
        xrows[count++] = x + input_coord(rows, oy, j) * c.x.strides[2];
      const int64_t row_factor = divisor_factor(rows, oy, c.include_padding);
      // from the last window row's pixel: the first of the rows asked for (past the plane:
      // asked for in vain, never read)
      const int64_t ahead = (ahead_rows - fresh_rows + 1) * c.x.strides[2] * int64_t(sizeof(T));
      const int64_t pitch_bytes = c.x.strides[2] * int64_t(sizeof(T));
      // a register of channels at a time across the row (the last overlapping the one
      // before), so that its share of the window's input rows stays in the first-level cache
      for (int64_t o = 0; o < ow; ++o) {
        const Column col = columns[o];
        if (count > 0 && col.js.hi > col.js.lo) {
          const Raw* at = xrows[count - 1] + input_coord(cols, o, col.js.lo) * xw;
          for (int64_t r = 0; r < fresh_rows; ++r) prefetch_span(at, ahead + r * pitch_bytes, fresh);
        }
        const int64_t divisor = row_factor * col.factor;
        const int64_t first = input_coord(cols, o, col.js.lo) * xw;
        sweep<L>(0, ch, [&](int64_t q) {
          V sum{};
          for (int64_t m = 0; m < count; ++m) {
            const Raw* px = xrows[m] + first + q;
            for (int64_t j = col.js.lo; j < col.js.hi; ++j, px += cols.dilation * xw)
              sum += Lanes::widen_lanes(load_vec<VR>(px));
          }
          store_averages<T, A, L>(y + o * yw + q * yc, yc, divisor > 0 ? sum / A(divisor) : V{});
        }, [](int64_t) {});
      }
    }
  };
  try {
    parallel_for(c.y.sizes[0] * c.y.sizes[1] * oh, work, c.threads, run);
  } catch (...) {
    std::free(columns);
    throw;
  }
  std::free(columns);
}

}  // namespace dmlops
