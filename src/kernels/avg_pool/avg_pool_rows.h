// Summing a row tile at a time (common/rows.h): each output's running sum lives in scratch
// and each window offset adds to a contiguous range of them, so for any one output the terms
// still arrive in row-major offset order (the plain kernel's bits). FLOAT16 rows are widened
// eight at a time first (F16C) when the input's last dimension is packed. Precondition: none.
#pragma once
#include "avg_pool/avg_pool.h"
#include "avg_pool/avg_pool_registers.h"
#include "common/rows.h"
#include "common/threads.h"

namespace dmlops {

template <class T, class A>
struct SumTile {
  A acc[kRowTile];
  int64_t real[kRowTile];     // the real elements' count of each output
  int64_t divisor[kRowTile];  // and its divisor
  float wide[kRowTile];       // FLOAT16 widened

  template <int64_t kStep>
  inline void add(int64_t n, const T* p, int64_t step, A* a) {
    if (kStep != 0) step = kStep;
    for (int64_t i = 0; i < n; ++i) a[i] += widen<A>(p[i * step]);
  }

  // acc[i] + x[p + i*step] + x[p + i*step + dstep] + ... in that order, the sum in registers
  template <int kW, int64_t kStep>
  inline void window(int64_t n, const T* p, int64_t step, int64_t dstep, A* a) {
    if (kStep != 0) step = kStep;
    for (int64_t i = 0; i < n; ++i) {
      A sum = a[i];
      for (int j = 0; j < kW; ++j) sum += widen<A>(p[i * step + j * dstep]);
      a[i] = sum;
    }
  }

  void whole(int64_t at, int64_t n, int64_t width, const T* p, int64_t step, int64_t dstep) {
    A* a = acc + at;
    if (width == 2) {
      if (step == 1) return window<2, 1>(n, p, step, dstep, a);
      if (step == 2) return window<2, 2>(n, p, step, dstep, a);
      return window<2, 0>(n, p, step, dstep, a);
    }
    if (step == 1) return window<3, 1>(n, p, step, dstep, a);
    if (step == 2) return window<3, 2>(n, p, step, dstep, a);
    window<3, 0>(n, p, step, dstep, a);
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

// finish(row coordinates, offset of the output row, t0, n, sums, counts) for each tile
// [t0, t0 + n) of every output row; make_finish() makes each task's finish.
template <class T, class A, class MakeFinish>
void sum_pool_rows(const SumPoolCall& c, MakeFinish&& make_finish) {
  const int rank = c.x.rank, last = rank - 1, k = rank - 2;
  const int64_t ow = c.y.sizes[last];
  const int64_t tiles = (ow + kRowTile - 1) / kRowTile;
  const int64_t items = c.y.count() / ow * tiles;
  const RowGeometry geo(c.x, c.y, c.w);
  const Dim& dl = geo.last();
  const int64_t no_pitch[kMaxRank] = {};
  const bool registers = SumLanes<T, A>::kFits && c.x.strides[last] == 1 &&
                         (dl.stride == 1 || dl.stride == 2);
  double volume = 1;
  for (int i = 0; i < k; ++i) volume *= double(c.w.size[i]);
  parallel_for(items, double(c.y.count()) * volume, c.threads, [&](int64_t lo, int64_t hi) {
    auto* s = new SumTile<T, A>;
    auto finish = make_finish();
    int64_t xoffs[kMostRegisterOffsets];
    struct Kept {
      int64_t real, div, t0, n;
    } kept{-1, -1, -1, -1};
    Counts counts{s->real, s->divisor, 0};
    RowGeometry::KeptRows kept_rows;
    RowTasks tasks(lo, tiles, rank, c.y.sizes, kRowTile, c.y.strides);
    for (int64_t item = lo; item < hi; ++item, tasks.next()) {
      const RowTask& t = *tasks;
      int64_t real_lead = 1, div_lead = 1;
      const int64_t yoff = t.off[0];
      for (int i = 0; i + 1 < k; ++i) {
        const int64_t at = t.o[i + 2];
        real_lead *= geo.lead_real(i, at);
        div_lead *= c.include_padding ? geo.lead_padded(i, at) : geo.lead_real(i, at);
      }
      const int64_t n = t.t1 - t.t0;
      // the counts are the row before's unless its leading factors or tile differ (they
      // change only at the other dimensions' borders; 64-bit multiplies were 4 % of 2a)
      if (real_lead != kept.real || div_lead != kept.div || t.t0 != kept.t0 || n != kept.n) {
        for (int64_t i = 0; i < n; ++i) {
          const int64_t out = t.t0 + i;
          s->real[i] = real_lead * geo.last_real(out);
          s->divisor[i] =
              div_lead * (c.include_padding ? geo.last_padded(out) : geo.last_real(out));
        }
        kept = Kept{real_lead, div_lead, t.t0, n};
        ++counts.version;
      }
      const int64_t rows =
          geo.leading_offsets(no_pitch, t, kept_rows, xoffs, nullptr, kMostRegisterOffsets);
      if (registers && rows <= kMostRegisterOffsets) {
        int64_t va = geo.interior().lo > t.t0 ? geo.interior().lo : t.t0;
        int64_t vb = geo.interior().hi < t.t1 ? geo.interior().hi : t.t1;
        constexpr int L = SumLanes<T, A>::L;
        if (vb - va < L) va = vb = t.t0;
        if constexpr (SumLanes<T, A>::kFits)
          sum_pool_registers<T, A>(c, dl, xoffs, rows, va, vb, s->acc, t.t0);
        sum_pool_row_outputs<T, A>(c, geo, xoffs, rows, t.t0, va, s->acc, t.t0);
        sum_pool_row_outputs<T, A>(c, geo, xoffs, rows, vb, t.t1, s->acc, t.t0);
        finish(t.o, yoff, t.t0, n, s->acc, counts);
        continue;
      }
      for (int64_t i = 0; i < n; ++i) s->acc[i] = A(0);
      const int64_t xs = c.x.strides[last];
      geo.for_each_leading_offset(no_pitch, t, [&](int64_t xoff, int64_t) {
        geo.for_each_last_window(
            t.t0, t.t1,
            [&](int64_t a, int64_t b, int64_t x0) {
              s->whole(a - t.t0, b - a, dl.window, c.x.template at<T>(xoff + x0 * xs),
                       dl.stride * xs, dl.dilation * xs);
            },
            [&](int64_t a, int64_t b, int64_t x0) {
              s->offset(a - t.t0, b - a, c.x.template at<T>(xoff + x0 * xs), dl.stride * xs);
            });
      });
      finish(t.o, yoff, t.t0, n, s->acc, counts);
    }
    delete s;
  });
}

}  // namespace dmlops
