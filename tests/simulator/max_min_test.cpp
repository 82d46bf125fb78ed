// The engine's private max-min solver (simulator/src/max_min.hpp): a hand-computed allocation,
// and rates that do not depend on unrelated flows solved alongside. Max-min fairness decomposes
// over connected components, and progressive filling touches a link only when a flow crossing it
// freezes, so a group of flows solved alone (up to 8 flows: the solver's short path) and solved
// together with flows on other links (the path with per-link flow lists) must get the same
// rates bit for bit - what lets the engine solve only the flows that share links.
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "max_min.hpp"

namespace parasim::simulator {
namespace {

using Route = std::vector<hardware::DirLinkId>;

std::vector<double> solve(MaxMinSolver& s, const std::vector<Route>& routes, const std::vector<double>& capacity,
                          const std::vector<double>& caps) {
  std::vector<std::span<const hardware::DirLinkId>> spans(routes.begin(), routes.end());
  std::vector<double> rates(routes.size(), -1.0);
  s.solve(spans, capacity, rates, caps);
  return rates;
}

TEST(MaxMin, ThreeFlowsHandComputed) {
  // Links 0 (10 bytes/ns) and 1 (4): flow a on 0, b on 0 and 1, c on 1. Link 1 fills first at
  // 2 each (b, c); a takes what b leaves on link 0: 8.
  MaxMinSolver s(2);
  EXPECT_EQ(solve(s, {{0}, {0, 1}, {1}}, {10.0, 4.0}, {}), (std::vector<double>{8.0, 2.0, 2.0}));
  // Capped: c may take at most 1, so b gets 3 on link 1 and a the remaining 7.
  EXPECT_EQ(solve(s, {{0}, {0, 1}, {1}}, {10.0, 4.0}, {1e30, 1e30, 1.0}), (std::vector<double>{7.0, 3.0, 1.0}));
}

TEST(MaxMin, RatesDoNotDependOnUnrelatedFlows) {
  std::mt19937 rng(7);
  constexpr int kLinks = 12;  // links 0-5 for the group, 6-11 for the others
  int compared = 0;
  for (int trial = 0; trial < 2'000; ++trial) {
    std::vector<double> capacity(kLinks);
    for (double& c : capacity) c = 1.0 + static_cast<double>(rng() % 1000) / 7.0;
    const bool capped = trial % 3 == 0;
    std::vector<Route> group, all;
    std::vector<double> group_caps, all_caps;
    const std::size_t n = 1 + rng() % 8, others = 9 + rng() % 8;
    for (std::size_t i = 0; i < n + others; ++i) {
      const int base = i < n ? 0 : 6;
      Route r;
      for (int l = 0; l < 6; ++l)
        if (rng() % 3 == 0) r.push_back(base + l);
      if (r.empty()) r.push_back(base + static_cast<int>(rng() % 6));
      const double cap = capped && rng() % 2 ? static_cast<double>(1 + rng() % 50) / 3.0 : 1e300;
      if (i < n) {
        group.push_back(r);
        group_caps.push_back(cap);
      }
      all.push_back(r);
      all_caps.push_back(cap);
    }
    MaxMinSolver s(kLinks);
    const auto alone = solve(s, group, capacity, capped ? group_caps : std::vector<double>{});
    const auto together = solve(s, all, capacity, capped ? all_caps : std::vector<double>{});
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(std::memcmp(&alone[i], &together[i], sizeof(double)), 0)
          << "trial " << trial << " flow " << i << ": " << alone[i] << " vs " << together[i];
      EXPECT_GT(alone[i], 0.0);
      ++compared;
    }
  }
  EXPECT_GT(compared, 5'000);
}

}  // namespace
}  // namespace parasim::simulator
