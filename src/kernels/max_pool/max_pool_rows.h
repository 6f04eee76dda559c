// Max pooling a row tile at a time (common/rows.h): the running key, value and index of each
// output of the tile live in scratch, and each window offset updates a contiguous range of
// them with a branch-free select, which the compiler vectorises (contiguous loads when the
// input's last dimension is packed and the stride is 1). Offsets arrive in row-major order and
// a candidate is taken only when strictly greater, so ties and NaNs resolve as in the plain
// kernel. Precondition: none (any strides, any window).
#pragma once
#include <limits>

#include "common/keys.h"
#include "common/rows.h"
#include "common/threads.h"
#include "max_pool/max_pool.h"
#include "max_pool/max_pool_registers.h"
#include "max_pool/output.h"

namespace dmlops {

// n outputs of a row tile that share a last-dimension step: output i's window starts at
// p[i * step], its offset j lies j * dstep further, and that element's flat index is
// f + i * fstep + j * fd.
template <class Raw>
struct WindowRun {
  const Raw* p;
  int64_t step, dstep;   // elements of x
  int64_t f, fstep, fd;  // flat indices
};

template <class T, bool kIndices>
struct MaxTile {
  using K = MaxKey<T>;
  using Key = typename K::Key;
  using Raw = typename K::Raw;
  using Run = WindowRun<Raw>;
  Key key[kRowTile];
  Raw value[kRowTile];
  int64_t arg[kRowTile];

  void reset(int64_t n) {
    for (int64_t i = 0; i < n; ++i) key[i] = std::numeric_limits<Key>::lowest();
    if (kIndices)
      for (int64_t i = 0; i < n; ++i) arg[i] = -1;
  }

  // outputs [at, at + n) of the scratch against one offset of their windows, r.p[i * step]
  template <int64_t kStep>
  inline void update(int64_t at, int64_t n, const Run& r) {
    // (the run's fields as locals: the stores to arg, int64_t too, could alias them otherwise)
    const Raw* p = r.p;
    const int64_t step = kStep != 0 ? kStep : r.step, f = r.f, fstep = r.fstep;
    Key* kk = key + at;
    Raw* vv = value + at;
    int64_t* aa = arg + at;
    for (int64_t i = 0; i < n; ++i) {
      Raw v = p[i * step];
      Key kv = K::key_raw(v);
      bool take = kv > kk[i];
      if (kIndices) take = take || aa[i] < 0;
      kk[i] = take ? kv : kk[i];
      if (!K::kKeyIsValue) vv[i] = take ? v : vv[i];
      if (kIndices) aa[i] = take ? f + i * fstep : aa[i];
    }
  }

  // outputs [at, at + n) against their whole window's kW offsets, compared in registers
  // first (the lowest j of equal keys wins), then merged
  template <int kW, int64_t kStep>
  inline void window(int64_t at, int64_t n, const Run& r) {
    const Raw* p = r.p;
    const int64_t step = kStep != 0 ? kStep : r.step, dstep = r.dstep;
    const int64_t f = r.f, fstep = r.fstep, fd = r.fd;
    Key* kk = key + at;
    Raw* vv = value + at;
    int64_t* aa = arg + at;
    for (int64_t i = 0; i < n; ++i) {
      Raw v = p[i * step];
      Key kv = K::key_raw(v);
      int64_t jw = 0;
      for (int j = 1; j < kW; ++j) {
        Raw cand = p[i * step + j * dstep];
        Key kc = K::key_raw(cand);
        bool t = kc > kv;
        kv = t ? kc : kv;
        if (!K::kKeyIsValue) v = t ? cand : v;
        if (kIndices) jw = t ? j : jw;
      }
      bool take = kv > kk[i];
      if (kIndices) take = take || aa[i] < 0;
      kk[i] = take ? kv : kk[i];
      if (!K::kKeyIsValue) vv[i] = take ? v : vv[i];
      if (kIndices) aa[i] = take ? f + i * fstep + jw * fd : aa[i];
    }
  }

  // a window of `width` (2 or 3) offsets, each row a run of r.step 1, 2 or any (out of
  // line, as the compiler chose before its arguments became a struct: its six loops inlined
  // into the row task would multiply the task's code for no speed)
  __attribute__((noinline)) void whole(int64_t at, int64_t n, int64_t width, const Run& r) {
    if (width == 2) {
      if (r.step == 1) return window<2, 1>(at, n, r);
      if (r.step == 2) return window<2, 2>(at, n, r);
      return window<2, 0>(at, n, r);
    }
    if (r.step == 1) return window<3, 1>(at, n, r);
    if (r.step == 2) return window<3, 2>(at, n, r);
    window<3, 0>(at, n, r);
  }

  void offset(int64_t at, int64_t n, const Run& r) {
    if (r.step == 1)
      update<1>(at, n, r);
    else
      update<0>(at, n, r);
  }
};

// Whether a row of a call that registers_fit_call may take the register path: its window
// rows few enough to keep their offsets (max_pool_registers.h).
inline bool register_row(int64_t rows) { return rows >= 1 && rows <= kMostRegisterOffsets; }

// The outputs of [t0, t1) the register path takes: the interior's, if it has a vector's worth.
inline Span register_outputs(const RowGeometry& geo, int64_t t0, int64_t t1, int lanes) {
  int64_t va = geo.interior().lo > t0 ? geo.interior().lo : t0;
  int64_t vb = geo.interior().hi < t1 ? geo.interior().hi : t1;
  if (vb - va < lanes) return Span{t0, t0};
  return Span{va, vb};
}

// The outputs of a row's tile [task.t0, task.t1) that the register path takes (the row's
// interior, by kWide lanes where it has as many, else kIndexLanes), the rest one at a time;
// false where the path takes none of the tile (its lanes no register of this level).
template <class T, bool kIndices>
bool max_pool_tile_registers(const MaxPoolCall& c, const RowGeometry& geo, const RegisterRow& r,
                             const RowTask& task) {
  using Raw = typename MaxKey<T>::Raw;
  const int64_t yoff = task.off[0], ioff = task.off[1];
  // lanes: kIndexLanes (where they fit a register); values of 1 and 2 bytes without
  // indices twice as many where the row has as many, where those fill 16 bytes
  constexpr int kLanes = kIndexLanes<Raw>, kWide = 2 * kLanes;
  constexpr bool kLanesFit = kIndexLanesFit<Raw>;
  constexpr bool kWideFits = sizeof(Raw) <= 2 && !kIndices && kWide * sizeof(Raw) >= 16;
  Span fast = register_outputs(geo, task.t0, task.t1, kWide);
  bool done = false;
  if constexpr (kWideFits) {
    done = fast.hi - fast.lo >= kWide;
    if (done)
      max_pool_registers<T, kIndices, kWide>(c, geo.last(), r, fast.lo, fast.hi, yoff, ioff);
  }
  if constexpr (kLanesFit) {
    if (!done) {
      fast = register_outputs(geo, task.t0, task.t1, kLanes);
      max_pool_registers<T, kIndices, kLanes>(c, geo.last(), r, fast.lo, fast.hi, yoff, ioff);
      done = true;
    }
  }
  if (done) {
    max_pool_row_outputs<T, kIndices>(c, geo, r, task.t0, fast.lo, yoff, ioff);
    max_pool_row_outputs<T, kIndices>(c, geo, r, fast.hi, task.t1, yoff, ioff);
  }
  return done;
}

// A row's tile through the scratch s: every window row's runs of whole windows and of single
// offsets (MaxTile), then the outputs and indices stored, an output with no real element its
// empty value and index.
template <class T, bool kIndices>
void max_pool_tile_scratch(const MaxPoolCall& c, const RowGeometry& geo, const RowTask& task,
                           MaxTile<T, kIndices>* s) {
  using Raw = typename MaxKey<T>::Raw;
  const int last = c.x.rank - 1;
  const Dim& last_dim = geo.last();
  const int64_t xs = c.x.strides[last], ps = c.pitch[last];
  const int64_t t0 = task.t0, t1 = task.t1, n = t1 - t0;
  const int64_t yoff = task.off[0], ioff = task.off[1];
  // the outputs whose windows start at last-dimension coordinate x0 of the window row at
  // xoff (flat index foff)
  auto run_at = [&](int64_t xoff, int64_t foff, int64_t x0) {
    return WindowRun<Raw>{c.x.template at<Raw>(xoff + x0 * xs), last_dim.stride * xs,
                          last_dim.dilation * xs, foff + x0 * ps, last_dim.stride * ps,
                          last_dim.dilation * ps};
  };
  s->reset(n);
  const bool any = geo.for_each_leading_offset(c.pitch, task, [&](int64_t xoff, int64_t foff) {
    geo.for_each_last_window(
        t0, t1,
        [&](int64_t a, int64_t b, int64_t x0) {
          s->whole(a - t0, b - a, last_dim.window, run_at(xoff, foff, x0));
        },
        [&](int64_t a, int64_t b, int64_t x0) {
          s->offset(a - t0, b - a, run_at(xoff, foff, x0));
        });
  });
  const Raw empty = bit_cast<Raw>(empty_value<T>());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t o = t0 + i;
    const bool has = kIndices ? s->arg[i] >= 0 : any && geo.last_real(o) > 0;
    const Raw v = MaxKey<T>::kKeyIsValue ? bit_cast<Raw>(s->key[i]) : s->value[i];
    if (c.y.data != nullptr)
      store(c.y.template at<Raw>(yoff + o * c.y.strides[last]), has ? v : empty);
    if (kIndices)
      store_index(c.indices, ioff + o * c.indices.strides[last],
                  has ? uint64_t(s->arg[i]) : c.empty_index);
  }
}

// paths: registers_and_tiles where the call fits the register path (registers_fit_call),
// which then takes the outputs of each row that register_row allows whose windows lie in the
// row; the scratch tiles take the rest.
template <class T, bool kIndices>
void max_pool_rows(const MaxPoolCall& c, RowPaths paths) {
  const int rank = c.x.rank, last = rank - 1;
  const int64_t ow = c.y.sizes[last];
  const int64_t tiles = (ow + kRowTile - 1) / kRowTile;
  const int64_t items = c.y.count() / ow * tiles;
  const RowGeometry geo(c.x, c.y, c.w);
  double volume = 1;
  for (int i = 0; i < rank - 2; ++i) volume *= double(c.w.size[i]);
  const bool narrow = narrow_indices(c);
  const RowsAhead ahead(c.x, c.w);
  parallel_for(items, double(c.y.count()) * volume, c.threads, [&](int64_t lo, int64_t hi) {
    auto* s = new MaxTile<T, kIndices>;
    int64_t xoffs[kMostRegisterOffsets], foffs[kMostRegisterOffsets];
    RowGeometry::KeptRows kept;
    RowTasks tasks(lo, tiles, rank, c.y.sizes, kRowTile, c.y.strides, c.indices.strides);
    for (int64_t item = lo; item < hi; ++item, tasks.next()) {
      const RowTask& task = *tasks;
      // the window rows of this output row, for the register path
      const int64_t rows =
          geo.leading_offsets(c.pitch, task, kept, xoffs, foffs, kMostRegisterOffsets);
      ahead.ask(c.x.template at<typename MaxKey<T>::Raw>(0), xoffs,
                rows < kMostRegisterOffsets ? rows : kMostRegisterOffsets);
      if (paths == RowPaths::registers_and_tiles && register_row(rows) &&
          max_pool_tile_registers<T, kIndices>(c, geo, RegisterRow{xoffs, foffs, rows, narrow},
                                               task))
        continue;
      max_pool_tile_scratch<T, kIndices>(c, geo, task, s);
    }
    delete s;
  });
}

}  // namespace dmlops
