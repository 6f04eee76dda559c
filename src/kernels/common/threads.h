// Work shared out among threads: `parallel_for(n, work, threads, fn)` runs fn(lo, hi) over
// contiguous shares of [0, n), each taken by whichever thread claims it first (the calling
// thread and the pool's; threads.cpp). Every item is written by one share only, so results
// never depend on the thread count or on which thread ran a share. The pool is the module's
// own (no OpenMP); a call made while another holds it runs on the calling thread alone.
#pragma once
#include <cstdint>
#include <type_traits>
#include <utility>

#include "config.h"

namespace dmlops {

// A non-owning reference to a callable void(int64_t, int64_t).
class RangeFn {
 public:
  template <class F>
  RangeFn(F& f)  // NOLINT: implicit by design
      : obj_(&f), call_([](void* o, int64_t lo, int64_t hi) { (*static_cast<F*>(o))(lo, hi); }) {}
  void operator()(int64_t lo, int64_t hi) const { call_(obj_, lo, hi); }

 private:
  void* obj_;
  void (*call_)(void*, int64_t, int64_t);
};

// Runs fn(ctx, share) for each of `shares` shares, at once on the calling thread and the
// pool's (which thread takes which share is not fixed: a share's results must not depend on it).
// A share's exception is thrown here, on the caller, once every share is over.
void run_shares(int shares, void (*fn)(void*, int), void* ctx);

// The number of CPUs this process may run on.
int usable_cpus();

// Splits [0, n) into at most `threads` shares of at least kMinWorkPerThread work each
// (`work` is the total); returns when all are done.
template <class F>
void parallel_for(int64_t n, double work, int threads, F&& fn) {
  if (n <= 0) return;
  double per = double(kMinWorkPerThread);
  int64_t most = int64_t(work / per);
  int shares = threads < 1 ? 1 : threads < kMostShares ? threads : kMostShares;
  if (most < shares) shares = most < 1 ? 1 : int(most);
  if (shares > n) shares = int(n);
  if (shares <= 1) {
    fn(int64_t(0), n);
    return;
  }
  struct Ctx {
    std::remove_reference_t<F>* fn;
    int64_t n;
    int shares;
  } ctx{&fn, n, shares};
  run_shares(shares, [](void* c, int s) {
    auto* x = static_cast<Ctx*>(c);
    int64_t lo = x->n * s / x->shares, hi = x->n * (s + 1) / x->shares;
    if (lo < hi) (*x->fn)(lo, hi);
  }, &ctx);
}

}  // namespace dmlops
