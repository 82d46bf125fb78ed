#include "parasim/profiler/cpu_profiler.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <unistd.h>

#include "parasim/common/error.hpp"
#include "parasim/common/interrupt.hpp"
#include "parasim/profiler/profile_cost_model.hpp"
#include "parasim/profiler/roofline.hpp"

namespace parasim::profiler {

CacheFlusher::CacheFlusher()
    : buffer_(static_cast<std::size_t>(std::max<Bytes>(2 * detect_host_cpu().last_level_cache, 8 * MiB)), 0) {}

void CacheFlusher::flush() {
  ++round_;
  // One write per cache line is enough to evict it (and leave it dirty, so the next owner pays
  // the write-back, as after a real producer).
  for (std::size_t i = 0; i < buffer_.size(); i += 64) buffer_[i] = static_cast<std::uint8_t>(buffer_[i] + round_);
}

std::array<std::optional<PhaseStats>, 4> measure_phases(const models::Op& op, OpKernel& kernel, KernelBackend& backend,
                                                        int warmup, int repetitions,
                                                        const std::function<void()>& before_each_run) {
  std::vector<Phase> phases;
  for (Phase p : kPhases)
    if (op_has_phase(op, p)) phases.push_back(p);
  for (int w = 0; w < warmup; ++w)
    for (Phase p : phases) kernel.run(p);
  backend.synchronize();
  std::array<std::vector<TimeNs>, 4> samples;
  for (int r = 0; r < std::max(repetitions, 1); ++r) {
    throw_if_interrupted();  // Ctrl-C between repetitions of a slow op
    for (Phase p : phases) {
      if (kernel.launches(p) == 0) {  // folded into another phase (LSTM, norms): nothing runs
        samples[phase_index(p)].push_back(0);
        continue;
      }
      if (before_each_run) before_each_run();
      const auto t0 = std::chrono::steady_clock::now();
      kernel.run(p);
      backend.synchronize();
      const auto t1 = std::chrono::steady_clock::now();
      samples[phase_index(p)].push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
    }
  }
  std::array<std::optional<PhaseStats>, 4> out;
  for (Phase p : phases) out[phase_index(p)] = summarize(samples[phase_index(p)], kernel.launches(p));
  return out;
}

Profile profile_model_with_backend(const models::Model& model, KernelBackend& backend, const CpuProfileOptions& options,
                                   CostSource source) {
  // Distinct signatures in topological order, with every op that shares each.
  std::vector<models::OpId> representatives;
  std::map<std::string, std::size_t> index;
  std::vector<std::vector<std::string>> names;
  for (models::OpId v : model.topological_order()) {
    const models::Op& op = model.op(v);
    if (!op_has_phase(op, Phase::Forward)) continue;  // input, reshape: nothing to time
    auto [it, fresh] = index.emplace(op.signature(), representatives.size());
    if (fresh) {
      representatives.push_back(v);
      names.emplace_back();
    }
    // A shared weight's user (a tied embedding) has no update phase: the owner is measured.
    if (op.params > 0 && model.op(representatives[it->second]).params == 0) representatives[it->second] = v;
    names[it->second].push_back(op.name);
  }

  Profile p;
  p.created = utc_now_iso8601();
  p.command = options.command;
  p.backend = backend.name();
  p.source = source;
  p.device.name = backend.device_kind();
  p.device.kind = backend.device_kind();
  p.model = model.name();
  p.batch = model.batch();
  p.dtype = model.dtype();
  p.optimizer = options.optimizer;
  p.repetitions = std::max(options.repetitions, 1);
  p.warmup = std::max(options.warmup, 0);
  std::unique_ptr<CacheFlusher> flusher;
  std::function<void()> before_each_run;
  if (options.flush_cache) {
    flusher = std::make_unique<CacheFlusher>();
    before_each_run = [&flusher] { flusher->flush(); };
  }
  for (std::size_t i = 0; i < representatives.size(); ++i) {
    throw_if_interrupted();
    const models::Op& op = model.op(representatives[i]);
    ProfileEntry e;
    e.names = names[i];
    e.kind = models::to_string(op.kind);
    e.signature = op.signature();
    e.batch_key = batch_key(op);
    e.batch = op_batch(op);
    try {
      std::unique_ptr<OpKernel> kernel = backend.prepare(op, options.optimizer);
      e.phases = measure_phases(op, *kernel, backend, static_cast<int>(p.warmup), static_cast<int>(p.repetitions),
                                before_each_run);
      e.note = kernel->note();
    } catch (const RuntimeError& err) {
      e.note = std::string("not measured: ") + err.what();
    } catch (const std::bad_alloc&) {
      e.note = "not measured: out of memory";
    }
    p.ops.push_back(std::move(e));
    if (options.on_progress) options.on_progress(i + 1, representatives.size());
  }
  return p;
}

DeviceInfo host_device_info(int threads) {
  const HostCpu host = detect_host_cpu();
  DeviceInfo d;
  d.name = host.model_name;
  d.kind = host_device_kind(host);
  d.onednn = kernels::onednn_version();
  char hostname[256] = {};
  if (gethostname(hostname, sizeof hostname - 1) == 0) d.host = hostname;
  d.threads = std::max(threads, 1);
  d.sm_clock_mhz = static_cast<int>(host.mhz);
  return d;
}

Profile profile_model_on_cpu(const models::Model& model, const CpuProfileOptions& options) {
  auto backend = make_cpu_kernel_backend(options.threads);
  Profile p = profile_model_with_backend(model, *backend, options, CostSource::MeasuredCpu);
  p.device = host_device_info(options.threads);
  return p;
}

}  // namespace parasim::profiler
