// FLOAT16 as its 16-bit patterns (uint16_t), converted in registers: the CPU's own
// conversions where it has them (x86 F16C), exact software ones otherwise. Both round to
// nearest even; NaN outputs of the summing operators are made canonical by their callers
// (nan.h), so the one difference (F16C quiets a signalling NaN) never reaches a result.
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace dmlops {

// FLOAT16 travels as its bits (uint16_t) through a distinct type, so it is not taken for UINT16.
struct Half {
  uint16_t bits;
};

template <class To, class From> inline To bit_cast(From v) {
  static_assert(sizeof(To) == sizeof(From));
  To out;
  std::memcpy(&out, &v, sizeof out);
  return out;
}

// Exact: every half is a float.
inline float half_to_float_soft(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t em = h & 0x7FFFu;
  uint32_t bits;
  if (em >= 0x7C00u) {
    bits = (em << 13) + 0x70000000u;  // inf / NaN, payload kept
  } else if (em >= 0x400u) {
    bits = (em << 13) + 0x38000000u;  // normal: rebias the exponent by 127 - 15
  } else {
    bits = bit_cast<uint32_t>(float(em) * 5.9604644775390625e-08f);  // subnormal: m * 2^-24
  }
  return bit_cast<float>(bits | sign);
}

// Round to nearest, ties to even; NaN keeps its top payload bits and stays NaN (NumPy's rule).
inline uint16_t float_to_half_soft(float f) {
  uint32_t bits = bit_cast<uint32_t>(f);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t a = bits & 0x7FFFFFFFu;
  if (a > 0x7F800000u) {
    uint32_t nan = 0x7C00u | ((a & 0x7FFFFFu) >> 13);
    return uint16_t(sign | (nan == 0x7C00u ? 0x7C01u : nan));
  }
  if (a >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // rounds to >= 65520: infinity
  if (a < 0x38800000u) {
    // below 2^-14, a subnormal half: adding 0.5 aligns the mantissa so the FPU rounds
    uint32_t tiny = bit_cast<uint32_t>(bit_cast<float>(a) + 0.5f) - 0x3F000000u;
    return uint16_t(sign | tiny);
  }
  uint32_t odd = (a >> 13) & 1u;
  return uint16_t(sign | ((a + 0xC8000FFFu + odd) >> 13));
}

inline float half_to_float(uint16_t h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);
#else
  return half_to_float_soft(h);
#endif
}

inline uint16_t float_to_half(float f) {
#if defined(__F16C__)
  return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
#else
  return float_to_half_soft(f);
#endif
}

// float64 -> float16 rounded once: to float32 rounding to odd (which keeps the sticky bit),
// then to nearest even.
inline uint16_t double_to_half(double d) {
  float f = float(d);
  if (f - f == 0.0f && double(f) != d) {  // finite and inexact
    uint32_t bits = bit_cast<uint32_t>(f);
    if ((double(f) < 0 ? -double(f) : double(f)) > (d < 0 ? -d : d)) bits -= 1;  // truncate
    f = bit_cast<float>(bits | 1u);
  }
  return float_to_half(f);
}

// An element's value in an accumulator of type A: exact widening (FLOAT16 to float too).
template <class A, class T> inline A widen(T v) { return A(v); }
template <> inline float widen<float, Half>(Half v) { return half_to_float(v.bits); }

// Rows of halves to floats and back (the compiler vectorises the F16C forms).
inline void halves_to_floats(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) dst[i] = half_to_float(src[i]);
}

// 16 floats to halves at once, NaNs canonical (0x7E00, SPEC 5): F16C's conversions where
// present, else lane by lane.
inline void floats_to_halves16(const float* src, uint16_t* dst) {
#if defined(__AVX512F__)
  __m512 f = _mm512_loadu_ps(src);
  __m256i h = _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
  h = _mm256_mask_blend_epi16(nan, h, _mm256_set1_epi16(0x7E00));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), h);
#elif defined(__F16C__) && defined(__AVX2__)
  for (int k = 0; k < 16; k += 8) {
    __m256 f = _mm256_loadu_ps(src + k);
    __m128i h = _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256i nan32 = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));
    __m128i nan = _mm_packs_epi32(_mm256_castsi256_si128(nan32),
                                  _mm256_extracti128_si256(nan32, 1));
    h = _mm_blendv_epi8(h, _mm_set1_epi16(0x7E00), nan);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + k), h);
  }
#else
  for (int i = 0; i < 16; ++i)
    dst[i] = src[i] != src[i] ? uint16_t(0x7E00u) : float_to_half(src[i]);
#endif
}

}  // namespace dmlops
