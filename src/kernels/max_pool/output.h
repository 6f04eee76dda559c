#pragma once
#include <cstdint>

#include "common/tensor.h"

namespace dmlops {

// Indices are written as unsigned integers of their width (INT64's "no element" -1 is
// 2^64 - 1 there).
inline void store_index(const Tensor& t, int64_t offset, uint64_t value) {
  if (element_size(t.dtype) == 4) {
    store(t.at<uint32_t>(offset), uint32_t(value));
  } else {
    store(t.at<uint64_t>(offset), value);
  }
}

}  // namespace dmlops
