// The pooling gradients (SPEC 3.2, 3.5): every element of dx sums its contributions from
// +0.0 in ascending forward-output order, in float32 (float64 for FLOAT64), rounded once.
// Work is shared out by (n, c) planes, each summed by one thread in that order, so results
// never depend on the threads.
#pragma once
#include <cstdint>

#include "common/tensor.h"
#include "common/window.h"
#include "max_pool/max_pool.h"

namespace dmlops {

// MAX_POOLING_GRAD: each group of (n, c) planes' argmax found by max_pool on that part of x
// (`forward`: x, the window, `plain`; flat indices index_bytes wide, from the group's first
// element), then dy scattered through it into dx while it is in the caches (README "Argmax by
// groups of planes"). x, dy and dx as the kernels run them: channels-last data re-cast with
// its channels innermost, (N, 1, S..., C), whose order keeps every element's contributions in
// ascending forward-output order. Where the argmax is given (`arg`: channels-last x whose dx is
// not channels-last, the argmax found whole, x re-cast, and dx summed plane by plane), the
// groups are single planes and the flat indices are over the whole of x.
struct MaxGradCall {
  Tensor dy, dx;
  Tensor arg;  // the argmax given (dy's sizes, flat indices over x): data == nullptr: found here
  MaxPoolCall forward;
  int index_bytes;
  int64_t group_bytes;  // about this many bytes of x a group
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
