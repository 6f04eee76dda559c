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
bool max_pool_separable_any(const MaxPoolCall& call);  // max_pool_separable.cpp: runs it (or,
                                                       // for 3-D windows, max_pool_volumes.h)
                                                       // and says so where its precondition holds
bool max_pool_pixels_any(const MaxPoolCall& call);  // max_pool_pixels.cpp: channels-last data's
                                                    // two passes, as max_pool_separable_any
// max_pool_rows.cpp, the row walk: the register path for the outputs of each row it can
// take (max_pool_registers.h) where the call allows it, the scratch tiles for the rest
enum class RowPaths { registers_and_tiles, tiles_only };
void max_pool_rows_any(const MaxPoolCall& call, RowPaths paths);
// the register path's precondition that holds for the whole call: the input's last dimension
// packed, the window's stride along it 1 or 2, at most 64 offsets along it (each row then
// asks for at most kMostRegisterOffsets window rows and a register's worth of outputs)
bool registers_fit_call(const MaxPoolCall& call);

}  // namespace dmlops
