// Process-wide allocator settings for parasim's programs (the CLI, benchmarks).
//
// Planning simulates hundreds of candidates, each lowering a task graph of megabytes and
// freeing it again. With glibc's defaults, blocks above 128 KiB are mmap'ed and returned to the
// kernel on free, and the heap top is trimmed once 128 KiB are free, so every candidate faults
// its pages in afresh (about 5% of a plan of Turing-NLG 530B on 5,128 GPUs). Raising both
// thresholds keeps freed memory in the process for the next candidate.
//
// Call once at startup, before threads start. A no-op where the C library is not glibc.
#pragma once

#include <memory>
#include <utility>

namespace parasim {

void keep_freed_memory_for_reuse();

/// Keeps `p` alive until the process exits, where the system takes its memory back at once: a
/// command's large structures (a 5,128-device cluster, a planner's hundreds of model variants)
/// then cost no time freeing them block by block after the answer is printed (6% of `parasim
/// plan` on Turing-NLG, docs/projection.md). Still reachable for leak checkers. For the CLI's
/// commands only: a long-lived process would keep every object passed here.
void keep_until_exit(std::shared_ptr<const void> p);

/// A T built from `args` and kept until the process exits (keep_until_exit).
template <class T, class... Args>
T& make_kept_until_exit(Args&&... args) {
  auto p = std::make_shared<T>(std::forward<Args>(args)...);
  T& ref = *p;
  keep_until_exit(std::shared_ptr<const void>(std::move(p)));
  return ref;
}

}  // namespace parasim
