// Private: max-min fair rates for flows over directed links, by progressive filling - raise
// every unfrozen flow's rate together until some link is full, freeze the flows crossing the
// full links at that rate, repeat. This is what TCP-like and credit-based fabrics converge to,
// and it is the unique allocation in which no flow can speed up without slowing a slower one.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "parasim/hardware/cluster.hpp"

namespace parasim::simulator {

class MaxMinSolver {
 public:
  explicit MaxMinSolver(std::size_t num_directed_links)
      : stamp_(num_directed_links, 0), local_(num_directed_links, 0) {}

  /// `flows[i]` lists the directed links flow i crosses (at least one); `capacity` is indexed
  /// by directed link id in bytes/ns; writes `rates[i]`. `caps`, when not empty, bounds each
  /// flow's rate (a flow standing for a class of messages that share links: its idle share).
  void solve(std::span<const std::span<const hardware::DirLinkId>> flows, std::span<const double> capacity,
             std::span<double> rates, std::span<const double> caps = {});

 private:
  static constexpr std::size_t kSmall = 8;  // up to this many flows: solve_small()
  void solve_small(std::span<const std::span<const hardware::DirLinkId>> flows, std::span<double> rates,
                   std::span<const double> caps);
  /// The lowest fair share over the links still carrying unfrozen flows.
  double lowest_fair_share() const;
  /// The lowest own cap among the unfrozen flows (infinity without caps).
  double lowest_open_cap(std::span<const double> caps) const;
  /// Freezes flow f at `share`: its rate, and its links' leftover capacity and open-flow counts.
  void freeze(std::span<const hardware::DirLinkId> links, std::size_t f, double share, std::span<double> rates);
  std::vector<std::uint32_t> stamp_;
  std::uint32_t epoch_ = 0;
  std::vector<std::int32_t> local_;
  std::vector<double> cap_;
  std::vector<std::int32_t> cnt_;
  std::vector<std::uint32_t> offsets_;
  std::vector<std::uint32_t> pos_;
  std::vector<std::uint32_t> link_flows_;
  std::vector<std::uint8_t> frozen_;
  std::vector<std::int32_t> bottlenecks_;
  std::vector<std::uint8_t> bottleneck_;  // solve_small(): per local link, at this round's share
};

}  // namespace parasim::simulator
