// Which per-op cost model simulate, plan and project use, and the line that says so:
//   --profile FILE    that measured profile (checked against the model)
//   --profile none    the roofline, without looking in traces/
//   neither           a profile in --traces DIR (default ./traces, where `parasim profile` and
//                     scripts/gpu_check.sh write) measured on one of the cluster's device kinds for
//                     this model and dtype, by default; else the roofline, labelled as the fallback.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "parasim/common/calibration.hpp"
#include "parasim/models/graph.hpp"
#include "parasim/profiler/cost_model.hpp"

namespace parasim::cli {

struct CostChoice {
  std::unique_ptr<profiler::CostModel> costs;
  std::string note;  // one line for the human output: what was chosen and why
};

inline constexpr const char* kDefaultTracesDir = "traces";

/// `traces_given`: --traces was on the command line (an error together with --profile FILE or
/// --profile none, which never look there).
CostChoice choose_costs(const std::string& profile, const std::string& traces_dir, bool traces_given,
                        const models::Model& model, const std::vector<std::string>& device_kinds);

/// Model-priced costs (the roofline / GPU kernel model) get the --attention kernels and a
/// calibration's kernel factors; measured profiles are left as measured. InputError for an unknown
/// --attention value.
void configure_model_costs(profiler::CostModel& costs, const std::string& attention, const Calibration& calibration,
                           const std::string& fp32_math = "pytorch", const std::string& conv_layout = "nchw");

}  // namespace parasim::cli
