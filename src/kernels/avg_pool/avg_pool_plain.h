// The plain summing kernel: one output at a time, its window's real elements in row-major
// offset order. Every fast path must give its bits.
#pragma once
#include "avg_pool/avg_pool.h"
#include "common/plain.h"
#include "common/threads.h"

namespace dmlops {

// (*finish)(coordinates, offset of the output row, o, 1, &sum, counts) for every output o
// (the last coordinate), with the sum of its window's real elements, their count and its
// divisor; A is the accumulator type.
template <class T, class A>
void sum_pool_plain(const SumPoolCall& c, const MakeFinish<A>& make_finish) {
  const int rank = c.x.rank, k = rank - 2;
  const int64_t outputs = c.y.count();
  parallel_for(outputs, double(outputs) * double(c.w.size[0]), c.threads,
               [&](int64_t lo, int64_t hi) {
    auto finish = make_finish();
    int64_t o[kMaxRank];
    for (int64_t flat = lo; flat < hi; ++flat) {
      const int64_t yoff = coords_of(flat, c.y, o);
      int64_t divisor = 1;
      for (int i = 0; i < k; ++i)
        divisor *= divisor_factor(dim_of(c.w, i, c.x.sizes[i + 2]), o[i + 2], c.include_padding);
      A sum = A(0);
      const int64_t real = for_each_real_element(c.x, c.w, o, nullptr, [&](int64_t xoff, int64_t) {
        sum += widen<A>(load(c.x.template at<T>(xoff)));
      });
      const int64_t at = o[rank - 1];
      (*finish)(o, yoff - at * c.y.strides[rank - 1], at, 1, &sum, Counts{&real, &divisor, flat});
    }
  });
}

}  // namespace dmlops
