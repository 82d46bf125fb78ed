#include <algorithm>

#include "parasim/simulator/step_result.hpp"

namespace parasim::simulator {

nlohmann::json step_result_to_json(const StepResult& r, const TaskGraph& graph, const hardware::Cluster& cluster) {
  nlohmann::json j;
  j["schema"] = "parasim.step_result/1";
  j["cluster"] = cluster.name();
  j["collective_mode"] = std::string(to_string(r.collective_mode));
  j["step_time_ns"] = r.step_time;
  j["tasks"] = r.tasks;
  j["events"] = r.events;
  auto& devices = j["devices"] = nlohmann::json::array();
  for (std::size_t d = 0; d < r.devices.size(); ++d) {
    const DeviceStats& s = r.devices[d];
    const auto& cd = cluster.device(static_cast<hardware::DeviceId>(d));
    const auto& b = s.peak_breakdown;
    devices.push_back({{"device", d},
                       {"name", cd.name},
                       {"kind", cd.kind},
                       {"compute_busy_ns", s.compute_busy},
                       {"comm_busy_ns", s.comm_busy},
                       {"exposed_comm_ns", s.exposed_comm},
                       {"idle_ns", s.idle},
                       {"peak_memory_bytes", s.peak_memory},
                       {"peak_time_ns", s.peak_time},
                       {"memory_capacity_bytes", s.capacity},
                       {"peak_breakdown",
                        {{"params", b.params},
                         {"grads", b.grads},
                         {"optimizer", b.optimizer},
                         {"activations", b.activations},
                         {"other", b.other}}}});
  }
  auto& links = j["links"] = nlohmann::json::array();
  for (std::size_t l = 0; l < r.links.size(); ++l) {
    if (r.links[l].bytes == 0 && r.links[l].busy == 0) continue;
    const double util = r.step_time > 0 ? static_cast<double>(r.links[l].busy) / static_cast<double>(r.step_time) : 0.0;
    links.push_back({{"link", l},
                     {"name", cluster.directed_link_name(static_cast<hardware::DirLinkId>(l))},
                     {"busy_ns", r.links[l].busy},
                     {"bytes", r.links[l].bytes},
                     {"utilization", util}});
  }
  j["critical_path"] = r.critical_path;
  auto& names = j["critical_path_names"] = nlohmann::json::array();
  for (TaskId t : r.critical_path) names.push_back(std::string(graph.name(t)));
  return j;
}

}  // namespace parasim::simulator
