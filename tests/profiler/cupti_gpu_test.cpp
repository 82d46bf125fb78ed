// CUDA-build tests that need no GPU: the checked-call macros name the call, file, line and the
// vendor's error, and every GPU entry point fails with a clear "no CUDA device" RuntimeError on a
// machine without one (skipped where a GPU is present: there the entry points would really run).
// That this file links at all is the check that the CUDA sources compiled into parasim_profiler.
#include <gtest/gtest.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <cupti.h>
#include <nccl.h>

#include "parasim/common/error.hpp"
#include "parasim/models/builder.hpp"
#include "parasim/kernels/cuda_check.hpp"
#include "parasim/kernels/cuda_kernel_backend.hpp"
#include "parasim/profiler/gpu_profiler.hpp"
#include "parasim/profiler/link_probe.hpp"

namespace parasim::profiler {
namespace {

static_assert(PARASIM_HAVE_CUDA == 1, "this test is only built with the CUDA backend");

/// The RuntimeError message `statement` throws ("" if it does not throw one).
template <class F>
std::string failure_of(F statement) {
  try {
    statement();
  } catch (const RuntimeError& e) {
    return e.what();
  }
  return "";
}

cudaError_t fails_with_invalid_value() { return cudaErrorInvalidValue; }
cudnnStatus_t fails_with_bad_param() { return CUDNN_STATUS_BAD_PARAM; }
cublasStatus_t fails_with_not_initialized() { return CUBLAS_STATUS_NOT_INITIALIZED; }
ncclResult_t fails_with_invalid_argument() { return ncclInvalidArgument; }
CUptiResult fails_with_invalid_parameter() { return CUPTI_ERROR_INVALID_PARAMETER; }

TEST(CudaCheck, CudaNamesCallFileLineAndError) {
  const std::string msg = failure_of([] { PARASIM_CUDA_CHECK(fails_with_invalid_value()); });
  EXPECT_NE(msg.find("CUDA call failed: fails_with_invalid_value()"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cupti_gpu_test.cpp:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cudaErrorInvalidValue"), std::string::npos) << msg;
  EXPECT_NE(msg.find("invalid argument"), std::string::npos) << msg;
}

TEST(CudaCheck, EveryVendorMacroThrowsRuntimeError) {
  std::string msg = failure_of([] { PARASIM_CUDNN_CHECK(fails_with_bad_param()); });
  EXPECT_NE(msg.find("cuDNN call failed: fails_with_bad_param()"), std::string::npos) << msg;
  EXPECT_NE(msg.find("CUDNN_STATUS_BAD_PARAM"), std::string::npos) << msg;

  msg = failure_of([] { PARASIM_CUBLAS_CHECK(fails_with_not_initialized()); });
  EXPECT_NE(msg.find("cuBLAS call failed: fails_with_not_initialized()"), std::string::npos) << msg;
  EXPECT_NE(msg.find("CUBLAS_STATUS_NOT_INITIALIZED"), std::string::npos) << msg;

  msg = failure_of([] { PARASIM_NCCL_CHECK(fails_with_invalid_argument()); });
  EXPECT_NE(msg.find("NCCL call failed: fails_with_invalid_argument()"), std::string::npos) << msg;
  EXPECT_NE(msg.find("code 4"), std::string::npos) << msg;

  msg = failure_of([] { PARASIM_CUPTI_CHECK(fails_with_invalid_parameter()); });
  EXPECT_NE(msg.find("CUPTI call failed: fails_with_invalid_parameter()"), std::string::npos) << msg;
  EXPECT_NE(msg.find("code 1"), std::string::npos) << msg;

  // Success passes silently and evaluates the call once.
  int calls = 0;
  PARASIM_CUDA_CHECK((++calls, cudaSuccess));
  EXPECT_EQ(calls, 1);
}

TEST(CudaCheck, MessageShortensThePath) {
  EXPECT_EQ(kernels::vendor_call_failure_message("NCCL", "ncclGroupEnd()", "/a/b/c/link_probe_nccl.cpp", 42,
                                                 "unhandled cuda error"),
            "NCCL call failed: ncclGroupEnd() at link_probe_nccl.cpp:42: unhandled cuda error");
}

bool gpu_present() {
  int count = 0;
  const bool present = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  (void)cudaGetLastError();
  return present;
}

models::Model tiny_model() {
  models::ModelBuilder b("tiny", 2, models::DType::F32);
  auto x = b.input("x", {2, 16});
  x = b.linear("fc", x, 16, 4);
  b.cross_entropy("loss", x);
  return b.finish();
}

void expect_no_device(const std::string& msg) {
  EXPECT_EQ(msg.rfind("no CUDA device: ", 0), 0u) << msg;
}

TEST(GpuEntryPoints, FailClearlyWithoutAGpu) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: the entry points would run for real";
  const models::Model m = tiny_model();
  expect_no_device(failure_of([&] { (void)profile_model_on_gpu(m, GpuProfileOptions{}); }));
  expect_no_device(failure_of([] { (void)query_gpu_device(0); }));
  expect_no_device(failure_of([] { (void)make_cuda_kernel_backend(0, nullptr); }));
  LinkProbeOptions links;
  links.max_bytes = 4 * KiB;
  expect_no_device(failure_of([&] { (void)probe_links(links); }));
}

TEST(GpuEntryPoints, BadOptionsAreInputErrorsBeforeTouchingTheDevice) {
  GpuProfileOptions bad;
  bad.plan.repetitions = 0;
  EXPECT_THROW((void)profile_model_on_gpu(tiny_model(), bad), InputError);
  LinkProbeOptions links;
  links.size_factor = 3;
  EXPECT_THROW((void)probe_links(links), InputError);
}

}  // namespace
}  // namespace parasim::profiler
