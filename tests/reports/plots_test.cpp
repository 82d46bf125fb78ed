// What the generated gnuplot scripts ask for: the axes, lines and bands each plot promises,
// and the rules that keep them runnable by hand (relative data paths, overridable outputs).
#include <string>

#include <gtest/gtest.h>

#include "parasim/reports/csv.hpp"
#include "parasim/reports/plots.hpp"
#include "sample_data.hpp"

namespace {

using namespace parasim::reports;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Plots, AllSevenWithTheirStemsInOrder) {
  const auto plots = build_plots(fixtures::sample_report());
  ASSERT_EQ(plots.size(), 7u);
  const char* stems[] = {"time_to_train", "speedup", "throughput", "breakdown", "gantt", "validation", "memory"};
  for (std::size_t i = 0; i < plots.size(); ++i) {
    EXPECT_EQ(plots[i].stem, stems[i]);
    const std::string& s = plots[i].script;
    // Runnable by hand in the report folder: relative CSV names, outputs overridable.
    EXPECT_TRUE(has(s, "if (!exists(\"png_file\")) png_file = \"" + plots[i].stem + ".png\"")) << s;
    EXPECT_TRUE(has(s, "set terminal pngcairo")) << plots[i].stem;
    EXPECT_TRUE(has(s, "set terminal svg")) << plots[i].stem;
    EXPECT_TRUE(has(s, "set title ")) << plots[i].stem;
    EXPECT_TRUE(has(s, "set ylabel ") || plots[i].stem == "gantt") << plots[i].stem;
    EXPECT_TRUE(has(s, "set key outside")) << plots[i].stem;
    for (const PlotFile& f : plots[i].data) EXPECT_TRUE(has(s, f.name)) << plots[i].stem << " does not read " << f.name;
    EXPECT_FALSE(has(s, "/tmp")) << "absolute path in " << plots[i].stem;
  }
}

TEST(Plots, ThroughputBarsCarryTheSpeedupOverTheFirstRow) {
  const ReportData d = fixtures::sample_report();
  const auto p = throughput_plot(d);
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(p->data.size(), 1u);
  EXPECT_EQ(p->data[0].name, "throughput.csv");
  const std::string& csv = p->data[0].content;
  EXPECT_TRUE(has(csv, "index,samples_per_s,speedup,step_time_ms,gpus,global_batch,feasible,strategy,cluster\n"))
      << csv;
  EXPECT_TRUE(has(csv, "0,10666.666666666666,1,12,4,128,1,dp=4,pcie-4gpu\n")) << csv;
  // Text columns last and quoted where they hold commas; the infeasible row is flagged 0.
  EXPECT_TRUE(has(csv, ",4,128,1,\"mp=4,schedule=spectrain\",pcie-4gpu\n")) << csv;
  // Exact doubles: 3200 / 10666.666666666666 in its shortest round-trip form.
  EXPECT_TRUE(has(csv, "3,3200,0.30000000000000004,160,1,512,0,dp=1,pcie-4gpu\n")) << csv;
  EXPECT_DOUBLE_EQ(throughput_speedup(d, 2), 9846.153846153846 / 10666.666666666666);
  EXPECT_EQ(throughput_speedup(d, 99), 0.0);
  const std::string& s = p->script;
  EXPECT_TRUE(has(s, "with boxes lc rgb variable")) << s;
  EXPECT_TRUE(has(s, "label(column(\"speedup\"))")) << s;
  EXPECT_TRUE(has(s, "\"mp=4,\\nschedule=gpipe,\\nmicro=8\" 1")) << s;  // wrapped, horizontal labels
  EXPECT_TRUE(has(s, "(dp=4)") || has(p->caption, "(dp=4)")) << p->caption;
}

TEST(Plots, TurnedLabelsAreWrappedAndGetRoomBelowAndLeft) {
  ReportData d;
  for (int i = 0; i < 10; ++i)
    d.breakdown.push_back({"dp=" + std::to_string(i) + ",mp=2,schedule=pipedream,zero=1", 10, 1, 0, 0});
  const auto p = breakdown_plot(d);
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(has(p->script, "rotate by 45 right")) << p->script;
  // Turned labels are wrapped after commas into lines of <= 28 characters: "dp=0,mp=2," /
  // "schedule=pipedream,zero=1" (25 characters, 2 lines): left 25 * 0.6 + 1, bottom 2 + 25 * 0.4 + 1.
  EXPECT_TRUE(has(p->script, "\"dp=0,mp=2,\\nschedule=pipedream,zero=1\" 0")) << p->script;
  EXPECT_TRUE(has(p->script, "set lmargin 16\n")) << p->script;
  EXPECT_TRUE(has(p->script, "set bmargin 13\n")) << p->script;
}

TEST(Plots, NoDataNoPlot) {
  ReportData d;
  EXPECT_TRUE(build_plots(d).empty());
  d.validation.push_back({"a", 1, 1});
  const auto plots = build_plots(d);
  ASSERT_EQ(plots.size(), 1u);
  EXPECT_EQ(plots[0].stem, "validation");
}

TEST(Plots, TimeToTrainHasLogGpuAxisAndEverySeries) {
  const ReportData d = fixtures::sample_report();
  const std::string s = time_to_train_plot(d)->script;
  EXPECT_TRUE(has(s, "set logscale x 2")) << s;
  EXPECT_TRUE(has(s, "set xtics (1, 2, 4, 8, 16, 32, 64)")) << s;
  EXPECT_TRUE(has(s, "array series_title[4] = [\"DP only\", \"best hybrid\", \"best with MP=2\", \"best with MP=4\"]"))
      << s;
  EXPECT_TRUE(has(s, "time to train (days, log scale)")) << s;
}

TEST(Plots, SpeedupHasTheIdealLine) {
  const std::string s = speedup_plot(fixtures::sample_report())->script;
  EXPECT_TRUE(has(s, "plot x with lines")) << s;
  EXPECT_TRUE(has(s, "ideal (linear)")) << s;
  EXPECT_TRUE(has(s, "set logscale y 2")) << s;
}

TEST(Plots, FillSpeedupsUsesTheSmallestGpuCount) {
  std::vector<ScalingSeries> s = {
      {"DP", SeriesKind::DataParallel, {{.gpus = 2, .time_to_train_s = 100}, {.gpus = 8, .time_to_train_s = 40}}},
      {"given", SeriesKind::Other, {{.gpus = 4, .time_to_train_s = 60, .speedup = 7.5}}}};
  EXPECT_EQ(fill_speedups(s), 2);
  EXPECT_DOUBLE_EQ(s[0].points[0].speedup, 2.0);   // linear up to the baseline
  EXPECT_DOUBLE_EQ(s[0].points[1].speedup, 5.0);
  EXPECT_DOUBLE_EQ(s[1].points[0].speedup, 7.5);   // given values are kept
}

TEST(Plots, ValidationHasIdentityLineAndBothBands) {
  const std::string s = validation_plot(fixtures::sample_report())->script;
  EXPECT_TRUE(has(s, "(0.8 * $1):(1.2 * $1) with filledcurves")) << s;
  EXPECT_TRUE(has(s, "(0.9 * $1):(1.1 * $1) with filledcurves")) << s;
  EXPECT_TRUE(has(s, "x with lines")) << s;
  // Labels with quotes are escaped for gnuplot.
  EXPECT_TRUE(has(s, "\"vgg16 \\\"quoted\\\" & <tagged> (cpu)\"")) << s;
}

TEST(Plots, MemoryDrawsCapacityAndCollapsesIdenticalDevices) {
  const std::string s = memory_plot(fixtures::sample_report())->script;
  EXPECT_TRUE(has(s, "with vectors nohead")) << s;
  EXPECT_TRUE(has(s, "device capacity")) << s;
  EXPECT_TRUE(has(s, "GPU 0–7")) << s;
}

TEST(Plots, GanttHasOneRowPerDeviceStreamAndMergesHugeSteps) {
  ReportData d;
  // 3 devices x 2 streams, 20,000 tiny back-to-back tasks on each, each device shifted a little
  // so that no two devices share rows.
  for (int dev = 0; dev < 3; ++dev)
    for (int lane = 0; lane < 2; ++lane)
      for (int i = 0; i < 20'000; ++i)
        d.gantt.push_back({dev, lane, i * 1'000 + dev * 10, i * 1'000 + 900 + dev * 10,
                           lane ? GanttCategory::Communication : GanttCategory::Forward, "t"});
  const auto p = gantt_plot(d);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->data.size(), 2u);
  EXPECT_EQ(p->data[1].name, "gantt_plot.csv");
  const auto merged = parse_csv(p->data[1].content);
  EXPECT_LE(merged.size() - 1, kMaxGanttBarsDrawn);
  EXPECT_EQ(parse_csv(p->data[0].content).size() - 1, d.gantt.size());  // gantt.csv keeps them all
  EXPECT_TRUE(has(p->script, "data = \"gantt_plot.csv\"")) << p->script;
  EXPECT_TRUE(has(p->script, "\"GPU 2 comm\" 5")) << p->script;
  EXPECT_TRUE(has(p->script, "with boxxyerror")) << p->script;
  std::int64_t tasks = 0;
  for (std::size_t r = 1; r < merged.size(); ++r) tasks += std::stoll(merged[r][6]);
  EXPECT_EQ(tasks, static_cast<std::int64_t>(d.gantt.size()));  // every task is in some drawn bar
}

TEST(Plots, GanttDevicesWithIdenticalRowsShareThem) {
  ReportData d;
  d.gantt.push_back({0, 0, 0, 100, GanttCategory::Forward, "f"});
  d.gantt.push_back({1, 0, 0, 100, GanttCategory::Forward, "f"});
  // Data-parallel all-reduces: odd devices in one group, even ones (but 0) in another.
  for (int dev = 1; dev < 8; ++dev)
    d.gantt.push_back({dev, 1, dev % 2 ? 100 : 150, dev % 2 ? 140 : 190, GanttCategory::Communication, "ar"});
  const auto p = gantt_plot(d);
  ASSERT_TRUE(p);
  EXPECT_TRUE(has(p->script, "\"GPU 0 compute\" 0, \"GPU 1 compute\" 1, \"GPU 1 comm\" 2, "
                             "\"GPU 2–6 step 2 comm\" 3, \"GPU 3–7 step 2 comm\" 4)")) << p->script;
  EXPECT_EQ(parse_csv(p->data[1].content).size() - 1, 5u);  // one bar per row drawn
  EXPECT_EQ(parse_csv(p->data[0].content).size() - 1, d.gantt.size());
}

TEST(Plots, ManyMemoryBarsShowEachStrategysFullestDevice) {
  ReportData d;
  for (int s = 0; s < 7; ++s)
    for (int dev = 0; dev < 2; ++dev)
      d.memory.push_back({"mp=2,s" + std::to_string(s), dev, (dev + 1) * parasim::GiB + s, 8 * parasim::GiB, {}});
  const auto p = memory_plot(d);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->data.size(), 2u);
  EXPECT_EQ(parse_csv(p->data[0].content).size() - 1, 14u);  // memory.csv: every bar
  const auto drawn = parse_csv(p->data[1].content);
  ASSERT_EQ(drawn.size() - 1, 7u);
  EXPECT_EQ(drawn[1][1], "1");  // device 1 is the fuller one
  EXPECT_TRUE(has(p->script, "data = \"memory_plot.csv\"")) << p->script;
  EXPECT_TRUE(has(p->script, "GPU 1 (fullest)")) << p->script;
}

}  // namespace
