// Summing a row tile at a time (common/rows.h): each output's running sum lives in scratch
// and each window offset adds to a contiguous range of them, so for any one output the terms
// still arrive in row-major offset order (the plain kernel's bits). FLOAT16 rows are widened
// eight at a time first (F16C) when the input's last dimension is packed. Precondition: none.
#pragma once
#include "avg_pool/avg_pool.h"
#include "common/rows.h"
#include "common/threads.h"

namespace dmlops {

template <class T, class A>
struct SumTile {
  A acc[kRowTile];
  float wide[kRowTile];  // FLOAT16 widened

  template <int64_t kStep>
  inline void add(int64_t n, const T* p, int64_t step, A* a) {
    if (kStep != 0) step = kStep;
    for (int64_t i = 0; i < n; ++i) a[i] += widen<A>(p[i * step]);
  }

  void offset(int64_t at, int64_t n, const T* p, int64_t step) {
    if constexpr (std::is_same_v<T, Half>) {
      if (step == 1) {
        halves_to_floats(reinterpret_cast<const uint16_t*>(p), wide, n);
        A* a = acc + at;
        for (int64_t i = 0; i < n; ++i) a[i] += wide[i];
        return;
      }
    }
    if (step == 1)
      add<1>(n, p, step, acc + at);
    else
      add<0>(n, p, step, acc + at);
  }
};

// fn(output coordinates, output offset, sum, real count, divisor) for every output.
template <class T, class A, class F>
void sum_pool_rows(const SumPoolCall& c, F&& finish) {
  const int rank = c.x.rank, last = rank - 1, k = rank - 2;
  const int64_t ow = c.y.sizes[last];
  const int64_t tiles = (ow + kRowTile - 1) / kRowTile;
  const int64_t items = c.y.count() / ow * tiles;
  const Dim dl = dim_of(c.w, k - 1, c.x.sizes[last]);
  const Span reach = offsets_reaching(dl, ow);
  const int64_t no_pitch[kMaxRank] = {};
  double volume = 1;
  for (int i = 0; i < k; ++i) volume *= double(c.w.size[i]);
  parallel_for(items, double(c.y.count()) * volume, c.threads, [&](int64_t lo, int64_t hi) {
    auto* s = new SumTile<T, A>;
    int64_t o[kMaxRank];
    for (int64_t item = lo; item < hi; ++item) {
      RowTask t = row_task(item, tiles, rank, c.y.sizes, kRowTile);
      const int64_t n = t.t1 - t.t0;
      for (int64_t i = 0; i < n; ++i) s->acc[i] = A(0);
      bool any = for_each_leading_offset(c.x, c.w, no_pitch, t, [&](int64_t xoff, int64_t) {
        for_each_last_offset(dl, reach, ow, t.t0, t.t1, [&](int64_t a, int64_t b, int64_t x0) {
          s->offset(a - t.t0, b - a, c.x.template at<T>(xoff + x0 * c.x.strides[last]),
                    dl.stride * c.x.strides[last]);
        });
      });
      int64_t real_lead = 1, div_lead = 1, yoff = 0;
      for (int d = 0; d < last; ++d) {
        o[d] = t.o[d];
        yoff += o[d] * c.y.strides[d];
      }
      for (int i = 0; i + 1 < k; ++i) {
        Dim d = dim_of(c.w, i, c.x.sizes[i + 2]);
        Span js = real_offsets(d, o[i + 2]);
        real_lead *= js.hi - js.lo;
        div_lead *= divisor_factor(d, o[i + 2], c.include_padding);
      }
      for (int64_t i = 0; i < n; ++i) {
        o[last] = t.t0 + i;
        Span js = real_offsets(dl, o[last]);
        int64_t real = any ? real_lead * (js.hi - js.lo) : 0;
        finish(o, yoff + o[last] * c.y.strides[last], s->acc[i], real,
               div_lead * divisor_factor(dl, o[last], c.include_padding));
      }
    }
    delete s;
  });
}

}  // namespace dmlops
