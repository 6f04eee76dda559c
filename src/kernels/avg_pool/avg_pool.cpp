#include "avg_pool/avg_pool.h"

#include <memory>
#include <type_traits>
#include <vector>

#include "avg_pool/avg_pool_plain.h"
#include "avg_pool/avg_pool_rows.h"
#include "avg_pool/avg_pool_separable.h"
#include "common/dispatch.h"

namespace dmlops {

namespace {
template <class T, class A, class MakeFinish>
void sum_pool(const SumPoolCall& c, MakeFinish&& make_finish) {
  if (c.plain) return sum_pool_plain<T, A>(c, make_finish);
  if constexpr (std::is_integral_v<A>) {
    if (separable_sums_path(c)) return sum_pool_separable<T, A>(c, make_finish);
  }
  sum_pool_rows<T, A>(c, make_finish);
}
}  // namespace

void average_pool(const SumPoolCall& c) {
  with_float_type(c.x.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const int64_t ys = c.y.strides[c.y.rank - 1];
    auto finish = [&](const int64_t*, int64_t yrow, int64_t t0, int64_t n, const A* sums,
                      const Counts& k) {
      const int64_t* divisor = k.divisor;
      T* y = c.y.template at<T>(yrow + t0 * ys);
      if (ys == 1) {
        sweep<16>(
            0, n, [&](int64_t i) { average16<T, A>(sums + i, divisor + i, y + i); },
            [&](int64_t i) { y[i] = average_of<T, A>(sums[i], divisor[i]); });
      } else {
        for (int64_t i = 0; i < n; ++i) y[i * ys] = average_of<T, A>(sums[i], divisor[i]);
      }
    };
    sum_pool<T, A>(c, [&] { return finish; });
  });
}

namespace {
// Requantizes a task's row tiles of one channel's parameters into packed outputs, 16 at a
// time: by multipliers (requantize16_by_multiplier), worked out once per tile's counts and
// channel and kept while they stay the same (two sets: the separable path's full rows and
// its border rows alternate), where the scales allow; by requantize16's exact arithmetic
// otherwise and for any 16 with an output too near a half.
template <class Y>
class Requantizer {
 public:
  explicit Requantizer(const Quantization& q) : q_(q) {}

  void row(Y* y, int64_t n, const int32_t* sums, const Counts& k, int64_t ch) {
    const int32_t zp = int32_t(q_.zp_in[ch]), zp_out = int32_t(q_.zp_out[ch]);
    const float s_in = q_.s_in[ch], s_out = q_.s_out[ch];
    const Kept* m = in_range(s_in) && in_range(s_out) ? &kept(n, k, ch) : nullptr;
    auto exact = [&](int64_t i) {
      requantize16<Y>(sums + i, k.real + i, k.divisor + i, zp, s_in, s_out, zp_out, y + i);
    };
    sweep<16>(
        0, n,
        [&](int64_t i) {
          if (m == nullptr ||
              !requantize16_by_multiplier<Y>(sums + i, m->corr.data() + i, m->mult.data() + i,
                                             m->live.data() + i, zp_out, y + i))
            exact(i);
        },
        [&](int64_t i) {
          y[i] = requantize<Y>(int64_t(sums[i]) - k.real[i] * zp, k.divisor[i], s_in, s_out,
                               zp_out);
        });
  }

 private:
  struct Kept {
    const int64_t* real = nullptr;
    int64_t version = -1, channel = -1, n = 0, used = 0;
    std::vector<int32_t> corr, live;
    std::vector<float> mult;
  };

  static bool in_range(float s) { return s >= 0x1p-40f && s <= 0x1p40f; }

  // The multipliers of counts k and channel ch: kept ones, or worked out in place of the
  // set used longest ago.
  const Kept& kept(int64_t n, const Counts& k, int64_t ch) {
    ++clock_;
    for (Kept& e : sets_) {
      if (e.real == k.real && e.version == k.version && e.channel == ch && e.n >= n) {
        e.used = clock_;
        return e;
      }
    }
    Kept& e = sets_[0].used <= sets_[1].used ? sets_[0] : sets_[1];
    const int32_t zp = int32_t(q_.zp_in[ch]);
    const double s_in = q_.s_in[ch], s_out = q_.s_out[ch];
    e.corr.resize(size_t(n));
    e.live.resize(size_t(n));
    e.mult.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) {
      const bool live = k.divisor[i] > 0;
      e.corr[i] = int32_t(k.real[i]) * zp;
      // the divisor's float as requantize16 rounds it
      e.mult[i] = live ? float(s_in / (double(float(k.divisor[i])) * s_out)) : 0.0f;
      e.live[i] = live ? -1 : 0;
    }
    e.real = k.real, e.version = k.version, e.channel = ch, e.n = n, e.used = clock_;
    return e;
  }

  const Quantization& q_;
  Kept sets_[2];
  int64_t clock_ = 0;
};

template <class X, class Y, class A>
void quantized(const SumPoolCall& c) {
  const Quantization& q = c.q;
  const int last = c.y.rank - 1;
  const int64_t ys = c.y.strides[last];
  // per channel along the last dimension (channels-last data), the channel is the output's
  const bool by_lane = q.count > 1 && q.channel_dim == last;
  sum_pool<X, A>(c, [&] {
    return [&, rq = std::make_unique<Requantizer<Y>>(q)](
               const int64_t* o, int64_t yrow, int64_t t0, int64_t n, const A* sums,
               const Counts& k) {
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
    };
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
