// The plain kernel: one output at a time, two passes over its window (the largest |x|, then
// the scaled sum, in row-major offset order).
#include "lp_pool/lp_pool.h"

#include <limits>

#include "common/dispatch.h"
#include "common/half.h"
#include "common/nan.h"
#include "common/threads.h"

namespace dmlops {

namespace {

// |x| in float64, exactly
template <class T> inline double magnitude(T v) { return std::fabs(double(v)); }
template <> inline double magnitude<Half>(Half v) { return std::fabs(double(half_to_float(v.bits))); }

template <class T> inline T narrow_from(double v);
template <> inline float narrow_from<float>(double v) { return canonical(float(v)); }
template <> inline double narrow_from<double>(double v) { return canonical(v); }
template <> inline Half narrow_from<Half>(double v) { return Half{half_of(v)}; }

// fn(xoff) for each real element of output o's window, in row-major offset order
template <class F>
inline void for_each_real(const Tensor& x, const Window& w, const int64_t* o, F&& fn) {
  const int k = x.rank - 2;
  Span spans[kMaxSpatial];
  int64_t j[kMaxSpatial];
  for (int i = 0; i < k; ++i) {
    spans[i] = real_offsets(dim_of(w, i, x.sizes[i + 2]), o[i + 2]);
    if (spans[i].hi <= spans[i].lo) return;
    j[i] = spans[i].lo;
  }
  for (;;) {
    int64_t xoff = o[0] * x.strides[0] + o[1] * x.strides[1];
    for (int i = 0; i < k; ++i)
      xoff += input_coord(dim_of(w, i, x.sizes[i + 2]), o[i + 2], j[i]) * x.strides[i + 2];
    fn(xoff);
    int i = k - 1;
    while (i >= 0 && ++j[i] == spans[i].hi) {
      j[i] = spans[i].lo;
      --i;
    }
    if (i < 0) return;
  }
}

template <class T>
void lp(const LpPoolCall& c) {
  const int rank = c.x.rank;
  const double p = double(c.p), root = 1.0 / p;
  const int64_t outputs = c.y.count();
  parallel_for(outputs, double(outputs) * double(c.w.size[0]), c.threads,
               [&](int64_t lo, int64_t hi) {
    int64_t o[kMaxRank];
    for (int64_t flat = lo; flat < hi; ++flat) {
      int64_t rest = flat, yoff = 0;
      for (int d = rank - 1; d >= 0; --d) {
        o[d] = rest % c.y.sizes[d];
        rest /= c.y.sizes[d];
        yoff += o[d] * c.y.strides[d];
      }
      double m = 0;
      bool nan = false;
      for_each_real(c.x, c.w, o, [&](int64_t xoff) {
        double a = magnitude(load(c.x.template at<T>(xoff)));
        nan = nan || a != a;
        m = a > m ? a : m;
      });
      double r = m;
      if (nan) {
        r = std::numeric_limits<double>::quiet_NaN();
      } else if (m > 0 && m <= std::numeric_limits<double>::max()) {
        double total = 0;
        for_each_real(c.x, c.w, o, [&](int64_t xoff) {
          total += power(magnitude(load(c.x.template at<T>(xoff))) / m, p);
        });
        r = m * power(total, root);
      }
      store(c.y.template at<T>(yoff), narrow_from<T>(r));
    }
  });
}

}  // namespace

void lp_pool(const LpPoolCall& c) {
  with_float_type(c.x.dtype, [&](auto tag) { lp<decltype(tag)>(c); });
}

}  // namespace dmlops
