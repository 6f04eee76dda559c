// Software prefetch of a range of memory, a piece at a time: a pass that works on data
// already in cache (a kernel's second pass over its scratch) asks for the next task's input
// meanwhile, so that input arrives while the cores compute instead of stalling the next
// task's first loads.
#pragma once
#include <cstdint>

namespace dmlops {

constexpr int64_t kCacheLine = 64;

// Piece `k` of `pieces` of the bytes [p, p + bytes), for reading.
inline void prefetch_piece(const void* p, int64_t bytes, int64_t k, int64_t pieces) {
  const char* c = static_cast<const char*>(p);
  const int64_t lo = bytes * k / pieces, hi = bytes * (k + 1) / pieces;
  for (int64_t at = lo - lo % kCacheLine; at < hi; at += kCacheLine)
    __builtin_prefetch(c + at, 0, 3);
}

}  // namespace dmlops
