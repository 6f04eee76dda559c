// LP_POOLING (SPEC 3.6): (sum |x|^P)^(1/P) over the real elements, in float64, as
// m * (sum (|x|/m)^P)^(1/P) with m the window's largest |x|, rounded once to the output type.
#pragma once
#include <cmath>
#include <cstdint>

#include "common/tensor.h"
#include "common/window.h"

namespace dmlops {

struct LpPoolCall {
  Tensor x, y;
  Window w;
  int64_t p;
  int threads;
};

void lp_pool(const LpPoolCall& call);

// x^p as NumPy's float power computes it for these exponents (x*x for 2, x itself for 1).
inline double power(double x, double p) {
  if (p == 1.0) return x;
  if (p == 2.0) return x * x;
  if (p == 0.5) return std::sqrt(x);
  return std::pow(x, p);
}

}  // namespace dmlops
