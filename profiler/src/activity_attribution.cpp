// Joins device activity records to (op, phase, repetition) ranges through external correlation
// ids. Pure C++: the CUPTI source and the tests feed the same code.
#include <algorithm>
#include <set>
#include <utility>

#include "parasim/common/error.hpp"
#include "parasim/common/median.hpp"
#include "parasim/profiler/cupti_activity.hpp"

namespace parasim::profiler {

std::string to_string(MemcpyKind k) {
  switch (k) {
    case MemcpyKind::HostToDevice: return "h2d";
    case MemcpyKind::DeviceToHost: return "d2h";
    case MemcpyKind::DeviceToDevice: return "d2d";
    case MemcpyKind::HostToHost: return "h2h";
    case MemcpyKind::PeerToPeer: return "p2p";
    case MemcpyKind::Unknown: break;
  }
  return "unknown";
}

bool ActivityBatch::empty() const {
  return kernels.empty() && memcpys.empty() && memsets.empty() && external_correlations.empty() &&
         runtime_calls.empty() && dropped.count == 0;
}

namespace {
template <class T>
void move_append(std::vector<T>& to, std::vector<T>& from) {
  if (to.empty()) {
    to = std::move(from);
  } else {
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
  }
  from.clear();
}
}  // namespace

void ActivityBatch::append(ActivityBatch&& other) {
  move_append(kernels, other.kernels);
  move_append(memcpys, other.memcpys);
  move_append(memsets, other.memsets);
  move_append(external_correlations, other.external_correlations);
  move_append(runtime_calls, other.runtime_calls);
  dropped.count += other.dropped.count;
  other.dropped.count = 0;
}

ScopedExternalId::ScopedExternalId(ActivitySource& source, std::uint64_t external_id) : source_(source) {
  source_.push_external_id(external_id);
}

ScopedExternalId::~ScopedExternalId() {
  // A destructor must not throw; a failed pop leaves the id stack unbalanced, which the next
  // push/pop on the source reports.
  try {
    source_.pop_external_id();
  } catch (...) {
  }
}

std::uint64_t ActivityAttributor::register_range(const RangeKey& key) {
  const std::uint64_t id = next_external_id_++;
  ranges_.emplace(id, key);
  resolved_.reset();
  return id;
}

void ActivityAttributor::add(const ActivityBatch& batch) {
  for (const auto& c : batch.external_correlations) external_of_[c.correlation_id] = c.external_id;
  for (const auto& k : batch.kernels)
    device_records_.push_back({k.correlation_id, k.start_ns, k.end_ns, DeviceActivity::Kind::Kernel, 0});
  for (const auto& m : batch.memcpys)
    device_records_.push_back({m.correlation_id, m.start_ns, m.end_ns, DeviceActivity::Kind::Memcpy, m.bytes});
  for (const auto& m : batch.memsets)
    device_records_.push_back({m.correlation_id, m.start_ns, m.end_ns, DeviceActivity::Kind::Memset, m.bytes});
  for (const auto& r : batch.runtime_calls) api_call_correlations_.push_back(r.correlation_id);
  dropped_ += batch.dropped.count;
  resolved_.reset();
}

void ActivityAttributor::clear_records() {
  external_of_.clear();
  device_records_.clear();
  api_call_correlations_.clear();
  dropped_ = 0;
  resolved_.reset();
}

const ActivityAttributor::Resolved& ActivityAttributor::resolve() const {
  if (resolved_) return *resolved_;
  auto r = std::make_unique<Resolved>();
  for (const auto& [id, key] : ranges_) r->timings.try_emplace(key);

  // First/last device timestamps per range, for the span.
  std::map<RangeKey, std::pair<std::uint64_t, std::uint64_t>> extent;

  for (const DeviceActivity& a : device_records_) {
    const auto ext = external_of_.find(a.correlation_id);
    if (ext == external_of_.end()) {
      ++r->unattributed;
      continue;
    }
    const auto range = ranges_.find(ext->second);
    if (range == ranges_.end()) {
      ++r->foreign;
      continue;
    }
    RangeTiming& t = r->timings[range->second];
    switch (a.kind) {
      case DeviceActivity::Kind::Kernel: ++t.kernels; break;
      case DeviceActivity::Kind::Memcpy:
        ++t.memcpys;
        t.memcpy_bytes += a.bytes;
        break;
      case DeviceActivity::Kind::Memset: ++t.memsets; break;
    }
    if (a.start_ns == 0 || a.end_ns < a.start_ns) {
      ++r->untimed;  // counted as a launch, contributes no time: the result is flagged unreliable
      continue;
    }
    const auto duration = static_cast<TimeNs>(a.end_ns - a.start_ns);
    if (a.kind == DeviceActivity::Kind::Kernel) {
      t.kernel_ns += duration;
    } else {
      t.copy_ns += duration;
    }
    auto [it, inserted] = extent.try_emplace(range->second, a.start_ns, a.end_ns);
    if (!inserted) {
      it->second.first = std::min(it->second.first, a.start_ns);
      it->second.second = std::max(it->second.second, a.end_ns);
    }
  }
  for (const auto& [key, se] : extent) r->timings[key].span_ns = static_cast<TimeNs>(se.second - se.first);

  for (std::uint32_t corr : api_call_correlations_) {
    const auto ext = external_of_.find(corr);
    if (ext == external_of_.end()) continue;
    const auto range = ranges_.find(ext->second);
    if (range != ranges_.end()) ++r->timings[range->second].api_calls;
  }
  resolved_ = std::move(r);
  return *resolved_;
}

RangeTiming ActivityAttributor::timing(const RangeKey& key) const {
  const auto& timings = resolve().timings;
  const auto it = timings.find(key);
  return it == timings.end() ? RangeTiming{} : it->second;
}

PhaseStatistics ActivityAttributor::statistics(std::uint32_t op, Phase phase) const {
  const auto& timings = resolve().timings;
  std::vector<TimeNs> device;
  std::vector<TimeNs> span;
  PhaseStatistics s;
  bool first = true;
  // Keys sort by (op, phase, repetition), so one range scan visits exactly this phase's reps.
  for (auto it = timings.lower_bound(RangeKey{op, phase, 0});
       it != timings.end() && it->first.op == op && it->first.phase == phase; ++it) {
    const RangeTiming& t = it->second;
    device.push_back(t.device_ns());
    span.push_back(t.span_ns);
    if (!first && t.kernels != s.launches) s.launches_vary = true;
    s.launches = std::max(s.launches, t.kernels);
    first = false;
  }
  s.repetitions = static_cast<int>(device.size());
  if (device.empty()) return s;
  const auto [mn, mx] = std::minmax_element(device.begin(), device.end());
  s.min_ns = *mn;
  s.max_ns = *mx;
  s.median_ns = median_ns(device);
  s.median_span_ns = median_ns(span);
  return s;
}

std::uint64_t ActivityAttributor::unattributed_records() const { return resolve().unattributed; }
std::uint64_t ActivityAttributor::foreign_records() const { return resolve().foreign; }
std::uint64_t ActivityAttributor::untimed_records() const { return resolve().untimed; }

std::string ActivityAttributor::reliability_note() const {
  std::string note;
  if (dropped_ > 0) {
    note += "the tracer dropped " + std::to_string(dropped_) +
            " activity records (buffers full); measured times may be too low";
  }
  if (const auto untimed = untimed_records(); untimed > 0) {
    if (!note.empty()) note += "; ";
    note += std::to_string(untimed) + " device records had no timestamps";
  }
  return note;
}

}  // namespace parasim::profiler
