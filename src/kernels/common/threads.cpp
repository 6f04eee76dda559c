#include "threads.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace dmlops {
namespace {

// How long a thread of the pool waits for the next call, and the caller for the pool's
// threads, awake before sleeping on a condition variable. Waking a sleeping thread costs tens
// of microseconds on a small VM, twice a call (the pool's thread, then the caller), so that
// two threads took longer than one for calls of up to 100 us of work (1 x 32 x 112 x 112 max
// pooling: 91 us against 72); awake, back-to-back calls skip both. Short, because a waiting
// thread holds its core from other work.
constexpr auto kAwake = std::chrono::microseconds(100);

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Until done() or kAwake has passed. The core is offered to any other thread ready to run
// on it every 64 rounds: a waiting thread that shares its core with the thread it waits for
// would otherwise hold it from that thread for a whole time slice.
template <class Done> void wait_awake(Done&& done) {
  const auto until = std::chrono::steady_clock::now() + kAwake;
  for (int i = 1; !done(); ++i) {
    if (i % 64 == 0) {
      if (std::chrono::steady_clock::now() > until) return;
      std::this_thread::yield();
    } else {
      relax();
    }
  }
}

// A call's shares are claimed by whichever thread asks first, the caller included: each
// thread asks first for its own share (the caller for share 0, pool thread k for share k: the
// same thread takes the same part of the data call after call, which its caches may still
// hold), then for any other left. The caller thus goes on past its own share, so that a call
// whose pool threads wake late (a sleeping thread took 100-250 us to wake on a small VM,
// longer than many calls) takes no longer than the caller alone would.
class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> g(m_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }

  // false when another call holds the pool (the caller then runs alone)
  bool run(int shares, void (*fn)(void*, int), void* ctx) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    uint64_t gen;
    {
      std::lock_guard<std::mutex> g(m_);
      while (int(threads_.size()) < shares - 1) {
        const int id = int(threads_.size()) + 1;
        threads_.emplace_back([this, id] { work(id); });
      }
      fn_ = fn;
      ctx_ = ctx;
      shares_ = shares;
      pending_.store(shares, std::memory_order_relaxed);
      gen = generation_.load(std::memory_order_relaxed) + 1;
      for (int s = 0; s < shares; ++s) slots_[s].store(gen << 1, std::memory_order_relaxed);
      generation_.store(gen, std::memory_order_release);
    }
    wake_.notify_all();
    take(gen, shares, 0, fn, ctx);
    wait_awake([this] { return pending_.load(std::memory_order_acquire) == 0; });
    std::unique_lock<std::mutex> g(m_);
    done_.wait(g, [this] { return pending_.load(std::memory_order_acquire) == 0; });
    // only now, every share over (ctx lives in the caller's frame), a failed share's
    // exception goes on to the caller
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    return true;
  }

 private:
  // Runs the shares of call `gen` this thread claims, `own` first. A share's slot holds
  // gen << 1 until claimed (| 1): a thread that saw an earlier call never claims a share of a
  // later one, and an earlier call is not over while any of its shares is unclaimed.
  void take(uint64_t gen, int shares, int own, void (*fn)(void*, int), void* ctx) {
    auto claim = [&](int s) {
      uint64_t free = gen << 1;
      return slots_[s].compare_exchange_strong(free, free | 1, std::memory_order_acq_rel);
    };
    for (int k = 0; k < shares; ++k) {
      const int s = k == 0 ? own : (k == own ? 0 : k);
      if (s >= shares || !claim(s)) continue;
      // (a share's exception, bad_alloc for its scratch, is kept for the caller: leaving a
      // pool thread it would end the process, and the caller may not leave while other
      // shares still use its ctx)
      try {
        fn(ctx, s);
      } catch (...) {
        std::lock_guard<std::mutex> l(m_);
        if (!error_) error_ = std::current_exception();
      }
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1 && own != 0) {
        std::lock_guard<std::mutex> l(m_);
        done_.notify_one();
      }
    }
  }

  void work(int id) {
    uint64_t seen = 0;
    for (;;) {
      wait_awake([&] {
        return stop_.load(std::memory_order_relaxed) ||
               generation_.load(std::memory_order_acquire) != seen;
      });
      std::unique_lock<std::mutex> g(m_);
      wake_.wait(g, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      auto fn = fn_;
      void* ctx = ctx_;
      const int shares = shares_;
      g.unlock();
      take(seen, shares, id, fn, ctx);
    }
  }

  std::mutex busy_, m_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  void (*fn_)(void*, int) = nullptr;
  void* ctx_ = nullptr;
  int shares_ = 0;
  std::exception_ptr error_;               // the call's first failed share's (under m_)
  // (atomic: read awake, without the lock)
  std::atomic<int> pending_{0};            // shares not yet done
  std::atomic<uint64_t> generation_{0};    // calls so far
  std::atomic<uint64_t> slots_[kMostShares] = {};
  std::atomic<bool> stop_{false};
};

Pool* pool_ = nullptr;
std::once_flag at_fork_;

// A forked child has none of the parent's threads: it starts a pool of its own (the
// parent's is leaked there, its mutexes possibly held).
void forget_pool() { pool_ = nullptr; }

Pool& pool() {
  std::call_once(at_fork_, [] { pthread_atfork(nullptr, nullptr, forget_pool); });
  static std::mutex m;
  std::lock_guard<std::mutex> g(m);
  if (pool_ == nullptr) pool_ = new Pool();  // never deleted: threads live as long as the process
  return *pool_;
}

}  // namespace

void run_shares(int shares, void (*fn)(void*, int), void* ctx) {
  if (!pool().run(shares, fn, ctx)) {
    for (int s = 0; s < shares; ++s) fn(ctx, s);
  }
}

int usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? int(n) : 1;
}

}  // namespace dmlops
