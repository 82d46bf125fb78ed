// Expert parallelism, by hand. moe_model(): x [batch, 1000] -> relu -> experts (4 experts of 2
// matrices 1000 x 500, top-2, router [4, 1000]) -> loss, fp32. SlotCosts: an experts op costs
// 1000 ns per routed token slot per phase, everything else is free. Cluster: GPUs on a switch,
// alpha 0, 1 GB/s per device link (1 byte/ns), pure link costs. An all-to-all of S bytes per rank
// over n ranks sends S/n to each of the n-1 others at once: each uplink carries (n-1) S / n.
#include <gtest/gtest.h>

#include <set>

#include "lowering_fixtures.hpp"
#include "parasim/models/model_json.hpp"
#include "parasim/models/transformer.hpp"
#include "parasim/strategies/expert_parallel.hpp"
#include "parasim/strategies/memory_model.hpp"
#include "parasim/strategies/planner.hpp"
#include "parasim/profiler/roofline.hpp"
#include "parasim/strategies/simulate_strategy.hpp"

namespace parasim::strategies {
namespace {

using namespace testing;
using simulator::CollectiveOp;
using simulator::Phase;
using simulator::TaskKind;

class SlotCosts final : public profiler::CostModel {
 public:
  profiler::OpCost cost(const models::Op& op, const std::string&, profiler::Optimizer) const override {
    profiler::OpCost c;
    if (op.kind != models::OpKind::Experts) return c;
    const TimeNs t = 1000 * models::expert_slots(op);
    c.fwd = c.bwd_data = c.bwd_weight = t;
    return c;
  }
  TimeNs memory_pass_ns(Bytes, const std::string&) const override { return 0; }
  std::string describe() const override { return "slots"; }
};

models::Model moe_model(double capacity_factor = 0.0) {
  models::ModelBuilder b("moe", 1);
  models::OpId x = b.input("x", {1, 1000});
  x = b.relu("relu", x);
  x = b.experts("moe", x, /*experts=*/4, /*top_k=*/2, /*width=*/500, /*gated=*/false, capacity_factor);
  b.cross_entropy("loss", x);
  return b.finish();
}

/// `model` on `gpus` GPUs of a switch with `gbps` GB/s links and no latency, link-priced collectives.
StrategyResult simulate_on_star(const models::Model& model, const profiler::CostModel& costs,
                                const std::string& strategy, int gpus, std::int64_t batch, double gbps = 1.0,
                                Symmetry symmetry = Symmetry::DataAndTensor,
                                simulator::CollectiveMode mode = simulator::CollectiveMode::Analytic) {
  const hardware::Cluster cluster = star_cluster(gpus, 0, gbps);
  StepSetup setup{.model = &model,
                  .cluster = &cluster,
                  .strategy = parse_strategy(strategy),
                  .global_batch = batch,
                  .costs = &costs,
                  .optimizer = profiler::Optimizer::Adam,
                  .symmetry = symmetry};
  setup.collective_costs = simulator::CollectiveCosts::Links;
  return simulate_strategy(setup, {.collectives = mode});
}

StrategyResult run(const std::string& strategy, int gpus = 4, std::int64_t batch = 8,
                   Symmetry symmetry = Symmetry::DataAndTensor,
                   simulator::CollectiveMode mode = simulator::CollectiveMode::Analytic, double capacity_factor = 0.0) {
  static const SlotCosts costs;
  return simulate_on_star(moe_model(capacity_factor), costs, strategy, gpus, batch, 1.0, symmetry, mode);
}

/// tiny_moe_config() (lowering_fixtures.hpp), one sample, fp32.
models::Model tiny_moe_transformer() { return models::build_transformer(tiny_moe_config(), {.batch = 1}); }

int collectives(const LoweredStep& s, CollectiveOp op, Phase phase) {
  const auto& g = s.graph;
  return count_tasks(g, [&](simulator::TaskId t) {
    return g.kind(t) == TaskKind::Collective && g.collective_op(t) == op && g.phase(t) == phase;
  });
}

TEST(ExpertParallel, RankHoldsItsShareOfTheExpertsAndTheWholeRouter) {
  const models::Model m = moe_model();
  const models::Op& whole = m.op(*m.find_op("moe"));
  EXPECT_EQ(whole.params, 4 * 1000 + 4 * 2 * 1000 * 500);
  EXPECT_EQ(expert_params(whole), 4'000'000);
  const models::Model r = shard_for_expert_parallel(m, 4, 1.0);
  const models::Op& rank = r.op(*r.find_op("moe"));
  EXPECT_EQ(rank.params, 4 * 1000 + 1 * 2 * 1000 * 500);
  EXPECT_EQ(expert_params(rank), 1'000'000);
  // Same slots on average: 1 token x top-2; the MACs are the router's plus the slots' unchanged.
  EXPECT_EQ(models::expert_slots(rank), 2);
  EXPECT_EQ(rank.macs_fwd, whole.macs_fwd);
  EXPECT_EQ(all_to_all_bytes(rank), 2 * 1000 * 4);
  // The busiest rank with 1.5x the mean: ceil(1.5 x 2) = 3 slots.
  const models::Model busy = shard_for_expert_parallel(m, 4, 1.5);
  EXPECT_EQ(models::expert_slots(busy.op(*busy.find_op("moe"))), 3);
  EXPECT_NE(busy.op(*busy.find_op("moe")).signature(), rank.signature());
}

TEST(ExpertParallel, CapacityFactorPadsAndIgnoresTheLoad) {
  // 8 tokens x top-2 = 16 routed; capacity 1.25: ceil(1.25 x 16 / 4) = 5 per expert, 20 slots.
  models::Model m = models::with_batch(moe_model(1.25), 8);
  EXPECT_EQ(models::expert_slots(m.op(*m.find_op("moe"))), 20);
  const models::Model r = shard_for_expert_parallel(m, 2, 1.5);
  EXPECT_EQ(models::expert_slots(r.op(*r.find_op("moe"))), 20);
  EXPECT_EQ(all_to_all_bytes(r.op(*r.find_op("moe"))), 20 * 1000 * 4);
}

TEST(ExpertParallel, FourAllToAllsPerLayerAndTheRouterAloneIsAllReduced) {
  // dp=4, ep=4, batch 8: 2 tokens per rank, 4 slots, 16,000 B per all-to-all, each taking
  // 3/4 x 16,000 = 12,000 ns. Forward: dispatch 12,000, experts 4,000, combine 12,000; backward:
  // combine-gradient 12,000, data gradient 4,000 (to 44,000), then the weight gradient (4,000) next
  // to the dispatch-gradient all-to-all (12,000). Only the router's 4,000 fp32 gradients (16,000 B)
  // are all-reduced over the 4 replicas (each holds a different expert): a ring of 6 steps of
  // 4,000 B = 24,000 ns from 48,000. Analytic collectives: step = 72,000.
  const StrategyResult r = run("dp=4,ep=4");
  EXPECT_EQ(r.step_time, 72'000);
  EXPECT_EQ(collectives(r.lowered, CollectiveOp::AllToAll, Phase::Forward), 2);
  EXPECT_EQ(collectives(r.lowered, CollectiveOp::AllToAll, Phase::BackwardData), 2);
  const auto& g = r.lowered.graph;
  for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t) {
    if (g.kind(t) == TaskKind::Collective && g.collective_op(t) == CollectiveOp::AllToAll) {
      EXPECT_EQ(g.bytes(t), 16'000);
    }
  }
  EXPECT_EQ(r.devices[0].compute, 12'000);
  // Expanded on the links, the dispatch-gradient all-to-all and the allreduce share the uplinks
  // from 48,000: 3 all-to-all flows and 1 ring flow at 1/4 byte/ns each. The all-to-all has
  // 2/3 x 4,000 B per flow left: done at 58,667; the ring's first step has moved 2,667 of its
  // 4,000 B by then, ends at 60,000, and 5 more steps of 4,000 ns end the step at 80,000.
  // Every device simulated: the hand-derived 80,000. With one representative replica, a message
  // class's representative is capped at its idle rate but does not weigh as the 3 flows it stands
  // for, so it underestimates this contention: 74,667 (docs/simulator.md, Limits).
  EXPECT_EQ(run("dp=4,ep=4", 4, 8, Symmetry::None, simulator::CollectiveMode::Expanded).step_time, 80'000);
  EXPECT_EQ(run("dp=4,ep=4", 4, 8, Symmetry::DataAndTensor, simulator::CollectiveMode::Expanded).step_time, 74'667);
}

TEST(ExpertParallel, BusiestRankSetsTheStep) {
  // imbalance=1.5: the busiest rank gets ceil(1.5 x 4) = 6 slots: 24,000 B all-to-alls (18,000 ns),
  // 6,000 ns per expert phase: 18 + 6 + 18 forward, 18 + 6 data gradient (to 66,000), weight
  // gradient to 72,000, router allreduce 24,000: 96,000.
  const StrategyResult r = run("dp=4,ep=4,imbalance=1.5");
  EXPECT_EQ(r.step_time, 96'000);
  EXPECT_EQ(r.devices[0].compute, 18'000);
  // A capacity factor pads every rank to its capacity whatever the load: 1.25 x 4 / 4 = 2 slots
  // per expert of the rank's tokens (ceil 1.25), 4 x 2 = 8 slots: 32,000 B (24,000 ns), 8,000 ns
  // per phase: 24 + 8 + 24 + 24 + 8 + 8, then the allreduce: 120,000.
  EXPECT_EQ(run("dp=4,ep=4,imbalance=1.5", 4, 8, Symmetry::DataAndTensor, simulator::CollectiveMode::Analytic, 1.25)
                .step_time,
            120'000);
}

TEST(ExpertParallel, ExpertGradientsReduceOverTheReplicasHoldingTheSameExperts) {
  // dp=8, ep=4: replicas 0 and 4 hold the same expert. Per bucket: the router's 16,000 B over all
  // 8 replicas, the expert's 4e6 B over the 2 that share it.
  const StrategyResult r = run("dp=8,ep=4", 8, 16);
  const auto& g = r.lowered.graph;
  std::vector<std::pair<Bytes, std::size_t>> reductions;
  for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t)
    if (g.kind(t) == TaskKind::Collective && g.collective_op(t) == CollectiveOp::AllReduce)
      reductions.emplace_back(g.bytes(t), g.group_devices(g.group(t)).size());
  EXPECT_EQ(reductions, (std::vector<std::pair<Bytes, std::size_t>>{{16'000, 8}, {4'000'000, 2}}));
  for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t) {
    if (g.kind(t) != TaskKind::Collective || g.collective_op(t) != CollectiveOp::AllToAll) continue;
    const auto group = g.group_devices(g.group(t));
    EXPECT_EQ(std::vector<simulator::DeviceId>(group.begin(), group.end()),
              (std::vector<simulator::DeviceId>{0, 1, 2, 3}));
  }
  // Static memory: router 4,000 params and 1 expert (1e6) at 16 B each (fp32 Adam).
  ASSERT_EQ(r.devices.size(), 1u);
  const simulator::MemoryBreakdown& m = r.devices[0].breakdown;
  EXPECT_EQ(m.params + m.grads + m.optimizer, (4'000 + 1'000'000) * 16);
  const StrategyResult z = run("dp=8,ep=4,zero=1", 8, 16);
  // ZeRO-1: the router's optimizer state / 8 replicas, the expert's / 2 (the replicas holding it).
  EXPECT_EQ(z.devices[0].breakdown.optimizer, 4'000 * 8 / 8 + 1'000'000 * 8 / 2);
}

TEST(ExpertParallel, SymmetricReplicaMatchesFullSimulation) {
  const StrategyResult one = run("dp=8,ep=4,imbalance=1.2", 8, 16);
  const StrategyResult all = run("dp=8,ep=4,imbalance=1.2", 8, 16, Symmetry::None);
  EXPECT_EQ(one.step_time, all.step_time);
  EXPECT_EQ(all.devices.size(), 8u);
}

TEST(ExpertParallel, GrammarRoundTripsAndRejectsBadCombinations) {
  const Strategy s = parse_strategy("dp=8,ep=4,imbalance=1.25,zero=1");
  EXPECT_EQ(s.ep, 4);
  EXPECT_DOUBLE_EQ(s.imbalance, 1.25);
  EXPECT_EQ(to_string(s), "dp=8,ep=4,imbalance=1.25,zero=1");
  EXPECT_EQ(parse_strategy(to_string(s)), s);
  EXPECT_EQ(strategy_from_json(strategy_to_json(s), "s.json"), s);
  EXPECT_EQ(input_error([] { parse_strategy("dp=6,ep=4"); }),
            "--strategy: ep=4 must divide dp=6 (expert parallelism splits the data-parallel replicas into groups of "
            "ep)");
  EXPECT_EQ(input_error([] { parse_strategy("dp=4,imbalance=1.2"); }),
            "--strategy: imbalance needs ep > 1 (it is the load of the busiest expert-parallel rank)");
  EXPECT_EQ(input_error([] { parse_strategy("dp=4,ep=4,imbalance=0.5"); }),
            "--strategy: imbalance=0.5: expected the busiest expert-parallel rank's tokens over the mean, a number in "
            "[1, 100]");
}

TEST(ExpertParallel, DenseModelsAndIndivisibleExpertsAreRefused) {
  const models::Model dense = chain_model(2);
  const models::Model moe = moe_model();
  const hardware::Cluster cluster = star_cluster(8, 0, 1.0);
  const SlotCosts costs;
  auto lower = [&](const models::Model& m, const std::string& s) {
    (void)lower_step(
        {.model = &m, .cluster = &cluster, .strategy = parse_strategy(s), .global_batch = 8, .costs = &costs});
  };
  EXPECT_EQ(input_error([&] { lower(dense, "dp=4,ep=2"); }),
            "dp=4,ep=2: model chain has no mixture-of-experts layers (experts ops); expert parallelism (ep > 1) "
            "shards their experts");
  EXPECT_EQ(input_error([&] { lower(moe, "dp=8,ep=8"); }),
            "ep=8: op moe of model moe has 4 experts, not divisible by 8 (each rank of an expert-parallel group "
            "holds experts / ep of them)");
}

/// Experts ops cost their forward MACs / 64 ns in each of the three phases; everything else is free.
class ExpertMacCosts final : public profiler::CostModel {
 public:
  profiler::OpCost cost(const models::Op& op, const std::string&, profiler::Optimizer) const override {
    profiler::OpCost c;
    if (op.kind != models::OpKind::Experts) return c;
    c.fwd = c.bwd_data = c.bwd_weight = op.macs_fwd / 64;
    return c;
  }
  TimeNs memory_pass_ns(Bytes, const std::string&) const override { return 0; }
  std::string describe() const override { return "expert MACs"; }
};

TEST(ExpertParallel, ExpertTensorParallelismSplitsEachExpertOverTheTpRanks) {
  // tiny_moe_config(): 2 layers, 4 experts of SwiGLU width 32, top-2, hidden 64, 16 tokens a
  // sample, fp32. One rank of ep=2 with etp=2 holds the router [4, 64] and 2 experts of 3 x 64 x 16.
  const models::Model m = tiny_moe_transformer();
  const models::Op& split = *[&] {
    static const models::Model r = shard_for_expert_parallel(tiny_moe_transformer(), 2, 1.0, 2);
    return &r.op(*r.find_op("h.0.moe.experts"));
  }();
  EXPECT_EQ(split.attrs.out_features, 16);
  EXPECT_EQ(split.params, 4 * 64 + 2 * 3 * 64 * 16);
  EXPECT_EQ(models::expert_slots(split), 32);  // every token of the TP group: 16 x top-2
  // MACs: the router on the rank's own 16 / 2 tokens, 8 x 4 x 64 = 2,048; the group's 32 slots
  // through 1/2 of each expert, 32 x 3 x 64 x 16 = 98,304.
  EXPECT_EQ(split.attrs.expert_tp, 2);
  EXPECT_EQ(split.macs_fwd, 2'048 + 98'304);
  EXPECT_EQ(
      input_error([&] { (void)shard_for_expert_parallel(m, 2, 1.0, 3); }),
      "etp=3: op h.0.moe.experts of model tiny_moe has experts of FFN width 32, not divisible by 3 (expert tensor "
      "parallelism splits each expert's FFN over the TP ranks)");

  // Megatron-Core's layout is the default with sequence parallelism; etp=1 keeps whole experts.
  EXPECT_TRUE(parse_strategy("tp=2,sp=on").experts_split_over_tp());
  EXPECT_FALSE(parse_strategy("tp=2,sp=on,etp=1").experts_split_over_tp());
  EXPECT_FALSE(parse_strategy("tp=2").experts_split_over_tp());
  EXPECT_EQ(to_string(parse_strategy("dp=2,tp=2,ep=2,etp=2,sp=on")), "dp=2,tp=2,ep=2,etp=2,sp=on");
  const Strategy s = parse_strategy("dp=2,tp=2,ep=2,etp=1,sp=on");
  EXPECT_EQ(strategy_from_json(strategy_to_json(s), "s.json"), s);
  EXPECT_EQ(input_error([] { parse_strategy("tp=4,etp=2,sp=on"); }),
            "--strategy: etp=2: expected 1 (whole experts on every TP rank) or tp=4 (every expert split over the "
            "tensor-parallel ranks)");
  EXPECT_EQ(input_error([] { parse_strategy("tp=2,etp=2"); }),
            "--strategy: etp=2 needs sequence parallelism (sp=on): Megatron-Core refuses MoE layers with tensor "
            "parallelism in training without it");

  // dp=2,tp=2,ep=2 with sequence parallelism on 4 GPUs, batch 2 (a sample per replica).
  const ExpertMacCosts costs;
  const StrategyResult on = simulate_on_star(m, costs, "dp=2,tp=2,ep=2,sp=on", 4, 2);
  const StrategyResult off = simulate_on_star(m, costs, "dp=2,tp=2,ep=2,sp=on,etp=1", 4, 2);
  // Per layer the TP ranks all-gather the group's dispatched slots before the experts and
  // reduce-scatter their output, and the same backward: 32 slots x 64 x 4 B = 8,192 B each. The
  // all-to-alls carry the rank's own 8 tokens' slots: 4,096 B.
  auto count = [](const StrategyResult& r, std::string_view name, Bytes bytes) {
    const auto& g = r.lowered.graph;
    return count_tasks(g, [&](simulator::TaskId t) { return g.name(t) == name && g.bytes(t) == bytes; });
  };
  for (const auto* r : {&on, &off}) EXPECT_EQ(collectives(r->lowered, CollectiveOp::AllToAll, Phase::Forward), 4);
  EXPECT_EQ(count(on, "etp_allgather", 8'192), 4);
  EXPECT_EQ(count(on, "etp_reduce_scatter", 8'192), 4);
  EXPECT_EQ(count(on, "ep_dispatch", 4'096), 2);
  EXPECT_EQ(count(off, "etp_allgather", 8'192) + count(off, "etp_reduce_scatter", 8'192), 0);
  // Compute: split, (2,048 + 98,304) / 64 = 1,568 ns a phase; whole experts, each TP rank runs
  // its 1/2 of the tokens: (4,096 + 196,608) / 64 = 3,136, halved: 1,568 - the same work split
  // the other way. 2 layers x 3 phases.
  EXPECT_EQ(on.devices[0].compute, 6 * 1'568);
  EXPECT_EQ(off.devices[0].compute, 6 * 1'568);
  // Weights: 2 layers x 2 experts x 3 x 64 x 16 fewer parameters a rank, 4 B each.
  EXPECT_EQ(off.devices[0].breakdown.params - on.devices[0].breakdown.params, 2 * 2 * 3 * 64 * 16 * 4);

  // A dense model has no experts to split.
  models::TransformerConfig dense_config = tiny_moe_config();
  dense_config.name = "tiny";
  dense_config.experts = 0;
  const models::Model dense = models::build_transformer(dense_config, {.batch = 1});
  const hardware::Cluster cluster = star_cluster(4, 0, 1.0);
  EXPECT_EQ(input_error([&] {
              (void)lower_step({.model = &dense,
                                .cluster = &cluster,
                                .strategy = parse_strategy("dp=2,tp=2,etp=2,sp=on"),
                                .global_batch = 2,
                                .costs = &costs});
            }),
            "dp=2,tp=2,etp=2,sp=on: model tiny has no mixture-of-experts layers (experts ops); etp says how their "
            "experts are split over the TP ranks");
}

TEST(ExpertParallel, FoldedGroupsSpanTheTpRanksAndTheReplicas) {
  // MoE parallel folding: ep=4 over dp=2 x tp=2 (tiny_moe_config(), 4 experts): one expert-parallel
  // group of all 4 devices (replica r, TP rank t is device 2r + t), each holding 1 whole expert.
  const Strategy folded = parse_strategy("dp=2,tp=2,ep=4,sp=on");
  EXPECT_TRUE(folded.expert_groups_fold_tp());
  EXPECT_EQ(folded.expert_group_replicas(), 2);
  EXPECT_FALSE(folded.experts_split_over_tp());  // auto: whole experts when the groups fold TP in
  EXPECT_EQ(input_error([] { parse_strategy("dp=2,tp=2,ep=4"); }),
            "--strategy: ep=4 over dp=2 x tp=2 (MoE parallel folding) needs sequence parallelism (sp=on): each TP "
            "rank routes its own share of the tokens");
  EXPECT_EQ(input_error([] { parse_strategy("dp=2,tp=2,ep=4,sp=on,etp=2"); }),
            "--strategy: ep=4 over dp=2 x tp=2 (MoE parallel folding) keeps whole experts on every rank; etp=2 would "
            "split them over the TP ranks the expert groups already span (etp=1)");
  EXPECT_EQ(input_error([] { parse_strategy("dp=3,tp=2,ep=4,sp=on"); }),
            "--strategy: ep=4 must divide dp=3 (expert parallelism splits the data-parallel replicas into groups of "
            "ep), or be tp=2 times a divisor of dp (MoE parallel folding: groups of TP ranks x replicas)");
  EXPECT_EQ(input_error([] { parse_strategy("dp=2,tp=2,cp=2,ep=4,sp=on"); }),
            "--strategy: ep=4 over dp=2 x tp=2 (MoE parallel folding) with cp > 1 is not modelled");

  const models::Model m = tiny_moe_transformer();
  const ExpertMacCosts costs;
  const StrategyResult one = simulate_on_star(m, costs, to_string(folded), 4, 2, 1.0, Symmetry::DataAndTensor);
  const StrategyResult all = simulate_on_star(m, costs, to_string(folded), 4, 2, 1.0, Symmetry::None);
  EXPECT_EQ(one.step_time, all.step_time);
  for (const StrategyResult* r : {&one, &all}) {
    const auto& g = r->lowered.graph;
    int all_to_alls = 0, expert_reductions = 0;
    for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t) {
      if (g.kind(t) != TaskKind::Collective) continue;
      const auto group = g.group_devices(g.group(t));
      if (g.collective_op(t) == CollectiveOp::AllToAll) {
        // One per group, not per TP rank: the rank's 8 tokens x top-2 x 64 x 4 B.
        ++all_to_alls;
        EXPECT_EQ(g.bytes(t), 4'096);
        EXPECT_EQ(std::vector<simulator::DeviceId>(group.begin(), group.end()),
                  (std::vector<simulator::DeviceId>{0, 1, 2, 3}));
      }
      if (g.name(t).starts_with("expert_grads")) ++expert_reductions;
    }
    EXPECT_EQ(all_to_alls, 8);        // 2 layers x (dispatch, combine) x (forward, backward)
    EXPECT_EQ(expert_reductions, 0);  // every device holds a different expert
  }
  // Weights a rank holds in its experts ops: router 4 x 64 and 1 expert of 3 x 64 x 32, 2 layers.
  const models::Model rank =
      shard_for_expert_parallel(models::build_transformer(tiny_moe_config(), {.batch = 1}), 4, 1.0);
  EXPECT_EQ(rank.op(*rank.find_op("h.0.moe.experts")).params, 4 * 64 + 3 * 64 * 32);
}

TEST(ExpertParallel, OverlapMergesAForwardWithAnotherMicroBatchsBackward) {
  // moe_model() on dp=4,mp=2,ep=4, 1F1B, 4 micro-batches of one sample, every device simulated.
  // Without ep_overlap the last stage runs F0 B0 F1 B1 ... as one chain: F1's first compute task
  // waits for B0's last. With it, B0 and F1 are one merged unit, both chained after F0 alone, so
  // F1's forward may run while B0 waits for its all-to-alls.
  const models::Model model = moe_model();
  const SlotCosts costs;
  auto simulate = [&](const std::string& strategy, double gbps) {
    return simulate_on_star(model, costs, strategy, 8, 16, gbps, Symmetry::None);
  };
  const std::string base = "dp=4,mp=2,ep=4,schedule=1f1b,micro=4";
  for (const bool overlap : {false, true}) {
    const StrategyResult r = simulate(base + (overlap ? ",ep_overlap=on" : ""), 4.0);
    const auto& g = r.lowered.graph;
    const simulator::DeviceId last_stage = r.lowered.graph.device([&] {
      for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t)
        if (g.kind(t) == TaskKind::Compute && g.name(t) == "moe") return t;
      return simulator::TaskId{0};
    }());
    auto compute = [&](int mb, Phase phase, bool first) {
      simulator::TaskId found = simulator::kNoTask;
      for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t)
        if (g.kind(t) == TaskKind::Compute && g.device(t) == last_stage && g.microbatch(t) == mb &&
            g.phase(t) == phase) {
          found = t;
          if (first) break;
        }
      return found;
    };
    const simulator::TaskId b0_last = compute(0, Phase::BackwardWeight, false);
    const simulator::TaskId f1_first = compute(1, Phase::Forward, true);
    const simulator::TaskId f0_last = compute(0, Phase::Forward, false);
    ASSERT_NE(b0_last, simulator::kNoTask);
    ASSERT_NE(f1_first, simulator::kNoTask);
    const auto deps = g.deps(f1_first);
    const bool after_b0 = std::find(deps.begin(), deps.end(), b0_last) != deps.end();
    const bool after_f0 = std::find(deps.begin(), deps.end(), f0_last) != deps.end();
    EXPECT_EQ(after_b0, !overlap) << (overlap ? "overlap" : "chain");
    EXPECT_EQ(after_f0, overlap) << (overlap ? "overlap" : "chain");
  }
  // Where the experts' compute is comparable to their all-to-alls (4 GB/s links), hiding one
  // behind the other shortens the step; where the all-to-alls dominate (1 GB/s) there is nothing
  // to hide them behind, and the reordered all-to-alls contend a little more.
  EXPECT_LT(simulate(base + ",ep_overlap=on", 4.0).step_time, simulate(base, 4.0).step_time);
  EXPECT_EQ(input_error([] { parse_strategy("dp=4,ep_overlap=on"); }),
            "--strategy: ep_overlap=on needs ep > 1 (it hides the expert-parallel all-to-alls)");
  EXPECT_EQ(input_error([] { parse_strategy("dp=4,ep=4,ep_overlap=on"); }),
            "--strategy: ep_overlap=on needs schedule=1f1b or interleaved (it merges a steady-state forward with a "
            "backward of another micro-batch)");
  const Strategy s = parse_strategy(base + ",ep_overlap=on");
  EXPECT_EQ(to_string(s), base + ",ep_overlap=on");
  EXPECT_EQ(strategy_from_json(strategy_to_json(s), "s.json"), s);
}

TEST(ExpertParallel, StageGranularitySumsAChunksAllToAllsPerPhase) {
  // 2 MoE layers (4 experts, top-2), hidden 64, 16 tokens per sample, fp32; batch 4 on dp=2:
  // 32 tokens per rank, 64 slots, 64 x 64 x 4 = 16,384 B per all-to-all.
  const models::Model m = tiny_moe_transformer();
  const hardware::Cluster cluster = star_cluster(2, 0, 1.0);
  const profiler::RooflineCostModel roofline;
  auto lower = [&](Granularity g) {
    return lower_step({.model = &m,
                       .cluster = &cluster,
                       .strategy = parse_strategy("dp=2,ep=2"),
                       .global_batch = 4,
                       .costs = &roofline,
                       .granularity = g});
  };
  auto all_to_alls = [](const LoweredStep& s) {
    std::vector<std::pair<Phase, Bytes>> out;
    const auto& g = s.graph;
    for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t)
      if (g.kind(t) == TaskKind::Collective && g.collective_op(t) == CollectiveOp::AllToAll)
        out.emplace_back(g.phase(t), g.bytes(t));
    return out;
  };
  const LoweredStep op = lower(Granularity::Op);
  EXPECT_EQ(all_to_alls(op).size(), 8u);  // 2 layers x (dispatch, combine) x (forward, backward)
  for (const auto& [phase, bytes] : all_to_alls(op)) EXPECT_EQ(bytes, 16'384);
  const LoweredStep stage = lower(Granularity::Stage);
  EXPECT_EQ(all_to_alls(stage),
            (std::vector<std::pair<Phase, Bytes>>{{Phase::Forward, 65'536}, {Phase::BackwardData, 65'536}}));
}

TEST(ExpertParallel, WithContextParallelismEachCpRankRoutesItsShareOfTheSequence) {
  // The 2-layer MoE transformer of the test above on dp=4,cp=2,ep=2 (8 GPUs), batch 4: each CP
  // rank holds 8 of a sample's 16 tokens, so an all-to-all carries half the bytes of cp=1:
  // 8 tokens x 2 slots x 64 x 4 B = 4,096 B, among the same CP rank of the ep=2 replicas (devices
  // 0 and 2: replica r, CP rank c is device 2r + c). The expert gradients are reduced over every
  // CP rank of the replicas holding the same experts (replicas 0 and 2: devices 0, 1, 4, 5), the
  // rest over all DP x CP ranks.
  const models::Model m = tiny_moe_transformer();
  const hardware::Cluster cluster = star_cluster(8, 0, 1.0);
  const profiler::RooflineCostModel roofline;
  const LoweredStep s = lower_step({.model = &m,
                                    .cluster = &cluster,
                                    .strategy = parse_strategy("dp=4,cp=2,ep=2"),
                                    .global_batch = 4,
                                    .costs = &roofline});
  const auto& g = s.graph;
  int all_to_alls = 0;
  std::set<std::vector<simulator::DeviceId>> reduce_groups;
  for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t) {
    if (g.kind(t) != TaskKind::Collective) continue;
    const auto group = g.group_devices(g.group(t));
    const std::vector<simulator::DeviceId> devices(group.begin(), group.end());
    if (g.collective_op(t) == CollectiveOp::AllToAll) {
      ++all_to_alls;
      EXPECT_EQ(g.bytes(t), 4'096);
      EXPECT_EQ(devices, (std::vector<simulator::DeviceId>{0, 2}));
    } else if (g.collective_op(t) == CollectiveOp::AllReduce) {
      reduce_groups.insert(devices);
    }
  }
  EXPECT_EQ(all_to_alls, 8);  // 2 layers x (dispatch, combine) x (forward, backward)
  EXPECT_EQ(reduce_groups, (std::set<std::vector<simulator::DeviceId>>{{0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 4, 5}}));
}

TEST(ExpertParallel, PlannerTriesEpWhereItDividesDpAndTheExperts) {
  const models::Model m = moe_model();
  const ModelFacts facts = model_facts(m, 8);
  EXPECT_EQ(facts.experts, 4);
  EXPECT_EQ(facts.expert_params, 4'000'000);
  const SearchSpace space{.gpus = 8, .global_batch = 16};
  EXPECT_EQ(expert_parallel_widths(space, facts, 8), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(expert_parallel_widths(space, facts, 6), (std::vector<int>{1, 2}));
  // Folded over tp=2: 2 x 2 = 4 does not divide dp=6 (2 x 1 = 2 and 2 x 3 = 6 do or miss the experts).
  EXPECT_EQ(expert_parallel_widths(space, facts, 6, 2), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(expert_parallel_widths(space, facts, 1, 4), (std::vector<int>{1, 4}));
  // The candidates: folded groups only with sequence parallelism (selective recomputation, or
  // the fewest layers' full recomputation, which runs sequence parallel under TP).
  const ModelFacts moe_facts = model_facts(tiny_moe_transformer(), 8);
  int folded = 0, fewest_layers = 0;
  for (const Candidate& c : enumerate_candidates(SearchSpace{.gpus = 4, .global_batch = 4}, moe_facts)) {
    if (!c.strategy.expert_groups_fold_tp()) continue;
    ++folded;
    fewest_layers += c.fewest_recompute_layers ? 1 : 0;
    EXPECT_TRUE(c.strategy.sequence_parallel()) << to_string(c.strategy);
    EXPECT_EQ(c.strategy.recompute, c.fewest_recompute_layers ? Recompute::Full : Recompute::Selective)
        << to_string(c.strategy);
  }
  EXPECT_GT(folded, 0);
  EXPECT_GT(fewest_layers, 0);
  EXPECT_EQ(expert_parallel_widths(SearchSpace{.expert_parallel = false}, facts, 8), (std::vector<int>{1}));
  EXPECT_EQ(expert_parallel_widths(space, model_facts(chain_model(2), 8), 8), (std::vector<int>{1}));
}

TEST(ExpertParallel, PlannerPicksEpWhenOnlySharedExpertsFitAndSaysWhy) {
  // fp32 SGD: 8 B per parameter. Replicated, the 4,004,000 parameters need 32 MB; ep=2 16 MB;
  // ep=4 8.03 MB, the only split that fits in 12 MiB.
  const models::Model m = moe_model();
  const hardware::Cluster cluster = star_cluster(4, 0, 1.0, "V100-SXM2-32GB", 12 * MiB);
  const SlotCosts costs;
  PlanRequest req{.model = &m,
                  .cluster = &cluster,
                  .costs = &costs,
                  .optimizer = profiler::Optimizer::Sgd,
                  .efficiency = StatisticalEfficiency::none(1, "test"),
                  .dataset_samples = 1000,
                  .space = SearchSpace{.gpus = 4, .global_batch = 8, .zeros = {0}},
                  .collective_costs = simulator::CollectiveCosts::Links,
                  .threads = 1};
  const PlanResult plan = run_planner(req);
  ASSERT_FALSE(plan.rows.empty());
  ASSERT_TRUE(plan.rows.front().feasible());
  EXPECT_EQ(to_string(plan.rows.front().strategy), "dp=4,ep=4");
  for (const PlanRow& r : plan.rows) EXPECT_EQ(r.feasible(), r.strategy.ep == 4) << to_string(r.strategy);
  const std::string why = explain_plan(plan);
  EXPECT_NE(why.find("Expert parallelism (ep=4) splits every MoE layer's experts over 4 data-parallel ranks"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("without it nothing fits"), std::string::npos) << why;
}

}  // namespace
}  // namespace parasim::strategies
