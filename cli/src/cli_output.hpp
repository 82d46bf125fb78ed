// What every command shares about its output and its options: `-o FILE` (the command's stdout
// also written to FILE, atomically: a failed command leaves no file) and refusing options that
// the chosen mode would silently ignore.
//
// Example:
//   cmd->callback([o, cmd] {
//     refuse_options_except(*cmd, {"--from", "--output"}, "report --from");
//     OutputFile out(o->output, !o->json);   // captures std::cout until commit()
//     run(*o);
//     out.commit();
//   });
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace parasim {
class ProgressBar;
}

namespace parasim::cli {

/// While alive (and `path` is not empty), what the command prints on std::cout is captured;
/// commit() writes it to `path` (temp file + rename) and, when `echo` (tables, not JSON/CSV),
/// prints it on std::cout as well. Destroyed without commit() (the command threw), nothing is
/// written and the captured text is dropped.
class OutputFile {
 public:
  OutputFile(std::string path, bool echo);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  void commit();

 private:
  std::string path_;
  bool echo_ = false;
  std::ostringstream captured_;
  std::streambuf* saved_ = nullptr;
};

/// A simulation's progress (EngineOptions::on_progress): tasks done of the task graph's, drawn as
/// a bar on stderr once the run has taken more than a second (and bars draw at all); and where
/// Ctrl-C ends the run (throws Interrupted).
///   SimulationProgress progress("simulate");
///   options.on_progress = [&progress](std::size_t d, std::size_t t) { progress.update(d, t); };
class SimulationProgress {
 public:
  explicit SimulationProgress(std::string label);
  ~SimulationProgress();
  SimulationProgress(const SimulationProgress&) = delete;
  SimulationProgress& operator=(const SimulationProgress&) = delete;
  void update(std::size_t done, std::size_t total);
  void finish();

 private:
  std::string label_;
  std::chrono::steady_clock::time_point start_;
  std::unique_ptr<ProgressBar> bar_;
  std::size_t shown_ = 0;
  std::size_t total_ = 0;
};

/// --data-loading's help, the same on every command that takes it.
inline constexpr const char* kDataLoadingHelp =
    "host data loading: off (default), or sample_ms=MS|samples_per_s=RATE[,workers=N]: time per sample (or "
    "samples/s per worker) and DataLoader workers (0: loaded in the training process, paid in full; >= 1: "
    "prefetched, the step pays max(0, load - step))";

/// Adds `-o,--output FILE` for a command whose output goes to stdout.
CLI::Option* add_output_option(CLI::App& cmd, std::string& path);

/// InputError naming the first option given on the command line that is in `refused`, saying
/// that `mode` does not use it.
void refuse_options(const CLI::App& cmd, const std::vector<std::string>& refused, const std::string& mode);
/// Same, for every option given that is not in `allowed` (long names, e.g. "--from").
void refuse_options_except(const CLI::App& cmd, const std::vector<std::string>& allowed, const std::string& mode);

}  // namespace parasim::cli
