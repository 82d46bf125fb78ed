// Collective plans: rank order, per-algorithm step patterns, idle-network (analytic) times.
#include "parasim/simulator/collectives.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <unordered_map>
#include <tuple>

#include "parasim/common/error.hpp"
#include "parasim/hardware/device_spec.hpp"
#include "max_min.hpp"
#include "route_table.hpp"

namespace parasim::simulator {

std::string_view to_string(CollectiveMode m) { return m == CollectiveMode::Analytic ? "analytic" : "expanded"; }

std::optional<CollectiveMode> parse_collective_mode(std::string_view s) {
  if (s == "expanded") return CollectiveMode::Expanded;
  if (s == "analytic") return CollectiveMode::Analytic;
  return std::nullopt;
}

std::string_view to_string(CollectiveCosts c) { return c == CollectiveCosts::Nccl ? "nccl" : "links"; }

int nccl_collective_channels(int channels, int nvls_channels, Bytes bytes, CollectiveAlgorithm algorithm,
                             CollectiveProtocol protocol, int ranks) {
  if (algorithm == CollectiveAlgorithm::Nvls) return nvls_channels;
  if (channels <= 0) return 0;
  // NCCL's tree (what hierarchical_tree runs across nodes) keeps LL's threshold per thread; its
  // ring multiplies it by the ranks.
  const bool tree = algorithm == CollectiveAlgorithm::Tree || algorithm == CollectiveAlgorithm::HierarchicalTree;
  std::int64_t per_channel = 0;  // threads x bytes per thread
  switch (protocol) {
    case CollectiveProtocol::Simple: per_channel = 512 * 64; break;
    case CollectiveProtocol::LL128: per_channel = 640 * 8; break;
    case CollectiveProtocol::LL: per_channel = 512 * 8 * (tree ? 1 : std::max(1, ranks)); break;
  }
  const std::int64_t fit = bytes / per_channel;  // the most channels that each get their share
  return static_cast<int>(std::clamp<std::int64_t>(fit, 1, channels));
}

std::string_view to_string(CollectiveProtocol p) {
  switch (p) {
    case CollectiveProtocol::LL: return "LL";
    case CollectiveProtocol::LL128: return "LL128";
    case CollectiveProtocol::Simple: return "Simple";
  }
  return "?";
}

namespace {

// NCCL's latency model (src/graph/tuning.cc, NCCL 2.x): base latency per algorithm and protocol,
// and per-step latency per hardware class, in microseconds. Rows: tree, ring; columns: LL, LL128,
// Simple. NVLink SHARP (NVLS) from the same file's later versions: 25 us per collective.
constexpr double kBaseLatUs[2][3] = {{4.4, 4.4, 0.0}, {3.6, 10.0, 8.4}};
constexpr double kHwLatUs[3][2][3] = {
    {{0.52, 1.2, 28.0}, {0.47, 1.9, 3.4}},  // NVLink
    {{1.0, 1.9, 28.0}, {1.0, 2.5, 5.7}},    // PCI
    {{5.0, 8.5, 50.0}, {2.7, 4.0, 9.6}},    // network
};
constexpr double kNvlsLatUs = 25.0;
// PAT (reduce-scatter and all-gather with one GPU per node, Simple protocol only; NCCL 2.23 and
// later, src/graph/tuning.cc): base latency 8 us, log2(nodes) network steps of interLat / 3.5 -
// interLat being the tree's Simple network latency with one rank per node, 14 us - and "still a
// linear part" of 2.8 us per rank; its bus bandwidth is the rings' x 0.75.
constexpr double kPatBaseLatUs = 8.0;
constexpr double kPatStepLatUs = 14.0 / 3.5;
constexpr double kPatPerRankUs = 2.8;
constexpr double kPatBandwidthShare = 0.75;
// Payload share of the link rate. NVLink, by GPU generation, is NCCL's own effective bandwidth
// per NVLink of 25 GB/s line rate (src/graph/topo.h: SM70_NVLINK_BW 20.0, SM80_NVLINK_BW 20.0,
// SM90_NVLINK_BW 20.6; "~20GB/s effective bandwidth with a 128B payload size", NCCL maintainer in
// NVIDIA/nccl-tests#149). On A100 the reductions stop below that: "The total effective bandwidth
// should therefore be 240GB/s on A100, but some other bottlenecks on the GPUs limits it to
// ~230GB/s" (same thread, about all_reduce). H100: "450GB/s is the line rate; with the protocol
// overhead (~20%) NCCL can get an effective NVLink bandwidth of 370GB/s" (nccl-tests#212).
// InfiniBand reaches 96% (nccl-tests#119: 96 of 100 GB/s). PCIe links in the presets already
// carry the rate copies reach.
constexpr double kNvlinkPayload = 20.0 / 25.0;
constexpr double kNvlinkPayloadHopper = 20.6 / 25.0;
constexpr double kAmpereReductionShare = 230.0 / 240.0;
constexpr double kNetPayload = 0.96;
// NVLS all-reduce on 8 H100s peaks at algbw ~275 GB/s over 450 GB/s NVLink4 ports (nccl-tests#212).
constexpr double kNvlsAlgbwFraction = 275.0 / 450.0;

TimeNs us(double v) { return static_cast<TimeNs>(std::llround(v * 1000.0)); }

// What NCCL reaches over NVLink by message size, as a fraction of the bus bandwidth the model
// above gives at that size: nccl-tests all_reduce, in place, 8x A100-SXM4-80GB on NVSwitch (Azure
// ND A100 v4, NCCL 2.18.5; Azure/AI-benchmarking-guide Azure_Results/ND_A100_v4_results.md at
// 3bb66ca, the curve azure-nd-a100-v4-allreduce in validation/data/nccl_tests_published.json)
// over this model's busbw for the same preset and size. Mid-size messages lose a third: each
// channel's chunk per ring step is small and its per-step synchronisation is not hidden. The
// same table brings the held-out 8x H200 NVLS curve from +11..+45% to -11..+5% (docs/fidelity.md).
// Below 1 MiB the first value holds (setup-dependent launch latencies are not modelled); from
// 1 GiB on, 1.
constexpr std::array<std::pair<double, double>, 11> kNvlinkSizeEfficiency{{{1 << 20, 0.831},
                                                                           {2 << 20, 0.787},
                                                                           {4 << 20, 0.694},
                                                                           {8 << 20, 0.650},
                                                                           {16 << 20, 0.652},
                                                                           {32 << 20, 0.704},
                                                                           {64 << 20, 0.804},
                                                                           {128 << 20, 0.799},
                                                                           {256 << 20, 0.955},
                                                                           {512 << 20, 0.977},
                                                                           {1 << 30, 1.0}}};

}  // namespace

std::vector<CollectiveModelFigure> nccl_model_figures() {
  const auto fmt = [](const char* f, double a, double b = 0, double c = 0, double d = 0) {
    char buf[160];
    std::snprintf(buf, sizeof buf, f, a, b, c, d);
    return std::string(buf);
  };
  const std::string tuning = "NCCL src/graph/tuning.cc (2.x)";
  const auto protocols = [&](const double(&v)[3]) { return fmt("LL %g / LL128 %g / Simple %g us", v[0], v[1], v[2]); };
  std::string shares;
  for (std::size_t i : {std::size_t{0}, std::size_t{3}, std::size_t{7}, kNvlinkSizeEfficiency.size() - 1})
    shares += (shares.empty() ? "" : ", ") + fmt("%.1f%% at %g MiB", 100 * kNvlinkSizeEfficiency[i].second,
                                                 kNvlinkSizeEfficiency[i].first / (1 << 20));
  return {
      {"algorithms", "ring, tree, hierarchical, hierarchical_tree (all-reduce), nvls, pat; auto takes the fastest",
       "docs/simulator.md (Collectives)"},
      {"ring base latency", protocols(kBaseLatUs[1]), tuning},
      {"tree base latency", protocols(kBaseLatUs[0]), tuning},
      {"ring step latency, NVLink / PCI / network (Simple)",
       fmt("%g / %g / %g us", kHwLatUs[0][1][2], kHwLatUs[1][1][2], kHwLatUs[2][1][2]), tuning},
      {"NVLS all-reduce (Hopper, Blackwell NVSwitch nodes)",
       fmt("%g us, algorithm bandwidth %.1f%% of the port", kNvlsLatUs, 100 * kNvlsAlgbwFraction),
       "NCCL tuning.cc; nccl-tests#212 (8x H100: algbw ~275 of 450 GB/s)"},
      {"PAT reduce-scatter / all-gather (one GPU per node)",
       fmt("%g us + %g us per rank + %g us per log2 step, Simple only, %g of the ring's bandwidth", kPatBaseLatUs,
           kPatPerRankUs, kPatStepLatUs, kPatBandwidthShare),
       "NCCL 2.23+ src/graph/tuning.cc; Jeaugey, arXiv 2506.20252"},
      {"payload share of the link rate",
       fmt("NVLink %.1f%% (Hopper %.1f%%; A100 reductions %.1f%%), InfiniBand %.0f%%", 100 * kNvlinkPayload,
           100 * kNvlinkPayloadHopper, 100 * kNvlinkPayload * kAmpereReductionShare, 100 * kNetPayload),
       "NCCL topo.h (20 of 25 GB/s per NVLink); nccl-tests#149, #212, #119"},
      {"NVLink share by message size", shares + " (linear in log size between the table's 11 points)",
       "nccl-tests all_reduce on 8x A100 (Azure ND A100 v4, NCCL 2.18.5)"},
  };
}

double nvlink_size_efficiency(Bytes total) {
  const double b = static_cast<double>(total);
  if (b <= kNvlinkSizeEfficiency.front().first) return kNvlinkSizeEfficiency.front().second;
  for (std::size_t i = 1; i < kNvlinkSizeEfficiency.size(); ++i) {
    const auto [b1, e1] = kNvlinkSizeEfficiency[i];
    if (b <= b1) {
      const auto [b0, e0] = kNvlinkSizeEfficiency[i - 1];
      return e0 + (e1 - e0) * std::log2(b / b0) / std::log2(b1 / b0);  // linear in log(size)
    }
  }
  return kNvlinkSizeEfficiency.back().second;
}

bool CollectivePlan::protocol_enabled(CollectiveProtocol protocol) const {
  if (nvls || algorithm == CollectiveAlgorithm::Pat) return protocol == CollectiveProtocol::Simple;
  if (protocol == CollectiveProtocol::LL128) return ll128;
  return true;
}

TimeNs CollectivePlan::base_latency(CollectiveProtocol protocol) const {
  if (nvls) return 0;
  if (algorithm == CollectiveAlgorithm::Pat)
    return us(kPatBaseLatUs + kPatPerRankUs * static_cast<double>(order.size()));
  const int a = algorithm == CollectiveAlgorithm::Tree ? 0 : 1;
  return us(kBaseLatUs[a][static_cast<int>(protocol)]);
}

TimeNs CollectivePlan::step_latency(const CollectivePhase& phase, CollectiveProtocol protocol) const {
  if (nvls) return us(kNvlsLatUs);
  if (algorithm == CollectiveAlgorithm::Pat) return us(kPatStepLatUs);
  const int a = algorithm == CollectiveAlgorithm::Tree || phase.tree ? 0 : 1;
  double lat = kHwLatUs[static_cast<int>(phase.hop)][a][static_cast<int>(protocol)];
  // LL's flag polling is slower when the proxy also drives the network (tuning.cc: x1.8).
  if (multi_node && protocol == CollectiveProtocol::LL && phase.hop != HopClass::Net) lat *= 1.8;
  return us(lat);
}

double CollectivePlan::bandwidth_factor(const CollectivePhase& phase, CollectiveProtocol protocol) const {
  if (nvls) return kNvlsAlgbwFraction;
  const double payload = phase.hop == HopClass::NVLink ? nvlink_payload
                         : phase.hop == HopClass::Net  ? kNetPayload
                                                       : 1.0;
  double proto = 1.0;
  const bool tree = algorithm == CollectiveAlgorithm::Tree || phase.tree;
  if (protocol == CollectiveProtocol::LL)
    proto = tree ? 1.0 / 3.8 : (multi_node || op == CollectiveOp::AllReduce ? 0.25 : 1.0 / 3.0);
  else if (protocol == CollectiveProtocol::LL128)
    proto = tree ? (multi_node ? 0.915 : 7.0 / 9.0) : 0.92;
  const double share = tree ? 0.9 : algorithm == CollectiveAlgorithm::Pat ? kPatBandwidthShare : 1.0;
  return payload * proto * share * phase.channels;
}

TimeNs CollectiveCost::scaled(double intra, double inter) const {
  if (intra == 1.0 && inter == 1.0) return time;
  return static_cast<TimeNs>(
      std::llround(static_cast<double>(time - net_time) * intra + static_cast<double>(net_time) * inter));
}

double CollectivePlan::size_efficiency(const CollectivePhase& phase, Bytes total) const {
  return phase.hop == HopClass::NVLink ? nvlink_size_efficiency(total) : 1.0;
}

double CollectivePlan::stretched_base_latency(CollectiveProtocol protocol, Bytes total) const {
  const bool all_nvlink =
      std::all_of(phases.begin(), phases.end(), [](const CollectivePhase& p) { return p.hop == HopClass::NVLink; });
  return static_cast<double>(base_latency(protocol)) / (all_nvlink ? nvlink_size_efficiency(total) : 1.0);
}

CollectiveCost CollectivePlan::cost(Bytes total, CollectiveCosts costs, CollectiveProtocol protocol) const {
  if (costs == CollectiveCosts::Links) return {analytic_time(total), CollectiveProtocol::Simple, 0};
  if (total <= 0) return {0, protocol, 0};
  double t = stretched_base_latency(protocol, total);
  // The base latency rides on the first step (as the engine's expanded steps carry it), so a
  // calibration scales it with that step's class: a PAT plan's 2.8 us per rank is network time.
  TimeNs net = !phases.empty() && phases.front().hop == HopClass::Net ? static_cast<TimeNs>(std::llround(t)) : 0;
  for (const auto& ph : phases) {
    const double eta = size_efficiency(ph, total);
    const double b = static_cast<double>(flow_bytes(ph, total)) / bandwidth_factor(ph, protocol);
    double slowest = 0;
    for (const auto& f : idle[ph.pattern]) slowest = std::max(slowest, b / f.rate);
    const double phase_time =
        static_cast<double>((step_latency(ph, protocol) + static_cast<TimeNs>(std::ceil(slowest))) *
                            static_cast<TimeNs>(ph.repeats)) /
        eta;
    t += phase_time;
    if (ph.hop == HopClass::Net) net += static_cast<TimeNs>(std::llround(phase_time));
  }
  return {static_cast<TimeNs>(std::llround(t)), protocol, net};
}

CollectiveCost CollectivePlan::cost(Bytes total, CollectiveCosts costs) const {
  if (costs == CollectiveCosts::Links) return {analytic_time(total), CollectiveProtocol::Simple, 0};
  CollectiveCost best{std::numeric_limits<TimeNs>::max(), CollectiveProtocol::Simple, 0};
  for (CollectiveProtocol p : {CollectiveProtocol::LL, CollectiveProtocol::LL128, CollectiveProtocol::Simple}) {
    if (!protocol_enabled(p)) continue;
    const CollectiveCost c = cost(total, costs, p);
    if (c.time < best.time) best = c;
  }
  return best;
}

std::int64_t CollectivePlan::steps() const {
  std::int64_t s = 0;
  for (const auto& p : phases) s += p.repeats;
  return s;
}

TimeNs CollectivePlan::analytic_time(Bytes total) const {
  if (total <= 0) return 0;
  TimeNs t = 0;
  for (const auto& ph : phases) {
    const Bytes b = flow_bytes(ph, total);
    TimeNs step = 0;
    for (const auto& f : idle[ph.pattern]) step = std::max(step, f.latency + serialization_time(b, GBps{f.rate}));
    t += step * static_cast<TimeNs>(ph.repeats);
  }
  return t;
}

namespace {

constexpr std::int64_t kMaxTreeChunks = 64;

// A hierarchical tree's slowest edge and depth, which pick its chunk count.
struct TreeTiming {
  TimeNs alpha = 0;
  double beta = 0;  // half the slowest edge's rate: a parent takes two children at once
  std::int64_t depth = 0, m = 1;
  // The chunk count whose idle time of the tree part, on its slowest edge, is smallest.
  std::int64_t chunks(Bytes bytes) const {
    std::int64_t best_c = 1;
    TimeNs best = std::numeric_limits<TimeNs>::max();
    const Bytes shard = (bytes + m - 1) / m;
    for (std::int64_t c = 1; c <= kMaxTreeChunks && shard > 0; ++c) {
      const TimeNs t = (c + depth - 1) * (alpha + serialization_time((shard + c - 1) / c, GBps{beta}));
      if (t < best) best = t, best_c = c;
    }
    return best_c;
  }
};

// `alpha` and `bottleneck`: the largest route latency and the smallest route bottleneck of the
// pattern that sends up the trees.
TreeTiming tree_timing(TimeNs alpha, double bottleneck, std::size_t nodes, std::size_t m) {
  TreeTiming tt;
  tt.m = static_cast<std::int64_t>(m);
  while ((std::size_t{2} << tt.depth) <= nodes) ++tt.depth;  // floor(log2 nodes)
  tt.alpha = alpha;
  tt.beta = bottleneck / 2;
  return tt;
}

}  // namespace

struct CollectivePlanner::RingCache {
  explicit RingCache(const hardware::Cluster& c)
      : solver(static_cast<std::size_t>(c.num_directed_links())), capacity(c.dir_bandwidths()) {}
  std::map<std::vector<DeviceId>, std::vector<DeviceId>> orders;
  std::map<std::vector<int>, std::vector<std::size_t>> segment_perms;  // local indices -> ring positions
  std::size_t order_bytes = 0;  // held by `orders`, roughly
  // Per device, its NIC's uplink: the first network link of its routes off the node (-2: not looked
  // up yet, -1: none). channel_gain() sums them per node.
  std::vector<hardware::DirLinkId> nic_uplink;
  // pattern_stats(): per node, its number in the pattern being keyed (-1 none), and per (local
  // source, local destination, same node) whether the route follows a relabelling of the nodes
  // (-1: not asked yet).
  std::vector<std::int32_t> node_label;
  std::vector<std::int8_t> follows;
  std::size_t per_node = 0;  // devices per node (identical nodes)
  MaxMinSolver solver;
  std::span<const double> capacity;  // the cluster's dir_bandwidths()
};

// What add_idle_stats() takes from a pattern: its routes' latencies, idle max-min rates, classes
// and hop class. They depend on the pairs alone, and a ring's pattern recurs in the plans of other
// algorithms over the same group (hierarchical with one rank per node, the ring NVLS falls back
// to). On identical nodes that any relabelling maps onto each other (no built fabric), they depend
// only on the pattern up to that relabelling: each pair's local indices and its nodes numbered in
// order of first appearance. The data-parallel groups of different pipeline stages, or of
// different TP ranks, are such images of each other, so one group's work serves them all.
struct CollectivePlanner::PatternStats {
  std::vector<std::uint64_t> key;  // kPairsKey + the pairs, or kRelabelledKey + the relabelled pairs
  std::vector<IdleFlow> idle;
  std::vector<std::uint32_t> representatives;
  std::vector<HopClass> own;  // per message: the slowest class its route crosses
  HopClass hop = HopClass::NVLink;
  TimeNs max_latency = 0;  // over the routes
  double min_bottleneck = std::numeric_limits<double>::infinity();
};

struct CollectivePlanner::PlanMemo {
  using Key = std::tuple<std::vector<DeviceId>, int, int, Bytes>;
  // What a lookup brings: the group as a span, so that a hit allocates nothing.
  struct Query {
    std::span<const DeviceId> group;
    int op, algo;
    Bytes bytes;
  };
  static std::size_t hash(std::span<const DeviceId> group, int op, int algo, Bytes bytes) {
    std::uint64_t h = 0x9E3779B97F4A7C15ull ^ (static_cast<std::uint64_t>(op) << 8) ^ static_cast<std::uint64_t>(algo) ^
                      (static_cast<std::uint64_t>(bytes) << 17);
    for (DeviceId d : group) h = (h ^ static_cast<std::uint64_t>(d)) * 0x100000001B3ull;
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
  // Hashed, with heterogeneous lookup: engine runs look plans up for every group they simulate,
  // thousands per plan.
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(const Key& k) const {
      return hash(std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k));
    }
    std::size_t operator()(const Query& q) const { return hash(q.group, q.op, q.algo, q.bytes); }
  };
  struct KeyEqual {
    using is_transparent = void;
    bool operator()(const Key& a, const Key& b) const { return a == b; }
    bool operator()(const Query& q, const Key& k) const {
      return q.op == std::get<1>(k) && q.algo == std::get<2>(k) && q.bytes == std::get<3>(k) &&
             std::equal(q.group.begin(), q.group.end(), std::get<0>(k).begin(), std::get<0>(k).end());
    }
    bool operator()(const Key& k, const Query& q) const { return (*this)(q, k); }
  };
  std::unordered_map<Key, std::unique_ptr<const CollectivePlan>, KeyHash, KeyEqual> plans;
  // analytic_time() per (plan, bytes): the engine asks for every distinct collective size.
  struct TimeKeyHash {
    std::size_t operator()(const std::pair<const CollectivePlan*, Bytes>& k) const {
      return std::hash<const void*>{}(k.first) ^ (static_cast<std::size_t>(k.second) * 0x9E3779B97F4A7C15ull);
    }
  };
  std::unordered_map<std::pair<const CollectivePlan*, Bytes>, TimeNs, TimeKeyHash> times;
  std::unordered_map<std::pair<const CollectivePlan*, Bytes>, CollectiveCost, TimeKeyHash> costs;  // Nccl costs
  // Hierarchical trees per group: the plan's patterns, routes and idle rates do not depend on the
  // size, which only picks the chunk count - so one shape per group, one plan per chunk count.
  struct TreeShape {
    std::unique_ptr<const CollectivePlan> fallback;  // the tree does not apply: the ring (any size)
    CollectivePlan base;
    TreeTiming timing;
    std::vector<std::unique_ptr<const CollectivePlan>> by_chunks;  // index: chunk count
  };
  std::unordered_map<Key, std::unique_ptr<TreeShape>, KeyHash, KeyEqual> trees;
  // pattern_stats() per key (the pairs, or the pairs relabelled): by its hash, compared in full.
  std::unordered_multimap<std::uint64_t, std::unique_ptr<const CollectivePlanner::PatternStats>> patterns;
  // cached_choice(): per group, op, algorithm, bytes, cost model and calibration.
  struct ChoiceKey {
    std::vector<DeviceId> group;
    int op, algo, costs;
    Bytes bytes;
    std::uint64_t intra, inter;  // the scales' bits
  };
  struct ChoiceQuery {
    std::span<const DeviceId> group;
    int op, algo, costs;
    Bytes bytes;
    std::uint64_t intra, inter;
  };
  template <typename K>
  static bool same(const ChoiceQuery& q, const K& k) {
    return q.op == k.op && q.algo == k.algo && q.costs == k.costs && q.bytes == k.bytes && q.intra == k.intra &&
           q.inter == k.inter && std::equal(q.group.begin(), q.group.end(), k.group.begin(), k.group.end());
  }
  struct ChoiceHash {
    using is_transparent = void;
    template <typename K>
    std::size_t operator()(const K& k) const {
      const std::size_t h = hash(k.group, k.op, k.algo, k.bytes);
      return h ^ ((k.intra * 0x9E3779B97F4A7C15ull + k.inter + static_cast<std::uint64_t>(k.costs)) *
                  0xC2B2AE3D27D4EB4Full);
    }
  };
  struct ChoiceEqual {
    using is_transparent = void;
    bool operator()(const ChoiceKey& a, const ChoiceKey& b) const {
      return same(ChoiceQuery{a.group, a.op, a.algo, a.costs, a.bytes, a.intra, a.inter}, b);
    }
    bool operator()(const ChoiceQuery& q, const ChoiceKey& k) const { return same(q, k); }
    bool operator()(const ChoiceKey& k, const ChoiceQuery& q) const { return same(q, k); }
  };
  std::unordered_map<ChoiceKey, CollectiveChoice, ChoiceHash, ChoiceEqual> choices;
  std::size_t bytes = 0;  // held by `plans` (keys, patterns, idle flows) and `times`, roughly
};

CollectivePlanner::CollectivePlanner(const hardware::Cluster& cluster)
    : cluster_(cluster),
      routes_(std::make_unique<RouteTable>(cluster)),
      ring_cache_(std::make_unique<RingCache>(cluster)),
      memo_(std::make_unique<PlanMemo>()),
      relabel_nodes_(cluster.identical_nodes() && cluster.fabric() == nullptr) {
  if (relabel_nodes_) {
    ring_cache_->node_label.assign(static_cast<std::size_t>(cluster.num_nodes()), -1);
    ring_cache_->per_node = static_cast<std::size_t>(cluster.max_devices_per_node());
    ring_cache_->follows.assign(2 * ring_cache_->per_node * ring_cache_->per_node, -1);
  }
  nvlink_peers_.resize(static_cast<std::size_t>(cluster.num_devices()));
  for (hardware::LinkId l = 0; l < cluster.num_links(); ++l) {
    const hardware::ClusterLink& link = cluster.link(l);
    if (link.kind != hardware::LinkKind::NVLink || link.a >= cluster.num_devices() || link.b >= cluster.num_devices())
      continue;
    nvlink_peers_[static_cast<std::size_t>(link.a)].emplace_back(link.b, link.bandwidth.value);
    nvlink_peers_[static_cast<std::size_t>(link.b)].emplace_back(link.a, link.bandwidth.value);
  }
}

CollectivePlanner::~CollectivePlanner() = default;

namespace {

// Ring order of one node's devices: the cycle whose slowest hop is fastest, then whose total
// latency is lowest; ties keep the earliest order in lexicographic search from the given one.
class RingSearch {
 public:
  RingSearch(std::span<const DeviceId> seg, RouteTable& routes) : m_(seg.size()), seg_(seg.begin(), seg.end()) {
    bw_.assign(m_ * m_, 0);
    lat_.assign(m_ * m_, 0);
    for (std::size_t i = 0; i < m_; ++i)
      for (std::size_t j = 0; j < m_; ++j)
        if (i != j) {
          const RouteRef r = routes.get(seg[i], seg[j]);
          bw_[i * m_ + j] = r.bottleneck;
          lat_[i * m_ + j] = r.latency;
        }
  }

  std::vector<DeviceId> best() {
    // Score the given order; if it reaches the bound no cycle can beat it.
    best_bw_ = std::numeric_limits<double>::infinity();
    best_lat_ = 0;
    for (std::size_t i = 0; i < m_; ++i) {
      const std::size_t j = (i + 1) % m_;
      best_bw_ = std::min(best_bw_, bw_[i * m_ + j]);
      best_lat_ += lat_[i * m_ + j];
    }
    best_perm_.resize(m_);
    for (std::size_t i = 0; i < m_; ++i) best_perm_[i] = i;
    double ub_bw = std::numeric_limits<double>::infinity();
    TimeNs lb_lat = 0;
    for (std::size_t i = 0; i < m_; ++i) {
      double out_bw = 0;
      TimeNs out_lat = std::numeric_limits<TimeNs>::max();
      for (std::size_t j = 0; j < m_; ++j)
        if (i != j) {
          out_bw = std::max(out_bw, bw_[i * m_ + j]);
          out_lat = std::min(out_lat, lat_[i * m_ + j]);
        }
      ub_bw = std::min(ub_bw, out_bw);
      lb_lat += out_lat;
    }
    if (!(best_bw_ < ub_bw) && !(best_lat_ > lb_lat)) return seg_;
    perm_.assign(1, 0);
    used_.assign(m_, 0);
    used_[0] = 1;
    dfs(std::numeric_limits<double>::infinity(), 0);
    std::vector<DeviceId> out;
    for (std::size_t i : best_perm_) out.push_back(seg_[i]);
    return out;
  }

 private:
  void dfs(double min_bw, TimeNs lat) {
    if (min_bw < best_bw_ || (min_bw == best_bw_ && lat >= best_lat_)) return;  // cannot improve
    const std::size_t last = perm_.back();
    if (perm_.size() == m_) {
      const double bw = std::min(min_bw, bw_[last * m_ + perm_[0]]);
      const TimeNs total = lat + lat_[last * m_ + perm_[0]];
      if (bw > best_bw_ || (bw == best_bw_ && total < best_lat_)) {
        best_bw_ = bw;
        best_lat_ = total;
        best_perm_ = perm_;
      }
      return;
    }
    for (std::size_t next = 1; next < m_; ++next) {
      if (used_[next]) continue;
      used_[next] = 1;
      perm_.push_back(next);
      dfs(std::min(min_bw, bw_[last * m_ + next]), lat + lat_[last * m_ + next]);
      perm_.pop_back();
      used_[next] = 0;
    }
  }

  std::size_t m_;
  std::vector<DeviceId> seg_;
  std::vector<double> bw_;
  std::vector<TimeNs> lat_;
  double best_bw_ = 0;
  TimeNs best_lat_ = 0;
  std::vector<std::size_t> best_perm_, perm_;
  std::vector<std::uint8_t> used_;
};

constexpr std::size_t kMaxRingSearch = 10;  // 9! orders at most, pruned
constexpr std::int64_t kMaxBroadcastChunks = 64;

// Consecutive node segments of a node-grouped order: [start, end) pairs.
std::vector<std::pair<std::size_t, std::size_t>> node_segments(const hardware::Cluster& c,
                                                               const std::vector<DeviceId>& order) {
  std::vector<std::pair<std::size_t, std::size_t>> segs;
  for (std::size_t i = 0; i < order.size(); ++i)
    if (i == 0 || c.node_of(order[i]) != c.node_of(order[i - 1])) segs.emplace_back(i, i + 1);
    else segs.back().second = i + 1;
  return segs;
}

std::vector<DevicePair> ring_pattern(const std::vector<DeviceId>& ranks) {
  std::vector<DevicePair> p;
  if (ranks.size() < 2) return p;
  for (std::size_t i = 0; i < ranks.size(); ++i) p.push_back({ranks[i], ranks[(i + 1) % ranks.size()]});
  return p;
}

int ceil_log2(std::size_t n) {
  int l = 0;
  while ((std::size_t{1} << l) < n) ++l;
  return l;
}

void add_phase(CollectivePlan& p, std::vector<DevicePair> pattern, std::uint32_t repeats, std::int64_t divisor,
               bool tree = false) {
  if (pattern.empty() || repeats == 0) return;
  // Merge with the previous phase when it is the same pattern and size (pipeline steady state).
  if (!p.phases.empty() && p.phases.back().divisor == divisor && p.phases.back().tree == tree) {
    const auto& prev = p.patterns[p.phases.back().pattern];
    if (prev.size() == pattern.size() &&
        std::equal(prev.begin(), prev.end(), pattern.begin(),
                   [](const DevicePair& a, const DevicePair& b) { return a.src == b.src && a.dst == b.dst; })) {
      p.phases.back().repeats += repeats;
      return;
    }
  }
  p.patterns.push_back(std::move(pattern));
  p.phases.push_back({static_cast<std::uint32_t>(p.patterns.size() - 1), repeats, divisor, HopClass::NVLink, tree});
}

void binomial_reduce(CollectivePlan& p) {
  const auto& o = p.order;
  const int levels = ceil_log2(o.size());
  for (int k = 0; k < levels; ++k) {
    const std::size_t half = std::size_t{1} << k;
    std::vector<DevicePair> pat;
    for (std::size_t r = half; r < o.size(); r += 2 * half) pat.push_back({o[r], o[r - half]});
    add_phase(p, std::move(pat), 1, 1);
  }
}

void binomial_broadcast(CollectivePlan& p) {
  const auto& o = p.order;
  for (int k = ceil_log2(o.size()) - 1; k >= 0; --k) {
    const std::size_t half = std::size_t{1} << k;
    std::vector<DevicePair> pat;
    for (std::size_t r = 0; r + half < o.size(); r += 2 * half) pat.push_back({o[r], o[r + half]});
    add_phase(p, std::move(pat), 1, 1);
  }
}

// PAT's steps (collectives.hpp): all-gather sends 2^k blocks of S/n to the rank 2^(L-1-k) ahead
// at step k (the last step n - 2^(L-1) blocks, so that n-1 arrive in all); reduce-scatter runs
// the same steps last to first.
void pat_phases(CollectivePlan& p) {
  const auto& o = p.order;
  const std::size_t n = o.size();
  const int levels = ceil_log2(n);
  const auto nn = static_cast<std::int64_t>(n);
  struct Step {
    std::size_t distance;
    std::int64_t blocks;
  };
  std::vector<Step> steps;
  const std::size_t last = std::size_t{1} << (levels - 1);  // blocks before the last step
  for (int k = 0; k < levels; ++k)
    steps.push_back({std::size_t{1} << (levels - 1 - k),
                     k + 1 < levels ? std::int64_t{1} << k : static_cast<std::int64_t>(n - last)});
  if (p.op == CollectiveOp::ReduceScatter) std::reverse(steps.begin(), steps.end());
  for (const Step& st : steps) {
    std::vector<DevicePair> pattern;
    for (std::size_t r = 0; r < n; ++r) pattern.push_back({o[r], o[(r + st.distance) % n]});
    p.patterns.push_back(std::move(pattern));
    CollectivePhase ph;
    ph.pattern = static_cast<std::uint32_t>(p.patterns.size() - 1);
    ph.repeats = 1;
    ph.divisor = nn;
    ph.blocks = st.blocks;
    p.phases.push_back(ph);
  }
}

}  // namespace

// NCCL enables PAT from SM60 (CUDA atomics) on; parasim's GPU presets are all newer, CPUs have none.
bool CollectivePlanner::pat_capable(const std::vector<DeviceId>& order) const {
  return std::all_of(order.begin(), order.end(), [&](DeviceId d) {
    const auto spec = hardware::find_device_spec(cluster_.device(d).kind);
    return spec && spec->arch_at_least("pascal");
  });
}

std::vector<DeviceId> CollectivePlanner::ring_order(std::span<const DeviceId> group) {
  std::vector<DeviceId> key(group.begin(), group.end());
  auto it = ring_cache_->orders.find(key);
  if (it != ring_cache_->orders.end()) return it->second;
  // Group by node in order of first appearance, keeping the group's order inside each node
  // (bucketed: a data-parallel group spans thousands of nodes).
  std::unordered_map<int, std::size_t> slot_of_node;
  std::vector<std::vector<DeviceId>> segs;
  for (DeviceId d : group) {
    const auto [slot, fresh] = slot_of_node.try_emplace(cluster_.node_of(d), segs.size());
    if (fresh) segs.emplace_back();
    segs[slot->second].push_back(d);
  }
  std::vector<DeviceId> order;
  order.reserve(group.size());
  for (auto& seg : segs) {
    if (seg.size() > 2 && seg.size() <= kMaxRingSearch) seg = segment_ring(seg);
    order.insert(order.end(), seg.begin(), seg.end());
  }
  ring_cache_->order_bytes += 2 * order.size() * sizeof(DeviceId) + 64;
  ring_cache_->orders.emplace(std::move(key), order);
  return order;
}

std::vector<DeviceId> CollectivePlanner::segment_ring(const std::vector<DeviceId>& seg) {
  if (!cluster_.identical_nodes()) return RingSearch(seg, *routes_).best();
  // Identical nodes: the same local indices give the same ring on every node (their routes are
  // images of each other), so one search per distinct set of local indices.
  std::vector<int> locals;
  for (DeviceId d : seg) locals.push_back(cluster_.local_index(d));
  auto found = ring_cache_->segment_perms.find(locals);
  if (found == ring_cache_->segment_perms.end()) {
    const std::vector<DeviceId> best = RingSearch(seg, *routes_).best();
    std::vector<std::size_t> perm;
    for (DeviceId d : best)
      perm.push_back(static_cast<std::size_t>(std::find(seg.begin(), seg.end(), d) - seg.begin()));
    found = ring_cache_->segment_perms.emplace(std::move(locals), std::move(perm)).first;
  }
  std::vector<DeviceId> out;
  for (std::size_t i : found->second) out.push_back(seg[i]);
  return out;
}

const CollectivePlanner::PatternStats& CollectivePlanner::pattern_stats(const std::vector<DevicePair>& pattern) {
  constexpr std::uint64_t kPairsKey = 0, kRelabelledKey = 1;
  std::vector<std::uint64_t> key;
  key.reserve(1 + 2 * pattern.size());
  if (relabel_nodes_) {
    key.push_back(kRelabelledKey);
    auto& label = ring_cache_->node_label;
    std::vector<int> labelled;
    const auto label_of = [&](int node) {
      std::int32_t& l = label[static_cast<std::size_t>(node)];
      if (l < 0) {
        l = static_cast<std::int32_t>(labelled.size());
        labelled.push_back(node);
      }
      return static_cast<std::uint64_t>(l);
    };
    for (const auto& pr : pattern) {
      const int ns = cluster_.node_of(pr.src), nd = cluster_.node_of(pr.dst);
      const auto ls = static_cast<std::uint64_t>(cluster_.local_index(pr.src)),
                 ld = static_cast<std::uint64_t>(cluster_.local_index(pr.dst));
      if (!route_follows_relabelling(pr.src, pr.dst)) {
        key.clear();
        break;
      }
      key.push_back(label_of(ns) << 32 | ls);
      key.push_back(label_of(nd) << 32 | ld);
    }
    for (int node : labelled) label[static_cast<std::size_t>(node)] = -1;
  }
  if (key.empty()) {
    key.push_back(kPairsKey);
    for (const auto& pr : pattern)
      key.push_back(static_cast<std::uint64_t>(static_cast<std::uint32_t>(pr.src)) << 32 |
                    static_cast<std::uint32_t>(pr.dst));
  }
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (std::uint64_t v : key) h = (h ^ v) * 0x100000001B3ull;
  const auto [first, last] = memo_->patterns.equal_range(h);
  for (auto it = first; it != last; ++it)
    if (it->second->key == key) return *it->second;
  auto st = std::make_unique<PatternStats>();
  st->key = std::move(key);
  std::vector<RouteRef> refs;
  std::vector<std::span<const hardware::DirLinkId>> flows;
  refs.reserve(pattern.size());
  flows.reserve(pattern.size());
  for (const auto& pair : pattern) refs.push_back(routes_->get(pair.src, pair.dst));
  for (const auto& r : refs) flows.push_back(routes_->links(r));  // spans taken after all lookups
  std::vector<double> rates(flows.size(), 0);
  ring_cache_->solver.solve(flows, ring_cache_->capacity, rates);
  st->idle.resize(pattern.size());
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    st->idle[i] = {refs[i].latency, rates[i]};
    st->max_latency = std::max(st->max_latency, refs[i].latency);
    st->min_bottleneck = std::min(st->min_bottleneck, refs[i].bottleneck);
  }
  st->representatives = representatives(flows, rates);
  // NCCL's hardware class of each message and of the pattern (the slowest any message crosses).
  st->own.reserve(flows.size());
  for (const auto& links : flows) {
    HopClass own = HopClass::NVLink;
    for (hardware::DirLinkId l : links) {
      const hardware::LinkKind k = cluster_.link(hardware::Cluster::link_of(l)).kind;
      if (k == hardware::LinkKind::InfiniBand || k == hardware::LinkKind::Ethernet) own = HopClass::Net;
      else if ((k == hardware::LinkKind::PCIe || k == hardware::LinkKind::QPI) && own == HopClass::NVLink)
        own = HopClass::PCI;
    }
    st->own.push_back(own);
    st->hop = std::max(st->hop, own);  // NVLink < PCI < Net
  }
  memo_->bytes += 64 + st->key.size() * sizeof(std::uint64_t) + pattern.size() * sizeof(IdleFlow) +
                  st->representatives.size() * sizeof(std::uint32_t);
  return *memo_->patterns.emplace(h, std::move(st))->second;
}

bool CollectivePlanner::route_follows_relabelling(DeviceId src, DeviceId dst) {
  // Whether it does depends on the two local indices and whether the nodes differ (the route is
  // worked out between nodes 0 and 1 either way): asked once per such triple.
  auto& known = ring_cache_->follows;
  const std::size_t per_node = ring_cache_->per_node;
  std::int8_t& f = known[2 * (static_cast<std::size_t>(cluster_.local_index(src)) * per_node +
                              static_cast<std::size_t>(cluster_.local_index(dst))) +
                         (cluster_.node_of(src) == cluster_.node_of(dst) ? 1 : 0)];
  if (f < 0) f = cluster_.route_follows_node_symmetry(src, dst) ? 1 : 0;
  return f == 1;
}

void CollectivePlanner::add_idle_stats(CollectivePlan& p) {
  p.idle.clear();
  p.representatives.clear();
  std::vector<const PatternStats*> stats;
  for (const auto& pattern : p.patterns) {
    const PatternStats& st = pattern_stats(pattern);
    p.idle.push_back(st.idle);
    p.representatives.push_back(st.representatives);
    stats.push_back(&st);
  }
  for (auto& ph : p.phases) ph.hop = stats[ph.pattern]->hop;
  p.multi_node = node_segments(cluster_, p.order).size() > 1;
  const std::string* last_kind = nullptr;
  for (DeviceId d : p.order) {
    const std::string& kind = cluster_.device(d).kind;
    if (last_kind && *last_kind == kind) continue;
    const auto spec = hardware::find_device_spec(kind);
    const bool reduces = p.op == CollectiveOp::AllReduce || p.op == CollectiveOp::ReduceScatter;
    const double share = !spec                               ? kNvlinkPayload
                         : spec->arch == "ampere" && reduces ? kNvlinkPayload * kAmpereReductionShare
                         : spec->arch_at_least("hopper")     ? kNvlinkPayloadHopper
                                                             : kNvlinkPayload;
    p.nvlink_payload = last_kind ? std::min(p.nvlink_payload, share) : share;
    last_kind = &kind;
  }
  // Several rings (channels) only where NCCL builds them: ring-type phases of ring, hierarchical
  // and hierarchical_tree plans (not binomial trees, tree phases, NVLS or all-to-all). PAT runs
  // with one GPU of the group per node, whose own NIC carries every channel (channel_gain() is 1).
  if (p.algorithm != CollectiveAlgorithm::Tree && p.algorithm != CollectiveAlgorithm::Pat && !p.nvls &&
      p.op != CollectiveOp::AllToAll) {
    std::vector<double> gains(p.patterns.size(), 0.0);
    for (auto& ph : p.phases) {
      if (ph.tree) continue;
      double& g = gains[ph.pattern];
      if (g == 0.0) g = channel_gain(p, p.patterns[ph.pattern], p.idle[ph.pattern], stats[ph.pattern]->own, ph.hop);
      ph.channels = g;
    }
  }
  // LL128 is on by default only where the GPUs talk over NVLink (tuning.cc).
  p.ll128 = std::any_of(p.phases.begin(), p.phases.end(),
                        [](const CollectivePhase& ph) { return ph.hop == HopClass::NVLink; });
}

// NCCL runs a ring collective as several rings at once (channels), each over other links: on a
// DGX-1's cube mesh the rings use all 6 NVLinks of every GPU (three Hamiltonian cycles, each in both
// directions), and across nodes each ring leaves a node through another GPU's NIC. The gain is
// what those rings carry together over what the plan's one ring carries: the smallest message
// capacity (at its class's payload share) - its source's direct NVLinks to the group's GPUs on its
// node, or for a message that leaves the node, the NICs of the group's GPUs on that node shared by
// the node's messages that leave it - over the slowest idle rate (at the phase's share). 1 on
// switched nodes (a GPU has one NVSwitch port) and wherever a pattern already uses every NIC
// (hierarchical plans). Only permutations (each rank sends one message and receives one), as rings
// are.
double CollectivePlanner::channel_gain(const CollectivePlan& p, const std::vector<DevicePair>& pattern,
                                       std::span<const IdleFlow> idle, std::span<const HopClass> own_classes,
                                       HopClass hop) {
  // Every message of a phase gets the phase's payload share (its slowest class); a message's own
  // class decides what its capacity carries, so that NVLink hops of a ring across nodes still
  // stop at NVLink's share when the NICs together would be faster.
  auto payload = [&](HopClass c) {
    return c == HopClass::NVLink ? p.nvlink_payload : c == HopClass::Net ? kNetPayload : 1.0;
  };
  if (pattern.empty()) return 1.0;
  {  // a permutation: no device sends twice or receives twice
    std::vector<DeviceId> srcs, dsts;
    srcs.reserve(pattern.size());
    dsts.reserve(pattern.size());
    for (const auto& pr : pattern) {
      srcs.push_back(pr.src);
      dsts.push_back(pr.dst);
    }
    std::sort(srcs.begin(), srcs.end());
    std::sort(dsts.begin(), dsts.end());
    if (std::adjacent_find(srcs.begin(), srcs.end()) != srcs.end() ||
        std::adjacent_find(dsts.begin(), dsts.end()) != dsts.end())
      return 1.0;
  }
  // The group's devices per node (in the order's order), and how many of the pattern's messages
  // leave each node: sorted by node, found by binary search (a data-parallel group spans
  // thousands of nodes).
  std::vector<std::pair<int, DeviceId>> by_node;
  by_node.reserve(p.order.size());
  for (DeviceId d : p.order) by_node.emplace_back(cluster_.node_of(d), d);
  std::stable_sort(by_node.begin(), by_node.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<int> nodes;
  std::vector<std::size_t> node_start;
  for (std::size_t i = 0; i < by_node.size(); ++i)
    if (i == 0 || by_node[i].first != by_node[i - 1].first) {
      nodes.push_back(by_node[i].first);
      node_start.push_back(i);
    }
  node_start.push_back(by_node.size());
  const auto slot_of = [&](int node) {
    return static_cast<std::size_t>(std::lower_bound(nodes.begin(), nodes.end(), node) - nodes.begin());
  };
  std::vector<int> leaving(nodes.size(), 0);
  for (const auto& pr : pattern)
    if (cluster_.node_of(pr.src) != cluster_.node_of(pr.dst)) ++leaving[slot_of(cluster_.node_of(pr.src))];
  constexpr std::size_t kMaxNodeMembers = 64;  // bounds the NIC search on very wide nodes
  auto& uplink = ring_cache_->nic_uplink;
  if (uplink.empty()) uplink.assign(static_cast<std::size_t>(cluster_.num_devices()), -2);
  std::vector<double> nic_bw(nodes.size(), -1.0);  // per node with leaving messages: its members' NICs
  double min_rate = std::numeric_limits<double>::infinity(), min_cap = min_rate;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const auto& pr = pattern[i];
    const double rate = idle[i].rate;
    double cap = rate;
    const HopClass own = own_classes[i];
    const int node = cluster_.node_of(pr.src);
    const std::size_t slot = slot_of(node);
    const auto local = std::span(by_node).subspan(node_start[slot], node_start[slot + 1] - node_start[slot]);
    const auto in_local = [&](DeviceId d) {
      return std::any_of(local.begin(), local.end(), [&](const auto& e) { return e.second == d; });
    };
    if (node == cluster_.node_of(pr.dst)) {
      double nvlink = 0;
      for (const auto& [peer, bw] : nvlink_peers_[static_cast<std::size_t>(pr.src)])
        if (cluster_.node_of(peer) == node && in_local(peer)) nvlink += bw;
      cap = std::max(cap, nvlink);
    } else if (local.size() <= kMaxNodeMembers) {
      double& bw_out = nic_bw[slot];
      if (bw_out < 0) {
        bw_out = 0.0;
        // Each local GPU's first network link off the node is its NIC's uplink (each NIC once).
        std::vector<hardware::DirLinkId> nics;
        for (const auto& [unused, d] : local) {
          hardware::DirLinkId& up = uplink[static_cast<std::size_t>(d)];
          if (up == -2) {
            up = -1;
            for (hardware::DirLinkId l : routes_->links(routes_->get(d, pr.dst))) {
              const hardware::LinkKind k = cluster_.link(hardware::Cluster::link_of(l)).kind;
              if (k == hardware::LinkKind::InfiniBand || k == hardware::LinkKind::Ethernet) {
                up = l;
                break;
              }
            }
          }
          if (up >= 0 && std::find(nics.begin(), nics.end(), up) == nics.end()) {
            nics.push_back(up);
            bw_out += cluster_.dir_bandwidth(up).value;
          }
        }
      }
      cap = std::max(cap, bw_out / static_cast<double>(leaving[slot]));
    }
    min_rate = std::min(min_rate, rate);
    min_cap = std::min(min_cap, cap * payload(own));
  }
  if (!(min_rate > 0) || !std::isfinite(min_cap)) return 1.0;
  return std::max(1.0, min_cap / (min_rate * payload(hop)));
}

// One message per class of equivalent ones: the same links hop by hop up to the identity of the
// link (kind, bandwidth, latency) and the same idle max-min rate. In order of first appearance, so
// a ring's representatives are its first ranks (the group's first devices, the simulated ones).
std::vector<std::uint32_t> CollectivePlanner::representatives(
    std::span<const std::span<const hardware::DirLinkId>> flows, std::span<const double> rates) const {
  // Hashed (a ring over thousands of nodes has thousands of messages and a handful of classes);
  // a class is found by comparing with the representatives of the same hash.
  auto same = [&](std::size_t a, std::size_t b) {
    if (std::bit_cast<std::int64_t>(rates[a]) != std::bit_cast<std::int64_t>(rates[b]) ||
        flows[a].size() != flows[b].size())
      return false;
    for (std::size_t k = 0; k < flows[a].size(); ++k) {
      const hardware::ClusterLink& x = cluster_.link(hardware::Cluster::link_of(flows[a][k]));
      const hardware::ClusterLink& y = cluster_.link(hardware::Cluster::link_of(flows[b][k]));
      if (x.kind != y.kind || x.alpha != y.alpha ||
          std::bit_cast<std::int64_t>(x.bandwidth.value) != std::bit_cast<std::int64_t>(y.bandwidth.value))
        return false;
    }
    return true;
  };
  std::unordered_multimap<std::uint64_t, std::uint32_t> seen;
  std::vector<std::uint32_t> reps;
  for (std::size_t i = 0; i < flows.size(); ++i) {
    std::uint64_t h = std::bit_cast<std::uint64_t>(rates[i]) * 0x9E3779B97F4A7C15ull + flows[i].size();
    for (hardware::DirLinkId l : flows[i]) {
      const hardware::ClusterLink& link = cluster_.link(hardware::Cluster::link_of(l));
      h = (h ^ static_cast<std::uint64_t>(link.kind)) * 0x100000001B3ull;
      h = (h ^ static_cast<std::uint64_t>(link.alpha)) * 0x100000001B3ull;
      h = (h ^ std::bit_cast<std::uint64_t>(link.bandwidth.value)) * 0x100000001B3ull;
    }
    const auto [first, last] = seen.equal_range(h);
    if (std::any_of(first, last, [&](const auto& e) { return same(e.second, i); })) continue;
    seen.emplace(h, static_cast<std::uint32_t>(i));
    reps.push_back(static_cast<std::uint32_t>(i));
  }
  return reps;
}

bool CollectivePlanner::nvls_capable(const std::vector<DeviceId>& order) {
  // NVLink SHARP needs third-generation NVSwitch or later (Hopper, Blackwell): every member such a
  // GPU whose route to its ring successor goes through an NVSwitch.
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto spec = hardware::find_device_spec(cluster_.device(order[i]).kind);
    if (!spec || !spec->arch_at_least("hopper")) return false;
    const RouteRef r = routes_->get(order[i], order[(i + 1) % order.size()]);
    bool via_switch = false;
    for (hardware::DirLinkId l : routes_->links(r))
      via_switch = via_switch || cluster_.link(hardware::Cluster::link_of(l)).kind == hardware::LinkKind::NVSwitch;
    if (!via_switch) return false;
  }
  return true;
}

void CollectivePlanner::hierarchical_tree(CollectivePlan& p,
                                          const std::vector<std::pair<std::size_t, std::size_t>>& segs, Bytes bytes) {
  const auto& order = p.order;
  p.algorithm = CollectiveAlgorithm::HierarchicalTree;
  const std::size_t m = segs.front().second - segs.front().first, k = segs.size();
  const auto mm = static_cast<std::int64_t>(m);
  std::vector<DevicePair> intra, up, down;
  for (const auto& s : segs) {
    auto ring = ring_pattern(std::vector<DeviceId>(order.begin() + static_cast<std::ptrdiff_t>(s.first),
                                                   order.begin() + static_cast<std::ptrdiff_t>(s.second)));
    intra.insert(intra.end(), ring.begin(), ring.end());
  }
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 1; j < k; ++j) {
      const DeviceId child = order[segs[j].first + i], parent = order[segs[(j - 1) / 2].first + i];
      up.push_back({child, parent});
      down.push_back({parent, child});
    }
  const PatternStats& up_stats = pattern_stats(up);
  const TreeTiming timing = tree_timing(up_stats.max_latency, up_stats.min_bottleneck, k, m);
  const std::int64_t chunks = timing.chunks(bytes);
  const auto steps = static_cast<std::uint32_t>(chunks + timing.depth - 1);
  if (m > 1) add_phase(p, intra, static_cast<std::uint32_t>(mm - 1), mm);             // reduce-scatter in each node
  add_phase(p, std::move(up), steps, mm * chunks, true);                              // reduce up the trees
  add_phase(p, std::move(down), steps, mm * chunks, true);                            // broadcast down
  if (m > 1) add_phase(p, std::move(intra), static_cast<std::uint32_t>(mm - 1), mm);  // all-gather in each node
}

CollectivePlan CollectivePlanner::plan_fixed(const std::vector<DeviceId>& order, CollectiveOp op,
                                             CollectiveAlgorithm algo, Bytes bytes) {
  CollectivePlan p;
  p.op = op;
  p.order = order;
  p.algorithm = CollectiveAlgorithm::Ring;
  const std::size_t n = order.size();
  const auto nn = static_cast<std::int64_t>(n);
  if (n < 2) return p;
  switch (op) {
    case CollectiveOp::AllReduce: {
      if (algo == CollectiveAlgorithm::Tree) {
        p.algorithm = CollectiveAlgorithm::Tree;
        binomial_reduce(p);
        binomial_broadcast(p);
        break;
      }
      const auto segs = node_segments(cluster_, order);
      if (algo == CollectiveAlgorithm::Nvls && segs.size() == 1 && nvls_capable(order)) {
        // Every GPU pushes its buffer into the switch, which reduces and multicasts the result:
        // one step over each GPU's switch port (its ring successor's route crosses the same port).
        p.algorithm = CollectiveAlgorithm::Nvls;
        p.nvls = true;
        add_phase(p, ring_pattern(order), 1, 1);
        break;
      }
      const std::size_t m = segs.front().second - segs.front().first;
      const bool uniform =
          std::all_of(segs.begin(), segs.end(), [&](const auto& s) { return s.second - s.first == m; });
      if (algo == CollectiveAlgorithm::Hierarchical && segs.size() >= 2 && uniform) {
        p.algorithm = CollectiveAlgorithm::Hierarchical;
        const auto k = static_cast<std::int64_t>(segs.size());
        const auto mm = static_cast<std::int64_t>(m);
        std::vector<DevicePair> intra;
        for (const auto& s : segs) {
          auto ring = ring_pattern(std::vector<DeviceId>(order.begin() + static_cast<std::ptrdiff_t>(s.first),
                                                         order.begin() + static_cast<std::ptrdiff_t>(s.second)));
          intra.insert(intra.end(), ring.begin(), ring.end());
        }
        std::vector<DevicePair> inter;
        for (std::size_t i = 0; i < m; ++i) {
          std::vector<DeviceId> ranks;
          for (const auto& s : segs) ranks.push_back(order[s.first + i]);
          auto ring = ring_pattern(ranks);
          inter.insert(inter.end(), ring.begin(), ring.end());
        }
        add_phase(p, intra, static_cast<std::uint32_t>(mm - 1), mm);                // reduce-scatter in each node
        add_phase(p, std::move(inter), static_cast<std::uint32_t>(2 * (k - 1)), mm * k);  // allreduce across nodes
        add_phase(p, std::move(intra), static_cast<std::uint32_t>(mm - 1), mm);     // all-gather in each node
        break;
      }
      if (algo == CollectiveAlgorithm::HierarchicalTree && segs.size() >= 2 && uniform) {
        hierarchical_tree(p, segs, bytes);
        break;
      }
      add_phase(p, ring_pattern(order), static_cast<std::uint32_t>(2 * (nn - 1)), nn);
      break;
    }
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllGather:
      if (algo == CollectiveAlgorithm::Pat && node_segments(cluster_, order).size() == n && pat_capable(order)) {
        p.algorithm = CollectiveAlgorithm::Pat;
        pat_phases(p);
        break;
      }
      add_phase(p, ring_pattern(order), static_cast<std::uint32_t>(nn - 1), nn);
      break;
    case CollectiveOp::Broadcast: {
      if (algo == CollectiveAlgorithm::Tree) {
        p.algorithm = CollectiveAlgorithm::Tree;
        binomial_broadcast(p);
        break;
      }
      // Pipelined chain from rank 0: choose the chunk count with the lowest idle time.
      TimeNs alpha = 0;
      double beta = std::numeric_limits<double>::infinity();
      for (std::size_t i = 0; i + 1 < n; ++i) {
        const RouteRef r = routes_->get(order[i], order[i + 1]);
        alpha = std::max(alpha, r.latency);
        beta = std::min(beta, r.bottleneck);
      }
      std::int64_t chunks = 1;
      TimeNs best = std::numeric_limits<TimeNs>::max();
      for (std::int64_t m = 1; m <= kMaxBroadcastChunks && bytes > 0; ++m) {
        const TimeNs t = (m + nn - 2) * (alpha + serialization_time((bytes + m - 1) / m, GBps{beta}));
        if (t < best) best = t, chunks = m;
      }
      for (std::int64_t j = 0; j <= chunks + nn - 3; ++j) {
        std::vector<DevicePair> pat;
        for (std::int64_t i = std::max<std::int64_t>(0, j - chunks + 1); i <= std::min(j, nn - 2); ++i)
          pat.push_back({order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(i + 1)]});
        add_phase(p, std::move(pat), 1, chunks);
      }
      break;
    }
    case CollectiveOp::AllToAll: {
      std::vector<DevicePair> pat;
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j)
          if (i != j) pat.push_back({order[i], order[j]});
      add_phase(p, std::move(pat), 1, nn);
      break;
    }
  }
  add_idle_stats(p);
  return p;
}

CollectivePlan CollectivePlanner::plan(std::span<const DeviceId> group, CollectiveOp op, CollectiveAlgorithm algo,
                                       Bytes bytes) {
  if (group.empty()) throw InputError("collective: the device group is empty");
  for (DeviceId d : group)
    if (d < 0 || d >= cluster_.num_devices())
      throw InputError("collective: device " + std::to_string(d) + " is not in cluster \"" + cluster_.name() +
                       "\", which has " + std::to_string(cluster_.num_devices()) + " devices");
  const std::vector<DeviceId> order = ring_order(group);
  if (algo != CollectiveAlgorithm::Auto) return plan_fixed(order, op, algo, bytes);
  CollectivePlan best;
  TimeNs best_time = std::numeric_limits<TimeNs>::max();
  for (CollectiveAlgorithm candidate : {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Hierarchical,
                                        CollectiveAlgorithm::Tree, CollectiveAlgorithm::HierarchicalTree}) {
    CollectivePlan p = plan_fixed(order, op, candidate, bytes);
    if (p.algorithm != candidate && candidate != CollectiveAlgorithm::Ring) continue;  // did not apply
    const TimeNs t = p.analytic_time(bytes);
    if (t < best_time) best_time = t, best = std::move(p);
  }
  return best;
}

TimeNs CollectivePlanner::analytic_time(std::span<const DeviceId> group, CollectiveOp op, CollectiveAlgorithm algo,
                                        Bytes bytes) {
  return plan(group, op, algo, bytes).analytic_time(bytes);
}

const CollectivePlan& CollectivePlanner::cached_tree_plan(std::span<const DeviceId> group, Bytes bytes) {
  const int op = static_cast<int>(CollectiveOp::AllReduce),
            algo = static_cast<int>(CollectiveAlgorithm::HierarchicalTree);
  auto it = memo_->trees.find(PlanMemo::Query{group, op, algo, 0});
  if (it == memo_->trees.end()) {
    auto shape = std::make_unique<PlanMemo::TreeShape>();
    CollectivePlan p = plan(group, CollectiveOp::AllReduce, CollectiveAlgorithm::HierarchicalTree, bytes);
    std::size_t b = 2 * group.size() * sizeof(DeviceId) + 256;
    for (const auto& pattern : p.patterns) b += pattern.size() * (sizeof(DevicePair) + sizeof(IdleFlow));
    for (const auto& reps : p.representatives) b += reps.size() * sizeof(std::uint32_t);
    memo_->bytes += b;
    if (p.algorithm != CollectiveAlgorithm::HierarchicalTree) {
      shape->fallback = std::make_unique<const CollectivePlan>(std::move(p));
    } else {
      const auto segs = node_segments(cluster_, p.order);
      const auto up = std::find_if(p.phases.begin(), p.phases.end(), [](const CollectivePhase& ph) { return ph.tree; });
      const PatternStats& up_stats = pattern_stats(p.patterns[up->pattern]);
      shape->timing = tree_timing(up_stats.max_latency, up_stats.min_bottleneck, segs.size(),
                                  segs.front().second - segs.front().first);
      shape->base = std::move(p);
      shape->by_chunks.resize(kMaxTreeChunks + 1);
    }
    it = memo_->trees
             .emplace(PlanMemo::Key{std::vector<DeviceId>(group.begin(), group.end()), op, algo, 0}, std::move(shape))
             .first;
  }
  PlanMemo::TreeShape& shape = *it->second;
  if (shape.fallback) return *shape.fallback;
  const std::int64_t chunks = shape.timing.chunks(bytes);
  auto& slot = shape.by_chunks[static_cast<std::size_t>(chunks)];
  if (!slot) {
    // hierarchical_tree()'s plan for this chunk count: only the tree phases' steps and sizes differ.
    auto p = std::make_unique<CollectivePlan>(shape.base);
    for (CollectivePhase& ph : p->phases)
      if (ph.tree) {
        ph.repeats = static_cast<std::uint32_t>(chunks + shape.timing.depth - 1);
        ph.divisor = shape.timing.m * chunks;
      }
    memo_->bytes += 64 * p->phases.size() + 256;
    slot = std::move(p);
  }
  return *slot;
}

const CollectiveChoice& CollectivePlanner::cached_choice(std::span<const DeviceId> group, CollectiveOp op,
                                                         CollectiveAlgorithm algo, Bytes bytes, CollectiveCosts costs,
                                                         double intra_scale, double inter_scale) {
  const PlanMemo::ChoiceQuery query{group,
                                    static_cast<int>(op),
                                    static_cast<int>(algo),
                                    static_cast<int>(costs),
                                    bytes,
                                    std::bit_cast<std::uint64_t>(intra_scale),
                                    std::bit_cast<std::uint64_t>(inter_scale)};
  if (auto it = memo_->choices.find(query); it != memo_->choices.end()) return it->second;
  CollectiveChoice r;
  if (algo != CollectiveAlgorithm::Auto) {
    r.plan = &cached_plan(group, op, algo, bytes);
    const CollectiveCost c = cached_cost(*r.plan, bytes, costs);
    r.time = c.scaled(intra_scale, inter_scale);
    r.protocol = c.protocol;
  } else {
    for (CollectiveAlgorithm a :
         {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Hierarchical, CollectiveAlgorithm::Tree,
          CollectiveAlgorithm::Nvls, CollectiveAlgorithm::HierarchicalTree, CollectiveAlgorithm::Pat}) {
      // NVLS and PAT are part of Nccl costs (their latencies and bandwidth shares are NCCL's).
      if ((a == CollectiveAlgorithm::Nvls || a == CollectiveAlgorithm::Pat) && costs != CollectiveCosts::Nccl) continue;
      // NVLS needs every member on one node (plan_fixed falls back to the ring otherwise).
      if (a == CollectiveAlgorithm::Nvls && !group.empty() && std::any_of(group.begin(), group.end(), [&](DeviceId d) {
            return cluster_.node_of(d) != cluster_.node_of(group.front());
          }))
        continue;
      const CollectivePlan& p = cached_plan(group, op, a, bytes);
      if (p.algorithm != a && a != CollectiveAlgorithm::Ring) continue;  // not applicable here
      const CollectiveCost c = cached_cost(p, bytes, costs);
      const TimeNs time = c.scaled(intra_scale, inter_scale);
      if (!r.plan || time < r.time) {
        r.plan = &p;
        r.time = time;
        r.protocol = c.protocol;
      }
    }
  }
  memo_->bytes += group.size() * sizeof(DeviceId) + 96;
  return memo_->choices
      .emplace(PlanMemo::ChoiceKey{std::vector<DeviceId>(group.begin(), group.end()), query.op, query.algo, query.costs,
                                   bytes, query.intra, query.inter},
               r)
      .first->second;
}

const CollectivePlan& CollectivePlanner::cached_plan(std::span<const DeviceId> group, CollectiveOp op,
                                                     CollectiveAlgorithm algo, Bytes bytes) {
  if (op == CollectiveOp::AllReduce && algo == CollectiveAlgorithm::HierarchicalTree)
    return cached_tree_plan(group, bytes);
  // Reduce-scatter and all-gather have a ring and PAT, all-to-all one plan, whatever the algorithm
  // asked; PAT asked of any other op is its ring (plan_fixed): one plan object either way.
  const bool scatter_gather = op == CollectiveOp::ReduceScatter || op == CollectiveOp::AllGather;
  if (algo == CollectiveAlgorithm::Pat
          ? !scatter_gather
          : algo != CollectiveAlgorithm::Auto && (scatter_gather || op == CollectiveOp::AllToAll))
    algo = CollectiveAlgorithm::Ring;
  const bool sized = op == CollectiveOp::Broadcast || algo == CollectiveAlgorithm::Auto;  // chunks depend on the size
  const PlanMemo::Query query{group, static_cast<int>(op), static_cast<int>(algo), sized ? bytes : 0};
  if (auto it = memo_->plans.find(query); it != memo_->plans.end()) return *it->second;
  PlanMemo::Key key{std::vector<DeviceId>(group.begin(), group.end()), query.op, query.algo, query.bytes};
  auto p = std::make_unique<const CollectivePlan>(plan(group, op, algo, bytes));
  std::size_t b = 2 * group.size() * sizeof(DeviceId) + 256;
  for (const auto& pattern : p->patterns) b += pattern.size() * (sizeof(DevicePair) + sizeof(IdleFlow));
  for (const auto& reps : p->representatives) b += reps.size() * sizeof(std::uint32_t);
  memo_->bytes += b;
  return *memo_->plans.emplace(std::move(key), std::move(p)).first->second;
}

CollectiveCost CollectivePlanner::cached_cost(const CollectivePlan& plan, Bytes bytes, CollectiveCosts costs) {
  if (costs == CollectiveCosts::Links) return {cached_time(plan, bytes), CollectiveProtocol::Simple, 0};
  const auto [it, fresh] = memo_->costs.try_emplace({&plan, bytes}, CollectiveCost{});
  if (fresh) {
    it->second = plan.cost(bytes, costs);
    memo_->bytes += 48;
  }
  return it->second;
}

TimeNs CollectivePlanner::cached_time(const CollectivePlan& plan, Bytes bytes) {
  const auto [it, fresh] = memo_->times.try_emplace({&plan, bytes}, 0);
  if (fresh) {
    it->second = plan.analytic_time(bytes);
    memo_->bytes += 48;
  }
  return it->second;
}

std::size_t CollectivePlanner::memo_bytes() const {
  return memo_->bytes + ring_cache_->order_bytes + routes_->memory_bytes();
}

void CollectivePlanner::trim(std::size_t max_bytes) {
  if (memo_bytes() <= max_bytes) return;
  memo_->plans.clear();
  memo_->times.clear();
  memo_->costs.clear();
  memo_->trees.clear();
  memo_->choices.clear();
  memo_->patterns.clear();
  memo_->bytes = 0;
  ring_cache_->orders.clear();
  ring_cache_->segment_perms.clear();
  ring_cache_->order_bytes = 0;
  routes_->clear();
}

}  // namespace parasim::simulator
