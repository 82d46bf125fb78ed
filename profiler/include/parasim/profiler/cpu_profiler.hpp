// Measuring per-op costs on the host: every distinct op signature of a model is prepared once on
// a KernelBackend, warmed up, then each phase is run `repetitions` times and timed with
// steady_clock around run() + synchronize(), phase by phase, as the CPU executor runs them.
//
// Example:
//   CpuProfileOptions opt;
//   opt.repetitions = 10;
//   Profile p = profile_model_on_cpu(models::build_zoo_model("resnet50", {.batch = 4}), opt);
//   save_profile(p, "traces/cpu/resnet50-b4-fp32.json");
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "parasim/kernels/kernel_backend.hpp"
#include "parasim/models/graph.hpp"
#include "parasim/profiler/profile.hpp"

namespace parasim::profiler {

// The kernels the profiler times are the kernels component's; profiler:: keeps their names.
using kernels::KernelBackend;
using kernels::make_cpu_kernel_backend;
using kernels::OpKernel;

struct CpuProfileOptions {
  int threads = 1;       // oneDNN threads (the CPU executor runs one device per core: 1)
  int warmup = 2;        // untimed runs of every phase before timing
  int repetitions = 10;  // timed runs of every phase
  Optimizer optimizer = Optimizer::Sgd;
  /// Evict the caches (write a buffer of twice the last-level cache) before every timed run, so
  /// each phase starts with its weights, gradients and optimizer state in DRAM, as in a training
  /// step where many other ops ran since they were last touched. false: caches stay warm
  /// between repetitions (small ops then look faster than inside a real step).
  bool flush_cache = true;
  std::string command;   // recorded in the profile
  /// Called after each signature with (done, total); the CLI draws its progress bar with it.
  std::function<void(std::size_t, std::size_t)> on_progress;
};

/// Times the phases `op` has (op_has_phase) on a prepared kernel: `warmup` untimed runs of all
/// phases, then `repetitions` rounds of fwd, bwd_data, bwd_weight, update, each timed alone.
/// `before_each_run` (untimed) runs before every timed run, e.g. a cache flush. A phase whose
/// kernel launches nothing (its work is done in another phase) records 0 ns.
std::array<std::optional<PhaseStats>, 4> measure_phases(const models::Op& op, OpKernel& kernel, KernelBackend& backend,
                                                        int warmup, int repetitions,
                                                        const std::function<void()>& before_each_run = {});

/// Evicts the host caches by writing a buffer of twice the last-level cache (at least 8 MiB).
class CacheFlusher {
 public:
  CacheFlusher();
  void flush();
  Bytes bytes() const { return static_cast<Bytes>(buffer_.size()); }

 private:
  std::vector<std::uint8_t> buffer_;
  std::uint8_t round_ = 0;
};

/// Profiles every distinct signature of `model` on `backend` with host timing. An op whose kernel
/// cannot be prepared gets an entry without phases and the reason in its note (its cost then
/// comes from the roofline); `source` is what the entries are (measured-cpu for the CPU backend).
Profile profile_model_with_backend(const models::Model& model, KernelBackend& backend, const CpuProfileOptions& options,
                                   CostSource source);

/// profile_model_with_backend on make_cpu_kernel_backend(options.threads), with the host
/// described in the profile (CPU model, host name, threads, oneDNN version).
Profile profile_model_on_cpu(const models::Model& model, const CpuProfileOptions& options);

/// The host as a profile device: name from /proc/cpuinfo, kind host_device_kind().
DeviceInfo host_device_info(int threads);

}  // namespace parasim::profiler
