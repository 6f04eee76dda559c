// Max pooling of 3-D windows over volumes (NCDHW values whose rows are packed, or
// channels-last ones, re-cast with their channels innermost): a volume's input D-planes
// pooled over the window's (H, W) part by the separable path (the pixel path for
// channels-last data; max_pool on that part of x, on this thread) into scratch, then each output D-plane's rows the first of
// the best of its window's D-planes' rows there, in order (output_row). Why faster: the
// register and row paths took a 3x3x3 window's 27 offsets per output; here each input row's
// maxima are made once (the separable path), each 2-D window's once per input D-plane, and a
// D-plane's serve every output D-plane whose window covers it.
// Same bits as the plain kernel: the first of the best over (d, h, w) in row-major order is
// the first, over d, of each D-plane's first of the best over (h, w): d is the slowest, and
// the comparison keeps the earlier on a tie (SPEC 3.4), as the separable path's rows do.
// Precondition (volumes_path): values only; rank 5 (three spatial dimensions), a D-plane of x
// a separable_shape for the (H, W) part of the window, or rank 6 (channels-last), a D-plane
// the pixel path's.
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
// plane per input D-plane): x's and the window's dimensions after D.
inline MaxPoolCall volume_planes_call(const MaxPoolCall& c, int64_t n, int64_t ch, int64_t lo,
                                      int64_t hi, void* scratch) {
  MaxPoolCall p = c;
  const int rank = c.x.rank - 1;
  p.x.rank = p.y.rank = rank;
  p.x.data += (n * c.x.strides[0] + ch * c.x.strides[1] + lo * c.x.strides[2]) *
              element_size(c.x.dtype);
  p.y.data = static_cast<char*>(scratch);
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
// its channels (rank 6): a D-plane the separable path's or the pixel path's.
template <class T> inline bool volumes_path(const MaxPoolCall& c) {
  if (c.x.rank < 5 || c.x.rank > 6 || c.plain || c.indices.data != nullptr ||
      c.y.data == nullptr || c.w.size[0] > kMostRegisterOffsets)
    return false;
  // (rank 5 with a unit window along the last dimension: 2-D channels-last data, re-cast,
  // whose paths are the pixel and register paths)
  if (c.x.rank == 5 && c.w.size[2] == 1) return false;
  const MaxPoolCall p = volume_planes_call(c, 0, 0, 0, 1, c.y.data);  // (its shape alone)
  return c.x.rank == 5 ? separable_shape(p.x, p.y, p.w) : pixel_path<T>(p);
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
  parallel_for(volumes * chunks, work, c.threads, [&](int64_t lo, int64_t hi) {
    std::vector<Raw> scratch;
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
        max_pool(volume_planes_call(c, n, ch, first, last + 1, scratch.data()));
      }
      // each output D-plane's rows (y's last dimension) from its window's D-planes' rows
      Tensor rest = c.y;
      rest.rank = c.y.rank - 1;  // the dimensions above the rows
      const int64_t width = c.y.sizes[c.y.rank - 1], ys = c.y.strides[c.y.rank - 1];
      for (int64_t o = o0; o < o1; ++o) {
        const Span s = real_offsets(depth, o);
        const int64_t yplane = n * c.y.strides[0] + ch * c.y.strides[1] + o * c.y.strides[2];
        const Raw* rows[kMostRegisterOffsets];
        for (int64_t j = s.lo; j < s.hi; ++j)
          rows[j - s.lo] = scratch.data() + (input_coord(depth, o, j) - first) * plane;
        for (Walk w(rest, 3, yplane); w.more(); w.next()) {
          Raw* y = c.y.template at<Raw>(w.offset);
          if (s.hi <= s.lo) {
            for (int64_t i = 0; i < width; ++i) store(y + i * ys, empty);
            continue;
          }
          output_row<T>(rows, s.hi - s.lo, width, y, ys);
          for (int64_t m = 0; m < s.hi - s.lo; ++m) rows[m] += width;
        }
      }
    }
  });
}

}  // namespace dmlops
