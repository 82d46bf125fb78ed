// Ctrl-C (SIGINT) and SIGTERM: the handler only sets a flag; long loops (the engine's event loop
// through its progress callback, the planner per candidate, suites per case) call
// throw_if_interrupted(), and write_file_atomic() refuses to put a file in place once the flag is
// set, so an interrupted command ends with "interrupted", exit code 130 and no output file.
//
// Example (the CLI's main):
//   install_interrupt_handlers();
//   try { run(); } catch (const Interrupted&) { std::cerr << "parasim: interrupted\n"; return kExitInterrupted; }
#pragma once

#include <exception>

namespace parasim {

/// 128 + SIGINT, what shells report for a command ended by Ctrl-C.
inline constexpr int kExitInterrupted = 130;

/// Thrown by throw_if_interrupted(); deliberately not an InputError or RuntimeError.
class Interrupted : public std::exception {
 public:
  const char* what() const noexcept override { return "interrupted"; }
};

/// SIGINT and SIGTERM set the flag (async-signal-safe) instead of ending the process.
void install_interrupt_handlers();
bool interrupted();
/// Sets the flag as the handler does (tests, and the test hook below).
void request_interrupt();
/// Clears the flag (tests).
void reset_interrupt();
/// Throws Interrupted when the flag is set.
void throw_if_interrupted();

/// Test hook: when the environment has PARASIM_TEST_INTERRUPT=progress, the first call raises
/// SIGINT in this process (progress callbacks call it), so tests interrupt a command at a
/// deterministic point instead of racing a kill against it.
void interrupt_test_hook();

}  // namespace parasim
