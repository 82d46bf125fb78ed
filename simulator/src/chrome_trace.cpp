#include "parasim/simulator/chrome_trace.hpp"

#include <cstdio>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"

namespace parasim::simulator {

namespace {

// Microseconds with exactly three decimals, from integer nanoseconds (no rounding error).
void append_us(std::string& out, TimeNs ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000), static_cast<long long>(ns % 1000));
  out += buf;
}

void append_escaped(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void append_metadata(std::string& out, const char* what, int pid, int tid, std::string_view name, bool thread) {
  out += "{\"name\":\"";
  out += what;
  out += "\",\"ph\":\"M\",\"pid\":" + std::to_string(pid);
  if (thread) out += ",\"tid\":" + std::to_string(tid);
  out += ",\"args\":{\"name\":";
  append_escaped(out, name);
  out += "}},\n";
}

void append_sort_index(std::string& out, int pid, int index) {
  out += "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
         ",\"args\":{\"sort_index\":" + std::to_string(index) + "}},\n";
}

struct XEvent {
  std::string_view cat;
  std::string_view name;
  int pid;
  int tid;
  TimeNs start;
  TimeNs end;
};

void append_x(std::string& out, const XEvent& e, const std::string& args) {
  out += "{\"ph\":\"X\",\"cat\":\"";
  out += e.cat;
  out += "\",\"name\":";
  append_escaped(out, e.name);
  out += ",\"pid\":" + std::to_string(e.pid) + ",\"tid\":" + std::to_string(e.tid) + ",\"ts\":";
  append_us(out, e.start);
  out += ",\"dur\":";
  append_us(out, e.end - e.start);
  out += ",\"args\":{" + args + "}},\n";
}

std::string task_args(const TaskGraph& g, TaskId t) {
  std::string a = "\"task\":" + std::to_string(t);
  if (!g.name(t).empty()) {
    a += ",\"name\":";
    append_escaped(a, g.name(t));
  }
  if (g.model_op(t) >= 0) a += ",\"op\":" + std::to_string(g.model_op(t));
  if (g.microbatch(t) >= 0) a += ",\"microbatch\":" + std::to_string(g.microbatch(t));
  if (g.kind(t) != TaskKind::Marker) a += ",\"phase\":\"" + std::string(to_string(g.phase(t))) + "\"";
  return a;
}

}  // namespace

std::string nccl_kernel_name(CollectiveOp op, CollectiveAlgorithm algo, Bytes bytes) {
  std::string base;
  switch (op) {
    case CollectiveOp::AllReduce: base = "ncclDevKernel_AllReduce_Sum_f32"; break;
    case CollectiveOp::ReduceScatter: base = "ncclDevKernel_ReduceScatter_Sum_f32"; break;
    case CollectiveOp::AllGather: base = "ncclDevKernel_AllGather"; break;
    case CollectiveOp::Broadcast: base = "ncclDevKernel_Broadcast"; break;
    case CollectiveOp::AllToAll: return "ncclDevKernel_SendRecv";
  }
  const char* a = algo == CollectiveAlgorithm::Tree               ? "_TREE"
                  : algo == CollectiveAlgorithm::Hierarchical     ? "_HIERARCHICAL"
                  : algo == CollectiveAlgorithm::Nvls             ? "_NVLS"
                  : algo == CollectiveAlgorithm::HierarchicalTree ? "_HIERARCHICAL_TREE"
                  : algo == CollectiveAlgorithm::Pat              ? "_PAT"
                                                                  : "_RING";
  // NCCL's protocol choice by size: LL for small messages, LL128 for medium, Simple for large;
  // NVLS and PAT have Simple only.
  const bool simple_only = algo == CollectiveAlgorithm::Nvls || algo == CollectiveAlgorithm::Pat;
  const char* proto = simple_only ? "_SIMPLE" : bytes <= 64 * KiB ? "_LL" : bytes <= 4 * MiB ? "_LL128" : "_SIMPLE";
  return base + a + proto;
}

std::string chrome_trace_json(const TaskGraph& g, const hardware::Cluster& cluster, const StepResult& r) {
  if (r.timeline.size() != g.size())
    throw RuntimeError("chrome trace: the step result has no timeline; run the engine with record_timeline = true");
  const int devices = g.num_devices();
  const int streams = g.streams_per_device();
  const int marker_tid = streams;  // a track after the streams
  const int host_pid = devices;
  const int links_pid = devices + 1;
  std::string out;
  out.reserve(256 + g.size() * 200);
  out += "{\"traceEvents\":[\n";
  for (int d = 0; d < devices; ++d) {
    append_metadata(out, "process_name", d, 0, "GPU " + std::to_string(d) + " (" + cluster.device(d).kind + ")", false);
    append_sort_index(out, d, d);
    for (int s = 0; s < streams; ++s) {
      const std::string label = s == kComputeStream ? "compute stream " : s == kCommStream ? "comm stream " : "stream ";
      append_metadata(out, "thread_name", d, s, label + std::to_string(s), true);
    }
  }
  bool host_markers = false, device_markers = false;
  for (TaskId t = 0; t < static_cast<TaskId>(g.size()); ++t)
    if (g.kind(t) == TaskKind::Marker) (g.device(t) < 0 ? host_markers : device_markers) = true;
  if (host_markers) {
    append_metadata(out, "process_name", host_pid, 0, "Host", false);
    append_sort_index(out, host_pid, host_pid);
  }
  if (host_markers || device_markers)
    for (int d = 0; d <= devices; ++d)
      if (d < devices ? device_markers : host_markers)
        append_metadata(out, "thread_name", d, marker_tid, "markers", true);

  for (TaskId t = 0; t < static_cast<TaskId>(g.size()); ++t) {
    const TaskTiming& tt = r.timeline[static_cast<std::size_t>(t)];
    std::string args = task_args(g, t);
    switch (g.kind(t)) {
      case TaskKind::Compute:
        append_x(out, {"kernel", g.name(t).empty() ? std::string_view("compute") : g.name(t), g.device(t), g.stream(t),
                       tt.start, tt.end},
                 args);
        break;
      case TaskKind::Transfer:
        args += ",\"bytes\":" + std::to_string(g.bytes(t)) + ",\"src\":" + std::to_string(g.src(t)) +
                ",\"dst\":" + std::to_string(g.dst(t));
        append_x(out, {"gpu_memcpy", "Memcpy PtoP (Device -> Device)", g.src(t), g.stream(t), tt.start, tt.end}, args);
        break;
      case TaskKind::Collective: {
        const auto members = g.group_devices(g.group(t));
        args += ",\"bytes\":" + std::to_string(g.bytes(t)) + ",\"collective\":\"" +
                std::string(to_string(g.collective_op(t))) + "\",\"algorithm\":\"" +
                std::string(to_string(g.algorithm(t))) + "\",\"ranks\":" + std::to_string(members.size());
        const CollectiveAlgorithm used =
            r.algorithms.size() == g.size() ? r.algorithms[static_cast<std::size_t>(t)] : g.algorithm(t);
        args += ",\"algorithm_used\":\"" + std::string(to_string(used)) + "\"";
        const std::string kernel = nccl_kernel_name(g.collective_op(t), used, g.bytes(t));
        for (DeviceId d : members) append_x(out, {"nccl", kernel, d, g.stream(t), tt.start, tt.end}, args);
        break;
      }
      case TaskKind::Marker:
        append_x(out, {"marker", g.name(t).empty() ? std::string_view("marker") : g.name(t),
                       g.device(t) < 0 ? host_pid : g.device(t), marker_tid, tt.start, tt.end},
                 args);
        break;
    }
  }

  if (!r.link_timeline.empty()) {
    append_metadata(out, "process_name", links_pid, 0, "Links", false);
    append_sort_index(out, links_pid, links_pid);
    hardware::DirLinkId named = -1;
    for (const LinkInterval& li : r.link_timeline) {
      const std::string name = cluster.directed_link_name(li.link);
      if (li.link != named) {
        append_metadata(out, "thread_name", links_pid, li.link, name, true);
        named = li.link;
      }
      std::string args = "\"link\":";
      append_escaped(args, name);
      append_x(out, {"link", "busy", links_pid, li.link, li.start, li.end}, args);
    }
  }
  if (out.ends_with(",\n")) out.resize(out.size() - 2);
  out += "\n],\"displayTimeUnit\":\"ms\"}\n";
  return out;
}

void write_chrome_trace(const std::filesystem::path& path, const TaskGraph& graph, const hardware::Cluster& cluster,
                        const StepResult& r) {
  write_file_atomic(path, chrome_trace_json(graph, cluster, r));
}

}  // namespace parasim::simulator
