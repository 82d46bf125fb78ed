// explain_plan(): one paragraph, generated from the numbers only, saying why the winner wins and
// what holds back the best configuration of each other dp x mp x tp shape.
//
// A runner-up's time to train relative to the winner's factors into
//   T_r / T_w = (E_r / E_w) * (throughput_w / throughput_r)
// (epochs times seconds per sample). When the epoch ratio is the larger factor the runner-up
// loses to statistical efficiency; otherwise to its step, and the step's largest overhead names
// the limit: pipeline bubble, exposed communication, tensor-parallel collectives (when the row is
// marked detailed, add_details()), recomputation, or plain compute per sample.
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <tuple>

#include "gib.hpp"
#include "parasim/strategies/planner.hpp"

namespace parasim::strategies {

namespace {

std::string pct(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * fraction);
  return buf;
}

std::string num(double v, int decimals = 1) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

using detail::gib;

double share(TimeNs part, TimeNs whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

/// What limits `r`'s step most, in words.
std::string step_limit(const PlanRow& r, const PlanRow& w) {
  const double bubble = r.bubble_fraction;
  const double exposed = share(r.exposed_comm, r.step_time);
  const double tp = r.detailed && (r.strategy.tp > 1 || r.strategy.ep > 1) ? share(r.tp_comm, r.step_time) : 0.0;
  constexpr double kNotable = 0.05;
  if (tp >= kNotable && tp >= bubble && tp >= exposed)
    return std::string(r.strategy.ep > 1 ? r.strategy.tp > 1 ? "tensor-parallel collectives and expert all-to-alls"
                                                             : "expert all-to-alls"
                                         : "tensor-parallel collectives") +
           " (" + format_time(r.tp_comm) + " of its " + format_time(r.step_time) + " step on one device)";
  if (bubble >= kNotable && bubble >= exposed)
    return "the pipeline bubble (" + pct(bubble) + " of its step, vs " + pct(w.bubble_fraction) + ")";
  if (exposed >= kNotable)
    return "exposed communication (" + pct(exposed) + " of its step, vs " + pct(share(w.exposed_comm, w.step_time)) +
           ")";
  if (r.strategy.recompute != Recompute::None && w.strategy.recompute == Recompute::None)
    return "recomputation (" + to_string(r.strategy.recompute) + ") adding forward work";
  return "compute (" + format_time(r.compute) + " per step for " + std::to_string(r.global_batch) + " samples vs " +
         format_time(w.compute) + " for " + std::to_string(w.global_batch) + ")";
}

std::string describe_runner_up(const PlanRow& r, const PlanRow& w, Objective objective) {
  std::ostringstream s;
  const TimeNs vr = objective_value(r, objective), vw = objective_value(w, objective);
  s << to_string(r.strategy) << " is " << pct(share(vr - vw, vw)) << " slower";
  const double epoch_ratio = w.epochs > 0 ? r.epochs / w.epochs : 1.0;
  const double speed_ratio = r.throughput > 0 ? w.throughput / r.throughput : 1.0;
  if (objective == Objective::TimeToTrain && epoch_ratio > speed_ratio && epoch_ratio > 1.0) {
    s << ", limited by statistical efficiency: its global batch of " << r.global_batch << " needs "
      << num(r.epochs) << " epochs (vs " << num(w.epochs) << ")";
    if (speed_ratio < 1.0) s << " although it processes " << pct(1.0 / speed_ratio - 1.0) << " more samples per second";
  } else {
    s << ", limited by " << step_limit(r, w);
  }
  return s.str();
}

/// MoE models (some candidate has ep > 1): what expert parallelism does for the winner, or what
/// the best row with it lacks; "" otherwise.
std::string expert_parallel_sentence(const PlanResult& plan, Objective objective) {
  const PlanRow& w = plan.rows.front();
  const PlanRow* best_other = nullptr;  // best feasible row on the other side of ep > 1
  const PlanRow* closest_other = nullptr;
  bool searched = false;
  for (const PlanRow& r : plan.rows) {
    searched = searched || r.strategy.ep > 1;
    if ((r.strategy.ep > 1) == (w.strategy.ep > 1)) continue;
    if (r.feasible() && best_other == nullptr) best_other = &r;
    if (!r.feasible() && r.verdict != Verdict::Invalid && r.verdict != Verdict::Pruned &&
        r.verdict != Verdict::LessRecompute && closest_other == nullptr)
      closest_other = &r;
  }
  if (!searched) return "";
  std::ostringstream s;
  if (w.strategy.ep > 1) {
    s << " Expert parallelism (ep=" << w.strategy.ep << ") splits every MoE layer's experts over " << w.strategy.ep;
    if (w.strategy.expert_groups_fold_tp())
      s << " ranks (" << w.strategy.tp << " TP ranks x " << w.strategy.expert_group_replicas()
        << " data-parallel replicas: MoE parallel folding)";
    else s << " data-parallel ranks";
    s << ": each device keeps 1/" << w.strategy.ep
      << " of the expert weights, gradients and optimizer state and exchanges its routed tokens in 4 all-to-alls "
         "per MoE layer and micro-batch";
    if (w.strategy.imbalance > 1.0)
      s << " (the busiest rank gets " << num(w.strategy.imbalance, 2) << "x the mean tokens and sets the step)";
    if (best_other != nullptr)
      s << "; the best configuration without it, " << describe_runner_up(*best_other, w, objective) << ".";
    else if (closest_other != nullptr)
      s << "; without it nothing fits: the closest, " << to_string(closest_other->strategy) << ", needs "
        << gib(closest_other->peak_memory) << " of " << gib(closest_other->capacity) << ".";
    else s << ".";
  } else if (best_other != nullptr) {
    s << " With expert parallelism the best, " << describe_runner_up(*best_other, w, objective)
      << ": its all-to-alls cost more than the replicated experts' memory saves here.";
  }
  return s.str();
}

/// Long sequences (some candidate has cp > 1): what context parallelism does for the winner, or
/// what the best row with it lacks; "" otherwise.
std::string context_parallel_sentence(const PlanResult& plan, Objective objective) {
  const PlanRow& w = plan.rows.front();
  const PlanRow* best_other = nullptr;  // best feasible row on the other side of cp > 1
  bool searched = false;
  for (const PlanRow& r : plan.rows) {
    searched = searched || r.strategy.cp > 1;
    if ((r.strategy.cp > 1) != (w.strategy.cp > 1) && r.feasible() && best_other == nullptr) best_other = &r;
  }
  if (!searched) return "";
  std::ostringstream s;
  if (w.strategy.cp > 1) {
    s << " Context parallelism (cp=" << w.strategy.cp << ") splits every sample's sequence over " << w.strategy.cp
      << " ranks: each device runs the layers on 1/" << w.strategy.cp
      << " of the tokens and keeps their activations, and each attention layer passes its K/V chunks around the "
         "ring, overlapped with the attention steps";
    if (best_other != nullptr)
      s << "; the best configuration without it, " << describe_runner_up(*best_other, w, objective);
    else s << "; without it no configuration fits";
    s << ".";
  } else if (best_other != nullptr) {
    s << " With context parallelism the best, " << describe_runner_up(*best_other, w, objective)
      << ": its ring transfers and shorter attention steps cost more than the activation memory it saves.";
  }
  return s.str();
}

}  // namespace

std::vector<std::size_t> explained_rows(const PlanResult& plan, int runners_up) {
  std::vector<std::size_t> out;
  std::set<std::tuple<int, int, int, int>> shapes;
  for (std::size_t i = 0; i < plan.rows.size() && static_cast<int>(out.size()) <= runners_up; ++i) {
    const PlanRow& r = plan.rows[i];
    if (!r.feasible()) break;
    if (shapes.insert({r.strategy.dp, r.strategy.mp, r.strategy.tp, r.strategy.cp}).second) out.push_back(i);
  }
  return out;
}

std::string explain_plan(const PlanResult& plan, int runners_up) {
  std::ostringstream s;
  const PlanStats& st = plan.stats;
  const std::int64_t no_fit = st.memory_bound + st.static_memory + st.peak_memory + st.dominated;
  const PlanRow* closest_miss = nullptr;
  for (const PlanRow& r : plan.rows)
    if (!r.feasible() && r.verdict != Verdict::Invalid && r.verdict != Verdict::Pruned &&
        r.verdict != Verdict::LessRecompute) {
      closest_miss = &r;  // rows are ranked: the first memory failure needs the least over capacity
      break;
    }
  auto memory_sentence = [&] {
    if (no_fit == 0) return;
    s << " " << no_fit << " of " << st.candidates << " configurations do not fit in memory (" << st.memory_bound
      << " rejected by the parameter-memory bound before lowering, " << st.static_memory
      << " by their weights, gradients and optimizer state, " << st.peak_memory << " by activations at the peak, "
      << st.dominated << " because a configuration needing no more memory did not fit)";
    if (closest_miss != nullptr)
      s << "; the closest miss" << (st.pruned > 0 ? " among those simulated" : "") << " is "
        << to_string(closest_miss->strategy) << ", needing " << gib(closest_miss->peak_memory) << " of "
        << gib(closest_miss->capacity) << " (" << pct(closest_miss->memory_ratio()) << ")";
    s << ".";
  };
  if (plan.rows.empty() || !plan.rows.front().feasible()) {
    s << "No configuration fits: " << st.candidates << " were tried.";
    memory_sentence();
    if (st.invalid > 0) s << " " << st.invalid << " could not be built (see their reasons).";
    return s.str();
  }
  const PlanRow& w = plan.rows.front();
  s << to_string(w.strategy) << " wins";
  if (plan.objective == Objective::TimeToTrain)
    s << " with " << format_time(w.time_to_train) << " to train (" << num(w.epochs) << " epochs at global batch "
      << w.global_batch << ", " << format_time(w.step_time) << " per step)";
  else
    s << " with a " << format_time(w.step_time) << " step (global batch " << w.global_batch << ")";
  s << "; its step is " << pct(share(w.compute, w.step_time)) << " compute on the busiest device, "
    << pct(w.bubble_fraction) << " pipeline bubble and " << pct(share(w.exposed_comm, w.step_time))
    << " exposed communication (on the device that exposes the most, not always the busiest), at "
    << pct(w.memory_ratio()) << " of device memory.";
  if (w.strategy.asynchronous())
    s << " It is asynchronous (" << to_string(w.strategy.schedule)
      << "): no flush and no bubble, but stale weights, whose cost in epochs is not modelled - compare the best "
         "synchronous row before relying on it.";
  if (w.strategy.recompute_layers > 0) {
    const int n = w.strategy.recompute_layers;
    s << " It recomputes the first " << (n == 1 ? std::string() : std::to_string(n) + " ") << "transformer layer"
      << (n == 1 ? "" : "s") << " of each pipeline chunk and keeps the activations of any after "
      << (n == 1 ? "it" : "them") << " (Megatron-LM's --recompute-method block --recompute-num-layers " << n
      << "), the fewest that fit" << (w.reason.empty() ? "" : " (" + w.reason + ")") << ".";
  }
  const std::vector<std::size_t> rows = explained_rows(plan, runners_up);
  if (rows.size() > 1) {
    s << " Best of the other shapes: ";
    for (std::size_t k = 1; k < rows.size(); ++k)
      s << (k > 1 ? "; " : "") << describe_runner_up(plan.rows[rows[k]], w, plan.objective);
    s << ".";
  }
  s << expert_parallel_sentence(plan, plan.objective);
  s << context_parallel_sentence(plan, plan.objective);
  memory_sentence();
  if (st.invalid > 0) s << " " << st.invalid << " configurations could not be built (reasons in --json with --top 0).";
  if (const std::string shortcuts = plan_shortcuts(plan); !shortcuts.empty()) s << " " << shortcuts;
  return s.str();
}

std::string plan_shortcuts(const PlanResult& plan) {
  std::int64_t extrapolated = 0;
  for (const PlanRow& r : plan.rows) extrapolated += r.sampled_micro[0] > 0 ? 1 : 0;
  const std::int64_t dominated = plan.stats.dominated;
  const std::int64_t pruned = plan.stats.pruned;
  const std::int64_t less_recompute = plan.stats.less_recompute;
  if (extrapolated == 0 && dominated == 0 && pruned == 0 && less_recompute == 0) return "";
  std::ostringstream s;
  s << "Shortcuts:";
  if (extrapolated > 0) {
    const PlanRow& w = plan.rows.front();
    s << " " << extrapolated << " row" << (extrapolated == 1 ? " was" : "s were")
      << " extrapolated along the micro-batch count (simulated at two smaller counts and continued; marked ~";
    if (w.feasible() && w.sampled_micro[0] > 0)
      s << ", the winner among them: micro=" << w.strategy.micro << " from " << w.sampled_micro[0] << " and "
        << w.sampled_micro[1];
    s << ")";
  }
  if (dominated > 0)
    s << (extrapolated > 0 ? ";" : "") << " " << dominated
      << " skipped without simulation because a configuration needing no more memory did not fit";
  if (pruned > 0)
    s << (extrapolated > 0 || dominated > 0 ? ";" : "") << " " << pruned << " not simulated because a lower bound on "
      << (plan.objective == Objective::TimeToTrain ? "their time to train" : "their step")
      << " (compute and pipeline fill alone) exceeds that of every row shown and explained, so their fit in "
         "memory is unknown";
  if (less_recompute > 0)
    s << (extrapolated > 0 || dominated > 0 || pruned > 0 ? ";" : "") << " " << less_recompute
      << " recomputing the fewest whole layers that fit not simulated because the same configuration fits with "
         "selective or no recomputation (taken to be faster; with unfused attention, selective recomputation of "
         "long sequences can cost more)";
  s << ". --exact simulates every configuration in full.";
  return s.str();
}

}  // namespace parasim::strategies
