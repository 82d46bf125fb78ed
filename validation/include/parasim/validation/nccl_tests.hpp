// Published nccl-tests results (bus bandwidth vs message size) next to parasim's NCCL cost model
// (simulator::CollectiveCosts::Nccl, algorithm `auto`) on the matching cluster preset. No
// execution: the file validation/data/nccl_tests_published.json names the source of every curve.
//
// busbw is nccl-tests' bus bandwidth (doc/PERFORMANCE.md in NVIDIA/nccl-tests): size / time times
// 2(n-1)/n for all_reduce and (n-1)/n for all_gather and reduce_scatter; size is the buffer
// (all_reduce), the output (all_gather) or the input (reduce_scatter), parasim's byte convention.
//
// Example:
//   NcclTestsFile f = load_nccl_tests_file("validation/data/nccl_tests_published.json");
//   NcclTestsReport r = check_nccl_tests(f);
//   for (const auto& row : r.rows) std::cout << row.curve << " " << row.bytes << " " << row.error_pct << "\n";
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parasim/simulator/task_graph.hpp"

namespace parasim::validation {

/// Sizes from here up are where bandwidth, not latency, sets the time: the range the published
/// curves are checked on (nccl-tests on 8 A100s or H200s is within ~10% of its peak from there).
inline constexpr std::int64_t kNcclBandwidthBoundBytes = 256ll << 20;

struct NcclTestsRow {
  std::int64_t bytes = 0;
  double busbw_gbs = 0;  // given, or derived from time_us
  double time_us = 0;    // 0 unless the source gives the time
};

struct NcclTestsCurve {
  std::string id, system, preset, source, url, nccl, note;
  std::string approximate;  // non-empty: a stated figure, not a measured row (why)
  std::string not_checked;  // non-empty: listed but left out of the check and its error (why)
  int nodes = 1;
  int gpus_per_node = 8;
  simulator::CollectiveOp op = simulator::CollectiveOp::AllReduce;
  std::vector<NcclTestsRow> rows;
};

struct NcclTestsFile {
  std::string path;
  std::vector<NcclTestsCurve> curves;
};

/// Reads a parasim.nccl_tests/1 file. InputError naming the file, the JSON path and what was
/// expected (an unknown preset, an op other than all_reduce/all_gather/reduce_scatter, more GPUs
/// per node than the preset has, a non-positive size or bandwidth).
NcclTestsFile load_nccl_tests_file(const std::string& path);
/// The same from a parsed document; `origin` names it in errors.
NcclTestsFile parse_nccl_tests(const nlohmann::json& doc, const std::string& origin);

struct NcclTestsCheck {
  std::string curve;
  std::int64_t bytes = 0;
  double measured_gbs = 0, predicted_gbs = 0;
  double measured_time_us = 0, predicted_time_us = 0;  // measured: given, or from busbw
  double error_pct = 0;                                // (predicted - measured) / measured
  std::string algorithm, protocol;
  bool bandwidth_bound = false;  // bytes >= kNcclBandwidthBoundBytes
  bool approximate = false;
  bool checked = true;  // the curve has no not_checked reason
};

struct NcclTestsReport {
  std::vector<NcclTestsCheck> rows;
  // |error| over the checked bandwidth-bound rows and over all rows.
  double median_bound_pct = 0, max_bound_pct = 0, median_all_pct = 0, max_all_pct = 0;
  int bound_rows = 0;
};

/// parasim's bus bandwidth for every row: the preset with `nodes` nodes, the first
/// `gpus_per_node` GPUs of each node, CollectiveAlgorithm::Auto under NCCL costs.
NcclTestsReport check_nccl_tests(const NcclTestsFile& file);

}  // namespace parasim::validation
