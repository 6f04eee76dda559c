// What the separable fast paths share (max_pool_separable.h, avg_pool_separable.h): 2-D
// windows reduced in two passes, first along each input row's last dimension (one result per
// output column), then across the window rows of each output row. A block of input rows
// takes the first pass flat, as one long row: an element of the "row" reads the block at
// g * stride, so row r's column o is g = r * width + o with width = P / stride (P the rows'
// pitch), and short rows still take whole vectors; the columns whose window leaves its row
// are done again from their real offsets.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <vector>

#include "common/config.h"
#include "common/prefetch.h"
#include "common/simd.h"
#include "common/tensor.h"
#include "common/threads.h"
#include "common/window.h"

namespace dmlops {

// Whether x (N, C, rows, last) and the window suit the separable passes: two spatial
// dimensions, the last packed, rows a positive pitch P apart (at least a row), the window's
// stride along the last dimension 1 or 2, P a multiple of it and a row's outputs no more
// than P / stride, at most 64 last-dimension offsets and kMostRegisterOffsets window rows.
inline bool separable_shape(const Tensor& x, const Tensor& y, const Window& w) {
  if (x.rank != 4 || y.sizes[3] <= 0) return false;
  const int64_t pitch = x.strides[2], s = w.stride[1];
  return x.strides[3] == 1 && (s == 1 || s == 2) && w.size[1] <= 64 &&
         w.size[0] <= kMostRegisterOffsets && pitch >= x.sizes[3] && pitch % s == 0 &&
         y.sizes[3] <= pitch / s;
}

// What the two passes need of the window that is the same for every block, worked out once
// per call (no divisions in the loops): each output row's real window rows, and the columns
// whose window leaves the row (all of them where the interior is empty) with their real
// offsets. The other paths of 2-D windows over x's dimensions 2 and 3 take their tables from
// it too (the averages' plane and pixel paths, max pooling's pixel path).
struct SeparableGeometry {
  Dim rows, last;
  Span interior;
  std::vector<Span> row_offsets;  // per output row
  std::vector<int64_t> edges;     // columns
  std::vector<Span> edge_offsets;
  std::vector<int64_t> row_real, row_padded;    // per output row: divisor factors (SPEC 3.1)
  std::vector<int64_t> last_real, last_padded;  // per column
  Span full_rows{0, 0};  // the output rows whose every window row is real

  SeparableGeometry(const Tensor& x, const Tensor& y, const Window& w)
      : rows(dim_of(w, 0, x.sizes[2])), last(dim_of(w, 1, x.sizes[3])) {
    const int64_t oh = y.sizes[2], ow = y.sizes[3];
    interior = Span{real_outputs(last, 0, ow).lo, real_outputs(last, last.window - 1, ow).hi};
    full_rows = real_outputs(rows, rows.window - 1, oh);
    const Span first = real_outputs(rows, 0, oh);
    full_rows.lo = first.lo > full_rows.lo ? first.lo : full_rows.lo;
    full_rows.hi = first.hi < full_rows.hi ? first.hi : full_rows.hi;
    if (full_rows.hi < full_rows.lo) full_rows.hi = full_rows.lo;
    // (room made once: grown element by element, the tables cost a small call's kernel a
    // fifth of its time in allocations, [1, 1, 112, 112] max pooling)
    for (auto* v : {&row_real, &row_padded}) v->reserve(size_t(oh));
    for (auto* v : {&last_real, &last_padded, &edges}) v->reserve(size_t(ow));
    row_offsets.reserve(size_t(oh));
    edge_offsets.reserve(size_t(ow));
    for (int64_t o = 0; o < oh; ++o) {
      row_offsets.push_back(real_offsets(rows, o));
      row_real.push_back(divisor_factor(rows, o, false));
      row_padded.push_back(divisor_factor(rows, o, true));
    }
    for (int64_t o = 0; o < ow; ++o) {
      last_real.push_back(divisor_factor(last, o, false));
      last_padded.push_back(divisor_factor(last, o, true));
      if (o >= interior.lo && o < interior.hi) continue;
      edges.push_back(o);
      edge_offsets.push_back(real_offsets(last, o));
    }
  }

  // Output column o's real offsets: the whole window in the interior, worked out (with
  // divisions) at the edges.
  Span column_offsets(int64_t o) const {
    return o >= interior.lo && o < interior.hi ? Span{0, last.window} : real_offsets(last, o);
  }
  // The divisor's factor (SPEC 3.1) of output row o, and of output column o.
  int64_t row_factor(int64_t o, bool padded) const { return padded ? row_padded[o] : row_real[o]; }
  int64_t column_factor(int64_t o, bool padded) const {
    return padded ? last_padded[o] : last_real[o];
  }

  // How many output rows a block holds: the plane's rows in as few blocks of about equal
  // size as keep their first pass's results (rows of `width` elements of `bytes` each) in
  // kSeparableScratch, one row at least.
  int64_t block_rows(int64_t oh, int64_t width, int64_t bytes) const {
    const int64_t reach = (rows.window - 1) * rows.dilation + 1;
    const int64_t fit = kSeparableScratch / (width * bytes);
    const int64_t most = fit > reach ? (fit - reach) / rows.stride + 1 : 1;
    if (most >= oh) return oh;
    const int64_t blocks = (oh + most - 1) / most;
    return (oh + blocks - 1) / blocks;
  }

  // fn(m, r) for each real window row m of output row oy, r its input row; how many.
  template <class F> int64_t each_window_row(int64_t oy, F&& fn) const {
    const Span js = row_offsets[oy];
    int64_t m = 0;
    for (int64_t j = js.lo; j < js.hi; ++j, ++m) fn(m, input_coord(rows, oy, j));
    return m;
  }

  // The real input rows of output rows [a, b).
  Span input_rows(int64_t a, int64_t b) const {
    Span in{0, 0};
    for (int64_t o = a; o < b; ++o) {
      const Span js = row_offsets[o];
      if (js.hi <= js.lo) continue;
      const int64_t lo = input_coord(rows, o, js.lo), hi = input_coord(rows, o, js.hi - 1) + 1;
      if (in.hi <= in.lo) in = Span{lo, hi};
      in.lo = lo < in.lo ? lo : in.lo;
      in.hi = hi > in.hi ? hi : in.hi;
    }
    return in;
  }
};

// A block: rows [r0, r0 + rows) of a plane, read from x (its first row), their first pass's
// results for column o of row r at results[r * width + o] (and, where a path asks for them,
// which offset won, for indices, at winners[r * width + o]).
template <class X, class H> struct Block {
  const X* x;
  int64_t pitch;
  int64_t rows;
  H* results;
  int64_t width;
  uint32_t* winners;
};

// What a separable path asks of separable_blocks beyond its two passes.
struct BlockOptions {
  bool winners = false;             // keep the first pass's winning offsets (Block::winners)
  bool first_pass_prefetches = false;  // the first pass asks for half the next block's input
};

// The flat positions g of a block whose window lies in it, whole: [ga, gb).
template <class X, class H>
inline Span flat_range(const Block<X, H>& b, const Dim& last_dim) {
  const int64_t s = last_dim.stride, len = flat_length(b, last_dim);
  const int64_t ga = last_dim.start > 0 ? (last_dim.start + s - 1) / s : 0;
  // g * s <= top
  const int64_t top = len - 1 + last_dim.start - (last_dim.window - 1) * last_dim.dilation;
  int64_t gb = top >= 0 ? top / s + 1 : 0;
  if (gb > b.rows * b.width) gb = b.rows * b.width;
  return Span{ga, gb};
}

// fn(g, at) for the block's flat positions whose window lies in it, L at a time (the last L
// overlapping the ones before: computed twice, to the same bits), `at` the input position of
// g's offset 0 from the block's start; false where there are fewer than L of them.
template <int L, class X, class H, class F>
bool for_each_flat_vector(const Block<X, H>& b, const Dim& last_dim, F&& fn) {
  const Span flat = flat_range(b, last_dim);
  if (flat.hi - flat.lo < L) return false;
  sweep<L>(flat.lo, flat.hi, [&](int64_t g) { fn(g, g * last_dim.stride - last_dim.start); },
           [](int64_t) {});
  return true;
}

// The block's length as one flat row: its rows but the last whole, then the last row.
template <class X, class H> inline int64_t flat_length(const Block<X, H>& b, const Dim& last_dim) {
  return (b.rows - 1) * b.pitch + last_dim.in;
}

// The first pass's columns that the flat vectors did not do right (`flat`: the flat pass
// ran; otherwise every column): results[i] = column(row, at, count, i) for each row, `at` the input
// positions of the column's `count` real offsets in order, i the result's place in the block.
// A column at a time, its positions worked out once for all the block's rows.
template <class X, class H, class F>
void each_column_left(const Block<X, H>& b, const SeparableGeometry& geo, int64_t ow,
                      bool flat, F&& column) {
  const int64_t n = flat ? int64_t(geo.edges.size()) : ow;
  int64_t at[64];  // separable_shape: at most 64 last-dimension offsets
  for (int64_t e = 0; e < n; ++e) {
    const int64_t o = flat ? geo.edges[e] : e;
    const Span js = flat ? geo.edge_offsets[e] : real_offsets(geo.last, o);
    const int64_t count = js.hi > js.lo ? js.hi - js.lo : 0;
    for (int64_t j = 0; j < count; ++j) at[j] = input_coord(geo.last, o, js.lo + j);
    for (int64_t r = 0; r < b.rows; ++r)
      b.results[r * b.width + o] = column(b.x + r * b.pitch, at, count, r * b.width + o);
  }
}

// Every plane of x (N, C, rows, last) in blocks of output rows (block_rows): first(block,
// early) fills a block's results, then second(block, what first returned (false where it
// returns nothing), first input row, output rows [b0, b1), y's plane offset, n, c, late)
// makes the block's output rows, second being each task's make_second(). late.next() asks for the
// next piece of the next block's input (a piece per output row): the second pass reads only the
// cache, and the memory would otherwise idle until the next first pass stalls on it (blocks of
// equal size: with a short last block the whole next plane would be asked for in a few pieces).
// Where `first_pass_prefetches`, the first half of that input is early's instead, a cache line per
// early.next(), which the first pass asks for once per register it makes: the core's fill buffers,
// which the second pass's requests kept full while its work waited on them, then carry the requests
// during the first pass's work too (the separable max pooling of 4- and 8-byte values; not of
// bytes, whose first pass takes a line's worth per register or more and loses by it).
template <class X, class H, class First, class MakeSecond>
void separable_blocks(const Tensor& x, const Tensor& y, const SeparableGeometry& geo,
                      int threads, double work, First&& first, MakeSecond&& make_second,
                      BlockOptions options = {}) {
  const Dim &rows_dim = geo.rows, &last_dim = geo.last;
  const int64_t oh = y.sizes[2], planes = y.sizes[0] * y.sizes[1];
  const int64_t pitch = x.strides[2], width = pitch / last_dim.stride;
  const int64_t reach = (rows_dim.window - 1) * rows_dim.dilation + 1;
  const bool keep_winners = options.winners;
  const int64_t bytes = int64_t(sizeof(H)) + (keep_winners ? int64_t(sizeof(uint32_t)) : 0);
  const int64_t block = geo.block_rows(oh, width, bytes);
  const int64_t blocks = (oh + block - 1) / block;
  const int64_t most_rows = (block - 1) * rows_dim.stride + reach;
  parallel_for(planes * blocks, work, threads, [&](int64_t lo, int64_t hi) {
    // H's results first, the 32-bit ones after them from a 64-byte boundary
    const int64_t hbytes = (most_rows * width * int64_t(sizeof(H)) + 63) / 64 * 64;
    void* mem = std::malloc(size_t(hbytes + (keep_winners ? most_rows * width * 4 : 0)));
    if (mem == nullptr) throw std::bad_alloc();
    H* results = static_cast<H*>(mem);
    uint32_t* winners =
        keep_winners ? reinterpret_cast<uint32_t*>(static_cast<char*>(mem) + hbytes) : nullptr;
    auto second = make_second();
    // item's plane (n, c), its output rows [b0, b1) and their real input rows
    struct Item {
      int64_t n, c, b0, b1;
      Span in;
      const X* x;
    };
    auto item_of = [&](int64_t item) {
      Item it;
      const int64_t p = item / blocks;
      it.n = p / y.sizes[1];
      it.c = p % y.sizes[1];
      it.b0 = (item % blocks) * block;
      it.b1 = it.b0 + block < oh ? it.b0 + block : oh;
      it.in = geo.input_rows(it.b0, it.b1);
      it.x = x.template at<X>(it.n * x.strides[0] + it.c * x.strides[1] + it.in.lo * pitch);
      return it;
    };
    Item nx = item_of(lo);
    for (int64_t item = lo; item < hi; ++item) {
      const Item it = nx;
      Prefetch early, late;
      if (item + 1 < hi) {
        nx = item_of(item + 1);
        if (nx.in.hi > nx.in.lo) {
          const int64_t next =
              ((nx.in.hi - nx.in.lo - 1) * pitch + last_dim.in) * int64_t(sizeof(X));
          const int64_t half =
              options.first_pass_prefetches ? next / 2 / kCacheLine * kCacheLine : 0;
          early = Prefetch(nx.x, half, half / kCacheLine);
          late = Prefetch(reinterpret_cast<const char*>(nx.x) + half, next - half,
                          it.b1 - it.b0);
        }
      }
      const Block<X, H> b{it.x, pitch, it.in.hi - it.in.lo, results, width, winners};
      // (a first pass may say how its results must be read: max pooling's, whether they
      // hold a NaN)
      bool said = false;
      if constexpr (std::is_same_v<decltype(first(b, early)), bool>) {
        if (b.rows > 0) said = first(b, early);
      } else {
        if (b.rows > 0) first(b, early);
      }
      const int64_t yoff = it.n * y.strides[0] + it.c * y.strides[1];
      second(b, said, it.in.lo, it.b0, it.b1, yoff, it.n, it.c, late);
    }
    std::free(mem);
  });
}

}  // namespace dmlops
