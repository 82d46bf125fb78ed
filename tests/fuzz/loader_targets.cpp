#include "loader_targets.hpp"

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>
#include <unistd.h>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/hardware/cluster_json.hpp"
#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/models/hf_config.hpp"
#include "parasim/models/model_json.hpp"
#include "parasim/models/onnx_import.hpp"
#include "parasim/models/zoo.hpp"
#include "parasim/profiler/kineto_import.hpp"
#include "parasim/profiler/profile.hpp"
#include "parasim/reports/results_json.hpp"
#include "parasim/common/calibration.hpp"
#include "parasim/validation/nccl_tests.hpp"
#include "parasim/validation/recorded_runs.hpp"
#include "parasim/simulator/simulator.hpp"
#include "parasim/simulator/task_graph_json.hpp"
#include "parasim/strategies/efficiency.hpp"
#include "parasim/strategies/placement_file.hpp"
#include "parasim/strategies/strategy.hpp"

namespace parasim::fuzz {

namespace {

constexpr const char* kOrigin = "fuzz-input";

/// Runs `reload` on what parasim itself wrote; an InputError there means parasim writes files it
/// cannot read back, which is a bug, not bad input.
template <class F>
void expect_reloads(const char* what, F&& reload) {
  try {
    reload();
  } catch (const InputError& e) {
    throw InvariantViolation(std::string(what) + ": parasim cannot read back what it wrote: " + e.what());
  }
}

void load_model(std::string_view bytes) {
  const nlohmann::json doc = parse_json_text(bytes, kOrigin);
  const models::Model m = models::model_from_json(doc, kOrigin);
  expect_reloads("model", [&] { (void)models::model_from_json(models::model_to_json(m), "round trip"); });
  // The CLI's --batch override re-infers every shape; it must fail cleanly too.
  (void)models::model_from_json(doc, kOrigin, models::LoadOptions{.batch = 3});
}

/// A Hugging Face config.json: the configuration, then (small ones) the model it builds, which
/// must survive a parasim.model/1 round trip.
void load_hf_config(std::string_view bytes) {
  const nlohmann::json doc = parse_json_text(bytes, kOrigin);
  const models::TransformerConfig c = models::transformer_from_hf_config(doc, kOrigin, "fuzz");
  if (c.layers > 8 || c.hidden > 4096 || c.vocab > 1 << 20) return;  // keep one input fast
  const models::Model m = models::build_transformer(c, models::ModelOptions{.batch = 1, .seq_len = 8});
  expect_reloads("hf_config", [&] { (void)models::model_from_json(models::model_to_json(m), "round trip"); });
}

#ifdef PARASIM_HAVE_ONNX
/// An ONNX graph (protobuf bytes): the model it becomes survives a parasim.model/1 round trip, and
/// a batch override re-infers every shape or fails cleanly.
void load_onnx(std::string_view bytes) {
  const models::Model m = models::onnx_model_from_bytes(bytes, kOrigin, "fuzz");
  expect_reloads("onnx", [&] { (void)models::model_from_json(models::model_to_json(m), "round trip"); });
  (void)models::onnx_model_from_bytes(bytes, kOrigin, "fuzz", models::LoadOptions{.batch = 3});
}
#endif

/// A loaded cluster must carry traffic: a point-to-point copy and every collective algorithm
/// over all devices, through the engine (routes, link latencies and bandwidths all get used).
void simulate_on(const hardware::Cluster& c) {
  using namespace simulator;
  if (c.num_devices() < 2 || c.num_devices() > 32 || c.num_endpoints() > 256) return;  // keep one input fast
  TaskGraphBuilder b(c.num_devices());
  std::vector<DeviceId> all;
  for (DeviceId d = 0; d < c.num_devices(); ++d) all.push_back(d);
  const GroupId group = b.add_group(all);
  TaskId prev = b.add_transfer({.src = 0, .dst = static_cast<DeviceId>(c.num_devices() - 1), .bytes = 1 << 30});
  for (const auto algo : {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Tree, CollectiveAlgorithm::Hierarchical}) {
    const TaskId t =
        b.add_collective({.op = CollectiveOp::AllReduce, .group = group, .bytes = 1 << 26, .algorithm = algo});
    b.add_dependency(t, prev);
    prev = t;
  }
  const TaskGraph g = std::move(b).build();
  for (const CollectiveMode mode : {CollectiveMode::Expanded, CollectiveMode::Analytic}) {
    try {
      (void)Engine(c, {.collectives = mode}).run(g);
    } catch (const RuntimeError& e) {
      throw InvariantViolation(std::string("engine on a loaded cluster: ") + e.what());
    }
  }
}

void load_cluster(std::string_view bytes) {
  const hardware::Cluster c = hardware::cluster_from_json(parse_json_text(bytes, kOrigin), kOrigin);
  expect_reloads("cluster", [&] { (void)hardware::cluster_from_json(hardware::cluster_to_json(c), "round trip"); });
  simulate_on(c);
}

/// What `parasim report --from` reads: any command's JSON output or a parasim.results/1 bundle.
/// The bundle it writes back must read again.
void load_results(std::string_view bytes) {
  const reports::ReportData d = reports::results_from_json(parse_json_text(bytes, kOrigin), kOrigin);
  expect_reloads("results bundle",
                 [&] { (void)reports::results_from_json(reports::results_to_json(d), "round trip"); });
}

void load_strategy_text(std::string_view bytes) {
  const strategies::Strategy s = strategies::parse_strategy(std::string(bytes), kOrigin);
  expect_reloads("strategy text", [&] { (void)strategies::parse_strategy(strategies::to_string(s), "round trip"); });
  expect_reloads("strategy json",
                 [&] { (void)strategies::strategy_from_json(strategies::strategy_to_json(s), "round trip"); });
}

void load_strategy_json(std::string_view bytes) {
  const strategies::Strategy s = strategies::strategy_from_json(parse_json_text(bytes, kOrigin), kOrigin);
  expect_reloads("strategy json",
                 [&] { (void)strategies::strategy_from_json(strategies::strategy_to_json(s), "round trip"); });
  expect_reloads("strategy text", [&] { (void)strategies::parse_strategy(strategies::to_string(s), "round trip"); });
}

/// table_from_csv reads a path, so the bytes go through a per-process temporary file.
void load_efficiency_csv(std::string_view bytes) {
  static const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("parasim-fuzz-" + std::to_string(::getpid()) + ".csv");
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  const auto eff = strategies::StatisticalEfficiency::table_from_csv(path, /*dataset_samples=*/1'281'167);
  for (const double batch : {1.0, 256.0, 65'536.0, 1e9}) {
    const double e = eff.epochs(batch);
    if (!std::isfinite(e) || !(e > 0))
      throw InvariantViolation("efficiency table: epochs(" + std::to_string(batch) + ") = " + std::to_string(e) +
                               ", expected a positive finite number");
  }
}

void load_profile(std::string_view bytes) {
  const profiler::Profile p = profiler::profile_from_json(parse_json_text(bytes, kOrigin), kOrigin);
  expect_reloads("profile", [&] { (void)profiler::profile_from_json(profiler::to_json(p), "round trip"); });
}

void load_kineto(std::string_view bytes) {
  const profiler::Profile p = profiler::import_kineto_json(parse_json_text(bytes, kOrigin), kOrigin);
  // `parasim profile import` saves what it imported: that file must load.
  expect_reloads("kineto import", [&] { (void)profiler::profile_from_json(profiler::to_json(p), "imported profile"); });
}

void load_taskgraph(std::string_view bytes) {
  using namespace simulator;
  const TaskGraph g = taskgraph_from_json(parse_json_text(bytes, kOrigin), kOrigin);
  expect_reloads("task graph", [&] { (void)taskgraph_from_json(taskgraph_to_json(g), "round trip"); });
  // A graph the loader accepts must simulate: the engine promises a stall is impossible.
  // Bounded so that one input stays well inside the fuzzer's per-input time limit.
  static const hardware::Cluster cluster = hardware::make_cluster_preset("dgx-h100", 2);
  if (g.num_devices() > cluster.num_devices() || g.size() > 2000) return;
  for (const CollectiveMode mode : {CollectiveMode::Expanded, CollectiveMode::Analytic}) {
    try {
      (void)Engine(cluster, {.collectives = mode}).run(g);
    } catch (const RuntimeError& e) {
      throw InvariantViolation(std::string("engine on a loaded task graph: ") + e.what());
    }
  }
}

void load_placement(std::string_view bytes) {
  static const models::Model model = models::build_zoo_model("tiny_cnn", {.batch = 4});
  (void)strategies::placement_from_json(parse_json_text(bytes, kOrigin), kOrigin, model, /*devices=*/2);
}

/// What `validate --runs` and `calibrate` read (parsed and checked; projecting a run is not part
/// of loading it).
void load_runs(std::string_view bytes) { (void)validation::parse_runs(parse_json_text(bytes, kOrigin), kOrigin); }

/// What `validate --nccl-tests` reads; a small file is also checked against the cost model, whose
/// bus bandwidths must come out finite and positive.
void load_nccl_tests(std::string_view bytes) {
  const validation::NcclTestsFile f = validation::parse_nccl_tests(parse_json_text(bytes, kOrigin), kOrigin);
  std::size_t rows = 0;
  for (const auto& c : f.curves) {
    if (c.nodes > 4) return;  // keep one input fast
    rows += c.rows.size();
  }
  if (rows > 64) return;
  for (const auto& r : validation::check_nccl_tests(f).rows)
    if (!(r.predicted_gbs > 0) || !std::isfinite(r.predicted_gbs))
      throw InvariantViolation("nccl_tests: predicted bus bandwidth is not a positive number");
}

/// What --calibration reads; a loaded calibration writes and reloads to the same factors.
void load_calibration_file(std::string_view bytes) {
  const Calibration c = calibration_from_json(parse_json_text(bytes, kOrigin), kOrigin);
  expect_reloads("calibration", [&] {
    const Calibration back = calibration_from_json(calibration_to_json(c), "round trip");
    if (back.kernels != c.kernels || back.intra_node_comm != c.intra_node_comm ||
        back.inter_node_comm != c.inter_node_comm || back.step_overhead_ms != c.step_overhead_ms)
      throw InvariantViolation("calibration factor changed on reload");
  });
}

constexpr std::array kTargets = {
    LoaderTarget{"model", "parasim.model/1 JSON", load_model},
    LoaderTarget{"hf_config", "Hugging Face config.json", load_hf_config},
#ifdef PARASIM_HAVE_ONNX
    LoaderTarget{"onnx", "ONNX model (onnx.ModelProto protobuf)", load_onnx},
#endif
    LoaderTarget{"cluster", "parasim.cluster/1 JSON", load_cluster},
    LoaderTarget{"strategy", "strategy grammar text (dp=4,mp=2,...)", load_strategy_text},
    LoaderTarget{"strategy_json", "parasim.strategy/1 JSON", load_strategy_json},
    LoaderTarget{"efficiency_csv", "statistical-efficiency table CSV", load_efficiency_csv},
    LoaderTarget{"profile", "parasim.profile/1 JSON", load_profile},
    LoaderTarget{"kineto", "torch.profiler Chrome trace JSON", load_kineto},
    LoaderTarget{"taskgraph", "parasim.taskgraph/1 JSON (loaded, then simulated)", load_taskgraph},
    LoaderTarget{"placement", "parasim.placement/1 JSON for tiny_cnn on 2 devices", load_placement},
    LoaderTarget{"results", "report --from input: a command's JSON output or parasim.results/1", load_results},
    LoaderTarget{"runs", "published-runs/1 JSON (validate --runs, calibrate)", load_runs},
    LoaderTarget{"calibration", "parasim.calibration/1 and /2 JSON", load_calibration_file},
    LoaderTarget{"nccl_tests", "parasim.nccl_tests/1 JSON (validate --nccl-tests)", load_nccl_tests},
};

}  // namespace

std::span<const LoaderTarget> loader_targets() { return kTargets; }

const LoaderTarget& loader_target(std::string_view name) {
  std::string known;
  for (const LoaderTarget& t : kTargets) {
    if (t.name == name) return t;
    known += (known.empty() ? "" : ", ") + std::string(t.name);
  }
  throw std::invalid_argument("no fuzz target \"" + std::string(name) + "\"; known: " + known);
}

}  // namespace parasim::fuzz
