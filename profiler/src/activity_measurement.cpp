// The repetition discipline of the GPU profiler, vendor-neutral so it is tested with a fake
// backend and a fake activity source.
#include <iterator>

#include "parasim/common/error.hpp"
#include "parasim/profiler/gpu_profiler.hpp"

namespace parasim::profiler {

OpPhaseMeasurement measure_op_phases(OpKernel& kernel, KernelBackend& backend, ActivitySource& source,
                                     const MeasurementPlan& plan, std::uint32_t op_index) {
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
  return m;
}

}  // namespace parasim::profiler
