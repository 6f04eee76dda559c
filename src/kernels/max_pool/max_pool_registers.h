// Max pooling with a row's whole window in registers: L outputs at a time, each window offset
// (the other dimensions' rows in row-major order, then the last dimension's offsets) loaded
// as one vector and compared lane by lane, so each output is written once and nothing goes
// through scratch. The comparison is SPEC 3.4's: strictly greater wins (the lowest index of
// equal values, -0.0 against +0.0 included), a NaN wins over a number and the first NaN
// sticks; FLOAT16 compares as integer keys (keys.h).
// Precondition (registers_fit_call, register_row): the input's last dimension packed (stride 1),
// the window's stride along it 1 or 2, at most kMostRegisterOffsets window rows for the row and at
// most 64 offsets along the last dimension; the outputs taken are the row's interior (every offset
// real), at least L of them.
#pragma once
#include <limits>
#include <type_traits>

#include "common/keys.h"
#include "common/rows.h"
#include "common/simd.h"
#include "max_pool/max_pool.h"
#include "max_pool/output.h"

namespace dmlops {

// The lanes the max-pool paths that carry indices work in: a register of the indices'
// 32-bit lanes (or of the values, if wider); and whether those lanes are a register of the
// level at all: values filling 16 bytes at least (no level has narrower registers; SSE2's 4
// lanes of bytes are not), compared in registers (kComparesLanesOf).
template <class Raw> inline constexpr int kIndexLanes = lanes_for<Raw, uint32_t>();
template <class Raw>
inline constexpr bool kIndexLanesFit =
    kIndexLanes<Raw> * sizeof(Raw) >= 16 && kComparesLanesOf<Raw>;

// L lanes of values of type T (Raw: as stored) and their comparison.
template <class T, int kLanes> struct MaxLanes {
  using Raw = typename MaxKey<T>::Raw;
  static constexpr int L = kLanes;
  using V = Vec<Raw, L>;
  using M = Vec<MaskOf<Raw>, L>;
  static M better(V c, V b) {
    if constexpr (std::is_floating_point_v<Raw>) {
      return (c > b) | ((c != c) & (b == b));
    } else if constexpr (std::is_same_v<T, Half>) {
      return key(c) > key(b);
    } else if constexpr (sizeof(Raw) == 8 && !kCompares64) {
      M m;  // (lane by lane, said so: GCC expands it through the stack otherwise)
      for (int i = 0; i < L; ++i) m[i] = c[i] > b[i] ? -1 : 0;
      return m;
    } else {
      return c > b;
    }
  }
  // better, or where kOrdered (floats of a block without a NaN: README "Ordered floats")
  // the plain c > b
  template <bool kOrdered> static M wins(V c, V b) {
    if constexpr (kOrdered)
      return c > b;
    else
      return better(c, b);
  }
  // FLOAT16 bits to order-preserving int16 keys (keys.h, lane by lane)
  static Vec<int16_t, L> key(V raw) {
    using K = Vec<int16_t, L>;
    K b = reinterpret_cast<K>(raw);
    K mag = b & (K{} + int16_t(0x7FFF));
    K k = b < 0 ? (b ^ int16_t(0x7FFF)) : b;
    k = mag == 0 ? K{} : k;
    return mag > int16_t(0x7C00) ? K{} + int16_t(0x7FFF) : k;
  }
};

struct RegisterRow {
  const int64_t* xoff;  // the window rows' element offsets into x (row-major order)
  const int64_t* foff;  // and their flat-index offsets
  int64_t rows;         // how many
  bool narrow;          // every flat index of x below 2^32 (narrow_indices)
};

// Whether every flat index of x (sum of i[d] * pitch[d]) is below 2^32: the register path
// then carries each lane's winner as its 32-bit flat index (adds and selects of one register)
// instead of its window position, which needed a lookup lane by lane.
inline bool narrow_indices(const MaxPoolCall& c) {
  double most = 0;
  for (int d = 0; d < c.x.rank; ++d) {
    if (c.pitch[d] < 0) return false;
    most += double(c.x.sizes[d] - 1) * double(c.pitch[d]);
  }
  return most < 4294967296.0;
}

// One window row's best of its last-dimension offsets, lanes for the outputs whose offset 0
// is at row[c0 ..] (stride kStep), and which offset won each lane (j * jstep into *which,
// kIndices). kFast (ordered floats, README "Ordered floats"): each offset by one vmaxps, the
// lanes that met a NaN or-ed into *unordered. (Inlined: its caller's loop over the window rows
// keeps row, w and d in registers; called through, they went through the stack.)
template <class Lanes, int kStep, bool kIndices, bool kFast>
__attribute__((always_inline)) inline typename Lanes::V window_row_best(
    const typename Lanes::Raw* row, int64_t c0, int64_t in, int64_t w, int64_t d,
    uint32_t jstep, Vec<uint32_t, Lanes::L>* which, typename Lanes::M* unordered) {
  using Raw = typename Lanes::Raw;
  using V = typename Lanes::V;
  constexpr int L = Lanes::L;
  V best;
  auto take = [&](V v, int64_t j) {
    if constexpr (kFast) {
      best = v > best ? v : best;
    } else {
      auto t = Lanes::better(v, best);
      best = t ? v : best;
      if constexpr (kIndices)
        *which = widen_mask(t) ? Vec<uint32_t, L>{} + uint32_t(j) * jstep : *which;
    }
  };
  auto load = [&](int64_t at) {
    const V v = load_row<Raw, L, kStep>(row, at, in);
    if constexpr (kFast) *unordered |= v != v;
    return v;
  };
  int64_t j = 1;
  bool paired = false;
  if constexpr (kStep == 2 && kMovesOn<Raw>) {
    // offsets 0 and 1 the even and odd elements of the same two loads, offset 2 moved on
    // from offset 0 (simd.h; avg_pool/README.md "Stride-2 pairs"; for narrower lanes the
    // pair's shuffles cost more than they save)
    if (d == 1 && w >= 2) {
      V odd;
      load_pair<Raw, L>(row, c0, in, &best, &odd);
      const V even = best;
      take(odd, 1);
      j = 2;
      if (w >= 3) {
        take(moved_on(even, row[c0 + 2 * L]), 2);
        j = 3;
      }
      paired = true;
    }
  }
  if (!paired) best = load(c0);
  for (; j < w; ++j) take(load(c0 + j * d), j);
  return best;
}

// The best of the window rows' bests, each row's from row_best(m): the rows in order, a
// later one taken only where better, and (kIndices) its winners (the row's own, plus its
// flat-index offset where narrow, else 64 * m) into *number: the same winner as one offset at
// a time (the first of the best), with shorter chains of dependent comparisons.
template <class Lanes, bool kIndices, class RowBest>
__attribute__((always_inline)) inline typename Lanes::V rows_best(
    const RegisterRow& r, bool narrow, RowBest row_best, Vec<uint32_t, Lanes::L>* number) {
  using U = Vec<uint32_t, Lanes::L>;
  typename Lanes::V best = row_best(0, number);
  if constexpr (kIndices) {
    if (narrow) *number += uint32_t(r.foff[0]);
  }
  for (int64_t m = 1; m < r.rows; ++m) {
    U which{};
    const typename Lanes::V v = row_best(m, &which);
    const auto take = Lanes::better(v, best);
    best = take ? v : best;
    if constexpr (kIndices) {
      const uint32_t add = narrow ? uint32_t(r.foff[m]) : uint32_t(m * 64);
      *number = widen_mask(take) ? which + add : *number;
    }
  }
  return best;
}

// rows_best of ordered floats (values only, no NaN among them: README "Ordered floats"): the
// rows in two runs, each the first of its best, then the later run's taken only where
// greater: the first of the best of all (that choice is associative), with half the chain of
// dependent vmaxps.
template <class V, class RowBest>
__attribute__((always_inline)) inline V ordered_rows_best(int64_t rows, RowBest row_best) {
  V best = row_best(0);
  const int64_t half = (rows + 1) / 2;
  if (half < rows) {
    V later = row_best(half);
    for (int64_t m = 1; m < half; ++m) {
      const V v = row_best(m);
      best = v > best ? v : best;
      if (half + m < rows) {
        const V u = row_best(half + m);
        later = u > later ? u : later;
      }
    }
    best = later > best ? later : best;
  }
  return best;
}

// The flat indices of the register path's winners, outputs o.. of the row: each lane's
// window row (number >> 6 into foff) and its offset in the row (number & 63), 64-bit, lane
// by lane (the path for inputs whose flat indices do not all fit 32 bits).
template <int L>
inline void store_wide_indices(const MaxPoolCall& c, const RegisterRow& r,
                               Vec<uint32_t, L> number, int64_t c0, int64_t s, int64_t d,
                               int64_t at) {
  const int last = c.x.rank - 1;
  const int64_t is = c.indices.strides[last];
  for (int i = 0; i < L; ++i) {
    const int64_t x = c0 + i * s + int64_t(number[i] & 63) * d;
    store_index(c.indices, at + i * is, uint64_t(r.foff[number[i] >> 6] + x * c.pitch[last]));
  }
}

// kW: the window's width along the row (dilation 1) where known when compiled (0: read from
// last_dim), see max_pool_registers.
template <class T, bool kIndices, int kLanes, int kStep, int kW>
void max_pool_registers_by(const MaxPoolCall& c, const Dim& last_dim, const RegisterRow& r,
                           int64_t va, int64_t vb, int64_t yoff, int64_t ioff) {
  using Lanes = MaxLanes<T, kLanes>;
  using Raw = typename Lanes::Raw;
  using V = typename Lanes::V;
  using M = typename Lanes::M;
  using U = Vec<uint32_t, Lanes::L>;  // winners (unsigned: narrow flat indices wrap)
  constexpr int L = Lanes::L;
  const int last = c.x.rank - 1;
  const Raw* x = c.x.template at<Raw>(0);
  const int64_t s = kStep, w = kW != 0 ? kW : last_dim.window, d = kW != 0 ? 1 : last_dim.dilation;
  const int64_t in = last_dim.in, ys = c.y.strides[last];
  const int64_t is = kIndices ? c.indices.strides[last] : 0;
  // narrow: a window row's winner is told by its flat index less the lane's (c0 + lane)
  // times the pitch, which is foff + j * d * pitch; else by j + 64 * m
  const bool narrow = kIndices && r.narrow;
  const uint32_t jstep = narrow ? uint32_t(d * c.pitch[last]) : 1;
  // float32 values at the channels-last instance (a unit window at stride 1) take each
  // offset by one vmaxps, as the separable path's ordered floats (README "Ordered floats");
  // a register of outputs that met a NaN is done again with the keys' comparison. (Only
  // there: each ordered instance is code every level compiles, and max_pool.cpp's compile
  // is the build's longest.)
  constexpr bool kOrdered = !kIndices && std::is_same_v<Raw, float> && kStep == 1 && kW == 1;
  // each lane's input coordinate less lane 0's, times the last dimension's pitch: narrow
  // indices add up modulo 2^32 (every flat index fits, so the sum is exact)
  U lane_pitch{};
  for (int i = 0; i < L; ++i) lane_pitch[i] = uint32_t(i * s) * uint32_t(c.pitch[last]);
  // outputs o.. (ordered: false where a lane met a NaN, the outputs then not stored)
  auto outputs = [&](auto ordered, int64_t o) {
    constexpr bool kFast = decltype(ordered)::value;
    const int64_t c0 = o * s - last_dim.start;  // input coordinate of lane 0 at offset 0
    auto row_best = [&](int64_t m, U* which, M* unordered) {
      return window_row_best<Lanes, kStep, kIndices, kFast>(x + r.xoff[m], c0, in, w, d, jstep,
                                                             which, unordered);
    };
    U number{};
    M unordered{};
    V best;
    if constexpr (kFast) {
      best = ordered_rows_best<V>(r.rows,
                                  [&](int64_t m) { return row_best(m, &number, &unordered); });
      if (any_lane(unordered)) return false;
    } else {
      best = rows_best<Lanes, kIndices>(r, narrow, [&](int64_t m, U* which) {
        return row_best(m, which, &unordered);
      }, &number);
    }
    if (c.y.data != nullptr) store_lanes<Raw, L>(c.y.template at<Raw>(yoff + o * ys), ys, best);
    if (kIndices && narrow)
      store_index_lanes<L>(c.indices, ioff + o * is, is,
                           number + lane_pitch + uint32_t(c0) * uint32_t(c.pitch[last]));
    else if (kIndices)
      store_wide_indices<L>(c, r, number, c0, s, d, ioff + o * is);
    return true;
  };
  // whole vectors from va; the last one ends at vb, overlapping the one before it where
  // vb - va is no multiple of L (its outputs are computed twice, to the same bits)
  sweep<L>(va, vb, [&](int64_t o) {
    if constexpr (kOrdered) {
      if (outputs(std::true_type{}, o)) return;
    }
    outputs(std::false_type{}, o);
  }, [](int64_t) {});  // (never: the caller gives at least L outputs)
}

// max_pool_registers_by with the window's width along the row a constant where it is 1 at
// stride 1 (channels-last data recast, the rows a pixel's channels): the offsets' loop and
// its per-offset branches go (README "Registers"). A width of 3 would double the instances
// for windows the separable path mostly takes.
template <class T, bool kIndices, int kLanes>
void max_pool_registers(const MaxPoolCall& c, const Dim& last_dim, const RegisterRow& r, int64_t va,
                        int64_t vb, int64_t yoff, int64_t ioff) {
  if (last_dim.stride == 1 && last_dim.window == 1)
    return max_pool_registers_by<T, kIndices, kLanes, 1, 1>(c, last_dim, r, va, vb, yoff, ioff);
  if (last_dim.stride == 1)
    max_pool_registers_by<T, kIndices, kLanes, 1, 0>(c, last_dim, r, va, vb, yoff, ioff);
  else
    max_pool_registers_by<T, kIndices, kLanes, 2, 0>(c, last_dim, r, va, vb, yoff, ioff);
}

// The outputs [a, b) of the same row one at a time (the register path's borders and
// leftovers): each window row, then the real offsets of the last dimension, in order, from
// the first real element on, a later one taken only where its key is greater: selects of
// integers (the winner's place), not branches (a branch per element is mispredicted on
// unordered data).
template <class T, bool kIndices>
void max_pool_row_outputs(const MaxPoolCall& c, const RowGeometry& geo, const RegisterRow& r,
                          int64_t a, int64_t b, int64_t yoff, int64_t ioff) {
  using K = MaxKey<T>;
  using Raw = typename K::Raw;
  const int last = c.x.rank - 1;
  const Dim& last_dim = geo.last();
  const int64_t xs = c.x.strides[last], ps = c.pitch[last];
  const Raw* x = c.x.template at<Raw>(0);
  for (int64_t o = a; o < b; ++o) {
    const Span js = geo.last_offsets(o);
    const bool has = r.rows > 0 && js.hi > js.lo;
    Raw value = bit_cast<Raw>(empty_value<T>());
    int64_t arg = 0;
    if (has) {
      const int64_t x0 = input_coord(last_dim, o, js.lo);
      int64_t won = r.xoff[0] + x0 * xs;
      arg = r.foff[0] + x0 * ps;
      typename K::Key best = K::key_raw(x[won]);
      for (int64_t m = 0; m < r.rows; ++m) {
        for (int64_t j = m == 0 ? js.lo + 1 : js.lo; j < js.hi; ++j) {
          const int64_t xi = input_coord(last_dim, o, j), at = r.xoff[m] + xi * xs;
          const typename K::Key kv = K::key_raw(x[at]);
          const bool take = kv > best;
          best = take ? kv : best;
          won = take ? at : won;
          if (kIndices) arg = take ? r.foff[m] + xi * ps : arg;
        }
      }
      value = x[won];
    }
    if (c.y.data != nullptr) store(c.y.template at<Raw>(yoff + o * c.y.strides[last]), value);
    if (kIndices)
      store_index(c.indices, ioff + o * c.indices.strides[last],
                  has ? uint64_t(arg) : c.empty_index);
  }
}

}  // namespace dmlops
