// ROI_POOLING (SPEC 3.8): the maximum over each bin of each region (SPEC 3.4's rules: the
// first of equal values, the first NaN), 0 for an empty bin. Regions arrive scaled, rounded
// and checked: (R, 5) int64 rows [batch, x1, y1, x2, y2].
#pragma once
#include <cstdint>

#include "common/tensor.h"

namespace dmlops {

struct RoiPoolCall {
  Tensor x, y;             // x (N, C, H, W), y (R, C, PH, PW)
  const int64_t* regions;  // R rows of 5, packed
  int threads;
};

void roi_pool(const RoiPoolCall& call);

// Rows [lo, hi) of bin b of n over a region of `extent` starting at `first`, clipped to
// [0, size): floor(b * extent / n), ceil((b + 1) * extent / n).
inline void roi_bin(int64_t b, int64_t n, int64_t extent, int64_t first, int64_t size,
                    int64_t* lo, int64_t* hi) {
  auto clip = [size](int64_t v) { return v < 0 ? 0 : (v > size ? size : v); };
  *lo = clip(b * extent / n + first);
  *hi = clip(((b + 1) * extent + n - 1) / n + first);
}

}  // namespace dmlops
