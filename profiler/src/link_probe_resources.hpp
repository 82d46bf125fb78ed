// Device resources of one link probe (CUDA builds only): per probed GPU a stream, two events and
// two buffers of the largest message size, plus one pinned host buffer. Private to link_probe*.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "parasim/common/units.hpp"
#include "parasim/profiler/profile.hpp"

namespace parasim::profiler::link_probe_detail {

class ProbeDevice {
 public:
  ProbeDevice(int device, Bytes buffer_bytes);
  ~ProbeDevice();
  ProbeDevice(const ProbeDevice&) = delete;
  ProbeDevice& operator=(const ProbeDevice&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  void* src() const { return src_; }
  void* dst() const { return dst_; }
  /// Time of one enqueue() averaged over `iterations` after `warmup` untimed ones, measured with
  /// CUDA events around the timed loop on this device's stream (nccl-tests: warm up, N, divide).
  template <class Enqueue>
  TimeNs time_average(int warmup, int iterations, Enqueue enqueue);

 private:
  TimeNs elapsed_between_events(int iterations);
  void release() noexcept;
  void record_start();
  void make_current() const;
  int device_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  void* src_ = nullptr;
  void* dst_ = nullptr;
};

template <class Enqueue>
TimeNs ProbeDevice::time_average(int warmup, int iterations, Enqueue enqueue) {
  make_current();  // copies are issued on this device's stream, which must be the current device's
  for (int i = 0; i < warmup; ++i) enqueue();
  record_start();
  for (int i = 0; i < iterations; ++i) enqueue();
  return elapsed_between_events(iterations);
}

/// Pinned (page-locked) host memory, so host copies run at DMA speed and asynchronously.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(Bytes bytes);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
};

/// NCCL allreduce, allgather and reducescatter curves over all `devices` (link_probe_nccl.cpp).
/// Sizes whose per-rank element count would be 0 are skipped.
std::vector<LinkCurve> measure_collectives(std::vector<ProbeDevice*>& devices, const std::vector<Bytes>& sizes,
                                           int warmup, int iterations, int& nccl_version);

}  // namespace parasim::profiler::link_probe_detail
