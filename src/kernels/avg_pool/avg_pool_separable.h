// Integer window sums of 2-D windows (quantized pooling) in two passes: first each input
// row's sums along the last dimension (one per output column), then each output row the sum
// of its window rows' sums. Why faster: integer sums do not depend on their order, so an
// input row's sums are worked out once and shared by every output row whose window covers it
// (a 3 x 3 window at stride 1 adds 3 + 3 terms per output instead of 9), and the first pass
// runs flat over a block of rows (common/separable.h), so short rows take whole vectors.
// Float sums never come here: SPEC 5 fixes their order (row-major), which this would change.
// Precondition: integer sums (the caller's compile-time choice), and separable_sums_path
// (separable_shape, common/separable.h).
#pragma once
#include <type_traits>

#include "avg_pool/avg_pool.h"
#include "avg_pool/avg_pool_registers.h"
#include "common/separable.h"

namespace dmlops {

inline bool separable_sums_path(const SumPoolCall& c) {
  return separable_shape(c.x, c.y, c.w);
}

// First pass: a block's row sums, flat vectors of 16 where the window lies in the block,
// then the columns whose window leaves its row from their real offsets.
template <class T, class A, int kStep>
void row_sums(const Block<T, A>& b, const SeparableGeometry& geo, int64_t ow) {
  using Lanes = SumLanes<T, A>;
  using VA = typename Lanes::VA;
  constexpr int L = Lanes::L;
  const Dim& dl = geo.last;
  const int64_t len = flat_length(b, dl);
  const bool flat = for_each_flat_vector<L>(b, dl, [&](int64_t g, int64_t at) {
    VA sum{};
    for (int64_t j = 0; j < dl.window; ++j)
      sum += Lanes::widen_lanes(load_row<T, L, kStep>(b.x, at + j * dl.dilation, len));
    store_vec(b.h + g, sum);
  });
  each_column_left(b, geo, ow, flat, [&](const T* row, int64_t o, Span js) {
    A sum = A(0);
    for (int64_t j = js.lo; j < js.hi; ++j) sum += A(row[input_coord(dl, o, j)]);
    return sum;
  });
}

// finish(row coordinates, offset of the output row, t0, n, sums, real counts, divisors), as
// sum_pool_rows calls it, for every output row in tiles of kSeparableTile columns.
template <class T, class A, class F>
void sum_pool_separable(const SumPoolCall& c, F&& finish) {
  const SeparableGeometry geo(c.x, c.y, c.w);
  const int64_t ow = c.y.sizes[3];
  const double work = double(c.y.count()) * double(geo.rows.window * geo.last.window);
  auto first = [&](const Block<T, A>& b) {
    if (geo.last.stride == 1)
      row_sums<T, A, 1>(b, geo, ow);
    else
      row_sums<T, A, 2>(b, geo, ow);
  };
  auto second = [&](const Block<T, A>& b, int64_t r0, int64_t oy, int64_t yoff, int64_t n,
                    int64_t ch) {
    const Span js = geo.row_offsets[oy];
    const int64_t row_real = geo.row_real[oy];
    const int64_t row_div = c.include_padding ? geo.row_padded[oy] : row_real;
    const int64_t o[4] = {n, ch, oy, 0};
    A sums[kSeparableTile];
    int64_t real[kSeparableTile], divisor[kSeparableTile];
    for (int64_t t0 = 0; t0 < ow; t0 += kSeparableTile) {
      const int64_t m = ow - t0 < kSeparableTile ? ow - t0 : kSeparableTile;
      for (int64_t i = 0; i < m; ++i) sums[i] = A(0);
      for (int64_t j = js.lo; j < js.hi; ++j) {
        const A* h = b.h + (input_coord(geo.rows, oy, j) - r0) * b.width + t0;
        for (int64_t i = 0; i < m; ++i) sums[i] += h[i];
      }
      for (int64_t i = 0; i < m; ++i) {
        const int64_t col = geo.last_real[t0 + i];
        real[i] = row_real * col;
        divisor[i] = row_div * (c.include_padding ? geo.last_padded[t0 + i] : col);
      }
      finish(o, yoff, t0, m, sums, real, divisor);
    }
  };
  separable_blocks<T, A>(c.x, c.y, geo, c.threads, work, first, second);
}

}  // namespace dmlops
