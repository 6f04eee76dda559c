#include "pool_grad/pool_grad.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <new>
#include <type_traits>
#include <vector>

#include "common/dispatch.h"
#include "common/half.h"
#include "common/nan.h"
#include "common/simd.h"
#include "common/stream.h"
#include "common/threads.h"

namespace dmlops {

namespace {

template <class T> inline T narrow_from_acc(float v) { return T(canonical(v)); }
template <> inline Half narrow_from_acc<Half>(float v) { return Half{half_of(v)}; }
template <> inline double narrow_from_acc<double>(float v) { return canonical(double(v)); }
inline double narrow_double(double v) { return canonical(v); }

// A plane's float accumulator, zeroed; written out through dx's strides at the end, which
// zeroes it again for the next plane (one pass over the sums, not three).
template <class A>
struct PlaneSums {
  explicit PlaneSums(int64_t n) : n(n), acc(static_cast<A*>(std::calloc(size_t(n), sizeof(A)))) {
    if (acc == nullptr) throw std::bad_alloc();
  }
  ~PlaneSums() { std::free(acc); }
  // The plane's sums, rounded once and NaNs canonical, into dx: a row at a time (a loop the
  // compiler vectorises where dx's rows are packed), or where the sums are dx's type and its
  // planes packed, the whole plane streamed a line at a time (`stream`: dx is larger than
  // the caches; common/stream.h).
  template <class T>
  void write(const Tensor& dx, int64_t plane, bool stream) {
    if constexpr (std::is_same_v<T, A>) {
      if (stream) {
        const int64_t base =
            (plane / dx.sizes[1]) * dx.strides[0] + (plane % dx.sizes[1]) * dx.strides[1];
        return stream_out(dx.template at<T>(base));
      }
    }
    const int last = dx.rank - 1;
    const int64_t width = dx.sizes[last], step = dx.strides[last];
    Tensor rows = dx;
    rows.rank = last;  // the dimensions above the rows
    int64_t base = (plane / dx.sizes[1]) * dx.strides[0] + (plane % dx.sizes[1]) * dx.strides[1];
    A* from = acc;
    for (Walk w(rows, 2, base); w.more(); w.next(), from += width) {
      T* y = dx.template at<T>(w.offset);
      if (step == 1) {
        for (int64_t i = 0; i < width; ++i) y[i] = narrow<T>(from[i]), from[i] = A(0);
      } else {
        for (int64_t i = 0; i < width; ++i) y[i * step] = narrow<T>(from[i]), from[i] = A(0);
      }
    }
  }
  // The sums canonical into y (packed), whole 64-byte lines of it streamed from a line made
  // on the stack a register at a time.
  void stream_out(A* y) {
    constexpr int64_t K = 64 / int64_t(sizeof(A));
    constexpr int L = lanes_for<A>();
    using V = Vec<A, L>;
    const V nan = V{} + canonical(std::numeric_limits<A>::quiet_NaN());
    int64_t i = 0;
    const int64_t head =
        std::min(n, int64_t((64 - reinterpret_cast<uintptr_t>(y) % 64) % 64) / int64_t(sizeof(A)));
    for (; i < head; ++i) y[i] = narrow<A>(acc[i]), acc[i] = A(0);
    for (; i + K <= n; i += K) {
      alignas(64) A line[K];
      for (int64_t r = 0; r < K; r += L) {
        const V v = load_vec<V>(acc + i + r);
        store_vec(line + r, v != v ? nan : v);
        store_vec(acc + i + r, V{});
      }
      stream_line(y + i, line);
    }
    for (; i < n; ++i) y[i] = narrow<A>(acc[i]), acc[i] = A(0);
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

// dy's plane at dyb scattered through its argmax (at ab in arg) into the plane's sums:
// ascending output order, each flat index less `first` (the plane's first element's), an
// all-ones index (a window without elements) skipped.
template <class T, class I, class A>
void scatter_plane(const Tensor& dy, int64_t dyb, const Tensor& arg, int64_t ab, uint64_t first,
                   A* acc) {
  const int last = dy.rank - 1;
  const int64_t width = dy.sizes[last], as = arg.strides[last], gs = dy.strides[last];
  Tensor arg_rows = arg, dy_rows = dy;
  arg_rows.rank = dy_rows.rank = last;
  const I empty = ~I(0);
  for (Walk wa(arg_rows, 2, ab), wg(dy_rows, 2, dyb); wa.more(); wa.next(), wg.next()) {
    const I* a = arg.template at<I>(wa.offset);
    const T* g = dy.template at<T>(wg.offset);
    for (int64_t i = 0; i < width; ++i) {
      const I at = a[i * as];
      if (at != empty) acc[uint64_t(at) - first] += widen<A>(g[i * gs]);
    }
  }
}

// The argmax of `count` planes of x from channel ch of image n into `scratch`, packed as dy's
// planes (flat indices from the group's first element, all ones where a window has no
// element): the forward's max_pool on that part of x, on this thread.
inline Tensor group_argmax(const MaxGradCall& c, int64_t n, int64_t ch, int64_t count,
                           void* scratch) {
  MaxPoolCall f = c.forward;
  f.x.data += (n * f.x.strides[0] + ch * f.x.strides[1]) * element_size(f.x.dtype);
  f.x.sizes[0] = 1;
  f.x.sizes[1] = count;
  Tensor& arg = f.indices;
  arg.data = static_cast<char*>(scratch);
  arg.dtype = c.index_bytes == 4 ? DType::u32 : DType::u64;
  arg.rank = c.dy.rank;
  int64_t step = 1, pitch = 1;
  for (int d = arg.rank - 1; d >= 0; --d) {
    arg.sizes[d] = d == 0 ? 1 : d == 1 ? count : c.dy.sizes[d];
    arg.strides[d] = step;
    step *= arg.sizes[d];
    f.pitch[d] = pitch;
    pitch *= f.x.sizes[d];
  }
  f.y = arg;
  f.y.data = nullptr;
  f.empty_index = ~uint64_t(0);
  f.threads = 1;
  max_pool(f);
  return arg;
}

template <class T>
void max_grad(const MaxGradCall& c) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t channels = c.dy.sizes[1], planes = c.dx.sizes[0] * channels;
  const int64_t in_plane = plane_size(c.dx), out_plane = plane_size(c.dy);
  const int64_t plane_bytes = in_plane * int64_t(element_size(c.dx.dtype));
  const bool given = c.arg.data != nullptr;
  const int bytes = given ? element_size(c.arg.dtype) : c.index_bytes;
  const int64_t group =
      given ? 1 : std::clamp<int64_t>(c.group_bytes / std::max<int64_t>(plane_bytes, 1), 1, channels);
  parallel_for(planes, double(planes) * double(in_plane + out_plane), c.threads,
               [&](int64_t lo, int64_t hi) {
    PlaneSums<A> sums(in_plane);
    const bool stream = stream_planes(c.dx);
    std::vector<uint64_t> scratch(given ? 0 : size_t(group * out_plane * bytes + 7) / 8);
    for (int64_t p0 = lo; p0 < hi;) {
      // a group: planes of one image
      const int64_t n = p0 / channels, ch0 = p0 % channels;
      const int64_t p1 = std::min({hi, p0 + group, (n + 1) * channels});
      const Tensor arg = given ? c.arg : group_argmax(c, n, ch0, p1 - p0, scratch.data());
      for (int64_t plane = p0; plane < p1; ++plane) {
        const int64_t ch = plane % channels;
        const int64_t dyb = n * c.dy.strides[0] + ch * c.dy.strides[1];
        const int64_t ab = given ? n * arg.strides[0] + ch * arg.strides[1] : (plane - p0) * out_plane;
        const uint64_t first = uint64_t((given ? plane : plane - p0) * in_plane);
        // (4-byte indices where every flat index fits: half the argmax's scratch)
        if (bytes == 4)
          scatter_plane<T, uint32_t>(c.dy, dyb, arg, ab, first, sums.acc);
        else
          scatter_plane<T, uint64_t>(c.dy, dyb, arg, ab, first, sums.acc);
        sums.template write<T>(c.dx, plane, stream);
      }
      p0 = p1;
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
