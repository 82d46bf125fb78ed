// Context parallelism (ring attention) on a tiny GPT: 2 layers, hidden 64, 4 heads, 16 tokens.
#include <gtest/gtest.h>

#include "lowering_fixtures.hpp"
#include "parasim/models/transformer.hpp"
#include "parasim/profiler/roofline.hpp"
#include "parasim/strategies/context_parallel.hpp"
#include "parasim/strategies/device_mapping.hpp"
#include "parasim/strategies/search_space.hpp"
#include "parasim/strategies/simulate_strategy.hpp"

namespace parasim::strategies {
namespace {

using namespace testing;
using simulator::Phase;
using simulator::TaskKind;

models::Model tiny_gpt(int layers = 2, std::int64_t batch = 1, models::DType dtype = models::DType::F32) {
  return tiny_gpt_model(layers, 16, batch, dtype);
}

/// Only the attention cores cost anything: `fwd` and `bwd` ns per sample.
class AttentionCosts final : public profiler::CostModel {
 public:
  TimeNs fwd = 1000, bwd = 2000;
  profiler::OpCost cost(const models::Op& op, const std::string&, profiler::Optimizer) const override {
    profiler::OpCost c;
    if (op.kind != models::OpKind::Attention) return c;
    c.fwd = fwd * profiler::op_batch(op);
    c.bwd_data = bwd * profiler::op_batch(op);
    return c;
  }
  TimeNs memory_pass_ns(Bytes, const std::string&) const override { return 0; }
  std::string describe() const override { return "attention only"; }
};

TEST(ContextParallel, GrammarJsonAndDevices) {
  const Strategy s = parse_strategy("dp=2,tp=2,cp=4");
  EXPECT_EQ(s.devices(), 16);
  EXPECT_EQ(to_string(s), "dp=2,tp=2,cp=4");
  EXPECT_EQ(to_string(parse_strategy("cp=2")), "cp=2");
  EXPECT_EQ(strategy_from_json(strategy_to_json(s), "s.json"), s);
  EXPECT_FALSE(strategy_to_json(parse_strategy("dp=2")).contains("cp"));  // unchanged JSON without CP
  EXPECT_EQ(parse_strategy("dp=2,cp=2,ep=2").devices(), 4);               // CP with EP: expert_parallel_test.cpp
}

TEST(ContextParallel, CpRanksSitRightOutsideTheTpRanks) {
  const hardware::Cluster c = star_cluster(8, 0, 1.0);
  const DeviceMapping m(parse_strategy("dp=2,tp=2,cp=2"), c);
  EXPECT_EQ(m.devices_used(), 8);
  EXPECT_EQ(m.device(0, 0, 1, 0), 1);
  EXPECT_EQ(m.device(0, 0, 0, 1), 2);
  EXPECT_EQ(m.device(1, 0, 1, 1), 7);
  EXPECT_EQ(m.coords(7), (RankCoords{1, 0, 1, 1}));
}

TEST(ContextParallel, RankModelHasSeqOverCpTokensAndLessActivation) {
  const models::Model m = tiny_gpt(2, 1, models::DType::F16);
  const models::Model r = shard_for_context_parallel(m, 2);
  EXPECT_EQ(r.op(*r.find_op("input_ids")).output_shape, (models::Shape{1, 8}));
  EXPECT_EQ(r.total_params(), m.total_params());
  auto layer_bytes = [](const models::Model& model) {
    Bytes sum = 0;
    for (models::OpId v = 0; v < model.num_ops(); ++v)
      if (model.op(v).block == "h.0") sum += model.op(v).activation_bytes;
    return sum;
  };
  // fp16, s = 16, b = 1, h = 64, 4 heads: 34 sbh + 2 as^2 bytes (Korthikanti et al., as in
  // tensor_parallel_test); CP halves s: the sbh terms halve, the probabilities of one ring step
  // (s/2 x s/2) quarter.
  const Bytes sbh = 16 * 64;
  const Bytes probs = 2 * 4 * 16 * 16;
  EXPECT_EQ(layer_bytes(m), 34 * sbh + probs);
  EXPECT_EQ(layer_bytes(r), 34 * sbh / 2 + probs / 4);
  // K and V of 8 tokens, 4 heads of 16, fp16.
  EXPECT_EQ(ring_kv_bytes(r.op(*r.find_op("h.0.attn.core"))), 8 * 4 * 16 * 2 * 2);
  EXPECT_EQ(ring_kv_bytes(r.op(*r.find_op("h.0.attn.c_attn"))), 0);
}

TEST(ContextParallel, MaskedLmGatherKeepsItsShareOfThePositions) {
  // A post-LN BERT-style toy whose MLM head runs on 5 of 16 positions: with cp=2 each rank holds 8
  // tokens and gathers ceil(5 / 2) = 3 of them (the busiest rank's share); cp=4: 2 of 4.
  models::TransformerConfig c;
  c.name = "tiny_bert";
  c.layers = 1;
  c.hidden = 64;
  c.heads = 4;
  c.seq_len = 16;
  c.vocab = 128;
  c.pre_layer_norm = false;
  c.mlm_head = true;
  c.mlm_positions = 5;
  const models::Model m = models::build_transformer(c, {.batch = 2});
  const models::Model r = shard_for_context_parallel(m, 2);
  const models::Op& g = r.op(*r.find_op("lm_head.gather"));
  EXPECT_EQ(g.input_shapes[0], (models::Shape{2, 8, 64}));
  EXPECT_EQ(g.output_shape, (models::Shape{2, 3, 64}));
  EXPECT_EQ(r.total_params(), m.total_params());
  const models::Model r4 = shard_for_context_parallel(m, 4);
  EXPECT_EQ(r4.op(*r4.find_op("lm_head.gather")).output_shape, (models::Shape{2, 2, 64}));
}

TEST(ContextParallel, SequenceMustSplitIntoTwiceCpChunks) {
  const models::Model m = tiny_gpt();
  EXPECT_EQ(input_error([&] { shard_for_context_parallel(m, 3); }),
            "cp=3: the sequence of model tiny_gpt (--seq-len 16) does not split into 2 x cp = 6 equal chunks "
            "(load-balanced causal ring attention); expected a cp with 2 x cp dividing 16");
  EXPECT_EQ(input_error([] { shard_for_context_parallel(chain_model(2), 2); }),
            "cp=2: model chain has no self-attention; context parallelism (cp > 1) splits the sequence of "
            "transformer layers");
}

LoweredStep lower(const models::Model& m, const std::string& strategy, Granularity g = Granularity::Op) {
  static const hardware::Cluster cluster = star_cluster(8, 1000, 100.0, "A100-SXM4-80GB", 80 * GiB);
  static const profiler::RooflineCostModel roofline;
  return lower_step({.model = &m,
                     .cluster = &cluster,
                     .strategy = parse_strategy(strategy),
                     .global_batch = 2,
                     .costs = &roofline,
                     .granularity = g});
}

struct RingCount {
  int fwd = 0, bwd = 0;
  std::vector<Bytes> fwd_bytes, bwd_bytes;
};

RingCount ring_transfers(const LoweredStep& s) {
  RingCount c;
  const auto& g = s.graph;
  for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t) {
    if (g.kind(t) != TaskKind::Transfer || g.name(t) != "cp_ring") continue;
    EXPECT_EQ(g.stream(t), kContextParallelStream);
    if (g.phase(t) == Phase::Forward) {
      ++c.fwd;
      c.fwd_bytes.push_back(g.bytes(t));
    } else {
      ++c.bwd;
      c.bwd_bytes.push_back(g.bytes(t));
    }
  }
  return c;
}

TEST(ContextParallel, RingTransfersPerLayerAndTheirBytes) {
  const models::Model m = tiny_gpt();
  // cp=2, micro-batch of 2 samples (dp=1, batch 2): K + V of 8 tokens x 4 heads x 16 x fp32 x 2 samples.
  const Bytes kv = 2 * 8 * 4 * 16 * 2 * 4;
  const LoweredStep s = lower(m, "cp=2");
  const RingCount c = ring_transfers(s);
  // Forward: C (C - 1) = 2 transfers per layer (every rank passes its chunk on once); backward
  // C x C = 4: K/V + dK/dV after step 0, dK/dV home after step 1.
  EXPECT_EQ(c.fwd, 2 * 2);
  EXPECT_EQ(c.bwd, 2 * 4);
  for (Bytes b : c.fwd_bytes) EXPECT_EQ(b, kv);
  EXPECT_EQ(std::count(c.bwd_bytes.begin(), c.bwd_bytes.end(), 2 * kv), 4);
  EXPECT_EQ(std::count(c.bwd_bytes.begin(), c.bwd_bytes.end(), kv), 4);
  // Two attention steps per layer forward and backward, on CP rank 0 (device 0) only.
  const auto& g = s.graph;
  EXPECT_EQ(count_tasks(g,
                        [&](simulator::TaskId t) {
                          return g.kind(t) == TaskKind::Compute && g.name(t) == "h.0.attn.core" && g.device(t) == 0;
                        }),
            4);
  EXPECT_EQ(s.simulated_devices, (std::vector<hardware::DeviceId>{0}));
  EXPECT_EQ(s.roles.size(), 2u);
  EXPECT_EQ(s.roles[1].cp_rank, 1);
  // Stage granularity: the same ring per chunk with the layers' bytes summed.
  const RingCount st = ring_transfers(lower(m, "cp=2", Granularity::Stage));
  EXPECT_EQ(st.fwd, 2);
  EXPECT_EQ(st.bwd, 4);
  for (Bytes b : st.fwd_bytes) EXPECT_EQ(b, 2 * kv);
  // cp=4 with tp=2: 4 x 3 forward and 4 x 4 backward per layer, K/V heads / 2 per TP rank.
  const RingCount c4 = ring_transfers(lower(m, "tp=2,cp=4"));
  EXPECT_EQ(c4.fwd, 2 * 12);
  EXPECT_EQ(c4.bwd, 2 * 16);
  for (Bytes b : c4.fwd_bytes) EXPECT_EQ(b, 2 * 4 * 2 * 16 * 2 * 4);
}

TEST(ContextParallel, GradientsAreReducedOverDpTimesCp) {
  const models::Model m = tiny_gpt();
  const LoweredStep s = lower(m, "dp=2,cp=2,overlap=off");
  const auto& g = s.graph;
  int reductions = 0;
  for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t)
    if (g.kind(t) == TaskKind::Collective && g.phase(t) == Phase::BackwardWeight) {
      ++reductions;
      const auto group = g.group_devices(g.group(t));
      EXPECT_EQ(std::vector<hardware::DeviceId>(group.begin(), group.end()),
                (std::vector<hardware::DeviceId>{0, 1, 2, 3}));
    }
  EXPECT_EQ(reductions, 1);
}

TEST(ContextParallel, ExactTimesOfTheRing) {
  // 1 layer, cp=2 on two devices of a star (alpha 1000 ns per hop, 1 GB/s): only the attention
  // core costs (forward 1000 ns, backward 2000 ns per sample; the rank's micro-batch is 1 sample).
  const models::Model m = tiny_gpt(1);
  const hardware::Cluster cluster = star_cluster(2, 1000, 1.0, "A100-SXM4-80GB", 80 * GiB);
  const AttentionCosts costs;
  const StrategyResult r = simulate_strategy({.model = &m,
                                              .cluster = &cluster,
                                              .strategy = parse_strategy("cp=2,overlap=off"),
                                              .global_batch = 1,
                                              .costs = &costs,
                                              .optimizer = profiler::Optimizer::Sgd},
                                             {.record_timeline = true});
  const auto& g = r.lowered.graph;
  std::vector<std::pair<TimeNs, TimeNs>> steps, fwd_x, bwd_x;
  for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t) {
    const auto& tt = r.result.timeline[static_cast<std::size_t>(t)];
    if (g.kind(t) == TaskKind::Compute && g.name(t) == "h.0.attn.core") steps.emplace_back(tt.start, tt.end);
    if (g.kind(t) == TaskKind::Transfer && g.name(t) == "cp_ring")
      (g.phase(t) == Phase::Forward ? fwd_x : bwd_x).emplace_back(tt.start, tt.end);
  }
  // K + V of 8 tokens x 4 heads x 16 x fp32 = 4096 B: 2 hops of 1000 ns + 4096 ns = 6096 ns.
  // Forward: step 0 [0, 1000] while both ranks send their chunk [0, 6096]; step 1 waits for it.
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0], (std::pair<TimeNs, TimeNs>{0, 1000}));
  EXPECT_EQ(fwd_x, (std::vector<std::pair<TimeNs, TimeNs>>{{0, 6096}, {0, 6096}}));
  EXPECT_EQ(steps[1], (std::pair<TimeNs, TimeNs>{6096, 7096}));
  // Backward: step 0 [7096, 9096], then K/V + dK/dV (8192 B: 10192 ns) to [9096, 19288], step 1
  // [19288, 21288], then dK/dV home (4096 B) [21288, 27384].
  EXPECT_EQ(steps[2], (std::pair<TimeNs, TimeNs>{7096, 9096}));
  EXPECT_EQ(steps[3], (std::pair<TimeNs, TimeNs>{19288, 21288}));
  EXPECT_EQ(bwd_x,
            (std::vector<std::pair<TimeNs, TimeNs>>{{9096, 19288}, {9096, 19288}, {21288, 27384}, {21288, 27384}}));
}

TEST(ContextParallel, PeakActivationsDropAndStaticMemoryIsShardedOverDpTimesCp) {
  const models::Model m = tiny_gpt(2, 1);
  const hardware::Cluster cluster = star_cluster(4, 1000, 100.0, "A100-SXM4-80GB", 80 * GiB);
  const profiler::RooflineCostModel roofline;
  auto run = [&](const std::string& s, std::int64_t batch) {
    return simulate_strategy(
        {.model = &m, .cluster = &cluster, .strategy = parse_strategy(s), .global_batch = batch, .costs = &roofline});
  };
  const StrategyResult one = run("dp=1", 1);
  const StrategyResult two = run("cp=2", 1);
  const StrategyResult zero = run("dp=2,cp=2,zero=1", 2);
  const auto& a = one.devices[0].breakdown;
  const auto& b = two.devices[0].breakdown;
  EXPECT_EQ(a.params + a.grads + a.optimizer, b.params + b.grads + b.optimizer);
  // fp32 Adam: 8 optimizer bytes per parameter, over DP x CP = 4 ranks with ZeRO-1.
  EXPECT_EQ(zero.devices[0].breakdown.optimizer, (m.total_params() * 8 + 3) / 4);
  EXPECT_LT(b.activations, a.activations * 6 / 10);
  EXPECT_GT(b.activations, a.activations * 4 / 10);
}

TEST(ContextParallel, PlannerTriesCpOnlyForLongSequences) {
  ModelFacts f;
  f.tp_heads = 8;
  f.seq_len = 8192;
  EXPECT_EQ(context_parallel_widths(SearchSpace{}, f), (std::vector<int>{1}));
  f.seq_len = 32768;
  EXPECT_EQ(context_parallel_widths(SearchSpace{}, f), (std::vector<int>{1, 2, 4, 8}));
  f.seq_len = 131072;
  EXPECT_EQ(context_parallel_widths(SearchSpace{}, f), (std::vector<int>{1, 2, 4, 8, 16}));
  f.tp_heads = 0;  // no transformer layers
  EXPECT_EQ(context_parallel_widths(SearchSpace{}, f), (std::vector<int>{1}));
  f.tp_heads = 8;
  f.seq_len = 32768;
  const std::vector<Candidate> all = enumerate_candidates({.gpus = 8, .global_batch = 8}, f);
  const auto with_cp = std::count_if(all.begin(), all.end(), [](const Candidate& c) { return c.strategy.cp > 1; });
  EXPECT_GT(with_cp, 0);
  for (const Candidate& c : all) EXPECT_EQ(c.strategy.devices(), 8);
}

}  // namespace
}  // namespace parasim::strategies
