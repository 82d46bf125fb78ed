// The strategies a planner tries for one model on N devices: every dp x mp x tp (x cp) split with
// the pipeline schedules, micro-batch counts, interleavings, recompute and ZeRO choices that make
// sense for it, each with the global batch it trains at (exact N, or at most N with
// allow_fewer). Candidates come out in a fixed order (tp, cp, mp, schedule, placement, V, K, ep,
// recompute, zero, mapping). Context parallelism is tried only for long sequences
// (context_parallel_widths), so the search of shorter ones is unchanged. The rule for each knob
// and its source: docs/projection.md ("Batch conventions", "The search space").
//
// Example:
//   models::Model model = models::build_zoo_model("gpt2");
//   ModelFacts facts = model_facts(model, /*devices_per_node=*/8);
//   SearchSpace space{.gpus = 16, .global_batch = 512};
//   std::vector<Candidate> all = enumerate_candidates(space, facts);
//   for (const Candidate& c : all) std::cout << to_string(c.strategy) << " B=" << c.global_batch << "\n";
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parasim/models/graph.hpp"
#include "parasim/strategies/strategy.hpp"

namespace parasim::strategies {

/// What the enumeration needs to know about a model and the nodes it runs on.
struct ModelFacts {
  std::string name;
  std::int64_t params = 0;
  int pipeline_units = 1;      // contiguous units a layer partition may cut between
  int layers = 1;              // transformer layers when there are any, else pipeline_units
  int tp_heads = 0;            // attention heads of the transformer layers (0: no tensor parallelism)
  int tp_kv_heads = 0;         // their key/value heads when grouped-query (0: as many as heads)
  std::int64_t min_layer_params = 0;  // parameters of the smallest transformer layer (0: none)
  bool has_attention = false;  // selective recompute changes something
  bool forks = false;          // some op feeds two others: placement=branches has something to split
  std::int64_t experts = 0;    // gcd of the MoE layers' expert counts (0: no MoE layer, no ep)
  std::int64_t expert_params = 0;  // parameters in experts (what expert parallelism shards)
  int devices_per_node = 8;
  std::int64_t seq_len = 0;  // tokens per sample of the self-attention ops (0: none, no cp)
  /// A row's MFU, set by planner_model_facts only (model_facts leaves them 0): the model's
  /// profiler::matmul_flops_per_sample, and one device's dense peak in the plan's precision
  /// (FLOP/s; 0 when the cluster mixes device kinds).
  double matmul_flops_per_sample = 0;
  double device_peak_flops = 0;
};

ModelFacts model_facts(const models::Model& model, int devices_per_node);

struct SearchSpace {
  int gpus = 1;
  bool allow_fewer = false;
  std::int64_t global_batch = 0;
  std::int64_t per_device_batch = 0;
  std::int64_t max_batch = 0;
  int min_model_parallel = 1;   // mp * tp >= this (2: hybrids only)
  int max_model_parallel = 0;   // mp * tp <= this (0: no limit)
  int max_mp = 0;               // 0: pipeline units
  int max_tp = 0;               // 0: devices per node
  bool even_stages = false;     // mp must divide the layers (Calculon, Megatron-LM's even split)
  std::vector<Schedule> schedules = {Schedule::None,        Schedule::GPipe,     Schedule::OneFOneB,
                                     Schedule::Interleaved, Schedule::PipeDream, Schedule::SpecTrain};
  std::vector<Recompute> recomputes = {Recompute::None, Recompute::Selective, Recompute::Full};
  /// Also full recomputation of only the fewest transformer layers of each pipeline chunk that fit
  /// (Megatron-LM's --recompute-method block --recompute-num-layers N), with sequence parallelism
  /// under TP: one candidate per shape, micro-batch size and ZeRO stage, its N found when it is
  /// evaluated (Candidate::fewest_recompute_layers). Transformer models with 2+ layers a chunk.
  bool partial_recompute = true;
  std::vector<int> zeros = {0, 1};  // the CLI tries 0,1,3 by default
  bool branch_placement = true;
  bool all_mappings = false;
  bool expert_parallel = true;  // MoE models: try every ep dividing dp (or tp x dp's divisors) and the experts
  // Context parallelism: powers of two up to max_cp, from min_cp_seq tokens on, each CP rank
  // keeping at least min_cp_tokens of them, 2 cp dividing the sequence (load-balanced chunks).
  int max_cp = 16;
  std::int64_t min_cp_seq = 16384;
  std::int64_t min_cp_tokens = 4096;
  double imbalance = 1.0;       // the strategies' imbalance= when ep > 1
  int max_micro_per_stage = 8;
  int max_accumulation = 16;
};

struct Candidate {
  Strategy strategy;
  std::int64_t global_batch = 0;
  /// Full recomputation on the fewest layers that fit (SearchSpace::partial_recompute): the
  /// strategy holds the most layers tried, recompute_layers = the chunk's layers less one (the
  /// least memory), and the planner searches down to the fewest that fit.
  bool fewest_recompute_layers = false;
  bool operator==(const Candidate&) const = default;
};

/// Every candidate, in the fixed order above. InputError when the space itself is malformed
/// (gpus < 1, no batch rule).
std::vector<Candidate> enumerate_candidates(const SearchSpace& space, const ModelFacts& facts);

/// The ep values the space allows for a dp-way split of the model (1 first): divisors of dp that
/// divide the experts of every MoE layer, then (tp > 1) the folded widths tp x d, d dividing dp,
/// that do not divide dp and divide the experts (MoE parallel folding; Strategy::expert_groups_fold_tp).
std::vector<int> expert_parallel_widths(const SearchSpace& space, const ModelFacts& facts, int dp, int tp = 1);

/// The cp values the space allows for the model (1 first): see SearchSpace::max_cp.
std::vector<int> context_parallel_widths(const SearchSpace& space, const ModelFacts& facts);

/// The tp values the space allows for the model (1 first).
std::vector<int> tensor_parallel_widths(const SearchSpace& space, const ModelFacts& facts);

/// Parses "none,gpipe,1f1b" / "all" into schedules, "none,full" into recomputes, "0,1,3" into ZeRO stages.
std::vector<Schedule> parse_schedule_list(const std::string& text, const std::string& origin);
std::vector<Recompute> parse_recompute_list(const std::string& text, const std::string& origin);
/// "all" or a list of none, selective, full and partial into space.recomputes and
/// space.partial_recompute (partial alone leaves recomputes empty).
void parse_recompute_choices(const std::string& text, const std::string& origin, SearchSpace& space);
std::vector<int> parse_zero_list(const std::string& text, const std::string& origin);

}  // namespace parasim::strategies
