// GPU description helpers that need no GPU: CUDA device names -> parasim device kinds, version
// encodings, the profile's device block.
#include <gtest/gtest.h>

#include "parasim/hardware/device_spec.hpp"
#include "parasim/profiler/gpu_profiler.hpp"

namespace parasim::profiler {
namespace {

TEST(GpuDeviceKind, MapsCudaDeviceNamesToKnownKinds) {
  EXPECT_EQ(device_kind_from_cuda_name("NVIDIA H200"), "H200-SXM-141GB");
  EXPECT_EQ(device_kind_from_cuda_name("NVIDIA B200"), "B200-SXM-180GB");
  EXPECT_EQ(device_kind_from_cuda_name("NVIDIA H100 80GB HBM3"), "H100-SXM5-80GB");
  EXPECT_EQ(device_kind_from_cuda_name("Tesla V100-SXM2-16GB"), "V100-SXM2-16GB");
  EXPECT_EQ(device_kind_from_cuda_name("Tesla V100-SXM2-32GB"), "V100-SXM2-32GB");
  EXPECT_EQ(device_kind_from_cuda_name("NVIDIA A100-SXM4-40GB"), "A100-SXM4-40GB");
  EXPECT_EQ(device_kind_from_cuda_name("NVIDIA A100-SXM4-80GB"), "A100-SXM4-80GB");
  EXPECT_EQ(device_kind_from_cuda_name("NVIDIA TITAN X (Pascal)"), "TITAN-X-Pascal");
  EXPECT_EQ(device_kind_from_cuda_name("NVIDIA GeForce GTX 1080"), "GTX-1080");
  EXPECT_EQ(device_kind_from_cuda_name("NVIDIA GeForce GTX 1080 Ti"), "GTX-1080-Ti");
  EXPECT_EQ(device_kind_from_cuda_name("Tesla P100-SXM2-16GB"), "P100-SXM2-16GB");
}

TEST(GpuDeviceKind, H100PcieAndNvlAreTheirOwnParts) {
  // The names CUDA reports for them (nvidia-smi -L); before, both fell through to the SXM5 spec.
  EXPECT_EQ(device_kind_from_cuda_name("NVIDIA H100 PCIe"), "H100-PCIe-80GB");
  EXPECT_EQ(device_kind_from_cuda_name("NVIDIA H100 NVL"), "H100-NVL-94GB");
  const auto pcie = hardware::find_device_spec("H100-PCIe-80GB");
  const auto nvl = hardware::find_device_spec("H100-NVL-94GB");
  ASSERT_TRUE(pcie && nvl);
  EXPECT_EQ(pcie->sm_count, 114);
  EXPECT_DOUBLE_EQ(pcie->fp16_tflops, 756);
  EXPECT_EQ(nvl->memory, 94 * GiB);
  EXPECT_DOUBLE_EQ(nvl->bf16_tflops, 835.5);
  // A form factor parasim has no spec for is not silently the SXM part.
  EXPECT_EQ(device_kind_from_cuda_name("NVIDIA A100-PCIE-40GB"), "cuda-NVIDIA-A100-PCIE-40GB");
}

TEST(GpuDeviceKind, EveryMappedKindIsADeviceSpec) {
  for (const char* name : {"NVIDIA H200", "NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB", "NVIDIA TITAN X (Pascal)"})
    EXPECT_TRUE(hardware::find_device_spec(device_kind_from_cuda_name(name)).has_value()) << name;
}

TEST(GpuDeviceKind, UnknownGpusKeepTheirName) {
  EXPECT_EQ(device_kind_from_cuda_name("NVIDIA L4"), "cuda-NVIDIA-L4");
  EXPECT_EQ(device_kind_from_cuda_name("NVIDIA GeForce RTX 4090"), "cuda-NVIDIA-GeForce-RTX-4090");
  EXPECT_FALSE(hardware::find_device_spec(device_kind_from_cuda_name("NVIDIA L4")).has_value());
}

TEST(GpuVersions, FormatsCudaAndLibraryEncodings) {
  EXPECT_EQ(format_cuda_version(13000), "13.0");
  EXPECT_EQ(format_cuda_version(12040), "12.4");
  EXPECT_EQ(format_library_version(91900), "9.19.0");
  // The driver from /proc/driver/nvidia/version, proprietary and open kernel modules (the lent
  // H200's read "for" before this parser skipped words up to the version).
  EXPECT_EQ(nvidia_driver_version_from_nvrm(
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 06:54:38 UTC 2025"),
            "580.65.06");
  EXPECT_EQ(nvidia_driver_version_from_nvrm("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  "
                                            "Release Build  (dvs-builder@U22-I3-AE18-23-3)"),
            "580.159.04");
  EXPECT_EQ(nvidia_driver_version_from_nvrm("NVRM version: no module here"), "");
  EXPECT_EQ(format_library_version(130102), "13.1.2");
}

TEST(GpuDeviceInfo, BecomesTheProfileDeviceBlock) {
  GpuDeviceInfo g;
  g.name = "NVIDIA H200";
  g.kind = "H200-SXM-141GB";
  g.compute_capability_major = 9;
  g.compute_capability_minor = 0;
  g.runtime_version = 13000;
  g.driver_version = 13000;
  g.cudnn_version = 91900;
  g.cublas_version = 130102;
  g.sm_clock_khz = 1980000;
  g.memory_clock_khz = 3201000;
  const DeviceInfo d = to_profile_device_info(g);
  EXPECT_EQ(d.name, "NVIDIA H200");
  EXPECT_EQ(d.kind, "H200-SXM-141GB");
  EXPECT_EQ(d.compute_capability, "9.0");
  EXPECT_EQ(d.cuda, "13.0");
  EXPECT_EQ(d.cudnn, "9.19.0");
  EXPECT_EQ(d.cublas, "13.1.2");
  EXPECT_EQ(d.sm_clock_mhz, 1980);
  EXPECT_EQ(d.mem_clock_mhz, 3201);
  EXPECT_FALSE(d.driver.empty());  // kernel module version, or the driver API version without one
}

}  // namespace
}  // namespace parasim::profiler
