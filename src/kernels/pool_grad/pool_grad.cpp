#include "pool_grad/pool_grad.h"

#include <cstdlib>
#include <new>
#include <type_traits>

#include "common/dispatch.h"
#include "common/half.h"
#include "common/nan.h"
#include "common/stream.h"
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
  // The plane's sums, rounded once and NaNs canonical, into dx: a row at a time (a loop the
  // compiler vectorises where dx's rows are packed), or where the sums are dx's type and its
  // planes packed, canonical in place and then the whole plane streamed (`stream`: dx is
  // larger than the caches; common/stream.h).
  template <class T>
  void write(const Tensor& dx, int64_t plane, bool stream) {
    if constexpr (std::is_same_v<T, A>) {
      if (stream) {
        for (int64_t i = 0; i < n; ++i) acc[i] = narrow<T>(acc[i]);
        const int64_t base =
            (plane / dx.sizes[1]) * dx.strides[0] + (plane % dx.sizes[1]) * dx.strides[1];
        stream_copy(dx.template at<T>(base), acc, n * int64_t(sizeof(T)));
        return;
      }
    }
    const int last = dx.rank - 1;
    const int64_t width = dx.sizes[last], step = dx.strides[last];
    Tensor rows = dx;
    rows.rank = last;  // the dimensions above the rows
    int64_t base = (plane / dx.sizes[1]) * dx.strides[0] + (plane % dx.sizes[1]) * dx.strides[1];
    const A* from = acc;
    for (Walk w(rows, 2, base); w.more(); w.next(), from += width) {
      T* y = dx.template at<T>(w.offset);
      if (step == 1) {
        for (int64_t i = 0; i < width; ++i) y[i] = narrow<T>(from[i]);
      } else {
        for (int64_t i = 0; i < width; ++i) y[i * step] = narrow<T>(from[i]);
      }
    }
  }
  template <class T> static T narrow(A v) {
    if constexpr (std::is_same_v<A, double>)
      return T(narrow_double(v));
    else
      return narrow_from_acc<T>(v);
  }
  int64_t n;
  A* acc;
};

// Whether dx's planes are each one packed run and dx larger than the caches: its planes are
// then streamed to memory (PlaneSums::write).
inline bool stream_planes(const Tensor& dx) {
  int64_t step = 1;
  for (int d = dx.rank - 1; d >= 2; --d) {
    if (dx.sizes[d] > 1 && dx.strides[d] != step) return false;
    step *= dx.sizes[d];
  }
  return worth_streaming(dx.count() * element_size(dx.dtype));
}

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
    const bool stream = stream_planes(c.dx);
    for (int64_t plane = lo; plane < hi; ++plane) {
      sums.clear();
      int64_t n = plane / c.dy.sizes[1], ch = plane % c.dy.sizes[1];
      int64_t dyb = n * c.dy.strides[0] + ch * c.dy.strides[1];
      int64_t ab = n * c.arg.strides[0] + ch * c.arg.strides[1];
      const uint64_t first = uint64_t(plane * in_plane);
      // a row of the outputs at a time, in ascending order
      const int last = c.dy.rank - 1;
      const int64_t width = c.dy.sizes[last];
      const int64_t as = c.arg.strides[last], gs = c.dy.strides[last];
      Tensor arg_rows = c.arg, dy_rows = c.dy;
      arg_rows.rank = dy_rows.rank = last;
      // (4-byte indices where every flat index fits: half the argmax's memory and traffic)
      auto scatter = [&](auto index) {
        using I = decltype(index);
        const I empty = I(c.empty);
        for (Walk wa(arg_rows, 2, ab), wg(dy_rows, 2, dyb); wa.more(); wa.next(), wg.next()) {
          const I* arg = c.arg.template at<I>(wa.offset);
          const T* g = c.dy.template at<T>(wg.offset);
          for (int64_t i = 0; i < width; ++i) {
            const I a = arg[i * as];
            if (a != empty) sums.acc[uint64_t(a) - first] += widen<A>(g[i * gs]);
          }
        }
      };
      if (element_size(c.arg.dtype) == 4)
        scatter(uint32_t{});
      else
        scatter(uint64_t{});
      sums.template write<T>(c.dx, plane, stream);
    }
    if (stream) stream_fence();
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
    const bool stream = stream_planes(c.dx);
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
      sums.template write<T>(c.dx, plane, stream);
    }
    if (stream) stream_fence();
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
