// Streaming (non-temporal) stores for outputs much larger than the caches that nothing reads
// back soon: an ordinary store first reads its cache line from memory (to own it), so
// writing a large output moves each byte twice; a non-temporal store writes whole lines
// straight to memory. Only whole, aligned 64-byte lines are streamed: the partial lines at a
// run's ends take ordinary stores, so that no line mixes the two kinds. Streamed stores are
// weakly ordered: a task calls stream_fence() before it ends, so that the thread that waits
// for it sees its results.
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

#include "common/config.h"

namespace dmlops {

// Whether an output of `bytes` is worth streaming.
inline bool worth_streaming(int64_t bytes) { return bytes >= kStreamBytes; }

// The 64-byte line at dst (aligned) = src[0, 64), streamed.
inline void stream_line(void* dst, const void* src) {
#if defined(__x86_64__) || defined(_M_X64)
#if defined(__AVX512F__)
  _mm512_stream_si512(static_cast<__m512i*>(dst), _mm512_loadu_si512(src));
#else
  for (int k = 0; k < 64; k += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(static_cast<char*>(dst) + k),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(
                         static_cast<const char*>(src) + k)));
#endif
#else
  std::memcpy(dst, src, 64);
#endif
}

// dst[0, bytes) = src[0, bytes): the whole 64-byte lines of dst streamed, the rest stored
// as usual (everywhere but x86-64, all of it).
inline void stream_copy(void* dst, const void* src, int64_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
#if defined(__x86_64__) || defined(_M_X64)
  const int64_t head = int64_t((64 - reinterpret_cast<uintptr_t>(d) % 64) % 64);
  if (head < bytes) {
    std::memcpy(d, s, size_t(head));
    int64_t i = head;
    for (; i + 64 <= bytes; i += 64) stream_line(d + i, s + i);
    std::memcpy(d + i, s + i, size_t(bytes - i));
    return;
  }
#endif
  std::memcpy(d, s, size_t(bytes));
}

// Orders this thread's streamed stores before whatever it does next (its task's end).
inline void stream_fence() {
#if defined(__x86_64__) || defined(_M_X64)
  _mm_sfence();
#endif
}

}  // namespace dmlops
