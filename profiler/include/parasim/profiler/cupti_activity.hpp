// Device activity, vendor-neutral: the records a tracer (CUPTI) delivers, the seam it sits behind
// (ActivitySource), and the attribution of device time to (op, phase, repetition).
//
// How attribution works (the Kineto discipline): before launching the kernels of one phase of one
// repetition, the caller pushes an *external id* on the tracer's per-thread stack. The tracer then
// emits, for every API call made while that id is on top, an ExternalCorrelationRecord
// {external_id, correlation_id}; the kernels and copies that call launched carry the same
// correlation_id. The ActivityAttributor joins the two. Records may arrive in any order and in
// any number of batches (CUPTI hands over buffers asynchronously), so the join happens when the
// results are read, not when records arrive.
//
// Only ActivitySource implementations know the vendor; this header and activity_attribution.cpp
// are plain C++, so tests feed fabricated records and CI covers attribution without a GPU.
//
// Example:
//   ActivityAttributor attributor;
//   std::uint64_t id = attributor.register_range({.op = 0, .phase = Phase::Forward, .repetition = 0});
//   source.push_external_id(id); kernel.run(Phase::Forward); source.pop_external_id();
//   backend.synchronize();
//   attributor.add(source.flush());
//   PhaseStatistics s = attributor.statistics(0, Phase::Forward);   // min/median/max device time
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "parasim/common/units.hpp"
#include "parasim/profiler/cost_model.hpp"

namespace parasim::profiler {

// ------------------------------------------------------------------ records (plain data)

/// One kernel execution. Timestamps are the tracer's device-synchronized nanoseconds.
struct KernelRecord {
  std::uint32_t correlation_id = 0;  // the launching API call's id
  std::uint64_t start_ns = 0;        // 0 (with end 0) = the tracer could not time it
  std::uint64_t end_ns = 0;
  std::uint32_t device = 0;
  std::uint32_t stream = 0;
  std::string name;                  // mangled kernel name as the tracer reports it
};

enum class MemcpyKind : std::uint8_t { Unknown, HostToDevice, DeviceToHost, DeviceToDevice, HostToHost, PeerToPeer };
std::string to_string(MemcpyKind k);

struct MemcpyRecord {
  std::uint32_t correlation_id = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t device = 0;
  std::uint32_t stream = 0;
  Bytes bytes = 0;
  MemcpyKind kind = MemcpyKind::Unknown;
};

/// A memset done by the copy engines (cudaMemsetAsync). Libraries issue these internally
/// (split-K workspaces), so they are part of a phase's device time.
struct MemsetRecord {
  std::uint32_t correlation_id = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t device = 0;
  std::uint32_t stream = 0;
  Bytes bytes = 0;
};

/// "The API call with correlation_id ran while external_id was on top of the stack."
struct ExternalCorrelationRecord {
  std::uint64_t external_id = 0;
  std::uint32_t correlation_id = 0;
};

/// One host-side API call (runtime or driver). Its duration is CPU time, not device time;
/// it is kept to count calls per range and to diagnose launch-bound phases.
struct RuntimeRecord {
  std::uint32_t correlation_id = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t callback_id = 0;  // vendor's API id (CUPTI cbid)
  bool driver_api = false;        // false: runtime API (cudaLaunchKernel), true: driver API (cuLaunchKernel)
  std::uint32_t thread_id = 0;
};

/// Records the tracer lost (buffer full, no buffer granted). Any loss makes results unreliable.
struct DroppedRecords {
  std::uint64_t count = 0;
};

/// Everything one flush (or one completed buffer) delivered.
struct ActivityBatch {
  std::vector<KernelRecord> kernels;
  std::vector<MemcpyRecord> memcpys;
  std::vector<MemsetRecord> memsets;
  std::vector<ExternalCorrelationRecord> external_correlations;
  std::vector<RuntimeRecord> runtime_calls;
  DroppedRecords dropped;

  bool empty() const;
  /// Moves all of `other`'s records into this batch (and adds its dropped count).
  void append(ActivityBatch&& other);
};

// ------------------------------------------------------------------ the tracer seam

/// A device activity tracer. Implementations: CUPTI (cupti_activity.cpp, CUDA builds only);
/// tests use fakes that fabricate records. Collection runs from construction to destruction.
class ActivitySource {
 public:
  virtual ~ActivitySource() = default;
  /// Tags API calls made by the calling thread with `external_id` until the matching pop.
  virtual void push_external_id(std::uint64_t external_id) = 0;
  virtual void pop_external_id() = 0;
  /// Hands over every record of work completed so far, plus the number of records lost since the
  /// previous flush. Callers synchronize the device first, or records of in-flight work may
  /// arrive in a later flush.
  virtual ActivityBatch flush() = 0;
  /// "cupti", "fake".
  virtual std::string name() const = 0;
};

/// Pushes on construction, pops on destruction (also when the tagged work throws).
class ScopedExternalId {
 public:
  ScopedExternalId(ActivitySource& source, std::uint64_t external_id);
  ~ScopedExternalId();
  ScopedExternalId(const ScopedExternalId&) = delete;
  ScopedExternalId& operator=(const ScopedExternalId&) = delete;

 private:
  ActivitySource& source_;
};

/// The CUPTI tracer (only in builds with CUDA; see cupti_activity.cpp). At most one may exist per
/// process because CUPTI's buffer callbacks are process-global. Throws RuntimeError when another
/// profiler (Nsight Systems, Nsight Compute, a second parasim tracer) already holds CUPTI.
std::unique_ptr<ActivitySource> make_cupti_activity_source();

// ------------------------------------------------------------------ attribution

/// What one external id stands for: one phase of one op in one timed repetition.
struct RangeKey {
  std::uint32_t op = 0;          // caller's op index (the profiler numbers distinct signatures)
  Phase phase = Phase::Forward;
  std::uint32_t repetition = 0;
  auto operator<=>(const RangeKey&) const = default;
};

/// Device activity attributed to one range.
struct RangeTiming {
  TimeNs kernel_ns = 0;   // sum of kernel durations
  TimeNs copy_ns = 0;     // sum of memcpy and memset durations
  TimeNs span_ns = 0;     // first device start .. last device end (includes idle gaps)
  int kernels = 0;        // kernel launches
  int memcpys = 0;
  int memsets = 0;
  Bytes memcpy_bytes = 0;
  int api_calls = 0;      // runtime/driver API records tagged with this range
  /// The number the profiler reports: time the device spent working for this range. On an idle
  /// GPU running one stream this is the phase's cost without host launch gaps.
  TimeNs device_ns() const { return kernel_ns + copy_ns; }
};

/// Summary over the repetitions of one (op, phase).
struct PhaseStatistics {
  TimeNs min_ns = 0;      // of per-repetition device_ns()
  TimeNs median_ns = 0;   // middle value; mean of the two middle values for an even count (halves round up)
  TimeNs max_ns = 0;
  TimeNs median_span_ns = 0;
  int launches = 0;       // kernels per repetition (the largest count seen; they normally agree)
  bool launches_vary = false;  // repetitions launched different numbers of kernels
  int repetitions = 0;
};

/// Median as PhaseStatistics defines it: parasim::median_ns (parasim/common/median.hpp).

/// Joins records to ranges. Not thread-safe: feed it from one thread (the CUPTI source copies
/// records out of its callback thread, and the caller adds the flushed batch).
class ActivityAttributor {
 public:
  /// Allocates a fresh external id (1, 2, 3, ...) standing for `key`. A key registered twice
  /// gets two ids whose activity adds up (a phase split across two pushes).
  std::uint64_t register_range(const RangeKey& key);
  /// Accepts a batch; records may come before or after the correlation records naming them.
  void add(const ActivityBatch& batch);

  /// Per-range activity; ranges without any record have zero time (a ReLU has no weight gradient).
  RangeTiming timing(const RangeKey& key) const;
  /// Statistics over all registered repetitions of (op, phase).
  PhaseStatistics statistics(std::uint32_t op, Phase phase) const;

  /// Device records (kernels, copies, memsets) whose API call had no external id: work launched
  /// outside every range (warm-up, algorithm search, another thread).
  std::uint64_t unattributed_records() const;
  /// Device records tagged with an external id this attributor did not hand out.
  std::uint64_t foreign_records() const;
  /// Device records inside a range that carried no timestamps or ended before they started.
  std::uint64_t untimed_records() const;
  std::uint64_t dropped_records() const { return dropped_; }
  /// False when any record was lost or could not be timed: the statistics would understate time.
  bool reliable() const { return dropped_ == 0 && untimed_records() == 0; }
  /// Why results are unreliable, in one line ("" when reliable).
  std::string reliability_note() const;

  /// Forgets all records (not the registered ranges), e.g. to discard warm-up activity.
  void clear_records();

 private:
  struct DeviceActivity {
    std::uint32_t correlation_id;
    std::uint64_t start_ns;
    std::uint64_t end_ns;
    enum class Kind : std::uint8_t { Kernel, Memcpy, Memset } kind;
    Bytes bytes;
  };
  struct Resolved {
    std::map<RangeKey, RangeTiming> timings;
    std::uint64_t unattributed = 0;
    std::uint64_t foreign = 0;
    std::uint64_t untimed = 0;
  };
  const Resolved& resolve() const;

  std::uint64_t next_external_id_ = 1;
  std::unordered_map<std::uint64_t, RangeKey> ranges_;                 // external id -> range
  std::unordered_map<std::uint32_t, std::uint64_t> external_of_;        // correlation id -> external id
  std::vector<DeviceActivity> device_records_;
  std::vector<std::uint32_t> api_call_correlations_;
  std::uint64_t dropped_ = 0;
  mutable std::unique_ptr<Resolved> resolved_;  // cache, invalidated by add/register/clear
};

}  // namespace parasim::profiler
