// The CUDA executor over MPI (see mpi_runtime.hpp): one rank per GPU, each running its share of
// the issue plan as the NCCL program nccl_program() computes (nccl_program.hpp says why it cannot
// deadlock). Built only with MPI and CUDA; nothing here has run on a GPU in CI (no GPU there).
//
// Step: device sync, MPI barrier, a start event on stream 0 that every other stream waits for;
// the host time at which that event completed is the step's origin on this rank. Each timed
// call is bracketed by two cudaEvents; their distance from the start event gives the task's
// times, gathered at every rank like the CPU runtime's (step_timeline.hpp).
//
// Failures: communicators are non-blocking (ncclConfig_t::blocking = 0), so no NCCL call blocks
// the host; after each call the rank polls ncclCommGetAsyncError. The same poll loop is the
// watchdog: an NCCL error, a dead rank (the world's heartbeat) or no progress for the world's
// call timeout aborts every communicator (ncclCommAbort) and throws, naming the ranks waited for.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "parasim/common/error.hpp"
#include "parasim/common/index.hpp"
#include "parasim/executor/cuda_runtime.hpp"
#include "parasim/executor/cuda_setup_policy.hpp"
#include "parasim/executor/issue_plan.hpp"
#include "parasim/kernels/cuda_check.hpp"
#include "parasim/kernels/cuda_kernel_backend.hpp"
#include "parasim/kernels/kernel_backend.hpp"
#include "parasim/kernels/op_phases.hpp"
#include "parasim/mpi/mpi_runtime.hpp"
#include "parasim/mpi/nccl_program.hpp"
#include "step_timeline.hpp"
#include "world_impl.hpp"

namespace parasim::executor::cuda_detail {
cudaError_t launch_spin_kernel(std::int64_t ns, cudaStream_t stream);  // executor/src/cuda_spin_kernel.cu
}

namespace parasim::mpi {

using executor::IssuePlan;
using simulator::CollectiveOp;
using simulator::TaskGraph;
using simulator::TaskId;
using simulator::TaskKind;
using simulator::TaskTiming;

bool nccl_runtime_built() { return true; }

namespace {

using detail::now_ns;
using detail::Record;
using detail::Role;

// A non-blocking communicator answers ncclInProgress while it works; that is no failure.
ncclResult_t started(ncclResult_t r) { return r == ncclInProgress ? ncclSuccess : r; }

std::size_t floats_for(Bytes b) { return ix((std::max<Bytes>(b, 0) + 3) / 4); }

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) {
    if (bytes == 0) return;
    PARASIM_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
    PARASIM_CUDA_CHECK(cudaMemset(ptr_, 0, bytes));
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    return *this;
  }
  char* bytes() const { return static_cast<char*>(ptr_); }
  float* floats() const { return static_cast<float*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

class MpiNcclRuntime final : public executor::StreamRuntime {
 public:
  MpiNcclRuntime(World& world, executor::OpResolver ops, MpiRuntimeOptions options)
      : world_(world), resolve_(std::move(ops)), options_(options) {}

  ~MpiNcclRuntime() override {
    // After a failure work may be half enqueued: ncclCommDestroy would wait for it, abort does not.
    // A non-blocking communicator is finalized (polled, for at most the call timeout) first.
    bool abort = failed_ || std::uncaught_exceptions() > 0;
    const std::vector<ncclComm_t> comms = all_comms();
    if (!abort && cudaDeviceSynchronize() == cudaSuccess) {
      for (ncclComm_t c : comms) abort = abort || started(ncclCommFinalize(c)) != ncclSuccess;
      const auto deadline = detail::Clock::now() + world_.timeouts().call;
      for (int idle = 0; !abort; ++idle) {
        bool pending = false;
        for (ncclComm_t c : comms) {
          ncclResult_t state = ncclSuccess;
          if (ncclCommGetAsyncError(c, &state) != ncclSuccess || (state != ncclSuccess && state != ncclInProgress))
            abort = true;
          pending = pending || state == ncclInProgress;
        }
        if (!pending) break;
        if (detail::Clock::now() > deadline) abort = true;
        detail::idle_pause(idle, false);
      }
    }
    for (ncclComm_t c : comms) (void)(abort ? ncclCommAbort(c) : ncclCommDestroy(c));
    for (cudaEvent_t e : events_)
      if (e) cudaEventDestroy(e);
    kernels_.clear();
    backends_.clear();
    for (cudaStream_t s : streams_)
      if (s) cudaStreamDestroy(s);
  }

  std::string name() const override {
    return "mpi-cuda (" + std::to_string(world_.size()) + " ranks, one GPU each, on " +
           std::to_string(world_.hosts().size()) + " host" + (world_.hosts().size() == 1 ? "" : "s") + ")";
  }
  std::vector<std::string> notes() const override { return notes_; }
  std::int64_t stand_in_tasks() const override { return stand_ins_; }

  void setup(const TaskGraph& graph, const IssuePlan& plan) override {
    if (graph_) throw RuntimeError("mpi nccl runtime: setup() called twice");
    if (graph.num_devices() != world_.size())
      throw InputError("the task graph has " + std::to_string(graph.num_devices()) + " devices and the MPI job " +
                       std::to_string(world_.size()) + " ranks: run one rank per device (mpirun -np " +
                       std::to_string(graph.num_devices()) + ")");
    graph_ = &graph;
    me_ = world_.rank();
    pick_device();
    program_ = nccl_program(graph, plan, me_);
    spd_ = plan.streams_per_device;
    streams_.assign(ix(spd_) + 1, nullptr);  // the graph's streams, then the receive stream
    for (cudaStream_t& s : streams_) PARASIM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    make_communicators();
    size_buffers(graph);
    make_events(plan);
    prepare_kernels(graph);
    const auto all = world_.allgather(std::to_string(ledger_.tasks()), "the executor's stand-in counts");
    for (const std::string& s : all) stand_ins_ += std::stoll(s);
    offset_ = detail::clock_offset(world_);
    notes_.emplace_back(
        "one MPI rank per GPU; transfers are ncclSend/ncclRecv, cross-rank waits 1-byte NCCL messages, and each GPU "
        "runs its NCCL calls one at a time in the plan's order (which rules out deadlocks between communicators)");
    for (std::string& n : ledger_.notes()) notes_.push_back("rank " + std::to_string(me_) + ": " + n);
  }

  // The program is fixed by the plan at setup(); issue_step()'s calls carry nothing new.
  void begin_step() override {}
  void wait_event(executor::StreamIndex, executor::EventId) override {}
  void record_event(executor::StreamIndex, executor::EventId) override {}
  void launch_compute(executor::StreamIndex, TaskId) override {}
  void launch_transfer(executor::StreamIndex, TaskId) override {}
  void launch_collective(std::span<const executor::StreamIndex>, TaskId) override {}

  void finish_step(std::vector<TaskTiming>& timeline) override {
    ++step_;
    PARASIM_CUDA_CHECK(cudaDeviceSynchronize());
    world_.barrier("the start of step " + std::to_string(step_));
    PARASIM_CUDA_CHECK(cudaEventRecord(start_, streams_[0]));
    for (std::size_t s = 1; s < streams_.size(); ++s) PARASIM_CUDA_CHECK(cudaStreamWaitEvent(streams_[s], start_, 0));
    PARASIM_CUDA_CHECK(cudaEventSynchronize(start_));
    const TimeNs t0 = now_ns();
    for (std::size_t k = 0; k < program_.calls.size(); ++k) issue(k);
    wait_for_step();
    std::vector<Record> records;
    for (std::size_t k = 0; k < program_.calls.size(); ++k) {
      const NcclCall& c = program_.calls[k];
      if (timed_[k] < 0) continue;
      const TimeNs s = t0 + elapsed_ns(start_, events_[ix(timed_[k])]);
      const TimeNs e = t0 + elapsed_ns(start_, events_[ix(timed_[k]) + 1]);
      switch (c.kind) {
        case NcclCallKind::Compute: records.push_back({c.task, Role::Compute, s, e}); break;
        case NcclCallKind::Copy:
        case NcclCallKind::Send: records.push_back({c.task, Role::TransferSent, s, e}); break;
        case NcclCallKind::Recv: records.push_back({c.task, Role::TransferReceived, -1, e}); break;
        case NcclCallKind::Collective: records.push_back({c.task, Role::CollectiveMember, s, e}); break;
        default: break;
      }
    }
    detail::gather_timeline(world_, *graph_, records, t0, offset_, step_, timeline);
  }

 private:
  static TimeNs elapsed_ns(cudaEvent_t from, cudaEvent_t to) {
    float ms = 0;
    PARASIM_CUDA_CHECK(cudaEventElapsedTime(&ms, from, to));
    return static_cast<TimeNs>(static_cast<double>(ms) * 1e6);
  }

  void pick_device() {
    const int visible = executor::visible_cuda_devices();
    const RankPlace& p = world_.place();
    if (visible == 0)
      throw RuntimeError("rank " + std::to_string(me_) + " on " + p.host +
                         ": no CUDA device is visible (the cuda backend needs a GPU and its driver per rank)");
    device_ = rank_cuda_device(p.local_rank, visible);
    if (device_ < 0)
      throw RuntimeError("rank " + std::to_string(me_) + " is local rank " + std::to_string(p.local_rank) + " on " +
                         p.host + ", which has " + std::to_string(visible) +
                         " visible GPUs: run at most one rank per GPU on each host");
    PARASIM_CUDA_CHECK(cudaSetDevice(device_));
  }

  cudaStream_t stream(int s) const { return streams_[s == kReceiveStream ? ix(spd_) : ix(s)]; }

  std::vector<ncclComm_t> all_comms() const {
    std::vector<ncclComm_t> v;
    for (const auto& [key, c] : comms_) v.push_back(c);
    if (p2p_) v.push_back(p2p_);
    return v;
  }

  // One unique id per communicator, made by its lowest rank (NcclCommKey::root) and shared in
  // one allgather; the job-wide p2p communicator's root is rank 0. Every rank then initialises
  // its communicators inside one NCCL group.
  void make_communicators() {
    std::vector<NcclCommKey> keys = program_.comms;
    bool job_p2p = program_.job_p2p;
    if (job_p2p) {
      NcclCommKey world_key;
      for (int r = 0; r < world_.size(); ++r) world_key.members.push_back(r);
      world_key.stream = -1;
      keys.push_back(world_key);
    }
    std::string mine;
    for (std::size_t k = 0; k < keys.size(); ++k) {
      if (keys[k].root() != me_) continue;
      ncclUniqueId id;
      PARASIM_NCCL_CHECK(ncclGetUniqueId(&id));
      mine += std::to_string(k) + ":";
      mine.append(id.internal, sizeof id.internal);
    }
    const std::vector<std::string> all = world_.allgather(mine, "the NCCL unique ids");
    std::map<std::size_t, ncclUniqueId> ids;
    for (const std::string& s : all)
      for (std::size_t pos = 0; pos < s.size();) {
        const std::size_t colon = s.find(':', pos);
        const std::size_t k = std::stoul(s.substr(pos, colon - pos));
        ncclUniqueId id;
        std::memcpy(id.internal, s.data() + colon + 1, sizeof id.internal);
        ids[k] = id;
        pos = colon + 1 + sizeof id.internal;
      }
    PARASIM_NCCL_CHECK(ncclGroupStart());
    kernels::NcclGroupGuard group([] { PARASIM_NCCL_CHECK(started(ncclGroupEnd())); }, [this] { failed_ = true; });
    std::vector<ncclComm_t> made;
    const ncclConfig_t initial = NCCL_CONFIG_INITIALIZER;
    std::vector<ncclConfig_t> configs(keys.size(), initial);  // they outlive the group
    for (std::size_t k = 0; k < keys.size(); ++k) {
      const auto& m = keys[k].members;
      const auto at = std::find(m.begin(), m.end(), me_);
      if (at == m.end()) continue;
      configs[k].blocking = 0;
      ncclComm_t comm = nullptr;
      PARASIM_NCCL_CHECK(started(ncclCommInitRankConfig(&comm, static_cast<int>(m.size()), ids.at(k),
                                                        static_cast<int>(at - m.begin()), &configs[k])));
      if (keys[k].stream < 0) p2p_ = comm;
      else comms_[static_cast<int>(k)] = comm;
      made.push_back(comm);
    }
    group.close();
    settle(made, "creating the NCCL communicators", {});
  }

  void size_buffers(const TaskGraph& g) {
    std::size_t send = 1, receive = 1;
    for (const NcclCall& c : program_.calls) {
      if (c.kind == NcclCallKind::Send || c.kind == NcclCallKind::Copy) send = std::max(send, ix(c.bytes));
      if (c.kind == NcclCallKind::Recv || c.kind == NcclCallKind::Copy) receive = std::max(receive, ix(c.bytes));
      if (c.kind == NcclCallKind::Collective) {
        send = std::max(send, floats_for(c.bytes) * 4);
        if (g.collective_op(c.task) == CollectiveOp::AllToAll) receive = std::max(receive, floats_for(c.bytes) * 4);
      }
    }
    send_ = DeviceBuffer(send);
    receive_ = DeviceBuffer(receive);
    signal_out_ = DeviceBuffer(1);
    signal_in_ = DeviceBuffer(1);
  }

  cudaEvent_t new_event(bool timing) {
    cudaEvent_t e = nullptr;
    PARASIM_CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
    events_.push_back(e);
    return e;
  }

  void make_events(const IssuePlan& plan) {
    PARASIM_CUDA_CHECK(cudaEventCreate(&start_));
    events_.push_back(start_);
    nccl_done_ = new_event(false);
    local_.assign(plan.events.size(), nullptr);
    arrival_.assign(plan.events.size(), nullptr);
    timed_.assign(program_.calls.size(), -1);
    arrivals_of_task_.assign(graph_->size(), {});
    for (std::size_t k = 0; k < program_.calls.size(); ++k) {
      const NcclCall& c = program_.calls[k];
      switch (c.kind) {
        case NcclCallKind::RecordEvent: local_[ix(c.event)] = new_event(false); break;
        case NcclCallKind::WaitArrival: {
          cudaEvent_t& a = arrival_[ix(c.event)];
          if (!a) {
            a = new_event(false);
            const TaskId t = plan.events[ix(c.event)].task;
            // The event follows a transfer into this rank: its receive is the arrival (no signal).
            if (graph_->kind(t) == TaskKind::Transfer && graph_->dst(t) == me_) arrivals_of_task_[ix(t)].push_back(a);
          }
          break;
        }
        case NcclCallKind::Compute:
        case NcclCallKind::Copy:
        case NcclCallKind::Send:
        case NcclCallKind::Recv:
        case NcclCallKind::SignalSend:  // (timed only to tell, on a stall, which calls finished)
        case NcclCallKind::SignalRecv:
        case NcclCallKind::Collective:
          timed_[k] = static_cast<int>(events_.size());
          new_event(true);
          new_event(true);
          break;
        default: break;
      }
    }
  }

  void prepare_kernels(const TaskGraph& g) {
    op_.assign(g.size(), nullptr);
    std::map<const models::Op*, std::pair<executor::StandInReason, std::string>> refused;
    for (const NcclCall& c : program_.calls) {
      if (c.kind != NcclCallKind::Compute) continue;
      const models::Op* op = resolve_ ? resolve_(g, c.task) : nullptr;
      if (!op || !kernels::kernel_phase(g.phase(c.task))) {
        ledger_.add("", executor::StandInReason::NoOp);
        continue;
      }
      const auto key = std::pair{op, c.stream};
      if (!kernels_.count(key) && !refused.count(op)) {
        std::size_t available = 0, total = 0;
        PARASIM_CUDA_CHECK(cudaMemGetInfo(&available, &total));
        if (static_cast<Bytes>(available) < executor::kDefaultCudaMemoryReserve) {
          refused.emplace(op, std::pair{executor::StandInReason::MemoryReserve,
                                        "GPU " + std::to_string(device_) + " below the " +
                                            format_bytes(executor::kDefaultCudaMemoryReserve) + " reserve"});
        } else {
          try {
            auto& backend = backends_[c.stream];
            if (!backend) backend = kernels::make_cuda_kernel_backend(device_, stream(c.stream), {});
            kernels_.emplace(key, backend->prepare(*op, options_.optimizer));
          } catch (const RuntimeError& e) {
            refused.emplace(op, std::pair{executor::StandInReason::PrepareFailed, std::string(e.what())});
          }
        }
      }
      if (const auto it = refused.find(op); it != refused.end()) {
        ledger_.add(op->name, it->second.first, it->second.second);
        continue;
      }
      op_[ix(c.task)] = op;
    }
    for (auto& [s, b] : backends_) b->synchronize();
  }

  // ------------------------------------------------------------------ one step
  void issue(std::size_t k) {
    const NcclCall& c = program_.calls[k];
    const TaskGraph& g = *graph_;
    cudaStream_t st = stream(c.stream);
    if (c.is_nccl() && c.after_stream != kNoStream) PARASIM_CUDA_CHECK(cudaStreamWaitEvent(st, nccl_done_, 0));
    if (timed_[k] >= 0) PARASIM_CUDA_CHECK(cudaEventRecord(events_[ix(timed_[k])], st));
    switch (c.kind) {
      case NcclCallKind::WaitEvent: PARASIM_CUDA_CHECK(cudaStreamWaitEvent(st, local_[ix(c.event)], 0)); break;
      case NcclCallKind::WaitArrival: PARASIM_CUDA_CHECK(cudaStreamWaitEvent(st, arrival_[ix(c.event)], 0)); break;
      case NcclCallKind::RecordEvent: PARASIM_CUDA_CHECK(cudaEventRecord(local_[ix(c.event)], st)); break;
      case NcclCallKind::Compute: {
        const models::Op* op = op_[ix(c.task)];
        const auto it = op ? kernels_.find({op, c.stream}) : kernels_.end();
        if (it != kernels_.end()) it->second->run(*kernels::kernel_phase(g.phase(c.task)));
        else PARASIM_CUDA_CHECK(executor::cuda_detail::launch_spin_kernel(g.duration(c.task), st));
        break;
      }
      case NcclCallKind::Copy:
        PARASIM_CUDA_CHECK(cudaMemcpyAsync(receive_.bytes(), send_.bytes(), ix(std::max<Bytes>(c.bytes, 0)),
                                           cudaMemcpyDeviceToDevice, st));
        break;
      case NcclCallKind::Send:
        PARASIM_NCCL_CHECK(started(ncclSend(send_.bytes(), ix(c.bytes), ncclInt8, c.peer, p2p_, st)));
        settle({p2p_}, "sending " + std::string(g.name(c.task)), {c.peer});
        break;
      case NcclCallKind::Recv:
        PARASIM_NCCL_CHECK(started(ncclRecv(receive_.bytes(), ix(c.bytes), ncclInt8, c.peer, p2p_, st)));
        settle({p2p_}, "receiving " + std::string(g.name(c.task)), {c.peer});
        break;
      case NcclCallKind::SignalSend:
        PARASIM_NCCL_CHECK(started(ncclSend(signal_out_.bytes(), 1, ncclInt8, c.peer, p2p_, st)));
        settle({p2p_}, "signalling an event", {c.peer});
        break;
      case NcclCallKind::SignalRecv:
        PARASIM_NCCL_CHECK(started(ncclRecv(signal_in_.bytes(), 1, ncclInt8, c.peer, p2p_, st)));
        settle({p2p_}, "waiting for an event's signal", {c.peer});
        PARASIM_CUDA_CHECK(cudaEventRecord(arrival_[ix(c.event)], st));
        break;
      case NcclCallKind::Collective: collective(c, st); break;
    }
    if (c.kind == NcclCallKind::Recv)
      for (cudaEvent_t a : arrivals_of_task_[ix(c.task)]) PARASIM_CUDA_CHECK(cudaEventRecord(a, st));
    if (timed_[k] >= 0) PARASIM_CUDA_CHECK(cudaEventRecord(events_[ix(timed_[k]) + 1], st));
    if (c.is_nccl()) PARASIM_CUDA_CHECK(cudaEventRecord(nccl_done_, st));
  }

  void collective(const NcclCall& c, cudaStream_t st) {
    const TaskGraph& g = *graph_;
    const ncclComm_t comm = comms_.at(c.comm);
    const auto& members = program_.comms[ix(c.comm)].members;
    const int n = static_cast<int>(members.size());
    const int r = static_cast<int>(std::find(members.begin(), members.end(), me_) - members.begin());
    const std::size_t count = floats_for(c.bytes), part = count / ix(n);
    float* buf = send_.floats();
    switch (g.collective_op(c.task)) {
      case CollectiveOp::AllReduce:
        PARASIM_NCCL_CHECK(started(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, st)));
        break;
      case CollectiveOp::ReduceScatter:  // in place: rank r's output is chunk r of its input
        PARASIM_NCCL_CHECK(started(ncclReduceScatter(buf, buf + ix(r) * part, part, ncclFloat, ncclSum, comm, st)));
        break;
      case CollectiveOp::AllGather:  // in place: rank r's input is chunk r of its output
        PARASIM_NCCL_CHECK(started(ncclAllGather(buf + ix(r) * part, buf, part, ncclFloat, comm, st)));
        break;
      case CollectiveOp::Broadcast:
        PARASIM_NCCL_CHECK(started(ncclBroadcast(buf, buf, count, ncclFloat, 0, comm, st)));
        break;
      case CollectiveOp::AllToAll: {
        PARASIM_NCCL_CHECK(ncclGroupStart());
        kernels::NcclGroupGuard group([] { PARASIM_NCCL_CHECK(started(ncclGroupEnd())); }, [this] { failed_ = true; });
        for (int p = 0; p < n; ++p) {
          PARASIM_NCCL_CHECK(started(ncclSend(buf + ix(p) * part, part, ncclFloat, p, comm, st)));
          PARASIM_NCCL_CHECK(started(ncclRecv(receive_.floats() + ix(p) * part, part, ncclFloat, p, comm, st)));
        }
        group.close();
        break;
      }
    }
    std::vector<int> peers;
    for (int m : members)
      if (m != me_) peers.push_back(m);
    settle({comm}, "collective " + std::string(g.name(c.task)), peers);
  }

  // Polls `comms` until none is in progress: the watchdog of every NCCL call.
  void settle(const std::vector<ncclComm_t>& comms, const std::string& what, const std::vector<int>& peers) {
    const auto deadline = detail::Clock::now() + world_.timeouts().call;
    for (int idle = 0;; ++idle) {
      bool pending = false;
      for (ncclComm_t c : comms) {
        ncclResult_t state = ncclSuccess;
        PARASIM_NCCL_CHECK(ncclCommGetAsyncError(c, &state));
        if (state == ncclInProgress) pending = true;
        else if (state != ncclSuccess) give_up(what, peers, std::string("NCCL reports ") + ncclGetErrorString(state));
      }
      if (!pending) return;
      watchdog(deadline, what, peers);
      detail::idle_pause(idle, false);
    }
  }

  void watchdog(detail::Clock::time_point deadline, const std::string& what, const std::vector<int>& peers) {
    if (const int dead = world_.dead_rank(); dead >= 0)
      give_up(what, {dead}, "rank " + std::to_string(dead) + " sent no heartbeat");
    if (detail::Clock::now() > deadline)
      give_up(what, peers,
              "no progress for " +
                  std::to_string(std::chrono::duration_cast<std::chrono::seconds>(world_.timeouts().call).count()) +
                  " s while every rank still sends heartbeats");
  }

  [[noreturn]] void give_up(const std::string& what, const std::vector<int>& peers, const std::string& why) {
    failed_ = true;
    for (ncclComm_t c : all_comms())
      if (c) (void)ncclCommAbort(c);
    comms_.clear();
    p2p_ = nullptr;
    std::string list;
    for (int p : peers) list += (list.empty() ? "" : ", ") + std::to_string(p);
    throw RuntimeError("rank " + std::to_string(me_) + ": step " + std::to_string(step_) + ": " + what +
                       (peers.empty() ? std::string() : " (ranks " + list + ")") + ": " + why +
                       "; the NCCL communicators were aborted");
  }

  // Waits for every stream, watching NCCL errors, dead ranks and progress.
  void wait_for_step() {
    std::size_t done = 0;  // timed calls known finished, in program order per stream is enough
    auto deadline = detail::Clock::now() + world_.timeouts().call;
    for (int idle = 0;; ++idle) {
      bool busy = false;
      for (cudaStream_t s : streams_) {
        const cudaError_t e = cudaStreamQuery(s);
        if (e == cudaErrorNotReady) busy = true;
        else PARASIM_CUDA_CHECK(e);
      }
      if (!busy) return;
      std::size_t now_done = 0;
      for (std::size_t k = 0; k < timed_.size(); ++k)
        if (timed_[k] >= 0 && cudaEventQuery(events_[ix(timed_[k]) + 1]) == cudaSuccess) ++now_done;
      if (now_done > done) {
        done = now_done;
        deadline = detail::Clock::now() + world_.timeouts().call;
      }
      for (ncclComm_t c : all_comms()) {
        ncclResult_t state = ncclSuccess;
        PARASIM_NCCL_CHECK(ncclCommGetAsyncError(c, &state));
        if (state != ncclSuccess && state != ncclInProgress)
          give_up("the step's NCCL calls", {}, std::string("NCCL reports ") + ncclGetErrorString(state));
      }
      watchdog(deadline, "the step's GPU work", waiting_for());
      detail::idle_pause(idle, false);
    }
  }

  // The peers of the first NCCL call not yet finished.
  std::vector<int> waiting_for() const {
    for (std::size_t k = 0; k < program_.calls.size(); ++k) {
      const NcclCall& c = program_.calls[k];
      if (!c.is_nccl() || (timed_[k] >= 0 && cudaEventQuery(events_[ix(timed_[k]) + 1]) == cudaSuccess)) continue;
      if (c.peer >= 0) return {c.peer};
      if (c.kind == NcclCallKind::Collective) {
        std::vector<int> peers;
        for (int m : program_.comms[ix(c.comm)].members)
          if (m != me_) peers.push_back(m);
        return peers;
      }
    }
    return {};
  }

  World& world_;
  executor::OpResolver resolve_;
  MpiRuntimeOptions options_;
  const TaskGraph* graph_ = nullptr;
  int me_ = 0;
  int spd_ = 0;
  int device_ = 0;
  NcclProgram program_;
  std::vector<cudaStream_t> streams_;
  std::map<int, ncclComm_t> comms_;  // by index into program_.comms
  ncclComm_t p2p_ = nullptr;         // every rank: transfers and signals
  DeviceBuffer send_, receive_, signal_out_, signal_in_;
  std::vector<cudaEvent_t> events_;  // every event this runtime made (destroyed together)
  cudaEvent_t start_ = nullptr, nccl_done_ = nullptr;
  std::vector<cudaEvent_t> local_, arrival_;                // per plan event
  std::vector<std::vector<cudaEvent_t>> arrivals_of_task_;  // per task: arrivals its receive records
  std::vector<int> timed_;  // per call: index of its start event in events_ (end = +1), or -1
  std::map<int, std::unique_ptr<kernels::KernelBackend>> backends_;  // per stream
  std::map<std::pair<const models::Op*, int>, std::unique_ptr<kernels::OpKernel>> kernels_;
  std::vector<const models::Op*> op_;
  executor::StandInLedger ledger_;
  std::vector<std::string> notes_;
  std::int64_t stand_ins_ = 0;
  bool failed_ = false;
  int step_ = 0;
  TimeNs offset_ = 0;
};

}  // namespace

std::unique_ptr<executor::StreamRuntime> make_mpi_nccl_runtime(World& world, executor::OpResolver ops,
                                                               const MpiRuntimeOptions& options) {
  return std::make_unique<MpiNcclRuntime>(world, std::move(ops), options);
}

}  // namespace parasim::mpi
