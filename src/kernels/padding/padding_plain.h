// The plain padding kernel: every output element on its own, its source found per dimension
// by pad_source. Every fast path must give its bits.
#pragma once
#include "common/threads.h"
#include "padding/padding.h"

namespace dmlops {

template <class T>  // an unsigned integer of the element's width: padding only moves bits
void padding_plain(const PadCall& c) {
  const int rank = c.y.rank;
  const T value = T(c.value);
  parallel_for(c.y.count(), double(c.y.count()), c.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t flat = lo; flat < hi; ++flat) {
      int64_t rest = flat, xoff = 0, yoff = 0;
      bool outside = false;
      for (int d = rank - 1; d >= 0; --d) {
        int64_t o = rest % c.y.sizes[d];
        rest /= c.y.sizes[d];
        int64_t src = pad_source(c.mode, c.x.sizes[d], o - c.start[d]);
        outside = outside || src < 0;
        xoff += src * c.x.strides[d];
        yoff += o * c.y.strides[d];
      }
      store(c.y.template at<T>(yoff), outside ? value : load(c.x.template at<T>(xoff)));
    }
  });
}

}  // namespace dmlops
