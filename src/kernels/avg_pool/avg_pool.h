// AVERAGE_POOLING (SPEC 3.1) and QUANTIZED_LINEAR_AVERAGE_POOLING (SPEC 3.3): a window's
// real elements summed in row-major offset order from zero (so every path, the reference
// included, gives the same bits), then divided (and for quantized pooling requantized).
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>

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

// The real elements' count and the divisor of each output of a row tile, as the summing
// paths hand them to a finish; `version` changes (within one task) whenever they do, so that
// what a finish derives from them (multipliers, float divisors) can be kept across rows.
struct Counts {
  const int64_t* real;
  const int64_t* divisor;
  int64_t version;
};

// A task's finish: (*finish)(row coordinates, offset of the output row, t0, n, sums, counts)
// turns the sums of outputs [t0, t0 + n) of a row into results. An interface, so that the
// summing paths are compiled once per input and accumulator type whatever the finish makes
// of the sums (quantized pooling's int8 and uint8 outputs share them): one indirect call a
// tile, or a plain kernel's output. A MakeFinish makes each task's own (its kept divisors).
template <class A> struct Finish {
  virtual ~Finish() = default;
  virtual void operator()(const int64_t* o, int64_t yoff, int64_t t0, int64_t n, const A* sums,
                          const Counts& k) = 0;
};
template <class A> using MakeFinish = std::function<std::unique_ptr<Finish<A>>()>;

// The Finish that calls fn.
template <class A, class F> std::unique_ptr<Finish<A>> finish_of(F fn) {
  struct Of final : Finish<A> {
    F f;
    explicit Of(F g) : f(std::move(g)) {}
    void operator()(const int64_t* o, int64_t yoff, int64_t t0, int64_t n, const A* sums,
                    const Counts& k) override {
      f(o, yoff, t0, n, sums, k);
    }
  };
  return std::make_unique<Of>(std::move(fn));
}

// An average's result in the output type: +0.0 for a zero divisor, NaN canonical (SPEC 5).
template <class T, class A> inline T average_of(A sum, int64_t divisor) {
  A r = divisor > 0 ? sum / A(divisor) : A(0);
  return T(canonical(r));
}
template <> inline Half average_of<Half, float>(float sum, int64_t divisor) {
  float r = divisor > 0 ? sum / float(divisor) : 0.0f;
  return Half{half_of(r)};
}

// average_of for 16 outputs at once, a register at a time, from the divisors as floats (0
// where not positive): the same arithmetic, so the same bits.
template <class T, class A>
inline void average16(const A* sums, const A* divisor, T* y) {
  constexpr int C = lanes_for<A>();
  using VA = Vec<A, C>;
  // (a zero divisor's lane divides by zero and is then dropped)
  auto quotients = [&](int i) {
    const VA d = load_vec<VA>(divisor + i);
    return d > A(0) ? load_vec<VA>(sums + i) / d : VA{};
  };
  if constexpr (std::is_same_v<T, Half>) {
    float f[16];
    for (int i = 0; i < 16; i += C) store_vec(f + i, quotients(i));
    floats_to_halves16(f, reinterpret_cast<uint16_t*>(y));
  } else {
    for (int i = 0; i < 16; i += C) {
      const VA r = quotients(i);
      store_vec(y + i, r != r ? VA{} + canonical(A(NAN)) : r);
    }
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

// The requantizing finishes work a register of 4-byte lanes at a time.
inline constexpr int kQuantLanes = lanes_for<float>();
using QuantF = Vec<float, kQuantLanes>;
using QuantI = Vec<int32_t, kQuantLanes>;

// t clamped to +-1024: beyond, every result clamps to the type's range anyway
// (|zp_out| <= 255).
inline QuantF clamped1024(QuantF t) {
  t = t < -1024.0f ? QuantF{} - 1024.0f : t;
  return t > 1024.0f ? QuantF{} + 1024.0f : t;
}

// t (|t| < 2^22) rounded half to even: 1.5 * 2^23 added and taken away.
inline QuantF rint_lanes(QuantF t) {
  const float magic = 12582912.0f;
  return (t + magic) - magic;
}

// A register's outputs rint(t) + zp_out, clamped to T's range, zp_out where `live` is 0.
template <class T>
inline void store_requantized(QuantF r, int32_t zp_out, QuantI live, T* y) {
  QuantI q = __builtin_convertvector(r, QuantI) + zp_out;
  const int32_t lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  q = q < lo ? QuantI{} + lo : q;
  q = q > hi ? QuantI{} + hi : q;
  q = live != 0 ? q : QuantI{} + zp_out;
  // (narrowed lane by lane: a loop the compiler packs, where a vector conversion from 32 to
  // 8 bits is expanded through the stack below AVX-512)
  for (int i = 0; i < kQuantLanes; ++i) y[i] = T(q[i]);
}

// requantize for 16 outputs of one channel at once (32-bit sums): the same arithmetic.
template <class T>
inline void requantize16(const int32_t* sum, const int64_t* real, const int64_t* divisor,
                         int32_t zp_in, float s_in, float s_out, int32_t zp_out, T* y) {
  int32_t div[16], real32[16];
  for (int i = 0; i < 16; ++i) div[i] = int32_t(divisor[i]), real32[i] = int32_t(real[i]);
  for (int i = 0; i < 16; i += kQuantLanes) {
    const QuantI d = load_vec<QuantI>(div + i);
    const QuantI centred = load_vec<QuantI>(sum + i) - load_vec<QuantI>(real32 + i) * zp_in;
    QuantF t = __builtin_convertvector(centred, QuantF) * s_in;
    t = t / __builtin_convertvector(d > 0 ? d : QuantI{} + 1, QuantF);
    t = t / s_out;
    store_requantized<T>(rint_lanes(clamped1024(t)), zp_out, d > 0, y + i);
  }
}

// requantize16's results from one multiplier per lane, k = s_in / (d * s_out) rounded once
// to float from double: a = (sum - corr) * k is within 2 units in the last place (2^-24
// relative) of the exact quotient, the three roundings of requantize16's t within 3 more,
// so where |a| <= 1024 the two differ by less than 5.1 * 1024 * 2^-24 < 2^-11, and rint(a)
// is rint(t) wherever a is further than 2^-11 from a half. Beyond +-1024 both clamp to the
// type's range. False, and nothing stored, where a lane lies that near a half: then the
// exact arithmetic decides. The caller keeps the scales within [2^-40, 2^40] (no overflow,
// no subnormal steps that could matter) and the divisors' floats as requantize16 rounds
// them. live: -1 where the divisor is positive, else 0 (the output is zp_out).
template <class T>
inline bool requantize16_by_multiplier(const int32_t* sum, const int32_t* corr, const float* k,
                                       const int32_t* live, int32_t zp_out, T* y) {
  constexpr int kRegs = 16 / kQuantLanes;
  QuantF r[kRegs];
  for (int g = 0; g < kRegs; ++g) {
    const int i = g * kQuantLanes;
    const QuantI centred = load_vec<QuantI>(sum + i) - load_vec<QuantI>(corr + i);
    const QuantF a =
        clamped1024(__builtin_convertvector(centred, QuantF) * load_vec<QuantF>(k + i));
    r[g] = rint_lanes(a);
    QuantF f = a - r[g];  // exact
    f = f < 0.0f ? -f : f;
    if (any_lane((0.5f - f) < 0x1p-11f)) return false;
  }
  for (int g = 0; g < kRegs; ++g)
    store_requantized<T>(r[g], zp_out, load_vec<QuantI>(live + g * kQuantLanes),
                         y + g * kQuantLanes);
  return true;
}

// Which of a quantization's 1 or C values the output at coordinates o uses.
inline int64_t channel_of(const Quantization& q, const int64_t* o) {
  return q.count > 1 ? o[q.channel_dim] : 0;
}

}  // namespace dmlops
