#include "validate_nccl_tests.hpp"

#include <cstdio>
#include <iostream>
#include <sstream>

#include "parasim/common/json_io.hpp"
#include "parasim/validation/nccl_tests.hpp"
#include "text_table.hpp"

namespace parasim::cli {

namespace {

std::string size_label(std::int64_t b) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(b);
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, v == static_cast<double>(static_cast<std::int64_t>(v)) ? "%.0f %s" : "%.2f %s", v,
                units[u]);
  return buf;
}

nlohmann::json to_json(const validation::NcclTestsFile& f, const validation::NcclTestsReport& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& c : r.rows)
    rows.push_back({{"curve", c.curve},
                    {"bytes", c.bytes},
                    {"measured_busbw_gbs", c.measured_gbs},
                    {"predicted_busbw_gbs", c.predicted_gbs},
                    {"measured_time_us", c.measured_time_us},
                    {"predicted_time_us", c.predicted_time_us},
                    {"error_pct", c.error_pct},
                    {"algorithm", c.algorithm},
                    {"protocol", c.protocol},
                    {"bandwidth_bound", c.bandwidth_bound},
                    {"approximate", c.approximate},
                    {"checked", c.checked}});
  nlohmann::json curves = nlohmann::json::array();
  for (const auto& c : f.curves)
    curves.push_back({{"id", c.id},
                      {"system", c.system},
                      {"preset", c.preset},
                      {"nodes", c.nodes},
                      {"gpus_per_node", c.gpus_per_node},
                      {"source", c.source},
                      {"url", c.url},
                      {"approximate", c.approximate},
                      {"not_checked", c.not_checked}});
  return {
      {"schema", "parasim.nccl_tests_report/1"},
      {"file", f.path},
      {"cost_model", "NCCL collective costs (simulator/collectives.hpp), algorithm auto"},
      {"bandwidth_bound_bytes", validation::kNcclBandwidthBoundBytes},
      {"bandwidth_bound",
       {{"rows", r.bound_rows}, {"median_abs_error_pct", r.median_bound_pct}, {"max_abs_error_pct", r.max_bound_pct}}},
      {"all_rows",
       {{"rows", r.rows.size()}, {"median_abs_error_pct", r.median_all_pct}, {"max_abs_error_pct", r.max_all_pct}}},
      {"curves", curves},
      {"rows", rows}};
}

void print_report(std::ostream& out, const validation::NcclTestsFile& f, const validation::NcclTestsReport& r) {
  out << "parasim validate --nccl-tests " << f.path << "\n"
      << "cost model: NCCL collective costs (simulator/collectives.hpp), algorithm auto; busbw as nccl-tests computes "
         "it\n";
  for (const auto& c : f.curves) {
    out << "\n"
        << c.id << ": " << c.system << "\n  preset " << c.preset << ", " << c.nodes << " node"
        << (c.nodes == 1 ? "" : "s") << " x " << c.gpus_per_node << " GPUs";
    if (!c.nccl.empty()) out << ", NCCL " << c.nccl;
    out << "\n  source: " << c.source << "\n";
    if (!c.approximate.empty()) out << "  approximate: " << c.approximate << "\n";
    if (!c.not_checked.empty()) out << "  not checked: " << c.not_checked << "\n";
    std::vector<std::vector<std::string>> rows{
        {"size", "measured GB/s", "parasim GB/s", "error", "measured us", "parasim us", "algorithm", "protocol", ""}};
    for (const auto& row : r.rows) {
      if (row.curve != c.id) continue;
      rows.push_back({size_label(row.bytes), fixed(row.measured_gbs, 2), fixed(row.predicted_gbs, 2),
                      signed_percent(row.error_pct), fixed(row.measured_time_us, 1), fixed(row.predicted_time_us, 1),
                      row.algorithm, row.protocol, row.bandwidth_bound ? "" : "(below the checked range)"});
    }
    print_table(out, rows, {true, true, true, true, true, true, false, false, false});
  }
  out << "\nchecked bandwidth-bound rows (>= " << size_label(validation::kNcclBandwidthBoundBytes)
      << "): " << r.bound_rows << ", median |error| " << fixed(r.median_bound_pct, 1) << "%, max "
      << fixed(r.max_bound_pct, 1) << "%\n"
      << "all rows: " << r.rows.size() << ", median |error| " << fixed(r.median_all_pct, 1) << "%, max "
      << fixed(r.max_all_pct, 1) << "%\n";
}

}  // namespace

void run_validate_nccl_tests(const ValidateNcclTestsArgs& args) {
  const validation::NcclTestsFile file = validation::load_nccl_tests_file(args.file);
  const validation::NcclTestsReport report = validation::check_nccl_tests(file);
  std::ostringstream text;
  print_report(text, file, report);
  const std::string body = args.json ? dump_json(to_json(file, report)) : text.str();
  if (!args.output.empty()) {
    write_file_atomic(args.output, body);
    std::cerr << "wrote " << args.output << "\n";
  }
  std::cout << (args.json && args.output.empty() ? body : text.str());
}

}  // namespace parasim::cli
