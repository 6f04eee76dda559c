#include "max_pool/max_pool_pixels.h"

#include "max_pool/max_pool.h"

namespace dmlops {

// Float32 only, the type channels-last models pool (every other type a compile of its own at
// every level): the others take the register path.
bool max_pool_pixels_any(const MaxPoolCall& c) {
  if (c.x.dtype != DType::f32 || !pixel_path<float>(c)) return false;
  max_pool_pixels<float>(c);
  return true;
}

}  // namespace dmlops
