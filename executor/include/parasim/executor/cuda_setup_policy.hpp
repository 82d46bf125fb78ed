// The CUDA runtime's decisions that need no GPU, kept free of CUDA headers so every machine tests
// them: which compute tasks run as timed stand-ins and why, and the order that keeps NCCL
// collectives of one GPU from hanging (the NCCL group guard is kernels::NcclGroupGuard).
//
// Example (what cuda_runtime.cpp does):
//   StandInLedger ledger;
//   if (free < options.memory_reserve) ledger.add("conv1", StandInReason::MemoryReserve, "GPU 0: 3.1 GiB free");
//   for (const std::string& n : ledger.notes()) notes_.push_back(n);
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "parasim/common/units.hpp"
#include "parasim/executor/stream_runtime.hpp"

namespace parasim::executor {

/// Memory each GPU keeps free while the runtime prepares kernels: NCCL's channel buffers, cuDNN
/// workspaces grown at run time, the CUDA context's own growth. Kernels of later ops are not
/// prepared once a GPU's free memory falls below it; those ops run as timed stand-ins.
inline constexpr Bytes kDefaultCudaMemoryReserve = 4 * GiB;

enum class StandInReason : std::uint8_t {
  NoOp,           // the task names no op, or a phase without kernels (synthetic graphs)
  MemoryReserve,  // the GPU's free memory fell below the reserve before this op was prepared
  PrepareFailed,  // the backend could not prepare the op (unsupported shape, out of memory, ...)
};

/// Collects the compute tasks that run a spin kernel for their graph duration instead of their
/// op's kernels, and says which ops and why: a stand-in is timed but is not a measurement.
class StandInLedger {
 public:
  /// One compute task runs as a stand-in; `op` is "" for NoOp. `detail` explains the reason
  /// ("GPU 0: 3.1 GiB free, below the 4 GiB reserve", the prepare error).
  void add(const std::string& op, StandInReason why, const std::string& detail = "");
  std::int64_t tasks() const { return tasks_; }
  /// Ops (names, sorted) that run as stand-ins for `why`.
  std::vector<std::string> ops(StandInReason why) const;
  /// Lines for StreamRuntime::notes(): the count, then one line per reason (and detail) listing
  /// the ops. Empty when every compute task runs real kernels.
  std::vector<std::string> notes() const;

 private:
  std::int64_t tasks_ = 0;
  std::map<std::pair<StandInReason, std::string>, std::set<std::string>> ops_;  // (why, detail) -> ops
};

/// One stream that must wait, before a collective, for the previous collective issued on the
/// same GPU (which ran on another stream of that GPU).
struct CollectiveOrderWait {
  StreamIndex stream = 0;
  TaskId after = 0;
};

/// Per task (indexed by TaskId; empty for all but collectives): the waits that put every GPU's
/// NCCL collectives into one order, the plan's issue order. One thread issues every rank's call
/// of a collective together, so the order is the same on all ranks; without the chain, kernels
/// of two communicators (one per group and stream) on different streams of one GPU could run in
/// different orders on different GPUs and wait for each other forever. This is what NCCL >= 2.26
/// does with NCCL_LAUNCH_ORDER_IMPLICIT=1, done here so it holds with every NCCL version.
std::vector<std::vector<CollectiveOrderWait>> collective_order_waits(const TaskGraph& graph, const IssuePlan& plan);

}  // namespace parasim::executor
