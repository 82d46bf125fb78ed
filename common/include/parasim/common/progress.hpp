// A progress bar with ETA on stderr, shown only when stderr is a terminal (so logs and CI
// output stay clean). Thread-safe: workers call advance() from any thread.
//
// Example:
//   ProgressBar bar("plan", configs.size());
//   for (...) { ...; bar.advance(); }
//   bar.finish();
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace parasim {

class ProgressBar {
 public:
  ProgressBar(std::string label, std::size_t total);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void advance(std::size_t n = 1);
  void finish();
  bool enabled() const { return enabled_; }
  /// Force on/off (tests; `--no-progress`). By default: on iff stderr is a TTY.
  static void set_global_enabled(bool on);

 private:
  void draw(std::size_t done);
  std::string label_;
  std::size_t total_;
  std::atomic<std::size_t> done_{0};
  bool enabled_;
  bool finished_ = false;
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace parasim
