#include "parasim/strategies/projection.hpp"

#include <algorithm>
#include <charconv>
#include <functional>
#include <set>
#include <sstream>

#include "parasim/common/error.hpp"
#include "parasim/hardware/cluster_json.hpp"
#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/strategies/simulate_strategy.hpp"

namespace parasim::strategies {

namespace {

constexpr int kMaxGpus = 1 << 20;

int parse_count(const std::string& text, const std::string& item) {
  int v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < 1 || v > kMaxGpus)
    throw InputError("--gpus: \"" + item +
                     "\": expected GPU counts like 8,16,32 or 8-1024 (powers of two) or 1-64x2, " +
                     "each between 1 and " + std::to_string(kMaxGpus));
  return v;
}

void parse_item(const std::string& item, std::vector<int>& out) {
  const auto dash = item.find('-');
  if (dash == std::string::npos) {
    out.push_back(parse_count(item, item));
    return;
  }
  const std::string rest = item.substr(dash + 1);
  const auto x = rest.find('x');
  const int lo = parse_count(item.substr(0, dash), item);
  const int hi = parse_count(rest.substr(0, x), item);
  if (hi < lo) throw InputError("--gpus: \"" + item + "\": the range ends before it starts");
  if (x != std::string::npos) {
    const int factor = parse_count(rest.substr(x + 1), item);
    if (factor < 2) throw InputError("--gpus: \"" + item + "\": the factor after x must be at least 2");
    for (std::int64_t n = lo; n <= hi; n *= factor) out.push_back(static_cast<int>(n));
    return;
  }
  const std::size_t before = out.size();
  for (std::int64_t n = 1; n <= hi; n *= 2)
    if (n >= lo) out.push_back(static_cast<int>(n));
  if (out.size() == before) throw InputError("--gpus: \"" + item + "\": no power of two in the range");
}

bool is_preset(const std::string& cluster) {
  const std::string base = cluster.substr(0, cluster.find(':'));
  const auto names = hardware::cluster_preset_names();
  return std::find(names.begin(), names.end(), base) != names.end();
}

std::int64_t model_parallel_width(const Strategy& s) { return static_cast<std::int64_t>(s.mp) * s.tp; }

/// The best feasible row among those whose model-parallel width passes `keep`, or the closest
/// candidate with the reason nothing fits.
ProjectionSide pick_side(const PlanResult& plan, bool hybrid, int gpus,
                         const std::function<bool(std::int64_t)>& keep) {
  ProjectionSide side;
  const PlanRow* best = nullptr;
  for (const PlanRow& r : plan.rows) {
    if (!keep(model_parallel_width(r.strategy))) continue;
    ++side.candidates;
    if (best == nullptr) best = &r;  // ranked: the best feasible, else the closest miss
  }
  if (best == nullptr) {
    side.reason = hybrid ? "no split of " + std::to_string(gpus) + " GPUs into data-parallel groups of M > 1 GPUs"
                         : "no data-parallel configuration of " + std::to_string(gpus) + " GPUs";
    return side;
  }
  side.feasible = best->feasible();
  side.strategy = best->strategy;
  if (!side.feasible) side.reason = best->reason;
  side.step_time = best->step_time;
  side.global_batch = best->global_batch;
  side.epochs = best->epochs;
  side.steps_per_epoch = best->steps_per_epoch;
  side.time_to_train = best->time_to_train;
  side.throughput = best->throughput;
  side.bubble_fraction = best->bubble_fraction;
  side.exposed_comm = best->exposed_comm;
  side.peak_memory = best->peak_memory;
  side.capacity = best->capacity;
  side.sampled_micro = best->sampled_micro;
  return side;
}

}  // namespace

std::vector<int> parse_gpu_counts(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    parse_item(item, out);
  }
  if (out.empty()) throw InputError("--gpus: expected GPU counts like 8,16,32 or 8-1024 or 1-64x2");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

PerDeviceBatch default_per_device_batch(const std::string& model) {
  static const std::string goyal =
      "32 images per GPU, the per-device batch of the ImageNet recipe of Goyal et al. 2017 (assumed for this model)";
  if (model == "resnet50") return {32, "32 images per GPU (Goyal et al. 2017)"};
  if (model == "inception_v3" || model == "inception_v3_noaux" || model == "googlenet" || model == "vgg16")
    return {32, goyal};
  if (model == "googlenet_cifar" || model == "vgg16_cifar" || model == "resnet50_cifar")
    return {128, "assumed: 128 images per GPU, the usual single-GPU CIFAR-10 batch"};
  if (model == "gnmt")
    return {128, "assumed: 128 sentence pairs per GPU (the 1024-pair reference batch on one 8-GPU node)"};
  if (model == "biglstm")
    return {128, "assumed: 128 sequences per GPU (Jozefowicz et al. 2016: batch 4096 over 32 GPUs)"};
  if (model == "gpt2" || model == "bert_large") return {8, "assumed: 8 sequences per GPU"};
  if (model == "megatron_22b" || model == "gpt3_175b" || model == "turing_530b" || model == "megatron_1t")
    return {1, "assumed: 1 sequence per GPU (for a fixed global batch use `parasim plan --batch`)"};
  if (model == "tiny_cnn" || model == "tiny_lstm") return {8, "assumed (test model)"};
  return {32, "assumed: 32 samples per GPU (no published per-device batch known to parasim)"};
}

std::string projection_shortcuts(const Projection& p, bool exact) {
  if (exact)
    return "none: every candidate simulated at its own micro-batch count, no memory-dominance pruning (--exact)";
  std::string rows;
  int count = 0;
  for (const ProjectionRow& r : p.rows)
    for (const ProjectionSide* side : {&r.dp, &r.hybrid})
      if (side->feasible && side->sampled_micro[0] > 0) {
        rows += std::string(count++ ? ", " : "") + std::to_string(r.gpus) + " GPUs " +
                (side == &r.dp ? "DP" : "hybrid") + " (micro=" + std::to_string(side->strategy.micro) + " from " +
                std::to_string(side->sampled_micro[0]) + " and " + std::to_string(side->sampled_micro[1]) + ")";
      }
  std::int64_t less_recompute = 0;
  for (const ProjectionRow& r : p.rows) less_recompute += r.less_recompute;
  return (count == 0
              ? std::string("no shown row was extrapolated")
              : "extrapolated along the micro-batch count (simulated at two smaller counts and continued): " + rows) +
         "; candidates may be skipped by memory dominance" +
         (less_recompute > 0 ? "; " + std::to_string(less_recompute) +
                                   " recomputing the fewest whole layers that fit not simulated because the same "
                                   "configuration fits with selective or no recomputation (taken to be faster)"
                             : std::string()) +
         "; --exact simulates every candidate in full";
}

ProjectionRow projection_row_from_plan(int gpus, int nodes, const PlanResult& plan) {
  ProjectionRow row;
  row.gpus = gpus;
  row.nodes = nodes;
  row.less_recompute = plan.stats.less_recompute;
  row.dp = pick_side(plan, false, gpus, [](std::int64_t m) { return m == 1; });
  row.hybrid = pick_side(plan, true, gpus, [](std::int64_t m) { return m > 1; });
  std::set<std::int64_t> widths;
  for (const PlanRow& r : plan.rows)
    if (model_parallel_width(r.strategy) > 1) widths.insert(model_parallel_width(r.strategy));
  for (std::int64_t m : widths) {
    ProjectionSide side = pick_side(plan, true, gpus, [m](std::int64_t w) { return w == m; });
    if (side.feasible) row.hybrid_by_width.emplace(m, std::move(side));
  }
  if (row.dp.feasible && row.hybrid.feasible && row.dp.time_to_train > 0)
    row.gain_pct = 100.0 * static_cast<double>(row.dp.time_to_train - row.hybrid.time_to_train) /
                   static_cast<double>(row.dp.time_to_train);
  return row;
}

Projection run_projection(const ProjectionRequest& req) {
  if (req.model == nullptr || req.costs == nullptr) throw InputError("project: a model and a cost model are required");
  if (req.gpus.empty()) throw InputError("--gpus: give at least one GPU count");
  if (req.per_device_batch < 1) throw InputError("--per-device-batch: expected a positive batch");
  const bool preset = is_preset(req.cluster);
  const hardware::Cluster one = hardware::resolve_cluster(req.cluster, 1);
  const int per_node = std::max<int>(1, static_cast<int>(one.devices_of_node(0).size()));

  Projection out;
  ProjectionAssumptions& a = out.assumptions;
  a.model = req.model->name();
  a.cluster = req.cluster + " (" + std::to_string(per_node) + " GPUs of " + one.device(0).kind +
              " per node; nodes = ceil(N / " + std::to_string(per_node) + "))";
  a.efficiency = req.efficiency.describe();
  a.dataset = req.dataset.name;
  a.dataset_samples = req.dataset.samples;
  a.dataset_source = req.dataset.source;
  a.per_device_batch = req.per_device_batch;
  a.per_device_batch_source = req.per_device_batch_source;
  a.batch_convention =
      "each data-parallel worker keeps the per-device batch (Pal et al. 2019): DP global batch = N x b, hybrid global "
      "batch = (N / M) x b for workers of M GPUs";
  const int max_width = req.space.max_model_parallel > 0 ? req.space.max_model_parallel : per_node;
  a.hybrid_rule = "M = mp x tp in 2.." + std::to_string(max_width) +
                  " dividing N (pipeline/model parallel stages x tensor parallel width)";
  a.dtype = models::to_string(req.dtype.value_or(req.model->dtype()));
  a.optimizer = parasim::to_string(req.optimizer);
  a.collectives = std::string(simulator::to_string(req.collectives));

  StepCache cache;
  const ModelFacts facts = model_facts(*req.model, per_node);
  for (int n : req.gpus) {
    const int nodes = preset ? (n + per_node - 1) / per_node : 1;
    const hardware::Cluster cluster = preset ? hardware::resolve_cluster(req.cluster, nodes) : one;
    if (n > cluster.num_devices())
      throw InputError("--gpus " + std::to_string(n) + ": cluster file " + req.cluster + " has only " +
                       std::to_string(cluster.num_devices()) + " devices");
    PlanRequest plan_req{.model = req.model,
                         .cluster = &cluster,
                         .costs = req.costs,
                         .optimizer = req.optimizer,
                         .dtype = req.dtype,
                         .efficiency = req.efficiency,
                         .dataset_samples = req.dataset.samples,
                         .space = req.space,
                         .objective = Objective::TimeToTrain,
                         .granularity = req.granularity,
                         .collectives = req.collectives,
                         .calibration = req.calibration,
                         .data_loading = req.data_loading,
                         .grad_accumulation = req.grad_accumulation,
                         .threads = req.threads,
                         .extrapolate = !req.exact,
                         .prune_dominated = !req.exact,
                         .on_candidate_done = req.on_candidate_done,
                         .cache = &cache,
                         .sharing = req.sharing};
    SearchSpace& s = plan_req.space;
    s.gpus = n;
    s.allow_fewer = false;
    s.global_batch = 0;
    s.max_batch = 0;
    s.per_device_batch = req.per_device_batch;
    s.min_model_parallel = 1;
    s.max_model_parallel = max_width;
    if (req.on_gpu_count) req.on_gpu_count(n, enumerate_candidates(s, facts).size());
    const PlanResult plan = run_planner(plan_req);
    if (a.cost_source.empty()) a.cost_source = plan.cost_source;
    a.granularity = to_string(plan.granularity);
    out.rows.push_back(projection_row_from_plan(n, nodes, plan));
  }
  a.shortcuts = projection_shortcuts(out, req.exact);
  a.step_overhead = req.calibration.describe_step_overhead();
  a.collective_sms = describe_collective_sms(one);
  a.data_loading = req.data_loading.describe();
  a.grad_accumulation = describe(req.grad_accumulation, req.dtype.value_or(req.model->dtype()));
  return out;
}

}  // namespace parasim::strategies
