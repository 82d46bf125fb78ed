// The discrete-event engine. One Simulation object per run holds all mutable state; the
// Engine itself is stateless apart from the cluster and options, so run() is const and
// reentrant.
//
// Loop: pop every event at the earliest time t (task ends, flow latency phases, flow
// completions); the tasks they release collect in `ready_`; then dispatch(): ready markers
// complete (releasing more), ready tasks join their streams in id order and every stream that
// changed tries to start its head; finally the flow network settles the rates of flows that
// joined or left at t. Repeat. (An instant's only task end, with nothing released before it,
// dispatches its successors as it releases them, in the order dispatch() would: complete<true>;
// not in a graph where a marker releases a task of a lower id.)
//
// Passive devices: a device whose every task is a collective of one group on one stream (a TP
// rank or DP replica the symmetric lowerings do not simulate) can never hold a collective back -
// its stream frees exactly when the group's previous collective ends on every member - so its
// collectives are queued only on the group's other (waiting) members, and its busy time is the
// sum of the group's collective durations, filled in at the end. Results are the same as queueing
// on every member; the engine saves the per-member work (with tp = 8, seven of eight streams).
// Stream and device state is kept for the other (local) devices only: a symmetric lowering of a
// 5,128-GPU strategy simulates about a hundred of them, and the rest are reported at the end
// (idle, or busy with their lane) without being allocated per run.
#include "parasim/simulator/engine.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>

#include "parasim/common/error.hpp"
#include "parasim/hardware/device_spec.hpp"
#include "event_queue.hpp"
#include "flow_network.hpp"
#include "route_table.hpp"

namespace parasim::simulator {

namespace {

constexpr std::size_t kProgressEvery = 65'536;  // completed tasks between on_progress calls

// A FIFO in a ring buffer whose size is a power of two (a stream's queue: a handful of tasks,
// pushed and popped once each), doubled when full.
template <typename T>
class Fifo {
 public:
  bool empty() const { return head_ == tail_; }
  const T& front() const { return items_[head_ & mask_]; }
  void push(const T& v) {
    if (tail_ - head_ == items_.size()) grow();
    items_[tail_++ & mask_] = v;
  }
  void pop() { ++head_; }

 private:
  [[gnu::noinline]] void grow() {
    std::vector<T> bigger(items_.empty() ? 8 : 2 * items_.size());
    for (std::uint32_t i = head_; i != tail_; ++i) bigger[i - head_] = items_[i & mask_];
    tail_ -= head_;
    head_ = 0;
    items_ = std::move(bigger);
    mask_ = static_cast<std::uint32_t>(items_.size() - 1);
  }
  std::vector<T> items_;
  // 32-bit counters (they wrap; the differences and masks stay right): StreamState keeps to 80 bytes.
  std::uint32_t head_ = 0, tail_ = 0, mask_ = 0;
};

// The tasks released at an instant, in release order. append_if() writes its slot whether or not
// the task is kept (room is made for a completion's successors first), so releasing them takes no
// data-dependent branch: whether a successor's last dependency just ended is random on a DAG.
class ReadyList {
 public:
  bool empty() const { return n_ == 0; }
  std::size_t size() const { return n_; }
  TaskId* begin() { return items_.data(); }
  TaskId* end() { return items_.data() + n_; }
  TaskId& operator[](std::size_t i) { return items_[i]; }
  void clear() { n_ = 0; }
  void make_room(std::size_t k) {
    if (items_.size() - n_ < k) [[unlikely]]
      grow(k);
  }
  void push_back(TaskId t) {
    make_room(1);
    items_[n_++] = t;
  }
  void append_if(TaskId t, bool keep) {
    items_[n_] = t;
    n_ += static_cast<std::size_t>(keep);
  }
  void swap(ReadyList& other) noexcept {
    items_.swap(other.items_);
    std::swap(n_, other.n_);
  }

 private:
  [[gnu::noinline]] void grow(std::size_t k) { items_.resize(std::max(2 * items_.size(), n_ + k + 64)); }
  std::vector<TaskId> items_;  // its size is the capacity
  std::size_t n_ = 0;
};

struct Queued {
  TaskId task;
  TimeNs ready;
};

struct StreamState {
  Fifo<Queued> queue;
  // `busy` is apart from `last_end`, which a task's end writes with it: side by side, the compiler
  // pairs the two in a vector register, which costs more instructions than two scalar writes.
  TimeNs busy = 0;  // summed task durations: less each start time, plus each end time
  TaskId running = kNoTask;
  TaskId arrived_for = kNoTask;  // the collective at the head that already counted this stream
  TaskId last_task = kNoTask;
  std::uint32_t local = 0;  // its device's local index
  TimeNs last_end = 0;
  bool dirty = false;
};
static_assert(sizeof(StreamState) <= 80, "one stream's state: keep it to the size it had before `busy`");

struct DeviceState {
  int compute_active = 0;
  int comm_active = 0;
  TimeNs last = 0;
  // Not beside `activations`: the compiler would pair their adds in vector registers, which costs
  // more instructions than two scalar adds.
  Bytes live = 0;  // static, activation and other bytes together
  // Time spent in each activity state, indexed (compute active) | (comm active) << 1: one indexed
  // add per task start or end instead of four data-dependent branches; stats are summed at the end.
  std::array<TimeNs, 4> in_state{};
  DeviceStats stats;
  StaticMemory fixed;
  Bytes static_bytes = 0;
  Bytes activations = 0;       // live activation bytes
  Bytes peak_activations = 0;  // activations at the peak (allocate()); the rest of it is static or other
};

enum : std::uint8_t { kOwnerTransfer = 0, kOwnerCollective = 1 };

struct CollectiveRun {
  TaskId task = kNoTask;
  const CollectivePlan* plan = nullptr;
  std::uint32_t phase = 0;
  std::uint32_t repeat = 0;
  std::uint32_t pending = 0;
  CollectiveProtocol protocol = CollectiveProtocol::Simple;
};

struct PlanKey {
  GroupId group;
  CollectiveOp op;
  CollectiveAlgorithm algo;
  Bytes bytes;
  bool operator==(const PlanKey&) const = default;
};
struct PlanKeyHash {
  std::size_t operator()(const PlanKey& k) const {
    std::uint64_t h = static_cast<std::uint64_t>(k.group) * 0x9E3779B97F4A7C15ull;
    h ^=
        (static_cast<std::uint64_t>(k.op) << 8 | static_cast<std::uint64_t>(k.algo)) + 0x632BE59BD9B4E019ull + (h << 6);
    h ^= static_cast<std::uint64_t>(k.bytes) * 0xC2B2AE3D27D4EB4Full;
    return static_cast<std::size_t>(h ^ (h >> 31));
  }
};

/// Simulated times and memory are int64 (ns, bytes). A graph whose work on this cluster could add
/// up past 2^62 (146 years, 4 EiB) would overflow them, so a generous upper bound is checked
/// before running and such input is refused instead of wrapping. The bound charges every task as
/// if it ran alone after all others: compute durations; every route's latency at most the sum of
/// all link latencies; bytes at the slowest link, a collective's times its group size. add() is
/// called for every task in id order, within the engine's one pass over the graph, but the compute
/// tasks' sums, which that pass keeps itself. Durations, allocations and transfer bytes (never
/// negative) are summed exactly in 128-bit integers: no floating-point adds in that pass.
class Int64Bound {
 public:
  __extension__ using Sum = unsigned __int128;  // of up to 2^30 values below 2^63: no overflow
  Int64Bound(const TaskGraph& g, const hardware::Cluster& c)
      : g_(g), c_(c), any_route_latency_(c.total_link_latency()) {
    const double slowest = c.slowest_link().value;
    per_byte_ = slowest > 0 ? 1.0 / slowest : 0.0;  // ns per byte (GB/s = B/ns)
    for (DeviceId d = 0; d < g.num_devices(); ++d) {
      const StaticMemory& m = g.static_memory(d);
      memory_ += static_cast<double>(m.params) + static_cast<double>(m.grads) + static_cast<double>(m.optimizer) +
                 static_cast<double>(m.other);
    }
  }
  /// The sums of the compute tasks' durations and allocations (the engine's pass keeps them).
  void add_compute(Sum durations, Sum allocations) {
    durations_ += durations;
    allocations_ += allocations;
  }
  /// A task of another kind.
  void add(TaskId t) {
    switch (g_.kind(t)) {
      case TaskKind::Transfer:
        ++transfers_;
        transfer_bytes_ += static_cast<std::uint64_t>(g_.bytes(t));
        allocations_ += static_cast<std::uint64_t>(g_.alloc_bytes(t));
        break;
      case TaskKind::Collective: {
        const auto n = static_cast<double>(g_.group_devices(g_.group(t)).size());
        time_ += (4 * n + 64) * any_route_latency_ + 4 * n * static_cast<double>(g_.bytes(t)) * per_byte_;
        break;
      }
      case TaskKind::Compute:
      case TaskKind::Marker: break;
    }
  }
  void check() const {
    constexpr double kLimit = 4.611686018427387904e18;  // 2^62
    const double time = time_ + static_cast<double>(durations_) + static_cast<double>(transfers_) * any_route_latency_ +
                        static_cast<double>(transfer_bytes_) * per_byte_;
    const double memory = memory_ + static_cast<double>(allocations_);
    if (!(time < kLimit))
      throw InputError("the task graph cannot be simulated on cluster \"" + c_.name() +
                       "\": its durations, bytes and link latencies/bandwidths could add up past 2^62 ns (146 years), "
                       "beyond 64-bit time; check duration_ns, bytes, latency_ns and bandwidth_gbps for absurd values");
    if (!(memory < kLimit))
      throw InputError(
          "the task graph's static memory and alloc_bytes add up past 2^62 bytes (4 EiB), beyond 64-bit "
          "memory accounting; check static_memory and alloc_bytes for absurd values");
  }

 private:
  const TaskGraph& g_;
  const hardware::Cluster& c_;
  double any_route_latency_, per_byte_ = 0;
  double time_ = 0, memory_ = 0;  // collectives' time; static memory
  Sum durations_ = 0, allocations_ = 0, transfer_bytes_ = 0;
  std::uint64_t transfers_ = 0;
};

class Simulation {
 public:
  Simulation(const hardware::Cluster& cluster, const EngineOptions& options, const TaskGraph& graph)
      : cluster_(cluster),
        options_(options),
        g_(graph),
        own_planner_(options.planner != nullptr ? nullptr : std::make_unique<CollectivePlanner>(cluster)),
        planner_(options.planner != nullptr ? *options.planner : *own_planner_),
        network_(cluster, planner_.routes(), options.record_timeline),
        streams_per_device_(static_cast<std::size_t>(graph.streams_per_device())),
        remaining_(new std::int32_t[graph.size()]),
        crit_pred_(new TaskId[graph.size()]) {
    scan_graph();
    streams_.resize(global_of_.size() * streams_per_device_);
    dirty_.resize(streams_.size() + 1);  // one spare: mark_dirty_if writes a slot even when all are listed
    for (std::size_t s = 0; s < streams_.size(); ++s)
      streams_[s].local = static_cast<std::uint32_t>(s / streams_per_device_);
    devices_.resize(global_of_.size());
    if (options.record_timeline || options.record_task_times) {
      timeline_.assign(graph.size(), TaskTiming{});
      algorithms_.assign(graph.size(), CollectiveAlgorithm::Auto);
    }
    for (std::size_t i = 0; i < global_of_.size(); ++i) init_device(devices_[i], global_of_[i]);
    if (options.collectives_hold_sms) init_sm_holds();
  }

  StepResult run() {
    const std::size_t n = g_.size();
    dispatch();
    settle();
    std::size_t next_progress = kProgressEvery;
    if (options_.on_progress) options_.on_progress(0, n);
    for (TimeNs t; (t = events_.next_time()) != EventQueue::kNever;) {
      now_ = t;
      for (;;) {
        const Event e = events_.pop();
        if (e.type() == EventType::TaskEnd) {
          const auto task = static_cast<TaskId>(e.id);
          // A compute task's end that moved since (a collective started or ended beside it).
          if (!work_.empty() && stale_end(e)) [[unlikely]] {
            if (!events_.next_at(now_)) break;
            continue;
          }
          ++event_count_;
          // The instant's only event, nothing released before it: complete<true>.
          if (ready_.empty() && !events_.next_at(now_) && release_in_order_) {
            complete<true>(task);
            break;
          }
          complete(task);
        } else {
          handle_flow_event(e);
        }
        if (!events_.next_at(now_)) break;
      }
      if (!ready_.empty() || dirty_count_ != 0) dispatch();
      settle();
      if (completed_ >= next_progress && options_.on_progress) {
        options_.on_progress(completed_, n);
        next_progress = completed_ + kProgressEvery;
      }
    }
    if (completed_ != n) report_stall();
    return finish();
  }

 private:
  // Stream and device state are indexed by local device (local_of_); both orders agree, so
  // sorting stream indices sorts by (device, stream) as before.
  std::size_t stream_index(DeviceId d, int s) const {
    return static_cast<std::size_t>(local_of_[static_cast<std::size_t>(d)]) * streams_per_device_ +
           static_cast<std::size_t>(s);
  }
  DeviceState& dev(DeviceId d) { return devices_[static_cast<std::size_t>(local_of_[static_cast<std::size_t>(d)])]; }

  void init_device(DeviceState& dev, DeviceId d) const {
    const StaticMemory& m = g_.static_memory(d);
    dev.fixed = m;
    dev.static_bytes = m.total();
    dev.live = m.total();
    dev.stats.capacity = cluster_.device(d).memory;
    dev.stats.peak_memory = m.total();
    dev.stats.peak_breakdown = {m.params, m.grads, m.optimizer, 0, m.other};
  }

  // (group, stream) of a collective: the index of its waiting members and its busy time.
  std::size_t lane_of(TaskId t) const {
    return static_cast<std::size_t>(g_.group(t)) * streams_per_device_ + static_cast<std::size_t>(g_.stream(t));
  }
  std::span<const DeviceId> waiting(std::size_t lane) const { return waiting_[lane]; }

  static constexpr std::int64_t kUnused = -2, kActive = -1;  // scan_graph's device states, else a lane
  // scan_graph() for a task that is not a compute task.
  [[gnu::noinline]] void scan_other(TaskId t, Int64Bound& bound, std::vector<std::int64_t>& state,
                                    std::vector<char>& used) {
    bound.add(t);
    switch (g_.kind(t)) {
      case TaskKind::Compute:
      case TaskKind::Transfer: state[static_cast<std::size_t>(g_.device(t))] = kActive; break;
      case TaskKind::Collective: {
        const std::size_t lane = lane_of(t);
        // A lane seen before changes no member's state (each is this lane or active already): a
        // data-parallel lane's thousands of members are scanned once, not once per collective.
        if (used[lane]) break;
        used[lane] = 1;
        for (DeviceId d : g_.group_devices(g_.group(t))) {
          std::int64_t& st = state[static_cast<std::size_t>(d)];
          if (st == kUnused) st = static_cast<std::int64_t>(lane);
          else if (st != static_cast<std::int64_t>(lane)) st = kActive;
        }
        break;
      }
      case TaskKind::Marker: {
        has_markers_ = true;
        // complete<true> dispatches a task's successors in id order as it releases them, which is
        // id order at the instant only while no marker releases a task below its own id.
        const auto succs = g_.successors(t);
        if (!succs.empty() && succs.front() < t) release_in_order_ = false;
        break;
      }
    }
  }

  // One pass over the graph before a run: each task's dependency count (the tasks with none are
  // ready), the bound of check_fits_in_int64, and the passive devices. See the header comment: a
  // device is passive when all its tasks are collectives of one (group, stream) lane; a lane with
  // no other member keeps its first one waiting, so that the lane's collectives still queue in
  // order somewhere.
  void scan_graph() {
    std::vector<std::int64_t> state(static_cast<std::size_t>(g_.num_devices()), kUnused);
    const std::size_t lanes = static_cast<std::size_t>(g_.num_groups()) * streams_per_device_;
    std::vector<char> used(lanes, 0);
    Int64Bound bound(g_, cluster_);
    // The dependency counts in a pass the compiler vectorizes, then one pass with (predictable)
    // branches: roots, the compute tasks' devices and their durations' and allocations' sums (in
    // 128 bits, as a low word and its carries: each of up to 2^30 values is below 2^63).
    const auto n = static_cast<TaskId>(g_.size());
    g_.dependency_counts(remaining_.get());
    std::uint64_t duration_hi = 0, duration_lo = 0, alloc_hi = 0, alloc_lo = 0;
    std::int64_t* const device_state = state.data();
    for (TaskId t = 0; t < n; ++t) {
      if (remaining_[static_cast<std::size_t>(t)] == 0) {  // a root: no predecessor (others' are set when released)
        crit_pred_[static_cast<std::size_t>(t)] = kNoTask;
        ready_.push_back(t);
      }
      if (g_.kind(t) == TaskKind::Compute) [[likely]] {
        device_state[static_cast<std::size_t>(g_.device(t))] = kActive;
        const auto d = static_cast<std::uint64_t>(g_.duration(t));
        const auto a = static_cast<std::uint64_t>(g_.alloc_bytes(t));
        duration_lo += d;
        duration_hi += static_cast<std::uint64_t>(duration_lo < d);
        alloc_lo += a;
        alloc_hi += static_cast<std::uint64_t>(alloc_lo < a);
      } else {
        scan_other(t, bound, state, used);
      }
    }
    bound.add_compute((Int64Bound::Sum{duration_hi} << 64) + duration_lo, (Int64Bound::Sum{alloc_hi} << 64) + alloc_lo);
    bound.check();
    waiting_.assign(lanes, {});
    lane_busy_.assign(lanes, 0);
    lane_start_.assign(lanes, 0);
    for (std::size_t lane = 0; lane < lanes; ++lane) {
      if (!used[lane]) continue;
      const auto members = g_.group_devices(static_cast<GroupId>(lane / streams_per_device_));
      for (DeviceId d : members)
        if (state[static_cast<std::size_t>(d)] == kActive) waiting_[lane].push_back(d);
      if (waiting_[lane].empty()) {
        state[static_cast<std::size_t>(members.front())] = kActive;
        waiting_[lane].push_back(members.front());
      }
    }
    local_of_.assign(state.size(), -1);
    for (std::size_t d = 0; d < state.size(); ++d) {
      if (state[d] >= 0) passive_.emplace_back(static_cast<DeviceId>(d), static_cast<std::size_t>(state[d]));
      if (state[d] != kActive) continue;
      local_of_[d] = static_cast<std::int32_t>(global_of_.size());
      global_of_.push_back(static_cast<DeviceId>(d));
    }
  }

  // ------------------------------------------------------------------ events
  // A flow's event (task ends are handled by run()'s loop).
  void handle_flow_event(const Event& e) {
    switch (e.type()) {
      case EventType::TaskEnd: break;
      case EventType::FlowLatencyDone: {
        ++event_count_;
        Flow& f = network_.flow(e.id);
        if (f.bytes == 0) flow_done(e.id);
        else network_.join(e.id, now_);
        break;
      }
      case EventType::FlowDone:
        if ((network_.flow(e.id).version & kVersionMask) != e.version()) return;  // rescheduled since: stale
        ++event_count_;
        flow_done(e.id);
        break;
    }
  }

  void flow_done(FlowId f) {
    const Flow& fl = network_.flow(f);
    const std::uint8_t kind = fl.owner_kind;
    const std::uint32_t owner = fl.owner;
    network_.release(f, now_);
    if (kind == kOwnerTransfer) complete_other(static_cast<TaskId>(owner));
    else step_flow_done(owner);
  }

  void settle() {
    if (!network_.has_pending_changes()) return;
    network_.settle(now_, events_);
  }

  void begin_flow(const RouteRef& route, Bytes bytes, std::uint8_t owner_kind, std::uint32_t owner, double cap = 0) {
    const FlowId f = network_.add(route, bytes, owner_kind, owner, cap);
    events_.push(now_ + route.latency, f, EventType::FlowLatencyDone);
  }

  // ------------------------------------------------------------------ dispatch
  void mark_dirty(std::size_t s) { mark_dirty_if(s, true); }
  // Branch-free: dirty_ has room for every stream, so the entry is written either way and kept
  // when `cond` holds for a stream not listed yet (whether a freed stream has a queue is data).
  void mark_dirty_if(std::size_t s, bool cond) {
    StreamState& st = streams_[s];
    const bool add = cond & !st.dirty;
    dirty_[dirty_count_] = s;
    dirty_count_ += static_cast<std::size_t>(add);
    st.dirty = st.dirty | cond;
  }

  // Tiny batches are the norm (1-3 tasks): insertion sort beats std::sort's setup there.
  static void sort_small(ReadyList& v) {
    if (v.size() > 16) {
      std::sort(v.begin(), v.end());
      return;
    }
    for (std::size_t i = 1; i < v.size(); ++i)
      for (std::size_t j = i; j > 0 && v[j] < v[j - 1]; --j) std::swap(v[j], v[j - 1]);
  }

  // A ready compute task or transfer joins its stream: started at once when the stream is free with
  // nothing queued, else queued.
  [[gnu::always_inline]] void dispatch_on_stream(TaskId t) {
    const auto local = static_cast<std::size_t>(local_of_[static_cast<std::size_t>(g_.device(t))]);
    const std::size_t s = local * streams_per_device_ + static_cast<std::size_t>(g_.stream(t));
    StreamState& st = streams_[s];
    if (st.running == kNoTask && st.queue.empty()) {  // free stream, nothing queued: start now
      st.running = t;
      st.busy -= now_;
      start_task(t, devices_[local]);
    } else {
      st.queue.push({t, now_});
      // A running stream is marked when it frees (free_stream); an idle one with a queue
      // holds an arrived collective at its head, which this task cannot unblock.
      if (st.running == kNoTask) mark_dirty(s);
    }
  }

  // Markers complete the moment they are ready: the tasks they release are ready at this instant
  // too and join their streams in id order with the others, as if released directly. Markers
  // (and markers they release) are completed first, in id order, and leave ready_.
  [[gnu::noinline]] void complete_markers() {
    const auto is_marker = [this](TaskId t) { return g_.kind(t) == TaskKind::Marker; };
    while (std::any_of(ready_.begin(), ready_.end(), is_marker)) {
      sort_small(ready_);
      batch_.swap(ready_);
      ready_.clear();
      for (TaskId t : batch_) {
        if (!is_marker(t)) {
          ready_.push_back(t);
          continue;
        }
        if (!timeline_.empty()) timeline_[static_cast<std::size_t>(t)].start = now_;
        complete_other(t);  // its successors join ready_
      }
    }
  }

  void dispatch() {
    while (!ready_.empty()) {
      if (has_markers_) [[unlikely]]
        complete_markers();
      sort_small(ready_);
      batch_.swap(ready_);
      ready_.clear();
      for (TaskId t : batch_) {
        switch (g_.kind(t)) {
          case TaskKind::Marker:  // completed above
            break;
          case TaskKind::Compute:
          case TaskKind::Transfer: dispatch_on_stream(t); break;
          case TaskKind::Collective: {
            const auto members = waiting(lane_of(t));
            if (members.size() == 1) {  // one waiting member (the rest passive): like a compute task
              const std::size_t s = stream_index(members[0], g_.stream(t));
              StreamState& st = streams_[s];
              if (st.running == kNoTask && st.queue.empty()) {
                st.running = t;
                st.busy -= now_;
                remaining_[static_cast<std::size_t>(t)] = 0;
                start_collective(t);
                break;
              }
            }
            remaining_[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(members.size());  // now: arrivals
            for (DeviceId d : members) {
              const std::size_t s = stream_index(d, g_.stream(t));
              streams_[s].queue.push({t, now_});
              mark_dirty(s);
            }
            break;
          }
        }
      }
    }
    if (dirty_count_ > 1) std::sort(dirty_.begin(), dirty_.begin() + static_cast<std::ptrdiff_t>(dirty_count_));
    for (std::size_t i = 0; i < dirty_count_; ++i) {
      const std::size_t s = dirty_[i];
      streams_[s].dirty = false;
      try_start(s);
    }
    dirty_count_ = 0;
  }

  void try_start(std::size_t s) {
    StreamState& st = streams_[s];
    if (st.running != kNoTask || st.queue.empty()) return;
    const Queued head = st.queue.front();
    const TaskId t = head.task;
    if (g_.kind(t) != TaskKind::Collective) {
      st.queue.pop();
      st.running = t;
      st.busy -= now_;
      if (now_ > head.ready) crit_pred_[static_cast<std::size_t>(t)] = st.last_task;  // waited for the stream
      start_task(t, devices_[st.local]);
      return;
    }
    if (st.arrived_for == t) return;
    st.arrived_for = t;
    if (!work_.empty()) hold_on_arrival(t, st.local);
    if (--remaining_[static_cast<std::size_t>(t)] > 0) return;  // other members still busy
    TaskId blocker = kNoTask;
    TimeNs blocker_end = -1;
    for (DeviceId d : waiting(lane_of(t))) {
      StreamState& m = streams_[stream_index(d, g_.stream(t))];
      m.queue.pop();
      m.running = t;
      m.busy -= now_;
      m.arrived_for = kNoTask;
      if (m.last_task != kNoTask && m.last_end > blocker_end) {
        blocker_end = m.last_end;
        blocker = m.last_task;
      }
    }
    if (now_ > head.ready) crit_pred_[static_cast<std::size_t>(t)] = blocker;
    start_collective(t);
  }

  // ------------------------------------------------------------------ starting and completing
  void touch(DeviceState& d) {
    d.in_state[static_cast<std::size_t>(d.compute_active > 0) | static_cast<std::size_t>(d.comm_active > 0) << 1] +=
        now_ - d.last;
    d.last = now_;
  }
  // The busy times of DeviceStats from the per-state times (exact: integer sums).
  static void fold_states(DeviceState& d) {
    d.stats.idle = d.in_state[0];
    d.stats.compute_busy = d.in_state[1] + d.in_state[3];
    d.stats.comm_busy = d.in_state[2] + d.in_state[3];
    d.stats.exposed_comm = d.in_state[2];
  }

  // All ones when t's bytes count as activations, else zero: the category of a random graph's
  // tasks is data, so starts and ends select with it instead of branching.
  Bytes activations_mask(TaskId t) const {
    return -static_cast<Bytes>(g_.memory_category(t) == MemoryCategory::Activations);
  }
  // Branch-free: whether a start sets a new peak is data (random on a mixed graph), and the
  // breakdown at the peak is rebuilt from the activations kept with it (finish(): the rest is other).
  void allocate(DeviceState& d, TaskId t) {
    const Bytes b = g_.alloc_bytes(t);
    d.activations += b & activations_mask(t);
    d.live += b;
    const Bytes higher = -static_cast<Bytes>(d.live > d.stats.peak_memory);  // all ones or zero: selects below
    d.stats.peak_memory ^= (d.stats.peak_memory ^ d.live) & higher;
    d.stats.peak_time ^= (d.stats.peak_time ^ now_) & higher;
    d.peak_activations ^= (d.peak_activations ^ d.activations) & higher;
  }

  void start_task(TaskId t, DeviceState& d) {
    if (!timeline_.empty()) timeline_[static_cast<std::size_t>(t)].start = now_;
    g_.prefetch_end(t);
    touch(d);
    allocate(d, t);
    if (g_.kind(t) == TaskKind::Compute) [[likely]] {
      if (g_.phase(t) != Phase::DataLoad) ++d.compute_active;  // the host loads; the device stays idle
      if (!work_.empty()) [[unlikely]] {
        const auto local = static_cast<std::size_t>(&d - devices_.data());
        if (held_[local] != 0 && g_.phase(t) != Phase::DataLoad) {
          start_slowed(t, local);
          return;
        }
        // No collective holds SMs here: the plain end, with the stream's version (start_slowed()).
        ComputeWork& w = work_[local * streams_per_device_ + static_cast<std::size_t>(g_.stream(t))];
        w.since = now_;
        w.left = static_cast<double>(g_.duration(t));
        w.rate = 1.0;
        ++w.version;
        events_.push(now_ + g_.duration(t), static_cast<std::uint32_t>(t), EventType::TaskEnd,
                     w.version & kVersionMask);
        return;
      }
      events_.push(now_ + g_.duration(t), static_cast<std::uint32_t>(t), EventType::TaskEnd);
      return;
    }
    ++d.comm_active;
    start_transfer(t);
  }
  // Out of line, so that start_task() (mostly compute tasks) saves fewer registers.
  [[gnu::noinline]] void start_transfer(TaskId t) {
    if (g_.src(t) == g_.dst(t)) {  // a copy to itself moves nothing over any link
      events_.push(now_, static_cast<std::uint32_t>(t), EventType::TaskEnd);
      return;
    }
    begin_flow(planner_.routes().get(g_.src(t), g_.dst(t)), g_.bytes(t), kOwnerTransfer, static_cast<std::uint32_t>(t));
  }

  // The plan of a collective task and its closed-form time, memoised per (group, op, algorithm as
  // asked, bytes): tasks repeat the same collective once per micro-batch. The planner resolves Auto
  // and memoises the choice too, across runs when it is shared.
  // Expanded collectives priced by their links need only the plan of a fixed algorithm (its
  // closed-form time goes unused, the protocol is Simple), and that plan depends on the size only
  // when chunked by it (a broadcast, a hierarchical tree): one lookup then serves every size.
  const CollectiveChoice& plan_for(TaskId t) {
    const GroupId group = g_.group(t);
    const CollectiveOp op = g_.collective_op(t);
    const CollectiveAlgorithm algo = g_.algorithm(t);
    const Bytes bytes = g_.bytes(t);
    const bool plan_only = options_.collectives == CollectiveMode::Expanded &&
                           options_.costs == CollectiveCosts::Links && algo != CollectiveAlgorithm::Auto;
    const bool sized = op == CollectiveOp::Broadcast ||
                       (op == CollectiveOp::AllReduce && algo == CollectiveAlgorithm::HierarchicalTree);
    const PlanKey key{group, op, algo, plan_only && !sized ? 0 : bytes};
    if (auto it = resolved_.find(key); it != resolved_.end()) return it->second;
    if (plan_only)
      return resolved_
          .emplace(key, CollectiveChoice{&planner_.cached_plan(g_.group_devices(group), op, algo, bytes), 0,
                                         CollectiveProtocol::Simple})
          .first->second;
    const CollectiveChoice& r = planner_.cached_choice(g_.group_devices(group), op, algo, bytes, options_.costs,
                                                       options_.intra_node_comm_scale, options_.inter_node_comm_scale);
    return resolved_.emplace(key, r).first->second;
  }

  void start_collective(TaskId t) {
    if (!timeline_.empty()) timeline_[static_cast<std::size_t>(t)].start = now_;
    const std::size_t lane = lane_of(t);
    lane_start_[lane] = now_;
    for (DeviceId m : waiting(lane)) {
      DeviceState& d = dev(m);
      touch(d);
      ++d.comm_active;
    }
    const Bytes bytes = g_.bytes(t);
    const CollectiveChoice& resolved = plan_for(t);
    const CollectivePlan& plan = *resolved.plan;
    if (!algorithms_.empty()) algorithms_[static_cast<std::size_t>(t)] = plan.algorithm;
    if (bytes == 0 || plan.phases.empty()) {
      events_.push(now_, static_cast<std::uint32_t>(t), EventType::TaskEnd);
      return;
    }
    // Members that arrived hold their SMs already; a lone waiting member started at once holds them now.
    if (!work_.empty() && !lane_holds_[lane].active) hold_sms(lane, hold_of(t));
    if (options_.collectives == CollectiveMode::Analytic) {
      events_.push(now_ + resolved.time, static_cast<std::uint32_t>(t), EventType::TaskEnd);
      return;
    }
    const std::uint32_t r = detail::take_slot(runs_, free_runs_);
    runs_[r] = CollectiveRun{t, &plan, 0, 0, 0, resolved.protocol};
    start_step(r);
  }

  void start_step(std::uint32_t r) {
    CollectiveRun& run = runs_[r];
    const CollectivePhase& ph = run.plan->phases[run.phase];
    const auto& pattern = run.plan->patterns[ph.pattern];
    Bytes b = CollectivePlan::flow_bytes(ph, g_.bytes(run.task));
    run.pending = static_cast<std::uint32_t>(pattern.size());
    const bool nccl = options_.costs == CollectiveCosts::Nccl;
    TimeNs latency = 0;
    if (nccl) {
      // The protocol's payload share stretches every message; NCCL's step latency replaces the
      // route's, and the collective's base latency rides on its first step.
      const double scale =
          ph.hop == HopClass::Net ? options_.inter_node_comm_scale : options_.intra_node_comm_scale;
      // NVLink steps also stretch to the share NCCL reaches at this size (size_efficiency).
      const Bytes total = g_.bytes(run.task);
      const double eta = run.plan->size_efficiency(ph, total);
      b = static_cast<Bytes>(
          std::ceil(static_cast<double>(b) * scale / (run.plan->bandwidth_factor(ph, run.protocol) * eta)));
      double lat = static_cast<double>(run.plan->step_latency(ph, run.protocol)) / eta;
      if (run.phase == 0 && run.repeat == 0) lat += run.plan->stretched_base_latency(run.protocol, total);
      latency = static_cast<TimeNs>(std::llround(lat * scale));
    }
    if (options_.symmetric_collectives) {
      const auto& reps = run.plan->representatives[ph.pattern];
      const auto& idle = run.plan->idle[ph.pattern];
      run.pending = static_cast<std::uint32_t>(reps.size());
      messages_ += static_cast<std::int64_t>(reps.size());
      inferred_ += static_cast<std::int64_t>(pattern.size() - reps.size());
      for (std::uint32_t i : reps) {
        RouteRef route = planner_.routes().get(pattern[i].src, pattern[i].dst);
        if (nccl) route.latency = latency;
        // Held to its class's idle share when the class shares links (the others are not simulated).
        const double cap = idle[i].rate < route.bottleneck ? idle[i].rate : 0.0;
        begin_flow(route, b, kOwnerCollective, r, cap);
      }
      return;
    }
    messages_ += static_cast<std::int64_t>(pattern.size());
    for (const DevicePair& p : pattern) {
      RouteRef route = planner_.routes().get(p.src, p.dst);
      if (nccl) route.latency = latency;
      begin_flow(route, b, kOwnerCollective, r);
    }
  }

  void step_flow_done(std::uint32_t r) {
    CollectiveRun& run = runs_[r];
    if (--run.pending > 0) return;
    if (++run.repeat == run.plan->phases[run.phase].repeats) {
      run.repeat = 0;
      ++run.phase;
    }
    if (run.phase < run.plan->phases.size()) {
      start_step(r);
      return;
    }
    const TaskId t = run.task;
    free_runs_.push_back(r);
    complete_other(t);
  }

  void free_stream(std::size_t s, TaskId t) {
    StreamState& st = streams_[s];
    st.running = kNoTask;
    st.last_task = t;
    st.last_end = now_;
    st.busy += now_;
    mark_dirty_if(s, !st.queue.empty());  // an empty stream is started directly by dispatch()
  }

  // Out of line, so that complete() (mostly compute tasks) saves fewer registers.
  [[gnu::noinline]] void end_collective(TaskId t) {
    const std::size_t lane = lane_of(t);
    lane_busy_[lane] += now_ - lane_start_[lane];
    if (!work_.empty() && lane_holds_[lane].active) release_sms(lane);
    for (DeviceId m : waiting(lane)) {
      DeviceState& d = dev(m);
      touch(d);
      --d.comm_active;
      free_stream(stream_index(m, g_.stream(t)), t);
    }
  }

  // complete() for the rarer callers (a transfer's flow, a collective's last step, a marker): the
  // task ends of the event loop inline it and save a call's register spills per event.
  [[gnu::noinline]] void complete_other(TaskId t) { complete(t); }

  // Dispatching: t ended alone at its instant with nothing released before it, so dispatch() would
  // take its released successors (ascending ids) in that order, before the streams marked dirty;
  // the compute tasks and transfers among them are dispatched here instead, up to the first of
  // another kind, which stays in ready_ for dispatch() with the rest, still in id order.
  template <bool Dispatching = false>
  [[gnu::always_inline]] void complete(TaskId t) {
    const auto ti = static_cast<std::size_t>(t);
    if (!timeline_.empty()) timeline_[ti].end = now_;
    ++completed_;
    // The last task to complete ends the critical path; at equal times the later completion
    // wins, since it is downstream of any zero-length task completed at the same instant (time
    // never goes back, so the latest completion is always the last one).
    last_end_ = now_;
    last_task_ = t;
    switch (g_.kind(t)) {
      case TaskKind::Compute:
      case TaskKind::Transfer: {
        const auto local = static_cast<std::size_t>(local_of_[static_cast<std::size_t>(g_.device(t))]);
        DeviceState& d = devices_[local];
        touch(d);
        if (g_.kind(t) == TaskKind::Transfer) --d.comm_active;
        else if (g_.phase(t) != Phase::DataLoad) --d.compute_active;
        const Bytes freed = g_.free_bytes(t);
        d.activations -= freed & activations_mask(t);
        d.live -= freed;
        free_stream(local * streams_per_device_ + static_cast<std::size_t>(g_.stream(t)), t);
        break;
      }
      case TaskKind::Collective: end_collective(t); break;
      case TaskKind::Marker:
        break;
    }
    // Tasks become ready roughly in id order: fetch the columns of those kPrefetchAhead ids on.
    while (prefetched_ < t + kPrefetchAhead && prefetched_ < static_cast<TaskId>(g_.size())) {
      g_.prefetch_tasks(prefetched_);
      __builtin_prefetch(remaining_.get() + prefetched_);
      __builtin_prefetch(crit_pred_.get() + prefetched_);
      prefetched_ += 8;
    }
    if constexpr (Dispatching) {
      for (TaskId s : g_.successors(t))
        if (--remaining_[static_cast<std::size_t>(s)] == 0) {
          crit_pred_[static_cast<std::size_t>(s)] = t;
          const TaskKind k = g_.kind(s);
          if (ready_.empty() && (k == TaskKind::Compute || k == TaskKind::Transfer)) {
            dispatch_on_stream(s);
            continue;
          }
          ready_.push_back(s);
        }
    } else {
      // Released: the successors whose last dependency this was. Every successor's critical-path
      // predecessor is written, since the last write is the release's.
      const auto succs = g_.successors(t);
      ready_.make_room(succs.size());
      for (TaskId s : succs) {
        crit_pred_[static_cast<std::size_t>(s)] = t;
        ready_.append_if(s, --remaining_[static_cast<std::size_t>(s)] == 0);
      }
    }
  }

  // ------------------------------------------------------------------ SMs held by collectives
  // EngineOptions::collectives_hold_sms. A running compute task's work is kept in ns at full rate;
  // when the SMs its device's collectives hold change, the work done at the old rate comes off and
  // its end is queued anew at the new rate, with the stream's version (older ends are stale).
  struct LaneHold {  // what a lane's running collective holds: NCCL's channels for these
    bool active = false;
    CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
    CollectiveProtocol protocol = CollectiveProtocol::Simple;
    Bytes bytes = 0;
    std::int32_t ranks = 0;
  };
  struct ComputeWork {
    double left = 0;  // ns of work at full rate, as of `since`
    double rate = 1;
    TimeNs since = 0;
    std::uint32_t version = 0;
  };

  void init_sm_holds() {
    work_.assign(streams_.size(), ComputeWork{});
    sms_.assign(global_of_.size(), 0.0);
    held_.assign(global_of_.size(), 0);
    channels_.assign(global_of_.size(), {0, 0});
    lane_holds_.assign(waiting_.size(), LaneHold{});
    for (std::size_t i = 0; i < global_of_.size(); ++i) {
      const std::optional<hardware::DeviceSpec> spec = hardware::find_device_spec(cluster_.device(global_of_[i]).kind);
      if (!spec || spec->sm_count <= 1) continue;  // a CPU or an unknown part: never slowed
      const hardware::NcclChannels ch = hardware::nccl_channels(*spec);
      sms_[i] = spec->sm_count;
      channels_[i] = {ch.ring_tree, ch.nvls > 0 ? ch.nvls : ch.ring_tree};
      if (const std::optional<int> pinned = cluster_.spec().nccl_channels) channels_[i] = {*pinned, *pinned};
    }
  }
  double rate_of(std::size_t local) const {
    const double sms = sms_[local];
    if (sms <= 0 || held_[local] == 0) return 1.0;
    return (sms - std::min(static_cast<double>(held_[local]), sms - 1)) / sms;
  }
  bool stale_end(const Event& e) const {
    const auto t = static_cast<TaskId>(e.id);
    if (g_.kind(t) != TaskKind::Compute) return false;
    const std::size_t s = stream_index(g_.device(t), g_.stream(t));
    return streams_[s].running != t || (work_[s].version & kVersionMask) != e.version();
  }
  void queue_end(TaskId t, ComputeWork& w) {
    ++w.version;
    // Capped like a flow's completion: Engine::run checked that the work fits 64-bit time at full rate.
    const double eta = std::min(w.left / w.rate, 8.0e18 - static_cast<double>(now_));
    events_.push(now_ + detail::round_half_up(eta), static_cast<std::uint32_t>(t), EventType::TaskEnd,
                 w.version & kVersionMask);
  }
  // A compute task starting where collectives hold SMs (held_ > 0 only on a part with SMs, and at
  // most all but one: the rate is below 1); start_task() queues the full-rate starts itself.
  [[gnu::noinline]] void start_slowed(TaskId t, std::size_t local) {
    ComputeWork& w = work_[local * streams_per_device_ + static_cast<std::size_t>(g_.stream(t))];
    w.since = now_;
    w.left = static_cast<double>(g_.duration(t));
    w.rate = rate_of(local);
    queue_end(t, w);
  }
  // The device's collectives now hold `delta` more SMs: its running compute tasks change rate.
  void change_held(std::size_t local, int delta) {
    const double before = rate_of(local);
    held_[local] += delta;
    const double rate = rate_of(local);
    if (rate == before) return;
    for (std::size_t s = local * streams_per_device_; s < (local + 1) * streams_per_device_; ++s) {
      const TaskId t = streams_[s].running;
      if (t == kNoTask || g_.kind(t) != TaskKind::Compute || g_.phase(t) == Phase::DataLoad) continue;
      ComputeWork& w = work_[s];
      w.left = std::max(0.0, w.left - static_cast<double>(now_ - w.since) * w.rate);
      w.since = now_;
      w.rate = rate;
      queue_end(t, w);
    }
  }
  // What collective t holds: its plan's algorithm and protocol at its size (nothing when it moves
  // no bytes).
  LaneHold hold_of(TaskId t) {
    const Bytes bytes = g_.bytes(t);
    const CollectiveChoice& resolved = plan_for(t);
    if (bytes == 0 || resolved.plan->phases.empty()) return {};
    return {true, resolved.plan->algorithm, resolved.protocol, bytes,
            static_cast<std::int32_t>(g_.group_devices(g_.group(t)).size())};
  }
  // A member's NCCL kernel is launched when its stream reaches the collective and holds its SMs
  // from then on, while it waits for the other members to arrive.
  [[gnu::noinline]] void hold_on_arrival(TaskId t, std::size_t local) {
    LaneHold& h = lane_holds_[lane_of(t)];
    if (!h.active) h = hold_of(t);
    if (h.active) change_held(local, channels_held(h, local));
  }
  // The SMs `h` holds on local device `local` (its own channel counts, the collective's size).
  std::int32_t channels_held(const LaneHold& h, std::size_t local) const {
    return nccl_collective_channels(channels_[local][0], channels_[local][1], h.bytes, h.algorithm, h.protocol,
                                    h.ranks);
  }
  // Every waiting member of `lane` takes (+1) or gives back (-1) what the lane's collective holds.
  void hold_on_members(std::size_t lane, int sign) {
    for (DeviceId m : waiting(lane)) {
      const auto local = static_cast<std::size_t>(local_of_[static_cast<std::size_t>(m)]);
      change_held(local, sign * channels_held(lane_holds_[lane], local));
    }
  }
  [[gnu::noinline]] void hold_sms(std::size_t lane, const LaneHold& h) {
    lane_holds_[lane] = h;
    hold_on_members(lane, +1);
  }
  [[gnu::noinline]] void release_sms(std::size_t lane) {
    hold_on_members(lane, -1);
    lane_holds_[lane].active = false;
  }

  // ------------------------------------------------------------------ results
  // A valid graph cannot stall (collectives enter every member stream in the same global
  // order), so this names the first blocked stream head to make a bug report actionable.
  [[noreturn]] void report_stall() const {
    std::string where;
    for (std::size_t s = 0; s < streams_.size() && where.empty(); ++s)
      if (!streams_[s].queue.empty()) {
        const TaskId t = streams_[s].queue.front().task;
        where = " (stream " + std::to_string(s % streams_per_device_) + " of device " +
                std::to_string(global_of_[s / streams_per_device_]) + " is blocked at task " + std::to_string(t) +
                " \"" + std::string(g_.name(t)) + "\")";
      }
    throw RuntimeError("simulation stalled with " + std::to_string(g_.size() - completed_) +
                       " tasks unfinished" + where + "; this is a simulator bug, please report it with the task graph");
  }

  StepResult finish() {
    StepResult r;
    r.step_time = last_end_;
    r.tasks = static_cast<std::int64_t>(g_.size());
    r.events = event_count_;
    r.collective_mode = options_.collectives;
    r.collective_messages = messages_;
    r.collective_messages_inferred = inferred_;
    now_ = last_end_;
    // Devices without local state: never touched (idle throughout) or passive (below).
    r.devices.resize(static_cast<std::size_t>(g_.num_devices()));
    for (DeviceId d = 0; d < g_.num_devices(); ++d) {
      const std::int32_t local = local_of_[static_cast<std::size_t>(d)];
      if (local >= 0) {
        DeviceState& state = devices_[static_cast<std::size_t>(local)];
        touch(state);
        fold_states(state);
        state.stats.peak_breakdown = {
            state.fixed.params, state.fixed.grads, state.fixed.optimizer, state.peak_activations,
            state.stats.peak_memory - state.static_bytes - state.peak_activations + state.fixed.other};
        r.devices[static_cast<std::size_t>(d)] = state.stats;
      } else {
        DeviceState untouched;
        init_device(untouched, d);
        touch(untouched);
        fold_states(untouched);
        r.devices[static_cast<std::size_t>(d)] = untouched.stats;
      }
    }
    // Per stream: the summed durations of its tasks (one add per start and end, no timeline).
    r.stream_busy.assign(static_cast<std::size_t>(g_.num_devices()) * streams_per_device_, 0);
    for (std::size_t s = 0; s < streams_.size(); ++s)
      r.stream_busy[static_cast<std::size_t>(global_of_[s / streams_per_device_]) * streams_per_device_ +
                    s % streams_per_device_] = streams_[s].busy;
    for (const auto& [device, lane] : passive_) {  // only ever busy with their lane's collectives
      DeviceStats& s = r.devices[static_cast<std::size_t>(device)];
      s.compute_busy = 0;
      s.comm_busy = s.exposed_comm = lane_busy_[lane];
      s.idle = last_end_ - lane_busy_[lane];
    }
    network_.collect(r);
    if (last_task_ != kNoTask) {
      // A chain of loads through a large graph: predecessors are mostly a few dozen ids back, so
      // fetch those some way back from each step.
      for (TaskId t = last_task_; t != kNoTask; t = crit_pred_[static_cast<std::size_t>(t)]) {
        __builtin_prefetch(crit_pred_.get() + std::max(t - 512, 0));
        r.critical_path.push_back(t);
      }
      std::reverse(r.critical_path.begin(), r.critical_path.end());
    }
    r.timeline = std::move(timeline_);
    r.algorithms = std::move(algorithms_);
    return r;
  }

  const hardware::Cluster& cluster_;
  const EngineOptions& options_;
  const TaskGraph& g_;
  std::unique_ptr<CollectivePlanner> own_planner_;
  CollectivePlanner& planner_;
  FlowNetwork network_;
  EventQueue events_;
  std::size_t streams_per_device_;
  std::vector<StreamState> streams_;
  std::vector<DeviceState> devices_;
  // Per task, filled by scan_graph (allocated without the zero fill it would overwrite):
  std::unique_ptr<std::int32_t[]> remaining_;  // dependencies not done; then, for collectives, members not arrived
  std::unique_ptr<TaskId[]> crit_pred_;
  std::vector<TaskTiming> timeline_;
  std::vector<CollectiveAlgorithm> algorithms_;
  ReadyList ready_, batch_;
  bool has_markers_ = false;        // the graph has markers: dispatch() completes them first
  bool release_in_order_ = true;    // no marker has a successor of a lower id (scan_other)
  std::vector<std::size_t> dirty_;  // streams_.size() slots, the first dirty_count_ listed
  std::size_t dirty_count_ = 0;
  std::vector<CollectiveRun> runs_;
  std::vector<std::uint32_t> free_runs_;
  std::vector<std::vector<DeviceId>> waiting_;               // per lane: the members a collective queues on
  std::vector<TimeNs> lane_busy_, lane_start_;                // per lane: summed and current collective
  std::vector<std::pair<DeviceId, std::size_t>> passive_;   // device, its lane
  std::vector<std::int32_t> local_of_;                      // per device: its local index, or -1
  std::vector<DeviceId> global_of_;                         // per local index: the device
  std::unordered_map<PlanKey, CollectiveChoice, PlanKeyHash> resolved_;  // values stay put
  // EngineOptions::collectives_hold_sms only (else empty):
  std::vector<ComputeWork> work_;                      // per stream: its running compute task's work
  std::vector<double> sms_;                            // per local device: its SMs (0: never slowed)
  std::vector<std::int32_t> held_;                     // per local device: SMs its collectives hold
  std::vector<std::array<std::int32_t, 2>> channels_;  // per local device: ring/tree, NVLS channels
  std::vector<LaneHold> lane_holds_;                   // per lane: what its running collective holds
  TimeNs now_ = 0;
  TimeNs last_end_ = 0;
  TaskId last_task_ = kNoTask;
  static constexpr TaskId kPrefetchAhead = 64;
  TaskId prefetched_ = 0;  // the columns of tasks below this id were prefetched
  std::size_t completed_ = 0;
  std::int64_t event_count_ = 0;
  std::int64_t messages_ = 0, inferred_ = 0;  // collective messages simulated / inferred
};

}  // namespace

Engine::Engine(const hardware::Cluster& cluster, EngineOptions options) : cluster_(cluster), options_(options) {}

StepResult Engine::run(const TaskGraph& graph) const {
  if (graph.num_devices() > cluster_.num_devices())
    throw InputError("the task graph uses " + std::to_string(graph.num_devices()) + " devices but cluster \"" +
                     cluster_.name() + "\" has " + std::to_string(cluster_.num_devices()));
  if (options_.planner != nullptr) {
    if (&options_.planner->cluster() != &cluster_)
      throw RuntimeError("Engine: EngineOptions::planner belongs to another cluster object");
    // What a shared planner may keep between runs: 128 MiB, or 4 KiB per device on clusters past
    // 32,768 GPUs, whose data-parallel groups' plans (a PAT plan has log2 n patterns of n
    // messages, each with its routes) no longer fit - a planner cleared before every other run
    // plans the same groups again and again (gpt3_175b on 131,072 GPUs: 31 s against 18 s).
    const std::size_t budget =
        std::max(std::size_t{128} << 20, (std::size_t{4} << 10) * static_cast<std::size_t>(cluster_.num_devices()));
    options_.planner->trim(budget);
  }
  Simulation sim(cluster_, options_, graph);
  return sim.run();
}

}  // namespace parasim::simulator
