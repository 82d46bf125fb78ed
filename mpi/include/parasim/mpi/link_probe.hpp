// A short probe of the links between ranks, for the cluster the projection uses: MPI ping-pong
// between rank 0 and rank 1 (half the round trip per size) and MPI_Allreduce over every rank,
// each the median of a few repetitions after a warm-up, fitted with profiler::fit_alpha_beta.
// Every rank calls it; every rank gets the same numbers (rank 0's measurement, broadcast).
//
// Example:
//   mpi::RankLinkProbe p = mpi::probe_rank_links(world, {});
//   // p.pingpong_fit.alpha_ns, p.pingpong_fit.beta_gbps: one message between two ranks
#pragma once

#include <vector>

#include "parasim/common/units.hpp"
#include "parasim/mpi/world.hpp"
#include "parasim/profiler/alpha_beta.hpp"

namespace parasim::mpi {

struct RankLinkProbeOptions {
  std::vector<Bytes> sizes = {4 * KiB, 64 * KiB, 512 * KiB, 2 * MiB, 8 * MiB};
  int warmup = 2;
  int repetitions = 7;
};

struct RankLinkProbe {
  std::vector<profiler::SizeTime> pingpong;  // rank 0 <-> rank 1, one way
  profiler::AlphaBetaSegment pingpong_fit;
  std::vector<profiler::SizeTime> allreduce;  // over every rank
  profiler::AlphaBetaSegment allreduce_fit;
};

/// Needs at least two ranks (InputError otherwise).
RankLinkProbe probe_rank_links(World& world, const RankLinkProbeOptions& options = {});

}  // namespace parasim::mpi
