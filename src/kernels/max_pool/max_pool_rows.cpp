#include "max_pool/max_pool_rows.h"

#include "common/dispatch.h"
#include "max_pool/max_pool.h"

namespace dmlops {

void max_pool_rows_any(const MaxPoolCall& c, RowPaths paths) {
  with_type(c.x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (c.indices.data != nullptr)
      max_pool_rows<T, true>(c, paths);
    else
      max_pool_rows<T, false>(c, paths);
  });
}

bool registers_fit_call(const MaxPoolCall& c) {
  const int last = c.x.rank - 1;
  const Dim last_dim = dim_of(c.w, c.x.rank - 3, c.x.sizes[last]);  // (as RowGeometry::last)
  return c.x.strides[last] == 1 && (last_dim.stride == 1 || last_dim.stride == 2) &&
         last_dim.window <= 64;
}

}  // namespace dmlops
