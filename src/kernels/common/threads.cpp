#include "threads.h"

#include <pthread.h>
#include <sched.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace dmlops {
namespace {

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
    {
      std::lock_guard<std::mutex> g(m_);
      while (int(threads_.size()) < shares - 1) {
        int id = int(threads_.size()) + 1;
        threads_.emplace_back([this, id] { work(id); });
      }
      fn_ = fn;
      ctx_ = ctx;
      shares_ = shares;
      pending_ = shares - 1;
      ++generation_;
    }
    wake_.notify_all();
    fn(ctx, 0);
    std::unique_lock<std::mutex> g(m_);
    done_.wait(g, [this] { return pending_ == 0; });
    return true;
  }

 private:
  void work(int id) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> g(m_);
    for (;;) {
      wake_.wait(g, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (id >= shares_) continue;
      auto fn = fn_;
      void* ctx = ctx_;
      g.unlock();
      fn(ctx, id);
      g.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex busy_, m_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  void (*fn_)(void*, int) = nullptr;
  void* ctx_ = nullptr;
  int shares_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
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
