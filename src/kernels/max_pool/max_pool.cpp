#include "max_pool/max_pool.h"

#include "common/dispatch.h"
#include "max_pool/max_pool_plain.h"
#include "max_pool/max_pool_rows.h"
#include "max_pool/max_pool_separable.h"

namespace dmlops {

void max_pool(const MaxPoolCall& c) {
  with_type(c.x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (c.plain)
      max_pool_plain<T>(c);
    else if (separable_path(c))
      max_pool_separable<T>(c);
    else if (c.indices.data != nullptr)
      max_pool_rows<T, true>(c);
    else
      max_pool_rows<T, false>(c);
  });
}

}  // namespace dmlops
