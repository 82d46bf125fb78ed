// The CUDA runtime (see cuda_runtime.hpp): streams, events, peer copies, NCCL, real kernels.
#include "parasim/executor/cuda_runtime.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <set>
#include <string>

#include "cuda_communicators.hpp"
#include "parasim/kernels/op_phases.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/index.hpp"
#include "parasim/executor/cuda_setup_policy.hpp"
#include "parasim/executor/issue_plan.hpp"
#include "parasim/kernels/cuda_check.hpp"
#include "parasim/kernels/cuda_kernel_backend.hpp"
#include "parasim/kernels/kernel_backend.hpp"

namespace parasim::executor {

namespace cuda_detail {
cudaError_t launch_spin_kernel(std::int64_t ns, cudaStream_t stream);
}

bool cuda_backend_built() { return true; }

int visible_cuda_devices() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no driver/device" error
    return 0;
  }
  return n;
}

namespace {

using simulator::CollectiveOp;
using simulator::DeviceId;
using simulator::TaskKind;

std::size_t floats_for(Bytes b) { return ix((std::max<Bytes>(b, 0) + 3) / 4); }

using kernels::kernel_phase;

/// Device memory that frees itself.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int device, std::size_t bytes) : device_(device) {
    if (bytes == 0) return;
    PARASIM_CUDA_CHECK(cudaSetDevice(device));
    PARASIM_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
    PARASIM_CUDA_CHECK(cudaMemset(ptr_, 0, bytes));
  }
  ~DeviceBuffer() {
    if (ptr_) {
      cudaSetDevice(device_);
      cudaFree(ptr_);
    }
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : device_(o.device_), ptr_(o.ptr_) { o.ptr_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(device_, o.device_);
    std::swap(ptr_, o.ptr_);
    return *this;
  }
  float* get() const { return static_cast<float*>(ptr_); }

 private:
  int device_ = 0;
  void* ptr_ = nullptr;
};

struct StreamState {
  DeviceId device = 0;
  int cuda_device = 0;
  cudaStream_t stream = nullptr;
  std::unique_ptr<kernels::KernelBackend> backend;
  std::map<const models::Op*, std::unique_ptr<kernels::OpKernel>> kernels;
  std::size_t send_floats = 0, receive_floats = 0;
  DeviceBuffer send, receive;
  std::map<DeviceId, std::size_t> outgoing_floats;
  std::map<DeviceId, DeviceBuffer> outgoing;  // on the destination device
};

struct Communicator {
  std::vector<ncclComm_t> comms;  // per member, group order
};

class CudaRuntime final : public StreamRuntime {
 public:
  CudaRuntime(OpResolver ops, CudaRuntimeOptions options) : resolve_(std::move(ops)), options_(std::move(options)) {}

  ~CudaRuntime() override {
    // Best effort: a destructor must not throw; a failing call here only leaks. After a failed
    // collective, or when destroyed while an exception unwinds (a step threw midway), work may be
    // half enqueued: ncclCommDestroy would wait for it, ncclCommAbort does not.
    const bool abort = comms_failed_ || std::uncaught_exceptions() > 0;
    for (auto& [key, c] : comms_)
      for (ncclComm_t comm : c.comms)
        if (comm != nullptr) (void)(abort ? ncclCommAbort(comm) : ncclCommDestroy(comm));
    for (cudaEvent_t e : sync_events_) cudaEventDestroy(e);
    for (cudaEvent_t e : collective_done_) cudaEventDestroy(e);
    for (cudaEvent_t e : timing_events_) cudaEventDestroy(e);
    for (cudaEvent_t e : step_start_) cudaEventDestroy(e);
    for (StreamState& s : streams_) {
      s.kernels.clear();
      s.backend.reset();
      if (s.stream) {
        cudaSetDevice(s.cuda_device);
        cudaStreamDestroy(s.stream);
      }
    }
  }

  std::string name() const override {
    std::string n = "cuda (";
    n += std::to_string(num_devices_);
    n += num_devices_ == 1 ? " GPU:" : " GPUs:";
    for (int d = 0; d < num_devices_; ++d) {
      n += d ? ", " : " ";
      n += std::to_string(ranks_.cuda_device[ix(d)]);
    }
    n += ")";
    return n;
  }
  std::vector<std::string> notes() const override { return notes_; }
  std::int64_t stand_in_tasks() const override { return ledger_.tasks(); }

  void setup(const TaskGraph& graph, const IssuePlan& plan) override {
    graph_ = &graph;
    num_devices_ = graph.num_devices();
    spd_ = graph.streams_per_device();
    map_devices();
    create_streams();
    enable_peer_access(graph);
    // Communicators and transfer buffers before any op's kernels: NCCL needs its buffers on every
    // GPU, and kernels are what may be left out when memory runs short.
    create_communicators(graph);
    size_buffers(graph);
    allocate_buffers();
    create_events(graph, plan);
    collective_waits_ = collective_order_waits(graph, plan);
    prepare_kernels(graph, plan);
    PARASIM_CUDA_CHECK(cudaSetDevice(ranks_.cuda_device[0]));
  }

  void begin_step() override {
    // Device 0's start event gates every device: each device's first stream waits for it and
    // records the device's own start event, the origin of that device's task times; the device's
    // other streams wait for that event (not device 0's), so none of its tasks can start before
    // the event they are measured from (a negative start otherwise).
    PARASIM_CUDA_CHECK(cudaSetDevice(ranks_.cuda_device[0]));
    PARASIM_CUDA_CHECK(cudaEventRecord(step_start_[0], streams_[0].stream));
    for (int d = 0; d < num_devices_; ++d) {
      PARASIM_CUDA_CHECK(cudaSetDevice(ranks_.cuda_device[ix(d)]));
      cudaStream_t first = streams_[ix(d * spd_)].stream;
      if (d > 0) {
        PARASIM_CUDA_CHECK(cudaStreamWaitEvent(first, step_start_[0], 0));
        PARASIM_CUDA_CHECK(cudaEventRecord(step_start_[ix(d)], first));
      }
      for (int k = 1; k < spd_; ++k)
        PARASIM_CUDA_CHECK(cudaStreamWaitEvent(streams_[ix(d * spd_ + k)].stream, step_start_[ix(d)], 0));
    }
  }

  void wait_event(StreamIndex s, EventId e) override {
    StreamState& st = streams_[ix(s)];
    PARASIM_CUDA_CHECK(cudaSetDevice(st.cuda_device));
    PARASIM_CUDA_CHECK(cudaStreamWaitEvent(st.stream, sync_events_[ix(e)], 0));
  }

  void record_event(StreamIndex s, EventId e) override {
    StreamState& st = streams_[ix(s)];
    PARASIM_CUDA_CHECK(cudaSetDevice(st.cuda_device));
    PARASIM_CUDA_CHECK(cudaEventRecord(sync_events_[ix(e)], st.stream));
  }

  void launch_compute(StreamIndex s, TaskId t) override {
    StreamState& st = streams_[ix(s)];
    PARASIM_CUDA_CHECK(cudaSetDevice(st.cuda_device));
    PARASIM_CUDA_CHECK(cudaEventRecord(timing_start(t, 0), st.stream));
    auto it = st.kernels.find(op_[ix(t)]);
    const std::optional<profiler::Phase> phase = kernel_phase(graph_->phase(t));
    if (it != st.kernels.end() && phase) {
      it->second->run(*phase);
    } else {
      PARASIM_CUDA_CHECK(cuda_detail::launch_spin_kernel(graph_->duration(t), st.stream));
    }
    PARASIM_CUDA_CHECK(cudaEventRecord(timing_end(t, 0), st.stream));
  }

  void launch_transfer(StreamIndex s, TaskId t) override {
    StreamState& st = streams_[ix(s)];
    const DeviceId dst = graph_->dst(t);
    PARASIM_CUDA_CHECK(cudaSetDevice(st.cuda_device));
    PARASIM_CUDA_CHECK(cudaEventRecord(timing_start(t, 0), st.stream));
    PARASIM_CUDA_CHECK(cudaMemcpyPeerAsync(st.outgoing.at(dst).get(), ranks_.cuda_device[ix(dst)], st.send.get(),
                                           st.cuda_device, ix(std::max<Bytes>(graph_->bytes(t), 0)), st.stream));
    PARASIM_CUDA_CHECK(cudaEventRecord(timing_end(t, 0), st.stream));
  }

  void launch_collective(std::span<const StreamIndex> streams, TaskId t) override {
    const TaskGraph& g = *graph_;
    const Communicator& comm = comms_.at(comm_key(g, t));
    const int n = static_cast<int>(streams.size());
    const std::size_t count = floats_for(g.bytes(t));
    // This GPU's previous collective ran on another stream: wait for it (one order per GPU).
    for (const CollectiveOrderWait& w : collective_waits_[ix(t)]) {
      StreamState& st = streams_[ix(w.stream)];
      PARASIM_CUDA_CHECK(cudaSetDevice(st.cuda_device));
      PARASIM_CUDA_CHECK(cudaStreamWaitEvent(st.stream, collective_done_[ix(st.device)], 0));
    }
    for (int r = 0; r < n; ++r) {
      StreamState& st = streams_[ix(streams[ix(r)])];
      PARASIM_CUDA_CHECK(cudaSetDevice(st.cuda_device));
      PARASIM_CUDA_CHECK(cudaEventRecord(timing_start(t, r), st.stream));
    }
    PARASIM_NCCL_CHECK(ncclGroupStart());
    kernels::NcclGroupGuard group([] { PARASIM_NCCL_CHECK(ncclGroupEnd()); }, [this] { comms_failed_ = true; });
    for (int r = 0; r < n; ++r) {
      StreamState& st = streams_[ix(streams[ix(r)])];
      ncclComm_t c = comm.comms[ix(r)];
      float* buf = st.send.get();
      const std::size_t part = count / ix(n);
      switch (g.collective_op(t)) {
        case CollectiveOp::AllReduce:
          PARASIM_NCCL_CHECK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, c, st.stream));
          break;
        case CollectiveOp::ReduceScatter:  // in place: rank r's output is chunk r of its input
          PARASIM_NCCL_CHECK(ncclReduceScatter(buf, buf + ix(r) * part, part, ncclFloat, ncclSum, c, st.stream));
          break;
        case CollectiveOp::AllGather:  // in place: rank r's input is chunk r of its output
          PARASIM_NCCL_CHECK(ncclAllGather(buf + ix(r) * part, buf, part, ncclFloat, c, st.stream));
          break;
        case CollectiveOp::Broadcast:
          PARASIM_NCCL_CHECK(ncclBroadcast(buf, buf, count, ncclFloat, 0, c, st.stream));
          break;
        case CollectiveOp::AllToAll:
          for (int p = 0; p < n; ++p) {
            PARASIM_NCCL_CHECK(ncclSend(buf + ix(p) * part, part, ncclFloat, p, c, st.stream));
            PARASIM_NCCL_CHECK(ncclRecv(st.receive.get() + ix(p) * part, part, ncclFloat, p, c, st.stream));
          }
          break;
      }
    }
    group.close();
    for (int r = 0; r < n; ++r) {
      StreamState& st = streams_[ix(streams[ix(r)])];
      PARASIM_CUDA_CHECK(cudaSetDevice(st.cuda_device));
      PARASIM_CUDA_CHECK(cudaEventRecord(timing_end(t, r), st.stream));
      PARASIM_CUDA_CHECK(cudaEventRecord(collective_done_[ix(st.device)], st.stream));
    }
  }

  void finish_step(std::vector<TaskTiming>& timeline) override {
    for (int d = 0; d < num_devices_; ++d) {
      PARASIM_CUDA_CHECK(cudaSetDevice(ranks_.cuda_device[ix(d)]));
      PARASIM_CUDA_CHECK(cudaDeviceSynchronize());
    }
    const TaskGraph& g = *graph_;
    for (TaskId t : issued_) {
      const std::vector<StreamIndex> streams = task_streams(g, t);
      TimeNs start = -1, end = -1;
      for (std::size_t r = 0; r < streams.size(); ++r) {
        const DeviceId d = streams[r] / spd_;
        start = std::max(start, elapsed_ns(step_start_[ix(d)], timing_start(t, static_cast<int>(r))));
        end = std::max(end, elapsed_ns(step_start_[ix(d)], timing_end(t, static_cast<int>(r))));
      }
      timeline[ix(t)] = {start, end};
    }
  }

 private:
  static TimeNs elapsed_ns(cudaEvent_t from, cudaEvent_t to) {
    float ms = 0;
    PARASIM_CUDA_CHECK(cudaEventElapsedTime(&ms, from, to));
    return static_cast<TimeNs>(static_cast<double>(ms) * 1e6);
  }

  cudaEvent_t timing_start(TaskId t, int member) const { return timing_events_[timing_first_[ix(t)] + 2 * ix(member)]; }
  cudaEvent_t timing_end(TaskId t, int member) const {
    return timing_events_[timing_first_[ix(t)] + 2 * ix(member) + 1];
  }

  static std::pair<std::vector<DeviceId>, int> comm_key(const TaskGraph& g, TaskId t) {
    const auto m = g.group_devices(g.group(t));
    return {std::vector<DeviceId>(m.begin(), m.end()), g.stream(t)};
  }

  void map_devices() {
    const int visible = visible_cuda_devices();
    ranks_.process_of.assign(ix(num_devices_), 0);
    ranks_.cuda_device.resize(ix(num_devices_));
    for (int d = 0; d < num_devices_; ++d)
      ranks_.cuda_device[ix(d)] = options_.devices.empty() ? d
                                  : ix(d) < options_.devices.size() ? options_.devices[ix(d)]
                                                                    : -1;
    if (visible == 0) throw RuntimeError("no CUDA device: the cuda backend needs a GPU and its driver");
    std::set<int> used;
    for (int d = 0; d < num_devices_; ++d) {
      const int c = ranks_.cuda_device[ix(d)];
      if (c < 0 || c >= visible)
        throw RuntimeError("the task graph needs " + std::to_string(num_devices_) + " GPUs but " +
                           std::to_string(visible) +
                           " are visible: run it on a machine with enough GPUs (two graph devices on one GPU would "
                           "contend for its SMs and memory and NCCL cannot place two ranks on one GPU, so parasim "
                           "does not emulate them)");
      if (!used.insert(c).second)
        throw RuntimeError("graph devices must map to distinct GPUs; CUDA device " + std::to_string(c) +
                           " is used twice");
    }
  }

  void create_streams() {
    streams_.resize(ix(num_devices_ * spd_));
    for (int s = 0; s < num_devices_ * spd_; ++s) {
      StreamState& st = streams_[ix(s)];
      st.device = s / spd_;
      st.cuda_device = ranks_.cuda_device[ix(st.device)];
      PARASIM_CUDA_CHECK(cudaSetDevice(st.cuda_device));
      PARASIM_CUDA_CHECK(cudaStreamCreateWithFlags(&st.stream, cudaStreamNonBlocking));
    }
  }

  void enable_peer_access(const TaskGraph& g) {
    std::set<std::pair<int, int>> pairs;
    for (TaskId t = 0; t < static_cast<TaskId>(g.size()); ++t)
      if (g.kind(t) == TaskKind::Transfer && g.src(t) != g.dst(t))
        pairs.insert({ranks_.cuda_device[ix(g.src(t))], ranks_.cuda_device[ix(g.dst(t))]});
    for (const auto& [a, b] : pairs) {
      int can = 0;
      PARASIM_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, a, b));
      if (!can) {
        notes_.push_back("no peer access GPU " + std::to_string(a) + " -> " + std::to_string(b) +
                         ": cudaMemcpyPeerAsync stages those copies through the host");
        continue;
      }
      PARASIM_CUDA_CHECK(cudaSetDevice(a));
      const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
      else PARASIM_CUDA_CHECK(e);
    }
  }

  void size_buffers(const TaskGraph& g) {
    for (TaskId t = 0; t < static_cast<TaskId>(g.size()); ++t) {
      const std::size_t n = floats_for(g.bytes(t));
      if (g.kind(t) == TaskKind::Transfer) {
        StreamState& st = streams_[ix(g.src(t) * spd_ + g.stream(t))];
        st.send_floats = std::max(st.send_floats, n);
        auto& out = st.outgoing_floats[g.dst(t)];
        out = std::max(out, n);
      } else if (g.kind(t) == TaskKind::Collective) {
        for (StreamIndex s : task_streams(g, t)) {
          StreamState& st = streams_[ix(s)];
          st.send_floats = std::max(st.send_floats, n);
          if (g.collective_op(t) == CollectiveOp::AllToAll) st.receive_floats = std::max(st.receive_floats, n);
        }
      }
    }
  }

  void allocate_buffers() {
    for (StreamState& st : streams_) {
      st.send = DeviceBuffer(st.cuda_device, st.send_floats * sizeof(float));
      st.receive = DeviceBuffer(st.cuda_device, st.receive_floats * sizeof(float));
      for (const auto& [dst, n] : st.outgoing_floats)
        st.outgoing.emplace(dst, DeviceBuffer(ranks_.cuda_device[ix(dst)], n * sizeof(float)));
    }
  }

  /// Free memory of `cuda_device` in bytes (cudaMemGetInfo).
  static Bytes free_memory(int cuda_device) {
    PARASIM_CUDA_CHECK(cudaSetDevice(cuda_device));
    std::size_t available = 0, total = 0;
    PARASIM_CUDA_CHECK(cudaMemGetInfo(&available, &total));
    return static_cast<Bytes>(available);
  }

  void prepare_kernels(const TaskGraph& g, const IssuePlan& plan) {
    op_.assign(g.size(), nullptr);
    // Per op and stream: why it has no kernel (reason, detail), decided at its first task.
    std::map<std::pair<const models::Op*, StreamIndex>, std::pair<StandInReason, std::string>> stand_ins;
    std::set<int> full;  // CUDA devices whose free memory fell below the reserve
    for (StreamIndex s = 0; s < plan.num_streams(); ++s) {
      StreamState& st = streams_[ix(s)];
      for (TaskId t : plan.stream_order[ix(s)]) {
        if (g.kind(t) != TaskKind::Compute) continue;
        const models::Op* op = resolve_ ? resolve_(g, t) : nullptr;
        if (!op || !kernel_phase(g.phase(t))) {
          ledger_.add("", StandInReason::NoOp);
          continue;
        }
        op_[ix(t)] = op;
        if (st.kernels.count(op) || stand_ins.count({op, s})) continue;
        const Bytes available = full.count(st.cuda_device) ? 0 : free_memory(st.cuda_device);
        if (available < options_.memory_reserve) {
          full.insert(st.cuda_device);
          stand_ins.emplace(std::pair{op, s}, std::pair{StandInReason::MemoryReserve,
                                                        "GPU " + std::to_string(st.cuda_device) + " below the " +
                                                            format_bytes(options_.memory_reserve) + " reserve"});
          continue;
        }
        try {
          // The backend (cuDNN/cuBLAS handles, workspace) can fail to allocate like any kernel.
          if (!st.backend) {
            kernels::CudaBackendOptions bo;
            bo.allow_tf32 = options_.allow_tf32;
            bo.benchmark_algorithms = options_.benchmark_algorithms;
            st.backend = kernels::make_cuda_kernel_backend(st.cuda_device, st.stream, bo);
          }
          st.kernels.emplace(op, st.backend->prepare(*op, options_.optimizer));
        } catch (const RuntimeError& e) {
          stand_ins.emplace(std::pair{op, s}, std::pair{StandInReason::PrepareFailed, std::string(e.what())});
        }
      }
    }
    for (StreamState& st : streams_)
      if (st.backend) st.backend->synchronize();
    for (TaskId t = 0; t < static_cast<TaskId>(g.size()); ++t) {
      if (!op_[ix(t)]) continue;
      const StreamIndex s = g.device(t) * spd_ + g.stream(t);
      const auto it = stand_ins.find({op_[ix(t)], s});
      if (it != stand_ins.end()) ledger_.add(op_[ix(t)]->name, it->second.first, it->second.second);
    }
    for (std::string& n : ledger_.notes()) notes_.push_back(std::move(n));
  }

  void create_communicators(const TaskGraph& g) {
    cuda_detail::SingleProcessCommunicators factory(ranks_);
    for (TaskId t = 0; t < static_cast<TaskId>(g.size()); ++t) {
      if (g.kind(t) != TaskKind::Collective) continue;
      auto key = comm_key(g, t);
      if (comms_.count(key)) continue;
      Communicator c;
      c.comms = factory.create(g.group_devices(g.group(t)));
      comms_.emplace(std::move(key), std::move(c));
    }
  }

  void create_events(const TaskGraph& g, const IssuePlan& plan) {
    for (const EventSite& site : plan.events) {
      PARASIM_CUDA_CHECK(cudaSetDevice(streams_[ix(site.stream)].cuda_device));
      cudaEvent_t e = nullptr;
      PARASIM_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      sync_events_.push_back(e);
    }
    step_start_.resize(ix(num_devices_));
    collective_done_.resize(ix(num_devices_));
    for (int d = 0; d < num_devices_; ++d) {
      PARASIM_CUDA_CHECK(cudaSetDevice(ranks_.cuda_device[ix(d)]));
      PARASIM_CUDA_CHECK(cudaEventCreate(&step_start_[ix(d)]));
      PARASIM_CUDA_CHECK(cudaEventCreateWithFlags(&collective_done_[ix(d)], cudaEventDisableTiming));
    }
    timing_first_.assign(g.size(), 0);
    issued_ = plan.issue_order;
    for (TaskId t : issued_) {
      timing_first_[ix(t)] = timing_events_.size();
      for (StreamIndex s : task_streams(g, t)) {
        PARASIM_CUDA_CHECK(cudaSetDevice(streams_[ix(s)].cuda_device));
        for (int k = 0; k < 2; ++k) {
          cudaEvent_t e = nullptr;
          PARASIM_CUDA_CHECK(cudaEventCreate(&e));
          timing_events_.push_back(e);
        }
      }
    }
  }

  OpResolver resolve_;
  CudaRuntimeOptions options_;
  std::vector<const models::Op*> op_;
  const TaskGraph* graph_ = nullptr;
  int num_devices_ = 0;
  int spd_ = 0;
  cuda_detail::RankMap ranks_;
  std::vector<StreamState> streams_;
  std::map<std::pair<std::vector<DeviceId>, int>, Communicator> comms_;
  std::vector<cudaEvent_t> sync_events_;
  std::vector<cudaEvent_t> timing_events_;
  std::vector<std::size_t> timing_first_;
  std::vector<cudaEvent_t> step_start_;
  std::vector<cudaEvent_t> collective_done_;  // per graph device: its last collective's end
  std::vector<std::vector<CollectiveOrderWait>> collective_waits_;
  std::vector<TaskId> issued_;
  std::vector<std::string> notes_;
  StandInLedger ledger_;
  bool comms_failed_ = false;  // a collective failed: abort the communicators, do not destroy them
};

}  // namespace

std::unique_ptr<StreamRuntime> make_cuda_runtime(OpResolver ops, const CudaRuntimeOptions& options) {
  return std::make_unique<CudaRuntime>(std::move(ops), options);
}

}  // namespace parasim::executor
