#include "max_pool/max_pool_separable.h"
#include "max_pool/max_pool_volumes.h"

#include "common/dispatch.h"
#include "max_pool/max_pool.h"

namespace dmlops {

bool max_pool_separable_any(const MaxPoolCall& c) {
  bool done = false;
  with_type(c.x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kComparesLanesOf<typename MaxKey<T>::Raw>) {
      if (separable_path<T>(c)) {
        max_pool_separable<T>(c);
        done = true;
      } else if (volumes_path<T>(c)) {
        max_pool_volumes<T>(c);
        done = true;
      }
    }
  });
  return done;
}

}  // namespace dmlops
