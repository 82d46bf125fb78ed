// The progress bar: its line (bar, counts, elapsed, ETA), and that it draws only on a terminal.
#include "parasim/common/progress.hpp"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace parasim {
namespace {

/// Everything written to a FILE* that is a plain temporary file (not a terminal).
std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) out += static_cast<char>(c);
  return out;
}

/// Restores the default (isatty) decision after a test that forces it.
struct DefaultDecision {
  DefaultDecision() { ProgressBar::reset_global_enabled(); }
  ~DefaultDecision() { ProgressBar::reset_global_enabled(); }
};

TEST(ProgressEta, ExtrapolatesTheRateSoFar) {
  EXPECT_DOUBLE_EQ(progress_eta_seconds(25, 100, 10.0), 30.0);  // a quarter in 10 s: 30 s to go
  EXPECT_DOUBLE_EQ(progress_eta_seconds(50, 100, 8.0), 8.0);
  EXPECT_DOUBLE_EQ(progress_eta_seconds(100, 100, 8.0), 0.0);   // done
  EXPECT_DOUBLE_EQ(progress_eta_seconds(0, 0, 3.0), 0.0);       // nothing to do is done
  EXPECT_LT(progress_eta_seconds(0, 100, 3.0), 0.0);            // no rate yet: unknown
}

TEST(ProgressEta, FormatsDurations) {
  EXPECT_EQ(format_progress_duration(0), "0:00");
  EXPECT_EQ(format_progress_duration(7.4), "0:07");
  EXPECT_EQ(format_progress_duration(754), "12:34");
  EXPECT_EQ(format_progress_duration(3723), "1:02:03");
  EXPECT_EQ(format_progress_duration(-1), "?");
}

TEST(ProgressLine, ShowsBarCountsPercentElapsedAndEta) {
  EXPECT_EQ(render_progress_line("plan", 120, 360, 4.0),
            "plan [##########....................] 120/360  33%  0:04 elapsed, ETA 0:08");
  EXPECT_EQ(render_progress_line("project 8 GPUs", 0, 10, 0.2),
            "project 8 GPUs [..............................] 0/10   0%  0:00 elapsed, ETA ?");
}

TEST(ProgressLine, CompleteLineHasNoEta) {
  EXPECT_EQ(render_progress_line("x", 5, 5, 61.0), "x [##############################] 5/5 100%  1:01 elapsed");
  EXPECT_EQ(render_progress_line("x", 9, 5, 1.0), "x [##############################] 5/5 100%  0:01 elapsed");
  EXPECT_EQ(render_progress_line("x", 0, 0, 1.0), "x [##############################] 0/0 100%  0:01 elapsed");
}

TEST(ProgressBar, DrawsNothingWhenTheStreamIsNotATerminal) {
  DefaultDecision guard;
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressBar bar("plan", 3, f);
    EXPECT_FALSE(bar.enabled());
    bar.advance();
    bar.advance(2);
    bar.finish();
  }
  EXPECT_EQ(contents(f), "");
  std::fclose(f);
}

TEST(ProgressBar, ForcedOnDrawsTheFinalStateOnceAndEndsTheLine) {
  DefaultDecision guard;
  ProgressBar::set_global_enabled(true);
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressBar bar("sim", 4, f);
    ASSERT_TRUE(bar.enabled());
    for (int i = 0; i < 4; ++i) bar.advance();  // the last advance completes: drawn at once
    bar.finish();
    bar.finish();  // a second finish (and the destructor) adds nothing
  }
  const std::string out = contents(f);
  EXPECT_NE(out.find("\rsim [##############################] 4/4 100%"), std::string::npos) << out;
  EXPECT_EQ(out.back(), '\n');
  EXPECT_EQ(out.find('\n'), out.size() - 1) << out;
  std::fclose(f);
}

TEST(ProgressBar, ForcedOffDrawsNothing) {
  DefaultDecision guard;
  ProgressBar::set_global_enabled(false);
  EXPECT_FALSE(ProgressBar::would_draw());
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressBar bar("sim", 1, f);
    bar.advance();
  }
  EXPECT_EQ(contents(f), "");
  std::fclose(f);
}

TEST(ProgressBar, DrawsOnARealTerminal) {
  DefaultDecision guard;
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) GTEST_SKIP() << "no pseudo-terminal here";
  const char* name = ::ptsname(master);
  ASSERT_NE(name, nullptr);
  std::FILE* tty = std::fopen(name, "w");
  ASSERT_NE(tty, nullptr);
  {
    ProgressBar bar("validate suite", 2, tty);
    EXPECT_TRUE(bar.enabled());
    bar.advance(2);
  }  // the destructor finishes the bar
  std::fclose(tty);
  std::string seen;
  char buf[512];
  pollfd p{master, POLLIN, 0};
  while (::poll(&p, 1, 200) > 0 && (p.revents & POLLIN)) {
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;
    seen.append(buf, static_cast<std::size_t>(n));
  }
  ::close(master);
  EXPECT_NE(seen.find("validate suite [##############################] 2/2 100%"), std::string::npos) << seen;
}

}  // namespace
}  // namespace parasim
