// Padding a row (the last dimension) at a time: the source row is found once per output
// row from the other dimensions' maps, then the row is the start padding, the input row
// itself (a straight copy, which the compiler turns into vector moves when both rows are
// packed) and the end padding. The paddings are cut once per call into runs whose sources
// step by +1, -1 or 0 (CONSTANT's value too): each a loop of one kind (a copy, a reversed
// copy, a fill) instead of a lookup per element, which had cost short rows half their time.
// A row whose source lies in CONSTANT's padding is filled with the value; a row whose source
// row an earlier row of the same plane (and the same share of the work) had is copied from it.
// Outputs much larger than the caches are streamed, a row or a plane at a time (PadRowsWay).
// Precondition: none.
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

// How a call's rows reach its output (README "Streamed rows"): written in place; or, for an
// output much larger than the caches with packed rows, made in scratch and streamed to memory
// (common/stream.h: its lines not read first), a row at a time where rows are long enough,
// or a packed plane (the last two dimensions) at a time where it fits the scratch.
struct PadRowsWay {
  bool stream = false;        // streamed
  bool planes = false;        // streamed a plane at a time
  int64_t scratch_rows = 0;   // rows of scratch a share needs (0: none)
  int64_t ahead = 0;          // bytes from a source row to the one asked for meanwhile
  int64_t in_row_bytes = 0;   // a source row's bytes
};

inline PadRowsWay pad_rows_way(const PadCall& c, int64_t item) {
  PadRowsWay way;
  const int last = c.y.rank - 1, second = last - 1;
  const int64_t out = c.y.sizes[last], row_bytes = out * item;
  const int64_t plane_bytes = second >= 0 ? c.y.sizes[second] * row_bytes : row_bytes;
  if (c.y.strides[last] != 1 || !worth_streaming(c.y.count() * item)) return way;
  way.planes = second >= 0 && c.y.strides[second] == out && plane_bytes <= kStagedPlaneBytes &&
               plane_bytes >= kStreamRowBytes;
  way.stream = way.planes || (row_bytes >= kStreamRowBytes && out <= kStagedRowElements);
  if (!way.stream) return way;
  way.scratch_rows = way.planes ? c.y.sizes[second] : 1;
  // the source kPadRowsAhead input rows on (packed input rows: the source of the row
  // kPadRowsAhead on, but at a plane's or a padding's edges)
  if (second >= 0 && c.x.strides[last] == 1)
    way.ahead = kPadRowsAhead * c.x.strides[second] * item;
  way.in_row_bytes = c.x.sizes[last] * item;
  return way;
}

// A share's rows in order: each one's output coordinates o (stepped like an odometer: a
// division per dimension and row cost short rows most of their time), its offsets in y and
// in x (its source row's), and whether that source lies in CONSTANT's padding.
struct PadRowCursor {
  PadRowCursor(const PadCall& c, const PadRowPlan& p, int64_t first) : c(c), p(p) {
    int64_t rest = first;
    for (int d = c.y.rank - 2; d >= 0; --d) {
      o[d] = rest % c.y.sizes[d];
      rest /= c.y.sizes[d];
    }
    locate();
  }
  void next() {
    for (int d = c.y.rank - 2; d >= 0 && ++o[d] == c.y.sizes[d]; --d) o[d] = 0;
    locate();
  }
  int64_t o[kMaxRank] = {};
  int64_t xoff = 0, yoff = 0;
  bool outside = false;

 private:
  void locate() {
    xoff = yoff = 0;
    outside = false;
    for (int d = 0; d < c.y.rank - 1; ++d) {
      const int64_t src = p.map_of[d][o[d]];
      outside = outside || src < 0;
      xoff += src * c.x.strides[d];
      yoff += o[d] * c.y.strides[d];
    }
  }
  const PadCall& c;
  const PadRowPlan& p;
};

// The rows [lo, hi) of a call: a row whose source row an earlier row of its plane in this
// share had is copied from that row (in place or in the scratch plane); a streamed row with
// the row before's source (EDGE's and CONSTANT's paddings) is streamed again from the same
// scratch, not copied back from memory that was just streamed past the caches.
template <class T>
void pad_share(const PadCall& c, const PadRowPlan& p, const PadRowsWay& way, int64_t lo,
               int64_t hi) {
  const int last = c.y.rank - 1, second = last - 1;
  const int64_t out = c.y.sizes[last], lead = c.start[last];
  const int64_t xs = c.x.strides[last], ys = c.y.strides[last];
  const int64_t row_bytes = out * int64_t(sizeof(T));
  const T value = T(c.value);
  T* stage = nullptr;
  if (way.stream) {
    stage = static_cast<T*>(std::malloc(sizeof(T) * size_t(out * way.scratch_rows)));
    if (stage == nullptr) throw std::bad_alloc();
  }
  // output row y (element stride step) from the source row at xoff, or CONSTANT's value
  auto make_row = [&](T* y, int64_t step, const PadRowCursor& row) {
    if (way.stream && !row.outside && way.ahead != 0)
      prefetch_span(c.x.template at<T>(row.xoff), way.ahead, way.in_row_bytes);
    if (row.outside) {
      for (int64_t i = 0; i < out; ++i) y[i * step] = value;
    } else {
      pad_row<T>(p, c.x.template at<T>(row.xoff), xs, y, step, value, lead);
    }
  };
  bool staged = false, staged_outside = false;  // the scratch row's source
  int64_t staged_xoff = 0;
  PadRowCursor row(c, p, lo);
  for (int64_t r = lo; r < hi; ++r, row.next()) {
    T* const yrow = c.y.template at<T>(row.yoff);
    const int64_t at = second >= 0 ? row.o[second] : 0;
    const int64_t before = second >= 0 ? at - p.first_use[size_t(at)] : 0;
    const bool made_before = before > 0 && r - before >= lo;
    if (way.planes) {
      T* slot = stage + at * out;
      if (made_before)
        std::memcpy(slot, slot - before * out, size_t(row_bytes));
      else
        make_row(slot, 1, row);
      if (at == c.y.sizes[second] - 1 || r == hi - 1) {  // the plane's rows of this share
        const int64_t from = r - lo < at ? at - (r - lo) : 0;
        stream_copy(yrow - (at - from) * out, stage + from * out, (at - from + 1) * row_bytes);
      }
    } else if (way.stream) {
      if (!staged || row.outside != staged_outside || (!row.outside && row.xoff != staged_xoff)) {
        make_row(stage, 1, row);
        staged = true;
        staged_outside = row.outside;
        staged_xoff = row.xoff;
      }
      stream_copy(yrow, stage, row_bytes);
    } else if (made_before) {
      const T* from = yrow - before * c.y.strides[second];
      for (int64_t i = 0; i < out; ++i) yrow[i * ys] = from[i * ys];
    } else {
      make_row(yrow, ys, row);
    }
  }
  if (way.stream) stream_fence();
  std::free(stage);
}

template <class T>
void padding_rows(const PadCall& c) {
  PadRowPlan p;
  plan_pad_rows(c, &p);
  const PadRowsWay way = pad_rows_way(c, int64_t(sizeof(T)));
  const int64_t rows = c.y.count() / c.y.sizes[c.y.rank - 1];
  parallel_for(rows, double(c.y.count()), c.threads,
               [&](int64_t lo, int64_t hi) { pad_share<T>(c, p, way, lo, hi); });
}

}  // namespace dmlops
