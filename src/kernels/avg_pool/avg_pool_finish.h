// The finishes of the summing paths for packed output rows: averages and requantized values
// of a row tile's sums, 16 at a time, from what each task derives once from the tile's counts
// and keeps while they stay the same (Counts::version).
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "avg_pool/avg_pool.h"
#include "common/simd.h"

namespace dmlops {

// Values a task derives from a tile's counts (and a channel), kept while they stay the same:
// kKeptCountSets sets, the one used longest ago replaced, because the separable path
// alternates between its full rows' counts and its border rows', and a long row's tiles
// between their kinds (TileCounts).
template <class Set>
class KeptSets {
 public:
  // The set for counts k (its first n outputs) and channel ch: a kept one, or make(set)
  // into the set used longest ago.
  template <class Make>
  const Set& get(const Counts& k, int64_t ch, int64_t n, Make&& make) {
    ++clock_;
    for (Entry& e : sets_) {
      if (e.real == k.real && e.version == k.version && e.channel == ch && e.n >= n) {
        e.used = clock_;
        return e.set;
      }
    }
    Entry* oldest = &sets_[0];
    for (Entry& o : sets_)
      if (o.used < oldest->used) oldest = &o;
    Entry& e = *oldest;
    make(e.set);
    e.real = k.real, e.version = k.version, e.channel = ch, e.n = n, e.used = clock_;
    return e.set;
  }

 private:
  struct Entry {
    const int64_t* real = nullptr;
    int64_t version = -1, channel = -1, n = 0, used = 0;
    Set set;
  };
  Entry sets_[kKeptCountSets];
  int64_t clock_ = 0;
};

// Averages of a task's row tiles: the divisors as floats (0 where not positive), so that 16
// outputs take one load, one division and one select (average16).
template <class A>
class Averager {
 public:
  template <class T> void row(T* y, int64_t n, const A* sums, const Counts& k) {
    const std::vector<A>& fd = kept_.get(k, 0, n, [&](std::vector<A>& d) {
      d.assign(size_t(n < 16 ? 16 : n), A(0));
      for (int64_t i = 0; i < n; ++i) d[i] = k.divisor[i] > 0 ? A(k.divisor[i]) : A(0);
    });
    if (n < 16) {
      // a short row's outputs 16 at a time through buffers, the lanes past n dropped with
      // their zero divisors (one at a time, each output would take a division of its own)
      A s[16] = {};
      T out[16];
      std::memcpy(s, sums, size_t(n) * sizeof(A));
      average16<T, A>(s, fd.data(), out);
      std::memcpy(static_cast<void*>(y), out, size_t(n) * sizeof(T));
      return;
    }
    sweep<16>(
        0, n, [&](int64_t i) { average16<T, A>(sums + i, fd.data() + i, y + i); },
        [&](int64_t i) { y[i] = average_of<T, A>(sums[i], k.divisor[i]); });
  }

 private:
  KeptSets<std::vector<A>> kept_;
};

// Requantizes a task's row tiles of one channel's parameters into packed outputs, 16 at a
// time: by multipliers (requantize16_by_multiplier), kept per tile's counts and channel,
// where the scales allow; by requantize16's exact arithmetic otherwise and for any 16 with
// an output too near a half.
template <class Y>
class Requantizer {
 public:
  explicit Requantizer(const Quantization& q) : q_(q) {}

  void row(Y* y, int64_t n, const int32_t* sums, const Counts& k, int64_t ch) {
    const int32_t zp = int32_t(q_.zp_in[ch]), zp_out = int32_t(q_.zp_out[ch]);
    const float s_in = q_.s_in[ch], s_out = q_.s_out[ch];
    const Multipliers* m = nullptr;
    if (in_range(s_in) && in_range(s_out))
      m = &kept_.get(k, ch, n, [&](Multipliers& e) { e.make(n, k, zp, s_in, s_out); });
    sweep<16>(
        0, n,
        [&](int64_t i) {
          if (m == nullptr ||
              !requantize16_by_multiplier<Y>(sums + i, m->corr.data() + i, m->mult.data() + i,
                                             m->live.data() + i, zp_out, y + i))
            requantize16<Y>(sums + i, k.real + i, k.divisor + i, zp, s_in, s_out, zp_out, y + i);
        },
        [&](int64_t i) {
          y[i] = requantize<Y>(int64_t(sums[i]) - k.real[i] * zp, k.divisor[i], s_in, s_out,
                               zp_out);
        });
  }

 private:
  struct Multipliers {
    std::vector<int32_t> corr, live;
    std::vector<float> mult;

    void make(int64_t n, const Counts& k, int32_t zp, double s_in, double s_out) {
      corr.resize(size_t(n));
      live.resize(size_t(n));
      mult.resize(size_t(n));
      int64_t last = 0;  // the divisor of the multiplier before (a tile has few of them)
      float m = 0.0f;
      for (int64_t i = 0; i < n; ++i) {
        const bool real = k.divisor[i] > 0;
        corr[i] = int32_t(k.real[i]) * zp;
        if (real && k.divisor[i] != last) {
          // the divisor's float as requantize16 rounds it
          m = float(s_in / (double(float(k.divisor[i])) * s_out));
          last = k.divisor[i];
        }
        mult[i] = real ? m : 0.0f;
        live[i] = real ? -1 : 0;
      }
    }
  };

  static bool in_range(float s) { return s >= 0x1p-40f && s <= 0x1p40f; }

  const Quantization& q_;
  KeptSets<Multipliers> kept_;
};

}  // namespace dmlops
