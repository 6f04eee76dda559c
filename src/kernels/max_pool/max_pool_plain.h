// The plain max-pooling kernel: one output at a time, its window's offsets in row-major
// order (ascending flat input index), a candidate taken when its key is strictly greater
// (keys.h). Every fast path must give its bits.
#pragma once
#include "common/keys.h"
#include "common/plain.h"
#include "common/threads.h"
#include "max_pool/max_pool.h"
#include "max_pool/output.h"

namespace dmlops {

template <class T>
void max_pool_plain(const MaxPoolCall& c) {
  using K = MaxKey<T>;
  for_each_output(c.y, double(c.w.size[0]), c.threads, [&](const int64_t* o, int64_t yoff) {
    bool has = false;
    typename K::Key best{};
    T value = empty_value<T>();
    int64_t arg = 0;
    for_each_real_element(c.x, c.w, o, c.pitch, [&](int64_t xoff, int64_t foff) {
      T v = load(c.x.template at<T>(xoff));
      typename K::Key kv = K::key(v);
      if (!has || kv > best) {
        has = true;
        best = kv;
        value = v;
        arg = foff;
      }
    });
    if (c.y.data != nullptr) store(c.y.template at<T>(yoff), value);
    if (c.indices.data != nullptr) {
      int64_t ioff = 0;
      for (int d = 0; d < c.y.rank; ++d) ioff += o[d] * c.indices.strides[d];
      store_index(c.indices, ioff, has ? uint64_t(arg) : c.empty_index);
    }
  });
}

}  // namespace dmlops
