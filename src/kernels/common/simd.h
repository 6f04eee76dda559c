// Portable vectors (GCC/Clang vector extensions): a Vec<T, L> of L lanes compiles to the
// widest registers of the level it is built for (two AVX-512 registers, four AVX2 ones or
// eight SSE2 ones for 16 doubles), so one source serves every level.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace dmlops {

// The width of the level's widest registers: 64 bytes with AVX-512, 32 with AVX2, 16 with
// SSE2 or NEON. A vector type of one register is what every level compiles whole: GCC 12
// expands comparisons, selects and shuffles of wider ones (64 bytes under AVX2, 32 under
// SSE2) lane by lane through the stack, which made the avx2 and baseline modules 5 to 16x
// slower than avx512 at max pooling and averages. So the fast paths size their vectors from
// this (lanes_for), and the strict build (DMLOPS_STRICT_VECTORS, CI's) fails at any such
// expansion left.
#if defined(__AVX512F__)
inline constexpr int kVectorBytes = 64;
#elif defined(__AVX2__)
inline constexpr int kVectorBytes = 32;
#else
inline constexpr int kVectorBytes = 16;
#endif

// Whether the level compares 64-bit integer lanes in registers (SSE2 alone does not).
#if defined(__x86_64__) && !defined(__SSE4_2__)
inline constexpr bool kCompares64 = false;
#else
inline constexpr bool kCompares64 = true;
#endif

// Whether the level's registers compare and select lanes of T: where not, the fast paths
// leave T to the scratch paths' loops.
template <class T> inline constexpr bool kComparesLanesOf = sizeof(T) != 8 || kCompares64;

// The lanes of a full register of T (of the widest of the types a kernel keeps side by side).
template <class T, class... More> inline constexpr int lanes_for() {
  size_t bytes = sizeof(T);
  ((bytes = sizeof(More) > bytes ? sizeof(More) : bytes), ...);
  return kVectorBytes / int(bytes);
}

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

// A stride-2 window row's offset 2 from its offset 0 (the even elements of [at, at + 2L)):
// those lanes moved on by one, the element at + 2L appended. One shuffle, where it replaced
// two loads and a shuffle (one element at a time at a row's last vector; avg_pool/README.md
// "Stride-2 pairs"). Only where a shuffle of two registers' lanes of T
// is one operation: 4- and 8-byte lanes, AVX2 and up (SSE2 expands it lane by lane, the
// strict build says; 16-bit lanes' take three).
#if defined(__AVX2__)
template <class T> inline constexpr bool kMovesOn = sizeof(T) >= 4;
#else
template <class T> inline constexpr bool kMovesOn = false;
#endif

template <class V, size_t... I>
inline V lanes_moved_on(V a, V b, std::index_sequence<I...>) {
  return __builtin_shufflevector(a, b, (I + 1)...);
}
template <class V, class E> inline V moved_on(V even, E next) {
  constexpr size_t L = sizeof(V) / sizeof(E);
  V tail{};
  tail[0] = next;
  return lanes_moved_on(even, tail, std::make_index_sequence<L>{});
}

// A comparison's lanes (0 or -1, of any width) as 32-bit lanes, by repeating narrower lanes
// or keeping the low half of wider ones: shuffles every level does in registers, where
// __builtin_convertvector of a mask narrower than a register is expanded lane by lane.
template <class M, int L, size_t... I>
inline Vec<int32_t, L> widen_mask_by(Vec<M, L> m, std::index_sequence<I...>) {
  if constexpr (sizeof(M) == 4) {
    return reinterpret_cast<Vec<int32_t, L>>(m);
  } else if constexpr (sizeof(M) < 4) {
    constexpr int R = 4 / int(sizeof(M));
    const Vec<M, L * R> w = __builtin_shufflevector(m, m, (I / R)...);
    return reinterpret_cast<Vec<int32_t, L>>(w);
  } else {
    const auto h = reinterpret_cast<Vec<int32_t, 2 * L>>(m);
    return __builtin_shufflevector(h, h, (2 * I)...);
  }
}
template <class V> inline auto widen_mask(V m) {
  using M = std::remove_cv_t<std::remove_reference_t<decltype(m[0])>>;
  constexpr int L = int(sizeof(V) / sizeof(M));
  constexpr int n = sizeof(M) < 4 ? L * (4 / int(sizeof(M))) : L;
  return widen_mask_by<M, L>(m, std::make_index_sequence<n>{});
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
