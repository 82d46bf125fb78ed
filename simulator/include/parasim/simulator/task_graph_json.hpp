// The `parasim.taskgraph/1` file format.
//
//   {
//     "schema": "parasim.taskgraph/1",
//     "devices": 2, "streams_per_device": 2,                      (streams default 2)
//     "groups": [[0, 1]],                                          (device lists for collectives)
//     "static_memory": [{"device": 0, "params": 1, "grads": 1, "optimizer": 2, "other": 0}],
//     "tasks": [                                                   (a task's id is its index)
//       {"kind": "compute", "name": "fc1.fwd", "device": 0, "stream": 0, "duration_ns": 1000,
//        "op": 3, "microbatch": 0, "phase": "forward", "alloc_bytes": 4096, "free_bytes": 0,
//        "memory_category": "activations", "deps": []},
//       {"kind": "transfer", "src": 0, "dst": 1, "bytes": 4096, "stream": 1, "deps": [0]},
//       {"kind": "collective", "collective": "allreduce", "group": 0, "bytes": 1048576,
//        "algorithm": "ring", "stream": 1, "deps": [1]},
//       {"kind": "marker", "name": "step end", "deps": [2]}
//     ]
//   }
//
// Optional task fields: name, op (-1), microbatch (-1), phase ("other"), alloc_bytes/free_bytes
// (0), memory_category ("activations"), deps ([]), stream (0 compute, 1 otherwise), algorithm
// ("auto"), device on markers (-1). Unknown fields are errors (they are usually typos).
//
// Example:
//   TaskGraph g = load_taskgraph_file("step.json");   // InputError: "step.json: $.tasks[3].deps[0]: ..."
//   save_taskgraph_file(g, "copy.json");
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "parasim/simulator/task_graph.hpp"

namespace parasim::simulator {

inline constexpr const char* kTaskGraphSchema = "parasim.taskgraph/1";

TaskGraph taskgraph_from_json(const nlohmann::json& doc, const std::string& origin);
TaskGraph load_taskgraph_file(const std::filesystem::path& path);
nlohmann::json taskgraph_to_json(const TaskGraph& graph);
void save_taskgraph_file(const TaskGraph& graph, const std::filesystem::path& path);

}  // namespace parasim::simulator
