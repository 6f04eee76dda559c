// From a tensor's element type to a kernel template's type argument.
#pragma once
#include <cstdint>
#include <stdexcept>

#include "common/keys.h"
#include "common/tensor.h"

namespace dmlops {

// fn(T{}) with T the C++ type of `t` (Half for FLOAT16).
template <class F>
inline void with_type(DType t, F&& fn) {
  switch (t) {
    case DType::f16: return fn(Half{});
    case DType::f32: return fn(float{});
    case DType::f64: return fn(double{});
    case DType::i8: return fn(int8_t{});
    case DType::u8: return fn(uint8_t{});
    case DType::i16: return fn(int16_t{});
    case DType::u16: return fn(uint16_t{});
    case DType::i32: return fn(int32_t{});
    case DType::u32: return fn(uint32_t{});
    case DType::i64: return fn(int64_t{});
    case DType::u64: return fn(uint64_t{});
  }
  throw std::invalid_argument("dmlops kernels: unknown element type");
}

// fn(T{}) with T the float type of `t` (FLOAT16, FLOAT32 or FLOAT64).
template <class F>
inline void with_float_type(DType t, F&& fn) {
  switch (t) {
    case DType::f16: return fn(Half{});
    case DType::f32: return fn(float{});
    case DType::f64: return fn(double{});
    default: throw std::invalid_argument("dmlops kernels: not a float type");
  }
}

}  // namespace dmlops
