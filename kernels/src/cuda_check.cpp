// Message formatting behind the PARASIM_*_CHECK macros (pure C++; no vendor headers).
#include "parasim/kernels/cuda_check.hpp"

#include <utility>

#include "parasim/common/error.hpp"

namespace parasim::kernels {
namespace {

std::string_view last_path_component(const char* file) {
  std::string_view path = file ? file : "?";
  const auto slash = path.find_last_of("/\\");
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string vendor_call_failure_message(std::string_view vendor, std::string_view call_text,
                                        const char* file, int line, const std::string& error) {
  std::string msg;
  msg.append(vendor).append(" call failed: ").append(call_text);
  msg.append(" at ").append(last_path_component(file)).append(":").append(std::to_string(line));
  msg.append(": ").append(error);
  return msg;
}

void throw_vendor_call_failure(std::string_view vendor, std::string_view call_text, const char* file, int line,
                               const std::string& error) {
  throw RuntimeError(vendor_call_failure_message(vendor, call_text, file, line, error));
}

NcclGroupGuard::NcclGroupGuard(std::function<void()> end_group, std::function<void()> fail)
    : end_group_(std::move(end_group)), fail_(std::move(fail)) {}

void NcclGroupGuard::close() {
  open_ = false;
  try {
    end_group_();
  } catch (...) {
    fail_();
    throw;
  }
}

NcclGroupGuard::~NcclGroupGuard() {
  if (!open_) return;
  // An enqueue threw: the group must still be closed (NCCL keeps a per-thread group depth, and an
  // open group would swallow every later call), and the communicators are no longer trustworthy.
  try {
    end_group_();
  } catch (...) {
  }
  fail_();
}

}  // namespace parasim::kernels
