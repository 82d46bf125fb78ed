// What one rank of the CUDA-over-MPI runtime issues, as data (no CUDA, no MPI: testable here).
//
// nccl_program() turns the issue plan every rank computes (executor/issue_plan.hpp) into rank
// r's calls, in plan order. Each call carries `position`, the index of the plan command it comes
// from, so the calls of all ranks are restrictions of one global order:
//   * a transfer between ranks is an ncclSend on the source's stream and, at the same position,
//     an ncclRecv on the destination's receive stream (one extra stream per rank), followed by
//     an arrival event;
//   * an event that a stream of another rank waits for (cross-rank dependency) is a 1-byte
//     ncclSend on the recording stream right after the event, and at the same position a 1-byte
//     ncclRecv on the waiter's receive stream plus an arrival event the waiting stream waits for.
//     Not a host-side MPI message: the wait stays stream-ordered and the host never blocks.
//     When the event follows a transfer into the waiter, that transfer's arrival is the signal.
//   * a collective is the NCCL collective on the communicator of its (device group, stream), at
//     its launch position on every member (all-to-all: grouped send/recv);
//   * every NCCL call of a rank waits for the rank's previous NCCL call (`after_stream`, when it
//     ran on another stream): a GPU runs its NCCL calls one at a time, in position order.
// Why that cannot deadlock: matched calls (a send and its receive, a collective's members) share
// one position; a call waits only for calls and events at earlier or equal positions; so the
// lowest unfinished position can always complete. check_nccl_programs() verifies the matching.
//
// Example:
//   const executor::IssuePlan plan = executor::plan_issue(graph);
//   mpi::NcclProgram p = mpi::nccl_program(graph, plan, world.rank());
//   for (const mpi::NcclCall& c : p.calls) std::cout << mpi::to_string(c) << "\n";
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parasim/common/units.hpp"
#include "parasim/executor/issue_plan.hpp"
#include "parasim/simulator/task_graph.hpp"

namespace parasim::mpi {

enum class NcclCallKind : std::uint8_t {
  WaitEvent,    // `stream` waits for plan event `event`, recorded on this rank
  WaitArrival,  // `stream` waits for the arrival event of plan event `event` of rank `peer`
  RecordEvent,  // plan event `event` on `stream`
  Compute,      // task on `stream`
  Copy,         // a transfer within this rank's device (cudaMemcpyAsync on `stream`)
  Send,         // ncclSend of transfer `task` to `peer` on `stream`
  Recv,         // ncclRecv of transfer `task` from `peer` on the receive stream, then its arrival
  SignalSend,   // 1-byte ncclSend to `peer` after `event`, on `stream`
  SignalRecv,   // 1-byte ncclRecv from `peer` on the receive stream, then `event`'s arrival
  Collective,   // task on communicator `comm`, on `stream`
};

/// The stream every rank receives on, besides the graph's streams.
constexpr int kReceiveStream = -1;
constexpr int kNoStream = -2;

struct NcclCall {
  NcclCallKind kind = NcclCallKind::Compute;
  int position = 0;  // index of the plan command it comes from
  int stream = 0;    // this rank's stream (0 .. streams_per_device - 1) or kReceiveStream
  simulator::TaskId task = simulator::kNoTask;
  executor::EventId event = -1;
  int peer = -1;                 // rank on the other side (Send, Recv, Signal*, WaitArrival)
  Bytes bytes = 0;               // Send, Recv, Collective; 1 for signals
  int comm = -1;                 // Collective: index into NcclProgram::comms
  int after_stream = kNoStream;  // NCCL calls: the stream of this rank's previous NCCL call, if another

  bool is_nccl() const;
  bool operator==(const NcclCall&) const = default;
};

/// One NCCL communicator: a device group (ranks, NCCL rank = position) on one stream.
struct NcclCommKey {
  std::vector<int> members;
  int stream = 0;
  /// The rank that calls ncclGetUniqueId and broadcasts it: the lowest member.
  int root() const { return members.front(); }
  auto operator<=>(const NcclCommKey&) const = default;
};

struct NcclProgram {
  int rank = 0;
  int streams_per_device = 0;
  std::vector<NcclCall> calls;     // in position order
  std::vector<NcclCommKey> comms;  // every collective communicator of the job (same list on every rank)
  std::vector<int> member_of;      // indices into comms of those this rank belongs to, ascending
  bool p2p = false;                // this rank sends or receives
  bool job_p2p = false;            // some rank does: every rank joins the job-wide p2p communicator
};

/// The collective communicators of `graph`: one per distinct (group members, stream), sorted.
std::vector<NcclCommKey> nccl_communicators(const simulator::TaskGraph& graph);

/// Rank `rank`'s calls for one step of `plan` (see the top of this file).
NcclProgram nccl_program(const simulator::TaskGraph& graph, const executor::IssuePlan& plan, int rank);

/// "12 s1 Send t5 ->1 4096B after s-1" (position, stream, kind, task/event, peer, bytes).
std::string to_string(const NcclCall& call);

/// The CUDA device a rank drives: its launcher local rank among `visible` GPUs, or GPU 0 when it
/// sees exactly one (srun --gpus-per-task=1 shows each task only its own). -1: none fits.
int rank_cuda_device(int local_rank, int visible);

/// RuntimeError naming the first problem unless, across the programs of every rank: each send
/// has its receive on the peer, in the same order, at the same position, with the same bytes;
/// every member of a communicator issues the same collectives in the same order; each rank's
/// NCCL calls are in position order and chained (after_stream).
void check_nccl_programs(const std::vector<NcclProgram>& ranks);

}  // namespace parasim::mpi
