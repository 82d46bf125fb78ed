// NCCL communicators for the CUDA runtime (CUDA builds only), behind a factory so that the
// runtime never cares how ranks find each other:
//   * SingleProcessCommunicators: every member GPU belongs to this process; ncclCommInitAll.
//   * (design target) an MPI factory: one process per node or per GPU; for each group, the
//     group's lowest global rank calls ncclGetUniqueId, MPI_Bcast sends it to the group's
//     processes, and each process calls ncclCommInitRank for its local members inside
//     ncclGroupStart/End. The RankMap already says which graph devices live in this process,
//     so the runtime issues NCCL calls only for local members and nothing else changes.
#pragma once

#include <span>
#include <vector>

#include <nccl.h>

#include "parasim/simulator/task_graph.hpp"

namespace parasim::executor::cuda_detail {

/// Where every graph device (global rank) lives.
struct RankMap {
  std::vector<int> process_of;   // per graph device: the process (MPI rank) that drives it
  std::vector<int> cuda_device;  // per graph device: its CUDA device index within that process
  int this_process = 0;
  bool is_local(simulator::DeviceId d) const { return process_of[static_cast<std::size_t>(d)] == this_process; }
};

class CommunicatorFactory {
 public:
  virtual ~CommunicatorFactory() = default;
  /// Communicators for `group` (graph devices, NCCL rank = position in the group), one per
  /// member living in this process, in group order. The caller destroys them (ncclCommDestroy).
  virtual std::vector<ncclComm_t> create(std::span<const simulator::DeviceId> group) = 0;
};

class SingleProcessCommunicators final : public CommunicatorFactory {
 public:
  explicit SingleProcessCommunicators(const RankMap& ranks) : ranks_(ranks) {}
  std::vector<ncclComm_t> create(std::span<const simulator::DeviceId> group) override;

 private:
  RankMap ranks_;
};

}  // namespace parasim::executor::cuda_detail
