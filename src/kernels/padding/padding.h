// PADDING / PADDING1 (SPEC 3.9): each output coordinate maps to an input coordinate per
// dimension by a closed formula (never by re-reading padded output).
#pragma once
#include <cstdint>

#include "common/tensor.h"

namespace dmlops {

enum PadMode : int { kConstant = 0, kEdge = 1, kReflection = 2, kSymmetric = 3, kWrap = 4 };

struct PadCall {
  Tensor x, y;                 // same rank and type; y.sizes = x.sizes + start + end
  int mode;
  uint64_t value;              // CONSTANT's value: the bits of y's type, in the low bytes
  int64_t start[kMaxRank];
  int threads;
  bool plain;
};

// The input coordinate of output coordinate o (relative to the input's start: x = o - start),
// or -1 for CONSTANT's padding. n >= 1 except in CONSTANT mode.
inline int64_t pad_source(int mode, int64_t n, int64_t x) {
  auto mod = [](int64_t a, int64_t p) {
    int64_t m = a % p;
    return m < 0 ? m + p : m;
  };
  if (x >= 0 && x < n) return x;
  switch (mode) {
    case kConstant: return -1;
    case kEdge: return x < 0 ? 0 : n - 1;
    case kReflection: {
      if (n == 1) return 0;
      int64_t p = 2 * (n - 1), m = mod(x, p);
      return m < n ? m : p - m;
    }
    case kSymmetric: {
      int64_t p = 2 * n, m = mod(x, p);
      return m < n ? m : p - 1 - m;
    }
    default: return mod(x, n);
  }
}

void padding(const PadCall& call);

// PADDING_GRAD (SPEC 3.10): every element of dx sums, from +0.0, the dy of every output that
// copies it, in ascending flat output order (CONSTANT's padding adds nothing), in float32
// (float64 for FLOAT64), rounded once, NaNs canonical.
struct PadGradCall {
  Tensor dy, dx;               // float types; dy.sizes = dx.sizes + start + end
  int mode;
  int64_t start[kMaxRank];
  int threads;
  bool plain;
};

void padding_grad(const PadGradCall& call);

}  // namespace dmlops
