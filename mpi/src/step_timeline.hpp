// What the MPI runtimes (CPU and NCCL) share about a step's times: the records each rank keeps,
// its clock's offset from rank 0's, and the gathering of every rank's records into one timeline
// on rank 0's clock (every rank gets the whole timeline).
#pragma once

#include <cstdint>
#include <vector>

#include "parasim/common/units.hpp"
#include "parasim/mpi/world.hpp"
#include "parasim/simulator/step_result.hpp"
#include "parasim/simulator/task_graph.hpp"

namespace parasim::mpi::detail {

/// steady_clock in ns (one monotonic clock per host).
TimeNs now_ns();

// What a rank knows of one task's times after a step, exchanged in finish_step().
enum class Role : std::int32_t { Compute, TransferSent, TransferReceived, CollectiveMember };
struct Record {
  simulator::TaskId task;
  Role role;
  TimeNs start;  // -1: unknown here (a receive knows only its end)
  TimeNs end;
};

/// This rank's clock minus rank 0's (0 on rank 0's host): every rank calls it together.
TimeNs clock_offset(World& world);

/// Every rank's `records` (times on its own clock; `t0` its step's start) gathered, shifted to
/// rank 0's clock and to the first rank's start, and merged per task into `timeline`: a
/// transfer from its send's start to its receive's end, a collective from the last member's
/// start to the last member's end. Every rank calls it together.
void gather_timeline(World& world, const simulator::TaskGraph& graph, const std::vector<Record>& records, TimeNs t0,
                     TimeNs offset, int step, std::vector<simulator::TaskTiming>& timeline);

}  // namespace parasim::mpi::detail
