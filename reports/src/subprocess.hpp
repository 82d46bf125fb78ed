// Runs a program with a deadline and collects what it wrote to stdout and stderr (merged).
// posix_spawn, not fork: safe in a process that already runs threads.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace parasim::reports::detail {

struct ProcessResult {
  int exit_code = -1;     // valid when !signaled && !timed_out
  int signal = 0;         // the signal that ended it, 0 if it exited
  bool timed_out = false; // killed by us at the deadline
  std::string output;     // stdout + stderr, at most kMaxCapturedOutput bytes
};

inline constexpr std::size_t kMaxCapturedOutput = 64 * 1024;

/// Runs `argv[0]` (a path, not searched on PATH) with `argv` in `cwd`, stdin from /dev/null.
/// The child gets this process's environment with the locale fixed to C.UTF-8 (LC_ALL; LANG,
/// LANGUAGE and LC_* dropped), so what it writes (gnuplot's text encoding, number format,
/// warnings) does not depend on the caller's locale. RuntimeError if it cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv, const std::filesystem::path& cwd,
                          std::chrono::milliseconds timeout);

/// The first executable `name` in $PATH, or `name` itself if it contains a '/' and is executable.
std::filesystem::path find_executable(const std::string& name);

}  // namespace parasim::reports::detail
