#include "max_pool/max_pool.h"

#include "common/dispatch.h"
#include "max_pool/max_pool_plain.h"

namespace dmlops {

// The tiers, fastest first: separable (2-D windows, packed rows), then the per-row register
// path or the row tiles (max_pool_rows.h chooses between them); the plain kernel when asked.
void max_pool(const MaxPoolCall& c) {
  if (c.plain) return max_pool_plain_any(c);
  if (max_pool_separable_any(c)) return;
  max_pool_rows_any(c);
}

void max_pool_plain_any(const MaxPoolCall& c) {
  with_type(c.x.dtype, [&](auto tag) { max_pool_plain<decltype(tag)>(c); });
}

}  // namespace dmlops
