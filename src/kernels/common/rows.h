// The row walk shared by the pooling kernels' fast paths: outputs are taken a row (the last
// spatial dimension) at a time, a tile of it per task; for each window offset of the other
// dimensions, in row-major order, the last dimension's offsets each cover a contiguous range
// of the row's outputs (real_outputs), so the innermost loop has no bounds checks.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <new>

#include "common/config.h"
#include "common/prefetch.h"
#include "common/tensor.h"
#include "common/window.h"

namespace dmlops {

struct RowTask {
  int64_t o[kMaxRank];  // the row's output coordinates, the last: t0
  int64_t t0, t1;       // the tile: outputs [t0, t1) of the row
  int64_t off[2];       // the row's first element in RowTasks' two tensors (their strides)
};

// Row `item / tiles`, tile `item % tiles` of outputs `y_sizes` (rank dims).
inline RowTask row_task(int64_t item, int64_t tiles, int rank, const int64_t* y_sizes,
                        int64_t tile) {
  RowTask t;
  int64_t r = item / tiles, part = item - r * tiles;
  for (int d = rank - 2; d >= 0; --d) {
    t.o[d] = r % y_sizes[d];
    r /= y_sizes[d];
  }
  int64_t ow = y_sizes[rank - 1];
  t.t0 = part * tile;
  t.t1 = t.t0 + tile < ow ? t.t0 + tile : ow;
  t.o[rank - 1] = t.t0;
  return t;
}

// The tasks of items [lo, hi) in order: the first by divisions, then each from the one
// before, an odometer over the tiles and the row coordinates (rows of 32 outputs spent a
// fifth of their time dividing), which also steps the rows' offsets in up to two tensors of
// strides s0 and s1 (nullptr: none; no 64-bit multiplies per row).
class RowTasks {
 public:
  RowTasks(int64_t lo, int64_t tiles, int rank, const int64_t* y_sizes, int64_t tile,
           const int64_t* s0 = nullptr, const int64_t* s1 = nullptr)
      : tiles_(tiles), rank_(rank), sizes_(y_sizes), tile_(tile), part_(lo % tiles),
        strides_{s0, s1}, t_(row_task(lo, tiles, rank, y_sizes, tile)) {
    for (int k = 0; k < 2; ++k) {
      t_.off[k] = 0;
      for (int d = 0; d + 1 < rank && strides_[k] != nullptr; ++d)
        t_.off[k] += t_.o[d] * strides_[k][d];
    }
  }
  const RowTask& operator*() const { return t_; }
  void next() {
    const int64_t ow = sizes_[rank_ - 1];
    if (++part_ == tiles_) {
      part_ = 0;
      for (int d = rank_ - 2; d >= 0; --d) {
        if (++t_.o[d] < sizes_[d]) {
          step(d, 1);
          break;
        }
        step(d, -(sizes_[d] - 1));
        t_.o[d] = 0;
      }
    }
    t_.t0 = part_ * tile_;
    t_.t1 = t_.t0 + tile_ < ow ? t_.t0 + tile_ : ow;
    t_.o[rank_ - 1] = t_.t0;
  }

 private:
  void step(int d, int64_t by) {
    for (int k = 0; k < 2; ++k)
      if (strides_[k] != nullptr) t_.off[k] += by * strides_[k][d];
  }

  int64_t tiles_;
  int rank_;
  const int64_t* sizes_;
  int64_t tile_, part_;
  const int64_t* strides_[2];
  RowTask t_;
};

// What the row walk needs of the window that is the same for every row, worked out once per
// call (the divisions included): per spatial dimension but the last, the real offsets of
// each output position; for the last, each offset's real outputs and the interior where
// every offset is real.
class RowGeometry {
 public:
  RowGeometry(const Tensor& x, const Tensor& y, const Window& w) : x_(x), w_(w) {
    lead_ = x.rank - 3;
    int64_t total = 0;
    for (int i = 0; i < lead_; ++i) total += y.sizes[i + 2];
    last_ = dim_of(w, lead_, x.sizes[x.rank - 1]);
    ow_ = y.sizes[y.rank - 1];
    reach_ = offsets_reaching(last_, ow_);
    int64_t offsets = reach_.hi - reach_.lo;
    tabulated_ = offsets <= kMostTabulatedOffsets;
    positions_ = static_cast<OutputPosition*>(
        std::malloc(sizeof(OutputPosition) * size_t(total + ow_) +
                    sizeof(Span) * size_t((tabulated_ ? offsets : 0) + 1)));
    if (positions_ == nullptr) throw std::bad_alloc();
    OutputPosition* at = positions_;
    auto positions = [&](const Dim& d, int64_t n) {
      OutputPosition* first = at;
      for (int64_t o = 0; o < n; ++o)
        *at++ = OutputPosition{real_offsets(d, o), divisor_factor(d, o, false),
                               divisor_factor(d, o, true)};
      return first;
    };
    for (int i = 0; i < lead_; ++i)
      lead_pos_[i] = positions(dim_of(w, i, x.sizes[i + 2]), y.sizes[i + 2]);
    last_pos_ = positions(last_, ow_);
    last_spans_ = reinterpret_cast<Span*>(at);
    if (tabulated_)
      for (int64_t j = reach_.lo; j < reach_.hi; ++j)
        last_spans_[j - reach_.lo] = real_outputs(last_, j, ow_);
    interior_ = Span{real_outputs(last_, 0, ow_).lo, real_outputs(last_, last_.window - 1, ow_).hi};
  }
  ~RowGeometry() { std::free(positions_); }
  RowGeometry(const RowGeometry&) = delete;
  RowGeometry& operator=(const RowGeometry&) = delete;

  const Dim& last() const { return last_; }

  // The outputs of the last dimension whose every window offset reads a real element.
  Span interior() const { return interior_; }

  // The divisor's factors of output position o in leading dimension i, or the last: the
  // number of real offsets, and of real and padding ones (SPEC 3.1).
  int64_t lead_real(int i, int64_t o) const { return lead_pos_[i][o].real; }
  int64_t lead_padded(int i, int64_t o) const { return lead_pos_[i][o].padded; }
  int64_t last_real(int64_t o) const { return last_pos_[o].real; }
  // The real offsets of output o of the last dimension.
  Span last_offsets(int64_t o) const { return last_pos_[o].offsets; }
  int64_t last_padded(int64_t o) const { return last_pos_[o].padded; }

  // Visits every window offset of the spatial dimensions but the last that reads a real
  // element for the row `t`, in row-major order: fn(xoff, foff) with the element offset into
  // x and the flat-index offset (through `pitch`) of that row of the window; false when there
  // is none (every output of the row then has an empty window).
  template <class F>
  bool for_each_leading_offset(const int64_t* pitch, const RowTask& t, F&& fn) const {
    Span spans[kMaxSpatial];
    int64_t j[kMaxSpatial], xstep[kMaxSpatial], fstep[kMaxSpatial];
    int64_t xoff = t.o[0] * x_.strides[0] + t.o[1] * x_.strides[1];
    int64_t foff = t.o[0] * pitch[0] + t.o[1] * pitch[1];
    for (int i = 0; i < lead_; ++i) {
      spans[i] = lead_pos_[i][t.o[i + 2]].offsets;
      if (spans[i].hi <= spans[i].lo) return false;
      j[i] = spans[i].lo;
      const int64_t xi = t.o[i + 2] * w_.stride[i] + j[i] * w_.dilation[i] - w_.start[i];
      xoff += xi * x_.strides[i + 2];
      foff += xi * pitch[i + 2];
      xstep[i] = w_.dilation[i] * x_.strides[i + 2];
      fstep[i] = w_.dilation[i] * pitch[i + 2];
    }
    // an odometer over the offsets, moving the element offsets along (no multiplications
    // per window row: rows of 64 outputs spent half their time on them)
    for (;;) {
      fn(xoff, foff);
      int i = lead_ - 1;
      for (; i >= 0; --i) {
        xoff += xstep[i];
        foff += fstep[i];
        if (++j[i] < spans[i].hi) break;
        const int64_t n = spans[i].hi - spans[i].lo;
        xoff -= n * xstep[i];
        foff -= n * fstep[i];
        j[i] = spans[i].lo;
      }
      if (i < 0) return true;
    }
  }

  // The window rows of task t, as for_each_leading_offset visits them: their element
  // offsets into x and flat-index offsets (through `pitch`; foffs may be nullptr) for the
  // first `most`, and how many there are. Where each leading dimension's real offsets are
  // those of the task before (`kept`: its coordinates and count), every offset has moved by
  // one constant, added instead (channels-last rows of 64 outputs spent as long on the
  // odometer as on their maxima).
  struct KeptRows {
    bool valid = false;
    int64_t o[kMaxRank] = {};
    int64_t count = 0;
  };
  int64_t leading_offsets(const int64_t* pitch, const RowTask& t, KeptRows& kept,
                          int64_t* xoffs, int64_t* foffs, int64_t most) const {
    // (coordinates compared and kept one at a time: RowTasks has just stored them one at a
    // time, and a vector load of them waits for those stores, 47 % of the row's own time)
    if (kept.valid) {
      bool same = true;
      int64_t dx = 0, df = 0;
      for (int d = 0; d < 2; ++d) {
        const int64_t by = t.o[d] - kept.o[d];
        kept.o[d] = t.o[d];
        dx += by * x_.strides[d];
        df += by * pitch[d];
      }
      for (int i = 0; i < lead_; ++i) {
        const int64_t now = t.o[i + 2], was = kept.o[i + 2];
        const Span a = lead_pos_[i][now].offsets, b = lead_pos_[i][was].offsets;
        same = same && a.lo == b.lo && a.hi == b.hi;
        kept.o[i + 2] = now;
        dx += (now - was) * w_.stride[i] * x_.strides[i + 2];
        df += (now - was) * w_.stride[i] * pitch[i + 2];
      }
      if (same) {
        const int64_t n = kept.count < most ? kept.count : most;
        for (int64_t m = 0; m < n; ++m) xoffs[m] += dx;
        if (foffs != nullptr)
          for (int64_t m = 0; m < n; ++m) foffs[m] += df;
        return kept.count;
      }
    }
    int64_t count = 0;
    for_each_leading_offset(pitch, t, [&](int64_t xoff, int64_t foff) {
      if (count < most) {
        xoffs[count] = xoff;
        if (foffs != nullptr) foffs[count] = foff;
      }
      ++count;
    });
    kept.valid = true;
    for (int d = 0; d < 2 + lead_; ++d) kept.o[d] = t.o[d];
    kept.count = count;
    return count;
  }

  // For each last-dimension offset j (ascending) whose real outputs meet [t0, t1):
  // each(lo, hi, x0) with those outputs [lo, hi) and the input coordinate x0 of output lo.
  template <class F>
  void for_each_last_offset(int64_t t0, int64_t t1, F&& each) const {
    for (int64_t j = reach_.lo; j < reach_.hi; ++j) {
      Span s = tabulated_ ? last_spans_[j - reach_.lo] : real_outputs(last_, j, ow_);
      int64_t lo = s.lo > t0 ? s.lo : t0, hi = s.hi < t1 ? s.hi : t1;
      if (lo < hi) each(lo, hi, input_coord(last_, lo, j));
    }
  }

  // The last dimension's whole window at once where that pays: the outputs of [t0, t1) whose
  // every offset reads a real element (the interior) go to whole(lo, hi, x0), x0 the input
  // coordinate of output lo at offset 0, so a kernel can walk the window in registers (one
  // pass over its scratch instead of one per offset); the outputs at the borders go offset by
  // offset to each(lo, hi, x0). Every output still sees its offsets in ascending order. Only
  // windows of 2 to kWholeMost offsets are walked whole.
  template <class Whole, class Each>
  void for_each_last_window(int64_t t0, int64_t t1, Whole&& whole, Each&& each) const {
    int64_t ia = interior_.lo > t0 ? interior_.lo : t0;
    int64_t ib = interior_.hi < t1 ? interior_.hi : t1;
    if (last_.window > kWholeMost || last_.window < 2 || ia >= ib) {
      for_each_last_offset(t0, t1, each);
      return;
    }
    for_each_last_offset(t0, ia, each);
    whole(ia, ib, input_coord(last_, ia, 0));
    for_each_last_offset(ib, t1, each);
  }

 private:
  const Tensor& x_;
  const Window& w_;
  int lead_;
  Dim last_;
  int64_t ow_;
  Span reach_, interior_;
  bool tabulated_;
  // what the walk knows of one output position of a dimension: its real window offsets and
  // its divisor's factors (SPEC 3.1: the real offsets, and the real and padding ones)
  struct OutputPosition {
    Span offsets;
    int64_t real, padded;
  };
  OutputPosition* positions_;             // every dimension's, then the last's spans
  OutputPosition* lead_pos_[kMaxSpatial] = {};
  OutputPosition* last_pos_;
  Span* last_spans_;                      // per offset of the last dimension: its real outputs
};

// Each output row's window moves on by `step_` elements along the next dimension up: ask()
// asks for the input that the output row kPrefetchRowsAhead rows on reads anew, past the last
// window row of each run of them `run_` elements apart, one step's worth. Channels-last data
// recast included (its rows are pixels, a few cache lines each): without it, its loads wait
// on memory (2.5 times the time in the cache).
class RowsAhead {
 public:
  RowsAhead(const Tensor& x, const Window& w) {
    const int k = x.rank - 2, last = x.rank - 1;
    if (k < 2) return;
    step_ = w.stride[k - 2] * x.strides[last - 1];
    run_ = w.dilation[k - 2] * x.strides[last - 1];
  }

  template <class T>
  DMLOPS_PREFETCHES void ask(const T* x, const int64_t* xoffs, int64_t rows) const {
    if (step_ <= 0) return;
    for (int64_t m = 0; m < rows; ++m)
      if (m + 1 == rows || xoffs[m + 1] - xoffs[m] != run_)
        prefetch_span(x + xoffs[m], kPrefetchRowsAhead * step_ * int64_t(sizeof(T)),
                      step_ * int64_t(sizeof(T)));
  }

 private:
  int64_t step_ = 0, run_ = 0;
};

}  // namespace dmlops
