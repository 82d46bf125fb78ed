#include "subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "parasim/common/error.hpp"

extern char** environ;

namespace parasim::reports::detail {

namespace {

/// Closes a file descriptor when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

std::string errno_text(const char* what, int err) { return std::string(what) + ": " + std::strerror(err); }

bool is_executable_file(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

}  // namespace

std::filesystem::path find_executable(const std::string& name) {
  if (name.empty()) return {};
  if (name.find('/') != std::string::npos)
    return is_executable_file(name) ? std::filesystem::path(name) : std::filesystem::path{};
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t begin = 0;
  while (begin <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', begin), dirs.size());
    const std::string dir = dirs.substr(begin, end - begin);
    const std::filesystem::path candidate = std::filesystem::path(dir.empty() ? "." : dir) / name;
    if (is_executable_file(candidate)) return candidate;
    begin = end + 1;
  }
  return {};
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::filesystem::path& cwd,
                          std::chrono::milliseconds timeout) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw RuntimeError(errno_text("pipe", errno));
  Fd read_end(pipe_fds[0]);
  Fd write_end(pipe_fds[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), 2);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());

  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::string fixed_locale = "LC_ALL=C.UTF-8";
  std::vector<char*> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view kv(*e);
    if (kv.starts_with("LC_") || kv.starts_with("LANG=") || kv.starts_with("LANGUAGE=")) continue;
    env.push_back(*e);
  }
  env.push_back(fixed_locale.data());
  env.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  write_end.reset();  // so that reading sees EOF when the child exits
  if (rc != 0) throw RuntimeError(errno_text(("cannot start " + argv[0]).c_str(), rc));

  ProcessResult result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p{read_end.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(read_end.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child closed its output (it is exiting)
    const std::size_t room = kMaxCapturedOutput - std::min(kMaxCapturedOutput, result.output.size());
    result.output.append(buf, std::min(room, static_cast<std::size_t>(n)));
  }

  // EOF only means the child closed its output; it may still run, so the deadline holds here too.
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, result.timed_out ? 0 : WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) throw RuntimeError(errno_text("waitpid", errno));
    if (done == 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        result.timed_out = true;
        ::kill(pid, SIGKILL);
      } else {
        ::usleep(2'000);
      }
    }
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

}  // namespace parasim::reports::detail
