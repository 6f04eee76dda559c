// PADDING / PADDING1 (SPEC 3.9): each output coordinate maps to an input coordinate per
// dimension by a closed formula (never by re-reading padded output).
#pragma once
#include <cstdint>
#include <vector>

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

// A run of one dimension's outputs [at, at + len) whose sources are src + k * step (step -1,
// 0 or 1; src < 0: CONSTANT's padding throughout): a copy, a reversed copy or a fill each.
struct PadRun {
  int64_t at, len, src, step;
};

// The outputs [a, b) of a dimension, whose sources `map` gives (pad_source), as runs.
void cut_pad_runs(const int64_t* map, int64_t a, int64_t b, std::vector<PadRun>* runs);

// What padding_rows works out once per call (padding.cpp, for every element type): each
// dimension's source map, the runs of the last dimension's paddings, the copied middle
// [mid_lo, mid_hi), and for the second-to-last dimension each output's first output with
// the same source (a row whose source row was written before is copied from it).
struct PadRowPlan {
  std::vector<int64_t> maps;      // every dimension's map, one after the other
  const int64_t* map_of[kMaxRank];
  std::vector<int64_t> first_use;
  std::vector<PadRun> runs;
  int64_t mid_lo, mid_hi;
};
void plan_pad_rows(const PadCall& c, PadRowPlan* plan);

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
