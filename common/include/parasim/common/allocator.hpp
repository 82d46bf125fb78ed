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

namespace parasim {

void keep_freed_memory_for_reuse();

}  // namespace parasim
