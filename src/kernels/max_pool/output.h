// How max pooling's paths write their outputs: values and flat indices, one at a time or a
// register's lanes at a time.
#pragma once
#include <cstdint>

#include "common/simd.h"
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

// A register's L values to y[0], y[ys], ..: one vector store where packed.
template <class T, int L> inline void store_lanes(T* y, int64_t ys, Vec<T, L> v) {
  if (ys == 1) {
    store_vec(y, v);
  } else {
    for (int i = 0; i < L; ++i) store(y + i * ys, v[i]);
  }
}

// A register's L flat indices (32-bit lanes: every flat index of the call fits) to elements
// at, at + is, .. of the indices, at their width: one vector store where packed and 4-byte.
template <int L>
inline void store_index_lanes(const Tensor& t, int64_t at, int64_t is, Vec<uint32_t, L> flat) {
  if (is == 1 && element_size(t.dtype) == 4) {
    store_vec(t.at<uint32_t>(at), flat);
  } else if (is == 1) {
    uint64_t* out = t.at<uint64_t>(at);
    for (int i = 0; i < L; ++i) out[i] = flat[i];
  } else {
    for (int i = 0; i < L; ++i) store_index(t, at + i * is, uint64_t(flat[i]));
  }
}

}  // namespace dmlops
