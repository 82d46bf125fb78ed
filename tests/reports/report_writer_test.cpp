// The report folder end to end: rendered PNG/SVG when gnuplot is installed, CSV + scripts +
// tables and an install hint when it is not, identical bytes on a second run.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "parasim/common/interrupt.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/reports/report_writer.hpp"
#include "parasim/reports/results_json.hpp"
#include "sample_data.hpp"
#include "xml_check.hpp"

namespace {

namespace fs = std::filesystem;
using namespace parasim::reports;

const char* kStems[] = {"time_to_train", "speedup", "throughput", "breakdown", "gantt", "validation", "memory"};

/// A fresh folder per test, removed afterwards (set PARASIM_KEEP_REPORTS=1 to look at it).
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(fs::temp_directory_path() / ("parasim_reports_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
  }
  ~TempDir() {
    if (std::getenv("PARASIM_KEEP_REPORTS") == nullptr) fs::remove_all(path_);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string slurp(const fs::path& p) { return parasim::read_text_file(p); }

bool has_gnuplot() { return !find_gnuplot({}).empty(); }

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(ReportWriter, RendersEveryPlotWithGnuplot) {
  if (!has_gnuplot()) GTEST_SKIP() << "gnuplot not installed (CI installs gnuplot-nox)";
  TempDir dir("render");
  const ReportOutcome out = write_report(fixtures::sample_report(), dir.path());
  EXPECT_EQ(out.rendered.size(), 7u);
  for (const char* stem : kStems) {
    SCOPED_TRACE(stem);
    const fs::path png = dir.path() / (std::string(stem) + ".png");
    ASSERT_TRUE(fs::exists(png));
    const std::string bytes = slurp(png);
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    EXPECT_GT(bytes.size(), 5u * 1024);
    EXPECT_LT(bytes.size(), 2u * 1024 * 1024);
    const std::string svg = slurp(dir.path() / (std::string(stem) + ".svg"));
    EXPECT_NE(svg.find("<svg"), std::string::npos);
    EXPECT_EQ(fixtures::xml_problem(svg), "");
    EXPECT_TRUE(fs::exists(dir.path() / (std::string(stem) + ".gp")));
  }
  // No temporary files left behind.
  for (const auto& e : fs::directory_iterator(dir.path()))
    EXPECT_FALSE(e.path().filename().string().starts_with(".")) << e.path();

  const std::string html = slurp(dir.path() / "index.html");
  EXPECT_EQ(fixtures::xml_problem(html), "");
  EXPECT_EQ(count(html, "<svg"), 7u);  // every plot inline, nothing by reference
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  for (const char* stem : kStems) {
    EXPECT_NE(html.find("<section id=\"" + std::string(stem) + "\">"), std::string::npos) << stem;
    EXPECT_NE(html.find("id=\"" + std::string(stem) + "-gnuplot_canvas\""), std::string::npos) << stem;
  }
  // Ids are unique across the inlined figures.
  EXPECT_EQ(count(html, "id='time_to_train-gpPt0'"), 1u);
  EXPECT_EQ(count(html, "id='gpPt0'"), 0u);

  const std::string md = slurp(dir.path() / "summary.md");
  for (const char* stem : kStems) EXPECT_NE(md.find("](" + std::string(stem) + ".png)"), std::string::npos) << stem;
}

TEST(ReportWriter, HtmlHasTheAssumptionsAndEscapesText) {
  TempDir dir("assumptions");
  write_report(fixtures::sample_report(), dir.path(), {.render = false});
  const std::string html = slurp(dir.path() / "index.html");
  EXPECT_EQ(fixtures::xml_problem(html), "");
  EXPECT_NE(html.find("<section id=\"assumptions\">"), std::string::npos);
  for (const char* row :
       {"cost source", "statistical efficiency model", "efficiency model source", "cluster", "dataset"})
    EXPECT_NE(html.find("<td>" + std::string(row) + "</td>"), std::string::npos) << row;
  EXPECT_NE(html.find("roofline (V100-SXM2-32GB spec sheet"), std::string::npos);
  EXPECT_NE(html.find("McCandlish et al. 2018 &lt;An Empirical Model of Large-Batch Training&gt; &amp; Goyal 2017"),
            std::string::npos);
  EXPECT_NE(html.find("vgg16 &quot;quoted&quot; &amp; &lt;tagged&gt; (cpu)"), std::string::npos);
  EXPECT_EQ(html.find("<tagged>"), std::string::npos);
}

TEST(ReportWriter, WithoutGnuplotStillWritesDataScriptsAndTables) {
  TempDir dir("no_gnuplot");
  const ReportOutcome out =
      write_report(fixtures::sample_report(), dir.path(), {.gnuplot = {.binary = "/nonexistent/bin/gnuplot"}});
  EXPECT_TRUE(out.rendered.empty());
  ASSERT_FALSE(out.notes.empty());
  EXPECT_NE(out.notes[0].find("apt-get install gnuplot-nox"), std::string::npos) << out.notes[0];
  EXPECT_NE(out.notes[0].find("/nonexistent/bin/gnuplot"), std::string::npos) << out.notes[0];
  for (const char* stem : kStems) {
    EXPECT_TRUE(fs::exists(dir.path() / (std::string(stem) + ".gp"))) << stem;
    EXPECT_FALSE(fs::exists(dir.path() / (std::string(stem) + ".png"))) << stem;
  }
  for (const char* csv : {"scaling.csv", "breakdown.csv", "gantt.csv", "validation.csv", "memory.csv"})
    EXPECT_TRUE(fs::exists(dir.path() / csv)) << csv;
  const std::string html = slurp(dir.path() / "index.html");
  EXPECT_EQ(fixtures::xml_problem(html), "");
  EXPECT_NE(html.find("apt-get install gnuplot-nox"), std::string::npos);
  EXPECT_NE(html.find("<table>"), std::string::npos);
  EXPECT_EQ(html.find("<svg"), std::string::npos);
  EXPECT_NE(slurp(dir.path() / "summary.md").find("apt-get install gnuplot-nox"), std::string::npos);
}

TEST(ReportWriter, SameInputSameBytes) {
  TempDir a("determinism_a"), b("determinism_b");
  write_report(fixtures::sample_report(), a.path());
  write_report(fixtures::sample_report(), b.path());
  std::map<std::string, std::string> first;
  for (const auto& e : fs::directory_iterator(a.path())) first[e.path().filename().string()] = slurp(e.path());
  std::size_t compared = 0;
  for (const auto& e : fs::directory_iterator(b.path())) {
    const std::string name = e.path().filename().string();
    ASSERT_TRUE(first.contains(name)) << name;
    EXPECT_TRUE(first[name] == slurp(e.path())) << name << " differs between two runs";
    ++compared;
  }
  EXPECT_EQ(compared, first.size());
  EXPECT_GE(compared, 15u);
}

TEST(ReportWriter, TheCallersLocaleDoesNotReachGnuplot) {
  if (!has_gnuplot()) GTEST_SKIP() << "gnuplot not installed (CI installs gnuplot-nox)";
  TempDir a("locale_utf8"), b("locale_c");
  const ReportData d = fixtures::sample_report();
  const char* saved = std::getenv("LC_ALL");
  const std::string before = saved != nullptr ? saved : "";
  ::setenv("LC_ALL", "C.UTF-8", 1);
  const ReportOutcome utf8 = write_report(d, a.path());
  // Under LC_ALL=C gnuplot 5.4 warns "iconv failed to convert degree sign" for the scripts'
  // `set encoding utf8`, and that warning would land in the report's notes.
  ::setenv("LC_ALL", "C", 1);
  const ReportOutcome c = write_report(d, b.path());
  if (saved != nullptr) ::setenv("LC_ALL", before.c_str(), 1);
  else ::unsetenv("LC_ALL");
  EXPECT_EQ(c.notes, utf8.notes);
  for (const std::string& note : c.notes) EXPECT_EQ(note.find("iconv"), std::string::npos) << note;
  for (const char* file : {"index.html", "summary.md", "throughput.svg", "throughput.png"})
    EXPECT_TRUE(slurp(a.path() / file) == slurp(b.path() / file)) << file << " depends on the locale";
}

TEST(ReportWriter, ResultsJsonRedrawsTheSameReport) {
  TempDir a("redraw_a"), b("redraw_b");
  write_report(fixtures::sample_report(), a.path(), {.render = false});
  const ReportData again = load_results_file(a.path() / "results.json");
  write_report(again, b.path(), {.render = false});
  for (const char* name : {"results.json", "index.html", "summary.md", "scaling.csv", "gantt.csv", "memory.csv"})
    EXPECT_TRUE(slurp(a.path() / name) == slurp(b.path() / name)) << name;
}

TEST(ReportWriter, FailingGnuplotIsARuntimeErrorWithItsOutput) {
  TempDir dir("failing");
  fs::create_directories(dir.path());
  const fs::path fake = dir.path() / "fake-gnuplot";
  {
    std::ofstream f(fake);
    f << "#!/bin/sh\necho 'line 7: undefined variable: oops' >&2\nexit 1\n";
  }
  fs::permissions(fake, fs::perms::owner_all);
  try {
    write_report(fixtures::sample_report(), dir.path() / "out", {.gnuplot = {.binary = fake.string()}});
    FAIL() << "no RuntimeError";
  } catch (const parasim::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("time_to_train.gp"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("undefined variable: oops"), std::string::npos) << e.what();
  }
}

TEST(ReportWriter, HungGnuplotIsKilledAtTheTimeout) {
  TempDir dir("hung");
  fs::create_directories(dir.path());
  const fs::path fake = dir.path() / "slow-gnuplot";
  {
    std::ofstream f(fake);
    f << "#!/bin/sh\nexec sleep 30\n";
  }
  fs::permissions(fake, fs::perms::owner_all);
  ReportData d;
  d.validation.push_back({"a", 1, 1});
  try {
    write_report(d, dir.path() / "out",
                 {.gnuplot = {.binary = fake.string(), .timeout = std::chrono::milliseconds(200)}});
    FAIL() << "no RuntimeError";
  } catch (const parasim::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("did not finish"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir.path() / "out"));  // a failed report publishes no folder
}

TEST(ReportWriter, StalePicturesOfAnEarlierRunAreRemoved) {
  TempDir dir("stale");
  fs::create_directories(dir.path());
  parasim::write_file_atomic(dir.path() / "results.json", "{}");  // an earlier report
  parasim::write_file_atomic(dir.path() / "memory.png", "old");
  ReportData d;
  d.validation.push_back({"a", 1, 1});
  write_report(d, dir.path(), {.render = false});
  EXPECT_FALSE(fs::exists(dir.path() / "memory.png"));
  EXPECT_TRUE(fs::exists(dir.path() / "index.html"));
}

/// Names in `dir`, sorted: what a failed report must not leave behind (".r.tmp.<pid>" and the like).
std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ReportWriter, InterruptedReportPublishesNothingAndKeepsTheOldFolder) {
  TempDir dir("interrupted");
  fs::create_directories(dir.path());
  ReportData d;
  d.validation.push_back({"a", 1, 1});
  write_report(d, dir.path() / "r", {.render = false});
  const std::string before = slurp(dir.path() / "r" / "index.html");
  d.validation.push_back({"b", 2, 3});
  parasim::request_interrupt();
  EXPECT_THROW(write_report(d, dir.path() / "r", {.render = false}), parasim::Interrupted);
  EXPECT_THROW(write_report(d, dir.path() / "new", {.render = false}), parasim::Interrupted);
  parasim::reset_interrupt();
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"r"});  // no "new", no temporary sibling
  EXPECT_EQ(slurp(dir.path() / "r" / "index.html"), before);
  // Not interrupted: the new report replaces the old one.
  write_report(d, dir.path() / "r", {.render = false});
  EXPECT_NE(slurp(dir.path() / "r" / "index.html"), before);
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"r"});
}

// A report into a folder that holds other things (its README, the runs it was drawn from) replaces
// only the report's own files.
TEST(ReportWriter, KeepsTheOtherFilesOfItsFolder) {
  TempDir dir("foreign");
  fs::create_directories(dir.path() / "runs");
  parasim::write_file_atomic(dir.path() / "README.md", "mine");
  parasim::write_file_atomic(dir.path() / "runs" / "1.json", "{}");
  parasim::write_file_atomic(dir.path() / "notes.csv", "a,b");
  ReportData d;
  d.validation.push_back({"a", 1, 1});
  write_report(d, dir.path(), {.render = false});
  EXPECT_EQ(slurp(dir.path() / "README.md"), "mine");
  EXPECT_EQ(slurp(dir.path() / "runs" / "1.json"), "{}");
  EXPECT_EQ(slurp(dir.path() / "notes.csv"), "a,b");
  EXPECT_TRUE(fs::exists(dir.path() / "index.html"));
  // Again, interrupted: the first report stays as it was, beside the same other files.
  const std::string before = slurp(dir.path() / "index.html");
  d.validation.push_back({"b", 2, 3});
  parasim::request_interrupt();
  EXPECT_THROW(write_report(d, dir.path(), {.render = false}), parasim::Interrupted);
  parasim::reset_interrupt();
  EXPECT_EQ(slurp(dir.path() / "index.html"), before);
  EXPECT_EQ(names_in(dir.path()),
            (std::vector<std::string>{"README.md", "index.html", "notes.csv", "results.json", "runs", "summary.md",
                                      "validation.csv", "validation.gp"}));
  // A file where the folder should be is refused.
  parasim::write_file_atomic(dir.path() / "plain", "x");
  EXPECT_THROW(write_report(d, dir.path() / "plain", {.render = false}), parasim::InputError);
}

}  // namespace
