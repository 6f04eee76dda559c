// Channels-last max pooling in two passes (README "Pixels"): the data recast with the channels
// innermost, (N, 1, H, W, C) with a unit window over C (dmlops.backends.cpu). First each input
// row's maxima along W, a pixel's C channels a register at a time, into a ring of rows in
// scratch; then each output row the best of its window rows' maxima, its OW * C values taken
// flat where the output's pixels are packed. The register path instead read a pixel's 3 x 3
// window from three input rows 28 KB apart for every output pixel (each input line 2.25
// times from L2 at 3x3 stride 2), and walked the rows machinery once per pixel.
// The comparison is SPEC 3.4's (keys.h); float32 values alone by `v > best ? v : best` with
// the NaNs met noted, as the separable path's ordered floats: a block of output rows that met
// one is done again with the keys' comparison. Indices carry each lane's winner as its flat
// index, as the separable path's do.
// Precondition (pixel_path): x of rank 5 whose last dimension (the channels) is packed and at
// least a register's worth; the window's last dimension a unit at stride 1 without padding;
// with indices, every flat index below 2^32 (narrow_indices).
#pragma once
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>

#include "common/keys.h"
#include "common/prefetch.h"
#include "common/separable.h"
#include "common/simd.h"
#include "common/threads.h"
#include "common/window.h"
#include "max_pool/max_pool.h"
#include "max_pool/max_pool_registers.h"
#include "max_pool/output.h"

namespace dmlops {

// Whether the path carries indices for T: float32 only (max_pool_pixels.cpp), whose lanes
// are as wide as the indices'.
template <class T> inline constexpr bool kPixelIndices = std::is_same_v<T, float>;

template <class T> inline bool pixel_path(const MaxPoolCall& c) {
  using Raw = typename MaxKey<T>::Raw;
  const Window& w = c.w;
  if (c.x.rank != 5 || w.k != 3) return false;
  if (c.indices.data != nullptr ? !kPixelIndices<T> || !narrow_indices(c) : c.y.data == nullptr)
    return false;
  if (w.size[2] != 1 || w.stride[2] != 1 || w.start[2] != 0 || w.size[0] > kMostRegisterOffsets)
    return false;
  const int64_t ch = c.x.sizes[4], ow = c.y.sizes[3];
  if (ch < lanes_for<Raw>() || ch != c.y.sizes[4] || c.x.strides[4] != 1 || ow <= 0 ||
      c.y.sizes[2] <= 0)
    return false;
  // the ring's rows (scratch, with their winners' flat indices) within kPixelScratchMost
  const double reach = double((w.size[0] - 1) * w.dilation[0] + 1);
  return reach * double(ow * ch) * double(sizeof(Raw) + 4) <= double(kPixelScratchMost);
}

// The two passes over a task's items (a plane's block of output rows each), kOrdered: float
// values by one vmaxps per offset, the NaNs met noted (run() then says so, and the block
// must be done again without it). kIndices: each lane's winner carried as its flat index (32
// bits: narrow_indices), the first pass's its column's and channel's part, the second
// adding its row's and the plane's.
template <class T, bool kOrdered, bool kIndices> class PixelPasses {
 public:
  using Raw = typename MaxKey<T>::Raw;
  static constexpr int L = lanes_for<Raw>();
  using Lanes = MaxLanes<T, L>;
  using V = typename Lanes::V;
  using M = typename Lanes::M;
  using U = Vec<uint32_t, L>;
  static_assert(!(kOrdered && kIndices), "indices take the keys' comparison");

  PixelPasses(const MaxPoolCall& c, const SeparableGeometry& geo, Raw* ring, uint32_t* winners,
              int64_t* ring_rows)
      : c_(c), geo_(geo), rows_(geo.rows), cols_dim_(geo.last),
        ch_(c.x.sizes[4]), ow_(c.y.sizes[3]), width_(ow_ * ch_), yw_(c.y.strides[3]),
        yc_(c.y.strides[4]), iw_(c.indices.strides[3]), ic_(c.indices.strides[4]),
        reach_((rows_.window - 1) * rows_.dilation + 1), ring_(ring), winners_(winners),
        ring_rows_(ring_rows) {}

  // Output rows [b0, b1) of plane (n, i); false where kOrdered met a NaN.
  bool run(int64_t n, int64_t i, int64_t b0, int64_t b1) {
    const Raw* x = c_.x.template at<Raw>(n * c_.x.strides[0] + i * c_.x.strides[1]);
    Raw* y = c_.y.data == nullptr
                 ? nullptr
                 : c_.y.template at<Raw>(n * c_.y.strides[0] + i * c_.y.strides[1]);
    const int64_t ibase = n * c_.indices.strides[0] + i * c_.indices.strides[1];
    const uint32_t plane = uint32_t(n * c_.pitch[0] + i * c_.pitch[1]);
    for (int64_t s = 0; s < reach_; ++s) ring_rows_[s] = -1;  // (another plane's, or none)
    M unordered{};
    const Raw* window_rows[kMostRegisterOffsets];
    const uint32_t* window_wins[kMostRegisterOffsets];
    uint32_t row_part[kMostRegisterOffsets];
    for (int64_t oy = b0; oy < b1; ++oy) {
      const Span js = geo_.row_offsets[oy];
      int64_t count = 0;
      for (int64_t j = js.lo; j < js.hi; ++j) {
        const int64_t r = input_coord(rows_, oy, j), slot = r % reach_;
        if (ring_rows_[slot] != r) {
          row_maxima(x + r * c_.x.strides[2], ring_ + slot * width_,
                     kIndices ? winners_ + slot * width_ : nullptr, &unordered);
          ring_rows_[slot] = r;
        }
        window_rows[count] = ring_ + slot * width_;
        if constexpr (kIndices) {
          window_wins[count] = winners_ + slot * width_;
          row_part[count] = plane + uint32_t(r * c_.pitch[2]);
        }
        ++count;
      }
      Raw* yrow = y == nullptr ? nullptr : y + oy * c_.y.strides[2];
      const int64_t irow = ibase + oy * c_.indices.strides[2];
      if (count == 0) {
        for (int64_t o = 0; o < ow_; ++o) empty_pixel(yrow, irow, o);
        continue;
      }
      // (every row's maxima are there: no NaN check, a NaN in them was one in the input)
      auto best_at = [&](int64_t q, U* which) {
        V best = load_vec<V>(window_rows[0] + q);
        if constexpr (kIndices) *which = load_vec<U>(window_wins[0] + q) + row_part[0];
        for (int64_t m = 1; m < count; ++m) {
          const V v = load_vec<V>(window_rows[m] + q);
          if constexpr (kIndices) {
            const auto t = Lanes::better(v, best);
            best = t ? v : best;
            *which = widen_mask(t) ? load_vec<U>(window_wins[m] + q) + row_part[m] : *which;
          } else {
            best = pick(v, best);
          }
        }
        return best;
      };
      const bool flat_values = yrow == nullptr || (yc_ == 1 && yw_ == ch_);
      const bool flat_indices = !kIndices || (ic_ == 1 && iw_ == ch_ &&
                                              element_size(c_.indices.dtype) == 4);
      if (flat_values && flat_indices) {
        sweep<L>(0, width_, [&](int64_t q) {
          U which;
          const V best = best_at(q, &which);
          if (yrow != nullptr) store_vec(yrow + q, best);
          if constexpr (kIndices) store_vec(c_.indices.template at<uint32_t>(irow + q), which);
        }, [](int64_t) {});
      } else {
        // (pixels or channels apart: a C-contiguous output, SPEC 4's default for any input)
        for (int64_t o = 0; o < ow_; ++o) {
          sweep<L>(0, ch_, [&](int64_t q) {
            U which;
            const V best = best_at(o * ch_ + q, &which);
            if (yrow != nullptr) store_lanes<Raw, L>(yrow + o * yw_ + q * yc_, yc_, best);
            if constexpr (kIndices) store_index_lanes<L>(c_.indices, irow + o * iw_ + q * ic_, ic_, which);
          }, [](int64_t) {});
        }
      }
      // a pixel whose window has no real column: the empty value, the empty index
      for (int64_t o = 0; o < ow_; ++o) {
        const Span js = geo_.column_offsets(o);
        if (js.hi <= js.lo) empty_pixel(yrow, irow, o);
      }
    }
    if constexpr (kOrdered) return !any_lane(unordered);
    return true;
  }

 private:
  static V pick(V v, V best) {
    if constexpr (kOrdered) return v > best ? v : best;
    return Lanes::better(v, best) ? v : best;
  }

  void empty_pixel(Raw* yrow, int64_t irow, int64_t o) const {
    const Raw e = bit_cast<Raw>(empty_value<T>());
    for (int64_t q = 0; q < ch_; ++q) {
      if (yrow != nullptr) yrow[o * yw_ + q * yc_] = e;
      if constexpr (kIndices) store_index(c_.indices, irow + o * iw_ + q * ic_, c_.empty_index);
    }
  }

  // Input row xr's maxima along W: a pixel's real window offsets in order, the first of the
  // best winning, its channels a register at a time; kIndices: each winner's column and
  // channel part of its flat index into wins.
  void row_maxima(const Raw* xr, Raw* out, uint32_t* wins, M* unordered) const {
    const int64_t xw = c_.x.strides[3], step = cols_dim_.dilation * xw;
    const int64_t ahead = kPixelRowsAhead * c_.x.strides[2] * int64_t(sizeof(Raw));
    const int64_t fresh = cols_dim_.stride * xw * int64_t(sizeof(Raw));
    // (the indices' lanes only where they are carried: for FLOAT16 and bytes they would be
    // several registers, which the strict build refuses)
    using Lanes32 = std::conditional_t<kIndices, U, int>;
    Lanes32 lane{};
    if constexpr (kIndices)
      for (int k = 0; k < L; ++k) lane[k] = uint32_t(k);
    for (int64_t o = 0; o < ow_; ++o) {
      const Span js = geo_.column_offsets(o);
      Raw* dst = out + o * ch_;
      if (js.hi <= js.lo) {  // (its outputs are empty_pixel's)
        const Raw e = bit_cast<Raw>(empty_value<T>());
        for (int64_t q = 0; q < ch_; ++q) dst[q] = e;
        if constexpr (kIndices)
          for (int64_t q = 0; q < ch_; ++q) wins[o * ch_ + q] = ~uint32_t(0);
        continue;
      }
      const int64_t col0 = input_coord(cols_dim_, o, js.lo);
      const Raw* p = xr + col0 * xw;
      const int64_t n = js.hi - js.lo;
      // (the pixels this one's window moves on by, kPixelRowsAhead rows on: read only here,
      // a row's pass otherwise waited on memory at every pixel)
      prefetch_span(p, ahead, fresh);
      sweep<L>(0, ch_, [&](int64_t q) {
        V best = load_vec<V>(p + q);
        Lanes32 chan{}, which{};
        if constexpr (kIndices) {
          chan = (lane + uint32_t(q)) * uint32_t(c_.pitch[4]);
          which = chan + uint32_t(col0 * c_.pitch[3]);
        }
        if constexpr (kOrdered) *unordered |= best != best;
        for (int64_t j = 1; j < n; ++j) {
          const V v = load_vec<V>(p + j * step + q);
          if constexpr (kOrdered) *unordered |= v != v;
          if constexpr (kIndices) {
            const auto t = Lanes::better(v, best);
            best = t ? v : best;
            const uint32_t col = uint32_t((col0 + j * cols_dim_.dilation) * c_.pitch[3]);
            which = widen_mask(t) ? chan + col : which;
          } else {
            best = pick(v, best);
          }
        }
        store_vec(dst + q, best);
        if constexpr (kIndices) store_vec(wins + o * ch_ + q, which);
      }, [](int64_t) {});
    }
  }

  const MaxPoolCall& c_;
  const SeparableGeometry& geo_;
  Dim rows_, cols_dim_;
  int64_t ch_, ow_, width_, yw_, yc_, iw_, ic_, reach_;
  Raw* ring_;
  uint32_t* winners_;
  int64_t* ring_rows_;
};

// Every plane's output rows in blocks of kPixelBlockRows, shared out among the threads; each
// task keeps its ring of rows' maxima (and their winners) in scratch.
template <class T> void max_pool_pixels(const MaxPoolCall& c) {
  using Raw = typename MaxKey<T>::Raw;
  const SeparableGeometry geo(c.x, c.y, c.w);  // (over H and W: the window's tables)
  const int64_t oh = c.y.sizes[2], width = c.y.sizes[3] * c.x.sizes[4];
  const int64_t reach = (geo.rows.window - 1) * geo.rows.dilation + 1;
  const int64_t planes = c.y.sizes[0] * c.y.sizes[1];
  const int64_t blocks = (oh + kPixelBlockRows - 1) / kPixelBlockRows;
  const bool indices = c.indices.data != nullptr;
  const double work = double(c.y.count()) * double(geo.rows.window * geo.last.window);
  parallel_for(planes * blocks, work, c.threads, [&](int64_t lo, int64_t hi) {
    // the ring's row numbers, then its rows and their winners, each from a 64-byte boundary
    const size_t head = size_t(reach * 8 + 63) / 64 * 64;
    const size_t values = (size_t(reach * width) * sizeof(Raw) + 63) / 64 * 64;
    void* mem = std::malloc(head + values + (indices ? size_t(reach * width) * 4 : 0));
    if (mem == nullptr) throw std::bad_alloc();
    int64_t* ring_rows = static_cast<int64_t*>(mem);
    Raw* ring = reinterpret_cast<Raw*>(static_cast<char*>(mem) + head);
    uint32_t* wins =
        indices ? reinterpret_cast<uint32_t*>(static_cast<char*>(mem) + head + values) : nullptr;
    PixelPasses<T, std::is_same_v<Raw, float>, false> fast(c, geo, ring, wins, ring_rows);
    PixelPasses<T, false, false> exact(c, geo, ring, wins, ring_rows);
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t p = item / blocks, b0 = (item % blocks) * kPixelBlockRows;
      const int64_t b1 = b0 + kPixelBlockRows < oh ? b0 + kPixelBlockRows : oh;
      const int64_t n = p / c.y.sizes[1], i = p % c.y.sizes[1];
      if constexpr (kPixelIndices<T>) {
        if (indices) {
          PixelPasses<T, false, true>(c, geo, ring, wins, ring_rows).run(n, i, b0, b1);
          continue;
        }
      }
      if (!fast.run(n, i, b0, b1)) exact.run(n, i, b0, b1);
    }
    std::free(mem);
  });
}

}  // namespace dmlops
