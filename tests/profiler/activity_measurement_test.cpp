// The GPU profiler's repetition discipline (measure_op_phases) with a fake tracer and a fake
// kernel backend: every launch becomes a fabricated kernel record, so the test knows exactly what
// each phase of each repetition should measure.
#include <gtest/gtest.h>

#include <vector>

#include "parasim/common/error.hpp"
#include "parasim/profiler/gpu_profiler.hpp"

namespace parasim::profiler {
namespace {

/// Turns launches into records like CUPTI: a correlation id per launch, an external correlation
/// record when an id is pushed. Records become visible only at flush().
class FakeActivitySource final : public ActivitySource {
 public:
  void push_external_id(std::uint64_t id) override { stack_.push_back(id); ++pushes; }
  void pop_external_id() override {
    ASSERT_FALSE(stack_.empty());
    stack_.pop_back();
  }
  ActivityBatch flush() override {
    ++flushes;
    ActivityBatch out = std::exchange(pending_, ActivityBatch{});
    out.dropped.count = std::exchange(dropped_, 0);
    return out;
  }
  std::string name() const override { return "fake"; }

  void launch(std::uint64_t duration_ns) {
    const std::uint32_t corr = next_corr_++;
    pending_.kernels.push_back({corr, clock_, clock_ + duration_ns, 0, 1, "fake"});
    pending_.runtime_calls.push_back({corr, clock_, clock_ + 1, 0, false, 1});
    if (!stack_.empty()) pending_.external_correlations.push_back({stack_.back(), corr});
    clock_ += duration_ns + 1000;
  }
  void lose_records(std::uint64_t n) { dropped_ += n; }
  bool balanced() const { return stack_.empty(); }

  int pushes = 0;
  int flushes = 0;

 private:
  std::vector<std::uint64_t> stack_;
  ActivityBatch pending_;
  std::uint64_t dropped_ = 0;
  std::uint32_t next_corr_ = 1;
  std::uint64_t clock_ = 1'000'000;
};

/// Phase p of the r-th call launches (p + 1) kernels of 100 * (p + 1) + (r % 3) * 10 ns:
/// forward 1 kernel, bwd_data 2, bwd_weight 3, update 4.
class FakeKernel final : public OpKernel {
 public:
  explicit FakeKernel(FakeActivitySource& s) : source_(s) {}
  void run(Phase phase) override {
    const auto p = static_cast<std::size_t>(phase);
    const std::uint64_t call = calls_[p]++;
    for (std::size_t k = 0; k <= p; ++k) source_.launch(100 * (p + 1) + (call % 3) * 10);
  }
  std::array<std::uint64_t, 4> calls_{};

 private:
  FakeActivitySource& source_;
};

class FakeBackend final : public KernelBackend {
 public:
  std::unique_ptr<OpKernel> prepare(const models::Op&, Optimizer) override { return nullptr; }
  void synchronize() override { ++syncs; }
  std::string name() const override { return "fake"; }
  std::string device_kind() const override { return "fake"; }
  int syncs = 0;
};

TEST(ActivityMeasurement, TimesEveryPhaseOfEveryRepetitionExactly) {
  FakeActivitySource source;
  FakeKernel kernel(source);
  FakeBackend backend;
  const MeasurementPlan plan{.warmup = 2, .repetitions = 3};
  const OpPhaseMeasurement m = measure_op_phases(kernel, backend, source, plan, 4);

  // Warm-up calls 0, 1 of each phase are discarded; timed calls are 2, 3, 4 -> offsets 20, 0, 10.
  for (std::size_t p = 0; p < 4; ++p) {
    const PhaseStatistics& s = m.phases[p];
    const auto kernels = static_cast<TimeNs>(p + 1);
    const auto base = static_cast<TimeNs>(100 * (p + 1));
    EXPECT_EQ(s.repetitions, 3) << p;
    EXPECT_EQ(s.launches, static_cast<int>(p + 1)) << p;
    EXPECT_EQ(s.min_ns, kernels * (base + 0)) << p;
    EXPECT_EQ(s.median_ns, kernels * (base + 10)) << p;
    EXPECT_EQ(s.max_ns, kernels * (base + 20)) << p;
    // Kernels of one phase are 1000 ns apart: the span includes the gaps, the sum does not.
    EXPECT_EQ(s.median_span_ns, kernels * (base + 10) + (kernels - 1) * 1000) << p;
  }
  EXPECT_TRUE(m.reliable);
  EXPECT_EQ(m.unattributed_records, 0u);  // warm-up launches were flushed away before timing
  EXPECT_EQ(kernel.calls_[0], 5u);
  EXPECT_EQ(source.pushes, 3 * 4);
  EXPECT_TRUE(source.balanced());
  EXPECT_EQ(source.flushes, 2);
  EXPECT_EQ(backend.syncs, 1 + 3 * 4);  // after warm-up, then after every timed phase
}

TEST(ActivityMeasurement, LossesDuringWarmupDoNotMatterLossesWhileTimingDo) {
  {
    FakeActivitySource source;
    FakeKernel kernel(source);
    FakeBackend backend;
    source.lose_records(5);  // reported by the first (warm-up) flush, then forgotten
    const OpPhaseMeasurement m = measure_op_phases(kernel, backend, source, {.warmup = 1, .repetitions = 1});
    EXPECT_TRUE(m.reliable);
  }
  {
    // A source that loses records on every flush: the timed flush reports them too.
    class LossySource final : public ActivitySource {
     public:
      void push_external_id(std::uint64_t) override {}
      void pop_external_id() override {}
      ActivityBatch flush() override {
        ActivityBatch b;
        b.dropped.count = 4;
        return b;
      }
      std::string name() const override { return "lossy"; }
    } lossy;
    FakeActivitySource unused;
    FakeKernel kernel(unused);
    FakeBackend backend;
    const OpPhaseMeasurement m = measure_op_phases(kernel, backend, lossy, {.warmup = 0, .repetitions = 2});
    EXPECT_FALSE(m.reliable);
    EXPECT_NE(m.reliability_note.find("dropped 4"), std::string::npos);
  }
}

TEST(ActivityMeasurement, RejectsAnEmptyPlan) {
  FakeActivitySource source;
  FakeKernel kernel(source);
  FakeBackend backend;
  EXPECT_THROW(measure_op_phases(kernel, backend, source, {.warmup = 1, .repetitions = 0}), InputError);
  EXPECT_THROW(measure_op_phases(kernel, backend, source, {.warmup = -1, .repetitions = 3}), InputError);
}

TEST(ActivityMeasurement, PopsTheIdWhenAPhaseThrows) {
  FakeActivitySource source;
  FakeBackend backend;
  class Throwing final : public OpKernel {
   public:
    void run(Phase phase) override {
      if (phase == Phase::BackwardData && ++bwd_ > 1) throw RuntimeError("kernel failed");
    }
    int bwd_ = 0;
  } kernel;
  EXPECT_THROW(measure_op_phases(kernel, backend, source, {.warmup = 1, .repetitions = 2}), RuntimeError);
  EXPECT_TRUE(source.balanced());
}

/// A tracer whose external-correlation join fails, as it would on a CUPTI that emits no
/// EXTERNAL_CORRELATION records: kernels arrive, the records naming their range do not.
class UnjoinedSource final : public ActivitySource {
 public:
  void push_external_id(std::uint64_t) override {}
  void pop_external_id() override {}
  ActivityBatch flush() override { return std::exchange(pending_, ActivityBatch{}); }
  std::string name() const override { return "unjoined"; }
  void launch(std::uint64_t ns) {
    pending_.kernels.push_back({next_++, clock_, clock_ + ns, 0, 1, "k"});
    clock_ += ns + 100;
  }

 private:
  ActivityBatch pending_;
  std::uint32_t next_ = 1;
  std::uint64_t clock_ = 1000;
};

TEST(ActivityMeasurement, UnattributedRecordsAndSilentPhasesAreUnreliable) {
  UnjoinedSource source;
  class Kernel final : public OpKernel {
   public:
    explicit Kernel(UnjoinedSource& s) : s_(s) {}
    void run(Phase) override { s_.launch(500); }
    UnjoinedSource& s_;
  } kernel(source);
  FakeBackend backend;
  const OpPhaseMeasurement m =
      measure_op_phases(kernel, backend, source, {.warmup = 1, .repetitions = 2}, 0, {true, true, false, true});
  // Every phase reads 0 ns: exactly what a failed join looks like.
  EXPECT_EQ(m.phases[0].median_ns, 0);
  EXPECT_EQ(m.phases[0].launches, 0);
  EXPECT_FALSE(m.reliable);
  EXPECT_EQ(m.unattributed_records, 8u);  // 2 repetitions x 4 phases, one kernel each
  EXPECT_EQ(m.reliability_note,
            "8 device records in the timed window had no external id; no device activity attributed to fwd "
            "(2 of 2 repetitions), bwd_data (2 of 2 repetitions), update (2 of 2 repetitions)");
}

TEST(ActivityMeasurement, AnExpectedPhaseWithoutLaunchesIsUnreliable) {
  FakeActivitySource source;
  FakeBackend backend;
  // Launches for fwd only; bwd_data is expected but launches nothing.
  class FwdOnly final : public OpKernel {
   public:
    explicit FwdOnly(FakeActivitySource& s) : s_(s) {}
    void run(Phase p) override {
      if (p == Phase::Forward) s_.launch(300);
    }
    FakeActivitySource& s_;
  } kernel(source);
  OpPhaseMeasurement m = measure_op_phases(kernel, backend, source, {.warmup = 0, .repetitions = 3}, 0,
                                           {true, false, false, false});
  EXPECT_TRUE(m.reliable) << m.reliability_note;
  EXPECT_EQ(m.phases[0].median_ns, 300);
  m = measure_op_phases(kernel, backend, source, {.warmup = 0, .repetitions = 3}, 0, {true, true, false, false});
  EXPECT_FALSE(m.reliable);
  EXPECT_EQ(m.reliability_note, "no device activity attributed to bwd_data (3 of 3 repetitions)");
}

ProfileEntry entry(const std::string& name, bool measured, const std::string& note) {
  ProfileEntry e;
  e.names = {name};
  e.signature = name;
  if (measured) e.set(Phase::Forward, PhaseStats{.min_ns = 1, .median_ns = 1, .max_ns = 1, .launches = 1, .reps = 1});
  e.note = note;
  return e;
}

TEST(ActivityMeasurement, AProfileThatIsMostlyUnreliableFailsLoudly) {
  Profile p;
  p.ops = {entry("a", true, ""),
           entry("b", true, "UNRELIABLE: 3 device records in the timed window had no external id"),
           entry("c", false, "not measured: out of memory")};
  EXPECT_EQ(check_profile_reliability(p), 1u);  // 1 of 2 measured: half is not most
  p.ops.push_back(entry("d", true, "UNRELIABLE: no device activity attributed to fwd (1 of 1 repetitions)"));
  try {
    (void)check_profile_reliability(p);
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("GPU profiling failed: 2 of 3 measured entries are unreliable (first: b: 3 "
                                          "device records in the timed window had no external id); ",
                                          0),
              0u)
        << e.what();
  }
}

}  // namespace
}  // namespace parasim::profiler
