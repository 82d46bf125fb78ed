// What the planner's shortcuts cost in accuracy on the benchmark's problem (turing_plan.hpp):
// plans it twice - as `parasim plan` does (micro-batch extrapolation and memory dominance on),
// and with every candidate simulated at its own micro-batch count (PlanRequest::extrapolate off,
// the same dominance, so both judge the same candidates) - and compares them row by row: step
// time, peak memory, verdicts and ranking. Then it measures the other shortcut, memory-dominance
// pruning, against full enumeration (`plan --exact`: no extrapolation, no pruning): whether any
// skipped row would have fitted, and whether the ranking of the rows that fit changes. Not a
// Google Benchmark target: its output is the accuracy table of docs/projection.md, and the
// reference plans take tens of seconds.
//
// Last, pruning by the lower bound (PlanRequest::exact_top = 10, as `parasim plan` does): its top
// rows and explained rows must be those of the plan without it (exit 1 otherwise).
//
//   parasim_planner_accuracy [--every-schedule] [--threads N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "parasim/common/allocator.hpp"
#include "turing_plan.hpp"

namespace {

using namespace parasim;
using namespace parasim::strategies;

std::string key_of(const PlanRow& r) { return to_string(r.strategy) + " batch=" + std::to_string(r.global_batch); }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Timed {
  PlanResult plan;
  double seconds = 0;
};

Timed timed_plan(PlanRequest req) {
  StepCache cache;
  req.cache = &cache;
  const auto t0 = std::chrono::steady_clock::now();
  Timed t{run_planner(req), 0};
  t.seconds = seconds_since(t0);
  return t;
}

double relative(double a, double b) { return b != 0 ? (a - b) / b : (a == 0 ? 0 : 1); }

}  // namespace

int main(int argc, char** argv) {
  parasim::keep_freed_memory_for_reuse();
  bool every_schedule = false;
  int threads = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--every-schedule") every_schedule = true;
    else if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: parasim_planner_accuracy [--every-schedule] [--threads N]\n");
      return 2;
    }
  }
  const bench::TuringProblem problem;
  PlanRequest req = problem.request(every_schedule, threads);
  timed_plan(req);  // builds the cluster's route trees, so that neither timing includes them
  const Timed fast = timed_plan(req);
  req.extrapolate = false;
  const Timed full = timed_plan(req);
  req.prune_dominated = false;
  const Timed exact = timed_plan(req);  // full enumeration: what --exact does

  std::map<std::string, std::size_t> rank_in_full;
  for (std::size_t i = 0; i < full.plan.rows.size(); ++i) rank_in_full[key_of(full.plan.rows[i])] = i;

  std::vector<double> step_errors;  // |relative|, rows with a step in both
  struct Worst {
    double error = 0;
    std::string row;
  };
  std::map<std::string, Worst> worst_by_shape;  // schedule x stages
  Worst worst;
  int verdicts_differ = 0, peaks_differ = 0, extrapolated = 0;
  double worst_peak = 0;
  std::string worst_peak_row;
  for (const PlanRow& r : fast.plan.rows) {
    const auto it = rank_in_full.find(key_of(r));
    if (it == rank_in_full.end()) {
      std::fprintf(stderr, "row %s is missing from the reference plan\n", key_of(r).c_str());
      return 1;
    }
    const PlanRow& ref = full.plan.rows[it->second];
    if (r.verdict != ref.verdict) ++verdicts_differ;
    if (r.sampled_micro[0] != 0) ++extrapolated;
    if (r.peak_memory != ref.peak_memory) {
      ++peaks_differ;
      const double e = std::abs(relative(static_cast<double>(r.peak_memory), static_cast<double>(ref.peak_memory)));
      if (e > worst_peak) {
        worst_peak = e;
        worst_peak_row = key_of(r) + " (simulated at " + std::to_string(r.sampled_micro[0]) + " and " +
                         std::to_string(r.sampled_micro[1]) + " micro-batches)";
      }
    }
    if (r.step_time <= 0 || ref.step_time <= 0) continue;
    const double e = std::abs(relative(static_cast<double>(r.step_time), static_cast<double>(ref.step_time)));
    step_errors.push_back(e);
    const std::string shape = to_string(r.strategy.schedule) + ", " + std::to_string(r.strategy.mp) + " stages";
    Worst& w = worst_by_shape[shape];
    if (e >= w.error) w = {e, key_of(r)};
    if (e >= worst.error) worst = {e, key_of(r)};
  }
  std::sort(step_errors.begin(), step_errors.end());
  const double median = step_errors.empty() ? 0 : step_errors[step_errors.size() / 2];
  const int differing =
      static_cast<int>(std::count_if(step_errors.begin(), step_errors.end(), [](double e) { return e > 0; }));

  std::size_t same_prefix = 0;
  while (same_prefix < fast.plan.rows.size() && same_prefix < full.plan.rows.size() &&
         key_of(fast.plan.rows[same_prefix]) == key_of(full.plan.rows[same_prefix]))
    ++same_prefix;
  std::size_t displaced = 0;
  for (std::size_t i = 0; i < fast.plan.rows.size(); ++i)
    if (rank_in_full[key_of(fast.plan.rows[i])] != i) ++displaced;

  std::printf("Turing-NLG 530B on 5,128 A100s, %s: %zu configurations\n\n",
              every_schedule ? "every schedule" : "Calculon's space", fast.plan.rows.size());
  std::printf("| plan | engine runs | wall time |\n|---|---|---|\n");
  std::printf("| shortcuts (extrapolated: %d rows) | %lld | %.2f s |\n", extrapolated,
              static_cast<long long>(fast.plan.stats.simulations), fast.seconds);
  std::printf("| every candidate at its own K | %lld | %.2f s |\n\n",
              static_cast<long long>(full.plan.stats.simulations), full.seconds);
  std::printf("rows with a step time in both: %zu; differing: %d; max |error| %.4f%% (%s); median %.4f%%\n",
              step_errors.size(), differing, 100 * worst.error, worst.row.c_str(), 100 * median);
  std::printf("peak memory differs in %d rows (max %.4f%%%s%s); verdicts differ in %d rows\n", peaks_differ,
              100 * worst_peak, worst_peak_row.empty() ? "" : ": ", worst_peak_row.c_str(), verdicts_differ);
  std::printf("ranking: the first %zu rows in the same order; %zu of %zu rows at another rank\n\n", same_prefix,
              displaced, fast.plan.rows.size());
  std::printf("| schedule, stages | max step error | row |\n|---|---|---|\n");
  for (const auto& [shape, w] : worst_by_shape)
    std::printf("| %s | %.4f%% | %s |\n", shape.c_str(), 100 * w.error, w.row.c_str());

  // Dominance pruning against full enumeration (both without extrapolation).
  std::map<std::string, const PlanRow*> in_exact;
  for (const PlanRow& r : exact.plan.rows) in_exact[key_of(r)] = &r;
  int pruned = 0, pruned_but_fit = 0, other_rows_differ = 0;
  std::string first_wrong;
  for (const PlanRow& r : full.plan.rows) {
    const auto it = in_exact.find(key_of(r));
    if (it == in_exact.end()) {
      std::fprintf(stderr, "row %s is missing from the fully enumerated plan\n", key_of(r).c_str());
      return 1;
    }
    const PlanRow& ref = *it->second;
    if (r.verdict == Verdict::MemoryDominated) {
      ++pruned;
      if (ref.feasible()) {
        ++pruned_but_fit;
        if (first_wrong.empty()) first_wrong = key_of(r);
      }
    } else if (r.verdict != ref.verdict || r.step_time != ref.step_time || r.peak_memory != ref.peak_memory) {
      ++other_rows_differ;
    }
  }
  std::vector<std::string> fit_pruned, fit_exact;
  for (const PlanRow& r : full.plan.rows)
    if (r.feasible()) fit_pruned.push_back(key_of(r));
  for (const PlanRow& r : exact.plan.rows)
    if (r.feasible()) fit_exact.push_back(key_of(r));
  std::printf("\nmemory-dominance pruning against full enumeration (both without extrapolation):\n\n");
  std::printf("| plan | engine runs | wall time |\n|---|---|---|\n");
  std::printf("| pruning (skipped: %d rows) | %lld | %.2f s |\n", pruned,
              static_cast<long long>(full.plan.stats.simulations), full.seconds);
  std::printf("| full enumeration (--exact) | %lld | %.2f s |\n\n",
              static_cast<long long>(exact.plan.stats.simulations), exact.seconds);
  std::printf("skipped rows that fit when simulated: %d%s%s; other rows differing: %d; feasible rows in the same "
              "order: %s (%zu and %zu)\n",
              pruned_but_fit, first_wrong.empty() ? "" : ", first: ", first_wrong.c_str(), other_rows_differ,
              fit_pruned == fit_exact ? "yes" : "NO", fit_pruned.size(), fit_exact.size());

  // Pruning by the lower bound (what `parasim plan` adds with its default --top 10) against the
  // same plan without it: the top rows and the explained rows must be the same bytes.
  req = problem.request(every_schedule, threads);
  req.exact_top = 10;
  const Timed bounded = timed_plan(req);
  const std::size_t top = std::min<std::size_t>(10, fast.plan.rows.size());
  bool same = bounded.plan.rows.size() == fast.plan.rows.size();
  for (std::size_t i = 0; same && i < top; ++i)
    same = plan_row_to_json(bounded.plan.rows[i]).dump() == plan_row_to_json(fast.plan.rows[i]).dump();
  const std::vector<std::size_t> explained = explained_rows(fast.plan);
  same = same && explained_rows(bounded.plan) == explained;
  for (std::size_t i : explained)
    same = same && plan_row_to_json(bounded.plan.rows[i]).dump() == plan_row_to_json(fast.plan.rows[i]).dump();
  std::printf("\npruning by the lower bound (top 10 and %zu explained rows exact):\n\n", explained.size());
  std::printf("| plan | simulated | engine runs | pruned | wall time |\n|---|---|---|---|---|\n");
  std::printf("| with the bound | %lld | %lld | %lld | %.2f s |\n",
              static_cast<long long>(bounded.plan.stats.simulated),
              static_cast<long long>(bounded.plan.stats.simulations), static_cast<long long>(bounded.plan.stats.pruned),
              bounded.seconds);
  std::printf("| without | %lld | %lld | 0 | %.2f s |\n\n", static_cast<long long>(fast.plan.stats.simulated),
              static_cast<long long>(fast.plan.stats.simulations), fast.seconds);
  std::printf("top rows and explained rows identical: %s\n", same ? "yes" : "NO");
  return same ? 0 : 1;
}
