// Portable vectors (GCC/Clang vector extensions): a Vec<T, L> of L lanes compiles to the
// widest registers of the level it is built for (two AVX-512 registers, four AVX2 ones or
// eight SSE2 ones for 16 doubles), so one source serves every level.
#pragma once
#include <cstdint>
#include <cstring>
#include <utility>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace dmlops {

template <class T, int L> struct VecOf {
  typedef T type __attribute__((vector_size(sizeof(T) * L)));
};
template <class T, int L> using Vec = typename VecOf<T, L>::type;

// The same-width signed integers of a lane type (comparison results, masks).
template <int Bytes> struct MaskInt;
template <> struct MaskInt<1> { using type = int8_t; };
template <> struct MaskInt<2> { using type = int16_t; };
template <> struct MaskInt<4> { using type = int32_t; };
template <> struct MaskInt<8> { using type = int64_t; };
template <class T> using MaskOf = typename MaskInt<sizeof(T)>::type;

template <class V> inline V load_vec(const void* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V> inline void store_vec(void* p, V v) { std::memcpy(p, &v, sizeof v); }

template <class V, size_t... I>
inline V even_lanes(V a, V b, std::index_sequence<I...>) {
  return __builtin_shufflevector(a, b, (2 * I)...);
}

template <class V, size_t... I>
inline V odd_lanes(V a, V b, std::index_sequence<I...>) {
  return __builtin_shufflevector(a, b, (2 * I + 1)...);
}

// L elements p[0], p[step], ..., one at a time.
template <class T, int L>
inline Vec<T, L> load_each(const T* p, int64_t step) {
  Vec<T, L> v{};
  for (int i = 0; i < L; ++i) v[i] = p[i * step];
  return v;
}

// L elements p[0], p[kStep], ... of a row of `in` elements from position `at`, for a step
// of 1 (one load) or 2 (two loads and a shuffle, which read one element past the last lane:
// near the row's end, one at a time instead).
template <class T, int L, int kStep>
inline Vec<T, L> load_row(const T* row, int64_t at, int64_t in) {
  using V = Vec<T, L>;
  if constexpr (kStep == 1) {
    return load_vec<V>(row + at);
  } else {
    static_assert(kStep == 2);
    if (at + 2 * L > in) return load_each<T, L>(row + at, 2);
    return even_lanes(load_vec<V>(row + at), load_vec<V>(row + at + L),
                      std::make_index_sequence<L>{});
  }
}

// The even and the odd elements of row[at, at + 2L): two loads, two shuffles (near the row's
// end, one at a time).
template <class T, int L>
inline void load_pair(const T* row, int64_t at, int64_t in, Vec<T, L>* even, Vec<T, L>* odd) {
  using V = Vec<T, L>;
  if (at + 2 * L > in) {
    *even = load_each<T, L>(row + at, 2);
    *odd = load_each<T, L>(row + at + 1, 2);
    return;
  }
  V a = load_vec<V>(row + at), b = load_vec<V>(row + at + L);
  *even = even_lanes(a, b, std::make_index_sequence<L>{});
  *odd = odd_lanes(a, b, std::make_index_sequence<L>{});
}

// Whether any lane of a comparison's result (-1 or 0 per lane) is set: one mask test where
// the level has mask registers, else the lanes' words or-ed together.
template <class V> inline bool any_lane(V m) {
#if defined(__AVX512F__)
  if constexpr (sizeof(V) == 64 && sizeof(m[0]) == 4) {
    const __m512i v = reinterpret_cast<__m512i>(m);
    return _mm512_test_epi32_mask(v, v) != 0;
  }
#endif
  uint64_t w[sizeof(V) / 8];
  std::memcpy(w, &m, sizeof w);
  uint64_t any = 0;
  for (uint64_t x : w) any |= x;
  return any != 0;
}

// vec(i) for i = a, a + L, a + 2L, ... and a last one at b - L, overlapping the one before
// (its outputs computed twice, to the same bits); one(i) for each i where b - a < L.
template <int L, class VecFn, class OneFn>
inline void sweep(int64_t a, int64_t b, VecFn&& vec, OneFn&& one) {
  if (b - a < L) {
    for (int64_t i = a; i < b; ++i) one(i);
    return;
  }
  for (int64_t i = a; i < b; i = i + L < b - L ? i + L : (i + L < b ? b - L : b)) vec(i);
}

}  // namespace dmlops
