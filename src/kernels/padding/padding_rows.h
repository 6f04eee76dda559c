// Padding a row (the last dimension) at a time: the source row is found once per output
// row from the other dimensions' maps, then the row is the start padding, the input row
// itself (a straight copy, which the compiler turns into vector moves when both rows are
// packed) and the end padding. The paddings are cut once per call into runs whose sources
// step by +1, -1 or 0 (CONSTANT's value too): each a loop of one kind (a copy, a reversed
// copy, a fill) instead of a lookup per element, which had cost short rows half their time.
// A row whose source lies in CONSTANT's padding is filled with the value; a row whose source
// row an earlier row of the same plane (and the same share of the work) had is copied from it.
// Outputs much larger than the caches are streamed a row at a time, a row whose source is the
// row before's streamed again from the same scratch. Precondition: none.
// What does not depend on the element type is planned once per call (plan_pad_rows).
#pragma once
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "common/config.h"
#include "common/prefetch.h"
#include "common/stream.h"
#include "common/threads.h"
#include "padding/padding.h"

namespace dmlops {

// One output row y (element stride ys) from its source row x (stride xs): the paddings'
// runs, then the input's part copied straight.
template <class T>
inline void pad_row(const PadRowPlan& p, const T* x, int64_t xs, T* y, int64_t ys, T value,
                    int64_t lead) {
  for (const PadRun& u : p.runs) {
    T* to = y + u.at * ys;
    if (u.src < 0) {
      for (int64_t k = 0; k < u.len; ++k) to[k * ys] = value;
    } else if (u.step == 0) {
      const T v = x[u.src * xs];
      for (int64_t k = 0; k < u.len; ++k) to[k * ys] = v;
    } else if (xs == 1 && ys == 1) {
      const T* from = x + u.src;
      if (u.step == 1) {
        for (int64_t k = 0; k < u.len; ++k) to[k] = from[k];
      } else {
        for (int64_t k = 0; k < u.len; ++k) to[k] = from[-k];
      }
    } else {
      const int64_t fs = u.step * xs;
      for (int64_t k = 0; k < u.len; ++k) to[k * ys] = x[u.src * xs + k * fs];
    }
  }
  if (xs == 1 && ys == 1) {
    for (int64_t i = p.mid_lo; i < p.mid_hi; ++i) y[i] = x[i - lead];
  } else {
    for (int64_t i = p.mid_lo; i < p.mid_hi; ++i) y[i * ys] = x[(i - lead) * xs];
  }
}

template <class T>
void padding_rows(const PadCall& c) {
  const int rank = c.y.rank, last = rank - 1, second = last - 1;
  const int64_t out = c.y.sizes[last], lead = c.start[last];
  const T value = T(c.value);
  PadRowPlan p;
  plan_pad_rows(c, &p);
  const int64_t rows = c.y.count() / out;
  const int64_t xs = c.x.strides[last], ys = c.y.strides[last];
  // an output much larger than the caches with packed rows long enough: each row made in
  // scratch and streamed to memory (common/stream.h), its lines not read first; or where a
  // packed plane (the last two dimensions) fits the scratch, the plane made there and
  // streamed as one run (README "Streamed rows")
  const int64_t row_bytes = out * int64_t(sizeof(T));
  const int64_t plane_rows = second >= 0 ? c.y.sizes[second] : 1;
  const bool plane_staged = second >= 0 && ys == 1 && c.y.strides[second] == out &&
                            plane_rows * row_bytes <= kStagedPlaneBytes &&
                            plane_rows * row_bytes >= kStreamRowBytes;
  const bool stream = ys == 1 && worth_streaming(c.y.count() * int64_t(sizeof(T))) &&
                      (plane_staged || (row_bytes >= kStreamRowBytes && out <= kStagedRowElements));
  const int64_t staged_rows = plane_staged ? plane_rows : 1;
  // a streamed row's source kPadRowsAhead input rows on, asked for meanwhile (packed input
  // rows: the source of the row kPadRowsAhead on, but at a plane's or a padding's edges)
  const int64_t ahead =
      second >= 0 && xs == 1 ? kPadRowsAhead * c.x.strides[second] * int64_t(sizeof(T)) : 0;
  const int64_t in_row_bytes = c.x.sizes[last] * int64_t(sizeof(T));
  parallel_for(rows, double(c.y.count()), c.threads, [&](int64_t lo, int64_t hi) {
    T* stage = stream ? static_cast<T*>(std::malloc(sizeof(T) * size_t(out * staged_rows)))
                      : nullptr;
    if (stream && stage == nullptr) throw std::bad_alloc();
    bool staged = false, staged_outside = false;  // the row in stage, and its source
    int64_t staged_xoff = 0;
    // output row y (element stride step) from its source row at xoff, or CONSTANT's value
    auto make_row = [&](T* y, int64_t step, bool outside, int64_t xoff) {
      if (outside) {
        for (int64_t i = 0; i < out; ++i) y[i * step] = value;
      } else {
        pad_row<T>(p, c.x.template at<T>(xoff), xs, y, step, value, lead);
      }
    };
    // the row's output coordinates, stepped like an odometer (a division per dimension and
    // row cost short rows most of their time)
    int64_t o[kMaxRank] = {};
    int64_t rest = lo;
    for (int d = last - 1; d >= 0; --d) {
      o[d] = rest % c.y.sizes[d];
      rest /= c.y.sizes[d];
    }
    for (int64_t r = lo; r < hi; ++r) {
      if (r > lo)
        for (int d = last - 1; d >= 0 && ++o[d] == c.y.sizes[d]; --d) o[d] = 0;
      int64_t xoff = 0, yoff = 0;
      bool outside = false;
      for (int d = 0; d < last; ++d) {
        const int64_t src = p.map_of[d][o[d]];
        outside = outside || src < 0;
        xoff += src * c.x.strides[d];
        yoff += o[d] * c.y.strides[d];
      }
      T* const yrow = c.y.template at<T>(yoff);
      const int64_t before = second >= 0 ? o[second] - p.first_use[size_t(o[second])] : 0;
      const bool made_before = before > 0 && r - before >= lo;  // by this share, this plane
      if (stream && plane_staged) {
        // the plane's rows made in the scratch (a row made before copied there), then the
        // share's rows of the plane streamed as one run of memory
        T* slot = stage + o[second] * out;
        if (made_before) {
          std::memcpy(slot, slot - before * out, size_t(row_bytes));
        } else {
          if (!outside && ahead != 0)
            prefetch_span(c.x.template at<T>(xoff), ahead, in_row_bytes);
          make_row(slot, 1, outside, xoff);
        }
        if (o[second] == plane_rows - 1 || r == hi - 1) {
          const int64_t from = r - lo < o[second] ? o[second] - (r - lo) : 0;  // share's first
          stream_copy(yrow - (o[second] - from) * out, stage + from * out,
                      (o[second] - from + 1) * row_bytes);
        }
        continue;
      }
      if (stream) {
        // a row with the row before's source (EDGE's and CONSTANT's paddings) streamed from
        // the scratch again: copying the output row before would read back from memory what
        // was just streamed past the caches
        if (!staged || outside != staged_outside || (!outside && xoff != staged_xoff)) {
          if (!outside && ahead != 0)
            prefetch_span(c.x.template at<T>(xoff), ahead, in_row_bytes);
          make_row(stage, 1, outside, xoff);
          staged = true;
          staged_outside = outside;
          staged_xoff = xoff;
        }
        stream_copy(yrow, stage, row_bytes);
        continue;
      }
      if (made_before) {  // copied from the row made before
        const T* from = yrow - before * c.y.strides[second];
        for (int64_t i = 0; i < out; ++i) yrow[i * ys] = from[i * ys];
        continue;
      }
      make_row(yrow, ys, outside, xoff);
    }
    if (stream) stream_fence();
    std::free(stage);
  });
}

}  // namespace dmlops
