// The MPI job parasim runs in: one process per device (mpirun -np N, srun), its rank, its host,
// and the few collectives parasim needs, each with a deadline.
//
// Every call that waits on other ranks is non-blocking MPI plus a test loop with a deadline
// (MPI_Ibcast / MPI_Iallgatherv / MPI_Ibarrier + MPI_Test), and a heartbeat thread hears from
// every other rank every 250 ms: a rank silent for heartbeat_timeout (10 s) is reported dead by
// every surviving rank ("rank 0: rank 2 sent no heartbeat for 10 s: it died or hangs"), which
// then ends the job with MPI_Abort, so a dead rank never leaves the others hanging. A wait that
// passes its own deadline while every peer is alive names the ranks it waited for.
//
// Built without MPI (-DPARASIM_MPI=OFF) or started without a launcher, World::current() is null
// and every command runs in one process as before.
//
// Example (the CLI's main):
//   if (mpi::launched_by_mpi()) mpi::World::init(argc, argv);     // reads OMPI_/PMIX_/PMI_ variables
//   if (mpi::World* w = mpi::World::current(); w && w->size() > 1) {
//     std::string doc = w->broadcast(w->rank() == 0 ? "hello" : "", 0, "the greeting");
//     std::vector<std::string> all = w->allgather(std::to_string(w->rank()), "rank numbers");
//   }
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace parasim::mpi {

/// True when this parasim was built with MPI (PARASIM_MPI=ON).
bool built_with_mpi();

/// True when a launcher started this process as an MPI rank: Open MPI (OMPI_COMM_WORLD_SIZE),
/// PMIx (PMIX_RANK, as srun --mpi=pmix sets) or PMI (PMI_RANK).
bool launched_by_mpi();

/// The node-local rank the launcher gave this process: OMPI_COMM_WORLD_LOCAL_RANK, else
/// PMIX_LOCAL_RANK, else SLURM_LOCALID, else -1. Selects the process's device.
int launcher_local_rank();

/// Where a rank runs.
struct RankPlace {
  int rank = 0;
  std::string host;
  int local_rank = 0;  // launcher_local_rank(), or the rank's index among its host's ranks
  int pid = 0;
};

struct Timeouts {
  std::chrono::milliseconds call{20'000};       // a collective among ranks that are all working
  std::chrono::milliseconds heartbeat{10'000};  // silence after which a rank counts as dead
};

class World {
 public:
  /// MPI_Init_thread (MPI_THREAD_MULTIPLE: the heartbeat thread calls MPI beside the main
  /// thread), errors returned rather than fatal, the layout exchanged, the heartbeat started.
  /// RuntimeError when parasim was built without MPI. At most once per process.
  static World& init(int& argc, char**& argv, Timeouts timeouts = {});
  /// The initialised world, or nullptr.
  static World* current();
  /// MPI_Finalize after a last barrier (the CLI's main calls it on the way out).
  static void finalize();

  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }
  const std::vector<RankPlace>& places() const { return places_; }
  const RankPlace& place() const { return places_[static_cast<std::size_t>(rank_)]; }
  /// Distinct hosts in order of their first rank, and each rank's host index.
  std::vector<std::string> hosts() const;
  std::vector<int> host_of_rank() const;
  const Timeouts& timeouts() const { return timeouts_; }

  /// `bytes` of rank `root` on every rank. `what` names the wait in a timeout message;
  /// `timeout` 0: timeouts().call.
  std::string broadcast(std::string bytes, int root, std::string_view what,
                        std::chrono::milliseconds timeout = std::chrono::milliseconds{0});
  /// Every rank's `bytes`, by rank, on every rank.
  std::vector<std::string> allgather(const std::string& bytes, std::string_view what,
                                     std::chrono::milliseconds timeout = std::chrono::milliseconds{0});
  void barrier(std::string_view what, std::chrono::milliseconds timeout = std::chrono::milliseconds{0});

  /// Prints "parasim: rank R: <message>" on stderr, gives the other ranks a moment to print
  /// theirs, then MPI_Abort(code): every rank of the job ends.
  [[noreturn]] void abort(const std::string& message, int code);

  /// The rank a heartbeat found dead, or -1.
  int dead_rank() const;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  World() = default;
  int rank_ = 0;
  int size_ = 1;
  std::vector<RankPlace> places_;
  Timeouts timeouts_;
  std::unique_ptr<Impl> impl_;
};

/// An error every rank raises together, after agreeing on it (a bad request, graphs that differ
/// between ranks): each rank prints it and ends with exit `code` after MPI_Finalize, not abort.
class AgreedError : public std::runtime_error {
 public:
  AgreedError(const std::string& message, int code) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

/// 64-bit FNV-1a of `bytes` (the task-graph check across ranks).
std::uint64_t fnv1a(std::string_view bytes);

}  // namespace parasim::mpi
