// Published nccl-tests curves against the NCCL cost model (nccl_tests.hpp).
#include "parasim/validation/nccl_tests.hpp"

#include <algorithm>
#include <cmath>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/simulator/collectives.hpp"

namespace parasim::validation {

namespace {

simulator::CollectiveOp parse_op(const JsonField& f) {
  const std::string s = f.as_string();
  if (s == "all_reduce") return simulator::CollectiveOp::AllReduce;
  if (s == "all_gather") return simulator::CollectiveOp::AllGather;
  if (s == "reduce_scatter") return simulator::CollectiveOp::ReduceScatter;
  f.fail("\"all_reduce\", \"all_gather\" or \"reduce_scatter\" (an nccl-tests *_perf name)");
}

std::string optional_string(const JsonField& obj, const std::string& key) {
  const auto f = obj.find(key);
  return f ? f->as_string() : std::string{};
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

NcclTestsFile load_nccl_tests_file(const std::string& path) { return parse_nccl_tests(read_json_file(path), path); }

NcclTestsFile parse_nccl_tests(const nlohmann::json& doc, const std::string& path) {
  const JsonField root{doc, path, "$"};
  root.expect_schema("parasim.nccl_tests/1");
  NcclTestsFile file;
  file.path = path;
  for (const JsonField& c : root.at("curves").items_of_array()) {
    NcclTestsCurve curve;
    curve.id = c.at("id").as_string();
    for (const NcclTestsCurve& other : file.curves)
      if (other.id == curve.id) c.at("id").fail("a curve id not used before in the file");
    curve.system = c.at("system").as_string();
    curve.source = c.at("source").as_string();
    curve.url = optional_string(c, "url");
    curve.nccl = optional_string(c, "nccl");
    curve.note = optional_string(c, "note");
    curve.approximate = optional_string(c, "approximate");
    curve.not_checked = optional_string(c, "not_checked");
    const JsonField preset = c.at("preset");
    curve.preset = preset.as_string();
    curve.nodes = static_cast<int>(c.at("nodes").as_int(1, 4096));
    curve.gpus_per_node = static_cast<int>(c.at("gpus_per_node").as_int(1, 64));
    curve.op = parse_op(c.at("op"));
    const auto& presets = hardware::cluster_presets();
    const auto it = std::find_if(presets.begin(), presets.end(),
                                 [&](const hardware::ClusterPresetInfo& p) { return p.name == curve.preset; });
    if (it == presets.end()) preset.fail("a cluster preset name (parasim clusters lists them)");
    if (curve.gpus_per_node > it->devices_per_node)
      c.at("gpus_per_node")
          .fail("at most " + std::to_string(it->devices_per_node) + " (GPUs per " + curve.preset + " node)");
    if (curve.nodes * curve.gpus_per_node < 2) c.at("nodes").fail("at least 2 GPUs in all (nodes x gpus_per_node)");
    const double ranks = static_cast<double>(curve.nodes * curve.gpus_per_node);
    const double factor =
        curve.op == simulator::CollectiveOp::AllReduce ? 2 * (ranks - 1) / ranks : (ranks - 1) / ranks;
    for (const JsonField& r : c.at("rows").items_of_array()) {
      NcclTestsRow row;
      row.bytes = r.at("bytes").as_int(1, std::int64_t{1} << 40);
      // A source gives the bus bandwidth, or the time (a latency table): busbw as nccl-tests derives it.
      if (r.has("busbw_gbs") == r.has("time_us")) r.fail("an object with busbw_gbs or time_us (one of them)");
      if (r.has("busbw_gbs")) {
        row.busbw_gbs = r.at("busbw_gbs").as_double(1e-9, 1e5);
      } else {
        row.time_us = r.at("time_us").as_double(1e-3, 1e9);
        row.busbw_gbs = static_cast<double>(row.bytes) / (row.time_us * 1e3) * factor;
      }
      curve.rows.push_back(row);
    }
    if (curve.rows.empty()) c.at("rows").fail("at least one row");
    file.curves.push_back(std::move(curve));
  }
  return file;
}

NcclTestsReport check_nccl_tests(const NcclTestsFile& file) {
  NcclTestsReport report;
  std::vector<double> bound, all;
  for (const NcclTestsCurve& c : file.curves) {
    const hardware::Cluster cluster = hardware::make_cluster_preset(c.preset, c.nodes);
    simulator::CollectivePlanner planner(cluster);
    std::vector<simulator::DeviceId> group;
    for (int node = 0; node < c.nodes; ++node) {
      const auto devices = cluster.devices_of_node(node);
      group.insert(group.end(), devices.begin(), devices.begin() + c.gpus_per_node);
    }
    const double n = static_cast<double>(group.size());
    const double factor = c.op == simulator::CollectiveOp::AllReduce ? 2 * (n - 1) / n : (n - 1) / n;
    for (const NcclTestsRow& row : c.rows) {
      const simulator::CollectiveChoice& choice = planner.cached_choice(
          group, c.op, simulator::CollectiveAlgorithm::Auto, row.bytes, simulator::CollectiveCosts::Nccl, 1.0, 1.0);
      NcclTestsCheck check;
      check.curve = c.id;
      check.bytes = row.bytes;
      check.measured_gbs = row.busbw_gbs;
      check.measured_time_us =
          row.time_us > 0 ? row.time_us : static_cast<double>(row.bytes) / row.busbw_gbs * factor / 1e3;
      check.predicted_time_us = static_cast<double>(choice.time) / 1e3;
      check.predicted_gbs = static_cast<double>(row.bytes) / static_cast<double>(choice.time) * factor;  // B/ns = GB/s
      check.error_pct = 100.0 * (check.predicted_gbs - row.busbw_gbs) / row.busbw_gbs;
      check.algorithm = std::string(simulator::to_string(choice.plan->algorithm));
      check.protocol = std::string(simulator::to_string(choice.protocol));
      check.bandwidth_bound = row.bytes >= kNcclBandwidthBoundBytes;
      check.approximate = !c.approximate.empty();
      check.checked = c.not_checked.empty();
      all.push_back(std::abs(check.error_pct));
      if (check.bandwidth_bound && check.checked) bound.push_back(std::abs(check.error_pct));
      report.rows.push_back(std::move(check));
    }
  }
  report.bound_rows = static_cast<int>(bound.size());
  report.median_bound_pct = median(bound);
  report.median_all_pct = median(all);
  report.max_bound_pct = bound.empty() ? 0 : *std::max_element(bound.begin(), bound.end());
  report.max_all_pct = all.empty() ? 0 : *std::max_element(all.begin(), all.end());
  return report;
}

}  // namespace parasim::validation
