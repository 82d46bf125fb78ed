// The transports the link probe times (link_probe.cpp drives them): MPI messages between
// processes, or NCCL between the ranks' GPUs (nccl_link_probe.cpp, CUDA builds).
#pragma once

#include <memory>

#include "parasim/common/units.hpp"
#include "parasim/mpi/world.hpp"

namespace parasim::mpi::detail {

class ProbeLinks {
 public:
  virtual ~ProbeLinks() = default;
  /// ns for `bytes` to `peer` and back; the pair's lower rank sends first (`first`).
  virtual double round_trip(int peer, Bytes bytes, bool first) = 0;
  /// ns for one all-reduce of `bytes` over every rank (every rank calls it).
  virtual double allreduce(Bytes bytes) = 0;
};

std::unique_ptr<ProbeLinks> make_mpi_probe_links(World& world, Bytes largest);
/// RuntimeError in builds without CUDA or without a visible GPU.
std::unique_ptr<ProbeLinks> make_nccl_probe_links(World& world, Bytes largest);

}  // namespace parasim::mpi::detail
