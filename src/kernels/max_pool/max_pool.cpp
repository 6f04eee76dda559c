#include "max_pool/max_pool.h"

#include "common/dispatch.h"
#include "max_pool/max_pool_plain.h"
#include "max_pool/max_pool_rows.h"
#include "max_pool/max_pool_separable.h"

namespace dmlops {

void max_pool(const MaxPoolCall& c) {
  with_type(c.x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (c.plain) return max_pool_plain<T>(c);
    if constexpr (kComparesLanesOf<typename MaxKey<T>::Raw>) {
      if (separable_path<T>(c)) return max_pool_separable<T>(c);
    }
    if (c.indices.data != nullptr)
      max_pool_rows<T, true>(c);
    else
      max_pool_rows<T, false>(c);
  });
}

}  // namespace dmlops
