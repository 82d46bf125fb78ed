// Cross-thread signalling for the CPU runtime: events (a stream records, others wait) and a
// barrier for collectives. Waiting spins for a bounded time first (a signal from a running
// thread usually arrives within microseconds, and a futex wake-up costs tens of them), then
// sleeps in the kernel via std::atomic::wait (a futex on Linux). Spinning is pointless when
// there are more runnable threads than cores: the spinner steals the core of the thread it waits
// for, so the runtime sets the spin budget to 0 then.
//
// Everything can be aborted: a worker that fails wakes every waiter, which then throws, so one
// failing kernel never leaves the other threads hung.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "parasim/common/error.hpp"
#include "parasim/common/units.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace parasim::executor::detail {

inline TimeNs now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

class AbortedError : public RuntimeError {
 public:
  AbortedError() : RuntimeError("executor: step aborted because another worker failed") {}
};

/// Waits until ready(value) holds: spins for up to `spin_ns`, then futex-waits.
template <class Ready>
void wait_for(const std::atomic<std::uint32_t>& a, Ready ready, TimeNs spin_ns, const std::atomic<bool>& aborted) {
  std::uint32_t v = a.load(std::memory_order_acquire);
  if (ready(v)) return;
  if (spin_ns > 0) {
    const TimeNs until = now_ns() + spin_ns;
    do {
      for (int i = 0; i < 64; ++i) cpu_relax();
      v = a.load(std::memory_order_acquire);
      if (ready(v)) return;
    } while (now_ns() < until);
  }
  while (!ready(v)) {
    if (aborted.load(std::memory_order_acquire)) throw AbortedError();
    a.wait(v, std::memory_order_acquire);
    v = a.load(std::memory_order_acquire);
  }
}

/// Recorded once per step: holds the number of the step it was last recorded in.
class alignas(64) StepEvent {
 public:
  void record(std::uint32_t step) {
    step_.store(step, std::memory_order_release);
    step_.notify_all();
  }
  void wait(std::uint32_t step, TimeNs spin_ns, const std::atomic<bool>& aborted) const {
    wait_for(step_, [step](std::uint32_t v) { return v >= step; }, spin_ns, aborted);
  }
  void abort() {
    step_.store(UINT32_MAX, std::memory_order_release);
    step_.notify_all();
  }

 private:
  std::atomic<std::uint32_t> step_{0};
};

/// A reusable barrier for `n` threads (generation counting, so consecutive phases cannot mix).
class alignas(64) SpinFutexBarrier {
 public:
  explicit SpinFutexBarrier(int n) : n_(n) {}
  void arrive_and_wait(TimeNs spin_ns, const std::atomic<bool>& aborted) {
    const std::uint32_t gen = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
      arrived_.store(0, std::memory_order_relaxed);
      generation_.store(gen + 1, std::memory_order_release);
      generation_.notify_all();
      return;
    }
    wait_for(generation_, [gen](std::uint32_t v) { return v != gen; }, spin_ns, aborted);
    if (aborted.load(std::memory_order_acquire)) throw AbortedError();
  }
  void abort() {
    generation_.fetch_add(1u << 30, std::memory_order_release);
    generation_.notify_all();
  }

 private:
  const int n_;
  std::atomic<int> arrived_{0};
  std::atomic<std::uint32_t> generation_{0};
};

}  // namespace parasim::executor::detail
