// A short probe of the links between ranks, for the cluster the projection uses.
//
// Pairs: not every pair of ranks (N^2 probes), but one representative pair per class: within
// each host that has two or more ranks (its first two ranks), and between each pair of hosts
// (their first ranks); beyond kMaxHostsAllPairs hosts, only host 0 with every other host (the
// probe says so in `notes`). Each pair: ping-pong (half the round trip per size) while the other
// ranks wait; then an all-reduce over every rank. Each point is the median of a few repetitions
// after a warm-up, fitted with profiler::fit_alpha_beta. Over MPI (CPU backend) or NCCL
// send/recv and ncclAllReduce between the ranks' GPUs (CUDA backend, CUDA builds only).
// Every rank calls it; every rank gets the same numbers (each pair's first rank measures, the
// results are shared).
//
// cluster_from_ranks() turns the ranks' layout and the measured pairs into the projection's
// cluster: per host a hub joining its devices, the hubs joined by one network endpoint.
//
// Example:
//   mpi::RankLinkProbe p = mpi::probe_rank_links(world, {});
//   // p.pairs[k].fit.alpha_ns, .beta_gbps: one message between p.pairs[k].a and .b
//   hardware::ClusterSpec c = mpi::cluster_from_ranks(p, world.host_of_rank(), "H100-SXM5-80GB", 80 * GiB);
#pragma once

#include <string>
#include <vector>

#include "parasim/common/units.hpp"
#include "parasim/hardware/cluster.hpp"
#include "parasim/mpi/world.hpp"
#include "parasim/profiler/alpha_beta.hpp"

namespace parasim::mpi {

enum class ProbeTransport { Mpi, Nccl };

struct RankLinkProbeOptions {
  std::vector<Bytes> sizes = {4 * KiB, 64 * KiB, 512 * KiB, 2 * MiB, 8 * MiB};
  int warmup = 2;
  int repetitions = 7;
  ProbeTransport transport = ProbeTransport::Mpi;
};

/// Every host pair is probed up to this many hosts; beyond, host 0 with each other host.
inline constexpr int kMaxHostsAllPairs = 8;

/// One probed pair of ranks, standing for every pair of its class.
struct ProbePair {
  int a = 0, b = 0;            // ranks, a < b
  int host_a = 0, host_b = 0;  // their hosts (indices into World::hosts())
  bool same_host() const { return host_a == host_b; }
  bool operator==(const ProbePair&) const = default;
};

struct ProbedPair {
  ProbePair pair;
  std::vector<profiler::SizeTime> points;  // one way
  profiler::AlphaBetaSegment fit;
};

struct RankLinkProbe {
  ProbeTransport transport = ProbeTransport::Mpi;
  std::vector<int> host_of_rank;
  std::vector<ProbedPair> pairs;
  std::vector<profiler::SizeTime> pingpong;  // the first pair (ranks 0 and 1 when it is a class)
  profiler::AlphaBetaSegment pingpong_fit;
  std::vector<profiler::SizeTime> allreduce;  // over every rank
  profiler::AlphaBetaSegment allreduce_fit;
  std::vector<std::string> notes;
};

/// The representative pairs for ranks on hosts `host_of_rank` (host indices numbered in order
/// of first rank, as World::host_of_rank()): per host with >= 2 ranks its first two ranks, then
/// per host pair (h, k), h < k, their first ranks (host 0 with each other host only, beyond
/// kMaxHostsAllPairs hosts). Sets `limited` when it left host pairs out.
std::vector<ProbePair> probe_pairs(const std::vector<int>& host_of_rank, bool* limited = nullptr);

/// Needs at least two ranks (InputError otherwise).
RankLinkProbe probe_rank_links(World& world, const RankLinkProbeOptions& options = {});

/// The cluster of the ranks: device r = rank r on node host_of_rank[r], `device_kind` and
/// `memory` each. Within a host: device <-> host hub links with half the intra-host pairs'
/// median alpha and their median bandwidth; between hosts: hub <-> network links carrying the
/// rest of the inter-host pairs' median alpha and their median bandwidth. A host class that was
/// not measured (one rank per host: no intra-host pair) takes the other class's numbers, said
/// in the description. InputError without any probed pair.
hardware::ClusterSpec cluster_from_ranks(const RankLinkProbe& probe, const std::string& device_kind, Bytes memory,
                                         const std::string& name = "mpi-ranks");

}  // namespace parasim::mpi
