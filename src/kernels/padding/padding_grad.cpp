// PADDING_GRAD: the outputs are scattered onto a zeroed accumulator in row-major output
// order, which is each input element's ascending order (SPEC 3.10). Threads share out the
// input coordinates of one dimension (`split`): a share walks every output in order but
// keeps only those whose source in that dimension is its own, so every accumulator element is
// summed by one thread, in order, and results never depend on the thread count.
#include <cstdlib>
#include <new>
#include <type_traits>
#include <vector>

#include "common/dispatch.h"
#include "common/half.h"
#include "common/nan.h"
#include "common/threads.h"
#include "padding/padding.h"

namespace dmlops {

namespace {

struct Plan {
  int rank, split;
  std::vector<std::vector<int64_t>> source;  // per dimension, per output: -1 for none
  std::vector<PadRun> runs;                  // the last dimension's outputs, by runs
  int64_t pitch[kMaxRank];                   // the accumulator's (dx's sizes, row-major)
};

Plan plan_of(const PadGradCall& c) {
  Plan p;
  p.rank = c.dx.rank;
  p.source.resize(size_t(p.rank));
  for (int d = 0; d < p.rank; ++d) {
    auto& s = p.source[size_t(d)];
    s.resize(size_t(c.dy.sizes[d]));
    for (int64_t o = 0; o < c.dy.sizes[d]; ++o) s[size_t(o)] = pad_source(c.mode, c.dx.sizes[d], o - c.start[d]);
  }
  int64_t acc = 1;
  for (int d = p.rank - 1; d >= 0; --d) {
    p.pitch[d] = acc;
    acc *= c.dx.sizes[d];
  }
  // the outermost dimension with the most input coordinates: the most shares, the longest
  // stretch of work each
  p.split = 0;
  for (int d = 1; d < p.rank; ++d)
    if (c.dx.sizes[d] > c.dx.sizes[p.split]) p.split = d;
  const auto& last = p.source[size_t(p.rank - 1)];
  cut_pad_runs(last.data(), 0, int64_t(last.size()), &p.runs);
  return p;
}

template <class T, class A>
struct Scatter {
  const PadGradCall& c;
  const Plan& p;
  A* acc;
  int64_t lo, hi;  // the share: sources [lo, hi) in dimension p.split

  bool mine(int d, int64_t src) const {
    return src >= 0 && (d != p.split || (src >= lo && src < hi));
  }

  // dims [d, rank) of the outputs at dy offset `from`, onto the accumulator at `to`
  void walk(int d, int64_t from, int64_t to) const {
    const auto& src = p.source[size_t(d)];
    if (d < p.rank - 1) {
      for (int64_t o = 0; o < c.dy.sizes[d]; ++o)
        if (mine(d, src[size_t(o)]))
          walk(d + 1, from + o * c.dy.strides[d], to + src[size_t(o)] * p.pitch[d]);
      return;
    }
    const T* dy = c.dy.template at<T>(from);
    A* a = acc + to;
    const int64_t step = c.dy.strides[d];
    if (c.plain || p.split == d) {
      for (int64_t o = 0; o < c.dy.sizes[d]; ++o)
        if (mine(d, src[size_t(o)])) a[src[size_t(o)]] += widen<A>(dy[o * step]);
      return;
    }
    // runs: each a loop of distinct targets (or one target, in order), so the order of the
    // additions into every element stays the outputs'
    for (const PadRun& r : p.runs) {
      if (r.src < 0) continue;  // (CONSTANT's padding adds nothing)
      const T* in = dy + r.at * step;
      A* to_first = a + r.src;
      if (r.step == 1 && step == 1) {
        for (int64_t k = 0; k < r.len; ++k) to_first[k] += widen<A>(in[k]);
      } else {
        for (int64_t k = 0; k < r.len; ++k) to_first[k * r.step] += widen<A>(in[k * step]);
      }
    }
  }
};

template <class T, class A> T narrow(A v) {
  if constexpr (std::is_same_v<T, Half>)
    return Half{half_of(v)};
  else
    return T(canonical(v));
}

template <class T>
void run(const PadGradCall& c) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const Plan p = plan_of(c);
  const int64_t n = c.dx.count();
  A* acc = static_cast<A*>(std::calloc(size_t(n > 0 ? n : 1), sizeof(A)));
  if (acc == nullptr) throw std::bad_alloc();
  const double work = double(c.dy.count()) + double(n);
  parallel_for(c.dx.sizes[p.split], work, c.threads, [&](int64_t lo, int64_t hi) {
    Scatter<T, A>{c, p, acc, lo, hi}.walk(0, 0, 0);
  });
  parallel_for(n, double(n), c.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      *c.dx.template at<T>(offset_of(i, c.dx.rank, c.dx.sizes, c.dx.strides)) = narrow<T>(acc[i]);
  });
  std::free(acc);
}

}  // namespace

void padding_grad(const PadGradCall& c) {
  with_float_type(c.dx.dtype, [&](auto tag) { run<decltype(tag)>(c); });
}

}  // namespace dmlops
