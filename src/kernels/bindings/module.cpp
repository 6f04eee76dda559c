// The Python face of the kernels: NumPy arrays in through the buffer protocol (any strides,
// read in place), the GIL released while a kernel runs. The caller (dmlops.backends.cpu)
// has validated everything and passes native-order, aligned arrays only.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "bindings/cpu_features.h"
#include "common/tensor.h"
#include "common/threads.h"
#include "avg_pool/avg_pool.h"
#include "lp_pool/lp_pool.h"
#include "max_pool/max_pool.h"
#include "padding/padding.h"
#include "pool_grad/pool_grad.h"
#include "roi_pool/roi_pool.h"
#include "unpool/unpool.h"

namespace nb = nanobind;
using dmlops::DType;
using dmlops::Tensor;
using Ints = std::vector<int64_t>;

#define DMLOPS_STR2(x) #x
#define DMLOPS_STR(x) DMLOPS_STR2(x)

namespace {

// A buffer held for the duration of a call.
class Held {
 public:
  Held() = default;
  Held(const Held&) = delete;
  ~Held() {
    if (held_) PyBuffer_Release(&view_);
  }
  Tensor take(nb::handle obj, bool writable) {
    int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj.ptr(), &view_, flags) != 0) throw nb::python_error();
    held_ = true;
    Tensor t;
    t.dtype = dtype_of(view_.format, view_.itemsize);
    if (view_.ndim > dmlops::kMaxRank)
      throw std::invalid_argument("dmlops kernels: rank too large");
    t.rank = view_.ndim;
    t.data = static_cast<char*>(view_.buf);
    if (reinterpret_cast<uintptr_t>(t.data) % view_.itemsize != 0)
      throw std::invalid_argument("dmlops kernels: unaligned array");
    for (int d = 0; d < t.rank; ++d) {
      if (view_.strides[d] % view_.itemsize != 0)
        throw std::invalid_argument("dmlops kernels: unaligned strides");
      t.sizes[d] = view_.shape[d];
      t.strides[d] = view_.strides[d] / view_.itemsize;
    }
    return t;
  }

 private:
  static DType dtype_of(const char* format, Py_ssize_t size) {
    const char* f = format;
    if (*f == '@' || *f == '=' || *f == '<') ++f;
    switch (*f) {
      case 'e': return DType::f16;
      case 'f': return DType::f32;
      case 'd': return DType::f64;
      case 'b': return DType::i8;
      case 'B': return DType::u8;
      case 'h': return DType::i16;
      case 'H': return DType::u16;
      case 'i': case 'l': case 'q':
        return size == 4 ? DType::i32 : DType::i64;
      case 'I': case 'L': case 'Q':
        return size == 4 ? DType::u32 : DType::u64;
      default:
        throw std::invalid_argument(std::string("dmlops kernels: unsupported format ") + format);
    }
  }
  Py_buffer view_{};
  bool held_ = false;
};

void fill(int64_t* dst, const Ints& src, int most) {
  if (int(src.size()) > most) throw std::invalid_argument("dmlops kernels: too many values");
  for (size_t i = 0; i < src.size(); ++i) dst[i] = src[i];
}

dmlops::Window window_of(const Ints& size, const Ints& stride, const Ints& start,
                         const Ints& end, const Ints& dilation) {
  for (const Ints* v : {&stride, &start, &end, &dilation})
    if (v->size() != size.size())
      throw std::invalid_argument("dmlops kernels: a window's fields of unequal lengths");
  dmlops::Window w;
  w.k = int(size.size());
  fill(w.size, size, dmlops::kMaxSpatial);
  fill(w.stride, stride, dmlops::kMaxSpatial);
  fill(w.start, start, dmlops::kMaxSpatial);
  fill(w.end, end, dmlops::kMaxSpatial);
  fill(w.dilation, dilation, dmlops::kMaxSpatial);
  return w;
}

void max_pool(nb::handle x, nb::handle y, nb::handle indices, const dmlops::Window& w,
              const Ints& pitch, uint64_t empty_index, int threads, bool plain) {
  Held hx, hy, hi;
  dmlops::MaxPoolCall c;
  c.x = hx.take(x, false);
  if (!indices.is_none()) c.indices = hi.take(indices, true);
  if (!y.is_none()) {
    c.y = hy.take(y, true);
  } else {  // the gradient's argmax: the indices' sizes, no values
    c.y = c.indices;
    c.y.data = nullptr;
  }
  c.w = w;
  fill(c.pitch, pitch, dmlops::kMaxRank);
  c.empty_index = empty_index;
  c.threads = threads;
  c.plain = plain;
  nb::gil_scoped_release release;
  dmlops::max_pool(c);
}

template <class T>
const T* packed(nb::handle a, Held& h, dmlops::DType want, int64_t* count) {
  Tensor t = h.take(a, false);
  if (t.dtype != want || t.rank != 1 || (t.sizes[0] > 1 && t.strides[0] != 1))
    throw std::invalid_argument("dmlops kernels: expected a packed 1-D parameter array");
  *count = t.sizes[0];
  return reinterpret_cast<const T*>(t.data);
}

void average_pool(nb::handle x, nb::handle y, const dmlops::Window& w, bool include_padding,
                  int threads, bool plain) {
  Held hx, hy;
  dmlops::SumPoolCall c;
  c.x = hx.take(x, false);
  c.y = hy.take(y, true);
  c.w = w;
  c.include_padding = include_padding;
  c.threads = threads;
  c.plain = plain;
  nb::gil_scoped_release release;
  dmlops::average_pool(c);
}

// quantization: the packed arrays (zp_in, s_in, zp_out, s_out), 1 or C values each
void quantized_average_pool(nb::handle x, nb::handle y, const nb::tuple& quantization,
                            int channel_dim, const dmlops::Window& w, bool include_padding,
                            int threads, bool plain) {
  Held hx, hy, h1, h2, h3, h4;
  dmlops::SumPoolCall c;
  c.x = hx.take(x, false);
  c.y = hy.take(y, true);
  if (quantization.size() != 4)
    throw std::invalid_argument("dmlops kernels: quantization is (zp_in, s_in, zp_out, s_out)");
  int64_t n[4];
  c.q.zp_in = packed<int64_t>(quantization[0], h1, DType::i64, &n[0]);
  c.q.s_in = packed<float>(quantization[1], h2, DType::f32, &n[1]);
  c.q.zp_out = packed<int64_t>(quantization[2], h3, DType::i64, &n[2]);
  c.q.s_out = packed<float>(quantization[3], h4, DType::f32, &n[3]);
  if (n[1] != n[0] || n[2] != n[0] || n[3] != n[0] || n[0] < 1)
    throw std::invalid_argument("dmlops kernels: quantization parameters of unequal lengths");
  c.q.count = n[0];
  c.q.channel_dim = channel_dim;
  c.w = w;
  c.include_padding = include_padding;
  c.threads = threads;
  c.plain = plain;
  nb::gil_scoped_release release;
  dmlops::quantized_average_pool(c);
}

void lp_pool(nb::handle x, nb::handle y, const dmlops::Window& w, int64_t p, int threads) {
  Held hx, hy;
  dmlops::LpPoolCall c;
  c.x = hx.take(x, false);
  c.y = hy.take(y, true);
  c.w = w;
  c.p = p;
  c.threads = threads;
  nb::gil_scoped_release release;
  dmlops::lp_pool(c);
}

// x, dy and dx as the kernels run them (channels-last data re-cast, as max_pool's); the
// argmax's flat indices index_bytes wide, found by groups of about group_bytes of x's planes,
// or given (arg, dy's sizes)
void max_pool_grad(nb::handle x, nb::handle dy, nb::handle arg, nb::handle dx,
                   const dmlops::Window& w, int index_bytes, int64_t group_bytes, int threads,
                   bool plain) {
  Held h0, h1, h2, h3;
  dmlops::MaxGradCall c;
  c.forward.x = h0.take(x, false);
  c.forward.w = w;
  c.forward.plain = plain;
  c.dy = h1.take(dy, false);
  c.dx = h2.take(dx, true);
  if (!arg.is_none()) c.arg = h3.take(arg, false);
  if (index_bytes != 4 && index_bytes != 8)
    throw std::invalid_argument("dmlops kernels: the argmax's indices are 4 or 8 bytes");
  c.index_bytes = index_bytes;
  c.group_bytes = group_bytes;
  c.threads = threads;
  nb::gil_scoped_release release;
  dmlops::max_pool_grad(c);
}

void average_pool_grad(nb::handle dy, nb::handle dx, const dmlops::Window& w,
                       bool include_padding, int threads) {
  Held h1, h2;
  dmlops::AvgGradCall c;
  c.dy = h1.take(dy, false);
  c.dx = h2.take(dx, true);
  c.w = w;
  c.include_padding = include_padding;
  c.threads = threads;
  nb::gil_scoped_release release;
  dmlops::average_pool_grad(c);
}

void max_unpool(nb::handle x, nb::handle indices, nb::handle y, uint64_t empty, bool skip,
                int threads) {
  Held h1, h2, h3;
  dmlops::UnpoolCall c;
  c.x = h1.take(x, false);
  c.indices = h2.take(indices, false);
  c.y = h3.take(y, true);
  c.empty = empty;
  c.skip_empty = skip;
  c.threads = threads;
  nb::gil_scoped_release release;
  dmlops::max_unpool(c);
}

void roi_pool(nb::handle x, nb::handle regions, nb::handle y, int threads) {
  Held h1, h2, h3;
  dmlops::RoiPoolCall c;
  c.x = h1.take(x, false);
  Tensor r = h2.take(regions, false);
  if (r.dtype != DType::i64 || r.rank != 2 || r.sizes[1] != 5 ||
      (r.sizes[0] > 1 && r.strides[0] != 5) || r.strides[1] != 1)
    throw std::invalid_argument("dmlops kernels: regions must be packed (R, 5) int64");
  c.regions = reinterpret_cast<const int64_t*>(r.data);
  c.y = h3.take(y, true);
  c.threads = threads;
  nb::gil_scoped_release release;
  dmlops::roi_pool(c);
}

void padding(nb::handle x, nb::handle y, const Ints& start, int mode, uint64_t value,
             int threads, bool plain) {
  Held hx, hy;
  dmlops::PadCall c;
  c.x = hx.take(x, false);
  c.y = hy.take(y, true);
  fill(c.start, start, dmlops::kMaxRank);
  c.mode = mode;
  c.value = value;
  c.threads = threads;
  c.plain = plain;
  nb::gil_scoped_release release;
  dmlops::padding(c);
}

void padding_grad(nb::handle dy, nb::handle dx, const Ints& start, int mode, int threads,
                  bool plain) {
  Held hy, hx;
  dmlops::PadGradCall c;
  c.dy = hy.take(dy, false);
  c.dx = hx.take(dx, true);
  fill(c.start, start, dmlops::kMaxRank);
  c.mode = mode;
  c.threads = threads;
  c.plain = plain;
  nb::gil_scoped_release release;
  dmlops::padding_grad(c);
}

}  // namespace

// The thread pool alone, for its tests (tests/test_cpu_backend.py): items [0, n) of `out`
// (packed int64) shared out as a kernel's would be, `work` their total work, each share
// writing its first item into its items; the share that
// holds item `failing` throws std::bad_alloc instead (MemoryError; -1: none), as a share
// whose scratch cannot be had does.
void check_pool(nb::handle out, double work, int threads, int64_t failing) {
  Held h;
  const Tensor t = h.take(out, true);
  if (t.dtype != DType::i64 || t.rank != 1 || (t.sizes[0] > 1 && t.strides[0] != 1))
    throw std::invalid_argument("dmlops kernels: check_pool takes a packed 1-D int64 array");
  int64_t* items = reinterpret_cast<int64_t*>(t.data);
  nb::gil_scoped_release release;
  dmlops::parallel_for(t.sizes[0], work, threads, [&](int64_t lo, int64_t hi) {
    if (lo <= failing && failing < hi) throw std::bad_alloc();
    for (int64_t i = lo; i < hi; ++i) items[i] = lo;
  });
}

NB_MODULE(DMLOPS_MODULE, m) {
  m.doc() = "dmlops's cpu kernels, built for one CPU level (see dmlops.backends.cpu)";
  m.attr("LEVEL") = DMLOPS_STR(DMLOPS_LEVEL);
  m.attr("INSTRUCTIONS") = dmlops::compiled_instructions();
  // Windows that the plan caches still hold when Python exits are not leaks of ours
  nb::set_leak_warnings(false);
  m.def("cpu_features", &dmlops::cpu_features,
        "The instruction-set extensions of this CPU that the kernels' levels use.");
  m.def("usable_cpus", &dmlops::usable_cpus, "The number of CPUs this process may run on.");
  // the plan's window (dmlops.window.Window's five fields), bound once per prepared call and
  // handed to every kernel as the struct the kernels take
  nb::class_<dmlops::Window>(m, "Window")
      .def("__init__", [](dmlops::Window* w, const Ints& size, const Ints& strides,
                          const Ints& start, const Ints& end, const Ints& dilations) {
        new (w) dmlops::Window(window_of(size, strides, start, end, dilations));
      }, nb::arg("window"), nb::arg("strides"), nb::arg("start"), nb::arg("end"),
         nb::arg("dilations"));
  m.def("max_pool", &max_pool, nb::arg("x"), nb::arg("y").none(), nb::arg("indices").none(),
        nb::arg("window"), nb::arg("pitch"), nb::arg("empty_index"), nb::arg("threads"),
        nb::arg("plain"));
  m.def("average_pool", &average_pool);
  m.def("quantized_average_pool", &quantized_average_pool);
  m.def("lp_pool", &lp_pool);
  m.def("max_pool_grad", &max_pool_grad, nb::arg("x"), nb::arg("dy"), nb::arg("arg").none(),
        nb::arg("dx"),
        nb::arg("window"), nb::arg("index_bytes"), nb::arg("group_bytes"),
        nb::arg("threads"), nb::arg("plain"));
  m.def("average_pool_grad", &average_pool_grad);
  m.def("max_unpool", &max_unpool);
  m.def("roi_pool", &roi_pool);
  m.def("padding", &padding);
  m.def("padding_grad", &padding_grad);
  m.def("check_pool", &check_pool, nb::arg("out"), nb::arg("work"), nb::arg("threads"),
        nb::arg("failing"));
}
