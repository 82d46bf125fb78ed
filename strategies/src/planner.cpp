#include "parasim/strategies/planner.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>
#include <thread>

#include "gib.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/interrupt.hpp"
#include "parasim/hardware/device_spec.hpp"
#include "parasim/profiler/roofline.hpp"
#include "parasim/strategies/simulate_strategy.hpp"
#include "parasim/strategies/tensor_parallel.hpp"

namespace parasim::strategies {

std::string to_string(Objective o) { return o == Objective::TimeToTrain ? "time-to-train" : "step"; }

Objective parse_objective(const std::string& text) {
  if (text == "time-to-train") return Objective::TimeToTrain;
  if (text == "step") return Objective::StepTime;
  throw InputError("--objective: expected time-to-train or step, found \"" + text + "\"");
}

std::string to_string(Verdict v) {
  switch (v) {
    case Verdict::Feasible: return "feasible";
    case Verdict::MemoryBound: return "memory-bound";
    case Verdict::Invalid: return "invalid";
    case Verdict::StaticMemory: return "static-memory";
    case Verdict::PeakMemory: return "peak-memory";
    case Verdict::MemoryDominated: return "memory-dominated";
    case Verdict::Pruned: return "pruned";
    case Verdict::LessRecompute: return "less-recompute-fits";
  }
  return "?";
}

TimeNs objective_value(const PlanRow& row, Objective objective) {
  return objective == Objective::TimeToTrain ? row.time_to_train : row.step_time;
}

namespace {

/// Feasible rows by objective (ties: fewer devices per replica first); the rest closest-to-fitting
/// first, invalid ones last; then the canonical strategy text and the batch, which make the order total.
bool ranks_before(const PlanRow& a, const PlanRow& b, Objective objective) {
  if (a.feasible() != b.feasible()) return a.feasible();
  if (a.feasible()) {
    const TimeNs va = objective_value(a, objective), vb = objective_value(b, objective);
    if (va != vb) return va < vb;
    // A tie goes to the simpler split: fewer devices per model replica.
    const std::int64_t wa = static_cast<std::int64_t>(a.strategy.mp) * a.strategy.tp * a.strategy.cp;
    const std::int64_t wb = static_cast<std::int64_t>(b.strategy.mp) * b.strategy.tp * b.strategy.cp;
    if (wa != wb) return wa < wb;
  } else {
    const bool ia = a.verdict == Verdict::Invalid, ib = b.verdict == Verdict::Invalid;
    if (ia != ib) return ib;
    // Rows not simulated for their time (pruned: fit unknown; less recomputation fits) after the
    // memory failures, by their bound.
    const bool pa = a.verdict == Verdict::Pruned || a.verdict == Verdict::LessRecompute;
    const bool pb = b.verdict == Verdict::Pruned || b.verdict == Verdict::LessRecompute;
    if (pa != pb) return pb;
    if (pa && a.step_bound != b.step_bound) return a.step_bound < b.step_bound;
    if (!ia && !pa) {
      const double ra = a.memory_ratio(), rb = b.memory_ratio();
      if (ra != rb) return ra < rb;
    }
  }
  const std::string sa = to_string(a.strategy), sb = to_string(b.strategy);
  if (sa != sb) return sa < sb;
  return a.global_batch < b.global_batch;
}

/// Activation memory grows from recompute=full to selective to none.
int recompute_rank(Recompute r) { return r == Recompute::Full ? 0 : r == Recompute::Selective ? 1 : 2; }

/// Whether `c`'s recomputation keeps at least the activations `fit`'s does, at the same shape,
/// micro-batch size and ZeRO stage. The fewest-layers candidate (whole layers rerun, sequence
/// parallel under TP; a miss means even its most layers do not fit) keeps less than none, and
/// more than full recomputation of every layer without TP; nothing else compares: selective
/// keeps every layer less its scores, and full recomputation without sequence parallelism can
/// keep more than most layers with it.
bool keeps_at_least(const Candidate& c, const Candidate& fit) {
  if (fit.fewest_recompute_layers) return c.fewest_recompute_layers || c.strategy.recompute == Recompute::None;
  if (c.fewest_recompute_layers) return c.strategy.tp == 1 && fit.strategy.recompute == Recompute::Full;
  return recompute_rank(c.strategy.recompute) >= recompute_rank(fit.strategy.recompute);
}

/// Within a micro-batch size: full on every layer, selective, none, then the fewest layers that
/// fit, last, so that its twins with less recomputation are known when it comes (LessRecompute).
int recompute_order(const Candidate& c) { return c.fewest_recompute_layers ? 3 : recompute_rank(c.strategy.recompute); }

std::int64_t micro_batch_size(const Candidate& c) {
  return c.global_batch / (static_cast<std::int64_t>(c.strategy.dp) * c.strategy.micro);
}

/// Within a memory family, `c` needs at least the memory of `fit`: micro-batches at least as
/// large (1F1B/interleaved/asynchronous keep min(K, stages) of them in flight, GPipe all K of the
/// fixed per-replica batch, accumulation one), no more recomputation, no more ZeRO sharding, and
/// for MoE models experts split over the TP ranks only where `fit`'s are too (sequence parallelism,
/// which comes with selective recomputation, also splits the experts: 1/T of their weights).
bool needs_at_least_memory_of(const Candidate& c, const Candidate& fit, const ModelFacts& facts) {
  return micro_batch_size(c) >= micro_batch_size(fit) && keeps_at_least(c, fit) &&
         c.strategy.zero <= fit.strategy.zero &&
         (facts.experts == 0 || !c.strategy.experts_split_over_tp() || fit.strategy.experts_split_over_tp());
}

/// Groups candidates that differ only in micro-batch count, recompute and ZeRO; each group in
/// order of increasing memory (micro-batch size, recompute, then ZeRO first; the fewest-layers
/// recomputation last of its micro-batch size, see recompute_order), groups in order of their
/// first candidate.
std::vector<std::vector<std::size_t>> memory_families(const std::vector<Candidate>& candidates) {
  std::map<std::string, std::size_t> index_of;
  std::vector<std::vector<std::size_t>> families;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    Strategy key = candidates[i].strategy;
    key.micro = 1;
    key.recompute = Recompute::None;
    key.recompute_layers = 0;
    key.sp = SeqParallel::Auto;  // the fewest-layers candidate's sequence parallelism
    key.zero = 0;
    const std::string k = to_string(key) + "|" + std::to_string(candidates[i].global_batch);
    const auto [it, added] = index_of.try_emplace(k, families.size());
    if (added) families.emplace_back();
    families[it->second].push_back(i);
  }
  for (auto& f : families)
    std::stable_sort(f.begin(), f.end(), [&](std::size_t a, std::size_t b) {
      const Candidate& x = candidates[a];
      const Candidate& y = candidates[b];
      if (micro_batch_size(x) != micro_batch_size(y)) return micro_batch_size(x) < micro_batch_size(y);
      if (recompute_order(x) != recompute_order(y)) return recompute_order(x) < recompute_order(y);
      return x.strategy.zero > y.strategy.zero;
    });
  return families;
}

/// About how many tasks simulating `c` takes (chunks x micro-batches simulated, extrapolated
/// candidates at their two sample counts): what a family costs, for handing out the expensive
/// families first.
double estimated_work(const Candidate& c, bool extrapolate) {
  const Strategy& s = c.strategy;
  const double chunks = static_cast<double>(s.mp) * (s.schedule == Schedule::Interleaved ? s.interleave : 1);
  // Asynchronous schedules simulate mp micro-batches more than they count (the warm-up).
  const double extra = s.asynchronous() ? s.mp : 0;
  const std::array<int, 2> k = extrapolate ? extrapolation_points(s) : std::array<int, 2>{0, 0};
  const double simulated = k[0] == 0 ? s.micro + extra : k[0] + k[1] + 2 * extra;
  // Context parallelism: a ring of cp steps and cp (cp - 1) transfers per chunk and phase.
  const double ring = s.cp > 1 ? static_cast<double>(s.cp) * s.cp : 1.0;
  return chunks * simulated * (s.tp > 1 ? 2.0 : 1.0) * ring + 64;  // + a fixed cost per simulation
}

/// The row of a candidate decided without simulating it: its configuration and `verdict`.
PlanRow unsimulated_row(const Candidate& c, Verdict verdict) {
  PlanRow row;
  row.strategy = c.strategy;
  row.global_batch = c.global_batch;
  row.devices = c.strategy.devices();
  row.verdict = verdict;
  return row;
}

PlanRow dominated_row(const Candidate& c, const PlanRow& miss) {
  PlanRow row = unsimulated_row(c, Verdict::MemoryDominated);
  row.peak_memory = miss.peak_memory;
  row.capacity = miss.capacity;
  row.reason = "needs at least the memory of " + to_string(miss.strategy) + ", which " + miss.reason;
  return row;
}

/// Whether `t`, of the fewest-layers candidate `c`'s memory family, is its twin with less
/// recomputation: selective or none at `c`'s micro-batch size and ZeRO stage.
bool recomputes_less_twin(const Candidate& t, const Candidate& c) {
  return !t.fewest_recompute_layers && t.strategy.recompute != Recompute::Full && t.strategy.zero == c.strategy.zero &&
         micro_batch_size(t) == micro_batch_size(c);
}

/// A twin of the fewest-layers candidate `c` in `family` (recomputes_less_twin) that fits, among
/// those `known` says are decided (rows evaluated); nullptr if none.
template <class Known>
const std::size_t* fitting_twin(const std::vector<Candidate>& candidates, const std::vector<std::size_t>& family,
                                const std::vector<PlanRow>& rows, const Candidate& c, const Known& known) {
  const std::size_t* found = nullptr;  // no recomputation first, then selective
  for (const std::size_t& j : family) {
    const Candidate& t = candidates[j];
    if (!recomputes_less_twin(t, c) || !known(j) || !rows[j].feasible()) continue;
    if (t.strategy.recompute == Recompute::None) return &j;
    if (found == nullptr) found = &j;
  }
  return found;
}

PlanRow less_recompute_row(const Candidate& c, const PlanRow& twin) {
  using detail::gib;
  PlanRow row = unsimulated_row(c, Verdict::LessRecompute);
  row.reason = "not simulated: " + to_string(twin.strategy) + " fits (" + gib(twin.peak_memory) + " of " +
               gib(twin.capacity) + ") with less recomputation, taken to be faster than rerunning whole layers";
  return row;
}

/// Evaluates one memory family in order of increasing memory, skipping a member that needs at
/// least the memory of an earlier member that did not fit (when pruning). Rows and errors go to
/// the candidate's own slot; `first_source` keeps the cost source of the lowest-index candidate
/// simulated (one per worker, merged in a fixed order afterwards).
void evaluate_family(const PlanRequest& req, const ModelFacts& facts, const std::vector<Candidate>& candidates,
                     const std::vector<std::size_t>& family, Granularity granularity, StepCache& cache,
                     simulator::CollectivePlanner& collectives, std::vector<PlanRow>& rows,
                     std::vector<std::exception_ptr>& errors, std::pair<std::size_t, std::string>& first_source) {
  std::vector<std::size_t> misses;  // members that did not fit, in evaluation order
  for (std::size_t i : family) {
    try {
      throw_if_interrupted();  // Ctrl-C: every remaining candidate ends at once, rethrown below
      const std::size_t* by = nullptr;
      if (req.prune_dominated)
        for (const std::size_t& j : misses)
          if (needs_at_least_memory_of(candidates[i], candidates[j], facts)) {
            by = &j;
            break;
          }
      const std::size_t* twin = nullptr;
      if (req.prune_dominated && by == nullptr && candidates[i].fewest_recompute_layers)
        twin = fitting_twin(candidates, family, rows, candidates[i], [&](std::size_t j) { return !errors[j]; });
      if (by != nullptr) {
        rows[i] = dominated_row(candidates[i], rows[*by]);
      } else if (twin != nullptr) {
        rows[i] = less_recompute_row(candidates[i], rows[*twin]);
      } else {
        std::string source;
        rows[i] = evaluate_candidate(req, facts, candidates[i], granularity, cache, &source, &collectives);
        if (!source.empty() && i < first_source.first) first_source = {i, std::move(source)};
        if (rows[i].verdict == Verdict::StaticMemory || rows[i].verdict == Verdict::PeakMemory) misses.push_back(i);
      }
    } catch (...) {
      errors[i] = std::current_exception();
    }
    if (req.on_candidate_done) req.on_candidate_done();
  }
}

/// Runs body(item, worker) for items 0 .. n - 1 on `threads` workers (the calling thread is worker 0).
template <typename Body>
void parallel_for(int threads, std::size_t n, const Body& body) {
  std::atomic<std::size_t> next{0};
  auto work = [&](int worker) {
    for (std::size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) body(i, worker);
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < std::min<int>(threads, static_cast<int>(n)); ++w) pool.emplace_back(work, w);
  work(0);
  for (std::thread& t : pool) t.join();
}

/// How far below the full simulation's step an extrapolated row may come out, for pruning: the
/// largest seen is 2.4% (GPT-2, 2 stages x 2 chunks, tp=2, K = 8 from 2 and 4;
/// StepBound.IsAtMostEverySimulatedStepOfASearch), 0.4% on Turing-NLG 530B.
inline constexpr double kExtrapolatedMargin = 0.05;

/// Whether evaluate_candidate() extrapolates `c` along the micro-batch count.
bool will_extrapolate(const PlanRequest& req, const Candidate& c) {
  const bool even = c.global_batch % (static_cast<std::int64_t>(c.strategy.dp) * c.strategy.micro) == 0 &&
                    c.strategy.split == BatchSplit::Even;
  return req.extrapolate && even && extrapolation_points(c.strategy)[0] != 0;
}

/// About how much simulating `c` costs: micro-batches simulated (both samples of an extrapolated
/// row) times pipeline chunks. A round hands its largest candidates out first, so that the
/// threads finish it together (longest processing time first); what it computes is the same.
std::int64_t simulation_size(const PlanRequest& req, const Candidate& c) {
  const Strategy& s = c.strategy;
  const std::array<int, 2> k = will_extrapolate(req, c) ? extrapolation_points(s) : std::array<int, 2>{0, 0};
  const std::int64_t micro = k[0] != 0 ? k[0] + k[1] : s.micro + (s.asynchronous() ? s.mp : 0);
  return micro * s.mp * (s.schedule == Schedule::Interleaved ? s.interleave : 1);
}

/// The objective's value at a step of `step` (time to train rises with the step).
TimeNs objective_at(const PlanRequest& req, std::int64_t global_batch, TimeNs step) {
  if (req.objective == Objective::StepTime) return step;
  return time_to_train(req.efficiency, req.dataset_samples, global_batch, step).total;
}

/// The worst objective among the rows PlanRequest::exact_top keeps exact, from the feasible rows
/// found so far: the exact_top-th best and the best of the kExplainedShapes-th distinct shape;
/// no limit until both exist.
TimeNs exact_rows_limit(const PlanRequest& req, const std::vector<PlanRow>& rows, std::vector<std::size_t> feasible) {
  constexpr TimeNs kNoLimit = std::numeric_limits<TimeNs>::max();
  if (feasible.size() < static_cast<std::size_t>(req.exact_top)) return kNoLimit;
  std::sort(feasible.begin(), feasible.end(),
            [&](std::size_t a, std::size_t b) { return ranks_before(rows[a], rows[b], req.objective); });
  std::set<std::tuple<int, int, int, int>> shapes;
  TimeNs shape_limit = kNoLimit;
  for (std::size_t i : feasible) {
    const Strategy& s = rows[i].strategy;
    if (shapes.insert({s.dp, s.mp, s.tp, s.cp}).second && shapes.size() == static_cast<std::size_t>(kExplainedShapes)) {
      shape_limit = objective_value(rows[i], req.objective);
      break;
    }
  }
  if (shape_limit == kNoLimit) return kNoLimit;
  return std::max(shape_limit,
                  objective_value(rows[feasible[static_cast<std::size_t>(req.exact_top) - 1]], req.objective));
}

PlanRow pruned_row(const PlanRequest& req, const Candidate& c, TimeNs bound, TimeNs objective_bound, TimeNs limit) {
  PlanRow row = unsimulated_row(c, Verdict::Pruned);
  row.step_bound = bound;
  const bool ttt = req.objective == Objective::TimeToTrain;
  row.reason = "not simulated: its step takes at least " + format_time(bound) + " (compute and pipeline fill alone" +
               (will_extrapolate(req, c) ? ", less 5% for extrapolation" : "") + "), so " +
               (ttt ? "its time to train is at least " : "") + format_time(objective_bound) + ", more than the " +
               std::to_string(req.exact_top) + " best rows and the best of " + std::to_string(kExplainedShapes) +
               " shapes need (" + format_time(limit) + ")";
  return row;
}

/// PlanRequest::exact_top: candidates in order of the lower bound on their objective, in rounds
/// of kRound whatever the thread count (so the rows do not depend on it). A round takes the next
/// candidates that are neither dominated by a miss of an earlier round nor bounded above the
/// limit (exact_rows_limit of the rows found in earlier rounds), and evaluates them in parallel.
/// Bounds only grow along the order (a fewest-layers recomputation waits for its twins' bound)
/// and the limit only falls, so once one candidate is pruned every later one that is not
/// dominated is pruned or a fewest-layers recomputation. A pruned candidate's objective is at least its
/// bound, above the limit, which is at least every row asked for: those rows are the ones full
/// evaluation finds.
void evaluate_by_bound(const PlanRequest& req, const ModelFacts& facts, const std::vector<Candidate>& candidates,
                       Granularity granularity, StepCache& cache, int threads, std::vector<PlanRow>& rows,
                       std::vector<std::exception_ptr>& errors,
                       std::vector<std::pair<std::size_t, std::string>>& sources) {
  constexpr std::size_t kRound = 8;
  const std::size_t n = candidates.size();
  std::vector<TimeNs> bound(n, 0), objective_bound(n, 0);

  std::vector<char> decided(n, 0);  // memory-bound: decided here, without lowering
  std::vector<char> rejected(n, 0);  // parameter_memory_rejects(), asked once
  // Candidates differing only in dp, micro-batch count and ZeRO 0/1 at one micro-batch size
  // share one bound (step_bound_per_micro): 912 bounds instead of 1,239 on Turing-NLG's space.
  StepBoundCache shared_bounds(*req.cluster);
  auto bound_of_candidate = [&](std::size_t i) {
    if (errors[i]) return;
    try {
      if (rejected[i]) {
        rows[i] = evaluate_candidate(req, facts, candidates[i], granularity, cache);
        decided[i] = 1;
        if (req.on_candidate_done) req.on_candidate_done();
        return;
      }
      bound[i] = candidate_step_bound(req, facts, candidates[i], granularity, cache, &shared_bounds);
      // A row extrapolated along the micro-batch count can come out below its full simulation
      // (docs/projection.md): its bound is lowered by kExtrapolatedMargin before it prunes.
      if (bound[i] > 0 && will_extrapolate(req, candidates[i]))
        bound[i] = static_cast<TimeNs>(static_cast<double>(bound[i]) * (1.0 - kExtrapolatedMargin));
      if (bound[i] > 0) objective_bound[i] = objective_at(req, candidates[i].global_batch, bound[i]);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  // Candidates share model variants and bounds, which StepCache and StepBoundCache build once (a
  // second thread asking for one being built waits for it): one candidate of each model variant
  // first, then one of each bound (the strategy without dp, the micro-batch count and ZeRO 0/1, at
  // one micro-batch size), each pass spread over the threads; then the rest, from the caches. No
  // bound depends on the order. A candidate that the parameter memory rejects builds nothing, so it
  // stands for no variant: on Turing-NLG's space such stand-ins left 36 of 75 variants to the
  // second pass, where a thread waited for the other to build one.
  std::vector<std::size_t> first_of_variant, first_of_bound;
  {
    std::set<std::tuple<int, int, int, int, double, std::int64_t>> variants;
    std::set<std::string> shapes;
    parallel_for(threads, n, [&](std::size_t i, int) {
      try {
        rejected[i] = parameter_memory_rejects(req, facts, candidates[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
    for (std::size_t i = 0; i < n; ++i) {
      if (rejected[i] || errors[i]) continue;
      const Strategy& s = candidates[i].strategy;
      const std::int64_t per_replica = static_cast<std::int64_t>(s.dp) * s.micro;
      const std::int64_t size = per_replica > 0 ? candidates[i].global_batch / per_replica : 0;
      const bool new_variant = variants.emplace(s.tp, s.ep, s.cp, s.etp, s.imbalance, size).second;
      const bool new_bound = shapes.insert(bound_shape_key(candidates[i])).second;
      if (new_variant) first_of_variant.push_back(i);
      else if (new_bound) first_of_bound.push_back(i);
    }
  }
  std::vector<char> bounded(n, 0);
  for (const auto* pass : {&first_of_variant, &first_of_bound})
    parallel_for(threads, pass->size(), [&](std::size_t k, int) {
      bound_of_candidate((*pass)[k]);
      bounded[(*pass)[k]] = 1;
    });
  parallel_for(threads, n, [&](std::size_t i, int) {
    if (!bounded[i]) bound_of_candidate(i);
  });

  // Memory dominance as evaluate_family() applies it, against the misses of earlier rounds.
  const std::vector<std::vector<std::size_t>> families = memory_families(candidates);
  std::vector<std::size_t> family_of(n), rank_in_family(n);
  for (std::size_t f = 0; f < families.size(); ++f)
    for (std::size_t k = 0; k < families[f].size(); ++k) {
      family_of[families[f][k]] = f;
      rank_in_family[families[f][k]] = k;
    }

  // In bound order; a fewest-layers recomputation no earlier than its twins with selective or no
  // recomputation (fitting_twin), so that one that fits is known by the time it comes up. Only the
  // order moves: each candidate is pruned by its own bound.
  std::vector<TimeNs> order_key(objective_bound);
  for (std::size_t i = 0; i < n; ++i) {
    const Candidate& c = candidates[i];
    if (!c.fewest_recompute_layers) continue;
    for (std::size_t j : families[family_of[i]])
      if (recomputes_less_twin(candidates[j], c)) order_key[i] = std::max(order_key[i], objective_bound[j]);
  }
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return order_key[a] < order_key[b]; });
  std::vector<std::vector<std::size_t>> misses(families.size());  // by increasing memory
  std::vector<std::size_t> feasible;
  std::vector<char> closed(decided);  // rows[i] is final: decided here, or in a closed round
  // A fewest-layers recomputation whose twin with selective or no recomputation fitted in an
  // earlier round (evaluate_family's LessRecompute, on the rows known then).
  auto fitting_twin_of = [&](std::size_t i) -> const std::size_t* {
    if (!req.prune_dominated || !candidates[i].fewest_recompute_layers) return nullptr;
    return fitting_twin(candidates, families[family_of[i]], rows, candidates[i],
                        [&](std::size_t j) { return closed[j] && !errors[j]; });
  };
  std::vector<std::unique_ptr<simulator::CollectivePlanner>> planners;
  for (int w = 0; w < threads; ++w) planners.push_back(std::make_unique<simulator::CollectivePlanner>(*req.cluster));

  // The rounds, with each round's tail put to use: a worker that finds nothing left to start in
  // the round runs ahead, on the next candidate in bound order that the current limit and misses
  // still admit. Its row is kept aside and used if a later round takes the candidate, dropped
  // otherwise; rounds, rows and counts are the serial loop's (a candidate's row depends on it
  // alone: the caches only memoise).
  struct Result {
    PlanRow row;
    std::string source;
    std::exception_ptr error;
  };
  enum : char { kWaiting, kRunning, kDone };
  std::vector<std::unique_ptr<Result>> results(n);
  std::vector<char> state(n, kWaiting), in_round(n, 0);
  std::vector<std::size_t> round, queue;  // queue: the round's candidates not yet started, largest first
  std::size_t queued = 0, pending = 0, next = 0, ahead = 0;
  bool finished = false;
  std::exception_ptr failure;  // from forming a round on a worker thread, rethrown below
  std::mutex mu;
  std::condition_variable wake;
  TimeNs limit = std::numeric_limits<TimeNs>::max();

  auto dominated_by = [&](std::size_t i) -> const std::size_t* {
    if (!req.prune_dominated) return nullptr;
    for (const std::size_t& j : misses[family_of[i]])
      if (needs_at_least_memory_of(candidates[i], candidates[j], facts)) return &j;
    return nullptr;
  };
  // Under mu, once no candidate of the round is outstanding: its rows applied in bound order, the
  // limit lowered, and the next round formed (again while all of a round ran ahead already).
  auto close_rounds = [&] {
    try {
      while (pending == 0 && !finished) {
        for (std::size_t i : round) {
          Result& r = *results[i];
          if (r.error) {
            errors[i] = r.error;
          } else {
            rows[i] = std::move(r.row);
            rows[i].step_bound = bound[i];
            if (!r.source.empty() && i < sources[0].first) sources[0] = {i, std::move(r.source)};
          }
          results[i].reset();
          closed[i] = 1;
          if (req.on_candidate_done) req.on_candidate_done();
        }
        for (std::size_t i : round) {
          // A twin with less recomputation that fitted in this round: what evaluate_family says.
          if (errors[i]) continue;
          if (const std::size_t* twin = fitting_twin_of(i)) {
            rows[i] = less_recompute_row(candidates[i], rows[*twin]);
            rows[i].step_bound = bound[i];
          }
          if (rows[i].verdict == Verdict::StaticMemory || rows[i].verdict == Verdict::PeakMemory) {
            auto& m = misses[family_of[i]];
            m.insert(
                std::upper_bound(m.begin(), m.end(), i,
                                 [&](std::size_t a, std::size_t b) { return rank_in_family[a] < rank_in_family[b]; }),
                i);
          }
          if (rows[i].feasible()) feasible.push_back(i);
        }
        if (!round.empty()) limit = std::min(limit, exact_rows_limit(req, rows, feasible));
        round.clear();
        for (; next < n && round.size() < kRound; ++next) {
          const std::size_t i = order[next];
          if (errors[i] || decided[i]) continue;
          const std::size_t* by = dominated_by(i);
          const std::size_t* twin = by == nullptr ? fitting_twin_of(i) : nullptr;
          if (by != nullptr) rows[i] = dominated_row(candidates[i], rows[*by]);
          else if (twin != nullptr) {
            rows[i] = less_recompute_row(candidates[i], rows[*twin]);
            rows[i].step_bound = bound[i];
          } else if (objective_bound[i] > limit)
            rows[i] = pruned_row(req, candidates[i], bound[i], objective_bound[i], limit);
          else round.push_back(i);
          if (by != nullptr || twin != nullptr || rows[i].verdict == Verdict::Pruned) {
            closed[i] = 1;
            if (req.on_candidate_done) req.on_candidate_done();
          }
        }
        if (round.empty()) {
          finished = true;
          break;
        }
        queue.clear();
        queued = 0;
        for (std::size_t i : round) {
          in_round[i] = 1;
          if (state[i] != kDone) ++pending;
          if (state[i] == kWaiting) queue.push_back(i);
        }
        std::stable_sort(queue.begin(), queue.end(), [&](std::size_t a, std::size_t b) {
          return simulation_size(req, candidates[a]) > simulation_size(req, candidates[b]);
        });
      }
    } catch (...) {
      failure = std::current_exception();
      finished = true;
    }
    wake.notify_all();
  };
  // Under mu: the next candidate a later round may take, if any (bounds only grow along the order
  // and the limit only falls: past the limit, nothing is left to run ahead on).
  auto run_ahead_on = [&]() -> std::optional<std::size_t> {
    for (ahead = std::max(ahead, next); ahead < n; ++ahead) {
      const std::size_t i = order[ahead];
      if (state[i] != kWaiting || errors[i] || decided[i] || dominated_by(i) != nullptr ||
          fitting_twin_of(i) != nullptr)
        continue;
      if (objective_bound[i] > limit) return std::nullopt;
      ++ahead;
      return i;
    }
    return std::nullopt;
  };
  auto work = [&](int worker) {
    std::unique_lock lock(mu);
    while (!finished) {
      std::size_t i = n;
      if (queued < queue.size()) i = queue[queued++];
      else if (const std::optional<std::size_t> j = run_ahead_on()) i = *j;
      if (i == n) {
        wake.wait(lock);
        continue;
      }
      state[i] = kRunning;
      lock.unlock();
      auto r = std::make_unique<Result>();
      try {
        throw_if_interrupted();
        r->row = evaluate_candidate(req, facts, candidates[i], granularity, cache, &r->source,
                                    planners[static_cast<std::size_t>(worker)].get());
      } catch (...) {
        r->error = std::current_exception();
      }
      lock.lock();
      results[i] = std::move(r);
      state[i] = kDone;
      if (in_round[i] && --pending == 0) close_rounds();
    }
  };
  {
    std::lock_guard lock(mu);
    close_rounds();
  }
  std::vector<std::thread> pool;
  for (int w = 1; w < threads; ++w) pool.emplace_back(work, w);
  work(0);
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

/// Whether pruning by the bound is sound for this sweep: explain_plan's expert- and
/// context-parallel sentences look at rows outside the top.
bool bound_pruning_applies(const PlanRequest& req, const std::vector<Candidate>& candidates) {
  if (req.exact_top <= 0 || req.sharing) return false;
  return std::none_of(candidates.begin(), candidates.end(),
                      [](const Candidate& c) { return c.strategy.ep > 1 || c.strategy.cp > 1; });
}

// Rows on the wire between processes (PlanSharing): every field but the strategy, which the
// receiver takes from its own candidate list. Doubles survive JSON exactly (17 digits).
nlohmann::json row_to_wire(std::size_t index, const PlanRow& r) {
  return {index,
          r.global_batch,
          r.devices,
          static_cast<int>(r.verdict),
          r.reason,
          r.step_time,
          r.throughput,
          r.bubble_fraction,
          r.compute,
          r.exposed_comm,
          r.peak_memory,
          r.capacity,
          r.sampled_micro[0],
          r.sampled_micro[1],
          r.simulations,
          r.epochs,
          r.steps_per_epoch,
          r.time_to_train,
          r.detailed,
          r.dp_comm,
          r.pipeline_comm,
          r.tp_comm,
          r.mfu,
          r.strategy.recompute_layers};  // a fewest-layers candidate's count, found when judged
}

std::size_t row_from_wire(const nlohmann::json& j, const std::vector<Candidate>& candidates, PlanRow& r) {
  const auto index = j.at(0).get<std::size_t>();
  if (index >= candidates.size()) throw RuntimeError("planner: a share's row names candidate " + std::to_string(index));
  r.strategy = candidates[index].strategy;
  r.global_batch = j.at(1).get<std::int64_t>();
  r.devices = j.at(2).get<std::int64_t>();
  r.verdict = static_cast<Verdict>(j.at(3).get<int>());
  r.reason = j.at(4).get<std::string>();
  r.step_time = j.at(5).get<TimeNs>();
  r.throughput = j.at(6).get<double>();
  r.bubble_fraction = j.at(7).get<double>();
  r.compute = j.at(8).get<TimeNs>();
  r.exposed_comm = j.at(9).get<TimeNs>();
  r.peak_memory = j.at(10).get<Bytes>();
  r.capacity = j.at(11).get<Bytes>();
  r.sampled_micro = {j.at(12).get<int>(), j.at(13).get<int>()};
  r.simulations = j.at(14).get<int>();
  r.epochs = j.at(15).get<double>();
  r.steps_per_epoch = j.at(16).get<std::int64_t>();
  r.time_to_train = j.at(17).get<TimeNs>();
  r.detailed = j.at(18).get<bool>();
  r.dp_comm = j.at(19).get<TimeNs>();
  r.pipeline_comm = j.at(20).get<TimeNs>();
  r.tp_comm = j.at(21).get<TimeNs>();
  r.mfu = j.at(22).get<double>();
  r.strategy.recompute_layers = j.at(23).get<int>();
  return index;
}

void check_request(const PlanRequest& req) {
  if (req.model == nullptr || req.cluster == nullptr || req.costs == nullptr)
    throw InputError("planner: a model, a cluster and a cost model are required");
  if (req.space.gpus > req.cluster->num_devices())
    throw InputError("--gpus " + std::to_string(req.space.gpus) + ": cluster " + req.cluster->name() + " has only " +
                     std::to_string(req.cluster->num_devices()) + " devices; add nodes (--nodes)");
  if (req.dataset_samples < 1) throw InputError("planner: the dataset size must be positive");
}

}  // namespace

ModelFacts planner_model_facts(const PlanRequest& req) {
  ModelFacts facts = model_facts(*req.model, static_cast<int>(req.cluster->devices_of_node(0).size()));
  facts.matmul_flops_per_sample = profiler::matmul_flops_per_sample(*req.model);
  const auto kinds = req.cluster->device_kinds();
  if (kinds.size() == 1)
    if (const auto spec = hardware::find_device_spec(kinds.front()))
      facts.device_peak_flops = 1e12 * spec->peak_tflops(req.dtype.value_or(req.model->dtype()));
  return facts;
}

Granularity planner_granularity(const PlanRequest& req) {
  if (req.granularity) return *req.granularity;
  constexpr std::size_t kManyOps = 2000;
  const bool transformer = plan_tensor_parallel(*req.model).any();
  return transformer || req.model->num_ops() > kManyOps ? Granularity::Stage : Granularity::Op;
}

PlanResult run_planner(const PlanRequest& req) {
  check_request(req);
  PlanResult out;
  out.objective = req.objective;
  out.granularity = planner_granularity(req);
  const ModelFacts facts = planner_model_facts(req);
  const std::vector<Candidate> candidates = enumerate_candidates(req.space, facts);
  out.rows.resize(candidates.size());
  out.stats.candidates = static_cast<std::int64_t>(candidates.size());

  StepCache own_cache;
  StepCache& cache = req.cache != nullptr ? *req.cache : own_cache;
  int threads = req.threads > 0 ? req.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::max(1, std::min<int>(threads, static_cast<int>(std::max<std::size_t>(1, candidates.size()))));

  // Work comes in memory families (candidates differing only in micro-batch count, recompute and
  // ZeRO), each evaluated in order of increasing memory by one worker, so that dominance pruning
  // sees the same earlier verdicts whatever the thread count.
  const std::vector<std::vector<std::size_t>> families = memory_families(candidates);
  // Expensive families first (longest processing time first), so that no worker is left with a
  // 105-stage pipeline while the others are idle. The order of work does not change any row.
  std::vector<std::size_t> order(families.size());
  {
    std::vector<double> cost(families.size(), 0);
    for (std::size_t f = 0; f < families.size(); ++f)
      for (std::size_t i : families[f]) cost[f] += estimated_work(candidates[i], req.extrapolate);
    for (std::size_t f = 0; f < order.size(); ++f) order[f] = f;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cost[a] > cost[b]; });
  }
  // Shared across processes: this one's families only (every other one, round robin in cost order).
  if (req.sharing) {
    const PlanSharing& share = *req.sharing;
    if (share.parts < 1 || share.part < 0 || share.part >= share.parts || !share.exchange)
      throw InputError("planner: a sharing needs 0 <= part < parts and an exchange");
    std::vector<std::size_t> mine;
    for (std::size_t n = static_cast<std::size_t>(share.part); n < order.size();
         n += static_cast<std::size_t>(share.parts))
      mine.push_back(order[n]);
    order = std::move(mine);
  }
  std::vector<std::exception_ptr> errors(candidates.size());
  // The cost source of the lowest-index simulated candidate, per worker (merged deterministically).
  std::vector<std::pair<std::size_t, std::string>> sources(static_cast<std::size_t>(threads),
                                                           {candidates.size(), std::string()});
  if (bound_pruning_applies(req, candidates)) {
    evaluate_by_bound(req, facts, candidates, out.granularity, cache, threads, out.rows, errors, sources);
  } else {
    std::atomic<std::size_t> next{0};
    auto work = [&](int worker) {
      simulator::CollectivePlanner collectives(*req.cluster);  // plans and routes kept across this worker's candidates
      for (std::size_t n = next.fetch_add(1); n < order.size(); n = next.fetch_add(1))
        evaluate_family(req, facts, candidates, families[order[n]], out.granularity, cache, collectives, out.rows,
                        errors, sources[static_cast<std::size_t>(worker)]);
    };
    std::vector<std::thread> pool;
    for (int w = 1; w < threads; ++w) pool.emplace_back(work, w);
    work(0);
    for (std::thread& t : pool) t.join();
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);

  std::size_t first = candidates.size();
  for (auto& [index, source] : sources)
    if (index < first) {
      first = index;
      out.cost_source = source;
    }
  if (req.sharing) {
    // Every share's rows into their slots, and the cost source of the lowest index overall.
    nlohmann::json mine = {{"first", first}, {"source", out.cost_source}, {"rows", nlohmann::json::array()}};
    for (std::size_t f : order)
      for (std::size_t i : families[f]) mine["rows"].push_back(row_to_wire(i, out.rows[i]));
    for (const std::string& text : req.sharing->exchange(mine.dump())) {
      const nlohmann::json part = nlohmann::json::parse(text);
      for (const nlohmann::json& row : part.at("rows")) {
        PlanRow r;
        const std::size_t i = row_from_wire(row, candidates, r);
        out.rows[i] = std::move(r);
      }
      const auto index = part.at("first").get<std::size_t>();
      if (index < first) {
        first = index;
        out.cost_source = part.at("source").get<std::string>();
      }
    }
  }
  for (const PlanRow& r : out.rows) {
    switch (r.verdict) {
      case Verdict::Feasible: ++out.stats.feasible; break;
      case Verdict::MemoryBound: ++out.stats.memory_bound; break;
      case Verdict::Invalid: ++out.stats.invalid; break;
      case Verdict::StaticMemory: ++out.stats.static_memory; break;
      case Verdict::PeakMemory: ++out.stats.peak_memory; break;
      case Verdict::MemoryDominated: ++out.stats.dominated; break;
      case Verdict::Pruned: ++out.stats.pruned; break;
      case Verdict::LessRecompute: ++out.stats.less_recompute; break;
    }
    if (r.simulated()) ++out.stats.simulated;
    out.stats.simulations += r.simulations;
  }
  std::sort(out.rows.begin(), out.rows.end(),
            [&](const PlanRow& a, const PlanRow& b) { return ranks_before(a, b, req.objective); });
  return out;
}

void add_details(PlanResult& plan, int top) {
  std::vector<std::size_t> indices;
  for (std::size_t i = 0; i < plan.rows.size() && static_cast<int>(indices.size()) < top; ++i)
    if (plan.rows[i].feasible()) indices.push_back(i);
  add_details(plan, indices);
}

void add_details(PlanResult& plan, const std::vector<std::size_t>& indices) {
  // The search's simulations summed every stream's busy time (extrapolated rows: continued
  // along K with the rest of the row), so the details are there: marking them is enough.
  for (std::size_t index : indices)
    if (index < plan.rows.size() && plan.rows[index].feasible()) plan.rows[index].detailed = true;
}

}  // namespace parasim::strategies
