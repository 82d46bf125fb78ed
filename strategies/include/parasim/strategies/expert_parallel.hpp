// Expert parallelism (GShard, Lepikhin et al. 2021; Switch Transformer, Fedus et al. 2022;
// DeepSpeed-MoE): the E ranks of an expert-parallel group - E consecutive data-parallel replicas -
// each hold experts / E experts of every mixture-of-experts layer (and the whole router). Per MoE
// layer and micro-batch, an all-to-all sends every routed token slot to the rank owning its
// expert (dispatch) and another brings the results back (combine); backward repeats both.
//
// One rank's copy of an `experts` op (shard_for_expert_parallel): parameters router + experts / E;
// token slots computed: on average the same as without EP (it gets 1/E of every rank's slots for
// its experts), on the busiest rank `load` x the mean when dropless, the padded capacity with a
// capacity factor. Each all-to-all moves all_to_all_bytes(op) per rank (slots x hidden x dtype).
//
// Example:
//   models::Model m = models::build_zoo_model("mixtral_8x7b");
//   models::Model rank = shard_for_expert_parallel(m, /*ep=*/8, /*load=*/1.2);
//   rank.op(*rank.find_op("h.0.moe.experts")).params;  // router + 1 expert
#pragma once

#include <cstdint>

#include "parasim/common/units.hpp"
#include "parasim/models/graph.hpp"

namespace parasim::strategies {

/// Greatest common divisor of the expert counts of the model's `experts` ops; 0 when it has none.
std::int64_t experts_gcd(const models::Model& model);

/// The model one rank of an ep-wide group runs, with `load` (>= 1) x the mean slots on dropless
/// layers and, with `etp` > 1, each expert's FFN split over etp TP ranks (out_features / etp; the
/// op keeps every token of the TP group: they are all-gathered to it). InputError naming the op
/// when ep does not divide its experts or etp its FFN width; ep == 1, load == 1 and etp == 1
/// return the model unchanged.
models::Model shard_for_expert_parallel(const models::Model& model, int ep, double load, int etp = 1);

/// Parameters of an `experts` op held in its experts (what EP shards), i.e. all but the router;
/// 0 for other ops.
std::int64_t expert_params(const models::Op& op);

/// Bytes one rank sends in one all-to-all (dispatch or combine) of an `experts` op: its token slots
/// x hidden x dtype; 0 for other ops.
Bytes all_to_all_bytes(const models::Op& op);

}  // namespace parasim::strategies
