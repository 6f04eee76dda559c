#include "avg_pool/avg_pool.h"

#include <type_traits>

#include "avg_pool/avg_pool_plain.h"
#include "avg_pool/avg_pool_rows.h"
#include "common/dispatch.h"

namespace dmlops {

namespace {
template <class T, class A, class F>
void sum_pool(const SumPoolCall& c, F&& finish) {
  if (c.plain)
    sum_pool_plain<T, A>(c, finish);
  else
    sum_pool_rows<T, A>(c, finish);
}
}  // namespace

void average_pool(const SumPoolCall& c) {
  with_float_type(c.x.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    sum_pool<T, A>(c, [&](const int64_t*, int64_t yoff, A sum, int64_t, int64_t divisor) {
      store(c.y.template at<T>(yoff), average_of<T, A>(sum, divisor));
    });
  });
}

namespace {
template <class X, class Y, class A>
void quantized(const SumPoolCall& c) {
  const Quantization& q = c.q;
  sum_pool<X, A>(c, [&](const int64_t* o, int64_t yoff, A sum, int64_t real, int64_t divisor) {
    int64_t ch = channel_of(q, o);
    // sum of (x - zp_in) over the real elements, exactly
    int64_t centred = int64_t(sum) - real * q.zp_in[ch];
    store(c.y.template at<Y>(yoff),
          requantize<Y>(centred, divisor, q.s_in[ch], q.s_out[ch], q.zp_out[ch]));
  });
}

template <class X, class Y>
void quantized_for(const SumPoolCall& c) {
  // |x| <= 255: a window of fewer than 2^23 elements sums within int32
  double volume = 1;
  for (int i = 0; i < c.w.k; ++i) volume *= double(c.w.size[i]);
  if (volume < double(1 << 23))
    quantized<X, Y, int32_t>(c);
  else
    quantized<X, Y, int64_t>(c);
}
}  // namespace

void quantized_average_pool(const SumPoolCall& c) {
  bool in8 = c.x.dtype == DType::i8, out8 = c.y.dtype == DType::i8;
  if (in8 && out8) return quantized_for<int8_t, int8_t>(c);
  if (in8) return quantized_for<int8_t, uint8_t>(c);
  if (out8) return quantized_for<uint8_t, int8_t>(c);
  quantized_for<uint8_t, uint8_t>(c);
}

}  // namespace dmlops
