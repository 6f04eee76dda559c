// The plain max-pooling kernel: one output at a time, its window's offsets in row-major
// order (ascending flat input index), a candidate taken when its key is strictly greater
// (keys.h). Every fast path must give its bits.
#pragma once
#include "common/keys.h"
#include "common/threads.h"
#include "max_pool/max_pool.h"
#include "max_pool/output.h"

namespace dmlops {

template <class T>
void max_pool_plain(const MaxPoolCall& c) {
  using K = MaxKey<T>;
  const int rank = c.x.rank, k = rank - 2;
  const int64_t outputs = c.y.count();
  double work = double(outputs) * double(c.w.size[0]);
  parallel_for(outputs, work, c.threads, [&](int64_t lo, int64_t hi) {
    int64_t o[kMaxRank];
    for (int64_t flat = lo; flat < hi; ++flat) {
      int64_t rest = flat;
      for (int d = rank - 1; d >= 0; --d) {
        o[d] = rest % c.y.sizes[d];
        rest /= c.y.sizes[d];
      }
      Span spans[kMaxSpatial];
      bool any = true;
      for (int i = 0; i < k; ++i) {
        spans[i] = real_offsets(dim_of(c.w, i, c.x.sizes[i + 2]), o[i + 2]);
        any = any && spans[i].hi > spans[i].lo;
      }
      bool has = false;
      typename K::Key best{};
      T value = empty_value<T>();
      int64_t arg = 0;
      int64_t j[kMaxSpatial];
      for (int i = 0; i < k; ++i) j[i] = spans[i].lo;
      while (any) {
        int64_t xoff = o[0] * c.x.strides[0] + o[1] * c.x.strides[1];
        int64_t foff = o[0] * c.pitch[0] + o[1] * c.pitch[1];
        for (int i = 0; i < k; ++i) {
          int64_t xi = input_coord(dim_of(c.w, i, c.x.sizes[i + 2]), o[i + 2], j[i]);
          xoff += xi * c.x.strides[i + 2];
          foff += xi * c.pitch[i + 2];
        }
        T v = load(c.x.template at<T>(xoff));
        typename K::Key kv = K::key(v);
        if (!has || kv > best) {
          has = true;
          best = kv;
          value = v;
          arg = foff;
        }
        int i = k - 1;  // next offset, row-major
        while (i >= 0 && ++j[i] == spans[i].hi) {
          j[i] = spans[i].lo;
          --i;
        }
        if (i < 0) break;
      }
      int64_t yoff = 0;
      for (int d = 0; d < rank; ++d) yoff += o[d] * c.y.strides[d];
      if (c.y.data != nullptr) store(c.y.template at<T>(yoff), value);
      if (c.indices.data != nullptr) {
        int64_t ioff = 0;
        for (int d = 0; d < rank; ++d) ioff += o[d] * c.indices.strides[d];
        store_index(c.indices, ioff, has ? uint64_t(arg) : c.empty_index);
      }
    }
  });
}

}  // namespace dmlops
