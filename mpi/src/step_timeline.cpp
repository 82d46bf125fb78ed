// The step records the MPI runtimes share (see step_timeline.hpp).
#include "step_timeline.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>

#include "mpi_check.hpp"
#include "parasim/common/index.hpp"
#include "world_impl.hpp"

namespace parasim::mpi::detail {

using simulator::TaskGraph;
using simulator::TaskId;
using simulator::TaskKind;
using simulator::TaskTiming;

namespace {
constexpr int kClockTag = 15;
}

TimeNs now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// This rank's clock minus rank 0's, NTP-style: the round trip with rank 0 of least duration
// out of 16, assuming its two halves took equally long, for ranks on other hosts than rank 0.
TimeNs clock_offset(World& world) {
  const MPI_Comm comm = world_comm(world);
  const int me = world.rank();
  TimeNs mine = 0;
  const auto deadline = [&] { return Clock::now() + world.timeouts().call; };
  std::vector<MPI_Request> req(1, MPI_REQUEST_NULL);
  long long stamp = 0, offset = 0;
  for (int r = 1; r < world.size(); ++r) {
    if (me != 0 && me != r) continue;
    // One host has one monotonic clock (steady_clock): nothing to correct.
    if (world.places()[ix(r)].host == world.places()[0].host) continue;
    TimeNs best = INT64_MAX;
    for (int k = 0; k < 16; ++k) {
      if (me == 0) {
        const TimeNs sent = now_ns();
        PARASIM_MPI_CHECK(MPI_Isend(&stamp, 1, MPI_LONG_LONG, r, kClockTag, comm, &req[0]));
        wait_all(world, req, deadline(), "the clock probe", {r});
        PARASIM_MPI_CHECK(MPI_Irecv(&stamp, 1, MPI_LONG_LONG, r, kClockTag, comm, &req[0]));
        wait_all(world, req, deadline(), "the clock probe", {r});
        const TimeNs back = now_ns();
        if (back - sent < best) {
          best = back - sent;
          offset = stamp - (sent + back) / 2;
        }
      } else {
        PARASIM_MPI_CHECK(MPI_Irecv(&stamp, 1, MPI_LONG_LONG, 0, kClockTag, comm, &req[0]));
        wait_all(world, req, deadline(), "the clock probe", {0});
        stamp = now_ns();
        PARASIM_MPI_CHECK(MPI_Isend(&stamp, 1, MPI_LONG_LONG, 0, kClockTag, comm, &req[0]));
        wait_all(world, req, deadline(), "the clock probe", {0});
      }
    }
    PARASIM_MPI_CHECK(me == 0 ? MPI_Isend(&offset, 1, MPI_LONG_LONG, r, kClockTag, comm, &req[0])
                              : MPI_Irecv(&offset, 1, MPI_LONG_LONG, 0, kClockTag, comm, &req[0]));
    wait_all(world, req, deadline(), "the clock probe", {me == 0 ? r : 0});
    if (me == r) mine = offset;
  }
  return mine;
}

// Every rank's times on rank 0's clock, relative to the first rank leaving the step's
// barrier. The first record of each rank's share carries its barrier exit.
void gather_timeline(World& world, const TaskGraph& g, const std::vector<Record>& records, TimeNs t0, TimeNs offset,
                     int step, std::vector<TaskTiming>& timeline) {
  std::vector<Record> share;
  share.push_back({simulator::kNoTask, Role::Compute, t0 - offset, 0});
  for (Record r : records) {
    if (r.start >= 0) r.start -= offset;
    if (r.end >= 0) r.end -= offset;
    share.push_back(r);
  }
  std::string mine(share.size() * sizeof(Record), '\0');
  std::memcpy(mine.data(), share.data(), mine.size());
  const auto all = world.allgather(mine, "the timings of step " + std::to_string(step));
  std::vector<TimeNs> start(g.size(), -1), end(g.size(), -1);
  std::vector<std::vector<Record>> shares;
  TimeNs base = INT64_MAX;
  for (const std::string& bytes : all) {
    std::vector<Record> recs(bytes.size() / sizeof(Record));
    if (!recs.empty()) std::memcpy(recs.data(), bytes.data(), recs.size() * sizeof(Record));
    if (!recs.empty()) base = std::min(base, recs.front().start);
    shares.push_back(std::move(recs));
  }
  for (std::vector<Record>& recs : shares) {
    for (std::size_t k = 1; k < recs.size(); ++k) {
      Record r = recs[k];
      if (r.start >= 0) r.start -= base;
      r.end -= base;
      const std::size_t t = ix(r.task);
      switch (r.role) {
        case Role::Compute: start[t] = r.start, end[t] = r.end; break;
        case Role::TransferSent:
          start[t] = r.start;
          end[t] = std::max(end[t], r.end);  // a copy within one device ends here
          break;
        case Role::TransferReceived: end[t] = std::max(end[t], r.end); break;
        case Role::CollectiveMember:
          start[t] = std::max(start[t], r.start);
          end[t] = std::max(end[t], r.end);
          break;
      }
    }
  }
  for (std::size_t t = 0; t < g.size(); ++t) {
    if (g.kind(static_cast<TaskId>(t)) == TaskKind::Marker || start[t] < 0) continue;
    timeline[t] = {start[t], std::max(end[t], start[t])};
  }
}

}  // namespace parasim::mpi::detail
