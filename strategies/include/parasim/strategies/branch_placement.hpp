// placement=branches: put the parallel branches of multi-branch graphs (Inception modules,
// ResNet downsample shortcuts, GNMT's encoder vs decoder input path) on different devices.
//
// Algorithm (Boost.Graph):
//   1. Post-dominators: boost::lengauer_tarjan_dominator_tree on the reversed DFG with a virtual
//      exit (fed by every op without consumers). A virtual entry feeds every op without inputs,
//      so several inputs (GNMT's source and target tokens) are a fork too.
//   2. A fork is an op (or the virtual entry) with >= 2 consumers; its join is its immediate
//      post-dominator. A consumer heads an independent branch when no other consumer of the fork
//      reaches it; the branch is every op reachable from its head (stopping at the join) and
//      from no other independent head. Ops reachable from several heads are not in any branch.
//      Forks with fewer than two non-empty independent branches are not parallel regions.
//   3. Forks are visited in topological order; a fork already inside an assigned branch is not
//      split further (the outer branch keeps all its ops). The branches of a region run at the
//      same time, so they are balanced among themselves, longest-processing-time first: the
//      costliest branch to the device where the region's branches so far would finish first
//      (ties: the device with less work overall, then the lowest id).
//   4. Every other op goes to the least-loaded device among the devices of its producers (its
//      own cost counted there), so chains stay where their input is and a join lands on the
//      lighter side; ops without producers go to the least-loaded device overall. Ties: lowest id.
//
// Example:
//   // op_cost[d][v]: forward + backward time of op v on device slot d
//   std::vector<int> slot = place_branches(model, op_cost, /*devices=*/2);
#pragma once

#include <vector>

#include "parasim/common/units.hpp"
#include "parasim/models/graph.hpp"

namespace parasim::strategies {

/// Device slot (0 .. devices-1) of every op, by op id.
std::vector<int> place_branches(const models::Model& model, const std::vector<std::vector<TimeNs>>& op_cost,
                                int devices);

}  // namespace parasim::strategies
