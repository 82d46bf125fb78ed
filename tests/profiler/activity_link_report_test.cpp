// The link probe's reporting side without a GPU: message sizes, nccl-tests points and tables,
// alpha-beta fits of fabricated curves, the profile and the cluster built from them.
#include <gtest/gtest.h>

#include <sstream>

#include "parasim/common/error.hpp"
#include "parasim/hardware/cluster.hpp"
#include "parasim/profiler/alpha_beta.hpp"
#include "parasim/profiler/link_probe.hpp"

namespace parasim::profiler {
namespace {

/// A curve following time = alpha + bytes / beta exactly.
LinkCurve synthetic_curve(const std::string& kind, int src, int dst, double alpha_ns, double beta_gbps,
                          const std::string& collective = "", int ranks = 0) {
  LinkCurve c;
  c.kind = kind;
  c.src = src;
  c.dst = dst;
  c.collective = collective;
  c.ranks = ranks;
  const double factor = collective.empty() ? 1.0 : busbw_factor(CollectiveOp::AllReduce, ranks);
  for (Bytes s : probe_sizes(1 * KiB, 1 * GiB, 4)) {
    const auto t = static_cast<TimeNs>(std::llround(alpha_ns + static_cast<double>(s) / beta_gbps));
    c.points.push_back(make_link_point(s, t, factor));
  }
  fit_link_curve(c);
  return c;
}

GpuDeviceInfo gpu(int index, const std::string& kind = "H200-SXM-141GB") {
  GpuDeviceInfo g;
  g.index = index;
  g.name = "NVIDIA H200";
  g.kind = kind;
  g.memory = 141 * GB;
  return g;
}

LinkProbeResult box(int n, double peer_gbps, bool all_pairs = true) {
  LinkProbeResult r;
  for (int i = 0; i < n; ++i) {
    r.devices.push_back(gpu(i));
    r.curves.push_back(synthetic_curve("pcie-h2d", i, i, 9000, 50));
    r.curves.push_back(synthetic_curve("pcie-d2h", i, i, 11000, 45));
  }
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (i != j && (all_pairs || i == 0 || j == 0))
        r.curves.push_back(synthetic_curve(classify_peer_link(peer_gbps), i, j, 8000, peer_gbps));
  return r;
}

TEST(LinkProbeSizes, DoublingAndQuadruplingFrom1KiBTo1GiB) {
  const auto x2 = probe_sizes(1 * KiB, 1 * GiB, 2);
  ASSERT_EQ(x2.size(), 21u);
  EXPECT_EQ(x2.front(), 1024);
  EXPECT_EQ(x2[1], 2048);
  EXPECT_EQ(x2.back(), 1 * GiB);
  const auto x4 = probe_sizes(1 * KiB, 1 * GiB, 4);
  ASSERT_EQ(x4.size(), 11u);
  EXPECT_EQ(x4[1], 4096);
  EXPECT_EQ(x4.back(), 1 * GiB);
  // A maximum off the grid is still measured.
  const auto odd = probe_sizes(1000, 5000, 2);
  EXPECT_EQ(odd, (std::vector<Bytes>{1000, 2000, 4000, 5000}));
  EXPECT_EQ(probe_sizes(64, 64, 4), std::vector<Bytes>{64});
}

TEST(LinkProbeSizes, RejectsBadRanges) {
  EXPECT_THROW(probe_sizes(0, 1024, 2), InputError);
  EXPECT_THROW(probe_sizes(2048, 1024, 2), InputError);
  EXPECT_THROW(probe_sizes(1024, 4096, 3), InputError);
}

TEST(LinkProbePoints, AlgbwIsBytesPerNanosecondAndBusbwScales) {
  const LinkPoint p = make_link_point(1'000'000, 10'000, 1.75);  // 1 MB in 10 us
  EXPECT_DOUBLE_EQ(p.algbw, 100.0);
  EXPECT_DOUBLE_EQ(p.busbw, 175.0);
  EXPECT_EQ(p.time_ns, 10'000);
  EXPECT_DOUBLE_EQ(make_link_point(4096, 0, 1.0).algbw, 0.0);  // no time: no bandwidth, no division by 0
  // nccl-tests factors for 8 ranks.
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::AllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::AllGather, 8), 0.875);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::ReduceScatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::AllReduce, 1), 0.0);
}

TEST(LinkProbeFit, RecoversAlphaAndBetaOfAnExactLine) {
  const LinkCurve c = synthetic_curve("pcie-h2d", 0, 0, 9000, 50);
  ASSERT_FALSE(c.fit.segments.empty());
  EXPECT_NEAR(c.fit.segments.front().alpha_ns, 9000, 5);
  EXPECT_NEAR(c.fit.segments.back().beta_gbps, 50, 0.05);
}

TEST(LinkProbeClassify, BandwidthBeyondPcieMeansNvlink) {
  EXPECT_EQ(classify_peer_link(300), "nvlink");
  EXPECT_EQ(classify_peer_link(25), "pcie");
  EXPECT_EQ(classify_peer_link(64), "pcie");
}

TEST(LinkProbeTable, NcclTestsColumns) {
  LinkCurve c;
  c.kind = "nccl";
  c.collective = "allreduce";
  c.ranks = 8;
  c.src = 0;
  c.dst = 7;
  c.points.push_back(make_link_point(1024, 10'520, busbw_factor(CollectiveOp::AllReduce, 8)));
  std::ostringstream out;
  print_link_table(out, c);
  const std::string s = out.str();
  EXPECT_NE(s.find("#  allreduce x8 (nccl)"), std::string::npos) << s;
  EXPECT_NE(s.find("size"), std::string::npos);
  EXPECT_NE(s.find("count"), std::string::npos);
  EXPECT_NE(s.find("type"), std::string::npos);
  EXPECT_NE(s.find("time(us)"), std::string::npos);
  EXPECT_NE(s.find("algbw(GB/s)"), std::string::npos);
  EXPECT_NE(s.find("busbw(GB/s)"), std::string::npos);
  // 1024 bytes = 256 floats, 10.52 us, algbw 0.10, busbw 0.17
  EXPECT_NE(s.find("1024           256  float       10.52         0.10         0.17"), std::string::npos) << s;
}

TEST(LinkProbeTable, LabelsNameTheEndpoints) {
  EXPECT_EQ(link_curve_label(synthetic_curve("pcie-h2d", 2, 2, 1, 1)), "h2d gpu2");
  EXPECT_EQ(link_curve_label(synthetic_curve("pcie-d2h", 2, 2, 1, 1)), "d2h gpu2");
  EXPECT_EQ(link_curve_label(synthetic_curve("d2d", 1, 1, 1, 1)), "d2d gpu1");
  EXPECT_EQ(link_curve_label(synthetic_curve("nvlink", 0, 3, 1, 1)), "p2p gpu0->gpu3");
}

TEST(LinkProbeProfile, CarriesEveryCurveAndNoOps) {
  const LinkProbeResult r = box(2, 300);
  const Profile p = link_probe_profile(r);
  EXPECT_EQ(p.links.size(), r.curves.size());
  EXPECT_TRUE(p.ops.empty());
  EXPECT_EQ(p.source, CostSource::MeasuredGpu);
  EXPECT_EQ(p.device.kind, "H200-SXM-141GB");
  // And it survives the profile format's validation.
  EXPECT_EQ(profile_from_json(to_json(p), "links.json").links.size(), r.curves.size());
}

TEST(LinkProbeCluster, UniformNvlinkAmongFourGpusBecomesAnNvswitch) {
  const hardware::ClusterSpec spec = cluster_spec_from_probe(box(4, 300), "hgx");
  ASSERT_EQ(spec.devices.size(), 4u);
  ASSERT_EQ(spec.endpoints.size(), 2u);
  EXPECT_EQ(spec.endpoints[1].kind, hardware::EndpointKind::NvSwitch);
  ASSERT_EQ(spec.links.size(), 8u);  // 4 PCIe + 4 NVSwitch
  EXPECT_EQ(spec.links[0].kind, hardware::LinkKind::PCIe);
  EXPECT_NEAR(spec.links[0].bandwidth.value, 45, 0.1);            // the slower of h2d 50 and d2h 45
  EXPECT_NEAR(static_cast<double>(spec.links[0].alpha), 10000, 10);  // mean of 9 us and 11 us
  EXPECT_EQ(spec.links[4].kind, hardware::LinkKind::NVSwitch);
  EXPECT_NEAR(spec.links[4].bandwidth.value, 300, 0.5);
  EXPECT_NEAR(static_cast<double>(spec.links[4].alpha), 4000, 10);   // 8 us split over two hops
  const hardware::Cluster cluster(spec);  // validates
  EXPECT_EQ(cluster.route(0, 3).size(), 2u);
}

TEST(LinkProbeCluster, TwoGpusGetADirectLink) {
  const hardware::ClusterSpec spec = cluster_spec_from_probe(box(2, 40), "pcie-pair");
  ASSERT_EQ(spec.links.size(), 3u);
  EXPECT_EQ(spec.links[2].kind, hardware::LinkKind::PCIe);
  EXPECT_EQ(spec.links[2].a, 0);
  EXPECT_EQ(spec.links[2].b, 1);
  const hardware::Cluster cluster(spec);
  EXPECT_EQ(cluster.route(0, 1).size(), 1u);
}

TEST(LinkProbeCluster, PairsWithoutPeerCurvesRouteThroughTheHost) {
  const hardware::ClusterSpec spec = cluster_spec_from_probe(box(3, 300, /*all_pairs=*/false), "partial");
  // Pairs (0,1) and (0,2) measured both ways; (1,2) not: no switch inferred, direct links only.
  ASSERT_EQ(spec.links.size(), 3u + 2u);
  const hardware::Cluster cluster(spec);
  EXPECT_EQ(cluster.route(1, 2).size(), 2u);  // gpu1 -> cpu0 -> gpu2
}

TEST(LinkProbeCluster, NeedsHostCopies) {
  LinkProbeResult r = box(2, 300);
  std::erase_if(r.curves, [](const LinkCurve& c) { return c.kind == "pcie-h2d"; });
  EXPECT_THROW(cluster_spec_from_probe(r, "x"), InputError);
  EXPECT_THROW(cluster_spec_from_probe(LinkProbeResult{}, "x"), InputError);
}

}  // namespace
}  // namespace parasim::profiler
