#include "parasim/validation/calibrate.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <exception>
#include <thread>

#include "parasim/common/error.hpp"

namespace parasim::validation {

namespace {

constexpr std::size_t kFactors = Calibration::kNames.size();
constexpr std::size_t kOverhead = kFactors - 1;  // step_overhead_ms: additive, fitted in ms

// Parameters: log of each multiplicative factor, the overhead in ms as is.
using Params = std::array<double, kFactors>;

Calibration to_calibration(const Params& p) {
  Calibration c;
  for (std::size_t i = 0; i < kFactors; ++i) c.set(i, i == kOverhead ? std::max(0.0, p[i]) : std::exp(p[i]));
  return c;
}

// A calibration corrects a model, it does not replace it: factors stay within [1/3, 3].
constexpr double kMinFactor = 1.0 / 3.0, kMaxFactor = 3.0;

double step(std::size_t i) { return i == kOverhead ? 10.0 : 0.05; }

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
  std::vector<std::array<double, kFactors>> jacobian;
};

class Fitter {
 public:
  Fitter(const RunsFile& runs, std::vector<std::size_t> scored, std::vector<bool> free, unsigned threads)
        : runs_(&runs), scored_(std::move(scored)), free_(std::move(free)), threads_(threads) {}

  double projected(std::size_t run, const Params& p) const {
    const RunOutcome o = evaluate_run(runs_->runs[run], {.calibration = to_calibration(p), .progress = {}});
    if (!o.scored) throw RuntimeError("calibrate: run " + runs_->runs[run].id + " could not be projected: " + o.note);
    return o.projected_step_s;
  }

  /// Log residuals only (one projection per run).
  std::vector<double> residuals(const Params& p) const {
    std::vector<double> r(scored_.size());
    parallel_for(scored_.size(), threads_, [&](std::size_t j) {
      r[j] = std::log(projected(scored_[j], p) / runs_->runs[scored_[j]].measured_step_s);
    });
    return r;
  }

  Linearization linearize(const Params& p) const {
    Linearization lin;
    lin.residual.resize(scored_.size());
    lin.jacobian.resize(scored_.size());
    parallel_for(scored_.size(), threads_, [&](std::size_t j) {
      const std::size_t run = scored_[j];
      const double measured = runs_->runs[run].measured_step_s;
      lin.residual[j] = std::log(projected(run, p) / measured);
      std::array<double, kFactors> row{};
      for (std::size_t i = 0; i < kFactors; ++i) {
        if (!free_[i]) continue;
        Params q = p;
        q[i] += step(i);
        row[i] = (std::log(projected(run, q) / measured) - lin.residual[j]) / step(i);
      }
      lin.jacobian[j] = row;
    });
    return lin;
  }

  /// The Levenberg-Marquardt step from `lin` with damping `lambda` (0: Gauss-Newton), leaving out
  /// scored run `skip` (npos: none).
  Params delta(const Linearization& lin, std::size_t skip, double lambda = 0.0) const {
    std::vector<std::size_t> idx;
    for (std::size_t i = 0; i < kFactors; ++i)
      if (free_[i]) idx.push_back(i);
    std::vector<std::vector<double>> a(idx.size(), std::vector<double>(idx.size(), 0.0));
    std::vector<double> b(idx.size(), 0.0);
    for (std::size_t r = 0; r < lin.residual.size(); ++r) {
      if (r == skip) continue;
      for (std::size_t x = 0; x < idx.size(); ++x) {
        b[x] -= lin.jacobian[r][idx[x]] * lin.residual[r];
        for (std::size_t y = 0; y < idx.size(); ++y) a[x][y] += lin.jacobian[r][idx[x]] * lin.jacobian[r][idx[y]];
      }
    }
    for (std::size_t x = 0; x < idx.size(); ++x) a[x][x] += lambda * a[x][x] + 1e-9;  // 1e-9: unconstrained stay at 0
    const std::vector<double> sol = solve(a, b);
    Params d{};
    for (std::size_t x = 0; x < idx.size(); ++x) d[idx[x]] = sol[x];
    return d;
  }

  static Params clamp(Params p) {
    for (std::size_t i = 0; i < kFactors; ++i)
      p[i] = i == kOverhead ? std::clamp(p[i], 0.0, 60000.0)
                            : std::clamp(p[i], std::log(kMinFactor), std::log(kMaxFactor));
    return p;
  }

 private:
  const RunsFile* runs_;
  std::vector<std::size_t> scored_;
  std::vector<bool> free_;
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
      const Params d = fitter.delta(lin, static_cast<std::size_t>(-1), lambda);
      Params q = p;
      for (std::size_t i = 0; i < kFactors; ++i) q[i] += d[i];
      q = Fitter::clamp(q);
      const double trial = sum_of_squares(fitter.residuals(q));
      if (trial < current) {
        double size = 0;
        for (std::size_t i = 0; i < kFactors; ++i) size = std::max(size, std::fabs(q[i] - p[i]));
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

}  // namespace

CalibrationFit fit_calibration(const RunsFile& runs, const FitOptions& options) {
  CalibrationFit fit;
  auto stage = [&](const std::string& s) {
    if (options.on_stage) options.on_stage(s);
  };
  stage("projecting every run with the default model");
  fit.default_model = evaluate_runs(runs, {});
  std::vector<std::size_t> scored;
  for (std::size_t i = 0; i < fit.default_model.outcomes.size(); ++i)
    if (fit.default_model.outcomes[i].scored) scored.push_back(i);

  std::vector<bool> free(kFactors, true);
  for (const std::string& name : options.fixed) {
    bool known = false;
    for (std::size_t i = 0; i < kFactors; ++i)
      if (Calibration::kNames[i] == name) free[i] = false, known = true;
    if (!known)
      throw InputError("calibrate: --fix " + name +
                       ": expected one of matrix, memory, intra_node_comm, inter_node_comm, step_overhead_ms");
  }
  const unsigned threads = options.threads > 0 ? static_cast<unsigned>(options.threads)
                                              : std::max(1u, std::thread::hardware_concurrency());
  Fitter fitter(runs, scored, free, threads);
  Params p{};
  for (std::size_t i = 0; i < kFactors; ++i)
    p[i] = i == kOverhead ? options.start.get(i) : std::log(options.start.get(i));
  Linearization lin = fitter.linearize(p);
  // A factor no run is sensitive to is not fitted (it stays at its default).
  for (std::size_t i = 0; i < kFactors; ++i) {
    double sensitivity = 0;
    for (const auto& row : lin.jacobian) sensitivity = std::max(sensitivity, std::fabs(row[i]));
    if (sensitivity < 1e-6) free[i] = false;
  }
  std::size_t n_free = static_cast<std::size_t>(std::count(free.begin(), free.end(), true));
  if (scored.size() < n_free + 1)
    throw InputError("calibrate: " + std::to_string(scored.size()) + " scored run(s) cannot fit " +
                     std::to_string(n_free) + " factors; give more runs or hold factors fixed (--fix NAME)");
  fitter = Fitter(runs, scored, free, threads);
  int iterations = 0;
  p = lm_fit(fitter, p, std::move(lin), options.max_iterations, iterations, fit.converged, stage);
  fit.iterations = iterations;
  fit.calibration = to_calibration(p);
  fit.fitted = free;
  stage("projecting every run with the fitted factors");
  fit.in_sample = evaluate_runs(runs, {.calibration = fit.calibration, .progress = {}});

  stage("leave-one-out");
  fit.leave_one_out = fit.default_model;
  // The refits are independent: one per thread, each projecting its runs serially.
  parallel_for(scored.size(), threads, [&](std::size_t r) {
    std::vector<std::size_t> others;
    for (std::size_t j = 0; j < scored.size(); ++j)
      if (j != r) others.push_back(scored[j]);
    Fitter without(runs, others, free, 1);
    int unused = 0;
    bool unused_done = false;
    const Params q = lm_fit(without, p, without.linearize(p), options.max_iterations, unused, unused_done, {});
    fit.leave_one_out.outcomes[scored[r]] =
        evaluate_run(runs.runs[scored[r]], {.calibration = to_calibration(q), .progress = {}});
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
  for (std::size_t i = 0; i < kFactors; ++i)
    if (fit.fitted[i]) fitted.push_back(std::string(Calibration::kNames[i]));
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < fit.in_sample.outcomes.size(); ++i) {
    const RunOutcome& o = fit.in_sample.outcomes[i];
    if (!o.scored) continue;
    rows.push_back({{"id", o.run.id},
                    {"measured_step_s", o.run.measured_step_s},
                    {"default_error_pct", fit.default_model.outcomes[i].error_pct},
                    {"calibrated_error_pct", o.error_pct},
                    {"leave_one_out_error_pct", fit.leave_one_out.outcomes[i].error_pct}});
  }
  return calibration_to_json(fit.calibration,
                             {{"fitted_on", fit.in_sample.path},
                              {"method", "least squares on log(projected / measured), Levenberg-Marquardt"},
                              {"iterations", fit.iterations},
                              {"converged", fit.converged},
                              {"fitted_factors", fitted},
                              {"default_model", stats(fit.default_model)},
                              {"in_sample", stats(fit.in_sample)},
                              {"leave_one_out", stats(fit.leave_one_out)},
                              {"rows", rows}});
}

}  // namespace parasim::validation
