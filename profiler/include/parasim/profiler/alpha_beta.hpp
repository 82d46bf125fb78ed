// Fitting time(bytes) = alpha + bytes / beta to measured message times, one line or piecewise,
// and the nccl-tests bus-bandwidth factors.
//
// A single line rarely fits a link from 8 B to 1 GiB: small messages are latency-bound (protocol
// LL/LL128 in NCCL, eager copies), large ones bandwidth-bound with a different setup cost. The
// piecewise fit splits the size range where one line leaves a large relative error.
//
// Example:
//   std::vector<SizeTime> pts = {{8, 5'000}, {1 << 20, 15'000}, {1 << 30, 10'000'000}};
//   PiecewiseAlphaBeta fit = fit_piecewise(pts);
//   TimeNs t = fit.evaluate(64 * MiB);
//   double bus = busbw_factor(CollectiveOp::AllReduce, 8);   // 2 * 7 / 8 = 1.75
#pragma once

#include <string>
#include <vector>

#include "parasim/common/collective_op.hpp"
#include "parasim/common/units.hpp"

namespace parasim::profiler {

struct SizeTime {
  Bytes bytes = 0;
  double time_ns = 0;
};

/// time = alpha_ns + bytes / beta_gbps over [min_bytes, max_bytes] (inclusive).
struct AlphaBetaSegment {
  Bytes min_bytes = 0;
  Bytes max_bytes = 0;
  double alpha_ns = 0;
  double beta_gbps = 0;  // decimal GB/s == bytes per ns
  double time_ns(Bytes bytes) const { return alpha_ns + static_cast<double>(bytes) / beta_gbps; }
  bool operator==(const AlphaBetaSegment&) const = default;
};

struct PiecewiseAlphaBeta {
  std::vector<AlphaBetaSegment> segments;  // sorted, contiguous; the first starts at 0
  /// Time of a `bytes` message: the segment whose range holds it; sizes beyond the last segment
  /// use the last one (extrapolation), an empty fit returns 0.
  TimeNs evaluate(Bytes bytes) const;
  const AlphaBetaSegment& segment_for(Bytes bytes) const;
  bool operator==(const PiecewiseAlphaBeta&) const = default;
};

/// Least squares of time = alpha + bytes/beta minimising the *relative* error
/// sum(((alpha + b*bytes - t) / t)^2), so 8-byte and 1-GiB points weigh alike. A negative
/// intercept is clamped to 0 (refit through the origin); a non-positive slope (pure latency) gives
/// beta = kMaxBetaGbps. Needs >= 1 point with time > 0 (InputError otherwise).
AlphaBetaSegment fit_alpha_beta(const std::vector<SizeTime>& points);

inline constexpr double kMaxBetaGbps = 1e6;

struct PiecewiseOptions {
  double max_relative_error = 0.05;  // stop splitting once every point is within 5%
  int max_segments = 4;
  int min_points_per_segment = 3;
};

/// For k = 1, 2, ... max_segments: the k-segment split minimising the total squared relative error
/// (exact, by dynamic programming over the breakpoints between points); returns the first k whose
/// worst point is within max_relative_error, else the best max_segments split.
PiecewiseAlphaBeta fit_piecewise(std::vector<SizeTime> points, const PiecewiseOptions& options = {});

/// Largest |fit(bytes) - t| / t over the points.
double max_relative_error(const PiecewiseAlphaBeta& fit, const std::vector<SizeTime>& points);

/// The nccl-tests name of a collective, which link probe curves record in their "collective"
/// field: "allreduce", "reducescatter", "allgather", "broadcast", "alltoall" (the task graph
/// spells them "reduce_scatter", ...: to_string(CollectiveOp)).
std::string nccl_tests_name(CollectiveOp op);
/// busbw = algbw * factor (nccl-tests PERFORMANCE.md): allreduce 2(n-1)/n, allgather,
/// reduce-scatter and alltoall (n-1)/n, broadcast 1.
double busbw_factor(CollectiveOp op, int ranks);

}  // namespace parasim::profiler
