// The usage examples from the reports headers, compiled and run.
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "parasim/common/json_io.hpp"
#include "parasim/reports/csv.hpp"
#include "parasim/reports/report_data.hpp"
#include "parasim/reports/report_writer.hpp"
#include "parasim/reports/results_json.hpp"

namespace {

namespace fs = std::filesystem;

TEST(Example, ReportDataHeaderExampleWritesAReport) {
  const fs::path out = fs::temp_directory_path() / ("parasim_reports_example_" + std::to_string(::getpid()));
  fs::remove_all(out);
  {
    using namespace parasim::reports;
    ReportData d;
    d.title = "Inception-V3 on dgx1-v100";
    d.assumptions.cluster = "dgx1-v100 (8 x V100-SXM2-32GB per node)";
    d.scaling.push_back({.name = "DP only", .kind = SeriesKind::DataParallel,
                         .points = {{.gpus = 1, .time_to_train_s = 36'000, .step_time_ms = 120},
                                    {.gpus = 8, .time_to_train_s = 5'400, .step_time_ms = 140}}});
    d.breakdown.push_back({.strategy = "dp=8", .compute_ms = 100, .exposed_comm_ms = 30, .idle_ms = 10});
    write_report(d, out);
  }
  for (const char* f : {"index.html", "summary.md", "results.json", "scaling.csv", "time_to_train.gp", "breakdown.gp"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  fs::remove_all(out);
}

TEST(Example, CsvHeaderExample) {
  using namespace parasim::reports;
  CsvTable t({"gpus", "time_to_train_s", "series"});
  t.add_row({CsvCell(8), CsvCell(5400.25), CsvCell("DP only")});
  EXPECT_EQ(t.str(), "gpus,time_to_train_s,series\n8,5400.25,DP only\n");
}

}  // namespace
