#include "parasim/profiler/alpha_beta.hpp"

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"

namespace parasim::profiler {
namespace {

std::vector<SizeTime> line(double alpha, double beta, Bytes from, Bytes to) {
  std::vector<SizeTime> pts;
  for (Bytes b = from; b <= to; b *= 2) pts.push_back({b, alpha + static_cast<double>(b) / beta});
  return pts;
}

TEST(AlphaBeta, RecoversASingleLine) {
  const auto pts = line(5'000, 12.5, 8, Bytes{1} << 30);
  const AlphaBetaSegment s = fit_alpha_beta(pts);
  EXPECT_NEAR(s.alpha_ns, 5'000, 5'000 * 1e-3);
  EXPECT_NEAR(s.beta_gbps, 12.5, 12.5 * 1e-3);
  EXPECT_EQ(s.min_bytes, 0);
  EXPECT_EQ(s.max_bytes, Bytes{1} << 30);
  const PiecewiseAlphaBeta fit = fit_piecewise(pts);
  ASSERT_EQ(fit.segments.size(), 1u);
  EXPECT_LT(max_relative_error(fit, pts), 1e-9);
}

TEST(AlphaBeta, SplitsLatencyAndBandwidthRegimes) {
  // Small messages: 5 us + bytes / 5 GB/s; from 128 KiB on: 20 us + bytes / 100 GB/s.
  auto pts = line(5'000, 5.0, 8, 64 * KiB);
  const auto large = line(20'000, 100.0, 128 * KiB, Bytes{1} << 30);
  pts.insert(pts.end(), large.begin(), large.end());
  const PiecewiseAlphaBeta fit = fit_piecewise(pts);
  ASSERT_EQ(fit.segments.size(), 2u);
  const auto& small_seg = fit.segments[0];
  const auto& large_seg = fit.segments[1];
  EXPECT_NEAR(small_seg.alpha_ns, 5'000, 5.0);
  EXPECT_NEAR(small_seg.beta_gbps, 5.0, 5e-3);
  EXPECT_NEAR(large_seg.alpha_ns, 20'000, 20.0);
  EXPECT_NEAR(large_seg.beta_gbps, 100.0, 0.1);
  EXPECT_EQ(small_seg.min_bytes, 0);
  EXPECT_EQ(small_seg.max_bytes, 128 * KiB - 1);
  EXPECT_EQ(large_seg.min_bytes, 128 * KiB);
  EXPECT_EQ(fit.evaluate(1 * MiB), 30'486);        // 20'000 + 1'048'576 / 100
  EXPECT_EQ(fit.evaluate(1024), 5'205);             // 5'000 + 1'024 / 5
  EXPECT_EQ(fit.evaluate(Bytes{1} << 31), 21'494'836);  // beyond the last point: last segment
}

TEST(AlphaBeta, ThreeRegimes) {
  auto pts = line(3'000, 2.0, 8, 4 * KiB);
  auto mid = line(6'000, 20.0, 8 * KiB, 1 * MiB);
  auto big = line(50'000, 200.0, 2 * MiB, Bytes{1} << 30);
  pts.insert(pts.end(), mid.begin(), mid.end());
  pts.insert(pts.end(), big.begin(), big.end());
  const PiecewiseAlphaBeta fit = fit_piecewise(pts);
  ASSERT_EQ(fit.segments.size(), 3u);
  EXPECT_NEAR(fit.segments[1].alpha_ns, 6'000, 6.0);
  EXPECT_NEAR(fit.segments[2].beta_gbps, 200.0, 0.2);
  EXPECT_LT(max_relative_error(fit, pts), 1e-6);
}

TEST(AlphaBeta, ClampsNegativeLatencyAndFlatCurves) {
  // Slightly super-linear timings would give a negative intercept: refit through the origin.
  const std::vector<SizeTime> steep = {{1'000, 90}, {2'000, 200}, {4'000, 420}};
  const AlphaBetaSegment s = fit_alpha_beta(steep);
  EXPECT_EQ(s.alpha_ns, 0);
  EXPECT_GT(s.beta_gbps, 0);
  // Pure latency: no bandwidth term.
  const std::vector<SizeTime> flat = {{8, 5'000}, {64, 5'000}, {512, 5'000}};
  const AlphaBetaSegment f = fit_alpha_beta(flat);
  EXPECT_EQ(f.beta_gbps, kMaxBetaGbps);
  EXPECT_NEAR(f.alpha_ns, 5'000, 1.0);
  EXPECT_THROW(fit_alpha_beta({}), InputError);
}

TEST(AlphaBeta, BusBandwidthFactors) {
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::AllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::AllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::AllGather, 8), 0.875);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::ReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::Broadcast, 8), 1.0);
  EXPECT_EQ(nccl_tests_name(CollectiveOp::ReduceScatter), "reducescatter");
}

// nccl-tests, all-to-all: busbw = algbw * (n-1)/n; its names are the probe files' "collective".
TEST(AlphaBeta, AllToAllFactorAndNcclTestsNames) {
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::AllToAll, 8), 0.875);
  EXPECT_EQ(nccl_tests_name(CollectiveOp::AllReduce), "allreduce");
  EXPECT_EQ(nccl_tests_name(CollectiveOp::AllGather), "allgather");
  EXPECT_EQ(nccl_tests_name(CollectiveOp::Broadcast), "broadcast");
  EXPECT_EQ(nccl_tests_name(CollectiveOp::AllToAll), "alltoall");
}

}  // namespace
}  // namespace parasim::profiler
