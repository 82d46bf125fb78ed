// From a simulated step to report rows: the breakdown adds up to the step time, every task
// becomes a bar (a collective one per member), memory rows carry the engine's peaks.
#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "parasim/reports/step_adapters.hpp"
#include "sample_data.hpp"

namespace {

using namespace parasim;
using namespace parasim::reports;

struct Step {
  hardware::Cluster cluster = hardware::make_cluster_preset("dgx1-v100");
  simulator::TaskGraph graph = fixtures::pipeline_step_graph();
  simulator::StepResult result = simulator::Engine(cluster, {.record_timeline = true}).run(graph);
};

TEST(StepAdapters, BreakdownAddsUpToTheStepTime) {
  Step s;
  const BreakdownRow r = breakdown_from_step("x", s.result, 3'000'000);
  EXPECT_NEAR(r.total_ms(), ns_to_ms(s.result.step_time), 1e-9);
  EXPECT_EQ(r.bubble_ms, 3.0);
  EXPECT_GT(r.compute_ms, 0);
  // A bubble larger than the idle time is capped by it.
  const BreakdownRow capped = breakdown_from_step("x", s.result, s.result.step_time);
  EXPECT_EQ(capped.idle_ms, 0);
  EXPECT_NEAR(capped.total_ms(), ns_to_ms(s.result.step_time), 1e-9);
}

TEST(StepAdapters, EveryTaskBecomesBarsOnItsStream) {
  Step s;
  const auto bars = gantt_from_step(s.graph, s.result);
  std::size_t expected = 0;
  for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(s.graph.size()); ++t) {
    if (s.graph.kind(t) == simulator::TaskKind::Collective) expected += s.graph.group_devices(s.graph.group(t)).size();
    else if (s.graph.kind(t) != simulator::TaskKind::Marker) ++expected;
  }
  ASSERT_EQ(bars.size(), expected);
  int forward = 0, backward = 0, update = 0, comm = 0;
  for (const GanttBar& b : bars) {
    EXPECT_LE(b.start, b.end);
    EXPECT_LE(b.end, s.result.step_time);
    forward += b.category == GanttCategory::Forward;
    backward += b.category == GanttCategory::Backward;
    update += b.category == GanttCategory::Update;
    if (b.category == GanttCategory::Communication) {
      ++comm;
      EXPECT_EQ(b.lane, simulator::kCommStream);
    }
  }
  EXPECT_EQ(forward, 16);   // 2 replicas x 2 stages x 4 microbatches
  EXPECT_EQ(backward, 16);
  EXPECT_EQ(update, 4);
  EXPECT_EQ(comm, 2 * 4 * 2 + 2 * 2);  // activations + gradients, and 2 all-reduces x 2 members
}

TEST(StepAdapters, MemoryRowsCarryThePeaks) {
  Step s;
  const auto rows = memory_from_step("dp=2,mp=2", s.result);
  ASSERT_EQ(rows.size(), 4u);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].device, static_cast<int>(i));
    EXPECT_EQ(rows[i].peak, s.result.devices[i].peak_memory);
    EXPECT_EQ(rows[i].capacity, 32 * GiB);
    EXPECT_EQ(rows[i].breakdown.total(), rows[i].peak);
    EXPECT_EQ(rows[i].breakdown.params, 96 * MiB);
  }
}

TEST(StepAdapters, NoTimelineNoGantt) {
  Step s;
  const auto plain = simulator::Engine(s.cluster).run(s.graph);
  EXPECT_THROW(gantt_from_step(s.graph, plain), RuntimeError);
  const ReportData d = report_from_step("x", s.graph, plain);
  EXPECT_TRUE(d.gantt.empty());
  EXPECT_EQ(d.breakdown.size(), 1u);
}

}  // namespace
