// Software prefetch: of a range of memory a piece at a time (a pass that works on data
// already in cache, a kernel's second pass over its scratch, asks for the next task's input
// meanwhile), or of a span some way ahead of what a loop reads now (prefetch_span), so that
// input arrives while the cores compute instead of stalling the loads that need it.
#pragma once
#include <cstdint>

namespace dmlops {

constexpr int64_t kCacheLine = 64;

// Inlined without fail: GCC 12 takes a function whose only effect is a prefetch for one
// without effects and drops the calls to it, and callers' calls with them.
#define DMLOPS_PREFETCHES __attribute__((always_inline)) inline

// The lines of [p + ahead, p + ahead + bytes), for reading: addresses past the tensor are
// harmless (a prefetch never faults), so the sum is taken as an integer, not a pointer.
DMLOPS_PREFETCHES void prefetch_span(const void* p, int64_t ahead, int64_t bytes) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(p) + uintptr_t(ahead);
  for (int64_t b = 0; b < bytes; b += kCacheLine)
    __builtin_prefetch(reinterpret_cast<const void*>(at + uintptr_t(b)), 0, 3);
}

// The bytes [p, p + bytes), for reading, in `pieces` steps: each next() asks for the next
// piece's cache lines (no divisions per step: a step is called once per output row).
class Prefetch {
 public:
  Prefetch() = default;
  Prefetch(const void* p, int64_t bytes, int64_t pieces)
      : at_(static_cast<const char*>(p)), end_(at_ + (bytes > 0 ? bytes : 0)) {
    const int64_t lines = (bytes + kCacheLine - 1) / kCacheLine;
    per_ = pieces > 0 ? (lines + pieces - 1) / pieces : lines;
  }

  void next() {
    for (int64_t i = 0; i < per_ && at_ < end_; ++i, at_ += kCacheLine)
      __builtin_prefetch(at_, 0, 3);
  }

 private:
  const char* at_ = nullptr;
  const char* end_ = nullptr;
  int64_t per_ = 0;
};

}  // namespace dmlops
