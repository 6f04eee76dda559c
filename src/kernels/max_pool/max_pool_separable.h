// Max pooling of 2-D windows in two passes, values only: first each input row's maxima along
// the last dimension (one per output column), then each output row the maximum of its window
// rows' maxima. Why faster: an input row's maxima are worked out once and shared by every
// output row whose window covers it (where the register path redoes them per output row),
// and the first pass runs flat over a block of rows as if they were one long row, so short
// rows (56 outputs, less than one 64-byte vector of bytes) still take whole vectors.
// Same bits as the plain kernel: the first pass takes the first of a row's best (strictly
// better wins), the second the first row of the rows' best, which is the first of the
// window's best in row-major order (SPEC 3.4: ties, -0.0 against +0.0, NaNs).
// Precondition (separable_path): values wanted without indices, and separable_shape
// (common/separable.h: two spatial dimensions, the last packed, rows a pitch apart that the
// window's stride along the last dimension, 1 or 2, divides).
#pragma once
#include <type_traits>

#include "common/keys.h"
#include "common/separable.h"
#include "common/simd.h"
#include "max_pool/max_pool.h"
#include "max_pool/max_pool_registers.h"

namespace dmlops {

inline bool separable_path(const MaxPoolCall& c) {
  return c.indices.data == nullptr && c.y.data != nullptr && separable_shape(c.x, c.y, c.w);
}

template <class T> using RowMaxima = Block<typename MaxKey<T>::Raw, typename MaxKey<T>::Raw>;

// A row's maximum over the positions at[0 .. count) in order (a column whose window leaves
// the row), or the empty value where none is real.
template <class T>
inline typename MaxKey<T>::Raw column_max(const typename MaxKey<T>::Raw* row,
                                          const int64_t* at, int64_t count) {
  using K = MaxKey<T>;
  auto best = bit_cast<typename K::Raw>(empty_value<T>());
  for (int64_t j = 0; j < count; ++j) {
    auto v = row[at[j]];
    if (j == 0 || K::key_raw(v) > K::key_raw(best)) best = v;
  }
  return best;
}

// First pass: the block read as one flat row (common/separable.h), whole vectors where the
// flat window lies in the block, then the columns whose window leaves its row from their
// real offsets.
template <class T, int L, int kStep>
void row_maxima(const RowMaxima<T>& b, const SeparableGeometry& geo, int64_t ow) {
  using Lanes = MaxLanes<T, L>;
  using Raw = typename Lanes::Raw;
  using V = typename Lanes::V;
  const Dim& dl = geo.last;
  const int64_t w = dl.window, d = dl.dilation;
  const int64_t len = flat_length(b, dl);
  const bool flat = for_each_flat_vector<L>(b, dl, [&](int64_t g, int64_t at) {
    V best;
    int64_t j = 1;
    if (kStep == 2 && d == 1 && w >= 2) {
      // offsets 0 and 1 are the even and odd elements of the same two loads
      V odd;
      load_pair<Raw, L>(b.x, at, len, &best, &odd);
      best = Lanes::better(odd, best) ? odd : best;
      j = 2;
    } else {
      best = load_row<Raw, L, kStep>(b.x, at, len);
    }
    for (; j < w; ++j) {
      V v = load_row<Raw, L, kStep>(b.x, at + j * d, len);
      best = Lanes::better(v, best) ? v : best;
    }
    store_vec(b.h + g, best);
  });
  each_column_left(b, geo, ow, flat, [&](const Raw* row, const int64_t* at, int64_t count) {
    return column_max<T>(row, at, count);
  });
}

// Second pass: outputs [o, o + L) of a row, the best of its window rows' maxima in order;
// kRows: the rows' count where known when compiled (0: n), so that their pointers stay in
// registers.
template <class T, int L, int kRows>
inline void column_block(const typename MaxKey<T>::Raw* const* rows, int64_t n, int64_t o,
                         typename MaxKey<T>::Raw* y, int64_t ys) {
  using Lanes = MaxLanes<T, L>;
  using V = typename Lanes::V;
  if (kRows > 0) n = kRows;
  V best = load_vec<V>(rows[0] + o);
  for (int64_t m = 1; m < n; ++m) {
    V v = load_vec<V>(rows[m] + o);
    best = Lanes::better(v, best) ? v : best;
  }
  if (ys == 1) {
    store_vec(y + o, best);
  } else {
    for (int i = 0; i < L; ++i) store(y + (o + i) * ys, best[i]);
  }
}

// A row of ow outputs in vectors of kBytes, the last overlapping the one before.
template <class T, int kBytes, int kRows>
void vector_row(const typename MaxKey<T>::Raw* const* rows, int64_t n, int64_t ow,
                typename MaxKey<T>::Raw* y, int64_t ys) {
  constexpr int L = kBytes / int(sizeof(typename MaxKey<T>::Raw));
  sweep<L>(0, ow, [&](int64_t o) { column_block<T, L, kRows>(rows, n, o, y, ys); },
           [](int64_t) {});
}

// A row of ow outputs: vectors of a register (kVectorBytes), or of 32 or 16 bytes where the
// row is shorter; a row shorter than 16 bytes one output at a time. Windows of 2 and 3 rows
// have instances of their own.
template <class T>
void output_row(const typename MaxKey<T>::Raw* const* rows, int64_t n, int64_t ow,
                typename MaxKey<T>::Raw* y, int64_t ys) {
  using Raw = typename MaxKey<T>::Raw;
  const int64_t bytes = ow * int64_t(sizeof(Raw));
  auto with_rows = [&](auto kb) {
    constexpr int B = decltype(kb)::value;
    if (n == 3) return vector_row<T, B, 3>(rows, n, ow, y, ys);
    if (n == 2) return vector_row<T, B, 2>(rows, n, ow, y, ys);
    vector_row<T, B, 0>(rows, n, ow, y, ys);
  };
  if constexpr (kVectorBytes >= 64)
    if (bytes >= 64) return with_rows(std::integral_constant<int, 64>{});
  if constexpr (kVectorBytes >= 32)
    if (bytes >= 32) return with_rows(std::integral_constant<int, 32>{});
  if (bytes >= 16) return with_rows(std::integral_constant<int, 16>{});
  for (int64_t o = 0; o < ow; ++o) {
    Raw best = rows[0][o];
    for (int64_t m = 1; m < n; ++m)
      if (MaxKey<T>::key_raw(rows[m][o]) > MaxKey<T>::key_raw(best)) best = rows[m][o];
    store(y + o * ys, best);
  }
}

template <class T>
void max_pool_separable(const MaxPoolCall& c) {
  using Raw = typename MaxKey<T>::Raw;
  constexpr int L = lanes_for<Raw>();
  const SeparableGeometry geo(c.x, c.y, c.w);
  const int64_t ow = c.y.sizes[3], ys = c.y.strides[3];
  const Raw empty = bit_cast<Raw>(empty_value<T>());
  const double work = double(c.y.count()) * double(geo.rows.window * geo.last.window);
  auto first = [&](const RowMaxima<T>& b) {
    if (geo.last.stride == 1)
      row_maxima<T, L, 1>(b, geo, ow);
    else
      row_maxima<T, L, 2>(b, geo, ow);
  };
  auto second = [&](const RowMaxima<T>& b, int64_t r0, int64_t b0, int64_t b1, int64_t yplane,
                    int64_t, int64_t, Prefetch& ahead) {
    for (int64_t oy = b0; oy < b1; ++oy) {
      ahead.next();
      Raw* yrow = c.y.template at<Raw>(yplane + oy * c.y.strides[2]);
      const Span js = geo.row_offsets[oy];
      if (js.hi <= js.lo) {
        for (int64_t o = 0; o < ow; ++o) store(yrow + o * ys, empty);
        continue;
      }
      const Raw* rows[kMostRegisterOffsets];
      int64_t count = 0;
      for (int64_t j = js.lo; j < js.hi; ++j)
        rows[count++] = b.h + (input_coord(geo.rows, oy, j) - r0) * b.width;
      output_row<T>(rows, count, ow, yrow, ys);
    }
  };
  separable_blocks<Raw, Raw>(c.x, c.y, geo, c.threads, work, first, [&] { return second; });
}

}  // namespace dmlops
