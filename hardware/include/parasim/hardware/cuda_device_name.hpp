// CUDA device names -> the catalogue's device kinds: used by the CUDA kernel backend (the kind
// its profiles carry) and the GPU profiler. Plain C++: builds and is tested without CUDA.
#pragma once

#include <string>

namespace parasim::hardware {

/// Canonical DeviceSpec kind for a CUDA device name ("NVIDIA H200" -> "H200-SXM-141GB",
/// "Tesla V100-SXM2-16GB" -> "V100-SXM2-16GB"). Names parasim does not know map to
/// "cuda-<name with spaces as dashes>" so profiles from new GPUs stay usable (without roofline).
std::string device_kind_from_cuda_name(const std::string& cuda_device_name);

}  // namespace parasim::hardware
