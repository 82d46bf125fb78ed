#include "parasim/common/progress.hpp"

#include <cstdio>
#include <unistd.h>

namespace parasim {

namespace {
std::atomic<int> g_forced{-1};  // -1: decide by isatty; 0 off; 1 on
}

void ProgressBar::set_global_enabled(bool on) { g_forced = on ? 1 : 0; }

ProgressBar::ProgressBar(std::string label, std::size_t total)
    : label_(std::move(label)), total_(total),
      enabled_(g_forced >= 0 ? g_forced == 1 : ::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::advance(std::size_t n) {
  const std::size_t done = done_.fetch_add(n) + n;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  if (now - last_draw_ < std::chrono::milliseconds(100) && done < total_) return;
  last_draw_ = now;
  draw(done);
}

void ProgressBar::draw(std::size_t done) {
  const double frac = total_ ? static_cast<double>(done) / static_cast<double>(total_) : 1.0;
  const int width = 30;
  const int filled = static_cast<int>(frac * width);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double eta = frac > 0 ? elapsed * (1.0 - frac) / frac : 0.0;
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(width, '.');
  std::fprintf(stderr, "\r%s [%s] %zu/%zu  %.1fs elapsed, ETA %.1fs ", label_.c_str(), bar.c_str(), done, total_,
               elapsed, eta);
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (!enabled_ || finished_) return;
  std::lock_guard lock(mu_);
  finished_ = true;
  draw(done_.load());
  std::fprintf(stderr, "\n");
}

}  // namespace parasim
