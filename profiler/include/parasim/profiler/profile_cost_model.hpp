// A CostModel backed by a measured profile, falling back visibly to the roofline.
//
// For each op: (1) an entry with the op's exact signature -> the profile's source (measured-gpu,
// measured-cpu, imported); (2) else an entry for the same op at another batch size -> its times
// scaled linearly in the batch (measured-scaled; the update phase does not depend on the batch
// and is not scaled); (3) else the roofline. Every answer is counted, so reports can say
// "412 of 430 op costs measured, 18 roofline" (free ops, input and reshape, count as measured
// on the profile's device: their cost, 0, is exact).
//
// Example:
//   ProfileCostModel costs{load_profile("traces/h200/resnet50-b32-fp16.json")};
//   costs.check_matches(model);                    // InputError if made for another model/dtype
//   OpCost c = costs.cost(model.op(v), "H200-SXM-141GB", Optimizer::Sgd);
//   std::cout << costs.coverage_summary() << "\n";  // "161 of 161 op costs measured"
#pragma once

#include <filesystem>
#include <mutex>
#include <string>
#include <unordered_map>

#include "parasim/models/graph.hpp"
#include "parasim/profiler/cost_model.hpp"
#include "parasim/profiler/profile.hpp"
#include "parasim/profiler/roofline.hpp"

namespace parasim::profiler {

/// The op's batch dimension: dim 0 of its first input (of its output for ops without inputs);
/// 0 when there is none.
std::int64_t op_batch(const models::Op& op);
/// The op's identity with the batch dimension abstracted: kind, dtype, shapes with every leading
/// dimension equal to op_batch() written as "B", and all attrs. Same key + different batch means
/// "the same layer at another batch size".
std::string batch_key(const models::Op& op);

struct CostCounts {
  std::int64_t measured = 0;  // exact signature found
  std::int64_t scaled = 0;    // same op at another batch size (or the update of another optimizer)
  std::int64_t roofline = 0;  // nothing usable in the profile
  std::int64_t total() const { return measured + scaled + roofline; }
};

class ProfileCostModel final : public CostModel {
 public:
  /// `origin` names the profile in describe() (usually its file).
  explicit ProfileCostModel(Profile profile, std::string origin = "");
  explicit ProfileCostModel(const std::filesystem::path& profile_file);

  OpCost cost(const models::Op& op, const std::string& device_kind, Optimizer opt) const override;
  /// No profile times a pass outside every op: the roofline's (GPU kernel model's) estimate.
  TimeNs memory_pass_ns(Bytes bytes, const std::string& device_kind) const override;
  std::string describe() const override;

  /// InputError "profile X was made for model resnet50 fp16, not inception_v3 fp32" when the
  /// profile names another model or dtype. A profile without a model name matches any model.
  void check_matches(const models::Model& model) const;

  CostCounts counts() const;
  void reset_counts();
  /// "412 of 430 op costs measured, 18 roofline" (with ", N scaled from another batch" when any).
  std::string coverage_summary() const;

  const Profile& profile() const { return profile_; }
  /// The kernel model that prices what the profile does not time (other devices, ops it lacks):
  /// configured with the same kernel choice as a model-priced run (attention, optimizer, ...).
  RooflineCostModel& fallback() { return roofline_; }

 private:
  bool device_matches(const std::string& device_kind) const;  // cached compare_device
  bool compare_device(const std::string& device_kind) const;
  const ProfileEntry* scaled_match(const models::Op& op) const;
  void count(CostSource s) const;

  Profile profile_;
  std::string origin_;
  RooflineCostModel roofline_;
  std::unordered_map<std::string, std::size_t> by_signature_;
  std::unordered_multimap<std::string, std::size_t> by_batch_key_;
  mutable std::mutex mu_;
  mutable CostCounts counts_;
  mutable std::unordered_map<std::string, bool> device_match_;
};

}  // namespace parasim::profiler
