#include "parasim/simulator/task_graph_json.hpp"

#include <algorithm>
#include <array>
#include <limits>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"

namespace parasim::simulator {

namespace {

constexpr std::int64_t kMaxDevices = 1'048'576;
constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

template <typename E>
E enum_field(const JsonField& f, std::optional<E> (*parse)(std::string_view), const std::string& choices) {
  std::optional<E> out;
  if (f.raw().is_string()) out = parse(f.raw().get<std::string>());
  if (!out) f.fail("one of " + choices);
  return *out;
}

std::int64_t index_field(const JsonField& f, std::int64_t count, const std::string& what) {
  const auto& v = f.raw();
  const bool integral = v.is_number_integer() || v.is_number_unsigned();
  if (!integral || (v.is_number_integer() && (v.get<std::int64_t>() < 0 || v.get<std::int64_t>() >= count)) ||
      (v.is_number_unsigned() && v.get<std::uint64_t>() >= static_cast<std::uint64_t>(count))) {
    if (count == 0) f.fail(what + " (there are none)");
    f.fail(what + " in [0, " + std::to_string(count - 1) + "]");
  }
  return v.get<std::int64_t>();
}

void reject_unknown_fields(const JsonField& task, std::initializer_list<std::string_view> allowed) {
  for (auto it = task.raw().begin(); it != task.raw().end(); ++it)
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end())
      throw InputError(task.file() + ": " + task.path() + ": unknown field \"" + it.key() + "\" for a " +
                       task.raw().at("kind").get<std::string>() + " task");
}

const std::string kKindChoices = "\"compute\", \"transfer\", \"collective\", \"marker\"";
const std::string kPhaseChoices =
    "\"forward\", \"backward_data\", \"backward_weight\", \"update\", \"recompute\", \"other\"";
const std::string kOpChoices = "\"allreduce\", \"reduce_scatter\", \"all_gather\", \"broadcast\", \"all_to_all\"";
const std::string kAlgoChoices =
    "\"auto\", \"ring\", \"tree\", \"hierarchical\", \"nvls\", \"hierarchical_tree\", \"pat\"";
const std::string kMemChoices = "\"activations\", \"other\"";

struct Common {
  std::string name;
  std::int32_t op = -1;
  std::int32_t microbatch = -1;
  Phase phase = Phase::Other;
};

Common common_fields(const JsonField& t, const char* op_key) {
  Common c;
  if (auto f = t.find("name")) c.name = f->as_string();
  if (auto f = t.find(op_key)) c.op = static_cast<std::int32_t>(f->as_int(-1, kInt32Max));
  if (auto f = t.find("microbatch")) c.microbatch = static_cast<std::int32_t>(f->as_int(-1, kInt32Max));
  if (auto f = t.find("phase")) c.phase = enum_field(*f, parse_phase, kPhaseChoices);
  return c;
}

}  // namespace

TaskGraph taskgraph_from_json(const nlohmann::json& doc, const std::string& origin) {
  JsonField root{doc, origin, "$"};
  root.expect_schema(kTaskGraphSchema);
  const auto devices = root.at("devices").as_int(1, kMaxDevices);
  std::int64_t streams = 2;
  if (auto f = root.find("streams_per_device")) streams = f->as_int(1, kMaxStreamsPerDevice);
  TaskGraphBuilder b(static_cast<int>(devices), static_cast<int>(streams));

  if (auto groups = root.find("groups")) {
    for (const auto& g : groups->items_of_array()) {
      std::vector<DeviceId> members;
      for (const auto& d : g.items_of_array()) {
        const auto id = static_cast<DeviceId>(index_field(d, devices, "a device index"));
        if (std::find(members.begin(), members.end(), id) != members.end())
          throw InputError(d.file() + ": " + d.path() + ": device " + std::to_string(id) +
                           " is listed twice in the group");
        members.push_back(id);
      }
      if (members.empty()) g.fail("a non-empty list of device indices");
      b.add_group(members);
    }
  }
  const auto num_groups = root.find("groups") ? static_cast<std::int64_t>(root.at("groups").array_size()) : 0;

  if (auto statics = root.find("static_memory")) {
    for (const auto& s : statics->items_of_array()) {
      StaticMemory m;
      const auto d = static_cast<DeviceId>(index_field(s.at("device"), devices, "a device index"));
      if (auto f = s.find("params")) m.params = f->as_int(0);
      if (auto f = s.find("grads")) m.grads = f->as_int(0);
      if (auto f = s.find("optimizer")) m.optimizer = f->as_int(0);
      if (auto f = s.find("other")) m.other = f->as_int(0);
      b.set_static_memory(d, m);
    }
  }

  const JsonField tasks = root.at("tasks");
  const auto n = static_cast<std::int64_t>(tasks.array_size());
  if (n > kMaxTasks)
    throw InputError(origin + ": $.tasks: expected at most " + std::to_string(kMaxTasks) + " tasks, found " +
                     std::to_string(n));
  b.reserve(static_cast<std::size_t>(n), static_cast<std::size_t>(n) * 2);
  for (const auto& t : tasks.items_of_array()) {
    if (!t.is_object()) t.fail("a task object");
    const auto kind = enum_field(t.at("kind"), parse_task_kind, kKindChoices);
    auto stream_of = [&](int fallback) {
      auto f = t.find("stream");
      return f ? static_cast<int>(index_field(*f, streams, "a stream index")) : fallback;
    };
    TaskId id = kNoTask;
    switch (kind) {
      case TaskKind::Compute: {
        reject_unknown_fields(t, {"kind", "name", "device", "stream", "duration_ns", "op", "microbatch", "phase",
                                  "alloc_bytes", "free_bytes", "memory_category", "deps"});
        const Common c = common_fields(t, "op");
        id = b.add_compute({.device = static_cast<DeviceId>(index_field(t.at("device"), devices, "a device index")),
                            .stream = stream_of(kComputeStream),
                            .duration = t.at("duration_ns").as_int(0),
                            .name = c.name,
                            .model_op = c.op,
                            .microbatch = c.microbatch,
                            .phase = c.phase});
        break;
      }
      case TaskKind::Transfer: {
        reject_unknown_fields(t, {"kind", "name", "src", "dst", "bytes", "stream", "op", "microbatch", "phase",
                                  "alloc_bytes", "free_bytes", "memory_category", "deps"});
        const Common c = common_fields(t, "op");
        id = b.add_transfer({.src = static_cast<DeviceId>(index_field(t.at("src"), devices, "a device index")),
                             .dst = static_cast<DeviceId>(index_field(t.at("dst"), devices, "a device index")),
                             .bytes = t.at("bytes").as_int(0),
                             .stream = stream_of(kCommStream),
                             .name = c.name,
                             .model_op = c.op,
                             .microbatch = c.microbatch,
                             .phase = c.phase});
        break;
      }
      case TaskKind::Collective: {
        reject_unknown_fields(t, {"kind", "name", "collective", "group", "bytes", "algorithm", "stream", "op",
                                  "microbatch", "phase", "deps"});
        const Common c = common_fields(t, "op");
        CollectiveAlgorithm algo = CollectiveAlgorithm::Auto;
        if (auto f = t.find("algorithm")) algo = enum_field(*f, parse_collective_algorithm, kAlgoChoices);
        id = b.add_collective({.op = enum_field(t.at("collective"), parse_collective_op, kOpChoices),
                               .group = static_cast<GroupId>(index_field(t.at("group"), num_groups, "a group index")),
                               .bytes = t.at("bytes").as_int(0),
                               .algorithm = algo,
                               .stream = stream_of(kCommStream),
                               .name = c.name,
                               .model_op = c.op,
                               .microbatch = c.microbatch,
                               .phase = c.phase});
        break;
      }
      case TaskKind::Marker: {
        reject_unknown_fields(t, {"kind", "name", "device", "deps"});
        std::string name;
        if (auto f = t.find("name")) name = f->as_string();
        DeviceId dev = -1;
        if (auto f = t.find("device"); f && !(f->raw().is_number_integer() && f->raw().get<std::int64_t>() == -1))
          dev = static_cast<DeviceId>(index_field(*f, devices, "-1 or a device index"));
        id = b.add_marker(name, dev);
        break;
      }
    }
    if (kind == TaskKind::Compute || kind == TaskKind::Transfer) {
      Bytes alloc = 0, freed = 0;
      MemoryCategory cat = MemoryCategory::Activations;
      if (auto f = t.find("alloc_bytes")) alloc = f->as_int(0);
      if (auto f = t.find("free_bytes")) freed = f->as_int(0);
      if (auto f = t.find("memory_category")) cat = enum_field(*f, parse_memory_category, kMemChoices);
      if (alloc != 0 || freed != 0 || cat != MemoryCategory::Activations) b.set_memory(id, alloc, freed, cat);
    }
    if (auto deps = t.find("deps"))
      for (const auto& d : deps->items_of_array())
        b.add_dependency(id, static_cast<TaskId>(index_field(d, n, "a task index")));
  }
  try {
    return std::move(b).build();
  } catch (const InputError& e) {
    throw InputError(origin + ": $.tasks: " + e.what());
  }
}

TaskGraph load_taskgraph_file(const std::filesystem::path& path) {
  return taskgraph_from_json(read_json_file(path), path.string());
}

nlohmann::json taskgraph_to_json(const TaskGraph& g) {
  nlohmann::json j;
  j["schema"] = kTaskGraphSchema;
  j["devices"] = g.num_devices();
  j["streams_per_device"] = g.streams_per_device();
  auto& groups = j["groups"] = nlohmann::json::array();
  for (GroupId gr = 0; gr < g.num_groups(); ++gr) {
    auto devs = g.group_devices(gr);
    groups.push_back(std::vector<DeviceId>(devs.begin(), devs.end()));
  }
  auto& statics = j["static_memory"] = nlohmann::json::array();
  for (DeviceId d = 0; d < g.num_devices(); ++d) {
    const auto& m = g.static_memory(d);
    if (m == StaticMemory{}) continue;
    statics.push_back(
        {{"device", d}, {"params", m.params}, {"grads", m.grads}, {"optimizer", m.optimizer}, {"other", m.other}});
  }
  auto& tasks = j["tasks"] = nlohmann::json::array();
  for (TaskId t = 0; t < static_cast<TaskId>(g.size()); ++t) {
    nlohmann::json o;
    const TaskKind kind = g.kind(t);
    o["kind"] = std::string(to_string(kind));
    o["name"] = std::string(g.name(t));
    switch (kind) {
      case TaskKind::Compute:
        o["device"] = g.device(t);
        o["stream"] = g.stream(t);
        o["duration_ns"] = g.duration(t);
        break;
      case TaskKind::Transfer:
        o["src"] = g.src(t);
        o["dst"] = g.dst(t);
        o["bytes"] = g.bytes(t);
        o["stream"] = g.stream(t);
        break;
      case TaskKind::Collective:
        o["collective"] = std::string(to_string(g.collective_op(t)));
        o["group"] = g.group(t);
        o["bytes"] = g.bytes(t);
        o["algorithm"] = std::string(to_string(g.algorithm(t)));
        o["stream"] = g.stream(t);
        break;
      case TaskKind::Marker:
        if (g.device(t) >= 0) o["device"] = g.device(t);
        break;
    }
    if (kind != TaskKind::Marker) {
      if (g.model_op(t) >= 0) o["op"] = g.model_op(t);
      if (g.microbatch(t) >= 0) o["microbatch"] = g.microbatch(t);
      o["phase"] = std::string(to_string(g.phase(t)));
    }
    if (kind == TaskKind::Compute || kind == TaskKind::Transfer) {
      if (g.alloc_bytes(t) != 0) o["alloc_bytes"] = g.alloc_bytes(t);
      if (g.free_bytes(t) != 0) o["free_bytes"] = g.free_bytes(t);
      if (g.memory_category(t) != MemoryCategory::Activations)
        o["memory_category"] = std::string(to_string(g.memory_category(t)));
    }
    auto deps = g.deps(t);
    o["deps"] = std::vector<TaskId>(deps.begin(), deps.end());
    tasks.push_back(std::move(o));
  }
  return j;
}

void save_taskgraph_file(const TaskGraph& graph, const std::filesystem::path& path) {
  write_file_atomic(path, dump_json(taskgraph_to_json(graph)));
}

}  // namespace parasim::simulator
