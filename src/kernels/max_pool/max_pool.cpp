#include "max_pool/max_pool.h"

#include "common/dispatch.h"
#include "max_pool/max_pool_plain.h"

namespace dmlops {

// The tiers, fastest first (README.md, a heading each): separable (or, for channels-last
// data, pixels), then registers for the outputs of each row that can take them, rows
// (scratch tiles) for the rest; plain when asked.
void max_pool(const MaxPoolCall& c) {
  if (c.plain) return max_pool_plain_any(c);
  if (max_pool_separable_any(c) || max_pool_pixels_any(c)) return;
  max_pool_rows_any(c, registers_fit_call(c) ? RowPaths::registers_and_tiles
                                             : RowPaths::tiles_only);
}

void max_pool_plain_any(const MaxPoolCall& c) {
  with_type(c.x.dtype, [&](auto tag) { max_pool_plain<decltype(tag)>(c); });
}

}  // namespace dmlops
