// The CPU runtime (see cpu_runtime.hpp): one pinned worker thread per used stream, real oneDNN
// kernels, memcpy transfers, ring collectives among threads, futex-backed events.
#include "parasim/executor/cpu_runtime.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "cpu_sync.hpp"
#include "parasim/kernels/op_phases.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/index.hpp"
#include "parasim/executor/cpu_collectives.hpp"
#include "parasim/executor/issue_plan.hpp"
#include "parasim/kernels/kernel_backend.hpp"

namespace parasim::executor {

using simulator::CollectiveOp;
using simulator::DeviceId;
using simulator::TaskKind;

std::vector<int> allowed_cores() {
  std::vector<int> cores;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cores.push_back(c);
  if (cores.empty()) cores.push_back(0);
  return cores;
}

bool apply_thread_priority(CpuRuntimeOptions::Priority priority, bool communication) {
  switch (priority) {
    case CpuRuntimeOptions::Priority::Default: return true;
    case CpuRuntimeOptions::Priority::Boosted:
      // On Linux the nice value of PRIO_PROCESS with a thread id applies to that thread.
      return setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), -20) == 0;
    case CpuRuntimeOptions::Priority::Fifo: {
      sched_param p{};
      p.sched_priority = kComputePriority + (communication ? 1 : 0);
      return pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) == 0;
    }
  }
  return false;
}

PriorityScope::PriorityScope(CpuRuntimeOptions::Priority priority) {
  sched_param old{};
  if (pthread_getschedparam(pthread_self(), &old_policy_, &old) != 0) return;
  old_priority_ = old.sched_priority;
  errno = 0;
  old_nice_ = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  ok_ = apply_thread_priority(priority);
}

PriorityScope::~PriorityScope() {
  if (!ok_) return;
  sched_param p{};
  p.sched_priority = old_priority_;
  pthread_setschedparam(pthread_self(), old_policy_, &p);
  setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), old_nice_);
}

namespace {

using detail::now_ns;

std::size_t floats_for(Bytes b) { return ix((std::max<Bytes>(b, 0) + 3) / 4); }

using kernels::kernel_phase;

/// How long a ring collective's rank spins at a barrier before it sleeps.
constexpr TimeNs kCollectiveSpinNs = 50'000;

void spin_for(TimeNs ns) {
  const TimeNs until = now_ns() + ns;
  while (now_ns() < until) detail::cpu_relax();
}

struct Item {
  CommandKind kind;
  TaskId task;
  EventId event;
};

struct Worker {
  StreamIndex stream = 0;
  DeviceId device = 0;
  int core = -1;
  std::thread thread;
  std::vector<Item> items;  // this step's program for this stream
  std::unique_ptr<kernels::KernelBackend> backend;
  std::map<const models::Op*, std::unique_ptr<kernels::OpKernel>> kernels;
  std::vector<const models::Op*> ops;         // ops of its compute tasks (setup input)
  std::vector<std::string> unrunnable;        // "conv1: <why>" (setup output)
  std::size_t send_floats = 0, receive_floats = 0;
  std::vector<float> send, receive;
  std::map<DeviceId, std::size_t> outgoing_floats;       // transfer destinations it writes
  std::map<DeviceId, std::vector<float>> outgoing;        // destination buffers (per dst device)
  std::exception_ptr error;
};

enum class Job : std::uint8_t { Setup, Step, Stop };

class CpuRuntime final : public StreamRuntime {
 public:
  CpuRuntime(OpResolver ops, CpuRuntimeOptions options) : resolve_(std::move(ops)), options_(options) {}
  ~CpuRuntime() override { stop(); }

  std::string name() const override {
    return "cpu (" + std::to_string(workers_.size()) + " worker threads on " + std::to_string(cores_.size()) +
           " cores)";
  }
  std::vector<std::string> notes() const override { return notes_; }

  void setup(const TaskGraph& graph, const IssuePlan& plan) override {
    if (graph_) throw RuntimeError("cpu runtime: setup() called twice");
    graph_ = &graph;
    plan_streams_ = plan.streams_per_device;
    cores_ = allowed_cores();
    make_workers(graph, plan);
    spin_ns_ = options_.spin_ns >= 0 ? options_.spin_ns : (workers_.size() <= cores_.size() ? 50'000 : 0);
    yield_after_record_ = workers_.size() > cores_.size();
    make_communicators(graph);
    size_buffers(graph);
    event_count_ = plan.events.size();
    events_ = std::make_unique<detail::StepEvent[]>(std::max<std::size_t>(event_count_, 1));
    start_.assign(graph.size(), -1);
    end_.assign(graph.size(), -1);
    kernel_.assign(graph.size(), nullptr);
    phase_.assign(graph.size(), profiler::Phase::Forward);
    op_.assign(graph.size(), nullptr);
    if (resolve_)
      for (TaskId t = 0; t < static_cast<TaskId>(graph.size()); ++t)
        if (graph.kind(t) == TaskKind::Compute) op_[ix(t)] = resolve_(graph, t);
    collect_ops(graph, plan);
    for (Worker& w : workers_) w.thread = std::thread([this, &w] { worker_main(w); });
    run_job(Job::Setup);
    bind_tasks(graph);
    write_notes(graph);
  }

  void begin_step() override {
    if (broken_) throw RuntimeError("cpu runtime: a previous step failed");
    for (Worker& w : workers_) w.items.clear();
  }
  void wait_event(StreamIndex s, EventId e) override {
    worker(s).items.push_back({CommandKind::Wait, simulator::kNoTask, e});
  }
  void record_event(StreamIndex s, EventId e) override {
    worker(s).items.push_back({CommandKind::Record, simulator::kNoTask, e});
  }
  void launch_compute(StreamIndex s, TaskId t) override { worker(s).items.push_back({CommandKind::Launch, t, -1}); }
  void launch_transfer(StreamIndex s, TaskId t) override { worker(s).items.push_back({CommandKind::Launch, t, -1}); }
  void launch_collective(std::span<const StreamIndex> streams, TaskId t) override {
    for (StreamIndex s : streams) worker(s).items.push_back({CommandKind::Launch, t, -1});
  }

  void finish_step(std::vector<TaskTiming>& timeline) override {
    ++step_;
    run_job(Job::Step);
    const TaskGraph& g = *graph_;
    for (TaskId t = 0; t < static_cast<TaskId>(g.size()); ++t) {
      if (g.kind(t) == TaskKind::Marker) continue;
      if (g.kind(t) == TaskKind::Collective) {
        const CollectiveSlot& c = collective_[ix(t)];
        // Starts when the last member arrived; ends when the first member left the final
        // barrier: by then every member's data movement is done (every ring step ends at a
        // barrier), and each member returns from it a wake-up later or not at all.
        TimeNs s = -1, e = INT64_MAX;
        for (std::size_t r = 0; r < c.members; ++r) {
          s = std::max(s, arrive_[c.first + r]);
          e = std::min(e, finish_[c.first + r]);
        }
        timeline[ix(t)] = {s - t0_, e - t0_};
      } else if (start_[ix(t)] >= 0) {
        timeline[ix(t)] = {start_[ix(t)] - t0_, end_[ix(t)] - t0_};
      }
    }
  }

 private:
  struct CollectiveSlot {
    RingCommunicator* comm = nullptr;
    std::size_t first = 0;    // index of member 0 in arrive_/finish_
    std::size_t members = 0;
  };

  Worker& worker(StreamIndex s) {
    const int w = worker_of_stream_[ix(s)];
    if (w < 0) throw RuntimeError("cpu runtime: stream " + std::to_string(s) + " has no worker (not in the plan)");
    return workers_[ix(w)];
  }

  void make_workers(const TaskGraph& graph, const IssuePlan& plan) {
    worker_of_stream_.assign(ix(plan.num_streams()), -1);
    std::size_t used = 0;
    for (const auto& order : plan.stream_order) used += order.empty() ? 0 : 1;
    workers_ = std::vector<Worker>(used);
    std::size_t next = 0;
    for (StreamIndex s = 0; s < plan.num_streams(); ++s) {
      if (plan.stream_order[ix(s)].empty()) continue;
      Worker& w = workers_[next];
      worker_of_stream_[ix(s)] = static_cast<int>(next++);
      w.stream = s;
      w.device = s / plan.streams_per_device;
      const int stream_in_device = s % plan.streams_per_device;
      const int slot = w.device + (options_.spread_streams ? stream_in_device * graph.num_devices() : 0);
      w.core = cores_[ix(slot) % cores_.size()];
    }
  }

  void collect_ops(const TaskGraph& graph, const IssuePlan& plan) {
    for (Worker& w : workers_) {
      for (TaskId t : plan.stream_order[ix(w.stream)])
        if (graph.kind(t) == TaskKind::Compute && op_[ix(t)] && kernel_phase(graph.phase(t)))
          w.ops.push_back(op_[ix(t)]);
      std::sort(w.ops.begin(), w.ops.end());
      w.ops.erase(std::unique(w.ops.begin(), w.ops.end()), w.ops.end());
    }
  }

  void make_communicators(const TaskGraph& graph) {
    std::map<std::pair<std::vector<DeviceId>, int>, RingCommunicator*> by_key;
    collective_.assign(graph.size(), {});
    for (TaskId t = 0; t < static_cast<TaskId>(graph.size()); ++t) {
      if (graph.kind(t) != TaskKind::Collective) continue;
      const auto members = graph.group_devices(graph.group(t));
      auto key = std::make_pair(std::vector<DeviceId>(members.begin(), members.end()), graph.stream(t));
      auto it = by_key.find(key);
      if (it == by_key.end()) {
        // Ring ranks spin at each step's barrier even when workers outnumber cores: while a
        // collective runs, the compute workers sharing its cores mostly wait for it, and a futex
        // sleep on an idle vCPU cost up to ~0.5 ms here (tiny_lstm dp=2's 1.6 MiB all-reduce
        // measured 0.11 or 0.60 ms from one run to the next with no spinning).
        comms_.push_back(std::make_unique<RingCommunicator>(static_cast<int>(members.size()),
                                                            std::max<TimeNs>(spin_ns_, kCollectiveSpinNs)));
        it = by_key.emplace(std::move(key), comms_.back().get()).first;
      }
      collective_[ix(t)] = {it->second, arrive_.size(), members.size()};
      arrive_.resize(arrive_.size() + members.size(), -1);
      finish_.resize(finish_.size() + members.size(), -1);
    }
  }

  void size_buffers(const TaskGraph& graph) {
    for (TaskId t = 0; t < static_cast<TaskId>(graph.size()); ++t) {
      const std::size_t n = floats_for(graph.bytes(t));
      if (graph.kind(t) == TaskKind::Transfer) {
        Worker& w = worker(graph.src(t) * plan_streams_ + graph.stream(t));
        w.send_floats = std::max(w.send_floats, n);
        auto& out = w.outgoing_floats[graph.dst(t)];
        out = std::max(out, n);
      } else if (graph.kind(t) == TaskKind::Collective) {
        for (StreamIndex s : task_streams(graph, t)) {
          Worker& w = worker(s);
          w.send_floats = std::max(w.send_floats, n);
          if (graph.collective_op(t) == CollectiveOp::AllToAll) w.receive_floats = std::max(w.receive_floats, n);
        }
      }
    }
  }

  // After setup: per compute task, the kernel its worker prepared.
  void bind_tasks(const TaskGraph& graph) {
    for (TaskId t = 0; t < static_cast<TaskId>(graph.size()); ++t) {
      if (graph.kind(t) != TaskKind::Compute) continue;
      Worker& w = worker(graph.device(t) * plan_streams_ + graph.stream(t));
      const auto phase = kernel_phase(graph.phase(t));
      auto it = w.kernels.find(op_[ix(t)]);
      if (phase && it != w.kernels.end()) {
        kernel_[ix(t)] = it->second.get();
        phase_[ix(t)] = *phase;
      } else {
        ++synthetic_tasks_;
      }
    }
  }

  std::int64_t stand_in_tasks() const override { return synthetic_tasks_; }

  void write_notes(const TaskGraph& graph) {
    if (priority_refused_.load())
      notes_.emplace_back(
          "raising the workers' priority was refused (needs CAP_SYS_NICE): other processes may preempt them");
    if (workers_.size() > cores_.size())
      notes_.push_back(std::to_string(workers_.size()) + " worker threads (devices x used streams) share " +
                       std::to_string(cores_.size()) +
                       " cores: work the graph runs in parallel partly runs one after another");
    if (synthetic_tasks_ > 0)
      notes_.push_back(std::to_string(synthetic_tasks_) +
                       " compute tasks have no runnable kernel and spin for their graph duration (not measured)");
    std::map<std::string, int> seen;
    for (const Worker& w : workers_)
      for (const std::string& u : w.unrunnable)
        if (seen[u]++ == 0) notes_.push_back("no kernel: " + u);
    (void)graph;
  }

  // ------------------------------------------------------------------ threads
  void run_job(Job job) {
    job_ = job;
    const std::uint32_t target = done_.load(std::memory_order_acquire) + static_cast<std::uint32_t>(workers_.size());
    t0_ = now_ns();
    go_.fetch_add(1, std::memory_order_release);
    go_.notify_all();
    std::atomic<bool> never{false};
    detail::wait_for(done_, [target](std::uint32_t v) { return v >= target; }, 0, never);
    if (job == Job::Stop) return;
    for (Worker& w : workers_) {
      if (!w.error) continue;
      broken_ = true;
      std::exception_ptr e = w.error;
      for (Worker& x : workers_) x.error = nullptr;
      std::rethrow_exception(e);
    }
  }

  void stop() {
    if (workers_.empty() || stopped_) return;
    stopped_ = true;
    run_job(Job::Stop);
    for (Worker& w : workers_)
      if (w.thread.joinable()) w.thread.join();
  }

  void pin(const Worker& w) {
    if (options_.pin_threads) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(w.core, &set);
      pthread_setaffinity_np(pthread_self(), sizeof set, &set);  // best effort: a failure only costs locality
    }
    if (!apply_thread_priority(options_.priority, w.stream % plan_streams_ != 0)) priority_refused_.store(true);
  }

  void worker_main(Worker& w) {
    pin(w);
    std::uint32_t seen = 0;
    std::atomic<bool> never{false};
    for (;;) {
      detail::wait_for(go_, [seen](std::uint32_t v) { return v != seen; }, spin_ns_, never);
      seen = go_.load(std::memory_order_acquire);
      const Job job = job_;
      if (job == Job::Stop) {
        done_.fetch_add(1, std::memory_order_acq_rel);
        done_.notify_all();
        return;
      }
      try {
        if (job == Job::Setup) setup_worker(w);
        else run_items(w);
      } catch (...) {
        w.error = std::current_exception();
        abort_all();
      }
      done_.fetch_add(1, std::memory_order_acq_rel);
      done_.notify_all();
    }
  }

  void setup_worker(Worker& w) {
    w.send.assign(w.send_floats, 1.0f);  // touched here, by the thread that reads it
    w.receive.assign(w.receive_floats, 0.0f);
    for (const auto& [dst, n] : w.outgoing_floats) w.outgoing[dst].assign(n, 0.0f);
    if (w.ops.empty()) return;
    w.backend = kernels::make_cpu_kernel_backend(1);
    for (const models::Op* op : w.ops) {
      try {
        w.kernels.emplace(op, w.backend->prepare(*op, options_.optimizer));
      } catch (const RuntimeError& e) {
        w.unrunnable.push_back(op->name + ": " + e.what());
      }
    }
    // One untimed pass over every phase so that the first timed step does not pay for lazy
    // initialisation (oneDNN JIT, page faults in workspaces).
    for (auto& [op, k] : w.kernels)
      for (profiler::Phase p : kernels::kPhases)
        if (kernels::op_has_phase(*op, p)) k->run(p);
    w.backend->synchronize();
  }

  void run_items(Worker& w) {
    const TaskGraph& g = *graph_;
    for (const Item& it : w.items) {
      switch (it.kind) {
        case CommandKind::Wait: events_[ix(it.event)].wait(step_, spin_ns_, aborted_); break;
        case CommandKind::Record:
          events_[ix(it.event)].record(step_);
          // A stream of this device that shares the core may be waiting for this event (a
          // transfer after a forward): let it run now, as a copy engine would start at once,
          // instead of after the CFS wake-up granularity (milliseconds) while we keep computing.
          if (yield_after_record_) sched_yield();
          break;
        case CommandKind::Launch:
          switch (g.kind(it.task)) {
            case TaskKind::Compute: run_compute(w, it.task); break;
            case TaskKind::Transfer: run_transfer(w, it.task); break;
            case TaskKind::Collective: run_collective(w, it.task); break;
            case TaskKind::Marker: break;
          }
          break;
      }
    }
  }

  void run_compute(Worker& w, TaskId t) {
    const TimeNs s = now_ns();
    if (kernels::OpKernel* k = kernel_[ix(t)]) {
      k->run(phase_[ix(t)]);
      w.backend->synchronize();
    } else {
      spin_for(graph_->duration(t));
    }
    start_[ix(t)] = s;
    end_[ix(t)] = now_ns();
  }

  void run_transfer(Worker& w, TaskId t) {
    const TaskGraph& g = *graph_;
    const TimeNs s = now_ns();
    std::memcpy(w.outgoing.at(g.dst(t)).data(), w.send.data(), ix(std::max<Bytes>(g.bytes(t), 0)));
    start_[ix(t)] = s;
    end_[ix(t)] = now_ns();
  }

  void run_collective(Worker& w, TaskId t) {
    const TaskGraph& g = *graph_;
    const auto members = g.group_devices(g.group(t));
    const int rank = static_cast<int>(std::find(members.begin(), members.end(), w.device) - members.begin());
    const CollectiveSlot& c = collective_[ix(t)];
    const std::size_t n = floats_for(g.bytes(t));
    arrive_[c.first + ix(rank)] = now_ns();
    switch (g.collective_op(t)) {
      case CollectiveOp::AllReduce: c.comm->all_reduce(rank, w.send.data(), n); break;
      case CollectiveOp::ReduceScatter: c.comm->reduce_scatter(rank, w.send.data(), n); break;
      case CollectiveOp::AllGather: c.comm->all_gather(rank, w.send.data(), n); break;
      case CollectiveOp::Broadcast: c.comm->broadcast(rank, w.send.data(), n); break;
      case CollectiveOp::AllToAll: c.comm->all_to_all(rank, w.send.data(), w.receive.data(), n); break;
    }
    finish_[c.first + ix(rank)] = now_ns();
  }

  void abort_all() {
    aborted_.store(true, std::memory_order_release);
    for (std::size_t e = 0; e < num_events(); ++e) events_[e].abort();
    for (auto& c : comms_) c->abort();
  }
  std::size_t num_events() const { return events_ ? event_count_ : 0; }

  OpResolver resolve_;
  CpuRuntimeOptions options_;
  const TaskGraph* graph_ = nullptr;
  int plan_streams_ = 0;
  std::vector<int> cores_;
  std::vector<Worker> workers_;
  std::vector<int> worker_of_stream_;
  TimeNs spin_ns_ = 0;
  std::vector<std::unique_ptr<RingCommunicator>> comms_;
  std::vector<CollectiveSlot> collective_;
  std::vector<TimeNs> arrive_, finish_, start_, end_;
  std::vector<kernels::OpKernel*> kernel_;
  std::vector<const models::Op*> op_;
  std::vector<profiler::Phase> phase_;
  std::unique_ptr<detail::StepEvent[]> events_;
  std::size_t event_count_ = 0;
  std::int64_t synthetic_tasks_ = 0;
  std::vector<std::string> notes_;
  std::atomic<std::uint32_t> go_{0};
  std::atomic<std::uint32_t> done_{0};
  std::atomic<bool> aborted_{false};
  std::atomic<bool> priority_refused_{false};
  bool yield_after_record_ = false;
  Job job_ = Job::Setup;
  std::uint32_t step_ = 0;
  TimeNs t0_ = 0;
  bool broken_ = false;
  bool stopped_ = false;
};

}  // namespace

std::unique_ptr<StreamRuntime> make_cpu_runtime(OpResolver ops, const CpuRuntimeOptions& options) {
  return std::make_unique<CpuRuntime>(std::move(ops), options);
}

std::unique_ptr<StreamRuntime> make_cpu_runtime(const models::Model& model, const CpuRuntimeOptions& options) {
  return make_cpu_runtime(ops_of_model(model), options);
}

std::unique_ptr<StreamRuntime> make_cpu_runtime_without_kernels(const CpuRuntimeOptions& options) {
  return std::make_unique<CpuRuntime>(OpResolver{}, options);
}

}  // namespace parasim::executor
