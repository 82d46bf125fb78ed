// NCCL collectives over every probed GPU from one process (ncclCommInitAll), timed the way
// nccl-tests times them: warm up, then launch `iterations` rounds (every rank's call inside one
// ncclGroupStart/End), synchronize every stream, and divide the host-clock time by the count.
//
// Sizes follow nccl-tests: for allreduce `size` is each rank's buffer; for allgather and
// reducescatter it is the whole gathered (resp. reduced) buffer, each rank owning size / n of it,
// so the element count is rounded down to a multiple of n and sizes below n floats are skipped.
#include <chrono>
#include <exception>
#include <memory>

#include <nccl.h>

#include "link_probe_resources.hpp"
#include "parasim/common/error.hpp"
#include "parasim/profiler/alpha_beta.hpp"
#include "parasim/kernels/cuda_check.hpp"
#include "parasim/profiler/link_probe.hpp"

namespace parasim::profiler::link_probe_detail {
namespace {

class Communicators {
 public:
  explicit Communicators(const std::vector<ProbeDevice*>& devices) : comms_(devices.size(), nullptr) {
    std::vector<int> ids;
    for (const ProbeDevice* d : devices) ids.push_back(d->device());
    PARASIM_NCCL_CHECK(ncclCommInitAll(comms_.data(), static_cast<int>(ids.size()), ids.data()));
  }
  ~Communicators() {
    // After a failed round, or while an exception unwinds, a communicator may hold half-enqueued
    // work that ncclCommDestroy would wait for: abort it instead.
    const bool abort = failed_ || std::uncaught_exceptions() > 0;
    for (ncclComm_t c : comms_)
      if (c != nullptr) (void)(abort ? ncclCommAbort(c) : ncclCommDestroy(c));
  }
  Communicators(const Communicators&) = delete;
  Communicators& operator=(const Communicators&) = delete;
  ncclComm_t operator[](std::size_t i) const { return comms_[i]; }
  void mark_failed() const { failed_ = true; }

 private:
  std::vector<ncclComm_t> comms_;
  mutable bool failed_ = false;
};

void synchronize_all(const std::vector<ProbeDevice*>& devices) {
  for (const ProbeDevice* d : devices) {
    PARASIM_CUDA_CHECK(cudaSetDevice(d->device()));
    PARASIM_CUDA_CHECK(cudaStreamSynchronize(d->stream()));
  }
}

/// One round: every rank's call inside one group (required when one thread drives all ranks).
template <class Call>
void launch_round(const std::vector<ProbeDevice*>& devices, const Communicators& comms, Call call) {
  PARASIM_NCCL_CHECK(ncclGroupStart());
  kernels::NcclGroupGuard group([] { PARASIM_NCCL_CHECK(ncclGroupEnd()); }, [&comms] { comms.mark_failed(); });
  for (std::size_t r = 0; r < devices.size(); ++r) call(*devices[r], comms[r]);
  group.close();
}

}  // namespace

std::vector<LinkCurve> measure_collectives(std::vector<ProbeDevice*>& devices, const std::vector<Bytes>& sizes,
                                           int warmup, int iterations, int& nccl_version) {
  PARASIM_NCCL_CHECK(ncclGetVersion(&nccl_version));
  const Communicators comms(devices);
  const auto n = static_cast<std::int64_t>(devices.size());
  std::vector<LinkCurve> curves;
  for (CollectiveOp kind : {CollectiveOp::AllReduce, CollectiveOp::AllGather, CollectiveOp::ReduceScatter}) {
    LinkCurve curve;
    curve.kind = "nccl";
    curve.collective = nccl_tests_name(kind);
    curve.ranks = static_cast<int>(n);
    curve.src = devices.front()->device();
    curve.dst = devices.back()->device();
    for (Bytes size : sizes) {
      std::int64_t count = size / static_cast<Bytes>(sizeof(float));  // elements of the whole buffer
      if (kind != CollectiveOp::AllReduce) count = count / n * n;
      if (count == 0) continue;
      const auto per_rank = static_cast<std::size_t>(kind == CollectiveOp::AllReduce ? count : count / n);
      auto call = [&](const ProbeDevice& d, ncclComm_t comm) {
        switch (kind) {
          case CollectiveOp::AllReduce:
            PARASIM_NCCL_CHECK(ncclAllReduce(d.src(), d.dst(), per_rank, ncclFloat, ncclSum, comm, d.stream()));
            break;
          case CollectiveOp::AllGather:
            PARASIM_NCCL_CHECK(ncclAllGather(d.src(), d.dst(), per_rank, ncclFloat, comm, d.stream()));
            break;
          default:
            PARASIM_NCCL_CHECK(ncclReduceScatter(d.src(), d.dst(), per_rank, ncclFloat, ncclSum, comm, d.stream()));
            break;
        }
      };
      for (int w = 0; w < warmup; ++w) launch_round(devices, comms, call);
      synchronize_all(devices);
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < iterations; ++i) launch_round(devices, comms, call);
      synchronize_all(devices);
      const auto elapsed =
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
      const Bytes reported = count * static_cast<Bytes>(sizeof(float));
      curve.points.push_back(
          make_link_point(reported, elapsed.count() / iterations, busbw_factor(kind, static_cast<int>(n))));
    }
    curves.push_back(std::move(curve));
  }
  return curves;
}

}  // namespace parasim::profiler::link_probe_detail
