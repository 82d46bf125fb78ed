// The dataflow graph (DFG) of one training iteration's forward pass.
//
// Vertices are ops, edges are tensors (producer -> consumer). Every op carries the numbers the
// rest of parasim needs: shapes, forward/backward MACs, bytes moved, parameters and the
// activation bytes it keeps alive until its backward runs. Backward and update are derived
// from the forward graph (reverse topological order), never stored as separate vertices.
//
// Example:
//   Model m = build_zoo_model("resnet50", ModelOptions{.batch = 32});
//   std::cout << m.total_params() << "\n";                 // 25557032
//   for (OpId v : m.topological_order()) std::cout << m.op(v).name << "\n";
//   auto path = m.longest_path([](const Op& op) { return op.macs_fwd; });   // critical path by MACs
//
// Conventions (docs/models.md has the full table): costs count multiply-accumulates (MACs), not
// FLOPs (FLOPs = 2 x MACs); only matmul/conv-like ops have MACs; bytes are dtype-sized.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "parasim/common/dtype.hpp"

namespace parasim::models {

// DType lives in common/ (hardware/ needs it too); models:: keeps its names.
using parasim::DType;
using parasim::dtype_size;
using parasim::parse_dtype;
using parasim::to_string;

enum class OpKind : std::uint8_t {
  Input,          // the mini-batch (data) or token ids; no cost, no backward
  Conv2d,         // NCHW; attrs: kernel, stride, padding, dilation, groups, out_channels, bias
  Linear,         // y = x W^T (+ b) over the last dim; attrs: out_features, bias
  Matmul,         // C = A B with two activation inputs (no parameters)
  BatchedMatmul,  // batched C = A B (attention scores and context); no parameters
  Lstm,           // one LSTM layer over a sequence [B, T, in]; attrs: hidden, proj (0 = none)
  Embedding,      // token ids [B, T] -> [B, T, dim]; attrs: vocab, out_features (dim)
  MaxPool2d,      // attrs: kernel, stride, padding (ceil_mode in attrs.ceil_mode)
  AvgPool2d,
  AdaptiveAvgPool2d,  // attrs: output size in kernel_h/kernel_w
  BatchNorm,          // per-channel scale/shift (2 params per channel); running stats are buffers
  LayerNorm,          // over the last dim; 2 params per feature
  Relu,
  Gelu,
  Tanh,
  Sigmoid,
  Add,     // elementwise sum of >= 2 same-shaped inputs
  Mul,     // elementwise product (gates)
  Concat,  // along attrs.axis
  Dropout,
  Softmax,         // over the last dim
  CrossEntropy,    // logits [N, C] + implicit labels -> scalar loss
  SampledSoftmax,  // LM loss over a sampled subset: attrs: vocab, num_sampled; owns the softmax weights
  Reshape,         // view/flatten/transpose bookkeeping: no FLOPs, no bytes moved
  Attention,       // fused multi-head attention core: QK^T, softmax, AV (no projections);
                   // attrs: heads, additive. Inputs: one packed qkv [B, T, 3D] (self-attention)
                   // or q [B, Tq, D], k [B, Tk, D], v [B, Tk, Dv]. Its MACs are those of the two
                   // batched matmuls. Grouped-query attention: attrs.kv_heads < heads, packed
                   // input [B, T, (heads + 2 kv_heads) * head_dim].
  RmsNorm,         // RMSNorm over the last dim (Zhang & Sennrich 2019): 1 param (scale) per feature
  Swiglu,          // silu(gate) * up over a fused [..., 2F] gate|up input -> [..., F] (Shazeer 2020)
  SquaredRelu,     // relu(x)^2 (So et al. 2021, Primer; Nemotron-4's MLP activation)
  Rotary,          // rotary position embedding (Su et al. 2021) on the q and k parts of a packed
                   // q|k|v tensor; attrs: heads, kv_heads. No parameters; elementwise cost.
  Experts,         // mixture-of-experts MLP bank with its router (Shazeer et al. 2017; Fedus et al.
                   // 2021): [B, T, D] -> [B, T, D]; attrs: experts, top_k, out_features (expert
                   // width), gated (3 matrices, SwiGLU), capacity_factor (0 = dropless).
  Gather,          // [B, T, D] -> [B, P, D]: attrs.positions (P <= T) of each sample's T positions
                   // (torch.index_select on the sequence axis: BERT's masked-LM head runs on the
                   // masked tokens only). No parameters; which positions does not change the cost.
};

std::string to_string(OpKind k);
std::optional<OpKind> parse_op_kind(std::string_view s);
/// Every kind, in declaration order (for "known kinds: ..." messages).
std::vector<OpKind> all_op_kinds();

/// Bytes per index of a gather op: torch.index_select takes int64 indices.
inline constexpr std::int64_t kGatherIndexBytes = 8;

using Shape = std::vector<std::int64_t>;
std::int64_t num_elements(const Shape& s);  // throws InputError on overflow or negative dims
std::string to_string(const Shape& s);       // "[32, 64, 56, 56]"

/// Op hyper-parameters. Unused fields stay at their defaults; the JSON format writes only
/// the fields that matter for the op's kind.
struct OpAttrs {
  std::int64_t kernel_h = 0, kernel_w = 0;
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_h = 0, pad_w = 0;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t groups = 1;
  bool ceil_mode = false;
  std::int64_t out_features = 0;  // conv out_channels, linear out_features, embedding dim
  bool bias = false;
  std::int64_t hidden = 0;        // LSTM hidden units
  std::int64_t proj = 0;          // LSTM projection size (0 = no projection)
  std::int64_t vocab = 0;         // embedding / sampled softmax vocabulary
  std::int64_t num_sampled = 0;   // sampled softmax negatives
  std::int64_t heads = 0;         // attention heads
  std::int64_t kv_heads = 0;      // attention/rotary: key/value heads (grouped-query); 0 = heads
  std::int64_t axis = 1;          // concat axis
  double p = 0.0;                 // dropout probability
  std::int64_t in_features = 0;   // linear in_features (the builder fills it in from the input)
  bool reverse = false;           // LSTM runs over the sequence backwards (2nd half of a bidirectional layer)
  bool additive = false;          // attention: Bahdanau score v.tanh(q + k + b) instead of q.k; owns v, b, g
  bool causal = false;            // attention: each query sees only the keys before it (decoder self-attention)
  bool norm_bias = true;          // layer norm: learned shift (beta); false in bias-free models
  bool residual = false;          // add: on a transformer's residual stream (fp32 under torch.autocast)
  bool fused = false;             // cross_entropy: one fused kernel (flash-attn's xentropy): no fp32 copy
  std::int64_t experts = 0;       // experts: number of experts E
  std::int64_t top_k = 0;         // experts: experts each token is routed to
  bool gated = false;             // experts: SwiGLU experts (gate, up, down) instead of two matrices
  double capacity_factor = 0.0;   // experts: slots per expert = ceil(cf x tokens x top_k / E); 0 = dropless
  std::int64_t positions = 0;     // gather: positions P selected along the sequence axis
  // Expert parallelism (set on one rank's copy by strategies::shard_for_expert_parallel): the rank
  // holds experts / expert_shards experts; dropless, it computes ceil(expert_load x tokens x top_k)
  // slots (the busiest rank of its group gets expert_load x the mean). 1 and 1.0: no EP.
  std::int64_t expert_shards = 1;
  double expert_load = 1.0;
  // Expert tensor parallelism (shard_for_expert_parallel with etp > 1): the op holds 1/expert_tp of
  // each expert's FFN and computes every slot of its TP group, but routes (router, permutation and
  // unpermutation) only its own tokens / expert_tp, before the all-to-all (Megatron-Core). 1: none.
  std::int64_t expert_tp = 1;
  /// Name of the op whose weight matrix this op reuses (tied LM head -> token embedding, shared
  /// encoder/decoder embeddings). Such an op has no parameters of its own except a bias, but its
  /// weight gradient still flows into the owner's parameters.
  std::string shares_weights_with;
  bool operator==(const OpAttrs&) const = default;
};

struct Op {
  std::string name;                  // unique within a model, e.g. "layer1.0.conv1"
  OpKind kind = OpKind::Input;
  DType dtype = DType::F32;
  std::vector<Shape> input_shapes;   // in edge order
  Shape output_shape;
  OpAttrs attrs;
  /// Enclosing module path ("Mixed_5b", "encoder.layer3"); used for branch placement,
  /// tensor-parallel grouping and reporting. Empty for top-level ops.
  std::string block;

  // Costs of one forward/backward of this op for the batch the model was built with.
  std::int64_t macs_fwd = 0;
  std::int64_t macs_bwd_data = 0;    // gradient w.r.t. inputs
  std::int64_t macs_bwd_weight = 0;  // gradient w.r.t. parameters
  std::int64_t bytes_read = 0;       // forward: inputs + weights read
  std::int64_t bytes_written = 0;    // forward: output written
  std::int64_t params = 0;           // trainable parameters
  std::int64_t activation_bytes = 0; // bytes kept alive from forward until this op's backward
  /// Working memory beyond what the op keeps, alive only while its forward (or its backward) runs;
  /// non-zero for the loss, whose vocabulary-wide fp32 tensors set an LM step's peak (op_costs.cpp).
  std::int64_t transient_fwd_bytes = 0;
  std::int64_t transient_bwd_bytes = 0;

  bool operator==(const Op&) const = default;

  /// Key that identifies ops with identical cost: kind, dtype, shapes and the attrs that matter.
  /// Two ops with the same signature take the same time on the same device.
  std::string signature() const;
  /// signature() without a causal attention's mask: the key profiles record it under where they
  /// were taken before the mask was an attribute. parasim's own kernels compute the whole score
  /// matrix either way, so a profile's time holds for both.
  std::string signature_unmasked() const;
};

/// Token slots an `experts` op runs through its experts (tokens x top_k dropless, scaled by the
/// expert-parallel load; else the padded capacity E x ceil(cf x tokens x top_k / E)); 0 for other ops.
std::int64_t expert_slots(const Op& op);

/// Tokens an `experts` op's router scores and permutes: all of its input's, or its own
/// ceil(tokens / expert_tp) when its experts are split over the TP ranks; 0 for other ops.
std::int64_t expert_router_tokens(const Op& op);

/// FP8 training (DType::FP8; docs/models.md "FP8 matmuls"): whether `op` multiplies in FP8 - a
/// Linear or Experts op inside a block (a transformer layer's te.Linear). Everything else of an
/// fp8 model (LM head, embeddings, attention core, elementwise ops) runs in bf16.
bool fp8_gemm(const Op& op);

/// What an op's activation_bytes keeps of its neighbours' tensors (op_costs.cpp): all its inputs
/// as they are (a GEMM's, a norm's, an activation's) or its own output (ReLU, tanh, sigmoid,
/// softmax; max-pool both). A tensor kept by several ops is stored once: the lowering charges it to
/// one of them (strategies/src/prepare_variants.cpp).
bool keeps_its_inputs(const Op& op);
bool keeps_its_output(const Op& op);

struct Tensor {
  Shape shape;
  DType dtype = DType::F32;
  std::int64_t bytes = 0;
  /// Which input of the consumer this tensor is (0-based): concat order, matmul A vs B.
  std::int32_t input_index = 0;
  bool operator==(const Tensor&) const = default;
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Op, Tensor>;
using OpId = Graph::vertex_descriptor;
using TensorId = Graph::edge_descriptor;

/// A model: its forward DFG plus what it was built for.
class Model {
 public:
  Model() = default;
  Model(std::string name, std::int64_t batch, DType dtype) : name_(std::move(name)), batch_(batch), dtype_(dtype) {}
  // Boost 1.74's adjacency_list has no move constructor (a move copies every op and tensor), so
  // the graph lives behind a pointer: moving a Model (ModelBuilder::finish, returning one, a
  // make_shared of one) moves the pointer. A moved-from Model reads as an empty graph.
  Model(const Model& o);
  Model& operator=(const Model& o);
  Model(Model&& o) noexcept = default;
  Model& operator=(Model&& o) noexcept = default;
  ~Model() = default;

  const std::string& name() const { return name_; }
  std::int64_t batch() const { return batch_; }
  DType dtype() const { return dtype_; }
  /// Dataset this model trains on by default ("imagenet-1k", "cifar-10", "wmt16-en-de", "lm1b", "" for none).
  const std::string& dataset() const { return dataset_; }
  void set_dataset(std::string d) { dataset_ = std::move(d); }

  Graph& graph() {
    if (!graph_) graph_ = std::make_unique<Graph>();
    return *graph_;
  }
  const Graph& graph() const { return graph_ ? *graph_ : empty_graph(); }
  std::size_t num_ops() const { return boost::num_vertices(graph()); }
  const Op& op(OpId v) const { return graph()[v]; }
  Op& op(OpId v) { return graph()[v]; }
  /// Finds an op by name; nullopt if there is none. Linear in the number of ops.
  std::optional<OpId> find_op(const std::string& name) const;
  /// Producers of `v`'s inputs, in input order (input_index).
  std::vector<OpId> inputs_of(OpId v) const;
  /// Ops that consume `v`'s output, in edge order (duplicates removed).
  std::vector<OpId> consumers_of(OpId v) const;

  std::int64_t total_params() const;
  std::int64_t total_macs_fwd() const;         // for the whole batch
  std::int64_t macs_per_sample() const;        // total_macs_fwd / batch
  std::int64_t total_activation_bytes() const;
  /// Number of ops that carry parameters (conv, linear, lstm, embedding, norms...): "layers".
  std::int64_t num_weighted_layers() const;

  /// Topological order (Boost.Graph). Throws InputError naming the ops on a cycle if there is one.
  std::vector<OpId> topological_order() const;
  /// Ops on one cycle, in order, if the graph has a cycle; empty otherwise.
  std::vector<OpId> find_cycle() const;
  /// Longest path through the DAG with vertex weight `weight(op)`; returns the ops on it in order.
  template <class WeightFn>
  std::vector<OpId> longest_path(WeightFn weight) const;

  /// Same name, batch, dtype, dataset, the same ops in the same vertex order and the same edges
  /// (targets and tensors) in the same order.
  bool operator==(const Model& o) const;

 private:
  std::string name_;
  std::int64_t batch_ = 1;
  DType dtype_ = DType::F32;
  std::string dataset_;
  std::unique_ptr<Graph> graph_;  // null: empty (default-constructed or moved from)
  static const Graph& empty_graph();
};

/// Marks every cross_entropy op of `m` as one fused kernel (or not) and recomputes what it keeps:
/// flash-attn's xentropy (LLM Foundry's default loss) or Megatron-Core's cross-entropy fusion keep
/// the 16-bit logits and a log-sum-exp per row, with no fp32 copy (op_costs.cpp). Memory only.
void set_fused_loss(Model& m, bool fused);
/// Whether `m` has a dot-product attention core: what fused attention kernels (--attention flash)
/// replace. Additive attention (GNMT's) runs as it is whatever the choice.
bool has_dot_product_attention(const Model& m);
/// Whether `m` has a mixture-of-experts bank (an `experts` op), whose routing kernels --moe-kernels chooses.
bool has_experts(const Model& m);

template <class WeightFn>
std::vector<OpId> Model::longest_path(WeightFn weight) const {
  using W = std::decay_t<std::invoke_result_t<WeightFn&, const Op&>>;
  const std::vector<OpId> order = topological_order();
  if (order.empty()) return {};
  const std::size_t n = num_ops();
  std::vector<W> dist(n, W{});
  std::vector<std::optional<OpId>> pred(n);
  for (OpId v : order) {
    // Best predecessor; ties keep the first in-edge so the result is deterministic.
    std::optional<OpId> best;
    for (auto [e, end] = boost::in_edges(v, graph()); e != end; ++e) {
      const OpId u = boost::source(*e, graph());
      if (!best || dist[u] > dist[*best]) best = u;
    }
    dist[v] = weight(graph()[v]) + (best ? dist[*best] : W{});
    pred[v] = best;
  }
  // Among equally long paths take the one ending latest in topological order, so zero-weight
  // tails (the loss) stay on the path.
  OpId last = order.front();
  for (OpId v : order)
    if (dist[v] >= dist[last]) last = v;
  std::vector<OpId> path{last};
  while (pred[path.back()]) path.push_back(*pred[path.back()]);
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace parasim::models
