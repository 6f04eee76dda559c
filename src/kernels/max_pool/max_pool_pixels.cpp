#include "max_pool/max_pool_pixels.h"

#include "max_pool/max_pool.h"

namespace dmlops {

// The types channels-last models pool: float32 (values, indices, the gradient's argmax),
// float16, int8 and uint8 (values: each other instance a compile of its own at every level);
// the others take the register path.
bool max_pool_pixels_any(const MaxPoolCall& c) {
  bool done = false;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    if (!pixel_path<T>(c)) return;
    max_pool_pixels<T>(c);
    done = true;
  };
  switch (c.x.dtype) {  // (pixel_path refuses indices where kPixelIndices<T> is false)
    case DType::f32: run(float{}); break;
    case DType::f16: run(Half{}); break;
    case DType::i8: run(int8_t{}); break;
    case DType::u8: run(uint8_t{}); break;
    default: break;
  }
  return done;
}

}  // namespace dmlops
