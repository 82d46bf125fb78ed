// ActivityAttributor with fabricated CUPTI-like records: no GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <utility>

#include "parasim/common/median.hpp"
#include "parasim/profiler/cupti_activity.hpp"

namespace parasim::profiler {
namespace {

/// Builds records the way CUPTI would deliver them: every API call gets a fresh correlation id;
/// calls made while an external id is pushed also get an external correlation record.
class RecordFactory {
 public:
  /// A kernel launched under `external_id` (0: none pushed) running [start, start + duration).
  void kernel(std::uint64_t external_id, std::uint64_t start, std::uint64_t duration, const std::string& name = "k") {
    const std::uint32_t corr = next_correlation_++;
    batch_.kernels.push_back({corr, start, start + duration, 0, 7, name});
    tag(external_id, corr);
  }
  void memcpy(std::uint64_t external_id, std::uint64_t start, std::uint64_t duration, Bytes bytes) {
    const std::uint32_t corr = next_correlation_++;
    batch_.memcpys.push_back({corr, start, start + duration, 0, 7, bytes, MemcpyKind::DeviceToDevice});
    tag(external_id, corr);
  }
  void untimed_kernel(std::uint64_t external_id) {
    const std::uint32_t corr = next_correlation_++;
    batch_.kernels.push_back({corr, 0, 0, 0, 7, "untimed"});
    tag(external_id, corr);
  }
  ActivityBatch take() { return std::exchange(batch_, ActivityBatch{}); }

 private:
  void tag(std::uint64_t external_id, std::uint32_t corr) {
    batch_.runtime_calls.push_back({corr, 1, 2, 211, false, 1});
    if (external_id != 0) batch_.external_correlations.push_back({external_id, corr});
  }
  std::uint32_t next_correlation_ = 100;
  ActivityBatch batch_;
};

/// Kernel durations of op o, phase p, repetition r: a different pattern per (o, p) so the test
/// can check min/median/max exactly. Each range launches o + 1 kernels.
std::vector<std::uint64_t> durations(std::uint32_t o, int p, std::uint32_t r) {
  static const std::uint64_t rep_scale[3] = {3, 1, 2};  // rep 1 fastest, rep 0 slowest
  std::vector<std::uint64_t> d;
  for (std::uint32_t k = 0; k <= o; ++k)
    d.push_back(1000 * (o + 1) + 100 * static_cast<std::uint64_t>(p) + 10 * rep_scale[r] + k);
  return d;
}

std::uint64_t range_sum(std::uint32_t o, int p, std::uint32_t r) {
  std::uint64_t s = 0;
  for (auto v : durations(o, p, r)) s += v;
  return s;
}

constexpr Phase kTwoPhases[] = {Phase::Forward, Phase::BackwardData};

struct Fixture {
  ActivityAttributor attributor;
  RecordFactory records;
  std::map<RangeKey, std::uint64_t> ids;

  Fixture() {
    for (std::uint32_t o = 0; o < 3; ++o)
      for (Phase ph : kTwoPhases)
        for (std::uint32_t r = 0; r < 3; ++r) ids[{o, ph, r}] = attributor.register_range({o, ph, r});
    std::uint64_t clock = 1'000'000;
    for (std::uint32_t r = 0; r < 3; ++r)
      for (std::uint32_t o = 0; o < 3; ++o)
        for (int p = 0; p < 2; ++p) {
          const std::uint64_t id = ids[{o, kTwoPhases[p], r}];
          for (auto d : durations(o, p, r)) {
            records.kernel(id, clock, d);
            clock += d + 50;  // a 50 ns gap between kernels: the span sees it, the sum does not
          }
          clock += 10'000;
        }
  }
};

TEST(ActivityAttribution, ExactStatisticsForThreeOpsTwoPhasesThreeReps) {
  Fixture f;
  f.attributor.add(f.records.take());
  for (std::uint32_t o = 0; o < 3; ++o) {
    for (int p = 0; p < 2; ++p) {
      const PhaseStatistics s = f.attributor.statistics(o, kTwoPhases[p]);
      EXPECT_EQ(s.repetitions, 3);
      EXPECT_EQ(s.launches, static_cast<int>(o) + 1);
      EXPECT_FALSE(s.launches_vary);
      EXPECT_EQ(s.min_ns, static_cast<TimeNs>(range_sum(o, p, 1)));     // rep 1 is fastest
      EXPECT_EQ(s.median_ns, static_cast<TimeNs>(range_sum(o, p, 2)));
      EXPECT_EQ(s.max_ns, static_cast<TimeNs>(range_sum(o, p, 0)));
      // Span = sum + the o gaps of 50 ns between the o + 1 kernels.
      EXPECT_EQ(s.median_span_ns, static_cast<TimeNs>(range_sum(o, p, 2) + 50 * o));
    }
  }
  EXPECT_EQ(f.attributor.unattributed_records(), 0u);
  EXPECT_EQ(f.attributor.foreign_records(), 0u);
  EXPECT_TRUE(f.attributor.reliable());
  EXPECT_EQ(f.attributor.reliability_note(), "");
}

TEST(ActivityAttribution, ConcreteNumbersForOneRange) {
  Fixture f;
  f.attributor.add(f.records.take());
  // op 2, fwd, rep 0: kernels 3030, 3031, 3032 ns.
  const RangeTiming t = f.attributor.timing({2, Phase::Forward, 0});
  EXPECT_EQ(t.kernels, 3);
  EXPECT_EQ(t.kernel_ns, 3030 + 3031 + 3032);
  EXPECT_EQ(t.copy_ns, 0);
  EXPECT_EQ(t.span_ns, 3030 + 3031 + 3032 + 2 * 50);
  EXPECT_EQ(t.api_calls, 3);
  EXPECT_EQ(t.device_ns(), t.kernel_ns);
  // op 0, bwd_data: one kernel per rep: 1130 (rep 0), 1110 (rep 1), 1120 (rep 2).
  const PhaseStatistics s = f.attributor.statistics(0, Phase::BackwardData);
  EXPECT_EQ(s.min_ns, 1110);
  EXPECT_EQ(s.median_ns, 1120);
  EXPECT_EQ(s.max_ns, 1130);
}

TEST(ActivityAttribution, BatchesInAnyOrderGiveTheSameResult) {
  Fixture reference;
  reference.attributor.add(reference.records.take());

  Fixture f;
  ActivityBatch all = f.records.take();
  // Split into single-record batches, correlations deliberately after the kernels they name,
  // then shuffle everything (CUPTI hands buffers over asynchronously and per stream).
  std::vector<ActivityBatch> pieces;
  for (auto& k : all.kernels) {
    ActivityBatch b;
    b.kernels.push_back(k);
    pieces.push_back(std::move(b));
  }
  for (auto& c : all.external_correlations) {
    ActivityBatch b;
    b.external_correlations.push_back(c);
    pieces.push_back(std::move(b));
  }
  std::mt19937 rng(42);
  std::shuffle(pieces.begin(), pieces.end(), rng);
  for (const auto& b : pieces) f.attributor.add(b);

  for (std::uint32_t o = 0; o < 3; ++o)
    for (Phase ph : kTwoPhases) {
      const PhaseStatistics a = reference.attributor.statistics(o, ph);
      const PhaseStatistics b = f.attributor.statistics(o, ph);
      EXPECT_EQ(a.min_ns, b.min_ns);
      EXPECT_EQ(a.median_ns, b.median_ns);
      EXPECT_EQ(a.max_ns, b.max_ns);
      EXPECT_EQ(a.launches, b.launches);
      EXPECT_EQ(a.median_span_ns, b.median_span_ns);
    }
}

TEST(ActivityAttribution, MemcpysAddToDeviceTimeAndBytes) {
  ActivityAttributor a;
  RecordFactory r;
  const auto id = a.register_range({0, Phase::Update, 0});
  r.kernel(id, 1000, 400);
  r.memcpy(id, 2000, 250, 4096);
  r.memcpy(id, 3000, 150, 1024);
  a.add(r.take());
  const RangeTiming t = a.timing({0, Phase::Update, 0});
  EXPECT_EQ(t.kernels, 1);
  EXPECT_EQ(t.memcpys, 2);
  EXPECT_EQ(t.kernel_ns, 400);
  EXPECT_EQ(t.copy_ns, 400);
  EXPECT_EQ(t.memcpy_bytes, 5120);
  EXPECT_EQ(t.device_ns(), 800);
  EXPECT_EQ(t.span_ns, 3150 - 1000);
  EXPECT_EQ(a.statistics(0, Phase::Update).launches, 1);  // launches count kernels only
}

TEST(ActivityAttribution, RecordsWithoutExternalIdAreCountedNotAttributed) {
  ActivityAttributor a;
  RecordFactory r;
  const auto id = a.register_range({0, Phase::Forward, 0});
  r.kernel(id, 1000, 100);
  r.kernel(0, 2000, 5000);       // launched outside every range (warm-up, another thread)
  r.memcpy(0, 9000, 300, 64);
  r.kernel(999, 12000, 7000);    // tagged with an id this attributor never handed out
  a.add(r.take());
  EXPECT_EQ(a.timing({0, Phase::Forward, 0}).kernel_ns, 100);
  EXPECT_EQ(a.unattributed_records(), 2u);
  EXPECT_EQ(a.foreign_records(), 1u);
  EXPECT_TRUE(a.reliable());  // unattributed work is not lost work
}

TEST(ActivityAttribution, DroppedRecordsFlagTheResult) {
  Fixture f;
  ActivityBatch b = f.records.take();
  b.dropped.count = 17;
  f.attributor.add(b);
  EXPECT_FALSE(f.attributor.reliable());
  EXPECT_EQ(f.attributor.dropped_records(), 17u);
  EXPECT_NE(f.attributor.reliability_note().find("dropped 17"), std::string::npos);
  // Drops from several batches add up.
  ActivityBatch more;
  more.dropped.count = 3;
  f.attributor.add(more);
  EXPECT_EQ(f.attributor.dropped_records(), 20u);
}

TEST(ActivityAttribution, UntimedRecordsFlagTheResultButStillCountAsLaunches) {
  ActivityAttributor a;
  RecordFactory r;
  const auto id = a.register_range({1, Phase::Forward, 0});
  r.kernel(id, 1000, 100);
  r.untimed_kernel(id);
  a.add(r.take());
  EXPECT_EQ(a.untimed_records(), 1u);
  EXPECT_FALSE(a.reliable());
  EXPECT_EQ(a.timing({1, Phase::Forward, 0}).kernels, 2);
  EXPECT_EQ(a.timing({1, Phase::Forward, 0}).kernel_ns, 100);
  EXPECT_NE(a.reliability_note().find("no timestamps"), std::string::npos);
}

TEST(ActivityAttribution, RangesWithoutActivityAreZero) {
  ActivityAttributor a;
  for (std::uint32_t r = 0; r < 4; ++r) a.register_range({5, Phase::BackwardWeight, r});  // e.g. a ReLU
  const PhaseStatistics s = a.statistics(5, Phase::BackwardWeight);
  EXPECT_EQ(s.repetitions, 4);
  EXPECT_EQ(s.launches, 0);
  EXPECT_EQ(s.min_ns, 0);
  EXPECT_EQ(s.median_ns, 0);
  EXPECT_EQ(s.max_ns, 0);
  EXPECT_EQ(a.statistics(6, Phase::Forward).repetitions, 0);  // never registered
}

TEST(ActivityAttribution, VaryingLaunchCountsAreReported) {
  ActivityAttributor a;
  RecordFactory r;
  const auto id0 = a.register_range({0, Phase::Forward, 0});
  const auto id1 = a.register_range({0, Phase::Forward, 1});
  r.kernel(id0, 0 + 1, 10);
  r.kernel(id1, 100, 10);
  r.kernel(id1, 200, 10);
  a.add(r.take());
  const PhaseStatistics s = a.statistics(0, Phase::Forward);
  EXPECT_EQ(s.launches, 2);
  EXPECT_TRUE(s.launches_vary);
}

TEST(ActivityAttribution, TwoIdsForOneKeyAddUp) {
  ActivityAttributor a;
  RecordFactory r;
  const auto first = a.register_range({0, Phase::Forward, 0});
  const auto second = a.register_range({0, Phase::Forward, 0});
  EXPECT_NE(first, second);
  r.kernel(first, 1000, 100);
  r.kernel(second, 2000, 200);
  a.add(r.take());
  EXPECT_EQ(a.timing({0, Phase::Forward, 0}).kernel_ns, 300);
  EXPECT_EQ(a.statistics(0, Phase::Forward).repetitions, 1);
}

TEST(ActivityAttribution, ClearRecordsKeepsRanges) {
  Fixture f;
  f.attributor.add(f.records.take());
  f.attributor.clear_records();
  EXPECT_EQ(f.attributor.statistics(0, Phase::Forward).repetitions, 3);
  EXPECT_EQ(f.attributor.statistics(0, Phase::Forward).max_ns, 0);
  EXPECT_EQ(f.attributor.dropped_records(), 0u);
}

TEST(ActivityAttribution, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(median_ns({}), 0);
  EXPECT_EQ(median_ns({7}), 7);
  EXPECT_EQ(median_ns({9, 1, 5}), 5);
  EXPECT_EQ(median_ns({4, 1, 3, 2}), 3);  // (2 + 3) / 2 = 2.5, rounded up as summarize() does
  EXPECT_EQ(median_ns({4, 1, 2, 2}), 2);
  EXPECT_EQ(median_ns({10, 20}), 15);
}

TEST(ActivityBatch, AppendMovesEverythingAndAddsDrops) {
  RecordFactory r;
  r.kernel(1, 10, 5);
  r.memcpy(1, 20, 5, 8);
  ActivityBatch a = r.take();
  a.dropped.count = 2;
  ActivityBatch b;
  b.memsets.push_back({5, 1, 2, 0, 0, 16});
  b.dropped.count = 3;
  a.append(std::move(b));
  EXPECT_EQ(a.kernels.size(), 1u);
  EXPECT_EQ(a.memcpys.size(), 1u);
  EXPECT_EQ(a.memsets.size(), 1u);
  EXPECT_EQ(a.external_correlations.size(), 2u);
  EXPECT_EQ(a.dropped.count, 5u);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move): append leaves the source empty
  EXPECT_FALSE(a.empty());
}

TEST(ActivityAttribution, MemsetsCountAsCopyTime) {
  ActivityAttributor a;
  const auto id = a.register_range({0, Phase::BackwardWeight, 0});
  ActivityBatch b;
  b.memsets.push_back({300, 1000, 1600, 0, 0, 1 << 20});
  b.external_correlations.push_back({id, 300});
  a.add(b);
  const RangeTiming t = a.timing({0, Phase::BackwardWeight, 0});
  EXPECT_EQ(t.memsets, 1);
  EXPECT_EQ(t.copy_ns, 600);
  EXPECT_EQ(t.device_ns(), 600);
}

}  // namespace
}  // namespace parasim::profiler
