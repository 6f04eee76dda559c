// Each thread owns a contiguous range of the output: it zeroes it, then walks all the
// input in order and writes the elements that land in its range, so the last writer of a
// position is the same whatever the thread count. Values are moved as bits of their width.
#include "unpool/unpool.h"

#include "common/threads.h"

namespace dmlops {

namespace {

template <class V, class I>
void unpool(const UnpoolCall& c) {
  const int64_t outputs = c.y.count();
  const bool packed_y = [&] {
    int64_t step = 1;
    for (int d = c.y.rank - 1; d >= 0; --d) {
      if (c.y.sizes[d] != 1 && c.y.strides[d] != step) return false;
      step *= c.y.sizes[d];
    }
    return true;
  }();
  auto y_at = [&](int64_t flat) {
    return c.y.template at<V>(packed_y ? flat : offset_of(flat, c.y.rank, c.y.sizes, c.y.strides));
  };
  int shares = c.threads;
  parallel_for(shares, double(outputs + c.x.count()) * shares, shares,
               [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) {
      int64_t lo = outputs * s / shares, hi = outputs * (s + 1) / shares;
      for (int64_t f = lo; f < hi; ++f) store(y_at(f), V(0));
      for (Walk wi(c.indices, 0, 0), wx(c.x, 0, 0); wi.more(); wi.next(), wx.next()) {
        I at = load(c.indices.template at<I>(wi.offset));
        if (c.skip_empty && uint64_t(at) == c.empty) continue;
        int64_t f = int64_t(at);
        if (f < lo || f >= hi) continue;
        store(y_at(f), load(c.x.template at<V>(wx.offset)));
      }
    }
  });
}

template <class V>
void with_index(const UnpoolCall& c) {
  if (element_size(c.indices.dtype) == 4)
    unpool<V, uint32_t>(c);
  else
    unpool<V, uint64_t>(c);
}

}  // namespace

void max_unpool(const UnpoolCall& c) {
  switch (element_size(c.x.dtype)) {
    case 1: return with_index<uint8_t>(c);
    case 2: return with_index<uint16_t>(c);
    case 4: return with_index<uint32_t>(c);
    default: return with_index<uint64_t>(c);
  }
}

}  // namespace dmlops
