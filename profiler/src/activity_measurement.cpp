// The repetition discipline of the GPU profiler, vendor-neutral so it is tested with a fake
// backend and a fake activity source.
#include <algorithm>
#include <iterator>

#include "parasim/common/error.hpp"
#include "parasim/profiler/gpu_profiler.hpp"

namespace parasim::profiler {

OpPhaseMeasurement measure_op_phases(OpKernel& kernel, KernelBackend& backend, ActivitySource& source,
                                     const MeasurementPlan& plan, std::uint32_t op_index,
                                     const std::array<bool, 4>& expected) {
  if (plan.warmup < 0 || plan.repetitions < 1) {
    throw InputError("measurement plan: expected warmup >= 0 and repetitions >= 1, found warmup " +
                     std::to_string(plan.warmup) + " and repetitions " + std::to_string(plan.repetitions));
  }
  for (int w = 0; w < plan.warmup; ++w) {
    for (Phase phase : kPhases) kernel.run(phase);
  }
  backend.synchronize();
  // Warm-up launches and whatever prepare() ran (cuDNN algorithm search) are not measurements.
  // Losses during that window do not matter either, so the batch is dropped whole.
  (void)source.flush();

  ActivityAttributor attributor;
  for (int rep = 0; rep < plan.repetitions; ++rep) {
    for (Phase phase : kPhases) {
      const std::uint64_t id = attributor.register_range({op_index, phase, static_cast<std::uint32_t>(rep)});
      {
        ScopedExternalId tag(source, id);
        kernel.run(phase);
      }
      // Each phase starts on an idle device, so the span of one phase never overlaps the next.
      backend.synchronize();
    }
  }
  attributor.add(source.flush());

  OpPhaseMeasurement m;
  for (std::size_t i = 0; i < kPhases.size(); ++i) m.phases[i] = attributor.statistics(op_index, kPhases[i]);
  m.reliable = attributor.reliable();
  m.reliability_note = attributor.reliability_note();
  m.unattributed_records = attributor.unattributed_records();
  auto add_reason = [&m](const std::string& why) {
    m.reliable = false;
    m.reliability_note += (m.reliability_note.empty() ? "" : "; ") + why;
  };
  // Every launch of the timed window ran inside some range, so a record without an external id
  // means the tracer did not join it (on real CUPTI: the external-correlation records were lost).
  if (m.unattributed_records > 0)
    add_reason(std::to_string(m.unattributed_records) + " device records in the timed window had no external id");
  // A phase the op has that shows no device activity in some repetition: its time would read 0 ns.
  std::string empty;
  for (std::size_t i = 0; i < kPhases.size(); ++i) {
    if (!expected[i]) continue;
    int silent = 0;
    for (int rep = 0; rep < plan.repetitions; ++rep) {
      const RangeTiming t = attributor.timing({op_index, kPhases[i], static_cast<std::uint32_t>(rep)});
      if (t.kernels + t.memcpys + t.memsets == 0) ++silent;
    }
    if (silent > 0)
      empty += (empty.empty() ? "" : ", ") + phase_key(kPhases[i]) + " (" + std::to_string(silent) + " of " +
               std::to_string(plan.repetitions) + " repetitions)";
  }
  if (!empty.empty()) add_reason("no device activity attributed to " + empty);
  return m;
}

std::size_t check_profile_reliability(const Profile& profile) {
  std::size_t measured = 0, unreliable = 0;
  const ProfileEntry* first = nullptr;
  for (const ProfileEntry& e : profile.ops) {
    if (std::none_of(e.phases.begin(), e.phases.end(), [](const auto& p) { return p.has_value(); })) continue;
    ++measured;
    if (e.note.rfind(kUnreliablePrefix, 0) == 0) {
      ++unreliable;
      if (!first) first = &e;
    }
  }
  if (2 * unreliable > measured) {
    throw RuntimeError("GPU profiling failed: " + std::to_string(unreliable) + " of " + std::to_string(measured) +
                       " measured entries are unreliable (first: " + first->names.front() + ": " +
                       first->note.substr(std::string(kUnreliablePrefix).size()) +
                       "); the activity records could not be attributed to the ops, so no profile is written "
                       "(docs/gpu_profiling.md, \"Reliability\")");
  }
  return unreliable;
}

}  // namespace parasim::profiler
