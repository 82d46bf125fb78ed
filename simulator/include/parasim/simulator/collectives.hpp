// How a collective is carried out on a cluster: the rank order, and the steps of device-to-device
// messages it decomposes into. The engine runs these steps as real link traffic (Expanded mode,
// contending with everything else) or charges their closed-form alpha-beta time (Analytic mode).
// Both modes use the same plan, so on an idle network they agree (to rounding).
//
// Algorithms (S = the collective's bytes, n ranks; a "step" sends one message per pair of its
// pattern, and the next step starts when every message of the step has arrived):
//   ring allreduce      2(n-1) steps, each rank sends S/n to its ring successor
//                       -> 2(n-1) alpha + 2(n-1)/n S/beta on a uniform ring
//   ring reduce_scatter / all_gather   n-1 steps of S/n
//   ring broadcast      a pipelined chain from rank 0 in m chunks: m+n-2 steps of S/m, with m
//                       (1..64) chosen to minimise the idle time
//   tree allreduce      binomial tree: ceil(log2 n) reduce steps towards rank 0, then
//                       ceil(log2 n) broadcast steps back, each sending all S
//   tree broadcast      the binomial broadcast half
//   hierarchical allreduce  (ranks on K >= 2 nodes, m per node) intra-node ring reduce_scatter
//                       (m-1 steps of S/m) -> m concurrent inter-node ring allreduces of S/m over
//                       the same local rank on every node (2(K-1) steps of S/(mK)) -> intra-node
//                       ring all_gather (m-1 steps of S/m)
//   hierarchical_tree   (K >= 2 nodes, m per node; what NCCL's tree does at scale) intra-node ring
//                       reduce_scatter -> per local rank, a pipelined binary tree over the K nodes
//                       (node j's parent is (j-1)/2, depth D = floor(log2 K)): C+D-1 reduce steps in
//                       which every child sends S/(mC) to its parent, then C+D-1 broadcast steps back,
//                       with C (1..64) chosen to minimise the idle time -> intra-node ring all_gather.
//                       Latency grows with log2 K instead of K; every tree edge is counted busy in
//                       every step (the pipeline's fill and drain are not trimmed).
//   all_to_all          one step: every rank sends S/n to every other rank at once
//   pat reduce_scatter / all_gather   (every rank on its own node, n >= 2: NCCL 2.23+'s Parallel
//                       Aggregated Trees, Jeaugey, arXiv 2506.20252) a Bruck all-gather with its
//                       dimensions reversed: L = ceil(log2 n) steps; step k sends 2^k blocks of S/n
//                       (the last n - 2^(L-1)) to the rank 2^(L-1-k) ahead, so the largest messages
//                       go to the nearest ranks; reduce_scatter runs the same steps in reverse order.
//                       n-1 blocks in all, as a ring, in log2 n steps instead of n-1
//   auto                the plan with the smallest idle-network time among the ones that apply
//                       (pat only under Nccl costs, which carry its latencies and bandwidth share)
// reduce_scatter and all_gather have rings and PAT (as in NCCL); tree/hierarchical fall back to ring.
//
// Rank order: the group's devices grouped by node (nodes in order of first appearance); within a
// node (up to 10 devices) the ring order maximises the slowest ring hop, then minimises total
// latency, keeping the group's order when it is already best - so a DGX-1 ring uses only NVLinks.
//
// Example:
//   CollectivePlanner planner(cluster);
//   std::vector<DeviceId> all{0, 1, 2, 3, 4, 5, 6, 7};
//   TimeNs t = planner.analytic_time(all, CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, 256 * MiB);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "parasim/hardware/cluster.hpp"
#include "parasim/simulator/task_graph.hpp"

namespace parasim::simulator {

enum class CollectiveMode : std::uint8_t { Expanded, Analytic };
std::string_view to_string(CollectiveMode m);  // "expanded", "analytic"
std::optional<CollectiveMode> parse_collective_mode(std::string_view s);  // nullopt otherwise

/// What a collective step costs beyond moving bytes over the links.
///   Links: each step costs its route latency plus bytes at the links' rate (pure alpha-beta).
///   Nccl:  NCCL's cost model (src/graph/tuning.cc): a base latency per algorithm and protocol,
///          a per-step latency per hardware class (NVLink, PCI, network), the protocol's share of
///          the bandwidth (LL 1/4, LL128 120/128, Simple 1), the payload share of the link rate
///          (NVLink 80-82% by GPU generation, InfiniBand 96%), several rings (channels) where the
///          links allow, the best protocol per message size, NVLink SHARP all-reduce on Hopper
///          NVSwitch nodes, and PAT reduce-scatter/all-gather with one GPU per node (NCCL 2.23+).
///          docs/fidelity.md gives every constant's source.
enum class CollectiveCosts : std::uint8_t { Links, Nccl };
std::string_view to_string(CollectiveCosts c);  // "links", "nccl"

/// NCCL's protocols, lowest latency first.
enum class CollectiveProtocol : std::uint8_t { LL, LL128, Simple };
std::string_view to_string(CollectiveProtocol p);  // "LL", "LL128", "Simple"

/// NCCL's hardware classes for per-step latency.
enum class HopClass : std::uint8_t { NVLink, PCI, Net };

/// The share of the NCCL model's bus bandwidth that NCCL reaches over NVLink for a collective of
/// `total` bytes (nccl-tests' size): 0.65-0.83 from 1 to 128 MiB, 1 from 1 GiB (collectives.cpp
/// names the measurement).
double nvlink_size_efficiency(Bytes total);

class RouteTable;

struct DevicePair {
  DeviceId src = 0;
  DeviceId dst = 0;
};

/// A run of `repeats` identical steps: every pair of `pattern` sends `blocks` x ceil(S / divisor)
/// bytes.
struct CollectivePhase {
  std::uint32_t pattern = 0;
  std::uint32_t repeats = 0;
  std::int64_t divisor = 1;
  HopClass hop = HopClass::NVLink;  // the slowest class its messages cross (Nccl costs)
  bool tree = false;                // a tree phase (NCCL's tree latencies and bandwidth)
  /// Nccl costs: how much faster NCCL's several rings (channels) move this ring phase than the one
  /// ring of the plan, >= 1 (CollectivePlanner::channel_gain); the engine stretches the ring's
  /// messages by 1 / channels, so expanded and analytic modes agree.
  double channels = 1.0;
  std::int64_t blocks = 1;  // blocks of S / divisor per message (PAT's steps forward several)
};

/// A collective's time under a cost model, and the protocol it used (Simple under Links).
struct CollectiveCost {
  TimeNs time = 0;
  CollectiveProtocol protocol = CollectiveProtocol::Simple;
  TimeNs net_time = 0;  // the part spent in network phases (Nccl costs)
  /// time with the intra-node part scaled by `intra` and the network part by `inter` (calibration).
  TimeNs scaled(double intra, double inter) const;
};

/// One message of a pattern on an idle network: its route latency and max-min fair rate.
struct IdleFlow {
  TimeNs latency = 0;
  double rate = 0;  // bytes per ns (= GB/s)
};

struct CollectivePlan {
  CollectiveOp op = CollectiveOp::AllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;  // resolved, never Auto
  std::vector<DeviceId> order;                                // rank order used
  std::vector<std::vector<DevicePair>> patterns;
  std::vector<std::vector<IdleFlow>> idle;                    // per pattern, per pair
  /// Per pattern: the pairs that stand for all (EngineOptions::symmetric_collectives), one per class
  /// of messages that cross the same kinds of links (kind, bandwidth, latency, hop by hop) at the
  /// same idle max-min rate - on an otherwise idle network they all take the same time.
  std::vector<std::vector<std::uint32_t>> representatives;
  std::vector<CollectivePhase> phases;
  bool nvls = false;      // NVLink SHARP all-reduce: one step, the switch reduces and multicasts
  bool multi_node = false;
  bool ll128 = false;     // NCCL enables LL128 by default only on NVLink systems
  /// Payload share of the NVLink rate NCCL reaches on the group's GPUs (Nccl costs): by generation,
  /// the lowest over the group (collectives.cpp names the sources).
  double nvlink_payload = 0.80;

  static Bytes flow_bytes(const CollectivePhase& p, Bytes total) {
    return (total + p.divisor - 1) / p.divisor * p.blocks;
  }
  std::int64_t steps() const;
  /// Closed-form time on an idle network: sum over phases of repeats x the slowest message
  /// (Links costs).
  TimeNs analytic_time(Bytes total) const;
  /// Closed-form time under `costs`; Nccl picks the fastest protocol for `total`.
  CollectiveCost cost(Bytes total, CollectiveCosts costs) const;
  CollectiveCost cost(Bytes total, CollectiveCosts costs, CollectiveProtocol protocol) const;
  /// Nccl costs: latency once per collective, latency of one step of `phase`, and the fraction of
  /// the link rate the protocol's payload gets on that phase.
  TimeNs base_latency(CollectiveProtocol protocol) const;
  TimeNs step_latency(const CollectivePhase& phase, CollectiveProtocol protocol) const;
  double bandwidth_factor(const CollectivePhase& phase, CollectiveProtocol protocol) const;
  /// The measured share of the model's rate that NCCL reaches in `phase` for a collective of
  /// `total` bytes: nvlink_size_efficiency() on NVLink hops, 1 elsewhere. Steps (latency and
  /// bytes) stretch by its inverse, and so does the base latency when every phase is on NVLink.
  double size_efficiency(const CollectivePhase& phase, Bytes total) const;
  /// base_latency(), stretched like the steps when every phase is on NVLink (as in the
  /// measurement the share comes from).
  double stretched_base_latency(CollectiveProtocol protocol, Bytes total) const;
  bool protocol_enabled(CollectiveProtocol protocol) const;
};

/// One number of the NCCL cost model (CollectiveCosts::Nccl) with its source, for `parasim
/// clusters show`: algorithms and where they apply, latencies, bandwidth shares.
struct CollectiveModelFigure {
  std::string quantity;
  std::string value;
  std::string source;
};
std::vector<CollectiveModelFigure> nccl_model_figures();

/// The channels (so SMs, one CTA each) NCCL runs one collective on, given the communicator's
/// `channels` and `nvls_channels`: NVLS always its own; ring and tree all of them for large
/// messages and fewer for small ones, as NCCL's topoGetAlgoInfo (src/enqueue.cc) drops channels
/// while bytes < channels x threads x bytes per thread (threads: 512 for Simple and LL, 640 for
/// LL128; bytes per thread: 64 Simple, 8 LL128, 8 LL, times the ranks for LL on a ring). At least
/// 1 unless `channels` is 0. A hierarchical plan counts as a ring, hierarchical_tree as a tree.
int nccl_collective_channels(int channels, int nvls_channels, Bytes bytes, CollectiveAlgorithm algorithm,
                             CollectiveProtocol protocol, int ranks);

/// What a collective task costs the engine: its plan (Auto resolved to the applicable one with the
/// smallest closed-form time), that time under a cost model and calibration, and the protocol.
struct CollectiveChoice {
  const CollectivePlan* plan = nullptr;
  TimeNs time = 0;
  CollectiveProtocol protocol = CollectiveProtocol::Simple;
};

class CollectivePlanner {
 public:
  explicit CollectivePlanner(const hardware::Cluster& cluster);
  ~CollectivePlanner();
  CollectivePlanner(const CollectivePlanner&) = delete;
  CollectivePlanner& operator=(const CollectivePlanner&) = delete;

  /// The plan for `group` (devices must exist in the cluster, no duplicates). `bytes` matters
  /// for Auto and for the broadcast chunk count.
  CollectivePlan plan(std::span<const DeviceId> group, CollectiveOp op, CollectiveAlgorithm algo, Bytes bytes);
  TimeNs analytic_time(std::span<const DeviceId> group, CollectiveOp op, CollectiveAlgorithm algo, Bytes bytes);
  std::vector<DeviceId> ring_order(std::span<const DeviceId> group);

  /// plan(), memoised: the same group, op and algorithm (and bytes, for broadcasts and Auto, whose
  /// plans depend on them) give the same plan object, valid until trim() drops it. A planner kept
  /// across Engine runs (EngineOptions::planner) plans each DP/TP group once for many task graphs.
  const CollectivePlan& cached_plan(std::span<const DeviceId> group, CollectiveOp op, CollectiveAlgorithm algo,
                                    Bytes bytes);
  /// plan.analytic_time(bytes) of a cached_plan(), memoised the same way (until trim()).
  TimeNs cached_time(const CollectivePlan& plan, Bytes bytes);
  /// plan.cost(bytes, costs), memoised the same way.
  CollectiveCost cached_cost(const CollectivePlan& plan, Bytes bytes, CollectiveCosts costs);
  /// The plan and closed-form time the engine charges for a collective of `group` (cached_plan and
  /// cached_cost of the algorithm asked, or of each applicable one for Auto - NVLS only under Nccl
  /// costs - the first fastest winning), its time scaled by `intra_scale`/`inter_scale`
  /// (CollectiveCost::scaled); memoised per (group, op, algo, bytes, costs, scales) until trim(),
  /// so that a planner kept across runs resolves each distinct collective once.
  const CollectiveChoice& cached_choice(std::span<const DeviceId> group, CollectiveOp op, CollectiveAlgorithm algo,
                                        Bytes bytes, CollectiveCosts costs, double intra_scale, double inter_scale);
  /// Forgets memoised plans, ring orders and routes once they hold more than about `max_bytes`
  /// (they are recomputed on demand, identically). Invalidates cached_plan() references.
  void trim(std::size_t max_bytes);
  /// About how many bytes the memoised plans, ring orders and routes hold.
  std::size_t memo_bytes() const;

  const hardware::Cluster& cluster() const { return cluster_; }
  RouteTable& routes() { return *routes_; }

 private:
  CollectivePlan plan_fixed(const std::vector<DeviceId>& order, CollectiveOp op, CollectiveAlgorithm algo, Bytes bytes);
  void add_idle_stats(CollectivePlan& p);
  struct PatternStats;
  // A pattern's idle latencies and rates, representatives and hop class, memoised by its pairs.
  const PatternStats& pattern_stats(const std::vector<DevicePair>& pattern);
  bool route_follows_relabelling(DeviceId src, DeviceId dst);
  std::vector<DeviceId> segment_ring(const std::vector<DeviceId>& seg);
  void hierarchical_tree(CollectivePlan& p, const std::vector<std::pair<std::size_t, std::size_t>>& segs, Bytes bytes);
  const CollectivePlan& cached_tree_plan(std::span<const DeviceId> group, Bytes bytes);
  std::vector<std::uint32_t> representatives(std::span<const std::span<const hardware::DirLinkId>> flows,
                                             std::span<const double> rates) const;
  double channel_gain(const CollectivePlan& p, const std::vector<DevicePair>& pattern, std::span<const IdleFlow> idle,
                      std::span<const HopClass> own_classes, HopClass hop);
  bool nvls_capable(const std::vector<DeviceId>& order);
  bool pat_capable(const std::vector<DeviceId>& order) const;

  const hardware::Cluster& cluster_;
  std::unique_ptr<RouteTable> routes_;
  std::vector<std::vector<std::pair<DeviceId, double>>> nvlink_peers_;  // direct GPU-GPU NVLinks, GB/s
  struct RingCache;
  std::unique_ptr<RingCache> ring_cache_;
  struct PlanMemo;
  std::unique_ptr<PlanMemo> memo_;
  // Identical nodes, no built fabric: any relabelling of the nodes maps the cluster onto itself.
  bool relabel_nodes_ = false;
};

}  // namespace parasim::simulator
