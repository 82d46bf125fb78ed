// Importing a torch.profiler (Kineto) Chrome trace into a parasim profile.
//
// The trace's "traceEvents" hold CPU ops ("cat": "cpu_op"), CUDA runtime calls ("cuda_runtime",
// "cuda_driver"), GPU activity ("kernel", "gpu_memcpy", "gpu_memset") and launch flows ("ac2g").
// Each GPU event is attributed to the CPU op that launched it:
//   1. args "External id" of the GPU event equals that of a cpu_op -> that op; else
//   2. args "correlation" matches a runtime launch (or an ac2g flow start) -> the innermost cpu_op
//      on the launching thread whose [ts, ts+dur] contains the launch.
// The op is then lifted to its outermost enclosing cpu_op on the same thread ("aten::conv2d",
// "autograd::engine::evaluate_function: ConvolutionBackward0"), skipping "ProfilerStep#N".
// GPU time of one op instance = sum of its GPU events' durations; instances with the same
// name and "Input Dims" form one entry whose min/median/max run over the instances.
// Phases: backward ops (names containing "Backward" or "autograd::engine") -> bwd_data (a trace
// cannot split data and weight gradients); optimizer ops ("Optimizer.", "_foreach_") -> update;
// everything else -> fwd.
//
// Example:
//   Profile p = import_kineto_trace("trace.json", KinetoImportOptions{.model = "resnet50"});
//   save_profile(p, "traces/imported/resnet50.json");
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "parasim/profiler/profile.hpp"

namespace parasim::profiler {

struct KinetoImportOptions {
  std::string model;    // recorded in the profile ("" = unknown)
  std::int64_t batch = 0;
  models::DType dtype = models::DType::F32;
  std::string command;  // recorded in the profile
};

/// InputError naming the file (line:column for malformed JSON, the JSON path of a bad event).
Profile import_kineto_trace(const std::filesystem::path& trace, const KinetoImportOptions& options = {});
/// Same on an already parsed document; `origin` names it in errors.
Profile import_kineto_json(const nlohmann::json& doc, const std::string& origin,
                           const KinetoImportOptions& options = {});

}  // namespace parasim::profiler
