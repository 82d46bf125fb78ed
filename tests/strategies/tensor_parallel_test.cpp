// Megatron tensor parallelism on a tiny GPT: 2 layers, hidden 64, 4 heads, 16 tokens, vocab 128.
#include <map>

#include <gtest/gtest.h>

#include "lowering_fixtures.hpp"
#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/models/model_json.hpp"
#include "parasim/models/transformer.hpp"
#include "parasim/profiler/roofline.hpp"
#include "parasim/strategies/simulate_strategy.hpp"
#include "parasim/strategies/tensor_parallel.hpp"

namespace parasim::strategies {
namespace {

using namespace testing;
using simulator::CollectiveOp;
using simulator::Phase;
using simulator::TaskKind;

models::Model tiny_gpt(std::int64_t batch = 1) {
  models::TransformerConfig c;
  c.name = "tiny_gpt";
  c.layers = 2;
  c.hidden = 64;
  c.heads = 4;
  c.seq_len = 16;
  c.vocab = 128;
  return models::build_transformer(c, {.batch = batch});
}

TEST(TensorParallel, RolesOfAGptBlock) {
  const models::Model m = tiny_gpt();
  const TpPlan plan = plan_tensor_parallel(m);
  EXPECT_EQ(plan.blocks, 2);
  auto role = [&](const std::string& name) { return plan.role[*m.find_op(name)]; };
  EXPECT_EQ(role("h.0.attn.c_attn"), TpRole::Column);
  EXPECT_EQ(role("h.0.attn.core"), TpRole::Split);
  EXPECT_EQ(role("h.0.attn.c_proj"), TpRole::Row);
  EXPECT_EQ(role("h.0.mlp.c_fc"), TpRole::Column);
  EXPECT_EQ(role("h.0.mlp.gelu"), TpRole::Split);
  EXPECT_EQ(role("h.0.mlp.c_proj"), TpRole::Row);
  EXPECT_EQ(role("h.0.ln_1"), TpRole::Replicated);
  EXPECT_EQ(role("lm_head"), TpRole::Column);
  EXPECT_EQ(role("wte"), TpRole::VocabEmbedding);
  EXPECT_EQ(role("wpe"), TpRole::Replicated);
}

TEST(TensorParallel, ShardingAtAnotherBatchEqualsShardingTheRebatchedModel) {
  const models::Model m = tiny_gpt();
  const TpPlan plan = plan_tensor_parallel(m);
  for (int tp : {1, 2, 4})
    for (const auto& [batch, dtype] : std::vector<std::pair<std::int64_t, models::DType>>{{3, models::DType::F32},
                                                                                        {8, models::DType::BF16}}) {
      SCOPED_TRACE("tp " + std::to_string(tp) + " batch " + std::to_string(batch));
      EXPECT_TRUE(shard_for_tensor_parallel(m, plan, tp, batch, dtype) ==
                  shard_for_tensor_parallel(models::with_batch(m, batch, dtype), plan, tp));
    }
}

TEST(TensorParallel, PerRankMacsAndParamsAreDividedByT) {
  const models::Model m = tiny_gpt();
  const TpPlan plan = plan_tensor_parallel(m);
  const models::Model r = shard_for_tensor_parallel(m, plan, 4);
  for (const char* name :
       {"h.1.attn.c_attn", "h.1.attn.core", "h.1.attn.c_proj", "h.1.mlp.c_fc", "h.1.mlp.c_proj", "lm_head"}) {
    const models::Op& full = m.op(*m.find_op(name));
    const models::Op& part = r.op(*r.find_op(name));
    EXPECT_EQ(part.macs_fwd * 4, full.macs_fwd) << name;
    EXPECT_EQ(part.macs_bwd_weight * 4, full.macs_bwd_weight) << name;
  }
  EXPECT_EQ(r.op(*r.find_op("h.1.attn.core")).attrs.heads, 1);
  // Column-parallel c_fc: weight and bias split; row-parallel c_proj: weight split, bias whole.
  EXPECT_EQ(r.op(*r.find_op("h.1.mlp.c_fc")).params, (64 * 256 + 256) / 4);
  EXPECT_EQ(r.op(*r.find_op("h.1.mlp.c_proj")).params, 256 * 64 / 4 + 64);
  EXPECT_EQ(r.op(*r.find_op("wte")).params, 128 * 64 / 4);
  // Activations inside the parallel region are split, the column linears' inputs are not.
  EXPECT_EQ(r.op(*r.find_op("h.1.mlp.gelu")).activation_bytes * 4, m.op(*m.find_op("h.1.mlp.gelu")).activation_bytes);
  EXPECT_EQ(r.op(*r.find_op("h.1.mlp.c_fc")).activation_bytes, m.op(*m.find_op("h.1.mlp.c_fc")).activation_bytes);
}

TEST(TensorParallel, LayerActivationsMatchKorthikanti) {
  // fp16, s = 16, b = 1, h = 64, a = 4: one layer keeps sbh (34 + 5as/h) bytes without TP
  // (the zoo keeps the probabilities in fp16 with no dropout mask: 2as^2b instead of 5as^2b) and
  // sbh (10 + 24/T) + 2as^2b/T with T-way tensor parallelism.
  models::TransformerConfig c;
  c.layers = 1;
  c.hidden = 64;
  c.heads = 4;
  c.seq_len = 16;
  c.vocab = 128;
  const models::Model m = models::build_transformer(c, {.batch = 1, .dtype = models::DType::F16});
  auto layer_bytes = [](const models::Model& model) {
    Bytes sum = 0;
    for (models::OpId v = 0; v < model.num_ops(); ++v)
      if (model.op(v).block == "h.0") sum += model.op(v).activation_bytes;
    return sum;
  };
  const Bytes sbh = 16 * 64;
  const Bytes probs = 2 * 4 * 16 * 16;
  EXPECT_EQ(layer_bytes(m), 34 * sbh + probs);
  EXPECT_EQ(layer_bytes(shard_for_tensor_parallel(m, plan_tensor_parallel(m), 4)), sbh * (10 + 24 / 4) + probs / 4);
}

LoweredStep lower(const models::Model& m, const std::string& strategy, Symmetry sym = Symmetry::DataAndTensor) {
  static const hardware::Cluster cluster = star_cluster(8, 1000, 100.0, "A100-SXM4-80GB", 80 * GiB);
  static const profiler::RooflineCostModel roofline;
  return lower_step({.model = &m, .cluster = &cluster, .strategy = parse_strategy(strategy), .global_batch = 2,
                     .costs = &roofline, .symmetry = sym});
}

int collectives(const LoweredStep& s, CollectiveOp op, Phase phase) {
  const auto& g = s.graph;
  return count_tasks(g, [&](simulator::TaskId t) {
    return g.kind(t) == TaskKind::Collective && g.collective_op(t) == op && g.phase(t) == phase;
  });
}

TEST(TensorParallel, TwoAllreducesPerLayerEachWay) {
  const models::Model m = tiny_gpt();
  const LoweredStep s = lower(m, "tp=4,micro=2");
  // Per layer and micro-batch: forward after attention and after the MLP, backward two; plus the
  // vocabulary-parallel embedding (forward) and LM head (backward). 2 layers, 2 micro-batches.
  EXPECT_EQ(collectives(s, CollectiveOp::AllReduce, Phase::Forward), 2 * (2 * 2 + 1));
  EXPECT_EQ(collectives(s, CollectiveOp::AllReduce, Phase::BackwardData), 2 * (2 * 2 + 1));
  EXPECT_EQ(s.simulated_devices.size(), 1u);  // TP rank 0 stands for the group
  // The allreduced activation is [1, 16, 64] fp32 = 4096 B; TP groups span all 4 devices.
  const auto& g = s.graph;
  for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t)
    if (g.kind(t) == TaskKind::Collective) {
      EXPECT_EQ(g.bytes(t), 4096);
      EXPECT_EQ(g.group_devices(g.group(t)).size(), 4u);
    }
  const LoweredStep all = lower(m, "tp=4,micro=2", Symmetry::None);
  EXPECT_EQ(all.simulated_devices.size(), 4u);
  EXPECT_EQ(collectives(all, CollectiveOp::AllReduce, Phase::Forward), 10);  // shared by the 4 ranks
}

// tp_overlap: a column-parallel layer's backward input all-reduce depends on its input-gradient
// GEMM only (it overlaps the weight-gradient GEMM); off, it also waits for the weight gradient.
TEST(TensorParallel, BackwardAllReduceOverlapsTheWeightGradientUnlessOff) {
  const models::Model m = tiny_gpt();
  for (const bool overlap : {true, false}) {
    SCOPED_TRACE(overlap ? "tp_overlap=on" : "tp_overlap=off");
    const LoweredStep s = lower(m, overlap ? "tp=4" : "tp=4,tp_overlap=off");
    const auto& g = s.graph;
    int checked = 0;
    for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t) {
      if (g.kind(t) != TaskKind::Collective || g.phase(t) != Phase::BackwardData) continue;
      bool after_weight = false, after_data = false;
      for (simulator::TaskId d : g.deps(t)) {
        after_weight = after_weight || g.phase(d) == Phase::BackwardWeight;
        after_data = after_data || g.phase(d) == Phase::BackwardData;
      }
      EXPECT_EQ(after_weight, !overlap) << g.name(t);
      EXPECT_EQ(after_data, overlap) << g.name(t);
      ++checked;
    }
    EXPECT_EQ(checked, 2 * 2 + 1);  // two per layer and the LM head
  }
  // Off is never faster: the all-reduce no longer hides behind the weight-gradient GEMM.
  profiler::RooflineCostModel costs;
  const hardware::Cluster cluster = hardware::make_cluster_preset("dgx-a100", 1);
  auto step = [&](const char* strategy) {
    const StepSetup setup{
        .model = &m, .cluster = &cluster, .strategy = parse_strategy(strategy), .global_batch = 8, .costs = &costs};
    return simulate_strategy(setup, {}).step_time;
  };
  EXPECT_GT(step("tp=4,tp_overlap=off"), step("tp=4"));
}

TEST(TensorParallel, SequenceParallelUsesReduceScatterAndAllGather) {
  const models::Model m = tiny_gpt();
  const LoweredStep s = lower(m, "tp=4,recompute=selective");
  EXPECT_TRUE(s.sequence_parallel);
  EXPECT_EQ(collectives(s, CollectiveOp::AllReduce, Phase::Forward), 0);
  EXPECT_EQ(collectives(s, CollectiveOp::AllGather, Phase::Forward), 2 * 2 + 1);      // + LM head input
  EXPECT_EQ(collectives(s, CollectiveOp::ReduceScatter, Phase::Forward), 2 * 2 + 1);  // + embedding
  EXPECT_EQ(collectives(s, CollectiveOp::AllGather, Phase::BackwardData), 2 * 2);
  EXPECT_EQ(collectives(s, CollectiveOp::ReduceScatter, Phase::BackwardData), 2 * 2 + 1);
  // Selective recomputation reruns each attention core before its backward.
  const auto& g = s.graph;
  EXPECT_EQ(
      count_tasks(
          g, [&](simulator::TaskId t) { return g.kind(t) == TaskKind::Compute && g.phase(t) == Phase::Recompute; }),
      2);
}

TEST(TensorParallel, SequenceParallelWithoutSelectiveRecompute) {
  const models::Model m = tiny_gpt();
  // sp=on without recomputation: the same collectives as the selective pairing, no recompute tasks.
  const LoweredStep s = lower(m, "tp=4,sp=on");
  EXPECT_TRUE(s.sequence_parallel);
  EXPECT_EQ(collectives(s, CollectiveOp::AllReduce, Phase::Forward), 0);
  EXPECT_EQ(collectives(s, CollectiveOp::AllGather, Phase::Forward), 2 * 2 + 1);
  EXPECT_EQ(collectives(s, CollectiveOp::ReduceScatter, Phase::BackwardData), 2 * 2 + 1);
  const auto& g = s.graph;
  EXPECT_EQ(count_tasks(g, [&](simulator::TaskId t) { return g.phase(t) == Phase::Recompute; }), 0);
  // sp=off with selective recomputation: plain TP all-reduces.
  const LoweredStep off = lower(m, "tp=4,recompute=selective,sp=off");
  EXPECT_FALSE(off.sequence_parallel);
  EXPECT_EQ(collectives(off, CollectiveOp::ReduceScatter, Phase::Forward), 0);
  EXPECT_GT(collectives(off, CollectiveOp::AllReduce, Phase::Forward), 0);
}

// Under sequence parallelism a rank runs a LayerNorm on 1/T of the sequence but still launches
// its kernel: the kernel model's 5 us launch is not divided, the rest is.
TEST(TensorParallel, SequenceParallelDividesWorkButNotLaunches) {
  const models::Model m = tiny_gpt();
  auto ln_forward = [&](const char* strategy) {
    const LoweredStep s = lower(m, strategy);
    const auto& g = s.graph;
    for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t)
      if (g.kind(t) == TaskKind::Compute && g.phase(t) == Phase::Forward && g.name(t) == "h.0.ln_1")
        return g.duration(t);
    ADD_FAILURE() << "no forward h.0.ln_1 in " << strategy;
    return TimeNs{0};
  };
  const TimeNs whole = ln_forward("tp=4,sp=off"), shard = ln_forward("tp=4,sp=on");
  ASSERT_GT(whole, 5000);
  EXPECT_EQ(shard, (whole - 5000 + 3) / 4 + 5000);
}

// Sequence parallelism keeps every activation of a layer at 1/T, the column-parallel linears'
// inputs included (Megatron-LM saves them before the all-gather and gathers again for the
// backward): sbh (10 + 24/T) without it, 34 sbh / T with it (Korthikanti et al. 2022, in fp16).
// tiny_gpt in fp32, s x h = 16 x 64: the part outside the parallel region is two LayerNorm inputs,
// the QKV and FC1 inputs (4 B each) and two dropout masks (1 B), 18 B per element of s x h; with 2
// layers and T = 4 the peak drops by 2 x 18 x 1024 x 3/4 bytes (before the QKV and FC1 inputs
// were sharded too it dropped by 2 x 10 x 1024 x 3/4). The embedding and the head are unchanged.
TEST(TensorParallel, SequenceParallelKeepsEveryLayerActivationSharded) {
  const models::Model m = tiny_gpt(1);
  const hardware::Cluster cluster = star_cluster(4, 1000, 100.0, "A100-SXM4-80GB", 80 * GiB);
  const profiler::RooflineCostModel roofline;
  auto activations = [&](const std::string& strategy) {
    return simulate_strategy({.model = &m,
                              .cluster = &cluster,
                              .strategy = parse_strategy(strategy),
                              .global_batch = 1,
                              .costs = &roofline})
        .devices[0]
        .breakdown.activations;
  };
  EXPECT_EQ(activations("tp=4,sp=off") - activations("tp=4,sp=on"), 2 * 18 * (16 * 64) * 3 / 4);
}

// Full recomputation reruns the transformer layers only, as Megatron-LM's TransformerBlock and
// FSDP's per-block checkpointing do: the embeddings and the LM head keep their activations.
// recompute_layers=N (Megatron-LM's --recompute-method block) reruns the first N of each chunk.
TEST(TensorParallel, FullRecomputeRerunsTheTransformerLayersOnly) {
  const models::Model m = tiny_gpt(2);
  const hardware::Cluster cluster = star_cluster(1, 0, 1.0, "A100-SXM4-80GB", 80 * GiB);
  const profiler::RooflineCostModel roofline;
  auto run = [&](const std::string& strategy) {
    return simulate_strategy({.model = &m, .cluster = &cluster, .strategy = parse_strategy(strategy),
                              .global_batch = 2, .costs = &roofline});
  };
  auto recomputed = [](const StrategyResult& r) {
    std::map<std::string, int> by_layer;  // "h.0", "h.1", or "other"
    const auto& g = r.lowered.graph;
    for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t) {
      if (g.phase(t) != Phase::Recompute) continue;
      const std::string name(g.name(t));
      ++by_layer[name.starts_with("h.0.") ? "h.0" : name.starts_with("h.1.") ? "h.1" : "other"];
    }
    return by_layer;
  };
  const StrategyResult none = run("dp=1");
  const StrategyResult full = run("recompute=full");
  const StrategyResult first = run("recompute=full,recompute_layers=1");
  const auto every = recomputed(full);
  ASSERT_EQ(every.size(), 2u) << "nothing outside the two layers is recomputed";
  EXPECT_GE(every.at("h.0"), 10);
  EXPECT_EQ(every.at("h.0"), every.at("h.1"));
  EXPECT_EQ(recomputed(first), (std::map<std::string, int>{{"h.0", every.at("h.0")}}));
  EXPECT_LT(full.devices[0].breakdown.activations, first.devices[0].breakdown.activations);
  EXPECT_LT(first.devices[0].breakdown.activations, none.devices[0].breakdown.activations);
  EXPECT_LT(none.step_time, first.step_time);
  EXPECT_LT(first.step_time, full.step_time);
  EXPECT_EQ(input_error([&] { run("recompute=full,recompute_layers=3"); }),
            "dp=1,recompute=full,recompute_layers=3: the model has 2 transformer layers to recompute, fewer than "
            "recompute_layers=3");
}

TEST(TensorParallel, NeedsTransformerLayersAndDivisibleHeads) {
  const models::Model mlp = chain_model(2);
  EXPECT_EQ(input_error([&] { lower(mlp, "tp=2"); }),
            "tp=2: model chain has no transformer layers to split; tensor parallelism (tp > 1) applies to blocks "
            "with self-attention");
  const models::Model gpt = tiny_gpt();
  EXPECT_NE(input_error([&] { lower(gpt, "tp=8"); }).find("has 4 attention heads, not divisible by 8"),
            std::string::npos);
}

}  // namespace
}  // namespace parasim::strategies

// Grouped-query attention under TP: 8 query heads, 2 K/V heads of 8 features, SwiGLU MLP, rotary.
namespace parasim::strategies {
namespace {

models::Model tiny_llama() {
  models::TransformerConfig c;
  c.name = "tiny_llama";
  c.layers = 2;
  c.hidden = 64;
  c.heads = 8;
  c.kv_heads = 2;
  c.ffn = 96;
  c.seq_len = 16;
  c.vocab = 128;
  c.tied_embeddings = false;
  c.mlp = models::MlpKind::Swiglu;
  c.norm = models::NormKind::RmsNorm;
  c.positions = models::PositionKind::Rotary;
  c.linear_bias = false;
  c.dropout = 0.0;
  return models::build_transformer(c, {.batch = 2});
}

TEST(TensorParallelGqa, KvHeadsSplitWhenTDividesThemAndReplicateOtherwise) {
  const models::Model m = tiny_llama();
  const TpPlan plan = plan_tensor_parallel(m);
  EXPECT_EQ(plan.blocks, 2);
  EXPECT_EQ(plan.max_heads, 8);
  EXPECT_EQ(plan.min_kv_heads, 2);
  auto role = [&](const std::string& name) { return plan.role[*m.find_op(name)]; };
  EXPECT_EQ(role("h.0.attn.c_attn"), TpRole::Column);
  EXPECT_EQ(role("h.0.attn.rotary"), TpRole::Split);
  EXPECT_EQ(role("h.0.attn.core"), TpRole::Split);
  EXPECT_EQ(role("h.0.mlp.swiglu"), TpRole::Split);
  EXPECT_EQ(role("h.0.mlp.c_proj"), TpRole::Row);
  // tp = 2: 4 query heads and 1 K/V head per rank: (4 + 2) x 8 = 48 q|k|v outputs.
  // tp = 4: 2 query heads and 1 K/V head, which 2 ranks each hold: (2 + 2) x 8 = 32.
  // tp = 8: 1 query head and 1 replicated K/V head: 24.
  const std::vector<std::tuple<int, std::int64_t, std::int64_t>> cases{{2, 4, 48}, {4, 2, 32}, {8, 1, 24}};
  for (const auto& [tp, heads, qkv] : cases) {
    SCOPED_TRACE("tp " + std::to_string(tp));
    const models::Model r = shard_for_tensor_parallel(m, plan, tp);
    const models::Op& core = r.op(*r.find_op("h.0.attn.core"));
    EXPECT_EQ(core.attrs.heads, heads);
    EXPECT_EQ(core.attrs.kv_heads, 1);
    EXPECT_EQ(r.op(*r.find_op("h.0.attn.c_attn")).params, 64 * qkv);
    EXPECT_EQ(r.op(*r.find_op("h.0.attn.rotary")).attrs.heads, heads);
    // Attention MACs are exactly 1/T of the full model's (whole query heads per rank).
    EXPECT_EQ(core.macs_fwd * tp, m.op(*m.find_op("h.0.attn.core")).macs_fwd);
    // SwiGLU's gate|up is split alike: 2 x 96 / T outputs, 96 / T after the GLU.
    EXPECT_EQ(r.op(*r.find_op("h.0.mlp.c_fc")).params, 64 * 2 * 96 / tp);
    EXPECT_EQ(r.op(*r.find_op("h.0.mlp.swiglu")).output_shape.back(), 96 / tp);
  }
  EXPECT_TRUE(tp_fits_kv_heads(2, 4));
  EXPECT_TRUE(tp_fits_kv_heads(8, 4));
  EXPECT_FALSE(tp_fits_kv_heads(6, 4));
  EXPECT_TRUE(tp_fits_kv_heads(0, 3));
  try {
    (void)kv_heads_per_rank(6, 4, "h.0.attn.core");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "tp=4: op h.0.attn.core has 6 key/value heads; expected a tp that divides them or that they divide "
                 "(replicated K/V heads)");
  }
}

// Megatron-LM's VocabParallelEmbedding splits the token table even when the LM head is untied
// (Llama): 128 x 64 / T parameters per rank, not the whole 8,192, and its output is reduced.
TEST(TensorParallelGqa, UntiedTokenEmbeddingIsVocabularyParallel) {
  const models::Model m = tiny_llama();
  const TpPlan plan = plan_tensor_parallel(m);
  EXPECT_EQ(plan.role[*m.find_op("wte")], TpRole::VocabEmbedding);
  EXPECT_EQ(plan.role[*m.find_op("lm_head")], TpRole::Column);
  for (int tp : {2, 4}) {
    const models::Model r = shard_for_tensor_parallel(m, plan, tp);
    EXPECT_EQ(r.op(*r.find_op("wte")).params, 128 * 64 / tp);
    EXPECT_EQ(r.op(*r.find_op("lm_head")).params, 64 * 128 / tp);
  }
}

TEST(TensorParallelGqa, MoeLayersKeepTheirAttentionSplit) {
  models::TransformerConfig c = tiny_moe_config();
  c.heads = 8;
  c.kv_heads = 2;
  c.shared_experts = 1;
  const models::Model m = models::build_transformer(c, {.batch = 2});
  const TpPlan plan = plan_tensor_parallel(m);
  EXPECT_EQ(plan.blocks, 2);
  EXPECT_EQ(plan.role[*m.find_op("h.0.moe.experts")], TpRole::Replicated);
  EXPECT_EQ(plan.role[*m.find_op("h.0.moe.shared.c_fc")], TpRole::Column);
  EXPECT_EQ(plan.role[*m.find_op("h.0.moe.shared.c_proj")], TpRole::Row);
  const models::Model r = shard_for_tensor_parallel(m, plan, 2);
  EXPECT_EQ(r.op(*r.find_op("h.0.moe.experts")).params, m.op(*m.find_op("h.0.moe.experts")).params);
}

}  // namespace
}  // namespace parasim::strategies
