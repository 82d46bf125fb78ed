#include "cli_output.hpp"

#include <algorithm>
#include <iostream>

#include "parasim/common/error.hpp"
#include "parasim/common/interrupt.hpp"
#include "parasim/common/progress.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/mpi/world.hpp"

namespace parasim::cli {

OutputFile::OutputFile(std::string path, bool echo) : path_(std::move(path)), echo_(echo) {
  if (!path_.empty()) saved_ = std::cout.rdbuf(captured_.rdbuf());
}

OutputFile::~OutputFile() {
  if (saved_) std::cout.rdbuf(saved_);
}

void OutputFile::commit() {
  if (!saved_) return;
  std::cout.rdbuf(saved_);
  saved_ = nullptr;
  // Under MPI only rank 0 writes: the other ranks computed a share of the same output.
  if (const mpi::World* w = mpi::World::current(); w != nullptr && !w->root()) return;
  const std::string text = captured_.str();
  write_file_atomic(path_, text);
  if (echo_) std::cout << text;
  std::cerr << "wrote " << path_ << "\n";
}

SimulationProgress::SimulationProgress(std::string label)
    : label_(std::move(label)), start_(std::chrono::steady_clock::now()) {}

SimulationProgress::~SimulationProgress() = default;

void SimulationProgress::update(std::size_t done, std::size_t total) {
  interrupt_test_hook();
  throw_if_interrupted();
  if (!bar_ && std::chrono::steady_clock::now() - start_ > std::chrono::seconds(1) && ProgressBar::would_draw())
    bar_ = std::make_unique<ProgressBar>(label_, total);
  total_ = total;
  if (bar_ && done > shown_) {
    bar_->advance(done - shown_);
    shown_ = done;
  }
}

void SimulationProgress::finish() {
  if (!bar_) return;
  if (total_ > shown_) bar_->advance(total_ - shown_);  // the run ended: every task is done
  shown_ = total_;
  bar_->finish();
}

CLI::Option* add_output_option(CLI::App& cmd, std::string& path) {
  return cmd.add_option("-o,--output", path,
                        "Also write the output (table, JSON or CSV) to this file; with --json/--csv "
                        "only to the file");
}

namespace {

std::string long_name(const CLI::Option& o) {
  const auto& names = o.get_lnames();
  return names.empty() ? o.get_name() : "--" + names.front();
}

}  // namespace

void refuse_options(const CLI::App& cmd, const std::vector<std::string>& refused, const std::string& mode) {
  for (const CLI::Option* o : cmd.get_options()) {
    if (o->count() == 0) continue;
    const std::string name = long_name(*o);
    if (std::find(refused.begin(), refused.end(), name) != refused.end())
      throw InputError(name + " does not apply to " + mode + ", which would ignore it; leave it out");
  }
}

void refuse_options_except(const CLI::App& cmd, const std::vector<std::string>& allowed, const std::string& mode) {
  for (const CLI::Option* o : cmd.get_options()) {
    if (o->count() == 0) continue;
    const std::string name = long_name(*o);
    if (name == "--help" || name == "--no-progress") continue;
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end())
      throw InputError(name + " does not apply to " + mode + ", which would ignore it; leave it out");
  }
}

}  // namespace parasim::cli
