// CSV: numbers read back exactly, text is quoted per RFC 4180, and every plot's CSV repeats
// its input numbers exactly.
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "parasim/reports/csv.hpp"
#include "parasim/reports/plots.hpp"
#include "sample_data.hpp"

namespace {

using namespace parasim::reports;

double parse_double(const std::string& s) {
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  EXPECT_EQ(r.ptr, s.data() + s.size()) << s;
  return v;
}

std::string csv_of(const std::optional<PlotSpec>& p, const std::string& name) {
  EXPECT_TRUE(p.has_value());
  for (const PlotFile& f : p->data)
    if (f.name == name) return f.content;
  ADD_FAILURE() << "no " << name;
  return "";
}

/// Rows of a CSV as header-name -> text.
std::vector<std::map<std::string, std::string>> records(const std::string& text) {
  const auto rows = parse_csv(text);
  std::vector<std::map<std::string, std::string>> out;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    EXPECT_EQ(rows[r].size(), rows[0].size()) << "row " << r;
    std::map<std::string, std::string> rec;
    for (std::size_t c = 0; c < rows[0].size() && c < rows[r].size(); ++c) rec[rows[0][c]] = rows[r][c];
    out.push_back(std::move(rec));
  }
  return out;
}

TEST(Csv, NumbersRoundTripExactly) {
  for (double v : {0.1, 1.0 / 3.0, 123456.789, 1e-300, 6.02214076e23, -0.0, 3.6e5 + 0.123,
                   std::numeric_limits<double>::max(), std::numeric_limits<double>::denorm_min()})
    EXPECT_EQ(parse_double(format_number(v)), v) << format_number(v);
  EXPECT_EQ(format_number(0.1), "0.1");
  EXPECT_EQ(format_number(42), "42");
  EXPECT_EQ(format_number(std::nan("")), "nan");
}

TEST(Csv, TextIsQuotedOnlyWhenNeeded) {
  EXPECT_EQ(csv_escape("dp=8"), "dp=8");
  EXPECT_EQ(csv_escape("dp=4,mp=2"), "\"dp=4,mp=2\"");
  EXPECT_EQ(csv_escape("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_escape(" padded"), "\" padded\"");
  CsvTable t({"a", "b"});
  t.add_row({CsvCell(std::int64_t{1}), CsvCell("x,\"y\"\nz")});
  const auto back = parse_csv(t.str());
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1][1], "x,\"y\"\nz");
  EXPECT_THROW(t.add_row({CsvCell(1)}), std::logic_error);
}

TEST(Csv, ScalingCsvRepeatsTheInputExactly) {
  const ReportData d = fixtures::sample_report();
  const auto rec = records(csv_of(time_to_train_plot(d), "scaling.csv"));
  std::size_t k = 0;
  for (std::size_t s = 0; s < d.scaling.size(); ++s)
    for (const ScalingPoint& p : d.scaling[s].points) {  // the sample lists points by GPU count already
      ASSERT_LT(k, rec.size());
      EXPECT_EQ(rec[k].at("series"), d.scaling[s].name);
      EXPECT_EQ(rec[k].at("series_index"), std::to_string(s));
      EXPECT_EQ(std::stoll(rec[k].at("gpus")), p.gpus);
      EXPECT_EQ(parse_double(rec[k].at("time_to_train_s")), p.time_to_train_s);
      EXPECT_EQ(parse_double(rec[k].at("step_time_ms")), p.step_time_ms);
      EXPECT_EQ(std::stoll(rec[k].at("global_batch")), p.global_batch);
      EXPECT_EQ(parse_double(rec[k].at("epochs")), p.epochs);
      EXPECT_EQ(rec[k].at("strategy"), p.strategy);
      ++k;
    }
  EXPECT_EQ(k, rec.size());
  EXPECT_EQ(parse_double(rec[0].at("speedup")), 1.0);  // the one-GPU point is its own baseline
}

TEST(Csv, BreakdownValidationAndMemoryCsvsRepeatTheInputExactly) {
  const ReportData d = fixtures::sample_report();
  const auto b = records(csv_of(breakdown_plot(d), "breakdown.csv"));
  ASSERT_EQ(b.size(), d.breakdown.size());
  for (std::size_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(b[i].at("strategy"), d.breakdown[i].strategy);
    EXPECT_EQ(parse_double(b[i].at("compute_ms")), d.breakdown[i].compute_ms);
    EXPECT_EQ(parse_double(b[i].at("exposed_comm_ms")), d.breakdown[i].exposed_comm_ms);
    EXPECT_EQ(parse_double(b[i].at("bubble_ms")), d.breakdown[i].bubble_ms);
    EXPECT_EQ(parse_double(b[i].at("idle_ms")), d.breakdown[i].idle_ms);
  }
  const auto v = records(csv_of(validation_plot(d), "validation.csv"));
  ASSERT_EQ(v.size(), d.validation.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(v[i].at("label"), d.validation[i].label);
    EXPECT_EQ(parse_double(v[i].at("projected_ms")), d.validation[i].projected_ms);
    EXPECT_EQ(parse_double(v[i].at("measured_ms")), d.validation[i].measured_ms);
    EXPECT_EQ(parse_double(v[i].at("error_pct")), d.validation[i].error_pct());
  }
  // Memory: identical neighbours share a row; expanding the device ranges gives back every input row.
  const auto m = records(csv_of(memory_plot(d), "memory.csv"));
  std::size_t row = 0;
  for (const auto& r : m)
    for (long dev = std::stol(r.at("first_device")); dev <= std::stol(r.at("last_device")); ++dev, ++row) {
      ASSERT_LT(row, d.memory.size());
      const MemoryRow& in = d.memory[row];
      EXPECT_EQ(r.at("strategy"), in.strategy);
      EXPECT_EQ(dev, in.device);
      EXPECT_EQ(std::stoll(r.at("peak_bytes")), in.peak);
      EXPECT_EQ(std::stoll(r.at("capacity_bytes")), in.capacity);
      EXPECT_EQ(std::stoll(r.at("activations_bytes")), in.breakdown.activations);
      EXPECT_EQ(std::stoll(r.at("optimizer_bytes")), in.breakdown.optimizer);
    }
  EXPECT_EQ(row, d.memory.size());
  EXPECT_LT(m.size(), d.memory.size());  // the eight identical dp=8 devices collapsed
}

TEST(Csv, GanttCsvKeepsEveryBarInNanoseconds) {
  const ReportData d = fixtures::sample_report();
  const auto g = records(csv_of(gantt_plot(d), "gantt.csv"));
  ASSERT_EQ(g.size(), d.gantt.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(std::stoll(g[i].at("start_ns")), d.gantt[i].start);
    EXPECT_EQ(std::stoll(g[i].at("end_ns")), d.gantt[i].end);
    EXPECT_EQ(std::stoi(g[i].at("device")), d.gantt[i].device);
    EXPECT_EQ(g[i].at("category"), to_string(d.gantt[i].category));
    EXPECT_EQ(g[i].at("label"), d.gantt[i].label);
  }
}

}  // namespace
