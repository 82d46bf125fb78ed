// Hand-checkable inputs for the lowering tests: a cost model with round numbers, small chain
// models and tiny clusters with round latency/bandwidth.
#pragma once

#include <functional>
#include <string>

#include "parasim/common/error.hpp"
#include "parasim/hardware/cluster.hpp"
#include "parasim/models/builder.hpp"
#include "parasim/models/transformer.hpp"
#include "parasim/profiler/cost_model.hpp"
#include "parasim/profiler/profile_cost_model.hpp"
#include "parasim/simulator/task_graph.hpp"
#include "parasim/strategies/lowering.hpp"
#include "support/input_error.hpp"
#include "support/star_cluster.hpp"

namespace parasim::strategies::testing {

/// Linear ops cost `fwd`, `bwd_data`, `bwd_weight` ns per sample and `update` ns; every other
/// op is free. Sources are reported as roofline.
class FakeCosts final : public profiler::CostModel {
 public:
  TimeNs fwd = 1000, bwd_data = 1000, bwd_weight = 1000, update = 0;
  profiler::OpCost cost(const models::Op& op, const std::string&, profiler::Optimizer) const override {
    profiler::OpCost c;
    if (op.kind != models::OpKind::Linear) return c;
    const std::int64_t b = profiler::op_batch(op);
    c.fwd = fwd * b;
    c.bwd_data = profiler::op_has_phase(op, profiler::Phase::BackwardData) ? bwd_data * b : 0;
    c.bwd_weight = bwd_weight * b;
    c.update = update;
    return c;
  }
  /// Gradient accumulation: `accumulate_ns_per_byte` x bytes (0 by default, so hand-computed steps
  /// elsewhere need not count it).
  TimeNs accumulate_ns_per_byte = 0;
  TimeNs memory_pass_ns(Bytes bytes, const std::string&) const override { return accumulate_ns_per_byte * bytes; }
  std::string describe() const override { return "fake"; }
};

/// x [batch, width] -> relu -> fc1 .. fcN (width x width, no bias) -> cross entropy. The relu
/// makes fc1's input a non-data tensor, so every fc has the same phases.
inline models::Model chain_model(int layers, std::int64_t width = 1000, std::int64_t batch = 1,
                                 models::DType dtype = models::DType::F32) {
  models::ModelBuilder b("chain", batch, dtype);
  models::OpId x = b.input("x", {batch, width});
  x = b.relu("relu", x);
  for (int i = 1; i <= layers; ++i) x = b.linear("fc" + std::to_string(i), x, width, width, /*bias=*/false);
  b.cross_entropy("loss", x);
  return b.finish();
}

/// A GPT of `layers` tiny layers: hidden 64, 4 heads, vocabulary 128, `seq_len` tokens.
inline models::Model tiny_gpt_model(int layers, std::int64_t seq_len, std::int64_t batch = 1,
                                    models::DType dtype = models::DType::F32) {
  models::TransformerConfig c;
  c.name = "tiny_gpt";
  c.layers = layers;
  c.hidden = 64;
  c.heads = 4;
  c.seq_len = seq_len;
  c.vocab = 128;
  return models::build_transformer(c, {.batch = batch, .dtype = dtype});
}

/// 2 MoE layers (4 SwiGLU experts of width 32, top-2), hidden 64, 4 heads, 16 tokens per sample,
/// vocabulary 128: the expert- and tensor-parallel tests' tiny MoE transformer, before their tweaks.
inline models::TransformerConfig tiny_moe_config() {
  models::TransformerConfig c;
  c.name = "tiny_moe";
  c.layers = 2;
  c.hidden = 64;
  c.heads = 4;
  c.seq_len = 16;
  c.vocab = 128;
  c.mlp = models::MlpKind::Swiglu;
  c.experts = 4;
  c.top_k = 2;
  c.moe_ffn = 32;
  return c;
}

using test_support::star_cluster;

using test_support::input_error;

inline int count_tasks(const simulator::TaskGraph& g, const std::function<bool(simulator::TaskId)>& pred) {
  int n = 0;
  for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t) n += pred(t) ? 1 : 0;
  return n;
}

}  // namespace parasim::strategies::testing
