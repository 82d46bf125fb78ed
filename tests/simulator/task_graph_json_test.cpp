#include "parasim/simulator/task_graph_json.hpp"

#include <filesystem>

#include <gtest/gtest.h>

#include "parasim/common/json_io.hpp"
#include "test_clusters.hpp"

namespace parasim::simulator {
namespace {

using testing::input_error;

nlohmann::json small_graph() {
  return nlohmann::json::parse(R"({
    "schema": "parasim.taskgraph/1",
    "devices": 2,
    "groups": [[0, 1]],
    "static_memory": [{"device": 1, "params": 10, "grads": 10, "optimizer": 20}],
    "tasks": [
      {"kind": "compute", "name": "a", "device": 0, "duration_ns": 100, "phase": "forward", "op": 0, "microbatch": 0,
       "alloc_bytes": 64},
      {"kind": "transfer", "name": "x", "src": 0, "dst": 1, "bytes": 1000, "deps": [0]},
      {"kind": "compute", "name": "b", "device": 1, "stream": 0, "duration_ns": 50, "deps": [1], "free_bytes": 0},
      {"kind": "collective", "name": "ar", "collective": "allreduce", "group": 0, "bytes": 4096, "algorithm": "ring",
       "deps": [2, 0]},
      {"kind": "marker", "name": "end", "deps": [3]}
    ]
  })");
}

std::string load_error(const nlohmann::json& j) {
  return input_error([&] { taskgraph_from_json(j, "t.json"); });
}

TEST(TaskGraphJson, LoadsAndRoundTrips) {
  TaskGraph g = taskgraph_from_json(small_graph(), "t.json");
  ASSERT_EQ(g.size(), 5u);
  EXPECT_EQ(g.kind(1), TaskKind::Transfer);
  EXPECT_EQ(g.stream(1), kCommStream);  // default stream of transfers
  EXPECT_EQ(g.stream(0), kComputeStream);
  EXPECT_EQ(g.alloc_bytes(0), 64);
  EXPECT_EQ(g.static_memory(1).optimizer, 20);
  EXPECT_EQ(g.deps(3).size(), 2u);
  const std::string once = dump_json(taskgraph_to_json(g));
  TaskGraph back = taskgraph_from_json(nlohmann::json::parse(once), "rt.json");
  EXPECT_EQ(dump_json(taskgraph_to_json(back)), once);

  const auto path = std::filesystem::temp_directory_path() / "parasim_tg_json_test.json";
  save_taskgraph_file(g, path);
  EXPECT_EQ(load_taskgraph_file(path).size(), 5u);
  std::filesystem::remove(path);
}

// Every collective algorithm's name reads back as itself; a misspelt one lists them all.
TEST(TaskGraphJson, CollectiveAlgorithmsByName) {
  for (const char* name : {"auto", "ring", "tree", "hierarchical", "nvls", "hierarchical_tree", "pat"}) {
    auto j = small_graph();
    j["tasks"][3]["algorithm"] = name;
    const TaskGraph g = taskgraph_from_json(j, "t.json");
    EXPECT_EQ(to_string(g.algorithm(3)), name);
  }
  auto j = small_graph();
  j["tasks"][3]["algorithm"] = "pats";
  EXPECT_EQ(load_error(j),
            "t.json: $.tasks[3].algorithm: expected one of \"auto\", \"ring\", \"tree\", \"hierarchical\", \"nvls\", "
            "\"hierarchical_tree\", \"pat\", found string \"pats\"");
}

TEST(TaskGraphJson, CycleNamesTheTasksOnIt) {
  auto j = small_graph();
  j["tasks"][0]["deps"] = {2};
  EXPECT_EQ(load_error(j),
            "t.json: $.tasks: dependency cycle: task 0 \"a\" -> task 1 \"x\" -> task 2 \"b\" -> task 0 \"a\"");
}

TEST(TaskGraphJson, DependencyOnAMissingTask) {
  auto j = small_graph();
  j["tasks"][2]["deps"] = {1, 7};
  EXPECT_EQ(load_error(j), "t.json: $.tasks[2].deps[1]: expected a task index in [0, 4], found number 7");
}

TEST(TaskGraphJson, RangesAndSigns) {
  auto j = small_graph();
  j["tasks"][0]["device"] = 2;
  EXPECT_EQ(load_error(j), "t.json: $.tasks[0].device: expected a device index in [0, 1], found number 2");
  j = small_graph();
  j["tasks"][2]["stream"] = 2;
  EXPECT_EQ(load_error(j), "t.json: $.tasks[2].stream: expected a stream index in [0, 1], found number 2");
  j = small_graph();
  j["tasks"][0]["duration_ns"] = -5;
  EXPECT_EQ(load_error(j), "t.json: $.tasks[0].duration_ns: expected an integer >= 0, found number -5");
  j = small_graph();
  j["tasks"][0]["duration_ns"] = 1.5;
  EXPECT_EQ(load_error(j), "t.json: $.tasks[0].duration_ns: expected an integer, found number 1.5");
  j = small_graph();
  j["tasks"][1]["bytes"] = -1;
  EXPECT_EQ(load_error(j), "t.json: $.tasks[1].bytes: expected an integer >= 0, found number -1");
  j = small_graph();
  j["tasks"][3]["group"] = 1;
  EXPECT_EQ(load_error(j), "t.json: $.tasks[3].group: expected a group index in [0, 0], found number 1");
}

TEST(TaskGraphJson, GroupNamingAnUnknownDevice) {
  auto j = small_graph();
  j["groups"][0] = {0, 5};
  EXPECT_EQ(load_error(j), "t.json: $.groups[0][1]: expected a device index in [0, 1], found number 5");
  j["groups"][0] = {1, 1};
  EXPECT_EQ(load_error(j), "t.json: $.groups[0][1]: device 1 is listed twice in the group");
}

TEST(TaskGraphJson, EnumsAndUnknownFields) {
  auto j = small_graph();
  j["tasks"][0]["phase"] = "sideways";
  EXPECT_EQ(load_error(j),
            "t.json: $.tasks[0].phase: expected one of \"forward\", \"backward_data\", \"backward_weight\", "
            "\"update\", \"recompute\", \"other\", found string \"sideways\"");
  j = small_graph();
  j["tasks"][0]["durations_ns"] = 5;
  EXPECT_EQ(load_error(j), "t.json: $.tasks[0]: unknown field \"durations_ns\" for a compute task");
  j = small_graph();
  j["tasks"][3]["collective"] = "allgather";
  EXPECT_EQ(load_error(j), "t.json: $.tasks[3].collective: expected one of \"allreduce\", \"reduce_scatter\", "
                           "\"all_gather\", \"broadcast\", \"all_to_all\", found string \"allgather\"");
}

TEST(TaskGraphJson, NanCannotSneakIn) {
  // JSON has no NaN literal, and a non-finite double that reaches a number field is rejected.
  EXPECT_NE(input_error([] { parse_json_text(R"({"schema":"parasim.taskgraph/1","devices":NaN})", "t.json"); })
                .find("malformed JSON"),
            std::string::npos);
  auto j = small_graph();
  j["tasks"][0]["duration_ns"] = std::nan("");
  EXPECT_EQ(load_error(j), "t.json: $.tasks[0].duration_ns: expected an integer, found number null");
}

}  // namespace
}  // namespace parasim::simulator
