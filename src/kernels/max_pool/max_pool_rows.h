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
#include "max_pool/output.h"

namespace dmlops {

template <class T, bool kIndices>
struct MaxTile {
  using K = MaxKey<T>;
  using Key = typename K::Key;
  Key key[kRowTile];
  T value[kRowTile];
  int64_t arg[kRowTile];

  void reset(int64_t n) {
    for (int64_t i = 0; i < n; ++i) key[i] = std::numeric_limits<Key>::lowest();
    if (kIndices)
      for (int64_t i = 0; i < n; ++i) arg[i] = -1;
  }

  // outputs [0, n) of the scratch against x[p + i*step], flat indices f + i*fstep
  template <int64_t kStep>
  inline void update(int64_t n, const T* p, int64_t step, int64_t f, int64_t fstep,
                     Key* kk, T* vv, int64_t* aa) {
    if (kStep != 0) step = kStep;
    for (int64_t i = 0; i < n; ++i) {
      T v = p[i * step];
      Key kv = K::key(v);
      bool take = kv > kk[i];
      if (kIndices) take = take || aa[i] < 0;
      kk[i] = take ? kv : kk[i];
      if (!K::kKeyIsValue) vv[i] = take ? v : vv[i];
      if (kIndices) aa[i] = take ? f + i * fstep : aa[i];
    }
  }

  void offset(int64_t at, int64_t n, const T* p, int64_t step, int64_t f, int64_t fstep) {
    if (step == 1)
      update<1>(n, p, step, f, fstep, key + at, value + at, arg + at);
    else
      update<0>(n, p, step, f, fstep, key + at, value + at, arg + at);
  }
};

template <class T, bool kIndices>
void max_pool_rows(const MaxPoolCall& c) {
  const int rank = c.x.rank, last = rank - 1;
  const int64_t ow = c.y.sizes[last];
  const int64_t tiles = (ow + kRowTile - 1) / kRowTile;
  const int64_t items = c.y.count() / ow * tiles;
  const Dim dl = dim_of(c.w, rank - 3, c.x.sizes[last]);
  const Span reach = offsets_reaching(dl, ow);
  double volume = 1;
  for (int i = 0; i < rank - 2; ++i) volume *= double(c.w.size[i]);
  parallel_for(items, double(c.y.count()) * volume, c.threads, [&](int64_t lo, int64_t hi) {
    auto* s = new MaxTile<T, kIndices>;
    for (int64_t item = lo; item < hi; ++item) {
      RowTask t = row_task(item, tiles, rank, c.y.sizes, kRowTile);
      const int64_t n = t.t1 - t.t0;
      s->reset(n);
      bool any = for_each_leading_offset(c.x, c.w, c.pitch, t, [&](int64_t xoff, int64_t foff) {
        for_each_last_offset(dl, reach, ow, t.t0, t.t1, [&](int64_t a, int64_t b, int64_t x0) {
          s->offset(a - t.t0, b - a, c.x.template at<T>(xoff + x0 * c.x.strides[last]),
                    dl.stride * c.x.strides[last], foff + x0 * c.pitch[last],
                    dl.stride * c.pitch[last]);
        });
      });
      int64_t yoff = 0, ioff = 0;
      for (int d = 0; d < last; ++d) {
        yoff += t.o[d] * c.y.strides[d];
        ioff += t.o[d] * c.indices.strides[d];
      }
      const T empty = empty_value<T>();
      for (int64_t i = 0; i < n; ++i) {
        int64_t o = t.t0 + i;
        bool has;
        if (kIndices) {
          has = s->arg[i] >= 0;
        } else {
          Span js = real_offsets(dl, o);
          has = any && js.hi > js.lo;
        }
        T v = MaxKey<T>::kKeyIsValue ? bit_cast<T>(s->key[i]) : s->value[i];
        if (c.y.data != nullptr)
          store(c.y.template at<T>(yoff + o * c.y.strides[last]), has ? v : empty);
        if (kIndices)
          store_index(c.indices, ioff + o * c.indices.strides[last],
                      has ? uint64_t(s->arg[i]) : c.empty_index);
      }
    }
    delete s;
  });
}

}  // namespace dmlops
