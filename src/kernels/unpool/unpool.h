// MAX_UNPOOLING (SPEC 3.7): y = 0, then y.flat[indices[i]] = x[i] in ascending input order
// (the later of two elements naming one position wins), skipping "no element" indices. The
// caller has checked every other index to be in range.
#pragma once
#include <cstdint>

#include "common/tensor.h"

namespace dmlops {

struct UnpoolCall {
  Tensor x, indices, y;  // indices: x's sizes, 4- or 8-byte unsigned
  uint64_t empty;
  bool skip_empty;
  int threads;
};

void max_unpool(const UnpoolCall& call);

}  // namespace dmlops
