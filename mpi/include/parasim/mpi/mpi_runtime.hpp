// The executor over MPI: one rank per device, each running its device's share of the task graph.
//
// CPU backend (make_mpi_cpu_runtime): rank r is device r. One thread per rank runs the issue
// program of its device's streams (the same plan_issue() program every rank computes):
//   * compute tasks run the op's oneDNN kernels inline, one at a time;
//   * a transfer is MPI_Isend on the source rank into an MPI_Irecv the destination posted when
//     the step began (one tag per source stream: MPI's non-overtaking order matches them);
//   * a collective is the non-blocking MPI collective (MPI_Iallreduce, MPI_Ireduce_scatter_block,
//     MPI_Iallgather, MPI_Ibcast, MPI_Ialltoall) on one communicator per (device group, stream);
//   * an event another rank waits for is a zero-byte message sent when it is recorded; the
//     waiting stream also waits for the transfers from that stream the event covers.
// Communication is non-blocking and polled between kernels, so it progresses while no kernel
// runs (notes() says so). Every step begins at a barrier; times are ns since each rank left it.
// finish_step() gathers every rank's times, so every rank holds the whole timeline: a transfer
// runs from its Isend on the source to the completion of its receive on the destination, a
// collective from the last member's call to the last member's completion.
// Every wait has the world's deadline (World::timeouts().call); a step that stops progressing
// names the ranks it waits for.
//
// CUDA backend (make_mpi_nccl_runtime, built with MPI and CUDA): rank r drives the GPU given by
// its launcher's local rank (rank_cuda_device()) and issues the NCCL program nccl_program()
// computes from the same plan (nccl_program.hpp): ncclSend/ncclRecv for transfers, 1-byte NCCL
// messages for cross-rank events, NCCL collectives on one communicator per (group, stream), whose
// ncclUniqueId the group's lowest rank makes; cudaEvent task times, gathered as above.
//
// Example (validate does this on every rank, with rank 0's graph):
//   mpi::World& world = *mpi::World::current();
//   auto rt = mpi::make_mpi_cpu_runtime(world, executor::ops_of_model(model), {});
//   executor::ExecutionResult r = executor::run_steps(graph, *rt, {.warmup = 2, .repetitions = 5});
#pragma once

#include <memory>

#include "parasim/executor/cpu_runtime.hpp"
#include "parasim/executor/stream_runtime.hpp"
#include "parasim/mpi/world.hpp"
#include "parasim/profiler/cost_model.hpp"

namespace parasim::mpi {

struct MpiRuntimeOptions {
  profiler::Optimizer optimizer = profiler::Optimizer::Sgd;
  /// The rank's thread while it runs a step (CpuRuntimeOptions::Priority; best effort).
  executor::CpuRuntimeOptions::Priority priority = executor::CpuRuntimeOptions::Priority::Default;
};

/// RuntimeError when parasim was built without MPI. setup() throws InputError when the graph's
/// device count is not the world's size.
std::unique_ptr<executor::StreamRuntime> make_mpi_cpu_runtime(World& world, executor::OpResolver ops,
                                                              const MpiRuntimeOptions& options = {});

/// True when this build has the NCCL-over-MPI runtime (MPI and CUDA both built).
bool nccl_runtime_built();

/// The CUDA runtime of one rank: the GPU rank_cuda_device() picks on its host, NCCL send/recv
/// for transfers and NCCL collectives, communicators bootstrapped with ncclUniqueIds shared over
/// MPI. RuntimeError without CUDA (at once) or without a GPU for the rank (setup()).
std::unique_ptr<executor::StreamRuntime> make_mpi_nccl_runtime(World& world, executor::OpResolver ops,
                                                               const MpiRuntimeOptions& options = {});

}  // namespace parasim::mpi
