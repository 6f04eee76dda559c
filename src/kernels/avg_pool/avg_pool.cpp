#include "avg_pool/avg_pool.h"

#include <memory>
#include <type_traits>

#include "avg_pool/avg_pool_finish.h"
#include "avg_pool/avg_pool_pixels.h"
#include "avg_pool/avg_pool_planes.h"
#include "avg_pool/avg_pool_plain.h"
#include "avg_pool/avg_pool_rows.h"
#include "avg_pool/avg_pool_separable.h"
#include "common/dispatch.h"

namespace dmlops {

namespace {
// (one instance per input and accumulator type: Finish)
template <class T, class A>
void sum_pool(const SumPoolCall& c, const MakeFinish<A>& make_finish) {
  if (c.plain) return sum_pool_plain<T, A>(c, make_finish);
  if constexpr (std::is_integral_v<A> && SumLanes<T, A>::kFits) {
    if (separable_sums_path(c)) return sum_pool_separable<T, A>(c, make_finish);
  }
  sum_pool_rows<T, A>(c, make_finish);
}
}  // namespace

void average_pool(const SumPoolCall& c) {
  // (float32 and float16, the types channels-last models pool: float64 takes the row walk)
  if (c.x.dtype == DType::f32 && avg_pixel_path<float, float>(c))
    return average_pool_pixels<float, float>(c);
  if (c.x.dtype == DType::f16 && avg_pixel_path<Half, float>(c))
    return average_pool_pixels<Half, float>(c);
  with_float_type(c.x.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    if (plane_path<T, A>(c)) return average_pool_planes<T, A>(c);
    const int64_t ys = c.y.strides[c.y.rank - 1];
    sum_pool<T, A>(c, [&] {
      return finish_of<A>([&, av = std::make_unique<Averager<A>>()](
                              const int64_t*, int64_t yrow, int64_t t0, int64_t n, const A* sums,
                              const Counts& k) {
        T* y = c.y.template at<T>(yrow + t0 * ys);
        if (ys == 1) return av->row(y, n, sums, k);
        for (int64_t i = 0; i < n; ++i) y[i * ys] = average_of<T, A>(sums[i], k.divisor[i]);
      });
    });
  });
}

namespace {
template <class X, class Y, class A>
void quantized(const SumPoolCall& c) {
  const Quantization& q = c.q;
  const int last = c.y.rank - 1;
  const int64_t ys = c.y.strides[last];
  // per channel along the last dimension (channels-last data), the channel is the output's
  const bool by_lane = q.count > 1 && q.channel_dim == last;
  sum_pool<X, A>(c, [&] {
    return finish_of<A>([&, rq = std::make_unique<Requantizer<Y>>(q)](
                            const int64_t* o, int64_t yrow, int64_t t0, int64_t n,
                            const A* sums, const Counts& k) {
      Y* y = c.y.template at<Y>(yrow + t0 * ys);
      if constexpr (std::is_same_v<A, int32_t>) {
        if (!by_lane && ys == 1) return rq->row(y, n, sums, k, channel_of(q, o));
      }
      const int64_t row_ch = by_lane ? 0 : channel_of(q, o);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t ch = by_lane ? t0 + i : row_ch;
        // the sum of (x - zp_in) over the real elements, exactly
        int64_t centred = int64_t(sums[i]) - k.real[i] * q.zp_in[ch];
        y[i * ys] = requantize<Y>(centred, k.divisor[i], q.s_in[ch], q.s_out[ch], q.zp_out[ch]);
      }
    });
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
