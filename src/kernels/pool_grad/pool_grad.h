// The pooling gradients (SPEC 3.2, 3.5): every element of dx sums its contributions from
// +0.0 in ascending forward-output order, in float32 (float64 for FLOAT64), rounded once.
// Work is shared out by (n, c) planes, each summed by one thread in that order, so results
// never depend on the threads.
#pragma once
#include <cstdint>

#include "common/tensor.h"
#include "common/window.h"

namespace dmlops {

// MAX_POOLING_GRAD's scatter: dy's value goes to the plane-local element whose flat index
// (over the whole input) `arg` holds, unless it is `empty`. The argmax comes from max_pool.
struct MaxGradCall {
  Tensor dy, arg, dx;  // arg: dy's sizes, 4- or 8-byte flat indices (empty: all ones)
  uint64_t empty;
  int threads;
};

struct AvgGradCall {
  Tensor dy, dx;
  Window w;
  bool include_padding;
  int threads;
};

void max_pool_grad(const MaxGradCall& call);
void average_pool_grad(const AvgGradCall& call);

}  // namespace dmlops
