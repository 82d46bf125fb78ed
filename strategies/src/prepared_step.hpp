// Internal: everything lower_step() works out before it emits a single task - device mapping,
// batch split, the model at each micro-batch size with per-op times on each device kind,
// placement (op -> chunk -> device slot), recompute segments, gradient buckets and symmetry.
// The emitters (lower_ops.cpp, lower_stages.cpp) only read it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "parasim/profiler/roofline.hpp"
#include "parasim/strategies/device_mapping.hpp"
#include "parasim/strategies/lowering.hpp"
#include "parasim/strategies/tensor_parallel.hpp"

namespace parasim::strategies::detail {

using models::OpId;

/// The times one op takes on one device kind, after sequence-parallel scaling and ZeRO.
struct OpTimes {
  TimeNs fwd = 0;
  TimeNs bwd_data = 0;
  TimeNs bwd_weight = 0;
  TimeNs update = 0;
  TimeNs bwd() const { return bwd_data + bwd_weight; }
};

/// The model at one micro-batch size (one TP rank's shard of it) and what the emitters need.
struct Variant {
  std::int64_t micro = 0;
  std::shared_ptr<const models::Model> model;
  std::vector<std::vector<OpTimes>> times;  // [kind][op]
  std::vector<Bytes> kept;                  // bytes the kernels keep for backward, the most over the device kinds
  std::vector<Bytes> fwd_alloc;   // allocated by the forward task (checkpoint of a recompute segment included)
  std::vector<Bytes> rec_alloc;   // allocated by the recompute task (full: the activation; selective: the probs)
  std::vector<Bytes> bwd_free;    // freed by the last backward task
  std::vector<Bytes> xfer_bytes;  // output bytes one TP rank sends to another stage
  std::vector<Bytes> out_full;    // output bytes (row-parallel outputs: the full tensor to reduce)
  std::vector<Bytes> in_full;     // first input's bytes (column-parallel inputs)
  std::vector<Bytes> a2a_bytes;   // expert parallelism: bytes one rank sends per all-to-all of an experts op
  // Expert tensor parallelism: the bytes every TP rank ends up with in the all-gather before an
  // experts op (and the reduce-scatter after it): the TP group's dispatched slots (ep > 1) or tokens.
  std::vector<Bytes> etp_bytes;
  std::vector<Bytes> ring_bytes;  // context parallelism: K + V chunk bytes a ring step passes on (attention ops)
};

struct Bucket {
  std::vector<OpId> ops;    // ops whose gradients it holds, in backward order
  std::vector<OpId> piece;  // Stage granularity: every op of the backward piece that completes it
  Bytes bytes = 0;          // gradients reduced over the data-parallel group
  Bytes expert_bytes = 0;   // expert parallelism: expert gradients, reduced over the expert-data-parallel group
};

struct Tie {
  OpId op = 0;     // the op reusing a weight (tied LM head)
  OpId owner = 0;  // the op that owns it (token embedding)
};

/// Per-op lists owned elsewhere (StepCache::OpLinks), indexed like a vector of vectors.
class OpLists {
 public:
  OpLists() = default;
  explicit OpLists(const std::vector<std::vector<OpId>>* lists) : lists_(lists) {}
  const std::vector<OpId>& operator[](std::size_t v) const { return (*lists_)[v]; }

 private:
  const std::vector<std::vector<OpId>>* lists_ = nullptr;
};

struct Prepared {
  const StepSetup* setup = nullptr;
  const hardware::Cluster* cluster = nullptr;
  Strategy s;
  int replicas = 1;                 // dp
  int stages = 1;                   // mp: pipeline stages (device slots per replica)
  int tp_ranks = 1;                 // tp
  int ep = 1;                       // expert-parallel group width
  int ep_replicas = 1;              // replicas an EP group spans: ep, or ep / tp when it folds the TP ranks in
  int cp = 1;                       // context-parallel ranks (CP rank 0 is simulated, the others are alike)
  int chunks_per_stage = 1;         // interleave for interleaved schedules, else 1
  int chunks = 1;                   // stages x chunks_per_stage
  int micro_batches = 1;            // K, per replica and step
  int simulated_micro_batches = 1;  // K, or K + 2 x stages for asynchronous schedules (fill and drain)
  bool async = false;
  models::DType dtype = models::DType::F32;
  std::unique_ptr<DeviceMapping> mapping;
  std::unique_ptr<StepCache> own_cache;
  StepCache* cache = nullptr;

  std::vector<std::string> kinds;               // distinct device kinds used
  std::vector<int> kind_index;                  // by used device id (0 .. devices_used - 1): kinds index

  std::shared_ptr<const TpPlan> tp;
  bool sp = false;  // sequence parallelism
  bool etp = false;  // expert tensor parallelism: experts ops split over the TP ranks (Strategy::etp)

  // Structure (the same for every micro-batch size).
  const models::Model* structure = nullptr;
  std::size_t n = 0;
  std::vector<char> has_fwd, has_bd, has_bw, has_update, is_input;
  std::shared_ptr<const StepCache::OpLinks> links;   // the structure's, from the cache
  OpLists inputs, consumers;                          // distinct, in order: links' lists
  std::vector<std::int64_t> params;                   // per op (one TP rank)
  std::vector<std::int64_t> expert_params;            // per op: the part of params sharded by EP (ep > 1)
  std::vector<int> op_chunk, op_slot;
  std::vector<std::vector<OpId>> chunk_ops;           // ops with a forward task, per chunk, in order
  std::vector<int> segment;                           // full recompute segment of each op, -1 none
  std::vector<std::vector<OpId>> segments;
  std::vector<char> selective;                        // op recomputes its attention probabilities
  std::vector<char> ring;                             // cp > 1: attention op run as C ring steps
  std::vector<Tie> ties;

  std::vector<std::int64_t> replica_batch;
  std::vector<std::vector<std::int64_t>> micro;       // per replica, per micro-batch (K entries)
  std::map<std::int64_t, Variant> variants;

  std::vector<std::vector<Bucket>> slot_buckets;      // Op granularity: per slot
  std::vector<std::vector<Bucket>> chunk_buckets;     // Stage granularity: per chunk
  std::vector<std::int64_t> slot_params;              // per slot, ties' copies included
  std::vector<std::int64_t> slot_expert_params;       // per slot: the part of slot_params in EP-sharded experts
  std::vector<Bytes> slot_gathered;                   // ZeRO-3, per slot: bytes of its two largest layers
  std::vector<int> chunk_layers;                      // ZeRO-3, per chunk: layers (units with parameters)
  /// ZeRO-3 at op granularity, per op: its gather unit (a top-level block, or an op outside blocks,
  /// on one slot; -1 without parameters). A unit is gathered and reduce-scattered whole, as FSDP
  /// does a wrapped block's flat parameter: unit_bytes per unit, unit_last_backward its weighted op
  /// the backward reaches last (the lowest id).
  std::vector<int> op_unit;
  std::vector<Bytes> unit_bytes;
  std::vector<OpId> unit_last_backward;

  std::vector<int> sim_replicas;
  int sim_tp = 1;
  Symmetry symmetry = Symmetry::None;
  CostSourceCounts counts;
  std::string cost_source;
  profiler::RooflineCostModel roofline;  // weight prediction (SpecTrain) is costed here

  hardware::DeviceId device(int r, int slot, int t, int c = 0) const { return mapping->device(r, slot, t, c); }
  /// Ranks that hold the same parameters and reduce their gradients together: DP x CP.
  int grad_ranks() const { return replicas * cp; }
  /// Ranks that hold the same experts (the expert-data-parallel group of each TP rank): DP x CP / ep_replicas.
  int expert_grad_ranks() const { return replicas * cp / ep_replicas; }
  int kind_of(int r, int slot, int t) const { return kind_index[static_cast<std::size_t>(device(r, slot, t))]; }
  const Variant& variant(int r, int mb) const {
    return variants.at(micro[static_cast<std::size_t>(r)][static_cast<std::size_t>(mb % micro_batches)]);
  }
  bool layered() const { return s.placement == Placement::Layers; }
  /// Gradient bytes a parameter's DP reduction moves: its buffer's width (4 from an fp32 buffer).
  Bytes grad_bytes_per_param() const { return gradient_bytes_per_param(setup->grad_accumulation, dtype); }
  /// ZeRO-3: parameters are sharded over the replicas and gathered layer by layer.
  bool zero3() const { return s.zero == 3 && grad_ranks() > 1; }
  /// ZeRO-2 with gradient accumulation: every micro-batch but the step's last reduce-scatters its
  /// gradients into the rank's shard (DeepSpeed stage 2), the last one as any ZeRO step does.
  bool zero2_accumulates() const { return s.zero == 2 && grad_ranks() > 1 && !async && simulated_micro_batches > 1; }
};

/// What a Prepared is for: a lowering reads all of it; step_bound.cpp reads the op times,
/// placement, recompute and transfer sizes: a Bound has no buckets, memory numbers or cost sources.
enum class PrepareFor : std::uint8_t { Lowering, Bound };

/// Validates the setup and works everything out; InputError naming the problem.
std::unique_ptr<Prepared> prepare_step(const StepSetup& setup, PrepareFor use = PrepareFor::Lowering);

}  // namespace parasim::strategies::detail
