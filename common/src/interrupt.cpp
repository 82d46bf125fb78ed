#include "parasim/common/interrupt.hpp"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>

namespace parasim {

namespace {

volatile std::sig_atomic_t g_flag = 0;
std::atomic<bool> g_hook_fired{false};

extern "C" void on_interrupt_signal(int) { g_flag = 1; }

}  // namespace

void install_interrupt_handlers() {
  std::signal(SIGINT, on_interrupt_signal);
  std::signal(SIGTERM, on_interrupt_signal);
}

bool interrupted() { return g_flag != 0; }
void request_interrupt() { g_flag = 1; }
void reset_interrupt() {
  g_flag = 0;
  g_hook_fired = false;
}

void throw_if_interrupted() {
  if (g_flag != 0) throw Interrupted();
}

void interrupt_test_hook() {
  if (g_hook_fired.load(std::memory_order_relaxed)) return;
  const char* v = std::getenv("PARASIM_TEST_INTERRUPT");
  if (v == nullptr || std::strcmp(v, "progress") != 0) return;
  if (!g_hook_fired.exchange(true)) std::raise(SIGINT);
}

}  // namespace parasim
