// MAX_POOLING (SPEC 3.4) and the argmax that MAX_POOLING_GRAD scatters through.
#pragma once
#include <cstdint>

#include "common/tensor.h"
#include "common/window.h"

namespace dmlops {

struct MaxPoolCall {
  Tensor x;        // (N, C, S1..Sk), any strides; dims as the kernel runs them
  Tensor y;        // (N, C, O1..Ok); data == nullptr: indices only (the gradient's argmax)
  Tensor indices;  // y's sizes, 4- or 8-byte unsigned; data == nullptr: values only
  Window w;
  int64_t pitch[kMaxRank];  // flat index of x's element i: sum of i[d] * pitch[d]
  uint64_t empty_index;     // the index of a window without real elements
  int threads;
  bool plain;               // force the plain kernel (tests)
};

void max_pool(const MaxPoolCall& call);

// The tiers max_pool chooses among, each in a file of its own (three translation units per
// CPU level: the build's longest compile, shared out among the cores):
void max_pool_plain_any(const MaxPoolCall& call);    // max_pool.cpp: the plain kernel
bool max_pool_separable_any(const MaxPoolCall& call);  // max_pool_separable.cpp: runs it and
                                                       // says so where its precondition holds
void max_pool_rows_any(const MaxPoolCall& call);     // max_pool_rows.cpp: registers, else rows

}  // namespace dmlops
