#include "pool_grad/pool_grad.h"

#include <cstdlib>
#include <new>
#include <type_traits>

#include "common/dispatch.h"
#include "common/half.h"
#include "common/nan.h"
#include "common/threads.h"

namespace dmlops {

namespace {

template <class T> inline T narrow_from_acc(float v) { return T(canonical(v)); }
template <> inline Half narrow_from_acc<Half>(float v) { return Half{half_of(v)}; }
template <> inline double narrow_from_acc<double>(float v) { return canonical(double(v)); }
inline double narrow_double(double v) { return canonical(v); }

// A plane's float accumulator, zeroed; written out through dx's strides at the end.
template <class A>
struct PlaneSums {
  explicit PlaneSums(int64_t n) : n(n), acc(static_cast<A*>(std::calloc(size_t(n), sizeof(A)))) {
    if (acc == nullptr) throw std::bad_alloc();
  }
  ~PlaneSums() { std::free(acc); }
  void clear() {
    for (int64_t i = 0; i < n; ++i) acc[i] = A(0);
  }
  template <class T>
  void write(const Tensor& dx, int64_t plane) {
    int64_t base = (plane / dx.sizes[1]) * dx.strides[0] + (plane % dx.sizes[1]) * dx.strides[1];
    int64_t e = 0;
    for (Walk w(dx, 2, base); w.more(); w.next(), ++e) {
      T v;
      if constexpr (std::is_same_v<A, double>)
        v = narrow_double(acc[e]);
      else
        v = narrow_from_acc<T>(acc[e]);
      store(dx.template at<T>(w.offset), v);
    }
  }
  int64_t n;
  A* acc;
};

inline int64_t plane_size(const Tensor& t) {
  int64_t n = 1;
  for (int d = 2; d < t.rank; ++d) n *= t.sizes[d];
  return n;
}

template <class T>
void max_grad(const MaxGradCall& c) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t planes = c.dx.sizes[0] * c.dx.sizes[1];
  const int64_t in_plane = plane_size(c.dx), out_plane = plane_size(c.dy);
  parallel_for(planes, double(planes) * double(in_plane + out_plane), c.threads,
               [&](int64_t lo, int64_t hi) {
    PlaneSums<A> sums(in_plane);
    for (int64_t plane = lo; plane < hi; ++plane) {
      sums.clear();
      int64_t n = plane / c.dy.sizes[1], ch = plane % c.dy.sizes[1];
      int64_t dyb = n * c.dy.strides[0] + ch * c.dy.strides[1];
      int64_t ab = n * c.arg.strides[0] + ch * c.arg.strides[1];
      uint64_t first = uint64_t(plane * in_plane);
      for (Walk wa(c.arg, 2, ab), wg(c.dy, 2, dyb); wa.more(); wa.next(), wg.next()) {
        uint64_t a = load(c.arg.template at<uint64_t>(wa.offset));
        if (a == c.empty) continue;
        sums.acc[a - first] += widen<A>(load(c.dy.template at<T>(wg.offset)));
      }
      sums.template write<T>(c.dx, plane);
    }
  });
}

template <class T>
void avg_grad(const AvgGradCall& c) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int k = c.dx.rank - 2;
  const int64_t planes = c.dx.sizes[0] * c.dx.sizes[1];
  const int64_t in_plane = plane_size(c.dx), out_plane = plane_size(c.dy);
  double volume = 1;
  for (int i = 0; i < k; ++i) volume *= double(c.w.size[i]);
  parallel_for(planes, double(planes) * double(out_plane) * volume, c.threads,
               [&](int64_t lo, int64_t hi) {
    PlaneSums<A> sums(in_plane);
    int64_t o[kMaxSpatial], j[kMaxSpatial], pitch[kMaxSpatial];
    int64_t step = 1;
    for (int i = k - 1; i >= 0; --i) {
      pitch[i] = step;
      step *= c.dx.sizes[i + 2];
    }
    for (int64_t plane = lo; plane < hi; ++plane) {
      sums.clear();
      int64_t n = plane / c.dy.sizes[1], ch = plane % c.dy.sizes[1];
      int64_t dyb = n * c.dy.strides[0] + ch * c.dy.strides[1];
      for (int64_t flat = 0; flat < out_plane; ++flat) {
        int64_t rest = flat, dyoff = dyb, divisor = 1;
        Span spans[kMaxSpatial];
        bool any = true;
        for (int i = k - 1; i >= 0; --i) {
          o[i] = rest % c.dy.sizes[i + 2];
          rest /= c.dy.sizes[i + 2];
          dyoff += o[i] * c.dy.strides[i + 2];
        }
        for (int i = 0; i < k; ++i) {
          Dim d = dim_of(c.w, i, c.dx.sizes[i + 2]);
          spans[i] = real_offsets(d, o[i]);
          any = any && spans[i].hi > spans[i].lo;
          divisor *= divisor_factor(d, o[i], c.include_padding);
          j[i] = spans[i].lo;
        }
        if (!any) continue;
        A g = widen<A>(load(c.dy.template at<T>(dyoff))) / A(divisor);
        for (;;) {
          int64_t e = 0;
          for (int i = 0; i < k; ++i)
            e += input_coord(dim_of(c.w, i, c.dx.sizes[i + 2]), o[i], j[i]) * pitch[i];
          sums.acc[e] += g;
          int i = k - 1;
          while (i >= 0 && ++j[i] == spans[i].hi) {
            j[i] = spans[i].lo;
            --i;
          }
          if (i < 0) break;
        }
      }
      sums.template write<T>(c.dx, plane);
    }
  });
}

}  // namespace

void max_pool_grad(const MaxGradCall& c) {
  with_float_type(c.dx.dtype, [&](auto tag) { max_grad<decltype(tag)>(c); });
}

void average_pool_grad(const AvgGradCall& c) {
  with_float_type(c.dx.dtype, [&](auto tag) { avg_grad<decltype(tag)>(c); });
}

}  // namespace dmlops
