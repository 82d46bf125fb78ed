#include "parasim/common/progress.hpp"

#include <algorithm>
#include <cmath>
#include <unistd.h>

#include "parasim/common/interrupt.hpp"

namespace parasim {

namespace {

std::atomic<int> g_forced{-1};  // -1: decide by isatty; 0 off; 1 on

bool decide(std::FILE* out) {
  const int forced = g_forced.load();
  if (forced >= 0) return forced == 1;
  return out != nullptr && ::isatty(::fileno(out)) == 1;
}

}  // namespace

double progress_eta_seconds(std::size_t done, std::size_t total, double elapsed_s) {
  if (total == 0 || done >= total) return 0.0;
  if (done == 0 || !(elapsed_s >= 0)) return -1.0;
  return elapsed_s * static_cast<double>(total - done) / static_cast<double>(done);
}

std::string format_progress_duration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "?";
  const auto s = static_cast<long long>(std::min(seconds, 359'999'999.0) + 0.5);
  char buf[48];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  return buf;
}

std::string render_progress_line(std::string_view label, std::size_t done, std::size_t total, double elapsed_s) {
  constexpr std::size_t kWidth = 30;
  done = std::min(done, total);
  const double frac = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const auto filled = std::min(kWidth, static_cast<std::size_t>(frac * static_cast<double>(kWidth)));
  std::string bar(filled, '#');
  bar.resize(kWidth, '.');
  char counts[96];
  std::snprintf(counts, sizeof counts, "] %zu/%zu %3d%%  ", done, total, static_cast<int>(frac * 100.0));
  std::string line(label);
  line += " [";
  line += bar;
  line += counts;
  line += format_progress_duration(elapsed_s);
  line += " elapsed";
  if (done < total) {
    line += ", ETA ";
    line += format_progress_duration(progress_eta_seconds(done, total, elapsed_s));
  }
  return line;
}

void ProgressBar::set_global_enabled(bool on) { g_forced = on ? 1 : 0; }
void ProgressBar::reset_global_enabled() { g_forced = -1; }
bool ProgressBar::would_draw() { return decide(stderr); }

ProgressBar::ProgressBar(std::string label, std::size_t total) : ProgressBar(std::move(label), total, stderr) {}

ProgressBar::ProgressBar(std::string label, std::size_t total, std::FILE* out)
    : label_(std::move(label)), total_(total), out_(out), enabled_(decide(out)),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::advance(std::size_t n) {
  interrupt_test_hook();
  const std::size_t done = done_.fetch_add(n) + n;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  if (finished_ || (now - last_draw_ < std::chrono::milliseconds(100) && done < total_)) return;
  last_draw_ = now;
  draw(done);
}

void ProgressBar::draw(std::size_t done) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line = render_progress_line(label_, done, total_, elapsed);
  const std::size_t width = line.size();
  if (width < last_width_) line.append(last_width_ - width, ' ');  // wipe the longer line before
  last_width_ = width;
  std::fprintf(out_, "\r%s", line.c_str());
  std::fflush(out_);
}

void ProgressBar::finish() {
  if (!enabled_) return;
  std::lock_guard lock(mu_);
  if (finished_) return;
  finished_ = true;
  draw(done_.load());
  std::fputc('\n', out_);
  std::fflush(out_);
}

}  // namespace parasim
