#include "parasim/validation/calibrate.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <map>
#include <set>
#include <thread>

#include "parasim/common/error.hpp"

namespace parasim::validation {

namespace {

enum class Which { Matrix, Memory, IntraNode, InterNode, Overhead };

// One fitted quantity: a kernel factor of one GPU kind ("*" when pooled), or a global factor.
// Multiplicative factors are fitted as their log, the overhead in ms as is. With partial pooling
// (FitOptions::kind_spread) a kind's kernel factor is the pooled one times exp(deviation): the
// deviation is a Param of its own, and the fit charges for it like for a run's error.
struct Param {
  Which which;
  std::string kind;  // Matrix / Memory only
  bool deviation = false;
  bool kernel() const { return which == Which::Matrix || which == Which::Memory; }
  std::string name() const {
    switch (which) {
      case Which::Matrix: return "matrix[" + kind + "]";
      case Which::Memory: return "memory[" + kind + "]";
      case Which::IntraNode: return "intra_node_comm";
      case Which::InterNode: return "inter_node_comm";
      default: return "step_overhead_ms";
    }
  }
  std::string_view global_name() const { return Calibration::kNames[static_cast<std::size_t>(which)]; }
};

using Params = std::vector<double>;

// The parameters, which of them the fit moves, which kinds' kernel factors the calibration
// carries (`present`: fitted, or held at values the start gave for that kind), and the kinds whose
// runs stay out of the fit (`excluded`: too few runs to fit their kernel factors - their kernel
// error, which nothing here can absorb, would otherwise pull the link factors and the overhead).
struct Layout {
  std::vector<Param> params;
  std::vector<bool> free;
  std::set<std::string> present;
  std::set<std::string> excluded;
  // Partial pooling: each deviation's pooled factor (an index into params), and the weight of a
  // deviation's pseudo-residual (kRunSpread / kind_spread).
  std::map<std::size_t, std::size_t> pooled_of;
  double penalty = 0;
};

Calibration to_calibration(const Layout& layout, const Params& p) {
  Calibration c;
  // A kind of its own under partial pooling: the pooled factor times its deviation.
  for (const auto& [i, pooled] : layout.pooled_of) {
    const Param& q = layout.params[i];
    const double v = std::exp(p[pooled] + p[i]);
    (q.which == Which::Matrix ? c.kernels[q.kind].matrix : c.kernels[q.kind].memory) = v;
  }
  for (std::size_t i = 0; i < p.size(); ++i) {
    const Param& q = layout.params[i];
    if (q.deviation) continue;
    const double v = q.which == Which::Overhead ? std::max(0.0, p[i]) : std::exp(p[i]);
    switch (q.which) {
      case Which::Matrix:
        if (layout.present.contains(q.kind)) c.kernels[q.kind].matrix = v;
        break;
      case Which::Memory:
        if (layout.present.contains(q.kind)) c.kernels[q.kind].memory = v;
        break;
      case Which::IntraNode: c.intra_node_comm = v; break;
      case Which::InterNode: c.inter_node_comm = v; break;
      case Which::Overhead: c.step_overhead_ms = v; break;
    }
  }
  return c;
}

// Forward-difference steps of the Jacobian: 0.5% of a factor (log space), 1 ms of overhead. The
// step time is piecewise linear in the factors, so a wide step (5% until session 30) biases the
// slopes of near-collinear factors and Gauss-Newton crawls (172 iterations on the synthetic test
// of calibrate_test.cpp once DP reduced fp32 gradients; 7 with this step).
double step(const Param& q) { return q.which == Which::Overhead ? 1.0 : 0.005; }

// A projection of `projected_s` (seconds, from whole nanoseconds) with the step overhead moved from
// `from_ms` to `to_ms` (parameter values, clamped at 0 as to_calibration does): the overhead is
// added after the simulation (simulate_strategy), in Calibration::overhead_ns, so this is what
// projecting again returns, bit for bit, without lowering and simulating the run again.
double with_overhead(double projected_s, double from_ms, double to_ms) {
  const auto ns = [](double ms) { return Calibration::overhead_ns(std::max(0.0, ms)); };
  const TimeNs step_ns = std::llround(projected_s * 1e9) - ns(from_ms) + ns(to_ms);
  return static_cast<double>(step_ns) * 1e-9;
}

// fn(0) .. fn(n - 1) on up to `threads` threads. Each call writes only its own slot, so results do
// not depend on the thread count; the lowest failing index's exception is rethrown.
void parallel_for(std::size_t n, unsigned threads, const std::function<void(std::size_t)>& fn) {
  threads = static_cast<unsigned>(std::min<std::size_t>(n, std::max(1u, threads)));
  std::vector<std::exception_ptr> errors(n);
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        fn(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

// Solves the k x k system A x = b (Gaussian elimination with partial pivoting); singular pivots
// leave their unknown at 0.
std::vector<double> solve(std::vector<std::vector<double>> a, std::vector<double> b) {
  const std::size_t k = b.size();
  for (std::size_t c = 0; c < k; ++c) {
    std::size_t piv = c;
    for (std::size_t r = c + 1; r < k; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[piv][c])) piv = r;
    std::swap(a[c], a[piv]);
    std::swap(b[c], b[piv]);
    if (std::fabs(a[c][c]) < 1e-12) continue;
    for (std::size_t r = 0; r < k; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (std::size_t j = c; j < k; ++j) a[r][j] -= f * a[c][j];
      b[r] -= f * b[c];
    }
  }
  std::vector<double> x(k, 0.0);
  for (std::size_t c = 0; c < k; ++c)
    if (std::fabs(a[c][c]) >= 1e-12) x[c] = b[c] / a[c][c];
  return x;
}

struct Linearization {
  std::vector<double> residual;             // log(projected / measured) per scored run
  std::vector<std::vector<double>> jacobian;
};

class Fitter {
 public:
  /// The fitter over the scored runs whose kind the layout does not exclude.
  static Fitter over(const RunsFile& runs, const std::vector<std::size_t>& scored,
                     const std::vector<std::string>& kinds, const std::vector<std::string>& device_kinds,
                     const Layout& layout, unsigned threads) {
    std::vector<std::size_t> in;
    std::vector<std::string> in_kinds, in_devices;
    for (std::size_t j = 0; j < scored.size(); ++j)
      if (!layout.excluded.contains(kinds[j]))
        in.push_back(scored[j]), in_kinds.push_back(kinds[j]), in_devices.push_back(device_kinds[j]);
    return Fitter(runs, std::move(in), std::move(in_kinds), std::move(in_devices), layout, threads);
  }
  std::size_t runs() const { return scored_.size(); }

  /// `kinds[j]`: the key of scored run j's kernel factors (its GPU kind, or "*" when pooled);
  /// `device_kinds[j]`: its GPU kind (what a deviation under partial pooling moves).
  Fitter(const RunsFile& runs, std::vector<std::size_t> scored, std::vector<std::string> kinds,
         std::vector<std::string> device_kinds, Layout layout, unsigned threads)
      : runs_(&runs),
        scored_(std::move(scored)),
        kinds_(std::move(kinds)),
        device_kinds_(std::move(device_kinds)),
        layout_(std::move(layout)),
        threads_(threads) {}

  const Layout& layout() const { return layout_; }

  double projected(std::size_t run, const Params& p, RunLowering* lowering = nullptr) const {
    const RunOutcome o = evaluate_run(
        runs_->runs[run], {.calibration = to_calibration(layout_, p), .progress = {}, .lowering = lowering});
    if (!o.scored) throw RuntimeError("calibrate: run " + runs_->runs[run].id + " could not be projected: " + o.note);
    return o.projected_step_s;
  }

  /// Log residuals only (one projection per run), then the deviations' pseudo-residuals.
  std::vector<double> residuals(const Params& p) const {
    std::vector<double> r(scored_.size());
    parallel_for(scored_.size(), threads_, [&](std::size_t j) {
      r[j] = std::log(projected(scored_[j], p) / runs_->runs[scored_[j]].measured_step_s);
    });
    for (const auto& [i, pooled] : layout_.pooled_of)
      if (layout_.free[i]) r.push_back(layout_.penalty * p[i]);
    return r;
  }

  Linearization linearize(const Params& p) const {
    Linearization lin;
    lin.residual.resize(scored_.size());
    lin.jacobian.resize(scored_.size());
    parallel_for(scored_.size(), threads_, [&](std::size_t j) {
      const std::size_t run = scored_[j];
      const double measured = runs_->runs[run].measured_step_s;
      // The communication factors change no lowered step (they are engine options): their slopes
      // simulate the base projection's step again, first, and the step is dropped before the
      // others lower their own (one lowered step per thread at a time, as in a projection).
      RunLowering lowering;
      const double base = projected(run, p, &lowering);
      lin.residual[j] = std::log(base / measured);
      std::vector<double> row(p.size(), 0.0);
      const auto comm = [](const Param& q) { return q.which == Which::IntraNode || q.which == Which::InterNode; };
      for (const bool communication : {true, false}) {
        if (!communication) lowering = RunLowering{};
        for (std::size_t i = 0; i < p.size(); ++i) {
          const Param& q = layout_.params[i];
          if (comm(q) != communication) continue;
          // Another kind's kernel factors cannot move this run: no projection needed.
          if (!layout_.free[i] || (q.kernel() && q.kind != (q.deviation ? device_kinds_[j] : kinds_[j]))) continue;
          // A deviation moves its kind's runs as its pooled factor does (the factor is their product).
          if (q.deviation && layout_.free[layout_.pooled_of.at(i)]) continue;
          Params moved = p;
          moved[i] += step(q);
          const double to = q.which == Which::Overhead ? with_overhead(base, p[i], moved[i])
                                                       : projected(run, moved, communication ? &lowering : nullptr);
          row[i] = (std::log(to / measured) - lin.residual[j]) / step(q);
        }
      }
      for (const auto& [i, pooled] : layout_.pooled_of)
        if (layout_.free[i] && layout_.free[pooled] && layout_.params[i].kind == device_kinds_[j]) row[i] = row[pooled];
      lin.jacobian[j] = std::move(row);
    });
    for (const auto& [i, pooled] : layout_.pooled_of) {
      if (!layout_.free[i]) continue;
      lin.residual.push_back(layout_.penalty * p[i]);
      std::vector<double> row(p.size(), 0.0);
      row[i] = layout_.penalty;
      lin.jacobian.push_back(std::move(row));
    }
    return lin;
  }

  /// The Levenberg-Marquardt step from `lin` with damping `lambda` (0: Gauss-Newton), over the
  /// free factors not in `held` (factors at a bound that the step would push past it).
  Params delta(const Linearization& lin, double lambda, const std::vector<char>& held = {}) const {
    std::vector<std::size_t> idx;
    for (std::size_t i = 0; i < layout_.free.size(); ++i)
      if (layout_.free[i] && (held.empty() || !held[i])) idx.push_back(i);
    std::vector<std::vector<double>> a(idx.size(), std::vector<double>(idx.size(), 0.0));
    std::vector<double> b(idx.size(), 0.0);
    for (std::size_t r = 0; r < lin.residual.size(); ++r) {
      for (std::size_t x = 0; x < idx.size(); ++x) {
        b[x] -= lin.jacobian[r][idx[x]] * lin.residual[r];
        for (std::size_t y = 0; y < idx.size(); ++y) a[x][y] += lin.jacobian[r][idx[x]] * lin.jacobian[r][idx[y]];
      }
    }
    for (std::size_t x = 0; x < idx.size(); ++x) a[x][x] += lambda * a[x][x] + 1e-9;  // 1e-9: unconstrained stay at 0
    const std::vector<double> sol = solve(a, b);
    Params d(layout_.params.size(), 0.0);
    for (std::size_t x = 0; x < idx.size(); ++x) d[idx[x]] = sol[x];
    return d;
  }

  double lower(std::size_t i) const {
    return layout_.params[i].which == Which::Overhead ? 0.0 : std::log(kMinCalibrationFactor);
  }
  double upper(std::size_t i) const {
    return layout_.params[i].which == Which::Overhead ? 60000.0 : std::log(kMaxCalibrationFactor);
  }

  Params clamp(Params p) const {
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = std::clamp(p[i], lower(i), upper(i));
    return p;
  }

  /// The step from `p` with the factors that sit at a bound, and that the step would push past
  /// it, held there (an active set): clamping such a step afterwards leaves the other factors
  /// where the solve put them for a move that cannot happen, and the fit stalls at the bound.
  Params bounded_delta(const Params& p, const Linearization& lin, double lambda) const {
    std::vector<char> held(p.size(), 0);
    Params d = delta(lin, lambda);
    for (std::size_t round = 0; round < p.size(); ++round) {
      bool more = false;
      for (std::size_t i = 0; i < p.size(); ++i) {
        if (held[i] || !layout_.free[i]) continue;
        const bool at_lower = p[i] <= lower(i) + 1e-12 && d[i] < 0;
        const bool at_upper = p[i] >= upper(i) - 1e-12 && d[i] > 0;
        if (at_lower || at_upper) held[i] = more = true;
      }
      if (!more) break;
      d = delta(lin, lambda, held);
    }
    return d;
  }

 private:
  const RunsFile* runs_;
  std::vector<std::size_t> scored_;
  std::vector<std::string> kinds_, device_kinds_;
  Layout layout_;
  unsigned threads_ = 1;
};

double sum_of_squares(const std::vector<double>& r) {
  double s = 0;
  for (double v : r) s += v * v;
  return s;
}

// Levenberg-Marquardt from `p` (with its linearization `lin`): a step is taken only when it lowers
// the sum of squared log errors - the step time is piecewise linear in the factors, so a full
// Gauss-Newton step can overshoot.
Params lm_fit(const Fitter& fitter, Params p, Linearization lin, int max_iterations, int& iterations, bool& done,
              const std::function<void(const std::string&)>& stage) {
  double current = sum_of_squares(lin.residual), lambda = 1e-3;
  iterations = 0;
  done = false;
  for (int it = 0; it < max_iterations; ++it) {
    if (stage) stage("fitting: iteration " + std::to_string(it + 1));
    iterations = it + 1;
    bool improved = false, converged = false;
    for (int attempt = 0; attempt < 8 && !improved; ++attempt) {
      const Params d = fitter.bounded_delta(p, lin, lambda);
      Params q = p;
      for (std::size_t i = 0; i < q.size(); ++i) q[i] += d[i];
      q = fitter.clamp(q);
      const double trial = sum_of_squares(fitter.residuals(q));
      if (trial < current) {
        double size = 0;
        for (std::size_t i = 0; i < q.size(); ++i) size = std::max(size, std::fabs(q[i] - p[i]));
        // Converged: the sum improves by under one part in a million, or no factor moves 0.01%.
        converged = current - trial < 1e-6 * current || size < 1e-4;
        p = q;
        current = trial;
        improved = true;
        lambda = std::max(lambda / 10, 1e-9);
      } else {
        lambda *= 10;
      }
    }
    if (!improved || converged) {
      done = true;
      break;
    }
    lin = fitter.linearize(p);
  }
  return p;
}

double start_value(const Param& q, const Calibration& start) {
  if (q.deviation) {
    const KernelFactors own = start.kernel_factors(q.kind), pooled = start.kernel_factors(Calibration::kAllKinds);
    return q.which == Which::Matrix ? std::log(own.matrix / pooled.matrix) : std::log(own.memory / pooled.memory);
  }
  switch (q.which) {
    case Which::Matrix: return std::log(start.kernel_factors(q.kind).matrix);
    case Which::Memory: return std::log(start.kernel_factors(q.kind).memory);
    case Which::IntraNode: return std::log(start.intra_node_comm);
    case Which::InterNode: return std::log(start.inter_node_comm);
    default: return start.step_overhead_ms;
  }
}

// Which parameters move, given the runs of each kind: a kind's kernel factors are fitted only when
// it has more runs than free kernel factors (two factors need three runs); otherwise they are held
// at the start (the default model unless the start names that kind). `note` says why not.
Layout decide(std::vector<Param> params, const std::vector<bool>& held, const std::vector<bool>& insensitive,
              const std::map<std::string, std::size_t>& runs_of_kind, const Calibration& start, double penalty,
              std::vector<std::string>* notes) {
  Layout l;
  l.params = std::move(params);
  l.penalty = penalty;
  l.free.assign(l.params.size(), false);
  if (notes) notes->assign(l.params.size(), "");
  std::map<std::string, std::size_t> free_kernel;
  for (std::size_t i = 0; i < l.params.size(); ++i)
    if (l.params[i].kernel() && !l.params[i].deviation && !held[i] && !insensitive[i]) ++free_kernel[l.params[i].kind];
  for (std::size_t i = 0; i < l.params.size(); ++i) {
    const Param& q = l.params[i];
    std::string note;
    if (held[i]) note = "held (--fix, or measured by --profiles or --microbench)";
    else if (insensitive[i]) note = "no run depends on it";
    // A deviation is charged for, never left out: a kind with no runs keeps the pooled factors.
    if (q.deviation) {
      for (std::size_t j = 0; j < l.params.size(); ++j)
        if (!l.params[j].deviation && l.params[j].which == q.which) l.pooled_of[i] = j;
    } else if (q.kernel()) {
      const auto it = runs_of_kind.find(q.kind);
      const std::size_t n = it == runs_of_kind.end() ? 0 : it->second;
      const std::size_t k = free_kernel[q.kind];
      if (note.empty() && n < k + 1) {
        note = std::to_string(n) + " run(s) of this kind, " + std::to_string(k + 1) + " needed: default kernel model";
        l.excluded.insert(q.kind);
      }
      if (note.empty() || start.kernels.contains(q.kind)) l.present.insert(q.kind);
    }
    l.free[i] = note.empty();
    if (notes) (*notes)[i] = note;
  }
  return l;
}

}  // namespace

bool CalibrationFit::fitted(const std::string& name) const {
  for (const FitFactor& f : factors)
    if (f.name == name) return f.fitted;
  return false;
}

namespace {

/// What a row leaves open and evaluate_run settles (recomputation, micro-batch size, virtual stages,
/// fused attention) is settled once, by the default model, and held through the fit: the run had one
/// configuration, and re-tuning it at every trial of the factors would multiply the fit's cost by
/// the candidates.
RunsFile settle_inferred(const RunsFile& runs, const RunsReport& default_model) {
  RunsFile settled = runs;
  for (std::size_t i = 0; i < settled.runs.size() && i < default_model.outcomes.size(); ++i) {
    const RunOutcome& o = default_model.outcomes[i];
    if (!o.scored) continue;
    RecordedRun& r = settled.runs[i];
    r.strategy = o.run.strategy;
    r.attention = o.run.attention;
    r.attention_stated = true;
    r.micro_unknown = r.recompute_unknown = r.interleave_unknown = r.sp_unknown = false;
  }
  return settled;
}

}  // namespace

CalibrationFit fit_calibration(const RunsFile& runs, const FitOptions& options) {
  CalibrationFit fit;
  auto stage = [&](const std::string& s) {
    if (options.on_stage) options.on_stage(s);
  };
  stage("projecting every run with the default model");
  fit.default_model = evaluate_runs(runs, {});
  const RunsFile settled = settle_inferred(runs, fit.default_model);
  std::vector<std::size_t> scored;
  std::vector<std::string> kinds, device_kinds;
  std::map<std::string, std::size_t> runs_of_kind, runs_of_device;
  for (std::size_t i = 0; i < fit.default_model.outcomes.size(); ++i) {
    const RunOutcome& o = fit.default_model.outcomes[i];
    if (!o.scored) continue;
    scored.push_back(i);
    kinds.push_back(options.per_gpu_kind ? o.device_kind : std::string(Calibration::kAllKinds));
    device_kinds.push_back(o.device_kind);
    ++runs_of_kind[kinds.back()];
    ++runs_of_device[o.device_kind];
  }
  if (options.kind_spread < 0 || (options.kind_spread > 0 && options.per_gpu_kind))
    throw InputError("calibrate: a kind spread (" + std::to_string(options.kind_spread) +
                     ") needs pooled kernel factors and a positive value");
  // Partial pooling pays off only where there are kinds to tell apart.
  const bool pooling = options.kind_spread > 0 && runs_of_device.size() > 1;
  const double penalty = pooling ? kRunSpread / options.kind_spread : 0.0;
  if (pooling) fit.kind_spread = options.kind_spread;
  for (const std::string& name : options.fixed)
    if (std::find(Calibration::kNames.begin(), Calibration::kNames.end(), name) == Calibration::kNames.end())
      throw InputError("calibrate: --fix " + name +
                       ": expected one of matrix, memory, intra_node_comm, inter_node_comm, step_overhead_ms");

  std::vector<Param> params;
  for (const auto& [kind, n] : runs_of_kind) {
    params.push_back({Which::Matrix, kind});
    params.push_back({Which::Memory, kind});
  }
  if (pooling)
    for (const auto& [kind, n] : runs_of_device) {
      params.push_back({Which::Matrix, kind, true});
      params.push_back({Which::Memory, kind, true});
    }
  params.push_back({Which::IntraNode, ""});
  params.push_back({Which::InterNode, ""});
  params.push_back({Which::Overhead, ""});
  std::vector<bool> held(params.size()), insensitive(params.size(), false);
  Params p(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    held[i] = std::find(options.fixed.begin(), options.fixed.end(), params[i].global_name()) != options.fixed.end();
    p[i] = start_value(params[i], options.start);
  }
  const unsigned threads =
      options.threads > 0 ? static_cast<unsigned>(options.threads) : std::max(1u, std::thread::hardware_concurrency());
  // A factor no run is sensitive to is not fitted (it stays at its default).
  Layout layout = decide(params, held, insensitive, runs_of_kind, options.start, penalty, nullptr);
  const Fitter first = Fitter::over(settled, scored, kinds, device_kinds, layout, threads);
  Linearization lin = first.linearize(p);
  for (std::size_t i = 0; i < params.size(); ++i) {
    double sensitivity = 0;  // over the runs' rows (not the deviations' own)
    for (std::size_t r = 0; r < first.runs(); ++r) sensitivity = std::max(sensitivity, std::fabs(lin.jacobian[r][i]));
    insensitive[i] = layout.free[i] && sensitivity < 1e-6;
  }
  std::vector<std::string> notes;
  layout = decide(params, held, insensitive, runs_of_kind, options.start, penalty, &notes);
  // Parameters no longer free return to their start (a kind with too few runs: the default).
  for (std::size_t i = 0; i < params.size(); ++i)
    if (!layout.free[i]) p[i] = start_value(params[i], options.start);
  // Deviations are charged for (each has a pseudo-residual of its own): they need no runs.
  std::size_t n_free = 0;
  for (std::size_t i = 0; i < params.size(); ++i) n_free += layout.free[i] && !params[i].deviation;
  const Fitter fitter = Fitter::over(settled, scored, kinds, device_kinds, layout, threads);
  if (fitter.runs() < n_free + 1) {
    std::string left_out;
    for (const std::string& kind : layout.excluded)
      left_out += (left_out.empty() ? "" : ", ") + kind + ": " + std::to_string(runs_of_kind[kind]);
    if (!left_out.empty())
      left_out =
          " (runs of a GPU kind enter the fit when it has more runs than free kernel factors, 3 for two; "
          "left out: " +
          left_out + "; without --per-gpu-kind one set fits every kind)";
    throw InputError("calibrate: " + std::to_string(fitter.runs()) + " of " + std::to_string(scored.size()) +
                     " scored run(s) enter the fit" + left_out + ", too few to fit " + std::to_string(n_free) +
                     " factor(s); give more runs or hold factors fixed (--fix NAME)");
  }
  const Params started = p;  // where every leave-one-out refit starts too
  int iterations = 0;
  p = lm_fit(fitter, p, fitter.linearize(p), options.max_iterations, iterations, fit.converged, stage);
  fit.iterations = iterations;
  fit.calibration = to_calibration(layout, p);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const double log_value = params[i].deviation ? p[layout.pooled_of.at(i)] + p[i] : p[i];
    fit.factors.push_back({params[i].name(),
                           params[i].which == Which::Overhead ? std::max(0.0, p[i]) : std::exp(log_value),
                           layout.free[i], notes[i]});
  }
  stage("projecting every run with the fitted factors");
  fit.in_sample = evaluate_runs(settled, {.calibration = fit.calibration, .progress = {}});

  stage("leave-one-out");
  fit.leave_one_out = fit.default_model;
  // The refits are independent: one per thread, each projecting its runs serially.
  parallel_for(scored.size(), threads, [&](std::size_t r) {
    std::vector<std::size_t> others;
    std::vector<std::string> other_kinds, other_devices;
    std::map<std::string, std::size_t> counts;
    for (std::size_t j = 0; j < scored.size(); ++j)
      if (j != r) {
        others.push_back(scored[j]), other_kinds.push_back(kinds[j]), other_devices.push_back(device_kinds[j]);
        ++counts[kinds[j]];
      }
    const Layout without_layout = decide(params, held, insensitive, counts, options.start, penalty, nullptr);
    // From where the main fit started, as a calibration that never saw the run would: the fit can
    // have several minima (the link factors are weakly determined), and starting from the factors
    // fitted with the run would carry it into its own refit. A kind left without runs stays at
    // the pooled factors (any deviation is charged for).
    Params q = started;
    const Fitter without = Fitter::over(settled, others, other_kinds, other_devices, without_layout, 1);
    int unused = 0;
    bool unused_done = false;
    q = lm_fit(without, q, without.linearize(q), options.max_iterations, unused, unused_done, {});
    fit.leave_one_out.outcomes[scored[r]] =
        evaluate_run(settled.runs[scored[r]], {.calibration = to_calibration(without_layout, q), .progress = {}});
  });
  summarise(fit.leave_one_out);
  return fit;
}

nlohmann::json calibration_fit_to_json(const CalibrationFit& fit) {
  auto stats = [](const RunsReport& r) {
    return nlohmann::json{{"median_abs_error_pct", r.median_abs_error_pct},
                          {"max_abs_error_pct", r.max_abs_error_pct},
                          {"worst", r.worst_id},
                          {"runs", r.scored}};
  };
  nlohmann::json fitted = nlohmann::json::array();
  nlohmann::json held = nlohmann::json::object();
  for (const FitFactor& f : fit.factors) {
    if (f.fitted) fitted.push_back(f.name);
    else held[f.name] = f.note;
  }
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < fit.in_sample.outcomes.size(); ++i) {
    const RunOutcome& o = fit.in_sample.outcomes[i];
    if (!o.scored) continue;
    rows.push_back({{"id", o.run.id},
                    {"gpu", o.device_kind},
                    {"measured_step_s", o.run.measured_step_s},
                    {"default_error_pct", fit.default_model.outcomes[i].error_pct},
                    {"calibrated_error_pct", o.error_pct},
                    {"leave_one_out_error_pct", fit.leave_one_out.outcomes[i].error_pct}});
  }
  std::string method = "least squares on log(projected / measured), Levenberg-Marquardt";
  if (fit.kind_spread > 0)
    method +=
        "; kernel factors pooled over GPU kinds, each kind's deviation charged as (log deviation / kind_spread)^2 "
        "against (log error / 0.05)^2 a run";
  nlohmann::json j = calibration_to_json(fit.calibration, {{"fitted_on", fit.in_sample.path},
                                                           {"method", method},
                                                           {"iterations", fit.iterations},
                                                           {"converged", fit.converged},
                                                           {"fitted_factors", fitted},
                                                           {"not_fitted", held},
                                                           {"default_model", stats(fit.default_model)},
                                                           {"in_sample", stats(fit.in_sample)},
                                                           {"leave_one_out", stats(fit.leave_one_out)},
                                                           {"rows", rows}});
  if (fit.kind_spread > 0) j["kind_spread"] = fit.kind_spread;  // partial pooling only
  return j;
}

}  // namespace parasim::validation
