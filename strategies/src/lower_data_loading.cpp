#include "lower_data_loading.hpp"

#include <string>
#include <vector>

#include "parasim/common/error.hpp"

namespace parasim::strategies::detail {

using simulator::Phase;
using simulator::TaskId;

void add_data_loading(const Prepared& p, simulator::TaskGraphBuilder& b, int stream) {
  const DataLoading& dl = p.setup->data_loading;
  if (!dl.enabled) return;
  if (p.async && !dl.overlapped())
    throw InputError(
        "data loading: workers=0 (loading in the training process) is not modelled for the "
        "asynchronous schedule " +
        to_string(p.s.schedule) + "; give workers >= 1");
  std::vector<int> replica_of(static_cast<std::size_t>(p.mapping->devices_used()), -1);
  for (int r = 0; r < p.replicas; ++r)
    for (int slot = 0; slot < p.stages; ++slot)
      for (int c = 0; c < p.cp; ++c)
        for (int t = 0; t < p.tp_ranks; ++t) replica_of[static_cast<std::size_t>(p.device(r, slot, t, c))] = r;

  // One loader task per simulated replica; `entries` (taken before they were added) wait for
  // their replica's (a collective, which has no device, for every replica's).
  auto load = [&](int mb, auto samples_of, std::string_view name) {
    std::vector<TaskId> task(static_cast<std::size_t>(p.replicas), simulator::kNoTask);
    for (int r : p.sim_replicas)
      task[static_cast<std::size_t>(r)] = b.add_compute({.device = p.device(r, 0, 0),
                                                         .stream = stream,
                                                         .duration = dl.load_time(samples_of(r)),
                                                         .name = name,
                                                         .microbatch = mb,
                                                         .phase = Phase::DataLoad});
    return task;
  };
  auto wait = [&](const std::vector<TaskId>& entries, const std::vector<TaskId>& task) {
    for (TaskId t : entries) {
      const simulator::DeviceId d = b.device_of(t);
      const int r = d >= 0 ? replica_of[static_cast<std::size_t>(d)] : -1;
      if (r >= 0 && task[static_cast<std::size_t>(r)] != simulator::kNoTask) {
        b.add_dependency(t, task[static_cast<std::size_t>(r)]);
        continue;
      }
      for (TaskId l : task)
        if (l != simulator::kNoTask) b.add_dependency(t, l);
    }
  };
  auto step_samples = [&p](int r) { return p.replica_batch[static_cast<std::size_t>(r)]; };

  if (!p.async) {
    if (dl.overlapped()) {
      (void)load(-1, step_samples, "data_load.next_step");
      return;
    }
    const std::vector<TaskId> roots = b.entry_tasks(-1);
    wait(roots, load(-1, step_samples, "data_load"));
    return;
  }
  for (int mb = 0; mb < p.simulated_micro_batches; ++mb) {
    const std::vector<TaskId> entries = b.entry_tasks(mb);
    auto micro_samples = [&p, mb](int r) {
      return p.micro[static_cast<std::size_t>(r)][static_cast<std::size_t>(mb % p.micro_batches)];
    };
    wait(entries, load(mb, micro_samples, "data_load"));
  }
}

}  // namespace parasim::strategies::detail
