// TaskGraphBuilder: per-task checks while adding, edge compaction (CSR) and cycle detection.
#include <algorithm>

#include "parasim/common/error.hpp"
#include "parasim/simulator/task_graph.hpp"

namespace parasim::simulator {

namespace {

constexpr std::int64_t kMaxDevices = 1'048'576;

std::string range_text(std::int64_t lo, std::int64_t hi) {
  return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

/// Throws InputError(message()): the per-task checks keep only their comparison inline (a
/// lowering adds millions of tasks per plan), the message is built out of line.
template <typename Message>
[[noreturn, gnu::cold, gnu::noinline]] void fail(const Message& message) {
  throw InputError(message());
}

}  // namespace

TaskGraphBuilder::TaskGraphBuilder(int num_devices, int streams_per_device) {
  if (num_devices < 1 || num_devices > kMaxDevices)
    throw InputError("taskgraph: the number of devices must be in " + range_text(1, kMaxDevices) + ", found " +
                     std::to_string(num_devices));
  if (streams_per_device < 1 || streams_per_device > kMaxStreamsPerDevice)
    throw InputError("taskgraph: streams per device must be in " + range_text(1, kMaxStreamsPerDevice) + ", found " +
                     std::to_string(streams_per_device));
  g_.num_devices_ = num_devices;
  g_.streams_per_device_ = streams_per_device;
  g_.static_memory_.assign(static_cast<std::size_t>(num_devices), StaticMemory{});
}

void TaskGraphBuilder::reserve(std::size_t tasks, std::size_t dependencies) {
  g_.meta_.reserve(tasks);
  g_.device_.reserve(tasks);
  g_.peer_.reserve(tasks);
  g_.model_op_.reserve(tasks);
  g_.microbatch_.reserve(tasks);
  g_.name_.reserve(tasks);
  g_.amount_.reserve(tasks);
  g_.alloc_.reserve(tasks);
  g_.free_.reserve(tasks);
  edges_.reserve(dependencies);
}

std::string TaskGraphBuilder::describe(std::string_view name) const {
  std::string s = "task " + std::to_string(size());
  if (!name.empty()) s += " \"" + std::string(name) + "\"";
  return s;
}

void TaskGraphBuilder::check_device(DeviceId d, std::string_view what, std::string_view name) const {
  if (d < 0 || d >= g_.num_devices_) [[unlikely]]
    fail([&] {
      return describe(name) + ": " + std::string(what) + " " + std::to_string(d) + " is out of range " +
             range_text(0, g_.num_devices_ - 1);
    });
}

void TaskGraphBuilder::check_stream(int s, std::string_view name) const {
  if (s < 0 || s >= g_.streams_per_device_) [[unlikely]]
    fail([&] {
      return describe(name) + ": stream " + std::to_string(s) + " is out of range " +
             range_text(0, g_.streams_per_device_ - 1);
    });
}

TaskId TaskGraphBuilder::push(TaskKind kind, Phase phase, int stream, DeviceId device, std::int32_t peer,
                              std::int32_t op, std::int32_t microbatch, std::string_view name, std::int64_t amount,
                              std::uint32_t extra_meta) {
  if (static_cast<std::int64_t>(size()) >= kMaxTasks) [[unlikely]]
    fail([] { return "taskgraph: more than " + std::to_string(kMaxTasks) + " tasks"; });
  const auto id = static_cast<TaskId>(size());
  g_.meta_.push_back(static_cast<std::uint32_t>(kind) | (static_cast<std::uint32_t>(phase) << 2) |
                     (static_cast<std::uint32_t>(stream) << 5) | extra_meta);
  g_.device_.push_back(device);
  g_.peer_.push_back(peer);
  g_.model_op_.push_back(op);
  g_.microbatch_.push_back(microbatch);
  g_.name_.push_back(g_.strings_.intern(name));
  g_.amount_.push_back(amount);
  g_.alloc_.push_back(0);
  g_.free_.push_back(0);
  return id;
}

GroupId TaskGraphBuilder::add_group(std::span<const DeviceId> devices) {
  const std::string where = "group " + std::to_string(g_.num_groups());
  if (devices.empty()) throw InputError(where + ": a group needs at least one device");
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(g_.num_devices_), 0);
  for (DeviceId d : devices) {
    if (d < 0 || d >= g_.num_devices_)
      throw InputError(where + ": device " + std::to_string(d) + " is out of range " +
                       range_text(0, g_.num_devices_ - 1));
    if (seen[static_cast<std::size_t>(d)]++)
      throw InputError(where + ": device " + std::to_string(d) + " is listed twice");
  }
  g_.group_devices_.insert(g_.group_devices_.end(), devices.begin(), devices.end());
  g_.group_offsets_.push_back(static_cast<std::uint32_t>(g_.group_devices_.size()));
  return static_cast<GroupId>(g_.num_groups() - 1);
}

TaskId TaskGraphBuilder::add_compute(const ComputeTask& t) {
  check_device(t.device, "device", t.name);
  check_stream(t.stream, t.name);
  if (t.duration < 0) [[unlikely]]
    fail([&] { return describe(t.name) + ": duration must be >= 0 ns, found " + std::to_string(t.duration); });
  return push(TaskKind::Compute, t.phase, t.stream, t.device, -1, t.model_op, t.microbatch, t.name, t.duration, 0);
}

TaskId TaskGraphBuilder::add_transfer(const TransferTask& t) {
  check_device(t.src, "source device", t.name);
  check_device(t.dst, "destination device", t.name);
  check_stream(t.stream, t.name);
  if (t.bytes < 0) [[unlikely]]
    fail([&] { return describe(t.name) + ": bytes must be >= 0, found " + std::to_string(t.bytes); });
  return push(TaskKind::Transfer, t.phase, t.stream, t.src, t.dst, t.model_op, t.microbatch, t.name, t.bytes, 0);
}

TaskId TaskGraphBuilder::add_collective(const CollectiveTask& t) {
  if (t.group < 0 || t.group >= g_.num_groups()) [[unlikely]]
    fail([&] {
      return describe(t.name) + ": group " + std::to_string(t.group) + " does not exist (" +
             std::to_string(g_.num_groups()) + " groups defined so far)";
    });
  check_stream(t.stream, t.name);
  if (t.bytes < 0) [[unlikely]]
    fail([&] { return describe(t.name) + ": bytes must be >= 0, found " + std::to_string(t.bytes); });
  const std::uint32_t extra =
      (static_cast<std::uint32_t>(t.op) << 13) | (static_cast<std::uint32_t>(t.algorithm) << 16);
  return push(TaskKind::Collective, t.phase, t.stream, -1, t.group, t.model_op, t.microbatch, t.name, t.bytes, extra);
}

TaskId TaskGraphBuilder::add_marker(std::string_view name, DeviceId display_device) {
  if (display_device != -1) check_device(display_device, "device", name);
  return push(TaskKind::Marker, Phase::Other, 0, display_device, -1, -1, -1, name, 0, 0);
}

void TaskGraphBuilder::too_many_dependencies() {
  throw InputError("taskgraph: more than " + std::to_string(kMaxDependencies) + " dependencies");
}

std::vector<TaskId> TaskGraphBuilder::entry_tasks(std::int32_t microbatch) const {
  const std::size_t n = size();
  const auto in = [&](TaskId t) {
    return t >= 0 && static_cast<std::size_t>(t) < n &&
           (microbatch == -1 || g_.microbatch_[static_cast<std::size_t>(t)] == microbatch);
  };
  std::vector<char> depends(n, 0);
  for (const auto& [task, dep] : edges_)
    if (in(task) && (microbatch == -1 || in(dep))) depends[static_cast<std::size_t>(task)] = 1;
  std::vector<TaskId> out;
  for (TaskId t = 0; static_cast<std::size_t>(t) < n; ++t)
    if (in(t) && depends[static_cast<std::size_t>(t)] == 0) out.push_back(t);
  return out;
}

void TaskGraphBuilder::set_memory(TaskId t, Bytes alloc_at_start, Bytes free_at_end, MemoryCategory category) {
  if (t < 0 || static_cast<std::size_t>(t) >= size())
    throw InputError("taskgraph: set_memory on task " + std::to_string(t) + ", which does not exist");
  // The message is only built on the error path: lowerings call this for most of their tasks.
  auto who = [&] { return "task " + std::to_string(t) + " \"" + std::string(g_.name(t)) + "\""; };
  if (alloc_at_start < 0 || free_at_end < 0)
    throw InputError(who() + ": allocated and freed bytes must be >= 0, found " + std::to_string(alloc_at_start) +
                     " and " + std::to_string(free_at_end));
  if (g_.kind(t) == TaskKind::Collective && (alloc_at_start != 0 || free_at_end != 0))
    throw InputError(who() + ": a collective has no single device to account memory on");
  g_.alloc_[static_cast<std::size_t>(t)] = alloc_at_start;
  g_.free_[static_cast<std::size_t>(t)] = free_at_end;
  auto& meta = g_.meta_[static_cast<std::size_t>(t)];
  meta = (meta & ~(1u << 19)) | (static_cast<std::uint32_t>(category) << 19);
}

void TaskGraphBuilder::set_static_memory(DeviceId d, const StaticMemory& m) {
  if (d < 0 || d >= g_.num_devices_)
    throw InputError("taskgraph: static memory for device " + std::to_string(d) + ", out of range " +
                     range_text(0, g_.num_devices_ - 1));
  if (m.params < 0 || m.grads < 0 || m.optimizer < 0 || m.other < 0)
    throw InputError("taskgraph: static memory of device " + std::to_string(d) + " must be >= 0 bytes");
  g_.static_memory_[static_cast<std::size_t>(d)] = m;
}

namespace {

std::string task_label(const TaskGraph& g, TaskId t) {
  std::string s = "task " + std::to_string(t);
  if (!g.name(t).empty()) s += " \"" + std::string(g.name(t)) + "\"";
  return s;
}

// Called when Kahn's algorithm leaves tasks unprocessed: every such task still waits on an
// unprocessed dependency, so walking those dependencies must revisit a task - a cycle.
[[noreturn]] void report_cycle(const TaskGraph& g, const std::vector<std::int32_t>& waiting) {
  TaskId start = 0;
  while (waiting[static_cast<std::size_t>(start)] == 0) ++start;
  std::vector<std::int32_t> position(g.size(), -1);
  std::vector<TaskId> walk;
  TaskId t = start;
  while (position[static_cast<std::size_t>(t)] < 0) {
    position[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(walk.size());
    walk.push_back(t);
    for (TaskId d : g.deps(t))
      if (waiting[static_cast<std::size_t>(d)] > 0) {
        t = d;
        break;
      }
  }
  // walk[position[t]..] is the cycle, each task depending on the next; print in run order.
  std::vector<TaskId> cycle(walk.begin() + position[static_cast<std::size_t>(t)], walk.end());
  std::reverse(cycle.begin(), cycle.end());
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());  // start at the lowest id
  std::string msg = "dependency cycle: ";
  const std::size_t shown = std::min<std::size_t>(cycle.size(), 12);
  for (std::size_t i = 0; i < shown; ++i) msg += task_label(g, cycle[i]) + " -> ";
  if (shown < cycle.size()) msg += "... (" + std::to_string(cycle.size()) + " tasks) -> ";
  msg += task_label(g, cycle.front());
  throw InputError(msg);
}

// Kahn's algorithm over the CSR arrays: anything left waiting is on (or behind) a cycle.
void check_acyclic(const TaskGraph& g, const std::uint32_t* dep_offsets, const std::uint32_t* succ_offsets,
                   const TaskId* succs) {
  const std::size_t n = g.size();
  std::vector<std::int32_t> waiting(n);
  std::vector<TaskId> queue;
  queue.reserve(n);
  for (std::size_t t = 0; t < n; ++t) {
    waiting[t] = static_cast<std::int32_t>(dep_offsets[t + 1] - dep_offsets[t]);
    if (waiting[t] == 0) queue.push_back(static_cast<TaskId>(t));
  }
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const auto t = static_cast<std::size_t>(queue[head]);
    for (std::uint32_t k = succ_offsets[t]; k < succ_offsets[t + 1]; ++k)
      if (--waiting[static_cast<std::size_t>(succs[k])] == 0) queue.push_back(succs[k]);
  }
  if (queue.size() != n) report_cycle(g, waiting);
}

}  // namespace

TaskGraph TaskGraphBuilder::build() && {
  TaskGraph& g = g_;
  const std::size_t n = g.size();
  // Counting sort of the edges by task (checking their ids on the way), then sort + dedupe each
  // task's list in place. `backward`: every edge points to an earlier task, so ids are a run
  // order and there is no cycle (lowerings add most graphs that way).
  std::vector<std::uint32_t> offsets(n + 1, 0);
  bool backward = true;
  for (const auto& [task, dep] : edges_) {
    if (task < 0 || static_cast<std::size_t>(task) >= n)
      throw InputError("dependency of task " + std::to_string(task) + " on task " + std::to_string(dep) +
                       ": task " + std::to_string(task) + " does not exist (the graph has " + std::to_string(n) +
                       " tasks)");
    if (dep < 0 || static_cast<std::size_t>(dep) >= n)
      throw InputError(task_label(g, task) + ": depends on task " + std::to_string(dep) +
                       ", which does not exist (the graph has " + std::to_string(n) + " tasks)");
    backward = backward && dep < task;
    ++offsets[static_cast<std::size_t>(task) + 1];
  }
  for (std::size_t i = 0; i < n; ++i) offsets[i + 1] += offsets[i];
  std::vector<TaskId> deps(edges_.size());
  {
    std::vector<std::uint32_t> fill(offsets.begin(), offsets.end() - 1);
    for (const auto& e : edges_) deps[fill[static_cast<std::size_t>(e.first)]++] = e.second;
  }
  edges_.clear();
  edges_.shrink_to_fit();
  // Raw arrays below: these loops run over every task and edge of every lowering.
  g.dep_offsets_.assign(n + 1, 0);
  std::uint32_t* dep_offsets = g.dep_offsets_.data();
  TaskId* d = deps.data();
  std::uint32_t out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t b = offsets[i];
    std::uint32_t e = offsets[i + 1];
    // Lists come mostly in increasing order already: sort only those that are not.
    bool ordered = true;
    for (std::uint32_t k = b + 1; k < e && ordered; ++k) ordered = d[k - 1] < d[k];
    if (!ordered) {
      if (e - b <= 16) {  // most lists are a few long: an insertion sort, no library calls
        for (std::uint32_t k = b + 1; k < e; ++k) {
          const TaskId x = d[k];
          std::uint32_t at = k;
          for (; at > b && d[at - 1] > x; --at) d[at] = d[at - 1];
          d[at] = x;
        }
      } else {
        std::sort(d + b, d + e);
      }
      e = static_cast<std::uint32_t>(std::unique(d + b, d + e) - d);
    }
    if (out == b) out = e;  // in place (no duplicate dropped so far)
    else
      for (std::uint32_t k = b; k < e; ++k) d[out++] = d[k];
    dep_offsets[i + 1] = out;
  }
  deps.resize(out);
  deps.shrink_to_fit();
  g.deps_ = std::move(deps);

  // Successors: counting sort by dependency; iterating tasks in id order keeps each list sorted.
  g.succ_offsets_.assign(n + 1, 0);
  g.succs_.resize(g.deps_.size());
  std::uint32_t* succ_offsets = g.succ_offsets_.data();
  const TaskId* dd = g.deps_.data();
  TaskId* succs = g.succs_.data();
  for (std::uint32_t k = 0; k < out; ++k) ++succ_offsets[static_cast<std::size_t>(dd[k]) + 1];
  for (std::size_t i = 0; i < n; ++i) succ_offsets[i + 1] += succ_offsets[i];
  {
    std::vector<std::uint32_t> fill(g.succ_offsets_.begin(), g.succ_offsets_.end() - 1);
    for (std::size_t t = 0; t < n; ++t)
      for (std::uint32_t k = dep_offsets[t]; k < dep_offsets[t + 1]; ++k)
        succs[fill[static_cast<std::size_t>(dd[k])]++] = static_cast<TaskId>(t);
  }

  if (!backward) check_acyclic(g, dep_offsets, succ_offsets, succs);
  g.strings_.drop_index();
  return std::move(g_);
}

}  // namespace parasim::simulator
