// probe_links: host <-> device, device-local and peer copies timed with CUDA events, then the
// NCCL collectives (link_probe_nccl.cpp); every curve fitted (CUDA builds only).
#include "parasim/profiler/link_probe.hpp"

#include <memory>

#include "link_probe_resources.hpp"
#include "parasim/common/error.hpp"
#include "parasim/kernels/cuda_check.hpp"
#include "parasim/kernels/cuda_kernel_backend.hpp"

namespace parasim::profiler {

namespace link_probe_detail {

ProbeDevice::ProbeDevice(int device, Bytes buffer_bytes) : device_(device) {
  PARASIM_CUDA_CHECK(cudaSetDevice(device));
  try {
    PARASIM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    PARASIM_CUDA_CHECK(cudaEventCreate(&start_));
    PARASIM_CUDA_CHECK(cudaEventCreate(&stop_));
    PARASIM_CUDA_CHECK(cudaMalloc(&src_, static_cast<std::size_t>(buffer_bytes)));
    PARASIM_CUDA_CHECK(cudaMalloc(&dst_, static_cast<std::size_t>(buffer_bytes)));
    PARASIM_CUDA_CHECK(cudaMemsetAsync(src_, 1, static_cast<std::size_t>(buffer_bytes), stream_));
    PARASIM_CUDA_CHECK(cudaStreamSynchronize(stream_));
  } catch (...) {
    release();
    throw;
  }
}

ProbeDevice::~ProbeDevice() { release(); }

void ProbeDevice::release() noexcept {
  (void)cudaSetDevice(device_);
  if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
  if (src_ != nullptr) (void)cudaFree(src_);
  if (dst_ != nullptr) (void)cudaFree(dst_);
  if (start_ != nullptr) (void)cudaEventDestroy(start_);
  if (stop_ != nullptr) (void)cudaEventDestroy(stop_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  src_ = dst_ = nullptr;
  start_ = stop_ = nullptr;
  stream_ = nullptr;
}

void ProbeDevice::make_current() const { PARASIM_CUDA_CHECK(cudaSetDevice(device_)); }

void ProbeDevice::record_start() { PARASIM_CUDA_CHECK(cudaEventRecord(start_, stream_)); }

TimeNs ProbeDevice::elapsed_between_events(int iterations) {
  PARASIM_CUDA_CHECK(cudaEventRecord(stop_, stream_));
  PARASIM_CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0.0f;
  PARASIM_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms_to_ns(static_cast<double>(ms) / iterations);
}

PinnedBuffer::PinnedBuffer(Bytes bytes) { PARASIM_CUDA_CHECK(cudaMallocHost(&ptr_, static_cast<std::size_t>(bytes))); }

PinnedBuffer::~PinnedBuffer() {
  if (ptr_ != nullptr) (void)cudaFreeHost(ptr_);
}

}  // namespace link_probe_detail

namespace {

using link_probe_detail::PinnedBuffer;
using link_probe_detail::ProbeDevice;

LinkCurve copy_curve(const std::string& kind, int src, int dst) {
  LinkCurve c;
  c.kind = kind;
  c.src = src;
  c.dst = dst;
  return c;
}

/// Enables peer access a -> b if the hardware allows it; false when copies will be staged.
bool enable_peer_access(int a, int b) {
  int can = 0;
  PARASIM_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, a, b));
  if (!can) return false;
  PARASIM_CUDA_CHECK(cudaSetDevice(a));
  const cudaError_t status = cudaDeviceEnablePeerAccess(b, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();
  } else {
    PARASIM_CUDA_CHECK(status);
  }
  return true;
}

void validate(const LinkProbeOptions& o) {
  if (o.warmup < 0 || o.iterations < 1)
    throw InputError("link probe: expected warmup >= 0 and iterations >= 1, found " + std::to_string(o.warmup) +
                     " and " + std::to_string(o.iterations));
}

}  // namespace

LinkProbeResult probe_links(const LinkProbeOptions& o) {
  validate(o);
  const std::vector<Bytes> sizes = probe_sizes(o.min_bytes, o.max_bytes, o.size_factor);
  kernels::cuda::require_cuda_device(0);
  int visible = 0;
  PARASIM_CUDA_CHECK(cudaGetDeviceCount(&visible));
  std::vector<int> indices = o.devices;
  if (indices.empty())
    for (int d = 0; d < visible; ++d) indices.push_back(d);
  for (int d : indices)
    if (d < 0 || d >= visible)
      throw InputError("link probe: device " + std::to_string(d) + " is not one of the " + std::to_string(visible) +
                       " visible GPUs");

  LinkProbeResult result;
  for (int d : indices) result.devices.push_back(query_gpu_device(d));
  const Bytes max_bytes = sizes.back();
  std::vector<std::unique_ptr<ProbeDevice>> devices;
  for (int d : indices) devices.push_back(std::make_unique<ProbeDevice>(d, max_bytes));

  const auto n = indices.size();
  const std::size_t total = (o.host_copies ? 2 * n : 0) + (o.device_copies ? n : 0) +
                            (o.peer_copies ? n * (n - 1) : 0) + (o.collectives ? 3 : 0);
  std::size_t done = 0;
  auto finish = [&](LinkCurve curve) {
    fit_link_curve(curve);
    if (o.on_progress) o.on_progress(link_curve_label(curve), ++done, total);
    result.curves.push_back(std::move(curve));
  };

  if (o.host_copies) {
    PinnedBuffer host(max_bytes);
    for (auto& dev : devices) {
      for (const bool to_device : {true, false}) {
        LinkCurve c = copy_curve(to_device ? "pcie-h2d" : "pcie-d2h", dev->device(), dev->device());
        for (Bytes s : sizes) {
          const auto size = static_cast<std::size_t>(s);
          const TimeNs t = dev->time_average(o.warmup, o.iterations, [&] {
            if (to_device) {
              PARASIM_CUDA_CHECK(cudaMemcpyAsync(dev->dst(), host.get(), size, cudaMemcpyHostToDevice, dev->stream()));
            } else {
              PARASIM_CUDA_CHECK(cudaMemcpyAsync(host.get(), dev->src(), size, cudaMemcpyDeviceToHost, dev->stream()));
            }
          });
          c.points.push_back(make_link_point(s, t, 1.0));
        }
        finish(std::move(c));
      }
    }
  }

  if (o.device_copies) {
    for (auto& dev : devices) {
      LinkCurve c = copy_curve("d2d", dev->device(), dev->device());
      for (Bytes s : sizes) {
        const TimeNs t = dev->time_average(o.warmup, o.iterations, [&] {
          PARASIM_CUDA_CHECK(cudaMemcpyAsync(dev->dst(), dev->src(), static_cast<std::size_t>(s),
                                             cudaMemcpyDeviceToDevice, dev->stream()));
        });
        c.points.push_back(make_link_point(s, t, 1.0));
      }
      finish(std::move(c));
    }
  }

  if (o.peer_copies) {
    for (auto& from : devices) {
      for (auto& to : devices) {
        if (from == to) continue;
        const bool direct = enable_peer_access(from->device(), to->device());
        if (!direct) {
          result.notes.push_back("no peer access gpu" + std::to_string(from->device()) + " -> gpu" +
                                 std::to_string(to->device()) + ": copies staged through the host");
        }
        LinkCurve c = copy_curve("pcie", from->device(), to->device());
        for (Bytes s : sizes) {
          const TimeNs t = from->time_average(o.warmup, o.iterations, [&] {
            PARASIM_CUDA_CHECK(cudaMemcpyPeerAsync(to->dst(), to->device(), from->src(), from->device(),
                                                   static_cast<std::size_t>(s), from->stream()));
          });
          c.points.push_back(make_link_point(s, t, 1.0));
        }
        if (direct && !c.points.empty()) c.kind = classify_peer_link(c.points.back().algbw);
        finish(std::move(c));
      }
    }
  }

  if (o.collectives) {
    std::vector<ProbeDevice*> ranks;
    for (auto& dev : devices) ranks.push_back(dev.get());
    const auto curves = link_probe_detail::measure_collectives(ranks, sizes, o.warmup, o.iterations,
                                                               result.nccl_version);
    for (const auto& c : curves) finish(c);
  }
  return result;
}

}  // namespace parasim::profiler
