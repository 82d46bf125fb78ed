#include "max_min.hpp"

#include <algorithm>
#include <limits>

namespace parasim::simulator {

inline double MaxMinSolver::lowest_fair_share() const {
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < cap_.size(); ++j)
    if (cnt_[j] > 0) best = std::min(best, cap_[j] / cnt_[j]);
  return best;
}

inline double MaxMinSolver::lowest_open_cap(std::span<const double> caps) const {
  double lowest = std::numeric_limits<double>::infinity();
  for (std::size_t f = 0; f < caps.size(); ++f)
    if (!frozen_[f]) lowest = std::min(lowest, caps[f]);
  return lowest;
}

inline void MaxMinSolver::freeze(std::span<const hardware::DirLinkId> links, std::size_t f, double share,
                                 std::span<double> rates) {
  frozen_[f] = 1;
  rates[f] = share;
  for (hardware::DirLinkId l : links) {
    const auto lj = static_cast<std::size_t>(local_[static_cast<std::size_t>(l)]);
    cap_[lj] -= share;
    --cnt_[lj];
  }
}

void MaxMinSolver::solve(std::span<const std::span<const hardware::DirLinkId>> flows, std::span<const double> capacity,
                         std::span<double> rates, std::span<const double> caps) {
  if (++epoch_ == 0) {  // wrapped: clear the stamps once every 4 billion solves
    std::fill(stamp_.begin(), stamp_.end(), 0);
    epoch_ = 1;
  }
  cap_.clear();
  cnt_.clear();
  for (const auto& f : flows)
    for (hardware::DirLinkId l : f) {
      const auto li = static_cast<std::size_t>(l);
      if (stamp_[li] != epoch_) {
        stamp_[li] = epoch_;
        local_[li] = static_cast<std::int32_t>(cap_.size());
        cap_.push_back(capacity[li]);
        cnt_.push_back(0);
      }
      ++cnt_[static_cast<std::size_t>(local_[li])];
    }
  const std::size_t nl = cap_.size();
  if (flows.size() <= kSmall) {
    solve_small(flows, rates, caps);
    return;
  }
  offsets_.assign(nl + 1, 0);
  for (std::size_t j = 0; j < nl; ++j) offsets_[j + 1] = offsets_[j] + static_cast<std::uint32_t>(cnt_[j]);
  link_flows_.resize(offsets_[nl]);
  pos_.assign(offsets_.begin(), offsets_.end() - 1);
  for (std::size_t i = 0; i < flows.size(); ++i)
    for (hardware::DirLinkId l : flows[i])
      link_flows_[pos_[static_cast<std::size_t>(local_[static_cast<std::size_t>(l)])]++] =
          static_cast<std::uint32_t>(i);

  frozen_.assign(flows.size(), 0);
  std::size_t left = flows.size();
  while (left > 0) {
    const double best = lowest_fair_share();
    // A flow's own cap below every link's fair share freezes it first.
    const double lowest_cap = lowest_open_cap(caps);
    if (lowest_cap < best) {
      for (std::size_t f = 0; f < caps.size(); ++f) {
        if (frozen_[f] || caps[f] != lowest_cap) continue;
        freeze(flows[f], f, lowest_cap, rates);
        --left;
      }
      continue;
    }
    // Every link at the lowest fair share is a bottleneck at this level: freeze them together.
    bottlenecks_.clear();
    for (std::size_t j = 0; j < nl; ++j)
      if (cnt_[j] > 0 && cap_[j] / cnt_[j] == best) bottlenecks_.push_back(static_cast<std::int32_t>(j));
    const double share = std::max(best, 1e-12);  // never zero: a flow always progresses
    for (std::int32_t j : bottlenecks_)
      for (std::uint32_t k = offsets_[static_cast<std::size_t>(j)]; k < offsets_[static_cast<std::size_t>(j) + 1];
           ++k) {
        const std::uint32_t f = link_flows_[k];
        if (frozen_[f]) continue;
        freeze(flows[f], f, share, rates);
        --left;
      }
  }
}

// The same rounds without the links' flow lists: a round marks its bottleneck links first, then
// freezes every unfrozen flow that crosses one. Which flows freeze in a round, and at what share,
// is what the lists give; the order they freeze in within a round does not matter (each takes the
// round's share, and a link loses that same share once per frozen flow, in any order), so the
// rates are the same bit for bit. Each round walks every flow's links, so only for a few flows.
void MaxMinSolver::solve_small(std::span<const std::span<const hardware::DirLinkId>> flows, std::span<double> rates,
                               std::span<const double> caps) {
  const std::size_t nl = cap_.size();
  frozen_.assign(flows.size(), 0);
  bottleneck_.resize(nl);
  std::size_t left = flows.size();
  while (left > 0) {
    const double best = lowest_fair_share();
    const double lowest_cap = lowest_open_cap(caps);
    const bool by_cap = lowest_cap < best;
    const double share = by_cap ? lowest_cap : std::max(best, 1e-12);
    if (!by_cap)
      for (std::size_t j = 0; j < nl; ++j) bottleneck_[j] = cnt_[j] > 0 && cap_[j] / cnt_[j] == best;
    for (std::size_t f = 0; f < flows.size(); ++f) {
      if (frozen_[f]) continue;
      bool freezes = by_cap && caps[f] == lowest_cap;
      if (!by_cap)
        for (hardware::DirLinkId l : flows[f])
          freezes = freezes || bottleneck_[static_cast<std::size_t>(local_[static_cast<std::size_t>(l)])];
      if (!freezes) continue;
      freeze(flows[f], f, share, rates);
      --left;
    }
  }
}

}  // namespace parasim::simulator
