#include "parasim/strategies/lowering.hpp"

#include <algorithm>

#include "parasim/common/error.hpp"
#include "parasim/strategies/memory_model.hpp"
#include "emitter.hpp"
#include "lower_data_loading.hpp"
#include "lowering_base.hpp"
#include "prepared_step.hpp"

namespace parasim::strategies {

std::string to_string(Granularity g) { return g == Granularity::Op ? "op" : "stage"; }

std::optional<Granularity> parse_granularity(std::string_view s) {
  if (s == "op") return Granularity::Op;
  if (s == "stage") return Granularity::Stage;
  return std::nullopt;
}

std::string to_string(Symmetry s) {
  switch (s) {
    case Symmetry::None: return "none";
    case Symmetry::DataParallel: return "data-parallel";
    case Symmetry::DataAndTensor: return "data-and-tensor";
  }
  return "?";
}

namespace {

/// Weights, gradients, optimizer state and (PipeDream) stashed weight versions of one device.
simulator::StaticMemory static_memory_of_slot(const detail::Prepared& p, int slot) {
  const std::int64_t params = p.slot_params[static_cast<std::size_t>(slot)];
  const std::int64_t experts = p.slot_expert_params[static_cast<std::size_t>(slot)];
  simulator::StaticMemory m =
      static_memory_for(params - experts, p.dtype, p.setup->optimizer, p.s.zero >= 1 ? p.grad_ranks() : 1,
                        p.s.zero >= 2, p.s.zero == 3, p.setup->grad_accumulation);
  // ZeRO-3: the layer being computed and the one prefetched are gathered whole.
  if (p.zero3()) m.other += p.slot_gathered[static_cast<std::size_t>(slot)];
  if (experts > 0) {
    // Expert parallelism: the experts' state is sharded (ZeRO) over the DP x CP ranks holding the same experts.
    const simulator::StaticMemory e =
        static_memory_for(experts, p.dtype, p.setup->optimizer, p.s.zero >= 1 ? p.expert_grad_ranks() : 1,
                          p.s.zero == 2, false, p.setup->grad_accumulation);
    m.params += e.params;
    m.grads += e.grads;
    m.optimizer += e.optimizer;
  }
  if (p.s.schedule == Schedule::PipeDream) {
    // Stage i has M - i micro-batches in flight, each needing the weights it ran forward with:
    // the live weights plus M - i - 1 stashed versions.
    m.other += static_cast<Bytes>(p.stages - slot - 1) * params * models::dtype_size(p.dtype);
  }
  return m;
}

}  // namespace

LoweredStep lower_step(const StepSetup& setup) {
  const std::unique_ptr<detail::Prepared> pp = detail::prepare_step(setup);
  const detail::Prepared& p = *pp;
  // Data loading adds one stream after the others: the replica's loader.
  const int streams = (p.cp > 1 ? kStreamsPerDevice + 1 : kStreamsPerDevice) + (setup.data_loading.enabled ? 1 : 0);
  simulator::TaskGraphBuilder builder(p.mapping->devices_used(), streams);
  // About what the lowerings add (a stage-granularity 1F1B step with TP: ~10 tasks and ~16
  // dependencies per chunk and micro-batch), so that the arrays do not grow by copying.
  const std::size_t units =
      static_cast<std::size_t>(setup.granularity == Granularity::Stage && p.layered() ? p.chunks : p.n);
  const std::size_t estimate = units * static_cast<std::size_t>(p.simulated_micro_batches) *
                               static_cast<std::size_t>(p.sim_replicas.size()) * static_cast<std::size_t>(p.sim_tp) *
                               10;
  builder.reserve(std::min<std::size_t>(estimate, std::size_t{1} << 24),
                  std::min<std::size_t>(estimate * 2, std::size_t{1} << 25));
  detail::Emitter emitter(p, builder);
  LoweredStep out;
  out.granularity = setup.granularity == Granularity::Stage && p.layered() ? Granularity::Stage : Granularity::Op;
  if (out.granularity == Granularity::Stage) detail::lower_stages(p, emitter, out);
  else detail::lower_ops(p, emitter, out);
  detail::add_data_loading(p, builder, streams - 1);

  out.roles.resize(static_cast<std::size_t>(p.mapping->devices_used()));
  for (int r = 0; r < p.replicas; ++r)
    for (int slot = 0; slot < p.stages; ++slot)
      for (int c = 0; c < p.cp; ++c)
        for (int t = 0; t < p.tp_ranks; ++t) {
          const hardware::DeviceId d = p.device(r, slot, t, c);
          out.roles[static_cast<std::size_t>(d)] = DeviceRole{d, r, slot, t, false, c};
        }
  for (int r : p.sim_replicas)
    for (int slot = 0; slot < p.stages; ++slot)
      for (int t = 0; t < p.sim_tp; ++t) {
        const hardware::DeviceId d = p.device(r, slot, t);
        out.roles[static_cast<std::size_t>(d)].simulated = true;
        out.simulated_devices.push_back(d);
        builder.set_static_memory(d, static_memory_of_slot(p, slot));
      }
  out.graph = std::move(builder).build();
  out.replica_batch = p.replica_batch;
  out.microbatches = p.micro;
  out.op_stage = p.op_slot;
  out.op_chunk = p.op_chunk;
  out.stage_params = p.slot_params;
  out.cost_counts = p.counts;
  out.cost_source = p.cost_source;
  out.sequence_parallel = p.sp;
  out.symmetry = p.symmetry;
  return out;
}

}  // namespace parasim::strategies
