// Max pooling of 3-D windows over volumes (NCDHW data whose rows are packed, or channels-last
// data, re-cast with its channels innermost): a volume's input D-planes pooled over the
// window's (H, W) part by the separable path (the pixel path for channels-last data; max_pool
// on that part of x, on this thread) into scratch, then each output D-plane's rows the first
// of the best of its window's D-planes' rows there, in order (output_row; with indices,
// indexed_volume_row). Why faster: the register and row paths took a 3x3x3 window's 27
// offsets per output; here each input row's maxima are made once (the separable path), each
// 2-D window's once per input D-plane, and a D-plane's serve every output D-plane whose
// window covers it.
// Same bits as the plain kernel: the first of the best over (d, h, w) in row-major order is
// the first, over d, of each D-plane's first of the best over (h, w): d is the slowest, and
// the comparison keeps the earlier on a tie (SPEC 3.4), as the separable path's rows do.
// Precondition (volumes_path): values, or indices where every flat index is below 2^32;
// rank 5 (three spatial dimensions), a D-plane of x a separable_shape for the (H, W) part of
// the window, or rank 6 (channels-last), a D-plane the pixel path's.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/keys.h"
#include "common/separable.h"
#include "common/threads.h"
#include "common/window.h"
#include "max_pool/max_pool.h"
#include "max_pool/max_pool_pixels.h"
#include "max_pool/max_pool_separable.h"

namespace dmlops {

// The call on input D-planes [lo, hi) of volume (n, c) into `scratch` (packed, one output
// plane per input D-plane), and where c has indices their 32-bit flat indices from the
// D-plane lo's first element into `winners` (packed as scratch): x's and the window's
// dimensions after D.
inline MaxPoolCall volume_planes_call(const MaxPoolCall& c, int64_t n, int64_t ch, int64_t lo,
                                      int64_t hi, void* scratch, void* winners = nullptr) {
  MaxPoolCall p = c;
  const int rank = c.x.rank - 1;
  p.x.rank = p.y.rank = rank;
  p.x.data += (n * c.x.strides[0] + ch * c.x.strides[1] + lo * c.x.strides[2]) *
              element_size(c.x.dtype);
  p.y.data = static_cast<char*>(scratch);
  p.y.dtype = c.x.dtype;  // (c's y may be the indices' shape alone: the gradient's argmax)
  p.x.sizes[0] = p.y.sizes[0] = 1;
  p.x.sizes[1] = p.y.sizes[1] = hi - lo;
  p.x.strides[0] = p.y.strides[0] = 0;
  p.x.strides[1] = c.x.strides[2];
  for (int d = 2; d < rank; ++d) {
    p.x.sizes[d] = c.x.sizes[d + 1];
    p.x.strides[d] = c.x.strides[d + 1];
    p.y.sizes[d] = c.y.sizes[d + 1];
  }
  int64_t step = 1;
  for (int d = rank - 1; d >= 1; --d) {
    p.y.strides[d] = step;
    step *= p.y.sizes[d];
  }
  p.pitch[0] = 0;
  for (int d = 1; d < rank; ++d) p.pitch[d] = c.pitch[d + 1];
  if (c.indices.data != nullptr) {
    p.indices = p.y;
    p.indices.data = static_cast<char*>(winners);
    p.indices.dtype = DType::u32;
    p.empty_index = ~uint64_t(0);
  }
  p.w.k = c.w.k - 1;
  for (int i = 0; i < p.w.k; ++i) {
    p.w.size[i] = c.w.size[i + 1];
    p.w.stride[i] = c.w.stride[i + 1];
    p.w.start[i] = c.w.start[i + 1];
    p.w.end[i] = c.w.end[i + 1];
    p.w.dilation[i] = c.w.dilation[i + 1];
  }
  p.threads = 1;
  return p;
}

// Three spatial dimensions (rank 5), or channels-last data's re-cast with a unit window over
// its channels (rank 6): a D-plane the separable path's or the pixel path's. With indices,
// every flat index below 2^32 (added up in 32-bit lanes, as the separable path's).
template <class T> inline bool volumes_path(const MaxPoolCall& c) {
  if (c.x.rank < 5 || c.x.rank > 6 || c.plain || c.w.size[0] > kMostRegisterOffsets)
    return false;
  if (c.indices.data != nullptr ? !kIndexLanesFit<typename MaxKey<T>::Raw> || !narrow_indices(c)
                                : c.y.data == nullptr)
    return false;
  // (rank 5 with a unit window along the last dimension: 2-D channels-last data, re-cast,
  // whose paths are the pixel and register paths)
  if (c.x.rank == 5 && c.w.size[2] == 1) return false;
  const MaxPoolCall p =
      volume_planes_call(c, 0, 0, 0, 1, c.x.data, c.x.data);  // (its shape alone)
  return c.x.rank == 5 ? separable_shape(p.x, p.y, p.w) : pixel_path<T>(p);
}

// An output row with indices: each element the first of the best of rows[0 .. n) (values,
// scratch), its flat index base + the winner's `which` (32 bits, all ones: a window with no
// element, the call's empty index); y == nullptr: indices only.
template <class T>
void indexed_volume_row(const typename MaxKey<T>::Raw* const* rows, const uint32_t* const* which,
                        int64_t n, int64_t width, typename MaxKey<T>::Raw* y, int64_t ys,
                        const Tensor& indices, int64_t ioff, uint32_t base,
                        uint64_t empty_index) {
  using Raw = typename MaxKey<T>::Raw;
  constexpr int L = kIndexLanes<Raw>;
  using Lanes = MaxLanes<T, L>;
  using V = typename Lanes::V;
  using U = Vec<uint32_t, L>;
  const int64_t is = indices.strides[indices.rank - 1];
  auto one = [&](int64_t o) {
    Raw best = rows[0][o];
    uint32_t w = which[0][o];
    for (int64_t m = 1; m < n; ++m)
      if (MaxKey<T>::key_raw(rows[m][o]) > MaxKey<T>::key_raw(best)) best = rows[m][o], w = which[m][o];
    if (y != nullptr) store(y + o * ys, best);
    store_index(indices, ioff + o * is, w == ~uint32_t(0) ? empty_index : uint64_t(base + w));
  };
  auto vector = [&](int64_t o) {
    V best = load_vec<V>(rows[0] + o);
    U w = load_vec<U>(which[0] + o);
    for (int64_t m = 1; m < n; ++m) {
      const V v = load_vec<V>(rows[m] + o);
      const auto t = Lanes::better(v, best);
      best = t ? v : best;
      w = widen_mask(t) ? load_vec<U>(which[m] + o) : w;
    }
    if (any_lane(w == ~uint32_t(0))) {  // (a window without elements: its lanes alone)
      for (int i = 0; i < L; ++i) one(o + i);
      return;
    }
    if (y != nullptr) store_lanes<Raw, L>(y + o * ys, ys, best);
    store_index_lanes<L>(indices, ioff + o * is, is, w + base);
  };
  sweep<L>(0, width, vector, one);
}

template <class T>
void max_pool_volumes(const MaxPoolCall& c) {
  using Raw = typename MaxKey<T>::Raw;
  const Dim depth = dim_of(c.w, 0, c.x.sizes[2]);
  const int64_t od = c.y.sizes[2], volumes = c.y.sizes[0] * c.y.sizes[1];
  int64_t plane = 1;  // an output D-plane's elements
  for (int d = 3; d < c.y.rank; ++d) plane *= c.y.sizes[d];
  const Raw empty = bit_cast<Raw>(empty_value<T>());
  // output D-planes a task item takes at a time: their input D-planes' 2-D maxima within
  // kPixelScratchMost, so that a large volume's stay in the caches
  const int64_t reach = (depth.window - 1) * depth.dilation + 1;
  const int64_t fit = kPixelScratchMost / std::max<int64_t>(plane * int64_t(sizeof(Raw)), 1);
  const int64_t per = std::clamp<int64_t>((fit - reach) / std::max<int64_t>(depth.stride, 1) + 1,
                                          1, od);
  const int64_t chunks = (od + per - 1) / per;
  double work = double(c.y.count());
  for (int i = 0; i < c.w.k; ++i) work *= double(c.w.size[i]);
  const bool indexed = c.indices.data != nullptr;
  parallel_for(volumes * chunks, work, c.threads, [&](int64_t lo, int64_t hi) {
    std::vector<Raw> scratch;
    std::vector<uint32_t> winners;
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t v = item / chunks, o0 = (item % chunks) * per, o1 = std::min(od, o0 + per);
      const int64_t n = v / c.y.sizes[1], ch = v % c.y.sizes[1];
      // the input D-planes the chunk's windows read
      int64_t first = depth.in, last = -1;
      for (int64_t o = o0; o < o1; ++o) {
        const Span s = real_offsets(depth, o);
        if (s.hi <= s.lo) continue;
        first = std::min(first, input_coord(depth, o, s.lo));
        last = std::max(last, input_coord(depth, o, s.hi - 1));
      }
      if (last >= first) {
        scratch.resize(size_t((last + 1 - first) * plane));
        if (indexed) winners.resize(scratch.size());
        max_pool(volume_planes_call(c, n, ch, first, last + 1, scratch.data(), winners.data()));
      }
      // each output D-plane's rows (y's last dimension) from its window's D-planes' rows
      Tensor rest = c.y;
      rest.rank = c.y.rank - 1;  // the dimensions above the rows
      const int64_t width = c.y.sizes[c.y.rank - 1], ys = c.y.strides[c.y.rank - 1];
      const int64_t is = c.indices.strides[c.y.rank - 1];
      // the flat index of D-plane `first`'s first element (narrow_indices: below 2^32)
      const uint32_t base = uint32_t(n * c.pitch[0] + ch * c.pitch[1] + first * c.pitch[2]);
      for (int64_t o = o0; o < o1; ++o) {
        const Span s = real_offsets(depth, o);
        const int64_t count = s.hi - s.lo;
        const int64_t yplane = n * c.y.strides[0] + ch * c.y.strides[1] + o * c.y.strides[2];
        const int64_t iplane =
            n * c.indices.strides[0] + ch * c.indices.strides[1] + o * c.indices.strides[2];
        const Raw* rows[kMostRegisterOffsets];
        const uint32_t* which[kMostRegisterOffsets];
        for (int64_t j = s.lo; j < s.hi; ++j) {
          const int64_t at = (input_coord(depth, o, j) - first) * plane;
          rows[j - s.lo] = scratch.data() + at;
          which[j - s.lo] = indexed ? winners.data() + at : nullptr;
        }
        Tensor irest = c.indices;
        irest.rank = rest.rank;
        for (Walk w(rest, 3, yplane), wi(irest, 3, iplane); w.more(); w.next(), wi.next()) {
          Raw* y = c.y.data != nullptr ? c.y.template at<Raw>(w.offset) : nullptr;
          if (count == 0) {
            for (int64_t i = 0; i < width; ++i) {
              if (y != nullptr) store(y + i * ys, empty);
              if (indexed) store_index(c.indices, wi.offset + i * is, c.empty_index);
            }
            continue;
          }
          // (indexed instances only where the indices' lanes make a register: volumes_path)
          bool done = false;
          if constexpr (kIndexLanesFit<Raw>) {
            if (indexed) {
              indexed_volume_row<T>(rows, which, count, width, y, ys, c.indices, wi.offset,
                                    base, c.empty_index);
              done = true;
            }
          }
          if (!done) output_row<T>(rows, count, width, y, ys);
          for (int64_t m = 0; m < count; ++m) {
            rows[m] += width;
            if (indexed) which[m] += width;
          }
        }
      }
    }
  });
}

}  // namespace dmlops
