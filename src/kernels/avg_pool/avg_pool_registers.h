// Summing with a row's whole window in registers: L outputs at a time, each window row (the
// other dimensions' offsets in row-major order) and then each of its last-dimension offsets
// added to the lanes' sums in that order, which is every output's own row-major order, so
// the bits are the plain kernel's. Two vectors of outputs go side by side, so that their
// chains of additions (which must stay in order) overlap.
// Precondition (as max_pool_registers.h): the input's last dimension packed, the window's
// stride along it 1 or 2, at most kMostRegisterOffsets window rows; interior outputs only.
#pragma once
#include <cstring>
#include <type_traits>

#include "avg_pool/avg_pool.h"
#include "common/half.h"
#include "common/rows.h"
#include "common/simd.h"

#if defined(__AVX512F__) || defined(__AVX2__) || defined(__F16C__)
#include <immintrin.h>
#endif

namespace dmlops {

// A register of sums (A), of kLanes lanes (a level's widest by default), and the input lanes
// (T's bits) that widen into them.
template <class T, class A, int kLanes = lanes_for<A>()> struct SumLanes {
  static constexpr int L = kLanes;
  using Raw = std::conditional_t<std::is_same_v<T, Half>, uint16_t, T>;
  using VR = Vec<Raw, L>;
  using VA = Vec<A, L>;
  // whether the inputs' lanes fill 8 bytes: below, SSE2 has no register for them, and the
  // paths that load them give way to the scratch's loops (avg_pool_rows.h)
  static constexpr bool kFits = sizeof(VR) >= 8;
  // whether a row too short for the widest registers may take these narrower ones: float
  // sums (quantized pooling's rows stay with the widest, for the build's size), whole
  // 16-byte registers of sums
  static constexpr bool kNarrowFits =
      kFits && std::is_floating_point_v<A> && sizeof(VA) >= 16 && L < lanes_for<A>();

  static VA widen_lanes(VR v) {
    if constexpr (std::is_same_v<T, Half>) {
      static_assert(std::is_same_v<A, float>);
#if defined(__AVX512F__)
      if constexpr (L == 16) return bit_cast<VA>(_mm512_cvtph_ps(bit_cast<__m256i>(v)));
      else
#endif
#if defined(__F16C__)
      if constexpr (L == 8) return bit_cast<VA>(_mm256_cvtph_ps(bit_cast<__m128i>(v)));
      else if constexpr (L == 4) return bit_cast<VA>(_mm_cvtph_ps(_mm_loadl_epi64(
          reinterpret_cast<const __m128i*>(&v))));
      else
#endif
      {
        VA out;
        for (int i = 0; i < L; ++i) out[i] = half_to_float(v[i]);
        return out;
      }
    } else if constexpr (sizeof(Raw) == 1 && sizeof(A) == 4) {
      // (GCC 12 builds this conversion from byte extractions in these loops: said explicitly)
#if defined(__AVX512F__)
      if constexpr (L == 16) {
        const __m128i b = bit_cast<__m128i>(v);
        return bit_cast<VA>(std::is_signed_v<Raw> ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b));
      } else
#endif
#if defined(__AVX2__)
      if constexpr (L == 8) {
        const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(&v));
        return bit_cast<VA>(std::is_signed_v<Raw> ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b));
      } else
#endif
      {
        VA out;
        for (int i = 0; i < L; ++i) out[i] = A(v[i]);
        return out;
      }
    } else if constexpr (std::is_same_v<Raw, A>) {
      return v;
    } else {
      // (lane by lane: __builtin_convertvector from lanes narrower than a register is
      // expanded through the stack; this loop the compiler may pack)
      VA out;
      for (int i = 0; i < L; ++i) out[i] = A(v[i]);
      return out;
    }
  }
};

// A register of averages r to y[0], y[yc], .. in the output type, NaNs made canonical (SPEC
// 5): one store where packed.
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
      // (a strided output: channels-last data into a C-contiguous one, SPEC 4's default)
      for (int k = 0; k < L; ++k) y[k * yc] = r[k];
    }
  }
}

// Where the sums of a register of outputs go: into scratch (sums[o - first]) for a finish,
// or, for averages into a packed output row, divided there by the row's one interior
// divisor and stored as results (y[o - first]): the finish's arithmetic (average16), so its
// bits, without the sums' round trip through scratch (README "Averages in registers").
template <class T, class A> struct SumsTo {
  A* sums;
  T* y = nullptr;       // nullptr: to sums
  A divisor = A(0);     // > 0 where y is set

  template <int L> void put(int64_t i, Vec<A, L> sum) const {
    if constexpr (!std::is_floating_point_v<A>) {
      store_vec(sums + i, sum);  // (quantized sums: requantized by their finish)
    } else {
      if (y == nullptr) return store_vec(sums + i, sum);
      store_averages<T, A, L>(y + i, 1, sum / divisor);
    }
  }
};

// The sums of outputs [va, vb) (at least L of them) of one row to `to` at o - first, its
// window rows' elements at coordinate 0 at xrows[0 .. rows). The last vector ends at vb,
// overlapping the one before where vb - va is no multiple of L (those outputs are summed
// twice, to the same bits).
// kW: the window's width along the row, its dilation 1, where known when compiled (0: read
// from last_dim), see sum_pool_registers_step.
template <class T, class A, int kLanes, int kStep, int kW>
void sum_pool_registers_by(const Dim& last_dim, const T* const* xrows, int64_t rows, int64_t va,
                           int64_t vb, const SumsTo<T, A>& to, int64_t first) {
  using Lanes = SumLanes<T, A, kLanes>;
  using Raw = typename Lanes::Raw;
  using VA = typename Lanes::VA;
  constexpr int L = Lanes::L;
  const Raw* const* x = reinterpret_cast<const Raw* const*>(xrows);
  const int64_t s = kStep, w = kW != 0 ? kW : last_dim.window, d = kW != 0 ? 1 : last_dim.dilation;
  const int64_t in = last_dim.in;
  auto load = [&](const Raw* row, int64_t at) {
    return Lanes::widen_lanes(load_row<Raw, L, kStep>(row, at, in));
  };
  // a window row's offsets added in order; at stride 2, offsets 0 and 1 are the even and
  // odd elements of the same two loads
  auto add_row = [&](VA& sum, const Raw* row, int64_t c0) {
    int64_t j = 0;
    if (kStep == 2 && d == 1 && w >= 2) {
      if constexpr (kMovesOn<A>) {
        // the row's 2L elements widened first (FLOAT16, bytes: 16-bit lanes' shuffles take
        // three operations, 32-bit ones one), then the even and odd ones as the sums'
        // lanes, and offset 2 moved on from offset 0 (simd.h; README "Stride-2 pairs")
        using VR = typename Lanes::VR;
        const VA a = Lanes::widen_lanes(load_vec<VR>(row + c0));
        const VA b = Lanes::widen_lanes(load_vec<VR>(row + c0 + L));
        const VA even = even_lanes(a, b, std::make_index_sequence<L>{});
        sum += even;
        sum += odd_lanes(a, b, std::make_index_sequence<L>{});
        j = 2;
        if (w >= 3) {
          sum += moved_on(even, widen<A>(*reinterpret_cast<const T*>(row + c0 + 2 * L)));
          j = 3;
        }
      } else {
        typename Lanes::VR even, odd;
        load_pair<Raw, L>(row, c0, in, &even, &odd);
        sum += Lanes::widen_lanes(even);
        sum += Lanes::widen_lanes(odd);
        j = 2;
      }
    }
    for (; j < w; ++j) sum += load(row, c0 + j * d);
  };
  int64_t o = va;
  for (; o + 2 * L <= vb; o += 2 * L) {
    const int64_t c0 = o * s - last_dim.start, c1 = c0 + L * s;
    VA sum0{}, sum1{};
    for (int64_t m = 0; m < rows; ++m) {
      add_row(sum0, x[m], c0);
      add_row(sum1, x[m], c1);
    }
    to.template put<L>(o - first, sum0);
    to.template put<L>(o - first + L, sum1);
  }
  if (o < vb && o + L > vb) o = vb - L;
  for (; o < vb; o = o + L < vb - L ? o + L : (o + L < vb ? vb - L : vb)) {
    const int64_t c0 = o * s - last_dim.start;
    VA sum{};
    for (int64_t m = 0; m < rows; ++m) add_row(sum, x[m], c0);
    to.template put<L>(o - first, sum);
  }
}

// sum_pool_registers_by with the window's width along the row a constant where it is a
// common one (the widest registers only, for the build's size): 3, 2 at stride 2, 1 at
// stride 1 (channels-last data recast). The offsets' loop then unrolls and the row's
// addresses stay in general registers instead of spilling to vector ones (README "Known
// widths").
template <class T, class A, int L, int kStep>
void sum_pool_registers_step(const Dim& last_dim, const T* const* xrows, int64_t rows, int64_t va,
                             int64_t vb, const SumsTo<T, A>& to, int64_t first) {
  if constexpr (L == SumLanes<T, A>::L) {
    if (last_dim.window == 3 && last_dim.dilation == 1)
      return sum_pool_registers_by<T, A, L, kStep, 3>(last_dim, xrows, rows, va, vb, to, first);
    if (kStep == 2 && last_dim.window == 2 && last_dim.dilation == 1)
      return sum_pool_registers_by<T, A, L, kStep, 2>(last_dim, xrows, rows, va, vb, to, first);
    if (kStep == 1 && last_dim.window == 1)
      return sum_pool_registers_by<T, A, L, kStep, 1>(last_dim, xrows, rows, va, vb, to, first);
  }
  sum_pool_registers_by<T, A, L, kStep, 0>(last_dim, xrows, rows, va, vb, to, first);
}

// The interior outputs [va, vb) of one row by the widest registers that at least one
// vector of them fills (for float sums, registers of half and a quarter the lanes where the
// row is short, so that a 28-wide row's 13 interior outputs do not go one at a time with
// AVX-512's 16 lanes; README "Narrow registers"); false where there are too few for any.
template <class T, class A, int L = SumLanes<T, A>::L>
bool sum_pool_registers(const Dim& last_dim, const T* const* xrows, int64_t rows, int64_t va,
                        int64_t vb, const SumsTo<T, A>& to, int64_t first) {
  if (vb - va >= L) {
    if (last_dim.stride == 1)
      sum_pool_registers_step<T, A, L, 1>(last_dim, xrows, rows, va, vb, to, first);
    else
      sum_pool_registers_step<T, A, L, 2>(last_dim, xrows, rows, va, vb, to, first);
    return true;
  }
  if constexpr (SumLanes<T, A, L / 2>::kNarrowFits)
    return sum_pool_registers<T, A, L / 2>(last_dim, xrows, rows, va, vb, to, first);
  return false;
}

// The sums of outputs [a, b) of the same row one at a time (the borders) into sums[o - first].
template <class T, class A>
void sum_pool_row_outputs(const SumPoolCall& c, const RowGeometry& geo, const int64_t* xoffs,
                          int64_t rows, int64_t a, int64_t b, A* sums, int64_t first) {
  const int last = c.x.rank - 1;
  const Dim& last_dim = geo.last();
  const int64_t xs = c.x.strides[last];
  for (int64_t o = a; o < b; ++o) {
    const Span js = geo.last_offsets(o);
    A sum = A(0);
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t j = js.lo; j < js.hi; ++j)
        sum += widen<A>(load(c.x.template at<T>(xoffs[m] + input_coord(last_dim, o, j) * xs)));
    sums[o - first] = sum;
  }
}

}  // namespace dmlops
