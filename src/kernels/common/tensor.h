// What a kernel sees of an array: the address of element (0, ..., 0), the sizes and the
// strides in elements (any sign, zero for broadcast dimensions), and the element type.
#pragma once
#include <cstdint>
#include <cstring>

#include "config.h"

namespace dmlops {

enum class DType : int {
  f16, f32, f64, i8, u8, i16, u16, i32, u32, i64, u64,
};

inline int element_size(DType t) {
  switch (t) {
    case DType::i8: case DType::u8: return 1;
    case DType::f16: case DType::i16: case DType::u16: return 2;
    case DType::f32: case DType::i32: case DType::u32: return 4;
    default: return 8;
  }
}

struct Tensor {
  char* data = nullptr;
  DType dtype = DType::f32;
  int rank = 0;
  int64_t sizes[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};

  int64_t count() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= sizes[d];
    return n;
  }
  template <class T> T* at(int64_t offset) const {
    return reinterpret_cast<T*>(data) + offset;
  }
};

// Element offset of the row-major position `flat` (over `sizes`) through `strides`.
inline int64_t offset_of(int64_t flat, int rank, const int64_t* sizes, const int64_t* strides) {
  int64_t off = 0;
  for (int d = rank - 1; d >= 0; --d) {
    int64_t q = flat / sizes[d];
    off += (flat - q * sizes[d]) * strides[d];
    flat = q;
  }
  return off;
}

// Loads and stores of one element (the bindings only pass arrays aligned to their element).
template <class T> inline T load(const T* p) { return *p; }
template <class T> inline void store(T* p, T v) { *p = v; }

}  // namespace dmlops

namespace dmlops {

// Walks the element offsets of dims [first, rank) of a tensor in row-major order, one step
// at a time (no divisions): for (Walk w(t, 2, base); w.more(); w.next()) use(w.offset).
class Walk {
 public:
  Walk(const Tensor& t, int first, int64_t base)
      : t_(t), first_(first), offset(base), left_(1) {
    for (int d = first; d < t.rank; ++d) {
      i_[d] = 0;
      left_ *= t.sizes[d];
    }
  }
  bool more() const { return left_ > 0; }
  void next() {
    --left_;
    for (int d = t_.rank - 1; d >= first_; --d) {
      offset += t_.strides[d];
      if (++i_[d] < t_.sizes[d]) return;
      offset -= i_[d] * t_.strides[d];
      i_[d] = 0;
    }
  }

 private:
  const Tensor& t_;
  int first_;

 public:
  int64_t offset;

 private:
  int64_t left_;
  int64_t i_[kMaxRank];
};

}  // namespace dmlops
