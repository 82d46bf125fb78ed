// cuBLAS through dlopen (kernels/cublas_library.hpp): not mapped until first use, then the
// toolkit's library answers. None of this needs a GPU. CUDA builds only.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <fstream>
#include <sstream>
#include <string>

#include "parasim/common/error.hpp"
#include "parasim/kernels/cublas_library.hpp"
#include "parasim/kernels/cuda_check.hpp"

namespace parasim::kernels {
namespace {

bool cublas_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find("libcublas") != std::string::npos;
}

// First in this file: ctest runs each test in a process of its own, and a plain run of the
// binary reaches this one before any other test loads cuBLAS.
TEST(CublasLibrary, IsNotMappedUntilFirstUse) {
  EXPECT_FALSE(cublas_mapped());
  cublas::load();
  EXPECT_TRUE(cublas_mapped());
}

TEST(CublasLibrary, LoadsTheToolkitsLibraryByItsSoname) {
  EXPECT_EQ(std::string(cublas::library_name()), "libcublas.so." + std::to_string(CUDART_VERSION / 1000));
  int major = -1;
  ASSERT_EQ(cublas::get_property(MAJOR_VERSION, &major), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(major, CUDART_VERSION / 1000);  // the cuBLAS of the toolkit parasim was built with
  EXPECT_STREQ(cublas::status_name(CUBLAS_STATUS_NOT_INITIALIZED), "CUBLAS_STATUS_NOT_INITIALIZED");
  EXPECT_NE(std::string(cublas::status_string(CUBLAS_STATUS_NOT_INITIALIZED)), "(cuBLAS not loadable)");
}

TEST(CublasLibrary, AFailingCallNamesCublasAndItsStatus) {
  cublas::load();
  try {
    PARASIM_CUBLAS_CHECK(cublas::destroy(nullptr));  // no handle: cuBLAS says not initialized
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cuBLAS call failed: cublas::destroy(nullptr) at cublas_library_test.cpp:"), std::string::npos)
        << what;
    EXPECT_NE(what.find("CUBLAS_STATUS_NOT_INITIALIZED ("), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace parasim::kernels
