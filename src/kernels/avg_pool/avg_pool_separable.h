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
#include <algorithm>
#include <memory>
#include <type_traits>
#include <vector>

#include "avg_pool/avg_pool.h"
#include "avg_pool/avg_pool_registers.h"
#include "common/separable.h"

namespace dmlops {

inline bool separable_sums_path(const SumPoolCall& c) {
  return separable_shape(c.x, c.y, c.w);
}

// First pass: a block's row sums, flat registers of sums where the window lies in the block,
// then the columns whose window leaves its row from their real offsets.
template <class T, class A, int kStep>
void row_sums(const Block<T, A>& b, const SeparableGeometry& geo, int64_t ow) {
  using Lanes = SumLanes<T, A>;
  using VA = typename Lanes::VA;
  constexpr int L = Lanes::L;
  const Dim& last_dim = geo.last;
  const int64_t len = flat_length(b, last_dim);
  const bool flat = for_each_flat_vector<L>(b, last_dim, [&](int64_t g, int64_t at) {
    VA sum{};
    for (int64_t j = 0; j < last_dim.window; ++j)
      sum += Lanes::widen_lanes(load_row<T, L, kStep>(b.x, at + j * last_dim.dilation, len));
    store_vec(b.results + g, sum);
  });
  auto column = [](const T* row, const int64_t* at, int64_t count, int64_t) {
    A sum = A(0);
    for (int64_t j = 0; j < count; ++j) sum += A(row[at[j]]);
    return sum;
  };
  each_column_left(b, geo, ow, flat, column);
}

// sums[i] = the sum over window rows j of h[j][i] for i in [0, m), a register at a time;
// kRows: the rows' count where known when compiled (0: `rows`), so that the rows' pointers
// stay in registers.
template <class A, int kRows>
void sum_columns(const A* const* h, int64_t rows, int64_t m, A* sums) {
  constexpr int L = lanes_for<A>();
  using VA = Vec<A, L>;
  if (kRows > 0) rows = kRows;
  sweep<L>(
      0, m,
      [&](int64_t i) {
        VA sum = load_vec<VA>(h[0] + i);
        for (int64_t j = 1; j < rows; ++j) sum += load_vec<VA>(h[j] + i);
        store_vec(sums + i, sum);
      },
      [&](int64_t i) {
        A sum = h[0][i];
        for (int64_t j = 1; j < rows; ++j) sum += h[j][i];
        sums[i] = sum;
      });
}

// Whether the second pass may run flat over a block's full rows (flat_run): window rows one
// input row apart, as many outputs per row as first-pass results (so a row's results follow
// the row before's without a gap) and the output's rows packed back to back.
inline bool flat_second_pass(const SumPoolCall& c, const SeparableGeometry& geo) {
  const int64_t ow = c.y.sizes[3], width = c.x.strides[2] / geo.last.stride;
  return geo.rows.stride == 1 && ow == width && c.y.strides[3] == 1 && c.y.strides[2] == ow;
}

// The counts of outputs [t0, t0 + m) of an output row whose other dimensions' factors are
// row_real (real elements) and row_div (divisor).
struct SeparableRowCounts {
  const SumPoolCall& c;
  const SeparableGeometry& geo;

  void operator()(int64_t row_real, int64_t row_div, int64_t t0, int64_t m, int64_t* real,
                  int64_t* divisor) const {
    for (int64_t i = 0; i < m; ++i) {
      const int64_t col = geo.last_real[t0 + i];
      real[i] = row_real * col;
      divisor[i] = row_div * (c.include_padding ? geo.last_padded[t0 + i] : col);
    }
  }
};

// The full rows' counts (every window row real, so the same in every full row), row after
// row for as many rows as a block of A sums holds: what flat_second_pass hands the finish.
struct FlatCounts {
  std::vector<int64_t> real, divisor;

  FlatCounts(const SumPoolCall& c, const SeparableGeometry& geo, int64_t a_size) {
    if (!flat_second_pass(c, geo) || geo.full_rows.hi <= geo.full_rows.lo) return;
    const int64_t oh = c.y.sizes[2], ow = c.y.sizes[3];
    const int64_t full = geo.full_rows.hi - geo.full_rows.lo;
    const int64_t most = geo.block_rows(oh, ow, a_size);
    const int64_t rows = most < full ? most : full;
    real.resize(size_t(rows * ow));
    divisor.resize(size_t(rows * ow));
    const int64_t fr = geo.full_rows.lo;
    const int64_t row_real = geo.row_real[fr];
    const int64_t row_div = c.include_padding ? geo.row_padded[fr] : row_real;
    SeparableRowCounts{c, geo}(row_real, row_div, 0, ow, real.data(), divisor.data());
    for (int64_t r = 1; r < rows; ++r) {
      std::copy(real.begin(), real.begin() + ow, real.begin() + r * ow);
      std::copy(divisor.begin(), divisor.begin() + ow, divisor.begin() + r * ow);
    }
  }
};

// sums[i] = the sum over window rows j of h_j[i], for i in [0, m) (inlined into each row's
// loop, as it was when a lambda there)
template <class A>
__attribute__((always_inline)) inline void column_sums(const A* const* h, int64_t rows,
                                                      int64_t m, A* sums) {
  if (rows == 3) return sum_columns<A, 3>(h, rows, m, sums);
  if (rows == 2) return sum_columns<A, 2>(h, rows, m, sums);
  sum_columns<A, 0>(h, rows, m, sums);
}

// (*finish)(row coordinates, offset of the output row, t0, n, sums, counts), as sum_pool_rows
// calls it, for every output row in tiles of kSeparableTile columns; where flat_second_pass
// holds, a block's full rows (every window row real, so the same counts in every row) go to
// finish as one tile of their rows' outputs back to back, as if one long row: whole vectors
// across the rows' ends and one finish call for the lot.
template <class T, class A>
void sum_pool_separable(const SumPoolCall& c, const MakeFinish<A>& make_finish) {
  const SeparableGeometry geo(c.x, c.y, c.w);
  const int64_t ow = c.y.sizes[3];
  const double work = double(c.y.count()) * double(geo.rows.window * geo.last.window);
  auto first = [&](const Block<T, A>& b, Prefetch&) {
    if (geo.last.stride == 1)
      row_sums<T, A, 1>(b, geo, ow);
    else
      row_sums<T, A, 2>(b, geo, ow);
  };
  const SeparableRowCounts row_counts{c, geo};
  const bool flat = flat_second_pass(c, geo);
  FlatCounts flat_rows(c, geo, int64_t(sizeof(A)));
  const Counts flat_counts{flat_rows.real.data(), flat_rows.divisor.data(), 0};
  // a task's sums and counts of one tile; a row's counts are the row before's unless the
  // row's factors or the tile differ (they change only at the borders)
  struct Tile {
    std::vector<A> sums = std::vector<A>(kSeparableTile);
    int64_t real[kSeparableTile], divisor[kSeparableTile];
    int64_t row_real = -1, row_div = -1, t0 = -1;
    Counts counts{real, divisor, 0};
  };
  auto task = [&]() {
    return [&, tile = std::make_unique<Tile>(), finish = make_finish()](
               const Block<T, A>& b, bool, int64_t r0, int64_t b0, int64_t b1, int64_t yplane,
               int64_t n, int64_t ch, Prefetch&) mutable {  // (prefetch not tried here)
      Tile& s = *tile;
      const A* h[kMostRegisterOffsets];
      auto window_rows = [&](int64_t oy) {
        return geo.each_window_row(
            oy, [&](int64_t m, int64_t r) { h[m] = b.results + (r - r0) * b.width; });
      };
      auto one_row = [&](int64_t oy) {
        const int64_t row_real = geo.row_real[oy];
        const int64_t row_div = c.include_padding ? geo.row_padded[oy] : row_real;
        const int64_t o[4] = {n, ch, oy, 0};
        const int64_t yoff = yplane + oy * c.y.strides[2];
        const int64_t rows = window_rows(oy);
        for (int64_t t0 = 0; t0 < ow; t0 += kSeparableTile) {
          const int64_t m = ow - t0 < kSeparableTile ? ow - t0 : kSeparableTile;
          if (rows == 0) {
            for (int64_t i = 0; i < m; ++i) s.sums[i] = A(0);
          } else {
            const A* ht[kMostRegisterOffsets];
            for (int64_t j = 0; j < rows; ++j) ht[j] = h[j] + t0;
            column_sums(ht, rows, m, s.sums.data());
          }
          if (row_real != s.row_real || row_div != s.row_div || t0 != s.t0) {
            row_counts(row_real, row_div, t0, m, s.real, s.divisor);
            s.row_real = row_real, s.row_div = row_div, s.t0 = t0;
            ++s.counts.version;
          }
          (*finish)(o, yoff, t0, m, s.sums.data(), s.counts);
        }
      };
      Span run{b0, b0};
      if (flat) {
        run.lo = geo.full_rows.lo > b0 ? geo.full_rows.lo : b0;
        run.hi = geo.full_rows.hi < b1 ? geo.full_rows.hi : b1;
        if (run.hi < run.lo) run = Span{b0, b0};
      }
      for (int64_t oy = b0; oy < run.lo; ++oy) one_row(oy);
      if (run.hi > run.lo) {
        const int64_t m = (run.hi - run.lo) * ow;
        if (int64_t(s.sums.size()) < m) s.sums.resize(size_t(m));
        column_sums(h, window_rows(run.lo), m, s.sums.data());
        const int64_t o[4] = {n, ch, run.lo, 0};
        (*finish)(o, yplane + run.lo * c.y.strides[2], 0, m, s.sums.data(), flat_counts);
      }
      for (int64_t oy = run.hi; oy < b1; ++oy) one_row(oy);
    };
  };
  separable_blocks<T, A>(c.x, c.y, geo, c.threads, work, first, task);
}

}  // namespace dmlops
