// Sliding-window geometry (SPEC 2), per spatial dimension. Pure integer arithmetic, no
// host-only dependency, so a GPU port can share it.
#pragma once
#include <cstdint>

#include "config.h"

namespace dmlops {

struct Window {
  int k = 0;                       // spatial dimensions
  int64_t size[kMaxSpatial] = {};
  int64_t stride[kMaxSpatial] = {};
  int64_t start[kMaxSpatial] = {};  // start padding
  int64_t end[kMaxSpatial] = {};    // end padding (divisors only)
  int64_t dilation[kMaxSpatial] = {};
};

// One spatial dimension of a window: input size S, window W, stride, start padding, dilation.
struct Dim {
  int64_t in, window, stride, start, end, dilation;
};

inline Dim dim_of(const Window& w, int i, int64_t in_size) {
  return Dim{in_size, w.size[i], w.stride[i], w.start[i], w.end[i], w.dilation[i]};
}

// Input coordinate of window offset j of output position o (negative or >= in: not real).
inline int64_t input_coord(const Dim& d, int64_t o, int64_t j) {
  return o * d.stride + j * d.dilation - d.start;
}

struct Span {
  int64_t lo, hi;  // [lo, hi), empty when hi <= lo
};

inline int64_t floor_div(int64_t a, int64_t b) {  // b > 0
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// The output positions o in [0, out) whose window offset j reads a real element.
inline Span real_outputs(const Dim& d, int64_t j, int64_t out) {
  int64_t shift = j * d.dilation - d.start;  // input coordinate at o = 0
  int64_t lo = shift < 0 ? (-shift + d.stride - 1) / d.stride : 0;
  int64_t hi = d.in - 1 - shift >= 0 ? (d.in - 1 - shift) / d.stride + 1 : 0;
  if (hi > out) hi = out;
  return Span{lo, hi < lo ? lo : hi};
}

// The window offsets j in [0, window) of output position o that read a real element.
inline Span real_offsets(const Dim& d, int64_t o) {
  int64_t first = o * d.stride - d.start;  // input coordinate of offset 0
  int64_t lo = first < 0 ? (-first + d.dilation - 1) / d.dilation : 0;
  int64_t hi = d.in - 1 - first >= 0 ? (d.in - 1 - first) / d.dilation + 1 : 0;
  if (hi > d.window) hi = d.window;
  return Span{lo, hi < lo ? lo : hi};
}

// The window offsets that read a real element for at least one of the outputs [0, out).
inline Span offsets_reaching(const Dim& d, int64_t out) {
  // offset j reads input o*stride + j*dilation - start for o in [0, out): some of them in
  // [0, in) needs j*dilation <= in - 1 + start and j*dilation >= start - (out-1)*stride
  int64_t lo_num = d.start - (out - 1) * d.stride;
  int64_t lo = lo_num <= 0 ? 0 : (lo_num + d.dilation - 1) / d.dilation;
  int64_t hi = floor_div(d.in - 1 + d.start, d.dilation) + 1;
  if (hi > d.window) hi = d.window;
  return Span{lo, hi < lo ? lo : hi};
}

// The divisor's factor of output position o in this dimension (SPEC 3.1): real positions,
// or with include_padding real and padding ones, never phantom ones.
inline int64_t divisor_factor(const Dim& d, int64_t o, bool include_padding) {
  if (!include_padding) {
    Span s = real_offsets(d, o);
    return s.hi - s.lo;
  }
  // padded positions q = o*stride + j*dilation < in + start + end
  int64_t first = o * d.stride;
  int64_t limit = d.in + d.start + d.end;
  if (first >= limit) return 0;
  int64_t n = (limit - 1 - first) / d.dilation + 1;
  return n < d.window ? n : d.window;
}

}  // namespace dmlops
