// Max pooling of 2-D windows in two passes, values only: first each input row's maxima along
// the last dimension (one per output column), then each output row the maximum of its window
// rows' maxima. Why faster: an input row's maxima are worked out once and shared by every
// output row whose window covers it (where the register path redoes them per output row),
// and the first pass runs flat over a block of rows as if they were one long row, so short
// rows (56 outputs, less than one 64-byte vector of bytes) still take whole vectors.
// Same bits as the plain kernel: the first pass takes the first of a row's best (strictly
// better wins), the second the first row of the rows' best, which is the first of the
// window's best in row-major order (SPEC 3.4: ties, -0.0 against +0.0, NaNs).
// With indices, the first pass also keeps which offset won each row's maximum (as its part
// of the flat index, j * dilation * pitch), the second which window row won, so an output's
// flat index is its winner's row, column and offset added up, all lanes at once, in 32 bits.
// Precondition (separable_path): separable_shape (common/separable.h: two spatial
// dimensions, the last packed, rows a pitch apart that the window's stride along the last
// dimension, 1 or 2, divides); with indices, every flat index below 2^32 (narrow_indices) and
// lanes of the indices' width that make a register (kIndexLanesFit).
#pragma once
#include <type_traits>
#include <vector>

#include "common/keys.h"
#include "common/separable.h"
#include "common/simd.h"
#include "max_pool/max_pool.h"
#include "max_pool/max_pool_registers.h"

namespace dmlops {

template <class T> inline bool separable_path(const MaxPoolCall& c) {
  if (!separable_shape(c.x, c.y, c.w)) return false;
  if (c.indices.data == nullptr) return c.y.data != nullptr;
  return kIndexLanesFit<typename MaxKey<T>::Raw> && narrow_indices(c);
}

template <class T> using RowMaxima = Block<typename MaxKey<T>::Raw, typename MaxKey<T>::Raw>;

// Whether the first pass asks for part of the next block's input
// (BlockOptions::first_pass_prefetches): where its registers hold 4- or 8-byte values, a
// register's work or more per cache line of input.
template <class Raw> inline constexpr bool kFirstPassPrefetches = sizeof(Raw) >= 4;

// A row's maximum over the positions at[0 .. count) in order (a column whose window leaves
// the row), or the empty value where none is real; *which: the winner's position in at.
template <class T>
inline typename MaxKey<T>::Raw column_max(const typename MaxKey<T>::Raw* row,
                                          const int64_t* at, int64_t count, int64_t* which) {
  using K = MaxKey<T>;
  auto best = bit_cast<typename K::Raw>(empty_value<T>());
  *which = 0;
  for (int64_t j = 0; j < count; ++j) {
    auto v = row[at[j]];
    if (j == 0 || K::key_raw(v) > K::key_raw(best)) best = v, *which = j;
  }
  return best;
}

// What the indices need of the window and the input: flat-index steps, in 32 bits (every
// flat index fits: narrow_indices).
struct SeparableIndexing {
  uint32_t col;     // pitch of the last dimension
  uint32_t offset;  // between the last dimension's offsets: dilation * col
};

// Whether the first pass takes integers of 1 and 2 bytes at stride 2 a pair to a lane
// (pair_maxima): where a level narrows a register of pairs to their first elements in one
// instruction (AVX-512's vpmovwb, vpmovdw).
#if defined(__AVX512BW__)
template <class T, bool kIndices>
inline constexpr bool kPairsInWideLanes = std::is_integral_v<T> && sizeof(T) <= 2 && !kIndices;
#else
template <class T, bool kIndices> inline constexpr bool kPairsInWideLanes = false;
#endif

// a and b side by side (lanes 0 .. 2n)
template <class V, size_t... I>
inline auto joined(V a, V b, std::index_sequence<I...>) {
  return __builtin_shufflevector(a, b, I...);
}

// The maxima of outputs [0, L) at stride 2 over offsets 0, 1 and (w = 3) 2, lane 0's offset
// 0 at p, for integers of 1 or 2 bytes (reads p[0, 2L + 2)): each pair p[2i], p[2i + 1] read
// as one lane twice as wide, that lane shifted down by one element gives p[2i + 1] beside
// p[2i], and the load one pair on gives p[2i + 2]; the larger of them lands in the lane's low
// half, which one narrowing keeps. A maximum of integers is the same in any order, so this
// is the offsets taken one at a time; the even and odd elements of two loads (load_pair)
// take a narrowing each and a shift, and offset 2 a third load narrowed (README
// "Separable").
template <class Raw, int L>
inline Vec<Raw, L> pair_maxima(const Raw* p, int64_t w) {
  constexpr int H = L / 2;  // outputs per register of pairs
  using N = Vec<Raw, 2 * H>;
  using U = std::make_unsigned_t<Raw>;
  using Wide = std::conditional_t<sizeof(Raw) == 1, uint16_t, uint32_t>;
  Vec<U, H> half[2];
  for (int k = 0; k < 2; ++k) {
    const N a = load_vec<N>(p + 2 * H * k);
    const N b = bit_cast<N>(bit_cast<Vec<Wide, H>>(a) >> (8 * sizeof(Raw)));
    N m = b > a ? b : a;
    if (w >= 3) {
      const N c = load_vec<N>(p + 2 * H * k + 2);
      m = c > m ? c : m;
    }
    half[k] = __builtin_convertvector(bit_cast<Vec<Wide, H>>(m), Vec<U, H>);
  }
  return bit_cast<Vec<Raw, L>>(joined(half[0], half[1], std::make_index_sequence<L>{}));
}

// What the ordered first pass (kOrdered) met: the lanes that met a NaN, and whether any of
// the scalars read was one.
template <class M> struct NansMet {
  M lanes{};
  bool scalar = false;
};

// One flat vector of the first pass: outputs g.. of the block b, lane 0's offset 0 at its
// element `at` (of len), the window's w offsets (dilation d) taken in order into
// b.results (kIndices: the winners' j * offset into b.winners); kOrdered: by vmaxps, the
// NaNs met or-ed into *nans.
template <class T, int L, int kStep, bool kIndices, bool kOrdered>
__attribute__((always_inline)) inline void flat_vector_maxima(
    const RowMaxima<T>& b, int64_t w, int64_t d, int64_t len, uint32_t offset, int64_t g,
    int64_t at, NansMet<typename MaxLanes<T, L>::M>* nans) {
  using Lanes = MaxLanes<T, L>;
  using Raw = typename Lanes::Raw;
  using V = typename Lanes::V;
  using U = Vec<uint32_t, L>;
  V best;
  U which{};
  auto take = [&](V v, int64_t j) {
    const auto t = Lanes::template wins<kOrdered>(v, best);
    best = t ? v : best;
    if constexpr (kIndices) which = widen_mask(t) ? U{} + uint32_t(j) * offset : which;
  };
  int64_t j = 1;
  if constexpr (kStep == 2 && kPairsInWideLanes<T, kIndices>) {
    if (d == 1 && (w == 2 || w == 3) && at + 2 * L + 2 <= len) {
      store_vec(b.results + g, pair_maxima<Raw, L>(b.x + at, w));
      return;
    }
  }
  if (kStep == 2 && d == 1 && w >= 2) {
    // offsets 0 and 1 are the even and odd elements of the same two loads
    V odd;
    load_pair<Raw, L>(b.x, at, len, &best, &odd);
    const V even = best;
    if constexpr (kOrdered) nans->lanes |= (even != even) | (odd != odd);
    take(odd, 1);
    j = 2;
    // offset 2 moved on from offset 0 where the next element is in the block (simd.h:
    // one shuffle instead of a load)
    if constexpr (kMovesOn<Raw>) {
      if (w >= 3 && at + 2 * L < len) {
        const Raw next = b.x[at + 2 * L];
        if constexpr (kOrdered) nans->scalar |= next != next;
        take(moved_on(even, next), 2);
        j = 3;
      }
    }
  } else {
    best = load_row<Raw, L, kStep>(b.x, at, len);
    if constexpr (kOrdered) nans->lanes |= best != best;
  }
  for (; j < w; ++j) {
    const V v = load_row<Raw, L, kStep>(b.x, at + j * d, len);
    if constexpr (kOrdered) nans->lanes |= v != v;
    take(v, j);
  }
  store_vec(b.results + g, best);
  if constexpr (kIndices) store_vec(b.winners + g, which);
}

// The first pass's flat vectors of the ordered 3-wide window at stride 2 (3x3 stride-2
// pooling, ImageNet's): offsets 0 and 1 the even and odd lanes of two loads, offset 2 moved
// on from offset 0, each taken by one vmaxps, and the NaN checks of the two loads and the
// moved-on element kept in registers for the block (the generic form's, a struct's, went
// through memory at every vector). The block's last vector, whose next element may lie past
// it, takes the generic form (each). kIndices: each lane's winning offset too, j * offset.
template <class T, int L, bool kIndices, class Each>
bool ordered_pairs3(const RowMaxima<T>& b, int64_t len, const Dim& last_dim, uint32_t offset,
                    Prefetch& early, NansMet<typename MaxLanes<T, L>::M>* nans, Each&& each) {
  using Lanes = MaxLanes<T, L>;
  using Raw = typename Lanes::Raw;
  using V = typename Lanes::V;
  using U = Vec<uint32_t, L>;
  typename Lanes::M lanes{};
  bool scalar = false;
  const Raw* x = b.x;
  Raw* results = b.results;
  uint32_t* winners = b.winners;
  const U one = U{} + offset, two = U{} + 2 * offset;
  const bool flat = for_each_flat_vector<L>(b, last_dim, [&](int64_t g, int64_t at) {
    early.next();
    if (at + 2 * L >= len) return each(g, at);
    const V a = load_vec<V>(x + at), c = load_vec<V>(x + at + L);
    const V even = even_lanes(a, c, std::make_index_sequence<L>{});
    const V odd = odd_lanes(a, c, std::make_index_sequence<L>{});
    const Raw next = x[at + 2 * L];
    lanes |= (a != a) | (c != c);
    scalar |= next != next;
    const auto t1 = odd > even;
    V best = t1 ? odd : even;
    const V moved = moved_on(even, next);
    const auto t2 = moved > best;
    best = t2 ? moved : best;
    store_vec(results + g, best);
    if constexpr (kIndices) {
      const U which = widen_mask(t1) ? one : U{};
      store_vec(winners + g, widen_mask(t2) ? two : which);
    }
  });
  nans->lanes |= lanes;
  nans->scalar |= scalar;
  return flat;
}

// First pass: the block read as one flat row (common/separable.h), whole vectors where the
// flat window lies in the block (flat_vector_maxima), then the columns whose window leaves
// its row from their real offsets. kIndices: the winners' offsets too, j * ix.offset into
// b.winners (a column with no real offset: all ones). kOrdered (floats, values only; README
// "Ordered floats"): each offset taken by `v > best ? v : best`, one vmaxps (with kIndices
// a compare and two blends), which is SPEC 3.4's order everywhere but where a NaN comes after
// a number; returns whether any element read was a NaN (the caller then does the block again
// without it).
template <class T, int L, int kStep, bool kIndices = false, bool kOrdered = false>
bool row_maxima(const RowMaxima<T>& b, const SeparableGeometry& geo, int64_t ow,
                Prefetch& early, const SeparableIndexing& ix = {}) {
  using Lanes = MaxLanes<T, L>;
  using Raw = typename Lanes::Raw;
  static_assert(!kOrdered || std::is_floating_point_v<Raw>);
  const Dim& last_dim = geo.last;
  const int64_t w = last_dim.window, d = last_dim.dilation;
  const int64_t len = flat_length(b, last_dim);
  NansMet<typename Lanes::M> nans;  // (kOrdered)
  auto each = [&](int64_t g, int64_t at) {
    flat_vector_maxima<T, L, kStep, kIndices, kOrdered>(b, w, d, len, ix.offset, g, at, &nans);
  };
  bool flat = false, done = false;
  if constexpr (kOrdered && kStep == 2 && kMovesOn<Raw>) {
    done = w == 3 && d == 1;
    if (done)
      flat = ordered_pairs3<T, L, kIndices>(b, len, last_dim, ix.offset, early, &nans, each);
  }
  if (!done) {
    // (flat_vector_maxima called here itself, not through `each`: through it, int32's instance
    // measured 1.03-1.14 times slower, GCC inlining it differently)
    flat = for_each_flat_vector<L>(b, last_dim, [&](int64_t g, int64_t at) {
      early.next();
      flat_vector_maxima<T, L, kStep, kIndices, kOrdered>(b, w, d, len, ix.offset, g, at, &nans);
    });
  }
  auto column = [&](const Raw* row, const int64_t* at, int64_t count, int64_t i) {
    int64_t j = 0;
    Raw best;
    if constexpr (kOrdered) {
      // (branch-free: the keys' comparisons branch on the values' signs, which random data
      // mispredicts half the time, and a row's edge column cost as much as its vectors)
      best = count > 0 ? row[at[0]] : bit_cast<Raw>(empty_value<T>());
      bool met = best != best;
      for (int64_t k = 1; k < count; ++k) {
        const Raw v = row[at[k]];
        met |= v != v;
        const bool t = v > best;
        best = t ? v : best;
        if constexpr (kIndices) j = t ? k : j;
      }
      nans.scalar |= met;
    } else {
      best = column_max<T>(row, at, count, &j);
    }
    if constexpr (kIndices) {
      // as the flat vectors': the winner's position less the column's offset 0 (o * stride
      // - start), times the pitch, modulo 2^32
      const int64_t o = i % b.width;
      b.winners[i] = count > 0 ? uint32_t(at[j] - (o * last_dim.stride - last_dim.start)) * ix.col
                           : ~uint32_t(0);
    }
    return best;
  };
  each_column_left(b, geo, ow, flat, column);
  if constexpr (kOrdered) return nans.scalar || any_lane(nans.lanes);
  return false;
}

// Second pass: outputs [o, o + L) of a row, the best of its window rows' maxima in order;
// kRows: the rows' count where known when compiled (0: n), so that their pointers stay in
// registers.
template <class T, int L, int kRows, bool kOrdered>
inline void column_block(const typename MaxKey<T>::Raw* const* rows, int64_t n, int64_t o,
                         typename MaxKey<T>::Raw* y, int64_t ys) {
  using Lanes = MaxLanes<T, L>;
  using V = typename Lanes::V;
  using Raw = typename Lanes::Raw;
  if (kRows > 0) n = kRows;
  V best = load_vec<V>(rows[0] + o);
  for (int64_t m = 1; m < n; ++m) {
    const V v = load_vec<V>(rows[m] + o);
    best = Lanes::template wins<kOrdered>(v, best) ? v : best;
  }
  store_lanes<Raw, L>(y + o * ys, ys, best);
}

// A row of ow outputs in vectors of kBytes, the last overlapping the one before.
template <class T, int kBytes, int kRows, bool kOrdered>
void vector_row(const typename MaxKey<T>::Raw* const* rows, int64_t n, int64_t ow,
                typename MaxKey<T>::Raw* y, int64_t ys) {
  constexpr int L = kBytes / int(sizeof(typename MaxKey<T>::Raw));
  sweep<L>(0, ow, [&](int64_t o) { column_block<T, L, kRows, kOrdered>(rows, n, o, y, ys); },
           [](int64_t) {});
}

// A row of ow outputs: vectors of a register (kVectorBytes), or of 32 or 16 bytes where the
// row is shorter; a row shorter than 16 bytes one output at a time. Windows of 2 and 3 rows
// have instances of their own. kOrdered: rows' maxima of a block that held no NaN.
template <class T, bool kOrdered = false>
void output_row(const typename MaxKey<T>::Raw* const* rows, int64_t n, int64_t ow,
                typename MaxKey<T>::Raw* y, int64_t ys) {
  using Raw = typename MaxKey<T>::Raw;
  const int64_t bytes = ow * int64_t(sizeof(Raw));
  auto with_rows = [&](auto kb) {
    constexpr int B = decltype(kb)::value;
    if (n == 3) return vector_row<T, B, 3, kOrdered>(rows, n, ow, y, ys);
    if (n == 2) return vector_row<T, B, 2, kOrdered>(rows, n, ow, y, ys);
    vector_row<T, B, 0, kOrdered>(rows, n, ow, y, ys);
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

// The n window rows of an output row in the second pass with indices: their maxima rows[m],
// their winners' offset parts which[m], their flat offsets rowflat[m].
template <class Raw>
struct WindowRowMaxima {
  const Raw* const* rows;
  const uint32_t* const* which;
  const uint32_t* rowflat;
  int64_t n;
};

// Where an output row goes: its values (y == nullptr: none), ys apart, and its indices from
// element ioff of `indices`.
template <class Raw>
struct IndexedOutputRow {
  Raw* y;
  int64_t ys;
  const Tensor& indices;
  int64_t ioff;
};

// Second pass with indices: a row of ow outputs, L at a time (the last overlapping the one
// before) or one at a time where fewer, each the best of its window rows' maxima; its flat
// index the winning row's offset, its column's and its offset's, modulo 2^32. Inlined into
// the row loop, as the compiler chose before its arguments became structs (a call per output
// row was slower). kOrdered: rows' maxima of a block that held no NaN, taken by `>`.
template <class T, int L, bool kOrdered>
__attribute__((always_inline)) inline void indexed_row(
    const WindowRowMaxima<typename MaxKey<T>::Raw>& in, int64_t ow, const Dim& last_dim,
    const SeparableIndexing& ix, const IndexedOutputRow<typename MaxKey<T>::Raw>& out) {
  using Lanes = MaxLanes<T, L>;
  using Raw = typename Lanes::Raw;
  using V = typename Lanes::V;
  using U = Vec<uint32_t, L>;
  const Raw* const* rows = in.rows;
  const uint32_t* const* which = in.which;
  const uint32_t* rowflat = in.rowflat;
  // (the fields as locals: a store through y or the indices could alias them otherwise)
  Raw* y = out.y;
  const Tensor& indices = out.indices;
  const int64_t n = in.n, ys = out.ys, ioff = out.ioff, is = indices.strides[3];
  U lane_col{};
  for (int i = 0; i < L; ++i) lane_col[i] = uint32_t(i * last_dim.stride) * ix.col;
  auto column = [&](int64_t o) { return uint32_t(o * last_dim.stride - last_dim.start) * ix.col; };
  auto vector = [&](int64_t o) {
    V best = load_vec<V>(rows[0] + o);
    U flat = load_vec<U>(which[0] + o) + rowflat[0];
    for (int64_t m = 1; m < n; ++m) {
      const V v = load_vec<V>(rows[m] + o);
      const auto t = Lanes::template wins<kOrdered>(v, best);
      best = t ? v : best;
      flat = widen_mask(t) ? load_vec<U>(which[m] + o) + rowflat[m] : flat;
    }
    if (y != nullptr) store_lanes<Raw, L>(y + o * ys, ys, best);
    flat += lane_col + column(o);
    store_index_lanes<L>(indices, ioff + o * is, is, flat);
  };
  auto one = [&](int64_t o) {
    Raw best = rows[0][o];
    uint32_t flat = which[0][o] + rowflat[0];
    for (int64_t m = 1; m < n; ++m) {
      if (kOrdered ? rows[m][o] > best : MaxKey<T>::key_raw(rows[m][o]) > MaxKey<T>::key_raw(best))
        best = rows[m][o], flat = which[m][o] + rowflat[m];
    }
    if (y != nullptr) store(y + o * ys, best);
    store_index(indices, ioff + o * is, uint32_t(flat + column(o)));
  };
  sweep<L>(0, ow, vector, one);
}

template <class T>
void max_pool_separable_indices(const MaxPoolCall& c) {
  using Raw = typename MaxKey<T>::Raw;
  constexpr int L = kIndexLanes<Raw>;
  const SeparableGeometry geo(c.x, c.y, c.w);
  const int64_t ow = c.y.sizes[3], ys = c.y.strides[3];
  const Raw empty = bit_cast<Raw>(empty_value<T>());
  const double work = double(c.y.count()) * double(geo.rows.window * geo.last.window);
  const SeparableIndexing ix{uint32_t(c.pitch[3]), uint32_t(geo.last.dilation * c.pitch[3])};
  // the columns no offset of which is real: their index is the empty one
  std::vector<int64_t> empty_columns;
  for (int64_t o = 0; o < ow; ++o)
    if (geo.last_real[o] == 0) empty_columns.push_back(o);
  // float32 ordered, as the values alone (max_pool_separable), a block that met a NaN done
  // again in SPEC 3.4's order, both passes
  constexpr bool kOrdered = std::is_same_v<Raw, float>;
  auto first = [&](const RowMaxima<T>& b, Prefetch& early) {
    bool nan = false;
    if (geo.last.stride == 1)
      nan = row_maxima<T, L, 1, true, kOrdered>(b, geo, ow, early, ix);
    else
      nan = row_maxima<T, L, 2, true, kOrdered>(b, geo, ow, early, ix);
    if (!kOrdered || !nan) return false;
    Prefetch none;
    if (geo.last.stride == 1)
      row_maxima<T, L, 1, true>(b, geo, ow, none, ix);
    else
      row_maxima<T, L, 2, true>(b, geo, ow, none, ix);
    return true;
  };
  auto second = [&](const RowMaxima<T>& b, bool nan, int64_t r0, int64_t b0, int64_t b1,
                    int64_t yplane, int64_t n, int64_t ch, Prefetch& ahead) {
    const int64_t iplane = n * c.indices.strides[0] + ch * c.indices.strides[1];
    const int64_t fplane = n * c.pitch[0] + ch * c.pitch[1];
    const int64_t is = c.indices.strides[3];
    for (int64_t oy = b0; oy < b1; ++oy) {
      ahead.next();
      Raw* yrow = c.y.data != nullptr ? c.y.template at<Raw>(yplane + oy * c.y.strides[2])
                                      : nullptr;
      const int64_t irow = iplane + oy * c.indices.strides[2];
      const Raw* rows[kMostRegisterOffsets];
      const uint32_t* which[kMostRegisterOffsets];
      uint32_t rowflat[kMostRegisterOffsets];
      const int64_t count = geo.each_window_row(oy, [&](int64_t m, int64_t r) {
        rows[m] = b.results + (r - r0) * b.width;
        which[m] = b.winners + (r - r0) * b.width;
        rowflat[m] = uint32_t(fplane + r * c.pitch[2]);
      });
      if (count == 0) {
        for (int64_t o = 0; o < ow; ++o) {
          if (yrow != nullptr) store(yrow + o * ys, empty);
          store_index(c.indices, irow + o * is, c.empty_index);
        }
        continue;
      }
      const WindowRowMaxima<Raw> in{rows, which, rowflat, count};
      const IndexedOutputRow<Raw> out{yrow, ys, c.indices, irow};
      if (kOrdered && !nan)
        indexed_row<T, L, kOrdered>(in, ow, geo.last, ix, out);
      else
        indexed_row<T, L, false>(in, ow, geo.last, ix, out);
      for (int64_t o : empty_columns) store_index(c.indices, irow + o * is, c.empty_index);
    }
  };
  separable_blocks<Raw, Raw>(c.x, c.y, geo, c.threads, work, first, [&] { return second; },
                             BlockOptions{true, kFirstPassPrefetches<Raw>});
}

template <class T>
void max_pool_separable(const MaxPoolCall& c) {
  if constexpr (kIndexLanesFit<typename MaxKey<T>::Raw>) {
    if (c.indices.data != nullptr) return max_pool_separable_indices<T>(c);
  }
  using Raw = typename MaxKey<T>::Raw;
  constexpr int L = lanes_for<Raw>();
  // (float32 only: float64's ordered instances would add to every level's compile time for
  // a type rarely pooled)
  constexpr bool kOrdered = std::is_same_v<Raw, float>;
  const SeparableGeometry geo(c.x, c.y, c.w);
  const int64_t ow = c.y.sizes[3], ys = c.y.strides[3];
  const Raw empty = bit_cast<Raw>(empty_value<T>());
  const double work = double(c.y.count()) * double(geo.rows.window * geo.last.window);
  // whether the block's rows' maxima hold a NaN: its first pass done again in SPEC 3.4's
  // order, and its second pass in that order too
  auto first = [&](const RowMaxima<T>& b, Prefetch& early) {
    bool nan = false;
    if (geo.last.stride == 1)
      nan = row_maxima<T, L, 1, false, kOrdered>(b, geo, ow, early);
    else
      nan = row_maxima<T, L, 2, false, kOrdered>(b, geo, ow, early);
    if (!nan) return false;
    Prefetch none;
    if (geo.last.stride == 1)
      row_maxima<T, L, 1>(b, geo, ow, none);
    else
      row_maxima<T, L, 2>(b, geo, ow, none);
    return true;
  };
  auto second = [&](const RowMaxima<T>& b, bool nan, int64_t r0, int64_t b0, int64_t b1,
                    int64_t yplane, int64_t, int64_t, Prefetch& ahead) {
    for (int64_t oy = b0; oy < b1; ++oy) {
      ahead.next();
      Raw* yrow = c.y.template at<Raw>(yplane + oy * c.y.strides[2]);
      const Raw* rows[kMostRegisterOffsets];
      const int64_t count = geo.each_window_row(
          oy, [&](int64_t m, int64_t r) { rows[m] = b.results + (r - r0) * b.width; });
      if (count == 0) {
        for (int64_t o = 0; o < ow; ++o) store(yrow + o * ys, empty);
        continue;
      }
      if (kOrdered && !nan)
        output_row<T, kOrdered>(rows, count, ow, yrow, ys);
      else
        output_row<T>(rows, count, ow, yrow, ys);
    }
  };
  separable_blocks<Raw, Raw>(c.x, c.y, geo, c.threads, work, first,
                             [&] { return second; },
                             BlockOptions{false, kFirstPassPrefetches<Raw>});
}

}  // namespace dmlops
