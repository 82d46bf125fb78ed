// The TaskGraph: the contract between strategies (which produce it), the simulator and the
// executor (which both consume it). One training step as tasks on device streams.
//
//   Compute     runs `duration` ns on (device, stream); stands for model op `model_op` of microbatch `mb`
//               in `phase` (forward, backward_data, ...).
//   Transfer    moves `bytes` from `src` to `dst` over the cluster's route; it runs on the
//               source device's stream `stream` (the comm stream by default), like a
//               cudaMemcpyPeerAsync issued on the sender.
//   Collective  allreduce / reduce_scatter / all_gather / broadcast / all_to_all of `bytes`
//               over a device group; occupies stream `stream` of every member.
//   Marker      zero time, no stream; a join point (e.g. "step end").
//
// Any task may depend on any other. Memory: a task allocates `alloc_bytes` on its device when
// it starts and frees `free_bytes` when it ends, so an activation allocated by a forward task
// and freed by its backward task lives in between. Per-device static bytes (weights, gradients,
// optimizer state) are a labelled StaticMemory.
//
// Storage is struct-of-arrays (ids are indices) with CSR dependency and successor lists and
// interned names: 56 bytes per task + 8 bytes per dependency edge (see bytes_per_task()).
// Byte counts for collectives, per rank: allreduce/broadcast = the buffer; reduce_scatter =
// the input (n x the output); all_gather = the output (n x the input); all_to_all = the send
// buffer (bytes/n to each rank).
//
// Example:
//   using namespace parasim::simulator;
//   TaskGraphBuilder b(/*num_devices=*/2);
//   TaskId f0 = b.add_compute({.device = 0, .duration = 1'000, .name = "fc1.fwd", .phase = Phase::Forward});
//   TaskId f1 = b.add_compute({.device = 1, .duration = 1'000, .name = "fc2.fwd", .phase = Phase::Forward});
//   TaskId x  = b.add_transfer({.src = 0, .dst = 1, .bytes = 4 * parasim::MiB, .name = "fc1.out"});
//   GroupId g = b.add_group(std::vector<DeviceId>{0, 1});
//   TaskId ar = b.add_collective({.op = CollectiveOp::AllReduce, .group = g, .bytes = 64 * parasim::MiB});
//   b.add_dependency(x, f0);     // x starts after f0 ends
//   b.add_dependency(f1, x);
//   b.add_dependency(ar, f1);
//   b.set_memory(f0, /*alloc=*/8 * parasim::MiB, /*free=*/0);
//   TaskGraph g = std::move(b).build();   // InputError on a cycle or a missing task
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "parasim/common/assert.hpp"
#include "parasim/common/collective_op.hpp"
#include "parasim/common/phase.hpp"
#include "parasim/common/units.hpp"

namespace parasim::simulator {

using TaskId = std::int32_t;
using DeviceId = std::int32_t;
using GroupId = std::int32_t;

inline constexpr TaskId kNoTask = -1;
inline constexpr int kComputeStream = 0;
inline constexpr int kCommStream = 1;
inline constexpr int kMaxStreamsPerDevice = 64;
inline constexpr std::int64_t kMaxTasks = std::int64_t{1} << 30;
inline constexpr std::int64_t kMaxDependencies = std::int64_t{4'000'000'000};

enum class TaskKind : std::uint8_t { Compute, Transfer, Collective, Marker };
// Phase and CollectiveOp live in common/ (the profiler and kernels share them); simulator:: keeps
// their names.
using parasim::CollectiveOp;
using parasim::parse_collective_op;
using parasim::parse_phase;
using parasim::Phase;
using parasim::to_string;
enum class CollectiveAlgorithm : std::uint8_t { Auto, Ring, Tree, Hierarchical, Nvls, HierarchicalTree, Pat };
enum class MemoryCategory : std::uint8_t { Activations, Other };

std::string_view to_string(TaskKind k);              // "compute", "transfer", "collective", "marker"
// "auto", "ring", "tree", "hierarchical", "nvls", "hierarchical_tree", "pat"
std::string_view to_string(CollectiveAlgorithm a);
std::string_view to_string(MemoryCategory c);        // "activations", "other"
// Inverses of to_string; nullopt for anything else.
std::optional<TaskKind> parse_task_kind(std::string_view s);
std::optional<CollectiveAlgorithm> parse_collective_algorithm(std::string_view s);
std::optional<MemoryCategory> parse_memory_category(std::string_view s);

/// Bytes resident on a device for the whole step, by label.
struct StaticMemory {
  Bytes params = 0;
  Bytes grads = 0;
  Bytes optimizer = 0;
  Bytes other = 0;
  Bytes total() const { return params + grads + optimizer + other; }
  bool operator==(const StaticMemory&) const = default;
};

struct ComputeTask {
  DeviceId device = 0;
  int stream = kComputeStream;
  TimeNs duration = 0;
  std::string_view name{};
  std::int32_t model_op = -1;    // op index in the model graph, -1 none
  std::int32_t microbatch = -1;  // -1: not tied to a microbatch
  Phase phase = Phase::Other;
};

struct TransferTask {
  DeviceId src = 0;
  DeviceId dst = 0;
  Bytes bytes = 0;
  int stream = kCommStream;      // a stream of `src`
  std::string_view name{};
  std::int32_t model_op = -1;  // op index in the model graph (e.g. the activation's producer), -1 none
  std::int32_t microbatch = -1;
  Phase phase = Phase::Other;
};

struct CollectiveTask {
  CollectiveOp op = CollectiveOp::AllReduce;
  GroupId group = 0;
  Bytes bytes = 0;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto;
  int stream = kCommStream;      // the stream used on every member
  std::string_view name{};
  std::int32_t model_op = -1;    // op index the collective belongs to (e.g. its gradient), -1 none
  std::int32_t microbatch = -1;
  Phase phase = Phase::Other;
};

/// Interned strings: one copy per distinct name, ids are dense.
class StringTable {
 public:
  StringTable();
  std::uint32_t intern(std::string_view s);
  std::string_view get(std::uint32_t id) const {
    return std::string_view(chars_.data() + offsets_[id], offsets_[id + 1] - offsets_[id]);
  }
  std::size_t size() const { return offsets_.size() - 1; }
  std::size_t memory_bytes() const;
  void drop_index();  // frees the lookup table once no more strings will be interned

 private:
  void grow();
  std::uint32_t intern_hashed(std::string_view s);
  std::vector<char> chars_;
  std::vector<std::uint32_t> offsets_;  // size() + 1 entries
  std::vector<std::uint32_t> slots_;    // open addressing: id + 1, 0 = empty
  // Recently interned strings by their caller's address: lowerings name every task from a
  // handful of long-lived strings, and a pointer match plus one compare beats hashing. 256
  // entries: a 105-stage pipeline names its chunks from 105 strings (16 entries missed 70% of
  // the lookups when planning Turing-NLG 530B, 256 miss 7%).
  struct Recent {
    const char* data = nullptr;
    std::uint32_t size = 0;
    std::uint32_t id = 0;
  };
  std::array<Recent, 256> recent_{};
};

class TaskGraph {
 public:
  TaskGraph() = default;

  std::size_t size() const { return meta_.size(); }
  int num_devices() const { return num_devices_; }
  int streams_per_device() const { return streams_per_device_; }
  std::size_t num_dependencies() const { return deps_.size(); }

  TaskKind kind(TaskId t) const { return static_cast<TaskKind>(meta_[checked(t)] & 0x3u); }
  Phase phase(TaskId t) const { return static_cast<Phase>((meta_[checked(t)] >> 2) & 0x7u); }
  int stream(TaskId t) const { return static_cast<int>((meta_[checked(t)] >> 5) & 0xFFu); }
  CollectiveOp collective_op(TaskId t) const { return static_cast<CollectiveOp>((meta_[checked(t)] >> 13) & 0x7u); }
  CollectiveAlgorithm algorithm(TaskId t) const {
    return static_cast<CollectiveAlgorithm>((meta_[checked(t)] >> 16) & 0x7u);
  }
  MemoryCategory memory_category(TaskId t) const {
    return static_cast<MemoryCategory>((meta_[checked(t)] >> 19) & 0x1u);
  }

  /// Compute: its device. Transfer: the source (whose stream runs it). Marker: a device for
  /// display, or -1. Collective: -1 (see group()).
  DeviceId device(TaskId t) const { return device_[checked(t)]; }
  DeviceId src(TaskId t) const { return device_[checked(t)]; }
  DeviceId dst(TaskId t) const { return peer_[checked(t)]; }       // transfers
  GroupId group(TaskId t) const { return peer_[checked(t)]; }      // collectives
  TimeNs duration(TaskId t) const { return amount_[checked(t)]; }  // compute
  Bytes bytes(TaskId t) const { return amount_[checked(t)]; }      // transfer, collective
  std::int32_t model_op(TaskId t) const { return model_op_[checked(t)]; }
  std::int32_t microbatch(TaskId t) const { return microbatch_[checked(t)]; }
  std::string_view name(TaskId t) const { return strings_.get(name_[checked(t)]); }
  Bytes alloc_bytes(TaskId t) const { return alloc_[checked(t)]; }
  Bytes free_bytes(TaskId t) const { return free_[checked(t)]; }

  std::span<const TaskId> deps(TaskId t) const {
    return {deps_.data() + dep_offsets_[checked(t)], deps_.data() + dep_offsets_[checked(t) + 1]};
  }
  /// Every task's number of dependencies, into out[0, size()): the engine's starting counts, in
  /// one vectorized pass.
  void dependency_counts(std::int32_t* out) const;
  std::span<const TaskId> successors(TaskId t) const {
    return {succs_.data() + succ_offsets_[checked(t)], succs_.data() + succ_offsets_[checked(t) + 1]};
  }

  int num_groups() const { return static_cast<int>(group_offsets_.size()) - 1; }
  std::span<const DeviceId> group_devices(GroupId g) const {
    PARASIM_ASSERT(g >= 0 && g < num_groups());
    const auto i = static_cast<std::size_t>(g);
    return {group_devices_.data() + group_offsets_[i], group_devices_.data() + group_offsets_[i + 1]};
  }
  const StaticMemory& static_memory(DeviceId d) const {
    PARASIM_ASSERT(d >= 0 && static_cast<std::size_t>(d) < static_memory_.size());
    return static_memory_[static_cast<std::size_t>(d)];
  }
  const StringTable& strings() const { return strings_; }

  /// Bytes of per-task columns (56) and per dependency edge (8: the dependency and successor
  /// lists). memory_bytes() is what this graph really holds, including names and groups.
  static constexpr std::size_t bytes_per_task() {
    return sizeof(std::uint32_t) * 6 + sizeof(std::int64_t) * 3 + sizeof(std::uint32_t) * 2;
  }
  static constexpr std::size_t bytes_per_dependency() { return 2 * sizeof(TaskId); }
  std::size_t memory_bytes() const;
  /// Cache hint for the engine: a task's columns read only when it ends (free bytes, successor
  /// list), fetched when it starts, so that its end does not wait for memory on a large graph.
  void prefetch_end(TaskId t) const {
    __builtin_prefetch(free_.data() + ix(t));
    __builtin_prefetch(succs_.data() + succ_offsets_[ix(t)]);
  }
  /// Cache hint for the engine: the columns a task's start and end read, for the 8 tasks from t
  /// (one cache line of the 8-byte columns); t < size(). The peer column (a transfer's
  /// destination, a collective's group) is read only by the few other tasks, but each such read
  /// would otherwise wait for memory.
  void prefetch_tasks(TaskId t) const {
    const std::size_t i = ix(t);
    __builtin_prefetch(meta_.data() + i);
    __builtin_prefetch(device_.data() + i);
    __builtin_prefetch(peer_.data() + i);
    __builtin_prefetch(amount_.data() + i);
    __builtin_prefetch(alloc_.data() + i);
    __builtin_prefetch(free_.data() + i);
    __builtin_prefetch(succ_offsets_.data() + i);
  }

 private:
  friend class TaskGraphBuilder;
  static std::size_t ix(TaskId t) { return static_cast<std::size_t>(t); }
  /// ix() for the public accessors: a task id out of range is a bug upstream (debug builds abort).
  std::size_t checked(TaskId t) const {
    PARASIM_ASSERT(t >= 0 && static_cast<std::size_t>(t) < meta_.size());
    return ix(t);
  }

  int num_devices_ = 0;
  int streams_per_device_ = 0;
  // meta bits: kind 0-1, phase 2-4, stream 5-12, collective op 13-15, algorithm 16-17, mem cat 18
  std::vector<std::uint32_t> meta_;
  std::vector<DeviceId> device_;
  std::vector<std::int32_t> peer_;
  std::vector<std::int32_t> model_op_;
  std::vector<std::int32_t> microbatch_;
  std::vector<std::uint32_t> name_;
  std::vector<std::int64_t> amount_;
  std::vector<Bytes> alloc_;
  std::vector<Bytes> free_;
  std::vector<std::uint32_t> dep_offsets_;
  std::vector<TaskId> deps_;
  std::vector<std::uint32_t> succ_offsets_;
  std::vector<TaskId> succs_;
  std::vector<std::uint32_t> group_offsets_{0};
  std::vector<DeviceId> group_devices_;
  std::vector<StaticMemory> static_memory_;
  StringTable strings_;
};

/// Collects tasks and edges, then compacts them into a TaskGraph. Adding a task checks its
/// own fields (device/stream ranges, negative durations or bytes) and throws InputError
/// naming the task; build() checks the edges (missing tasks, cycles).
class TaskGraphBuilder {
 public:
  explicit TaskGraphBuilder(int num_devices, int streams_per_device = 2);

  void reserve(std::size_t tasks, std::size_t dependencies);
  GroupId add_group(std::span<const DeviceId> devices);
  TaskId add_compute(const ComputeTask& t);
  TaskId add_transfer(const TransferTask& t);
  TaskId add_collective(const CollectiveTask& t);
  TaskId add_marker(std::string_view name, DeviceId display_device = -1);
  /// `task` starts only after `depends_on` has ended. Ids may refer to tasks added later;
  /// build() rejects ids that never appear. Duplicate edges are merged. Inline: lowerings add
  /// millions of edges per plan.
  void add_dependency(TaskId task, TaskId depends_on) {
    if (static_cast<std::int64_t>(edges_.size()) >= kMaxDependencies) [[unlikely]]
      too_many_dependencies();
    edges_.emplace_back(task, depends_on);
  }
  void set_memory(TaskId t, Bytes alloc_at_start, Bytes free_at_end,
                  MemoryCategory category = MemoryCategory::Activations);
  void set_static_memory(DeviceId d, const StaticMemory& m);

  std::size_t size() const { return g_.meta_.size(); }
  /// Where a micro-batch starts: the tasks of `microbatch` that depend on no task of the same
  /// micro-batch, in id order; with -1, the tasks that depend on nothing at all (where the step
  /// starts). O(tasks + dependencies added so far).
  std::vector<TaskId> entry_tasks(std::int32_t microbatch) const;
  /// The device a task added so far runs on (-1 for collectives; see TaskGraph::device()).
  DeviceId device_of(TaskId t) const { return g_.device_[static_cast<std::size_t>(t)]; }
  TaskGraph build() &&;

 private:
  TaskId push(TaskKind kind, Phase phase, int stream, DeviceId device, std::int32_t peer, std::int32_t op,
              std::int32_t microbatch, std::string_view name, std::int64_t amount, std::uint32_t extra_meta);
  [[noreturn]] static void too_many_dependencies();
  std::string describe(std::string_view name) const;  // "task 12 \"conv1\""
  void check_device(DeviceId d, std::string_view what, std::string_view name) const;
  void check_stream(int s, std::string_view name) const;

  TaskGraph g_;
  std::vector<std::pair<TaskId, TaskId>> edges_;  // (task, depends_on)
};

}  // namespace parasim::simulator
