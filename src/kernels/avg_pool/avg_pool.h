// AVERAGE_POOLING (SPEC 3.1) and QUANTIZED_LINEAR_AVERAGE_POOLING (SPEC 3.3): a window's
// real elements summed in row-major offset order from zero (so every path, the reference
// included, gives the same bits), then divided (and for quantized pooling requantized).
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "common/half.h"
#include "common/keys.h"
#include "common/nan.h"
#include "common/simd.h"
#include "common/tensor.h"
#include "common/window.h"

namespace dmlops {

struct Quantization {
  const int64_t* zp_in = nullptr;  // 1 or C values each (per tensor or per channel)
  const float* s_in = nullptr;
  const int64_t* zp_out = nullptr;
  const float* s_out = nullptr;
  int64_t count = 0;               // 0: not quantized
  int channel_dim = 1;             // the dimension whose coordinate picks a channel's values
};

struct SumPoolCall {
  Tensor x, y;
  Window w;
  bool include_padding;
  Quantization q;
  int threads;
  bool plain;
};

void average_pool(const SumPoolCall& call);
void quantized_average_pool(const SumPoolCall& call);

// An average's result in the output type: +0.0 for a zero divisor, NaN canonical (SPEC 5).
template <class T, class A> inline T average_of(A sum, int64_t divisor) {
  A r = divisor > 0 ? sum / A(divisor) : A(0);
  return T(canonical(r));
}
template <> inline Half average_of<Half, float>(float sum, int64_t divisor) {
  float r = divisor > 0 ? sum / float(divisor) : 0.0f;
  return Half{half_of(r)};
}

// average_of for 16 outputs at once (the compiler leaves the scalar loop alone: the 64-bit
// divisors and the NaN select); the same arithmetic, so the same bits.
template <class T, class A>
inline void average16(const A* sums, const int64_t* divisor, T* y) {
  using VA = Vec<A, 16>;
  using VL = Vec<int64_t, 16>;
  using M = Vec<MaskOf<A>, 16>;
  const VL d = load_vec<VL>(divisor);
  const M real = __builtin_convertvector(d > 0, M);
  // (a zero divisor's lane divides by zero and is then dropped)
  const VA r = real ? load_vec<VA>(sums) / __builtin_convertvector(d, VA) : VA{};
  if constexpr (std::is_same_v<T, Half>) {
    float f[16];
    store_vec(f, r);
    floats_to_halves16(f, reinterpret_cast<uint16_t*>(y));
  } else {
    store_vec(y, r != r ? VA{} + canonical(A(NAN)) : r);
  }
}

// SPEC 3.3's requantization of `sum` = the sum of (x - zp_in) over `divisor` positions,
// without branches (so loops of it vectorise); a zero divisor gives zp_out.
template <class T> inline T requantize(int64_t sum, int64_t divisor, float s_in, float s_out,
                                       int64_t zp_out) {
  float t = float(sum) * s_in;
  t = t / float(divisor > 0 ? divisor : 1);
  t = t / s_out;
  double q = double(std::nearbyint(t)) + double(zp_out);
  const double lo = double(std::numeric_limits<T>::min());
  const double hi = double(std::numeric_limits<T>::max());
  q = q < lo ? lo : q;
  q = q > hi ? hi : q;
  return T(divisor > 0 ? q : double(zp_out));
}

// requantize for 16 outputs of one channel at once (32-bit sums): the same arithmetic, with
// round-half-to-even done by adding and taking away 1.5 * 2^23 once t is clamped to +-1024
// (beyond that every result clamps to the type's range anyway: |zp_out| <= 255).
template <class T>
inline void requantize16(const int32_t* sum, const int64_t* real, const int64_t* divisor,
                         int32_t zp_in, float s_in, float s_out, int32_t zp_out, T* y) {
  using VI = Vec<int32_t, 16>;
  using VF = Vec<float, 16>;
  using VL = Vec<int64_t, 16>;
  VI div = __builtin_convertvector(load_vec<VL>(divisor), VI);
  VI centred = load_vec<VI>(sum) - __builtin_convertvector(load_vec<VL>(real), VI) * zp_in;
  VF t = __builtin_convertvector(centred, VF) * s_in;
  t = t / __builtin_convertvector(div > 0 ? div : VI{} + 1, VF);
  t = t / s_out;
  t = t < -1024.0f ? VF{} - 1024.0f : t;
  t = t > 1024.0f ? VF{} + 1024.0f : t;
  const float magic = 12582912.0f;  // 1.5 * 2^23
  VF r = (t + magic) - magic;
  VI q = __builtin_convertvector(r, VI) + zp_out;
  const int32_t lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  q = q < lo ? VI{} + lo : q;
  q = q > hi ? VI{} + hi : q;
  q = div > 0 ? q : VI{} + zp_out;
  store_vec(y, __builtin_convertvector(q, Vec<T, 16>));
}

// Which of a quantization's 1 or C values the output at coordinates o uses.
inline int64_t channel_of(const Quantization& q, const int64_t* o) {
  return q.count > 1 ? o[q.channel_dim] : 0;
}

}  // namespace dmlops
