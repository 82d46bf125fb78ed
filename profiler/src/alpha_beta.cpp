#include "parasim/profiler/alpha_beta.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "parasim/common/error.hpp"

namespace parasim::profiler {

namespace {

/// Weighted least squares with weights 1/t^2 on points [first, last).
AlphaBetaSegment fit_range(const std::vector<SizeTime>& pts, std::size_t first, std::size_t last) {
  double sw = 0, sx = 0, st = 0;
  for (std::size_t i = first; i < last; ++i) {
    const double w = 1.0 / (pts[i].time_ns * pts[i].time_ns);
    sw += w;
    sx += w * static_cast<double>(pts[i].bytes);
    st += w * pts[i].time_ns;
  }
  const double xm = sx / sw, tm = st / sw;
  double sxx = 0, sxt = 0, sxx0 = 0, sxt0 = 0;  // centred, and through-the-origin sums
  for (std::size_t i = first; i < last; ++i) {
    const double w = 1.0 / (pts[i].time_ns * pts[i].time_ns);
    const double x = static_cast<double>(pts[i].bytes), t = pts[i].time_ns;
    sxx += w * (x - xm) * (x - xm);
    sxt += w * (x - xm) * (t - tm);
    sxx0 += w * x * x;
    sxt0 += w * x * t;
  }
  double slope = 0, alpha = 0;  // slope in ns per byte = 1 / beta
  if (sxx > 0) {
    slope = sxt / sxx;
    alpha = tm - slope * xm;
  } else if (xm > 0) {
    slope = sxt0 / sxx0;  // all points at one size: attribute the time to bandwidth
  } else {
    alpha = tm;
  }
  if (alpha < 0 && sxx0 > 0) {  // a line through the origin fits better than a negative latency
    alpha = 0;
    slope = sxt0 / sxx0;
  }
  if (slope <= 1.0 / kMaxBetaGbps) {  // flat or falling: latency-bound, no bandwidth term
    slope = 1.0 / kMaxBetaGbps;
    alpha = std::max(0.0, tm - slope * xm);
  }
  AlphaBetaSegment s;
  s.min_bytes = pts[first].bytes;
  s.max_bytes = pts[last - 1].bytes;
  s.alpha_ns = alpha;
  s.beta_gbps = 1.0 / slope;
  return s;
}

double relative_error(const AlphaBetaSegment& s, const SizeTime& p) {
  return (s.time_ns(p.bytes) - p.time_ns) / p.time_ns;
}

double squared_error(const AlphaBetaSegment& s, const std::vector<SizeTime>& pts, std::size_t first, std::size_t last) {
  double e = 0;
  for (std::size_t i = first; i < last; ++i) e += relative_error(s, pts[i]) * relative_error(s, pts[i]);
  return e;
}

double worst_error(const AlphaBetaSegment& s, const std::vector<SizeTime>& pts, std::size_t first, std::size_t last) {
  double e = 0;
  for (std::size_t i = first; i < last; ++i) e = std::max(e, std::abs(relative_error(s, pts[i])));
  return e;
}

std::vector<SizeTime> checked(std::vector<SizeTime> points) {
  points.erase(
      std::remove_if(points.begin(), points.end(), [](const SizeTime& p) { return !(p.time_ns > 0) || p.bytes < 0; }),
      points.end());
  if (points.empty()) throw InputError("alpha-beta fit: no point with a positive time and non-negative size");
  std::sort(points.begin(), points.end(), [](const SizeTime& a, const SizeTime& b) { return a.bytes < b.bytes; });
  return points;
}

}  // namespace

AlphaBetaSegment fit_alpha_beta(const std::vector<SizeTime>& points) {
  const std::vector<SizeTime> pts = checked(points);
  AlphaBetaSegment s = fit_range(pts, 0, pts.size());
  s.min_bytes = 0;
  return s;
}

PiecewiseAlphaBeta fit_piecewise(std::vector<SizeTime> points, const PiecewiseOptions& options) {
  const std::vector<SizeTime> pts = checked(std::move(points));
  const std::size_t n = pts.size();
  const std::size_t min_pts = static_cast<std::size_t>(std::max(options.min_points_per_segment, 2));
  const std::size_t max_k = std::max<std::size_t>(
      1, std::min<std::size_t>(static_cast<std::size_t>(std::max(options.max_segments, 1)), n / min_pts));
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // cost[i][j]: total squared relative error of one line fitted to points [i, j).
  std::vector<std::vector<double>> cost(n + 1, std::vector<double>(n + 1, kInf));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + min_pts; j <= n; ++j) cost[i][j] = squared_error(fit_range(pts, i, j), pts, i, j);
  if (n < min_pts) cost[0][n] = squared_error(fit_range(pts, 0, n), pts, 0, n);

  // best[k][j]: least total error of k segments covering [0, j); from[k][j]: start of the last one.
  std::vector<std::vector<double>> best(max_k + 1, std::vector<double>(n + 1, kInf));
  std::vector<std::vector<std::size_t>> from(max_k + 1, std::vector<std::size_t>(n + 1, 0));
  best[0][0] = 0;
  auto ranges_for = [&](std::size_t k) {
    std::vector<std::pair<std::size_t, std::size_t>> r;
    for (std::size_t j = n; k > 0; --k) {
      r.emplace_back(from[k][j], j);
      j = from[k][j];
    }
    std::reverse(r.begin(), r.end());
    return r;
  };
  std::vector<std::pair<std::size_t, std::size_t>> chosen{{0, n}};
  for (std::size_t k = 1; k <= max_k; ++k) {
    for (std::size_t j = 1; j <= n; ++j)
      for (std::size_t i = 0; i < j; ++i) {
        if (best[k - 1][i] == kInf || cost[i][j] == kInf) continue;
        const double e = best[k - 1][i] + cost[i][j];
        if (e < best[k][j]) {
          best[k][j] = e;
          from[k][j] = i;
        }
      }
    if (best[k][n] == kInf) continue;
    chosen = ranges_for(k);
    double worst = 0;
    for (const auto& [a, b] : chosen) worst = std::max(worst, worst_error(fit_range(pts, a, b), pts, a, b));
    if (worst <= options.max_relative_error) break;  // the fewest segments that fit well enough
  }
  PiecewiseAlphaBeta fit;
  for (std::size_t r = 0; r < chosen.size(); ++r) {
    AlphaBetaSegment s = fit_range(pts, chosen[r].first, chosen[r].second);
    s.min_bytes = r == 0 ? 0 : pts[chosen[r].first].bytes;
    s.max_bytes = r + 1 < chosen.size() ? pts[chosen[r + 1].first].bytes - 1 : pts[chosen[r].second - 1].bytes;
    fit.segments.push_back(s);
  }
  return fit;
}

const AlphaBetaSegment& PiecewiseAlphaBeta::segment_for(Bytes bytes) const {
  if (segments.empty()) throw RuntimeError("alpha-beta: evaluating an empty fit");
  for (const auto& s : segments)
    if (bytes <= s.max_bytes) return s;
  return segments.back();
}

TimeNs PiecewiseAlphaBeta::evaluate(Bytes bytes) const {
  if (segments.empty()) return 0;
  // Loaded fits may hold absurd (but finite) alphas: saturate instead of overflowing.
  constexpr double kMaxNs = 9.0e18;
  return static_cast<TimeNs>(std::llround(std::clamp(segment_for(bytes).time_ns(bytes), 0.0, kMaxNs)));
}

double max_relative_error(const PiecewiseAlphaBeta& fit, const std::vector<SizeTime>& points) {
  double e = 0;
  for (const auto& p : points)
    if (p.time_ns > 0) e = std::max(e, std::abs(fit.segment_for(p.bytes).time_ns(p.bytes) - p.time_ns) / p.time_ns);
  return e;
}

std::string nccl_tests_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllReduce: return "allreduce";
    case CollectiveOp::ReduceScatter: return "reducescatter";
    case CollectiveOp::AllGather: return "allgather";
    case CollectiveOp::Broadcast: return "broadcast";
    case CollectiveOp::AllToAll: return "alltoall";
  }
  return "?";
}

double busbw_factor(CollectiveOp op, int ranks) {
  const double n = std::max(ranks, 1);
  switch (op) {
    case CollectiveOp::AllReduce: return 2.0 * (n - 1) / n;
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllGather:
    case CollectiveOp::AllToAll: return (n - 1) / n;
    case CollectiveOp::Broadcast: return 1.0;
  }
  return 1.0;
}

}  // namespace parasim::profiler
