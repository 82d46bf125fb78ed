// The measured profiles under traces/ (one folder per device kind, written by `parasim profile`
// and scripts/gpu_check.sh) as the default cost source: when one was measured on a device kind
// of the cluster, for the same model and dtype, simulate/plan/project use it without --profile
// and say so; otherwise the roofline is the labelled fallback.
//
// Example:
//   auto m = find_trace_profile("traces", cluster.device_kinds(), "resnet50", models::DType::F16);
//   if (m) costs = std::make_unique<ProfileCostModel>(m->file);   // "traces/H100-SXM5-80GB/resnet50-b64-fp16.json"
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "parasim/models/graph.hpp"

namespace parasim::profiler {

struct TraceProfileMatch {
  std::filesystem::path file;
  std::string device_kind;  // the cluster's device kind it was measured on
  std::int64_t batch = 0;
};

/// The profile in `traces_dir` (its *.json files and those one folder down) with per-op entries,
/// measured on one of `device_kinds`, for `model` in `dtype`. Deterministic choice: the first kind
/// in `device_kinds` order that has one, then the largest batch, then the smallest path. Files
/// that are not parasim.profile/1 profiles with ops (link probes, notes, broken files) are skipped.
/// nullopt when `traces_dir` does not exist or nothing matches.
std::optional<TraceProfileMatch> find_trace_profile(const std::filesystem::path& traces_dir,
                                                    const std::vector<std::string>& device_kinds,
                                                    const std::string& model, models::DType dtype);

}  // namespace parasim::profiler
