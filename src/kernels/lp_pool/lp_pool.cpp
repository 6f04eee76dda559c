// The plain kernel: one output at a time, two passes over its window (the largest |x|, then
// the scaled sum, in row-major offset order).
#include "lp_pool/lp_pool.h"

#include <limits>

#include "common/dispatch.h"
#include "common/half.h"
#include "common/nan.h"
#include "common/plain.h"
#include "common/threads.h"

namespace dmlops {

namespace {

// |x| in float64, exactly
template <class T> inline double magnitude(T v) { return std::fabs(double(v)); }
template <> inline double magnitude<Half>(Half v) {
  return std::fabs(double(half_to_float(v.bits)));
}

template <class T> inline T narrow_from(double v);
template <> inline float narrow_from<float>(double v) { return canonical(float(v)); }
template <> inline double narrow_from<double>(double v) { return canonical(v); }
template <> inline Half narrow_from<Half>(double v) { return Half{half_of(v)}; }

template <class T>
void lp(const LpPoolCall& c) {
  const double p = double(c.p), root = 1.0 / p;
  for_each_output(c.y, double(c.w.size[0]), c.threads, [&](const int64_t* o, int64_t yoff) {
    double m = 0;
    bool nan = false;
    for_each_real_element(c.x, c.w, o, nullptr, [&](int64_t xoff, int64_t) {
      double a = magnitude(load(c.x.template at<T>(xoff)));
      nan = nan || a != a;
      m = a > m ? a : m;
    });
    double r = m;
    if (nan) {
      r = std::numeric_limits<double>::quiet_NaN();
    } else if (m > 0 && m <= std::numeric_limits<double>::max()) {
      double total = 0;
      for_each_real_element(c.x, c.w, o, nullptr, [&](int64_t xoff, int64_t) {
        total += power(magnitude(load(c.x.template at<T>(xoff))) / m, p);
      });
      r = m * power(total, root);
    }
    store(c.y.template at<T>(yoff), narrow_from<T>(r));
  });
}

}  // namespace

void lp_pool(const LpPoolCall& c) {
  with_float_type(c.x.dtype, [&](auto tag) { lp<decltype(tag)>(c); });
}

}  // namespace dmlops
