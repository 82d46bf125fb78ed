// A parallelization strategy: how one training step is split across devices.
//
// Grammar (all keys optional; defaults give plain data parallelism on one device):
//   "dp=D,mp=M,tp=T,cp=C,ep=E,etp=1|T,imbalance=I,schedule=S,micro=K,interleave=V,placement=P,recompute=R,
//    recompute_layers=N,sp=auto|on|off,zero=Z,bucket_mb=X,split=even|speed,overlap=on|off,tp_overlap=on|off,
//    ep_overlap=on|off,mapping=tp-mp-dp"
// Devices used = D x M x T x C: expert parallelism (ep) splits the D data-parallel ranks into groups
// of E that share out the experts, so it adds no devices. The same fields are accepted as JSON
// ("schema": "parasim.strategy/1").
//
// Example:
//   Strategy s = parse_strategy("dp=4,mp=2,schedule=1f1b,micro=8");
//   s.devices();            // 8
//   to_string(s);           // "dp=4,mp=2,schedule=1f1b,micro=8" (canonical: defaults omitted)
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace parasim::strategies {

enum class Schedule : std::uint8_t {
  None,         // no pipelining: with mp > 1, stages run one after another (plain model parallelism)
  GPipe,        // all forwards, then all backwards, then flush (Huang et al. 2019)
  OneFOneB,     // PipeDream-flush / 1F1B (Narayanan et al. 2021)
  Interleaved,  // 1F1B with V virtual stages per device (Narayanan et al. 2021)
  PipeDream,    // asynchronous 1F1B with weight stashing, no flush (Narayanan et al. 2019)
  SpecTrain,    // asynchronous pipeline, weight prediction instead of stashing (Chen et al. 2018)
};
enum class Placement : std::uint8_t { Layers, Branches, File };
enum class Recompute : std::uint8_t { None, Selective, Full };
enum class BatchSplit : std::uint8_t { Even, Speed };
/// Sequence parallelism (Korthikanti et al. 2022) inside tensor-parallel blocks. Auto pairs it with
/// selective recomputation, as that paper does; on/off say what the run used, whatever it recomputes.
enum class SeqParallel : std::uint8_t { Auto, On, Off };

std::string to_string(Schedule s);
std::string to_string(Placement p);
std::string to_string(Recompute r);
std::string to_string(BatchSplit b);
std::string to_string(SeqParallel p);

struct Strategy {
  int dp = 1;
  int mp = 1;  // pipeline / model-parallel stages
  int tp = 1;  // tensor-parallel width (Megatron-style, transformer blocks)
  int cp = 1;  // context-parallel width: the sequence split over C ranks, ring attention between them
  /// Expert-parallel group: E consecutive DP replicas (or T TP ranks x E / T replicas: folding)
  /// each hold experts / E of every MoE layer.
  int ep = 1;
  /// Expert tensor parallelism: T splits every expert's FFN over the TP ranks, which all-gather the
  /// dispatched tokens before it and reduce-scatter after (Megatron-Core's expert_tensor_parallel_size,
  /// default tp); 1 keeps whole experts on every TP rank, each routing its 1/T of the tokens
  /// (DeepSpeed-MoE). 0 = auto: T with sequence parallelism (Megatron-Core needs it), else 1.
  int etp = 0;
  double imbalance = 1.0;  // tokens the busiest rank of an EP group gets, over the mean (dropless routing)
  Schedule schedule = Schedule::None;
  int micro = 1;       // micro-batches per step (per pipeline)
  int interleave = 1;  // virtual stages per device (schedule=interleaved)
  Placement placement = Placement::Layers;
  std::string placement_file;  // op -> device map when placement == File
  Recompute recompute = Recompute::None;
  /// With recompute=full: only the first N transformer layers (top-level blocks of other models)
  /// of each pipeline chunk are recomputed, the rest keep their activations (Megatron-LM's
  /// --recompute-method block --recompute-num-layers N); 0 = every layer.
  int recompute_layers = 0;
  SeqParallel sp = SeqParallel::Auto;
  int zero = 0;  // ZeRO stage across DP: 1 shards optimizer state, 2 also gradients (micro=1), 3 also parameters
  double bucket_mb = 25; // DP gradient bucket size (PyTorch DDP default 25 MB)
  BatchSplit split = BatchSplit::Even;
  bool overlap = true;   // overlap DP gradient all-reduce with backward
  /// A column-parallel layer's backward input all-reduce (reduce-scatter with sp) overlaps its
  /// weight-gradient GEMM, as Megatron-LM's --async-tensor-model-parallel-allreduce (late 2021 on);
  /// off: it starts after both backward GEMMs, as earlier Megatron-LM and plain autograd do.
  bool tp_overlap = true;
  /// Expert parallelism: a steady-state forward and backward of two micro-batches run as one merged unit,
  /// so that the all-to-alls of one hide behind the other's compute (Megatron-Core's
  /// --overlap-moe-expert-parallel-comm); 1F1B and interleaved schedules only.
  bool ep_overlap = false;
  std::string mapping = "tp-mp-dp";  // innermost to outermost: TP then MP inside a node, DP across nodes

  std::int64_t devices() const { return static_cast<std::int64_t>(dp) * mp * tp * cp; }
  /// Whether TP blocks run sequence-parallel (never without tp > 1).
  bool sequence_parallel() const {
    return tp > 1 && (sp == SeqParallel::On || (sp == SeqParallel::Auto && recompute == Recompute::Selective));
  }
  /// MoE parallel folding (Megatron-Core): an ep that does not divide dp spans the TP ranks too,
  /// T TP ranks x ep / T replicas (ep a multiple of tp whose ep / tp divides dp; whole experts).
  bool expert_groups_fold_tp() const { return ep > 1 && dp % ep != 0 && tp > 1 && ep % tp == 0 && dp % (ep / tp) == 0; }
  /// Replicas an expert-parallel group spans: ep, or ep / tp when it folds the TP ranks in.
  int expert_group_replicas() const { return expert_groups_fold_tp() ? ep / tp : ep; }
  /// Whether the experts' FFNs are split over the TP ranks (etp above; never without tp > 1, and
  /// auto leaves them whole when the expert groups fold the TP ranks in).
  bool experts_split_over_tp() const {
    return tp > 1 && (etp == tp || (etp == 0 && sequence_parallel() && !expert_groups_fold_tp()));
  }
  bool pipelined() const { return schedule != Schedule::None; }
  bool asynchronous() const { return schedule == Schedule::PipeDream || schedule == Schedule::SpecTrain; }
  bool operator==(const Strategy&) const = default;
};

/// Parses the grammar above. Throws InputError naming the offending key/value and the accepted
/// values, e.g. "--strategy: schedule=foo: expected one of none, gpipe, 1f1b, interleaved, pipedream, spectrain".
/// Also rejects inconsistent combinations (interleave > 1 without schedule=interleaved, zero=1 with dp=1 is
/// allowed but pointless and kept, micro < 1, absurd sizes).
Strategy parse_strategy(const std::string& text, const std::string& origin = "--strategy");
/// Canonical text form: keys in grammar order, defaults omitted; "dp=1" for the default strategy.
std::string to_string(const Strategy& s);

nlohmann::json strategy_to_json(const Strategy& s);
Strategy strategy_from_json(const nlohmann::json& j, const std::string& file);
/// `text` is either a grammar string or a path to a parasim.strategy/1 JSON file (ends in .json).
Strategy load_strategy(const std::string& text_or_file);

}  // namespace parasim::strategies
