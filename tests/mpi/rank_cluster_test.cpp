// Which rank pairs the link probe measures, and the cluster built from what the ranks report:
// hand-computed layouts and routes (no launcher needed).
#include <gtest/gtest.h>

#include <vector>

#include "parasim/common/error.hpp"
#include "parasim/hardware/cluster.hpp"
#include "parasim/mpi/link_probe.hpp"

namespace parasim::mpi {
namespace {

TEST(ProbePairs, OnePairPerHostAndPerHostPair) {
  // Ranks 0,1 on host 0; 2,3,4 on host 1; 5 on host 2.
  bool limited = true;
  const auto pairs = probe_pairs({0, 0, 1, 1, 1, 2}, &limited);
  EXPECT_FALSE(limited);
  EXPECT_EQ(pairs, (std::vector<ProbePair>{{0, 1, 0, 0}, {2, 3, 1, 1}, {0, 2, 0, 1}, {0, 5, 0, 2}, {2, 5, 1, 2}}));
}

TEST(ProbePairs, OneHostIsOnePair) {
  EXPECT_EQ(probe_pairs({0, 0, 0, 0}), (std::vector<ProbePair>{{0, 1, 0, 0}}));
  EXPECT_EQ(probe_pairs({0, 0}), (std::vector<ProbePair>{{0, 1, 0, 0}}));
}

TEST(ProbePairs, ManyHostsProbeHostZeroWithEachOther) {
  std::vector<int> hosts;
  for (int h = 0; h < kMaxHostsAllPairs + 2; ++h) hosts.push_back(h);  // one rank per host, 10 hosts
  bool limited = false;
  const auto pairs = probe_pairs(hosts, &limited);
  EXPECT_TRUE(limited);
  ASSERT_EQ(pairs.size(), 9u);  // not 45
  for (std::size_t k = 0; k < pairs.size(); ++k)
    EXPECT_EQ(pairs[k], (ProbePair{0, static_cast<int>(k) + 1, 0, static_cast<int>(k) + 1}));
  bool all = true;
  EXPECT_EQ(probe_pairs(std::vector<int>(hosts.begin(), hosts.begin() + kMaxHostsAllPairs), &all).size(), 28u);
  EXPECT_FALSE(all);
}

ProbedPair measured(ProbePair p, double alpha_ns, double beta_gbps) {
  ProbedPair out{p, {}, {}};
  out.fit.alpha_ns = alpha_ns;
  out.fit.beta_gbps = beta_gbps;
  return out;
}

TEST(RankCluster, TwoHostsOfTwoRanksRouteAsMeasured) {
  RankLinkProbe probe;
  probe.transport = ProbeTransport::Nccl;
  probe.host_of_rank = {0, 0, 1, 1};
  probe.pairs = {measured({0, 1, 0, 0}, 8'000, 200), measured({2, 3, 1, 1}, 10'000, 100),
                 measured({0, 2, 0, 1}, 30'000, 20)};
  const hardware::Cluster c(cluster_from_ranks(probe, "H100-SXM5-80GB", 80 * GiB));
  ASSERT_EQ(c.num_devices(), 4);
  EXPECT_EQ(c.spec().devices[2].node, 1);
  // Medians of the intra pairs {8, 10} us -> 8 us (lower median), {200, 100} GB/s -> 100.
  const hardware::RouteSummary intra = c.route_summary(0, 1);
  EXPECT_EQ(intra.hops, 2);
  EXPECT_EQ(intra.latency, 8'000);
  EXPECT_DOUBLE_EQ(intra.bottleneck.value, 100);
  const hardware::RouteSummary inter = c.route_summary(1, 3);
  EXPECT_EQ(inter.hops, 4);
  EXPECT_EQ(inter.latency, 30'000);
  EXPECT_DOUBLE_EQ(inter.bottleneck.value, 20);
}

TEST(RankCluster, OneRankPerHostTakesTheInterHostNumbers) {
  RankLinkProbe probe;
  probe.host_of_rank = {0, 1};
  probe.pairs = {measured({0, 1, 0, 1}, 50'000, 1.25)};
  const hardware::ClusterSpec s = cluster_from_ranks(probe, "H100-SXM5-80GB", 80 * GiB);
  EXPECT_NE(s.description.find("no intra-host pair, taken as the inter-host pairs"), std::string::npos);
  const hardware::Cluster c(s);
  EXPECT_EQ(c.route_summary(0, 1).latency, 50'000);
  EXPECT_DOUBLE_EQ(c.route_summary(0, 1).bottleneck.value, 1.25);
}

TEST(RankCluster, NothingMeasuredIsAnError) {
  RankLinkProbe probe;
  probe.host_of_rank = {0, 0};
  EXPECT_THROW(cluster_from_ranks(probe, "H100-SXM5-80GB", 80 * GiB), InputError);
}

}  // namespace
}  // namespace parasim::mpi
