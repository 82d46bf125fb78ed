// Small task graphs shared by the executor tests.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "parasim/common/units.hpp"
#include "parasim/simulator/task_graph.hpp"

namespace parasim::executor::test {

using namespace parasim::simulator;

/// Two devices, a pipeline fwd -> transfer -> fwd/bwd -> transfer -> bwd, then an all-reduce
/// of both devices' gradients and an update on each device, joined by a marker.
inline TaskGraph pipeline_with_allreduce(TimeNs compute = 200'000, Bytes bytes = 1 * MiB) {
  TaskGraphBuilder b(2);
  const TaskId f0 = b.add_compute({.device = 0, .duration = compute, .name = "f0", .phase = Phase::Forward});
  const TaskId x01 = b.add_transfer({.src = 0, .dst = 1, .bytes = bytes, .name = "act"});
  const TaskId f1 = b.add_compute({.device = 1, .duration = compute, .name = "f1", .phase = Phase::Forward});
  const TaskId b1 = b.add_compute({.device = 1, .duration = compute, .name = "b1", .phase = Phase::BackwardData});
  const TaskId x10 = b.add_transfer({.src = 1, .dst = 0, .bytes = bytes, .name = "grad"});
  const TaskId b0 = b.add_compute({.device = 0, .duration = compute, .name = "b0", .phase = Phase::BackwardData});
  const GroupId g = b.add_group(std::vector<DeviceId>{0, 1});
  const TaskId ar = b.add_collective({.op = CollectiveOp::AllReduce, .group = g, .bytes = 4 * bytes, .name = "ar"});
  const TaskId u0 = b.add_compute({.device = 0, .duration = compute / 4, .name = "u0", .phase = Phase::Update});
  const TaskId u1 = b.add_compute({.device = 1, .duration = compute / 4, .name = "u1", .phase = Phase::Update});
  const TaskId end = b.add_marker("step end");
  b.add_dependency(x01, f0);
  b.add_dependency(f1, x01);
  b.add_dependency(b1, f1);
  b.add_dependency(x10, b1);
  b.add_dependency(b0, x10);
  b.add_dependency(ar, b0);
  b.add_dependency(ar, b1);
  b.add_dependency(u0, ar);
  b.add_dependency(u1, ar);
  b.add_dependency(end, u0);
  b.add_dependency(end, u1);
  return std::move(b).build();
}

/// A random DAG over `devices` devices with `streams` streams each: compute, transfers,
/// collectives over random groups and markers, edges only from lower to higher creation
/// index (ids are shuffled by creating dependents first sometimes).
inline TaskGraph random_graph(std::uint32_t seed, int devices = 4, int streams = 3, int tasks = 120) {
  std::mt19937 rng(seed);
  TaskGraphBuilder b(devices, streams);
  std::vector<GroupId> groups;
  for (int i = 0; i < 4; ++i) {
    std::vector<DeviceId> members;
    for (DeviceId d = 0; d < devices; ++d)
      if (rng() % 2 == 0 || members.empty()) members.push_back(d);
    if (members.size() < 2) members = {0, static_cast<DeviceId>(devices - 1)};
    groups.push_back(b.add_group(members));
  }
  std::vector<TaskId> ids;
  for (int i = 0; i < tasks; ++i) {
    const int kind = static_cast<int>(rng() % 10);
    const auto dev = static_cast<DeviceId>(rng() % static_cast<unsigned>(devices));
    const int stream = static_cast<int>(rng() % static_cast<unsigned>(streams));
    TaskId t;
    if (kind < 5) {
      t = b.add_compute(
          {.device = dev, .stream = stream, .duration = 1'000 + static_cast<TimeNs>(rng() % 50'000), .name = "c"});
    } else if (kind < 7) {
      auto dst = static_cast<DeviceId>(rng() % static_cast<unsigned>(devices));
      t = b.add_transfer(
          {.src = dev, .dst = dst, .bytes = 4'096 + static_cast<Bytes>(rng() % 65'536), .stream = stream, .name = "x"});
    } else if (kind < 9) {
      t = b.add_collective({.op = static_cast<CollectiveOp>(rng() % 5), .group = groups[rng() % groups.size()],
                            .bytes = 4'096 * (1 + static_cast<Bytes>(rng() % 16)), .stream = stream, .name = "coll"});
    } else {
      t = b.add_marker("m");
    }
    const int ndeps = static_cast<int>(rng() % 4);
    for (int k = 0; k < ndeps && !ids.empty(); ++k) b.add_dependency(t, ids[rng() % ids.size()]);
    ids.push_back(t);
  }
  return std::move(b).build();
}

}  // namespace parasim::executor::test
