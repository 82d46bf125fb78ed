// The link probe over NCCL: ncclSend/ncclRecv between two ranks' GPUs and ncclAllReduce over
// every rank, timed with cudaEvents on one stream (CUDA builds; see link_probe.hpp). A blocking
// communicator: a dead peer is found by the world's heartbeat, which ends the job.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>
#include <vector>

#include "parasim/common/error.hpp"
#include "parasim/common/index.hpp"
#include "parasim/executor/cuda_runtime.hpp"
#include "parasim/kernels/cuda_check.hpp"
#include "parasim/mpi/nccl_program.hpp"
#include "probe_links.hpp"

namespace parasim::mpi::detail {
namespace {

class NcclProbeLinks final : public ProbeLinks {
 public:
  NcclProbeLinks(World& world, Bytes largest) {
    const int visible = executor::visible_cuda_devices();
    const RankPlace& p = world.place();
    const int device = rank_cuda_device(p.local_rank, visible);
    if (device < 0)
      throw RuntimeError("rank " + std::to_string(world.rank()) + " on " + p.host + ": local rank " +
                         std::to_string(p.local_rank) + " but " + std::to_string(visible) +
                         " visible GPUs: the NCCL link probe needs one GPU per rank");
    PARASIM_CUDA_CHECK(cudaSetDevice(device));
    PARASIM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    PARASIM_CUDA_CHECK(cudaEventCreate(&start_));
    PARASIM_CUDA_CHECK(cudaEventCreate(&end_));
    PARASIM_CUDA_CHECK(cudaMalloc(&buffer_, ix(largest)));
    ncclUniqueId id;
    if (world.root()) PARASIM_NCCL_CHECK(ncclGetUniqueId(&id));
    const std::string bytes = world.broadcast(
        world.root() ? std::string(id.internal, sizeof id.internal) : std::string(), 0, "the NCCL probe's unique id");
    std::copy(bytes.begin(), bytes.end(), id.internal);
    PARASIM_NCCL_CHECK(ncclCommInitRank(&comm_, world.size(), id, world.rank()));
  }
  ~NcclProbeLinks() override {
    if (comm_) ncclCommDestroy(comm_);
    if (buffer_) cudaFree(buffer_);
    if (start_) cudaEventDestroy(start_);
    if (end_) cudaEventDestroy(end_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  NcclProbeLinks(const NcclProbeLinks&) = delete;
  NcclProbeLinks& operator=(const NcclProbeLinks&) = delete;

  double round_trip(int peer, Bytes bytes, bool first) override {
    PARASIM_CUDA_CHECK(cudaEventRecord(start_, stream_));
    for (int leg = 0; leg < 2; ++leg) {
      if ((leg == 0) == first) PARASIM_NCCL_CHECK(ncclSend(buffer_, ix(bytes), ncclInt8, peer, comm_, stream_));
      else PARASIM_NCCL_CHECK(ncclRecv(buffer_, ix(bytes), ncclInt8, peer, comm_, stream_));
    }
    return finish();
  }

  double allreduce(Bytes bytes) override {
    PARASIM_CUDA_CHECK(cudaEventRecord(start_, stream_));
    PARASIM_NCCL_CHECK(ncclAllReduce(buffer_, buffer_, ix(bytes / 4), ncclFloat, ncclSum, comm_, stream_));
    return finish();
  }

 private:
  double finish() {
    PARASIM_CUDA_CHECK(cudaEventRecord(end_, stream_));
    PARASIM_CUDA_CHECK(cudaEventSynchronize(end_));
    float ms = 0;
    PARASIM_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, end_));
    return static_cast<double>(ms) * 1e6;
  }

  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, end_ = nullptr;
  void* buffer_ = nullptr;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

std::unique_ptr<ProbeLinks> make_nccl_probe_links(World& world, Bytes largest) {
  return std::make_unique<NcclProbeLinks>(world, largest);
}

}  // namespace parasim::mpi::detail
