// The order in which one pipeline device runs its forward and backward work items.
//
// Chunks: the model is cut into M x V contiguous chunks; chunk c runs on stage (device slot)
// c % M, so device s holds chunks s, s + M, ..., s + (V-1) M (V = 1 except for interleaving).
//
//   none         F0 B0 F1 B1 ...            (no pipelining; micro-batches = gradient accumulation)
//   gpipe        F0 .. F(K-1), B(K-1) .. B0  (all forwards, then all backwards; Huang et al. 2019)
//   1f1b         min(M-s-1, K) warm-up forwards, then one forward + one backward at a time,
//                then the remaining backwards (PipeDream-flush; Narayanan et al. 2021)
//   interleaved  Megatron-LM's interleaved 1F1B: warm-up (M-s-1)*2 + (V-1)*M virtual
//                micro-batches; virtual micro-batch k runs chunk (k / M) % V of micro-batch
//                (k / (M V)) M + k % M forward, chunk V-1-(k / M) % V backward; K % M == 0
//   pipedream / spectrain   the 1f1b order (asynchronous: the caller does not flush)
//
// Example:
//   auto items = pipeline_order(Schedule::OneFOneB, /*stages=*/4, /*virtual=*/1, /*micro=*/8, /*stage=*/1);
//   // F0 F1 F2 B0 F3 B1 ... : stage 1 warms up with 2 forwards
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parasim/strategies/strategy.hpp"

namespace parasim::strategies {

enum class WorkKind : std::uint8_t { Forward, Backward };

struct WorkItem {
  int microbatch = 0;
  int chunk = 0;  // global chunk index (v * M + stage)
  WorkKind kind = WorkKind::Forward;
  bool operator==(const WorkItem&) const = default;
};

/// The work items of `stage` in execution order. InputError for interleaved when K % M != 0.
std::vector<WorkItem> pipeline_order(Schedule schedule, int stages, int virtual_stages, int microbatches, int stage);

/// "F0.c1" / "B3.c0": for tests and debugging.
std::string to_string(const WorkItem& w);

}  // namespace parasim::strategies
