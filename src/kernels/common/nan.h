// SPEC 5: a NaN result of a summing operator (averages, the gradients, Lp) is the output
// type's canonical quiet NaN, whatever NaNs or infinities produced it, since additions may be
// reordered by hardware and compilers and would otherwise leave payloads that depend on the
// layout, the CPU level or the threads.
#pragma once
#include <cstdint>

#include "half.h"

namespace dmlops {

inline float canonical(float v) { return v != v ? bit_cast<float>(0x7FC00000u) : v; }
inline double canonical(double v) {
  return v != v ? bit_cast<double>(uint64_t(0x7FF8000000000000ull)) : v;
}
inline uint16_t half_of(float v) { return v != v ? uint16_t(0x7E00u) : float_to_half(v); }
inline uint16_t half_of(double v) { return v != v ? uint16_t(0x7E00u) : double_to_half(v); }

}  // namespace dmlops
