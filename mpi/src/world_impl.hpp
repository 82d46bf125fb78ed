// What the MPI sources of this component share: the world's communicators and the deadline
// wait every blocking step goes through.
#pragma once

#include <mpi.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "parasim/mpi/world.hpp"

namespace parasim::mpi {

namespace detail {

using Clock = std::chrono::steady_clock;

/// MPI_Testall on `requests` until all completed. Past `deadline`: RuntimeError "rank R: waited
/// 20 s for <what> (ranks 1, 3)"; when the heartbeat found a dead rank first: waits for the
/// heartbeat thread to end the job (it names the dead rank). `peers`: the ranks waited for.
void wait_all(World& world, std::vector<MPI_Request>& requests, Clock::time_point deadline, std::string_view what,
              const std::vector<int>& peers);

/// The world's communicator for parasim's own collectives (a duplicate of MPI_COMM_WORLD with
/// MPI_ERRORS_RETURN).
MPI_Comm world_comm(World& world);

/// Yields (or, outside a step and after a while, sleeps) when nothing progressed: many ranks
/// share few cores here, and a spinning rank would take the core from the rank it waits for.
void idle_pause(int idle_rounds, bool in_step);

}  // namespace detail
}  // namespace parasim::mpi
