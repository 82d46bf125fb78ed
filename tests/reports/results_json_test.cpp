// Reading results: the parasim.results/1 bundle round-trips, every other command's output is
// recognised by its shape, and bad input is an InputError naming the file and the JSON path.
#include <string>

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/reports/plots.hpp"
#include "parasim/reports/results_json.hpp"
#include "parasim/simulator/chrome_trace.hpp"
#include "support/input_error.hpp"
#include "sample_data.hpp"

namespace {

using namespace parasim::reports;
const std::string kData = PARASIM_REPORTS_TEST_DATA;

std::string input_error(const std::string& file) {
  return parasim::test_support::input_error([&] { load_results_file(kData + "/" + file); });
}

TEST(ResultsJson, BundleRoundTripsExactly) {
  const ReportData d = fixtures::sample_report();
  const nlohmann::json j = results_to_json(d);
  EXPECT_EQ(j["schema"], "parasim.results/1");
  const ReportData back = results_from_json(parasim::parse_json_text(parasim::dump_json(j), "mem"), "mem");
  EXPECT_EQ(parasim::dump_json(results_to_json(back)), parasim::dump_json(j));
  ASSERT_EQ(back.scaling.size(), d.scaling.size());
  EXPECT_EQ(back.scaling[0].points[3].time_to_train_s, d.scaling[0].points[3].time_to_train_s);
  EXPECT_EQ(back.gantt.size(), d.gantt.size());
  ASSERT_EQ(back.throughput.size(), d.throughput.size());
  EXPECT_EQ(back.throughput[3].samples_per_s, d.throughput[3].samples_per_s);
  EXPECT_FALSE(back.throughput[3].feasible);
  EXPECT_EQ(back.assumptions.extra, d.assumptions.extra);
}

TEST(ResultsJson, ValidateOutputsAreRecognised) {
  const ReportData one = load_results_file(kData + "/validate_one.json");
  ASSERT_EQ(one.validation.size(), 1u);
  EXPECT_EQ(one.validation[0].label, "resnet50 dp=2 (cuda)");
  EXPECT_EQ(one.validation[0].projected_ms, 101.5);
  EXPECT_EQ(one.validation[0].measured_ms, 97.25);
  EXPECT_EQ(one.assumptions.cost_source, "measured (profile.json)");

  const ReportData suite = load_results_file(kData + "/validate_suite.json");
  ASSERT_EQ(suite.validation.size(), 2u);  // the run that was never measured is skipped
  EXPECT_EQ(suite.validation[1].label, "mlp mp=2 (cpu)");
  EXPECT_EQ(suite.validation[1].projected_ms, 14.25);
}

TEST(ResultsJson, RunsWithStandInKernelsStayMarkedNotMeasured) {
  const ReportData d = load_results_file(kData + "/validate_not_measured.json");
  ASSERT_EQ(d.validation.size(), 2u);
  EXPECT_TRUE(d.validation[0].measured);
  EXPECT_FALSE(d.validation[1].measured);
  // The bundle keeps the mark.
  const ReportData back =
      results_from_json(parasim::parse_json_text(parasim::dump_json(results_to_json(d)), "mem"), "mem");
  ASSERT_EQ(back.validation.size(), 2u);
  EXPECT_FALSE(back.validation[1].measured);
  // The plot's statistics count the measured run only: |error| 4 %.
  const auto plot = validation_plot(d);
  ASSERT_TRUE(plot.has_value());
  EXPECT_NE(plot->script.find("1 run, median |error| 4 %, max 4 %"), std::string::npos) << plot->script;
  ASSERT_EQ(plot->data.size(), 1u);
  EXPECT_NE(plot->data[0].content.find("mlp mp=2 (cpu) (not measured)"), std::string::npos) << plot->data[0].content;
}

TEST(ResultsJson, ProjectionBecomesSeriesMemoryAndAssumptions) {
  const ReportData d = load_results_file(kData + "/projection.json");
  EXPECT_EQ(d.title, "inception_v3 on dgx1-v100");
  EXPECT_EQ(d.model, "inception_v3");
  EXPECT_EQ(d.assumptions.cost_source, "roofline");
  EXPECT_EQ(d.assumptions.dataset, "imagenet-1k (1281167 samples)");
  EXPECT_EQ(d.assumptions.efficiency_model, "critical-batch E_min=78.4 B_crit=9000");
  EXPECT_EQ(d.assumptions.efficiency_source, "McCandlish et al. 2018");
  ASSERT_EQ(d.scaling.size(), 4u);  // DP, best hybrid, then one line per model-parallel width
  EXPECT_EQ(d.scaling[2].name, "M = 2 GPUs per worker");
  EXPECT_EQ(d.scaling[2].kind, SeriesKind::ModelParallel);
  ASSERT_EQ(d.scaling[2].points.size(), 2u);
  EXPECT_EQ(d.scaling[2].points[1].gpus, 16);
  EXPECT_EQ(d.scaling[2].points[1].strategy, "dp=8,mp=2");
  EXPECT_EQ(d.scaling[2].points[1].time_to_train_s, 27584.0);
  EXPECT_EQ(d.scaling[3].name, "M = 4 GPUs per worker");
  ASSERT_EQ(d.scaling[3].points.size(), 1u);  // 16 GPUs: no feasible split into workers of 4
  EXPECT_EQ(d.scaling[3].points[0].gpus, 8);
  EXPECT_EQ(d.scaling[3].points[0].global_batch, 128);
  EXPECT_EQ(d.scaling[3].points[0].epochs, 79.8);
  EXPECT_EQ(d.scaling[0].kind, SeriesKind::DataParallel);
  ASSERT_EQ(d.scaling[0].points.size(), 2u);  // 16 GPUs: no feasible DP-only split
  EXPECT_EQ(d.scaling[0].points[1].time_to_train_s, 29036.5);
  EXPECT_EQ(d.scaling[0].points[1].global_batch, 512);
  EXPECT_EQ(d.scaling[1].kind, SeriesKind::BestHybrid);
  ASSERT_EQ(d.scaling[1].points.size(), 2u);  // 1 GPU: no hybrid
  EXPECT_EQ(d.scaling[1].points[0].strategy, "dp=4,mp=2,schedule=1f1b,micro=4");
  EXPECT_EQ(d.scaling[1].points[0].time_to_train_s, 52462.25);
  EXPECT_EQ(d.scaling[1].points[0].epochs, 80.63);
  // Why points are missing is stated among the assumptions.
  bool said = false;
  for (const auto& [k, v] : d.assumptions.extra)
    said = said || (k == "16 GPUs, DP only" && v.find("needs 41.2 GiB") != std::string::npos);
  EXPECT_TRUE(said);
  ASSERT_FALSE(d.memory.empty());
  EXPECT_EQ(d.memory[0].device, -1);
  EXPECT_EQ(d.memory[0].peak, 12884901888);
  EXPECT_EQ(d.memory[0].capacity, 34359738368);
}

TEST(ResultsJson, PlanRowsBecomeBreakdownAndMemory) {
  const ReportData d = load_results_file(kData + "/plan.json");
  ASSERT_EQ(d.breakdown.size(), 2u);
  EXPECT_EQ(d.breakdown[0].compute_ms, 70.0);
  EXPECT_DOUBLE_EQ(d.breakdown[0].bubble_ms, 0.15 * 95.5);
  EXPECT_NEAR(d.breakdown[0].total_ms(), 95.5, 1e-9);
  EXPECT_EQ(d.breakdown[1].strategy, "dp=8 (peak-memory)");
  ASSERT_EQ(d.memory.size(), 2u);
  EXPECT_EQ(d.memory[0].device, -1);
  EXPECT_EQ(d.memory[1].peak, 96636764160);
  EXPECT_EQ(d.memory[1].capacity, 85899345920);
}

TEST(ResultsJson, SimulationOfAModel) {
  const ReportData d = load_results_file(kData + "/simulation.json");
  EXPECT_EQ(d.model, "gnmt");
  EXPECT_EQ(d.assumptions.cluster, "dgx-h100");
  ASSERT_EQ(d.breakdown.size(), 1u);
  EXPECT_EQ(d.breakdown[0].compute_ms, 39.0);
  EXPECT_EQ(d.breakdown[0].exposed_comm_ms, 1.5);
  EXPECT_EQ(d.breakdown[0].bubble_ms, 6.0);
  EXPECT_EQ(d.breakdown[0].idle_ms, 3.5);
  ASSERT_EQ(d.memory.size(), 2u);
  EXPECT_EQ(d.memory[1].breakdown.activations, 15032385536);
  // Throughput: the GPU count is the strategy's (2 x 2), not the simulated devices' (2 listed).
  ASSERT_EQ(d.throughput.size(), 1u);
  EXPECT_EQ(d.throughput[0].strategy, "dp=2,mp=2,schedule=gpipe,micro=4");
  EXPECT_EQ(d.throughput[0].cluster, "dgx-h100");
  EXPECT_EQ(d.throughput[0].gpus, 4);
  EXPECT_EQ(d.throughput[0].global_batch, 128);
  EXPECT_EQ(d.throughput[0].step_time_ms, 50.0);
  EXPECT_EQ(d.throughput[0].samples_per_s, 2560.0);
  EXPECT_TRUE(d.throughput[0].feasible);
  EXPECT_TRUE(d.assumptions.extra.empty());  // a file from before the data-loading option says nothing
}

TEST(ResultsJson, SimulationStatesItsDataLoadingAndStepOverhead) {
  nlohmann::json sim = parasim::read_json_file(kData + "/simulation.json");
  sim["step_overhead_ms"] = 0.0;
  sim["step_overhead"] = "0 ms (uncalibrated)";
  sim["data_loading"] = {{"modelled", false}, {"description", "not modelled (off)"}};
  const ReportData d = results_from_json(sim, "sim.json");
  using Row = std::pair<std::string, std::string>;
  EXPECT_EQ(d.assumptions.extra,
            (std::vector<Row>{{"step overhead", "0 ms (uncalibrated)"}, {"data loading", "not modelled (off)"}}));
}

TEST(ResultsJson, SimulationsSideBySideGiveThroughputRows) {
  nlohmann::json sim = parasim::read_json_file(kData + "/simulation.json");
  sim["strategy"] = "mp=4,tp=2,schedule=spectrain";
  sim["feasible"] = false;
  sim["throughput_samples_per_s"] = 1000.5;
  ReportData d = load_results_file(kData + "/simulation.json");
  d.merge(results_from_json(sim, "second.json"));
  ASSERT_EQ(d.throughput.size(), 2u);
  EXPECT_EQ(d.throughput[1].strategy, "mp=4,tp=2,schedule=spectrain (does not fit)");
  EXPECT_EQ(d.throughput[1].gpus, 8);
  EXPECT_FALSE(d.throughput[1].feasible);
  EXPECT_EQ(d.throughput[1].samples_per_s, 1000.5);
  // A degree that is not a plain number leaves the GPU count unknown rather than wrong.
  sim["strategy"] = "dp=x";
  EXPECT_EQ(results_from_json(sim, "third.json").throughput.at(0).gpus, 0);
  // Without a throughput field (older output) there is no row.
  sim.erase("throughput_samples_per_s");
  EXPECT_TRUE(results_from_json(sim, "fourth.json").throughput.empty());
  // A negative throughput is bad input, named by its JSON path.
  sim["throughput_samples_per_s"] = -1;
  try {
    results_from_json(sim, "fifth.json");
    ADD_FAILURE() << "no InputError";
  } catch (const parasim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("fifth.json: $.throughput_samples_per_s"), std::string::npos) << e.what();
  }
}

TEST(ResultsJson, StepResultJsonAndTraceMatchTheDirectAdapters) {
  const auto cluster = parasim::hardware::make_cluster_preset("dgx1-v100");
  const auto graph = fixtures::pipeline_step_graph();
  const auto step = parasim::simulator::Engine(cluster, {.record_timeline = true}).run(graph);

  const ReportData from_json =
      results_from_json(parasim::simulator::step_result_to_json(step, graph, cluster), "dir/pipeline.json");
  const ReportData direct = report_from_step("pipeline", graph, step);
  ASSERT_EQ(from_json.breakdown.size(), 1u);
  EXPECT_EQ(from_json.breakdown[0].strategy, "pipeline");  // named after the file
  EXPECT_EQ(from_json.breakdown[0].compute_ms, direct.breakdown[0].compute_ms);
  EXPECT_EQ(from_json.breakdown[0].exposed_comm_ms, direct.breakdown[0].exposed_comm_ms);
  EXPECT_EQ(from_json.breakdown[0].idle_ms, direct.breakdown[0].idle_ms);
  ASSERT_EQ(from_json.memory.size(), direct.memory.size());
  for (std::size_t i = 0; i < direct.memory.size(); ++i) {
    EXPECT_EQ(from_json.memory[i].peak, direct.memory[i].peak);
    EXPECT_EQ(from_json.memory[i].breakdown, direct.memory[i].breakdown);
    EXPECT_EQ(from_json.memory[i].capacity, direct.memory[i].capacity);
  }
  EXPECT_EQ(from_json.assumptions.cluster, "dgx1-v100");

  const std::string trace = parasim::simulator::chrome_trace_json(graph, cluster, step);
  const ReportData from_trace = results_from_json(parasim::parse_json_text(trace, "trace.json"), "trace.json");
  ASSERT_EQ(from_trace.gantt.size(), direct.gantt.size());
  for (std::size_t i = 0; i < direct.gantt.size(); ++i) {
    EXPECT_EQ(from_trace.gantt[i].device, direct.gantt[i].device) << i;
    EXPECT_EQ(from_trace.gantt[i].lane, direct.gantt[i].lane) << i;
    EXPECT_EQ(from_trace.gantt[i].start, direct.gantt[i].start) << i;
    EXPECT_EQ(from_trace.gantt[i].end, direct.gantt[i].end) << i;
    EXPECT_EQ(from_trace.gantt[i].category, direct.gantt[i].category) << i;
    EXPECT_EQ(from_trace.gantt[i].label, direct.gantt[i].label) << i;
  }
}

TEST(ResultsJson, BadInputNamesTheFileAndThePath) {
  std::string e = input_error("bad_validation.json");
  EXPECT_NE(e.find("bad_validation.json"), std::string::npos) << e;
  EXPECT_NE(e.find("$.rows[1].measured_ms"), std::string::npos) << e;
  EXPECT_NE(e.find("expected a number"), std::string::npos) << e;

  e = input_error("bad_bundle.json");
  EXPECT_NE(e.find("bad_bundle.json: $.projection[0].points[1].gpus"), std::string::npos) << e;

  e = input_error("bad_kind.json");
  EXPECT_NE(e.find("$.projection[0].kind"), std::string::npos) << e;
  EXPECT_NE(e.find("dp, best-hybrid, mp, other"), std::string::npos) << e;

  e = input_error("bad_projection.json");
  EXPECT_NE(e.find("bad_projection.json: $.rows[0]"), std::string::npos) << e;
  EXPECT_NE(e.find("dp_time_to_train_s"), std::string::npos) << e;

  e = input_error("bad_huge_bytes.json");  // bounded so that sums of byte counts cannot overflow
  EXPECT_NE(e.find("bad_huge_bytes.json: $.memory[0].peak_bytes"), std::string::npos) << e;

  e = input_error("unknown.json");
  EXPECT_NE(e.find("unknown.json: $: expected results parasim report understands"), std::string::npos) << e;
  EXPECT_NE(e.find("answer"), std::string::npos) << e;

  e = input_error("truncated.json");
  EXPECT_NE(e.find("truncated.json"), std::string::npos) << e;

  e = input_error("does_not_exist.json");
  EXPECT_NE(e.find("does_not_exist.json"), std::string::npos) << e;

  const nlohmann::json wrong_version = {{"schema", "parasim.results/2"}};
  try {
    results_from_json(wrong_version, "v2.json");
    FAIL();
  } catch (const parasim::InputError& err) {
    EXPECT_NE(std::string(err.what()).find("parasim.results/1"), std::string::npos) << err.what();
  }
}

TEST(ResultsJson, MergeCombinesFiles) {
  ReportData d = load_results_file(kData + "/projection.json");
  d.merge(load_results_file(kData + "/validate_suite.json"));
  d.merge(load_results_file(kData + "/plan.json"));
  EXPECT_EQ(d.scaling.size(), 4u);  // DP, best hybrid, M = 2, M = 4
  EXPECT_EQ(d.validation.size(), 2u);
  EXPECT_EQ(d.breakdown.size(), 2u);
  EXPECT_EQ(d.model, "inception_v3");              // the first file's
  EXPECT_EQ(d.assumptions.cluster, "dgx1-v100");
}

}  // namespace
