// JSON of planner rows: fixed keys, no timings of the planner itself, so identical inputs give
// byte-identical output through dump_json.
#include "parasim/strategies/planner.hpp"

namespace parasim::strategies {

nlohmann::json plan_row_to_json(const PlanRow& row) {
  nlohmann::json j;
  j["strategy"] = to_string(row.strategy);
  j["global_batch"] = row.global_batch;
  j["devices"] = row.devices;
  j["feasible"] = row.feasible();
  j["verdict"] = to_string(row.verdict);
  if (!row.feasible() || !row.reason.empty()) j["reason"] = row.reason;  // a feasible row's: its recompute_layers
  j["simulated"] = row.simulated();
  j["step_time_ms"] = ns_to_ms(row.step_time);
  j["throughput_samples_per_s"] = row.throughput;
  if (row.mfu > 0) j["mfu"] = row.mfu;
  j["bubble_fraction"] = row.bubble_fraction;
  j["compute_ms"] = ns_to_ms(row.compute);
  j["exposed_comm_ms"] = ns_to_ms(row.exposed_comm);
  j["exposed_comm_fraction"] =
      row.step_time > 0 ? static_cast<double>(row.exposed_comm) / static_cast<double>(row.step_time) : 0.0;
  j["peak_memory_bytes"] = row.peak_memory;
  j["capacity_bytes"] = row.capacity;
  j["memory_fraction"] = row.memory_ratio();
  j["epochs"] = row.epochs;
  j["steps_per_epoch"] = row.steps_per_epoch;
  j["time_to_train_s"] = ns_to_s(row.time_to_train);
  if (row.sampled_micro[0] > 0) j["simulated_micro"] = {row.sampled_micro[0], row.sampled_micro[1]};
  if (row.detailed) {
    j["dp_comm_ms"] = ns_to_ms(row.dp_comm);
    j["pipeline_comm_ms"] = ns_to_ms(row.pipeline_comm);
    j["tp_comm_ms"] = ns_to_ms(row.tp_comm);
  }
  return j;
}

nlohmann::json plan_rows_to_json(const PlanResult& plan, std::size_t top) {
  nlohmann::json out = nlohmann::json::array();
  const std::size_t n = top == 0 ? plan.rows.size() : std::min(top, plan.rows.size());
  for (std::size_t i = 0; i < n; ++i) out.push_back(plan_row_to_json(plan.rows[i]));
  return out;
}

}  // namespace parasim::strategies
