#include "max_pool/max_pool_rows.h"

#include "common/dispatch.h"
#include "max_pool/max_pool.h"

namespace dmlops {

void max_pool_rows_any(const MaxPoolCall& c) {
  with_type(c.x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (c.indices.data != nullptr)
      max_pool_rows<T, true>(c);
    else
      max_pool_rows<T, false>(c);
  });
}

}  // namespace dmlops
