// The plain summing kernel: one output at a time, its window's real elements in row-major
// offset order. Every fast path must give its bits.
#pragma once
#include "avg_pool/avg_pool.h"
#include "common/plain.h"
#include "common/threads.h"

namespace dmlops {

// finish(coordinates, offset of the output row, o, 1, &sum, &real, &divisor) for every
// output o (the last coordinate), with the sum of its window's real elements, their count
// and its divisor; A is the accumulator type.
template <class T, class A, class F>
void sum_pool_plain(const SumPoolCall& c, F&& finish) {
  const int rank = c.x.rank, k = rank - 2;
  for_each_output(c.y, double(c.w.size[0]), c.threads, [&](const int64_t* o, int64_t yoff) {
    int64_t divisor = 1;
    for (int i = 0; i < k; ++i)
      divisor *= divisor_factor(dim_of(c.w, i, c.x.sizes[i + 2]), o[i + 2], c.include_padding);
    A sum = A(0);
    const int64_t real = for_each_real_element(c.x, c.w, o, nullptr, [&](int64_t xoff, int64_t) {
      sum += widen<A>(load(c.x.template at<T>(xoff)));
    });
    const int64_t at = o[rank - 1];
    finish(o, yoff - at * c.y.strides[rank - 1], at, 1, &sum, &real, &divisor);
  });
}

}  // namespace dmlops
