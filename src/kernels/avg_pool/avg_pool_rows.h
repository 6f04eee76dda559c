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

// A task's counts (real elements and divisor of each output) of its row tiles, kept by what
// decides them: the other dimensions' factors, the tile's size and its place against the
// row's borders (every tile inside the interior has the same counts). A row longer than
// kRowTile has up to three kinds of tile, which take turns: one kept set, recomputed at every
// tile, cost a long row a large part of its time, and the finishes' divisors were remade too.
class TileCounts {
 public:
  // The counts of tile [t0, t0 + n) with the other dimensions' factors real_lead and
  // div_lead (fill(real, divisor) computes them where none is kept).
  template <class Fill>
  Counts get(const RowGeometry& geo, int64_t real_lead, int64_t div_lead, int64_t t0, int64_t n,
             Fill&& fill) {
    const Span in = geo.interior();
    const int64_t place = t0 >= in.lo && t0 + n <= in.hi ? -1 : t0;
    ++clock_;
    Set* oldest = &sets_[0];
    for (Set& e : sets_) {
      if (e.real_lead == real_lead && e.div_lead == div_lead && e.place == place && e.n == n) {
        e.used = clock_;
        return Counts{e.real, e.divisor, e.version};
      }
      if (e.used < oldest->used) oldest = &e;
    }
    Set& e = *oldest;
    fill(e.real, e.divisor);
    e.real_lead = real_lead, e.div_lead = div_lead, e.place = place, e.n = n;
    e.used = clock_, e.version = ++versions_;
    return Counts{e.real, e.divisor, e.version};
  }

 private:
  struct Set {
    int64_t real[kRowTile];
    int64_t divisor[kRowTile];
    int64_t real_lead = -1, div_lead = -1, place = -2, n = -1, used = 0, version = 0;
  };
  Set sets_[kKeptCountSets];
  int64_t clock_ = 0, versions_ = 0;
};

template <class T, class A>
struct SumTile {
  A acc[kRowTile];
  TileCounts counts;
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

// (*finish)(row coordinates, offset of the output row, t0, n, sums, counts) for each tile
// [t0, t0 + n) of every output row.
template <class T, class A>
void sum_pool_rows(const SumPoolCall& c, const MakeFinish<A>& make_finish) {
  const int rank = c.x.rank, last = rank - 1, k = rank - 2;
  const int64_t ow = c.y.sizes[last];
  const int64_t tiles = (ow + kRowTile - 1) / kRowTile;
  const int64_t items = c.y.count() / ow * tiles;
  const RowGeometry geo(c.x, c.y, c.w);
  const Dim& last_dim = geo.last();
  const int64_t no_pitch[kMaxRank] = {};
  const bool registers = SumLanes<T, A>::kFits && c.x.strides[last] == 1 &&
                         (last_dim.stride == 1 || last_dim.stride == 2);
  const RowsAhead ahead(c.x, c.w);
  // an average's output type is its input's (SPEC 3.1): where the output's rows are packed,
  // the registers path may store the averages itself
  const bool averages_here =
      std::is_floating_point_v<A> && c.q.count == 0 && c.y.strides[last] == 1;
  double volume = 1;
  for (int i = 0; i < k; ++i) volume *= double(c.w.size[i]);
  parallel_for(items, double(c.y.count()) * volume, c.threads, [&](int64_t lo, int64_t hi) {
    auto* s = new SumTile<T, A>;
    auto finish = make_finish();
    int64_t xoffs[kMostRegisterOffsets];
    const T* xrows[kMostRegisterOffsets];
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
      // (the leading factors change only at the other dimensions' borders)
      const Counts counts = s->counts.get(geo, real_lead, div_lead, t.t0, n,
                                          [&](int64_t* real, int64_t* divisor) {
        for (int64_t i = 0; i < n; ++i) {
          const int64_t out = t.t0 + i;
          real[i] = real_lead * geo.last_real(out);
          divisor[i] = div_lead * (c.include_padding ? geo.last_padded(out) : geo.last_real(out));
        }
      });
      const int64_t rows =
          geo.leading_offsets(no_pitch, t, kept_rows, xoffs, nullptr, kMostRegisterOffsets);
      if (registers && rows <= kMostRegisterOffsets) {
        ahead.ask(c.x.template at<T>(0), xoffs, rows);
        for (int64_t m = 0; m < rows; ++m) xrows[m] = c.x.template at<T>(xoffs[m]);
        int64_t va = geo.interior().lo > t.t0 ? geo.interior().lo : t.t0;
        int64_t vb = geo.interior().hi < t.t1 ? geo.interior().hi : t.t1;
        SumsTo<T, A> to{s->acc};
        // averages into a packed row go straight to it (README "Averages in registers")
        if (averages_here && va < vb && counts.divisor[va - t.t0] > 0) {
          to.y = c.y.template at<T>(yoff + t.t0);
          to.divisor = A(counts.divisor[va - t.t0]);
        }
        bool done = false;
        if constexpr (SumLanes<T, A>::kFits)
          done = va < vb && sum_pool_registers<T, A>(last_dim, xrows, rows, va, vb, to, t.t0);
        if (!done) va = vb = t.t0;
        sum_pool_row_outputs<T, A>(c, geo, xoffs, rows, t.t0, va, s->acc, t.t0);
        sum_pool_row_outputs<T, A>(c, geo, xoffs, rows, vb, t.t1, s->acc, t.t0);
        if constexpr (std::is_floating_point_v<A>) {
          if (done && to.y != nullptr) {
            auto border = [&](int64_t a, int64_t b) {
              for (int64_t i = a - t.t0; i < b - t.t0; ++i)
                to.y[i] = average_of<T, A>(s->acc[i], counts.divisor[i]);
            };
            border(t.t0, va);
            border(vb, t.t1);
            continue;
          }
        }
        (*finish)(t.o, yoff, t.t0, n, s->acc, counts);
        continue;
      }
      for (int64_t i = 0; i < n; ++i) s->acc[i] = A(0);
      const int64_t xs = c.x.strides[last];
      geo.for_each_leading_offset(no_pitch, t, [&](int64_t xoff, int64_t) {
        geo.for_each_last_window(
            t.t0, t.t1,
            [&](int64_t a, int64_t b, int64_t x0) {
              s->whole(a - t.t0, b - a, last_dim.window, c.x.template at<T>(xoff + x0 * xs),
                       last_dim.stride * xs, last_dim.dilation * xs);
            },
            [&](int64_t a, int64_t b, int64_t x0) {
              s->offset(a - t.t0, b - a, c.x.template at<T>(xoff + x0 * xs), last_dim.stride * xs);
            });
      });
      (*finish)(t.o, yoff, t.t0, n, s->acc, counts);
    }
    delete s;
  });
}

}  // namespace dmlops
