// The CPU executor over MPI (see mpi_runtime.hpp): one rank per device, one thread per rank.
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "mpi_check.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/index.hpp"
#include "parasim/executor/cpu_runtime.hpp"
#include "parasim/executor/issue_plan.hpp"
#include "parasim/kernels/kernel_backend.hpp"
#include "parasim/kernels/op_phases.hpp"
#include "parasim/mpi/mpi_runtime.hpp"
#include "step_timeline.hpp"
#include "world_impl.hpp"

namespace parasim::mpi {

using detail::now_ns;
using detail::Record;
using detail::Role;
using executor::CommandKind;
using executor::EventId;
using executor::IssuePlan;
using executor::StreamIndex;
using simulator::CollectiveOp;
using simulator::TaskGraph;
using simulator::TaskId;
using simulator::TaskKind;
using simulator::TaskTiming;

namespace {

using kernels::kernel_phase;

std::size_t floats_for(Bytes b) { return ix((std::max<Bytes>(b, 0) + 3) / 4); }

// Tags: data and event signals of source stream s (within its device) use 2s and 2s + 1, so a
// receiver matches each source stream's messages in the order that stream sent them.
int data_tag(int stream) { return 2 * stream + 16; }
int signal_tag(int stream) { return 2 * stream + 17; }

struct Item {
  CommandKind kind;
  TaskId task;
  EventId event;
};

struct Incoming {  // a transfer into this rank
  TaskId task;
  int source;  // rank
  int tag;
  std::vector<float> buffer;
  MPI_Request request = MPI_REQUEST_NULL;
  TimeNs done = -1;
};

struct Signal {  // an event of another rank this rank waits for
  EventId event;
  int source;
  int tag;
  MPI_Request request = MPI_REQUEST_NULL;
  bool done = false;
};

struct StreamState {
  StreamIndex stream = 0;
  std::vector<Item> items;
  std::size_t pc = 0;
  MPI_Request request = MPI_REQUEST_NULL;  // the head's operation in flight
  bool started = false;
  TimeNs issued = 0;
};

class MpiCpuRuntime final : public executor::StreamRuntime {
 public:
  MpiCpuRuntime(World& world, executor::OpResolver ops, MpiRuntimeOptions options)
      : world_(world), resolve_(std::move(ops)), options_(options) {}
  ~MpiCpuRuntime() override {
    for (auto& [key, comm] : comms_)
      if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }

  std::string name() const override {
    const auto hosts = world_.hosts();
    return "mpi-cpu (" + std::to_string(world_.size()) + " ranks, one per device, on " + std::to_string(hosts.size()) +
           " host" + (hosts.size() == 1 ? "" : "s") + ")";
  }
  std::vector<std::string> notes() const override { return notes_; }
  std::int64_t stand_in_tasks() const override { return stand_ins_; }

  void setup(const TaskGraph& graph, const IssuePlan& plan) override {
    if (graph_) throw RuntimeError("mpi runtime: setup() called twice");
    if (graph.num_devices() != world_.size())
      throw InputError("the task graph has " + std::to_string(graph.num_devices()) + " devices and the MPI job " +
                       std::to_string(world_.size()) + " ranks: run one rank per device (mpirun -np " +
                       std::to_string(graph.num_devices()) + ")");
    graph_ = &graph;
    plan_ = &plan;
    me_ = world_.rank();
    spd_ = plan.streams_per_device;
    for (int s = 0; s < spd_; ++s) {
      StreamState st;
      st.stream = plan.stream_index(me_, s);
      if (!plan.stream_order[ix(st.stream)].empty()) streams_.push_back(std::move(st));
    }
    // Communication streams first: their operations are issued before a long kernel starts.
    std::reverse(streams_.begin(), streams_.end());
    int here = 0;
    for (const RankPlace& p : world_.places()) here += p.host == world_.place().host ? 1 : 0;
    oversubscribed_ = static_cast<std::size_t>(here) > executor::allowed_cores().size();
    if (oversubscribed_ && options_.priority != executor::CpuRuntimeOptions::Priority::Default)
      notes_.push_back(std::to_string(here) + " ranks share " + std::to_string(executor::allowed_cores().size()) +
                       " cores on " + world_.place().host +
                       ": ranks keep their normal priority and time-share the cores");
    find_remote_events(graph, plan);
    find_incoming(graph, plan);
    size_buffers(graph);
    world_.barrier("the executor's setup");
    offset_ = detail::clock_offset(world_);
    make_communicators(graph);
    prepare_kernels(graph);
    // Every rank's stand-ins and notes: validate prints them once, for the whole job.
    const auto all = world_.allgather(std::to_string(stand_ins_), "the executor's stand-in counts");
    stand_ins_ = 0;
    for (const std::string& s : all) stand_ins_ += std::stoll(s);
    notes_.emplace_back(
        "one MPI rank per device, one thread per rank: a rank's kernels run one at a time and its "
        "communication (non-blocking MPI) progresses between them");
    if (stand_ins_ > 0)
      notes_.push_back(std::to_string(stand_ins_) +
                       " compute tasks have no runnable kernel and spin for their graph duration (not measured)");
    for (const std::string& u : unrunnable_) notes_.push_back("rank " + std::to_string(me_) + ": no kernel: " + u);
  }

  void begin_step() override {
    for (StreamState& s : streams_) {
      s.items.clear();
      s.pc = 0;
      s.started = false;
    }
  }
  void wait_event(StreamIndex s, EventId e) override { push(s, {CommandKind::Wait, simulator::kNoTask, e}); }
  void record_event(StreamIndex s, EventId e) override { push(s, {CommandKind::Record, simulator::kNoTask, e}); }
  void launch_compute(StreamIndex s, TaskId t) override { push(s, {CommandKind::Launch, t, -1}); }
  void launch_transfer(StreamIndex s, TaskId t) override { push(s, {CommandKind::Launch, t, -1}); }
  void launch_collective(std::span<const StreamIndex> streams, TaskId t) override {
    for (StreamIndex s : streams) push(s, {CommandKind::Launch, t, -1});
  }

  void finish_step(std::vector<TaskTiming>& timeline) override {
    ++step_;
    world_.barrier("the start of step " + std::to_string(step_));
    t0_ = now_ns();
    records_.clear();
    recorded_.assign(plan_->events.size(), 0);
    for (Incoming& in : incoming_) {
      in.done = -1;
      PARASIM_MPI_CHECK(MPI_Irecv(in.buffer.data(), static_cast<int>(in.buffer.size() * 4), MPI_BYTE, in.source, in.tag,
                                  detail::world_comm(world_), &in.request));
    }
    for (Signal& sg : signals_) {
      sg.done = false;
      PARASIM_MPI_CHECK(MPI_Irecv(nullptr, 0, MPI_BYTE, sg.source, sg.tag, detail::world_comm(world_), &sg.request));
    }
    {
      // As the CPU runtime's workers: with SCHED_FIFO a waiting rank's yield hands its core only
      // to another rank, not to whatever else runs on a shared machine (at load 11 here a yield
      // at normal priority cost milliseconds: a zero-byte event message took 3 ms).
      // Not with more ranks than cores on this host: a rank out of its step (at the barrier, at
      // normal priority) would starve behind real-time ranks spinning for it (measured: 0.9 s
      // steps with 4 ranks on 2 cores).
      const executor::PriorityScope priority(oversubscribed_ ? executor::CpuRuntimeOptions::Priority::Default
                                                             : options_.priority);
      if (!priority.ok() && options_.priority != executor::CpuRuntimeOptions::Priority::Default && !priority_note_) {
        priority_note_ = true;
        notes_.emplace_back(
            "raising the ranks' priority was refused (needs CAP_SYS_NICE): other processes may preempt them");
      }
      run_loop();
    }
    for (const Incoming& in : incoming_) records_.push_back({in.task, Role::TransferReceived, -1, in.done});
    detail::gather_timeline(world_, *graph_, records_, t0_, offset_, step_, timeline);
  }

 private:
  void push(StreamIndex s, Item item) {
    if (s / spd_ != me_) return;  // another rank's stream
    for (StreamState& st : streams_)
      if (st.stream == s) {
        st.items.push_back(item);
        return;
      }
    throw RuntimeError("mpi runtime: stream " + std::to_string(s) + " is not in the plan");
  }

  int owner(StreamIndex s) const { return s / spd_; }

  void find_remote_events(const TaskGraph& graph, const IssuePlan& plan) {
    waiters_.assign(plan.events.size(), {});
    for (const executor::Command& c : plan.commands)
      if (c.kind == CommandKind::Wait && owner(c.stream) != owner(plan.events[ix(c.event)].stream))
        waiters_[ix(c.event)].insert(owner(c.stream));
    // The signals this rank receives, per source stream in the order that stream records them.
    std::vector<EventId> mine;
    for (EventId e = 0; e < static_cast<EventId>(plan.events.size()); ++e)
      if (waiters_[ix(e)].count(me_)) mine.push_back(e);
    std::sort(mine.begin(), mine.end(), [&](EventId a, EventId b) {
      const auto& x = plan.events[ix(a)];
      const auto& y = plan.events[ix(b)];
      return std::tie(x.stream, x.position) < std::tie(y.stream, y.position);
    });
    signal_of_event_.assign(plan.events.size(), -1);
    covered_.assign(plan.events.size(), {});
    for (EventId e : mine) {
      const auto& site = plan.events[ix(e)];
      signal_of_event_[ix(e)] = static_cast<int>(signals_.size());
      signals_.push_back({e, owner(site.stream), signal_tag(site.stream % spd_)});
      // The transfers into this rank that the event covers: those of its stream up to its task.
      for (TaskId t : plan.stream_order[ix(site.stream)]) {
        if (graph.kind(t) == TaskKind::Transfer && graph.dst(t) == me_) covered_[ix(e)].push_back(t);
        if (t == site.task) break;
      }
    }
  }

  void find_incoming(const TaskGraph& graph, const IssuePlan& plan) {
    incoming_of_task_.assign(graph.size(), -1);
    for (StreamIndex s = 0; s < plan.num_streams(); ++s) {
      if (owner(s) == me_) continue;
      for (TaskId t : plan.stream_order[ix(s)]) {
        if (graph.kind(t) != TaskKind::Transfer || graph.dst(t) != me_) continue;
        incoming_of_task_[ix(t)] = static_cast<int>(incoming_.size());
        Incoming in{t, owner(s), data_tag(s % spd_),
                    std::vector<float>(std::max<std::size_t>(floats_for(graph.bytes(t)), 1))};
        incoming_.push_back(std::move(in));
      }
    }
  }

  void size_buffers(const TaskGraph& graph) {
    std::size_t send = 1, receive = 1;
    for (TaskId t = 0; t < static_cast<TaskId>(graph.size()); ++t) {
      if (graph.kind(t) == TaskKind::Transfer && graph.src(t) == me_) send = std::max(send, floats_for(graph.bytes(t)));
      if (graph.kind(t) != TaskKind::Collective) continue;
      const auto members = graph.group_devices(graph.group(t));
      if (std::find(members.begin(), members.end(), me_) == members.end()) continue;
      const std::size_t n = members.size();
      const std::size_t chunk = (floats_for(graph.bytes(t)) + n - 1) / n;
      send = std::max(send, chunk * n);
      if (graph.collective_op(t) == CollectiveOp::AllToAll) receive = std::max(receive, chunk * n);
    }
    send_.assign(send, 1.0f);
    receive_.assign(receive, 0.0f);
  }

  // One communicator per (device group, stream) this rank is in, created in the same (sorted)
  // order on every member.
  void make_communicators(const TaskGraph& graph) {
    std::set<std::pair<std::vector<int>, int>> keys;
    for (TaskId t = 0; t < static_cast<TaskId>(graph.size()); ++t) {
      if (graph.kind(t) != TaskKind::Collective) continue;
      const auto m = graph.group_devices(graph.group(t));
      keys.insert({std::vector<int>(m.begin(), m.end()), graph.stream(t)});
    }
    MPI_Group world_group;
    PARASIM_MPI_CHECK(MPI_Comm_group(detail::world_comm(world_), &world_group));
    int index = 0;
    for (const auto& key : keys) {
      ++index;
      const auto& members = key.first;
      if (std::find(members.begin(), members.end(), me_) == members.end()) continue;
      MPI_Group g;
      PARASIM_MPI_CHECK(MPI_Group_incl(world_group, static_cast<int>(members.size()), members.data(), &g));
      MPI_Comm comm = MPI_COMM_NULL;
      PARASIM_MPI_CHECK(MPI_Comm_create_group(detail::world_comm(world_), g, index, &comm));
      MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
      MPI_Group_free(&g);
      comms_[key] = comm;
    }
    MPI_Group_free(&world_group);
  }

  void prepare_kernels(const TaskGraph& graph) {
    kernel_.assign(graph.size(), nullptr);
    phase_.assign(graph.size(), kernels::Phase::Forward);
    std::map<const models::Op*, std::unique_ptr<kernels::OpKernel>> prepared;
    for (TaskId t = 0; t < static_cast<TaskId>(graph.size()); ++t) {
      if (graph.kind(t) != TaskKind::Compute || graph.device(t) != me_) continue;
      const models::Op* op = resolve_ ? resolve_(graph, t) : nullptr;
      const auto phase = kernel_phase(graph.phase(t));
      if (op && phase) {
        auto it = kernels_.find(op);
        if (it == kernels_.end()) {
          if (!backend_) backend_ = kernels::make_cpu_kernel_backend(1);
          std::unique_ptr<kernels::OpKernel> k;
          try {
            k = backend_->prepare(*op, options_.optimizer);
          } catch (const RuntimeError& e) {
            unrunnable_.push_back(op->name + ": " + e.what());
          }
          it = kernels_.emplace(op, std::move(k)).first;
        }
        if (it->second) {
          kernel_[ix(t)] = it->second.get();
          phase_[ix(t)] = *phase;
          continue;
        }
      }
      ++stand_ins_;
    }
    // One untimed pass over every phase: the first step does not pay for oneDNN's JIT.
    for (auto& [op, k] : kernels_)
      if (k)
        for (kernels::Phase p : kernels::kPhases)
          if (kernels::op_has_phase(*op, p)) k->run(p);
    if (backend_) backend_->synchronize();
  }

  MPI_Comm comm_of(TaskId t) const {
    const auto m = graph_->group_devices(graph_->group(t));
    return comms_.at({std::vector<int>(m.begin(), m.end()), graph_->stream(t)});
  }

  // ------------------------------------------------------------------ the step's loop
  bool remote_event_ready(EventId e) {
    Signal& sg = signals_[ix(signal_of_event_[ix(e)])];
    if (!sg.done) return false;
    for (TaskId t : covered_[ix(e)])
      if (incoming_[ix(incoming_of_task_[ix(t)])].done < 0) return false;
    return true;
  }

  bool test(MPI_Request& r) {
    int flag = 0;
    PARASIM_MPI_CHECK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
    return flag != 0;
  }

  void start_collective(StreamState& st, TaskId t) {
    const TaskGraph& g = *graph_;
    const auto members = g.group_devices(g.group(t));
    const int n = static_cast<int>(members.size());
    const int chunk = static_cast<int>((floats_for(g.bytes(t)) + ix(n) - 1) / ix(n));
    const MPI_Comm comm = comm_of(t);
    switch (g.collective_op(t)) {
      case CollectiveOp::AllReduce:
        PARASIM_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, send_.data(), static_cast<int>(floats_for(g.bytes(t))),
                                         MPI_FLOAT, MPI_SUM, comm, &st.request));
        break;
      case CollectiveOp::ReduceScatter:
        PARASIM_MPI_CHECK(
            MPI_Ireduce_scatter_block(MPI_IN_PLACE, send_.data(), chunk, MPI_FLOAT, MPI_SUM, comm, &st.request));
        break;
      case CollectiveOp::AllGather:
        PARASIM_MPI_CHECK(
            MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, send_.data(), chunk, MPI_FLOAT, comm, &st.request));
        break;
      case CollectiveOp::Broadcast:
        PARASIM_MPI_CHECK(
            MPI_Ibcast(send_.data(), static_cast<int>(floats_for(g.bytes(t))), MPI_FLOAT, 0, comm, &st.request));
        break;
      case CollectiveOp::AllToAll:
        PARASIM_MPI_CHECK(
            MPI_Ialltoall(send_.data(), chunk, MPI_FLOAT, receive_.data(), chunk, MPI_FLOAT, comm, &st.request));
        break;
    }
  }

  // Runs the head of `st` as far as it can go without blocking; true when something happened.
  bool advance(StreamState& st) {
    const TaskGraph& g = *graph_;
    bool progressed = false;
    while (st.pc < st.items.size()) {
      const Item& it = st.items[st.pc];
      if (it.kind == CommandKind::Wait) {
        const bool local = owner(plan_->events[ix(it.event)].stream) == me_;
        if (local ? !recorded_[ix(it.event)] : !remote_event_ready(it.event)) return progressed;
      } else if (it.kind == CommandKind::Record) {
        recorded_[ix(it.event)] = 1;
        for (int w : waiters_[ix(it.event)]) {
          outgoing_.emplace_back(MPI_REQUEST_NULL);
          PARASIM_MPI_CHECK(MPI_Isend(nullptr, 0, MPI_BYTE, w, signal_tag(st.stream % spd_), detail::world_comm(world_),
                                      &outgoing_.back()));
        }
      } else {
        const TaskId t = it.task;
        switch (g.kind(t)) {
          case TaskKind::Compute: {
            const TimeNs s = now_ns();
            if (kernels::OpKernel* k = kernel_[ix(t)]) {
              k->run(phase_[ix(t)]);
              backend_->synchronize();
            } else {
              const TimeNs until = s + g.duration(t);
              while (now_ns() < until) {}
            }
            records_.push_back({t, Role::Compute, s, now_ns()});
            break;
          }
          case TaskKind::Transfer:
            if (!st.started) {
              st.started = true;
              st.issued = now_ns();
              const int bytes = static_cast<int>(std::max<Bytes>(g.bytes(t), 0));
              if (g.dst(t) == me_) {  // a copy within this rank's device
                std::memcpy(receive_.data(), send_.data(), std::min<std::size_t>(ix(bytes), receive_.size() * 4));
                st.request = MPI_REQUEST_NULL;
              } else {
                PARASIM_MPI_CHECK(MPI_Isend(send_.data(), bytes, MPI_BYTE, g.dst(t), data_tag(st.stream % spd_),
                                            detail::world_comm(world_), &st.request));
              }
              progressed = true;
            }
            if (!test(st.request)) return progressed;
            records_.push_back({t, Role::TransferSent, st.issued, now_ns()});
            st.started = false;
            break;
          case TaskKind::Collective:
            if (!st.started) {
              st.started = true;
              st.issued = now_ns();
              start_collective(st, t);
              progressed = true;
            }
            if (!test(st.request)) return progressed;
            records_.push_back({t, Role::CollectiveMember, st.issued, now_ns()});
            st.started = false;
            break;
          case TaskKind::Marker: break;
        }
      }
      ++st.pc;
      progressed = true;
    }
    return progressed;
  }

  void run_loop() {
    auto last_progress = detail::Clock::now();
    for (int idle = 0;;) {
      bool progressed = false;
      for (Incoming& in : incoming_)
        if (in.done < 0 && test(in.request)) {
          in.done = now_ns();
          progressed = true;
        }
      for (Signal& sg : signals_)
        if (!sg.done && test(sg.request)) sg.done = progressed = true;
      bool finished = true;
      for (StreamState& st : streams_) {
        progressed = advance(st) || progressed;
        finished = finished && st.pc == st.items.size();
      }
      std::size_t open = 0;
      for (MPI_Request& r : outgoing_)
        if (r != MPI_REQUEST_NULL && !test(r)) ++open;
      if (open == 0) outgoing_.clear();
      bool received = true;
      for (const Incoming& in : incoming_) received = received && in.done >= 0;
      for (const Signal& sg : signals_) received = received && sg.done;
      if (finished && open == 0 && received) return;
      if (progressed) {
        idle = 0;
        last_progress = detail::Clock::now();
        continue;
      }
      if (detail::Clock::now() - last_progress > world_.timeouts().call) stalled();
      detail::idle_pause(++idle, true);
    }
  }

  [[noreturn]] void stalled() {
    std::set<int> peers;
    std::string what;
    for (const StreamState& st : streams_) {
      if (st.pc >= st.items.size()) continue;
      const Item& it = st.items[st.pc];
      if (it.kind == CommandKind::Wait) {
        peers.insert(owner(plan_->events[ix(it.event)].stream));
        if (what.empty()) what = "an event of task " + std::string(graph_->name(plan_->events[ix(it.event)].task));
      } else if (it.kind == CommandKind::Launch && graph_->kind(it.task) == TaskKind::Collective) {
        for (int d : graph_->group_devices(graph_->group(it.task)))
          if (d != me_) peers.insert(d);
        if (what.empty()) what = "collective " + std::string(graph_->name(it.task));
      } else if (it.kind == CommandKind::Launch && graph_->kind(it.task) == TaskKind::Transfer) {
        peers.insert(graph_->dst(it.task));
        if (what.empty()) what = "transfer " + std::string(graph_->name(it.task));
      }
    }
    for (const Incoming& in : incoming_)
      if (in.done < 0) peers.insert(in.source);
    std::string list;
    for (int p : peers) list += (list.empty() ? "" : ", ") + std::to_string(p);
    throw RuntimeError(
        "rank " + std::to_string(me_) + ": step " + std::to_string(step_) + " made no progress for " +
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(world_.timeouts().call).count()) +
        " s waiting for " + (what.empty() ? std::string("messages") : what) + " from rank" +
        (peers.size() == 1 ? " " : "s ") + list);
  }

  World& world_;
  executor::OpResolver resolve_;
  MpiRuntimeOptions options_;
  const TaskGraph* graph_ = nullptr;
  const IssuePlan* plan_ = nullptr;
  int me_ = 0;
  int spd_ = 0;
  std::vector<StreamState> streams_;
  std::vector<std::set<int>> waiters_;        // per event: ranks (other than its owner) that wait for it
  std::vector<int> signal_of_event_;          // per event: index into signals_, or -1
  std::vector<std::vector<TaskId>> covered_;  // per event this rank waits for: incoming transfers it covers
  std::vector<Signal> signals_;
  std::vector<Incoming> incoming_;
  std::vector<int> incoming_of_task_;
  std::vector<MPI_Request> outgoing_;  // signals in flight
  std::vector<float> send_, receive_;
  std::map<std::pair<std::vector<int>, int>, MPI_Comm> comms_;
  std::unique_ptr<kernels::KernelBackend> backend_;
  std::map<const models::Op*, std::unique_ptr<kernels::OpKernel>> kernels_;
  std::vector<kernels::OpKernel*> kernel_;
  std::vector<kernels::Phase> phase_;
  std::vector<std::string> unrunnable_;
  std::vector<std::string> notes_;
  std::vector<char> recorded_;
  std::vector<Record> records_;
  std::int64_t stand_ins_ = 0;
  bool priority_note_ = false;
  bool oversubscribed_ = false;  // more ranks on this host than this process may use cores
  int step_ = 0;
  TimeNs t0_ = 0;      // this step's barrier exit, on this rank's clock
  TimeNs offset_ = 0;  // this rank's clock minus rank 0's
};

}  // namespace

std::unique_ptr<executor::StreamRuntime> make_mpi_cpu_runtime(World& world, executor::OpResolver ops,
                                                              const MpiRuntimeOptions& options) {
  return std::make_unique<MpiCpuRuntime>(world, std::move(ops), options);
}

}  // namespace parasim::mpi
