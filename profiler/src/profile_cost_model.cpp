#include "parasim/profiler/profile_cost_model.hpp"

#include <cmath>
#include <sstream>

#include "parasim/common/error.hpp"

namespace parasim::profiler {

using models::Op;

std::int64_t op_batch(const Op& op) {
  if (!op.input_shapes.empty() && !op.input_shapes.front().empty()) return op.input_shapes.front().front();
  if (!op.output_shape.empty()) return op.output_shape.front();
  return 0;
}

std::string batch_key(const Op& op) {
  const std::int64_t batch = op_batch(op);
  std::ostringstream k;
  auto shape = [&](const models::Shape& s) {
    k << '[';
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (i) k << ',';
      if (i == 0 && batch > 0 && s[i] == batch) k << 'B';
      else k << s[i];
    }
    k << ']';
  };
  k << models::to_string(op.kind) << '|' << models::to_string(op.dtype) << "|in=";
  for (const auto& s : op.input_shapes) shape(s);
  k << "|out=";
  shape(op.output_shape);
  const auto& a = op.attrs;
  k << "|k=" << a.kernel_h << 'x' << a.kernel_w << ",s=" << a.stride_h << 'x' << a.stride_w << ",p=" << a.pad_h << 'x'
    << a.pad_w << ",d=" << a.dilation_h << 'x' << a.dilation_w << ",g=" << a.groups << ",ceil=" << a.ceil_mode
    << ",out=" << a.out_features << ",bias=" << a.bias << ",hidden=" << a.hidden << ",proj=" << a.proj
    << ",vocab=" << a.vocab << ",sampled=" << a.num_sampled << ",heads=" << a.heads << ",axis=" << a.axis
    << ",p=" << a.p << ",in=" << a.in_features << ",rev=" << a.reverse << ",additive=" << a.additive
    << ",shares=" << a.shares_weights_with;
  // Ops fed by the data batch skip (part of) their data gradient: a different cost.
  if (op.macs_fwd > 0) k << "|dgrad=" << op.macs_bwd_data / op.macs_fwd;
  return k.str();
}

ProfileCostModel::ProfileCostModel(Profile profile, std::string origin)
    : profile_(std::move(profile)), origin_(std::move(origin)) {
  for (std::size_t i = 0; i < profile_.ops.size(); ++i) {
    const ProfileEntry& e = profile_.ops[i];
    by_signature_.emplace(e.signature, i);
    if (!e.batch_key.empty() && e.batch > 0) by_batch_key_.emplace(e.batch_key, i);
  }
}

ProfileCostModel::ProfileCostModel(const std::filesystem::path& profile_file)
    : ProfileCostModel(load_profile(profile_file), profile_file.string()) {}

bool ProfileCostModel::device_matches(const std::string& device_kind) const {
  {
    std::lock_guard lock(mu_);
    if (auto it = device_match_.find(device_kind); it != device_match_.end()) return it->second;
  }
  const bool match = compare_device(device_kind);
  std::lock_guard lock(mu_);
  device_match_.emplace(device_kind, match);
  return match;
}

bool ProfileCostModel::compare_device(const std::string& device_kind) const {
  const std::string& mine = profile_.device.kind;
  if (device_kind == mine) return true;
  const bool both_cpu = device_kind.rfind("cpu", 0) == 0 && mine.rfind("cpu", 0) == 0;
  if (both_cpu) return device_kind == "cpu" || mine == "cpu";
  const auto a = hardware::find_device_spec(device_kind);
  const auto b = hardware::find_device_spec(mine);
  return a && b && a->kind == b->kind;
}

const ProfileEntry* ProfileCostModel::scaled_match(const Op& op) const {
  const std::int64_t batch = op_batch(op);
  if (batch <= 0) return nullptr;
  const auto [first, last] = by_batch_key_.equal_range(batch_key(op));
  const ProfileEntry* best = nullptr;
  double best_distance = 0;
  for (auto it = first; it != last; ++it) {
    const ProfileEntry& e = profile_.ops[it->second];
    const double distance = std::abs(std::log(static_cast<double>(e.batch) / static_cast<double>(batch)));
    if (!best || distance < best_distance) {
      best = &e;
      best_distance = distance;
    }
  }
  return best;
}

namespace {

bool covers_phases(const ProfileEntry& e, const Op& op) {
  for (Phase p : kPhases)
    if (op_has_phase(op, p) && !e.has(p)) return false;
  return true;
}

}  // namespace

void ProfileCostModel::count(CostSource s) const {
  std::lock_guard lock(mu_);
  if (s == CostSource::Roofline) ++counts_.roofline;
  else if (s == CostSource::MeasuredScaled) ++counts_.scaled;
  else ++counts_.measured;
}

OpCost ProfileCostModel::cost(const Op& op, const std::string& device_kind, Optimizer opt) const {
  const bool same_device = device_matches(device_kind);
  if (!op_has_phase(op, Phase::Forward)) {  // Input, Reshape: free everywhere, exactly known
    OpCost free;
    free.source = same_device ? profile_.source : CostSource::Roofline;
    count(free.source);
    return free;
  }
  const ProfileEntry* entry = nullptr;
  double scale = 1.0;
  CostSource source = profile_.source;
  if (same_device) {
    auto it = by_signature_.find(op.signature());
    if (it == by_signature_.end()) it = by_signature_.find(op.signature_unmasked());  // profiled before `causal`
    if (it != by_signature_.end()) {
      entry = &profile_.ops[it->second];
    } else if ((entry = scaled_match(op)) != nullptr) {
      scale = static_cast<double>(op_batch(op)) / static_cast<double>(entry->batch);
      source = CostSource::MeasuredScaled;
    }
    if (entry && !covers_phases(*entry, op)) entry = nullptr;
  }
  if (!entry) {
    OpCost c = roofline_.cost(op, device_kind, opt);
    count(c.source);
    return c;
  }
  OpCost c;
  for (Phase p : kPhases) {
    if (!op_has_phase(op, p)) continue;
    double t = static_cast<double>(entry->phase(p).median_ns);
    if (p == Phase::Update) {
      // The update depends on the parameters, not the batch; another optimizer moves a
      // different number of bytes per parameter and the update is bandwidth-bound.
      if (opt != profile_.optimizer) {
        t *= static_cast<double>(optimizer_traffic_bytes_per_param(opt, op.dtype)) /
             static_cast<double>(optimizer_traffic_bytes_per_param(profile_.optimizer, op.dtype));
        source = CostSource::MeasuredScaled;
      }
    } else {
      t *= scale;
    }
    c.at(p) = static_cast<TimeNs>(std::llround(std::min(t, 9.0e18)));  // a hostile profile must not overflow
  }
  c.source = source;
  count(source);
  return c;
}

TimeNs ProfileCostModel::memory_pass_ns(Bytes bytes, const std::string& device_kind) const {
  return roofline_.memory_pass_ns(bytes, device_kind);
}

std::string ProfileCostModel::describe() const {
  std::string s = "profile";
  if (!origin_.empty()) s += " " + origin_;
  s += " (" + profile_.backend + " on " + profile_.device.kind;
  if (!profile_.model.empty())
    s += ", " + profile_.model + " b" + std::to_string(profile_.batch) + " " + models::to_string(profile_.dtype);
  return s + "), roofline where it has no entry";
}

void ProfileCostModel::check_matches(const models::Model& model) const {
  if (profile_.model.empty()) return;
  if (profile_.model == model.name() && profile_.dtype == model.dtype()) return;
  throw InputError("profile " + (origin_.empty() ? std::string("(in memory)") : origin_) + " was made for model " +
                   profile_.model + " " + models::to_string(profile_.dtype) + ", not " + model.name() + " " +
                   models::to_string(model.dtype()));
}

CostCounts ProfileCostModel::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

void ProfileCostModel::reset_counts() {
  std::lock_guard lock(mu_);
  counts_ = {};
}

std::string ProfileCostModel::coverage_summary() const {
  const CostCounts c = counts();
  std::string s = std::to_string(c.measured + c.scaled) + " of " + std::to_string(c.total()) + " op costs measured";
  if (c.scaled > 0) s += " (" + std::to_string(c.scaled) + " scaled from another batch size or optimizer)";
  if (c.roofline > 0) s += ", " + std::to_string(c.roofline) + " roofline";
  return s;
}

}  // namespace parasim::profiler
