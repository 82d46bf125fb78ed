// ModelBuilder: builds a Model op by op with shape inference and cost computation.
//
// Every method infers the output shape from the inputs and attributes and fails loudly
// (InputError naming the op, its input shapes and what was expected) on inconsistent shapes.
// Ops are stored in creation order, which is therefore always a topological order.
//
// Example:
//   ModelBuilder b("tiny", /*batch=*/8, DType::F32);
//   OpId x = b.input("image", {8, 3, 32, 32});
//   {
//     auto scope = b.block("stem");                     // ops below get block "stem"
//     x = b.conv2d("stem.conv", x, 16, /*kernel=*/3, /*stride=*/1, /*padding=*/1);
//     x = b.relu("stem.relu", x);
//   }
//   x = b.flatten("flatten", x);
//   x = b.linear("fc", x, 16 * 32 * 32, 10);
//   b.cross_entropy("loss", x);
//   Model m = b.finish();
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "parasim/models/graph.hpp"

namespace parasim::models {

/// A (height, width) pair; an integer means the same value for both, as in PyTorch.
struct Hw {
  std::int64_t h = 0;
  std::int64_t w = 0;
  Hw(std::int64_t both) : h(both), w(both) {}  // NOLINT: implicit on purpose, like PyTorch's int-or-tuple
  Hw(std::int64_t height, std::int64_t width) : h(height), w(width) {}
};

class ModelBuilder {
 public:
  ModelBuilder(std::string model_name, std::int64_t batch = 1, DType dtype = DType::F32);

  /// RAII block scope: ops created while it lives get Op::block = enclosing blocks joined by
  /// "/" ("Mixed_5b/branch3x3dbl").
  class BlockScope {
   public:
    explicit BlockScope(ModelBuilder& b) : builder_(&b) {}
    BlockScope(BlockScope&& o) noexcept : builder_(o.builder_) { o.builder_ = nullptr; }
    BlockScope(const BlockScope&) = delete;
    BlockScope& operator=(const BlockScope&) = delete;
    BlockScope& operator=(BlockScope&&) = delete;
    ~BlockScope() {
      if (builder_) builder_->pop_block();
    }

   private:
    ModelBuilder* builder_;
  };
  [[nodiscard]] BlockScope block(const std::string& name);
  void push_block(const std::string& name);
  void pop_block();
  const std::string& current_block() const;

  // ---- data
  OpId input(const std::string& name, Shape shape);

  // ---- weighted layers
  OpId conv2d(const std::string& name, OpId x, std::int64_t out_channels, Hw kernel, Hw stride = 1, Hw padding = 0,
              std::int64_t groups = 1, Hw dilation = 1, bool bias = true);
  /// nn.Linear(in_features, out_features) over the last dimension of x.
  OpId linear(const std::string& name, OpId x, std::int64_t in_features, std::int64_t out_features, bool bias = true);
  /// A linear layer that reuses the weight of `weight_owner` (an embedding: tied LM head).
  OpId linear_tied(const std::string& name, OpId x, const std::string& weight_owner, bool bias = false);
  OpId lstm(const std::string& name, OpId x, std::int64_t hidden, std::int64_t proj = 0, bool bias = true,
            bool reverse = false);
  OpId embedding(const std::string& name, OpId ids, std::int64_t vocab, std::int64_t dim);
  /// An embedding lookup into the table of `weight_owner` (shared encoder/decoder embeddings).
  OpId embedding_shared(const std::string& name, OpId ids, const std::string& weight_owner);
  OpId batch_norm(const std::string& name, OpId x);
  /// `bias` = false: no learned shift (PyTorch's LayerNorm(bias=False)), half the parameters.
  OpId layer_norm(const std::string& name, OpId x, bool bias = true);
  OpId rms_norm(const std::string& name, OpId x);

  // ---- activation x activation products
  OpId matmul(const std::string& name, OpId a, OpId b);
  OpId batched_matmul(const std::string& name, OpId a, OpId b);
  /// Self-attention core over a packed [B, T, 3D] q|k|v tensor, or with kv_heads > 0 grouped-query
  /// attention over [B, T, (heads + 2 kv_heads) * head_dim].
  /// `dropout`: probability of the dropout on the attention probabilities (0 = none); `causal`: each
  /// query attends only to the keys up to its own position (a decoder's self-attention).
  OpId attention(const std::string& name, OpId qkv, std::int64_t heads, std::int64_t kv_heads = 0, double dropout = 0.0,
                 bool causal = false);
  /// Mixture-of-experts MLP bank with its router: `experts` experts of width `width` (gated: SwiGLU,
  /// 3 matrices; else 2), each token routed to `top_k`; capacity_factor 0 = dropless.
  OpId experts(const std::string& name, OpId x, std::int64_t experts, std::int64_t top_k, std::int64_t width,
               bool gated, double capacity_factor = 0.0);
  /// Rotary position embedding of the q and k heads of a packed q|k|v tensor (same layout).
  OpId rotary(const std::string& name, OpId qkv, std::int64_t heads, std::int64_t kv_heads = 0);
  /// Attention core over separate q [B, Tq, D], k [B, Tk, D], v [B, Tk, Dv]; `additive` = Bahdanau.
  OpId attention(const std::string& name, OpId q, OpId k, OpId v, std::int64_t heads, bool additive = false);

  // ---- pooling
  OpId max_pool2d(const std::string& name, OpId x, Hw kernel, Hw stride, Hw padding = 0, bool ceil_mode = false);
  OpId avg_pool2d(const std::string& name, OpId x, Hw kernel, Hw stride, Hw padding = 0, bool ceil_mode = false);
  OpId adaptive_avg_pool2d(const std::string& name, OpId x, Hw output_size);

  // ---- elementwise and bookkeeping
  OpId relu(const std::string& name, OpId x);
  OpId gelu(const std::string& name, OpId x);
  OpId tanh(const std::string& name, OpId x);
  OpId sigmoid(const std::string& name, OpId x);
  OpId softmax(const std::string& name, OpId x);
  OpId squared_relu(const std::string& name, OpId x);
  /// silu(gate) * up of a fused [..., 2F] gate|up projection -> [..., F].
  OpId swiglu(const std::string& name, OpId gate_up);
  OpId dropout(const std::string& name, OpId x, double p);
  OpId add(const std::string& name, const std::vector<OpId>& xs);
  /// An add on a transformer's residual stream (embeddings, each block's two skips).
  OpId residual_add(const std::string& name, const std::vector<OpId>& xs);
  OpId mul(const std::string& name, const std::vector<OpId>& xs);
  OpId concat(const std::string& name, const std::vector<OpId>& xs, std::int64_t axis);
  /// View as `shape`; one dimension may be -1 (inferred).
  OpId reshape(const std::string& name, OpId x, Shape shape);
  /// `positions` of the T positions of each sample of a [B, T, D] tensor -> [B, positions, D].
  OpId gather(const std::string& name, OpId x, std::int64_t positions);
  /// Collapses dimensions start_dim.. into one (torch.flatten).
  OpId flatten(const std::string& name, OpId x, std::int64_t start_dim = 1);

  // ---- losses
  OpId cross_entropy(const std::string& name, OpId logits);
  OpId sampled_softmax(const std::string& name, OpId x, std::int64_t vocab, std::int64_t num_sampled);

  /// Generic entry point (the JSON loader uses it): `op` carries name, kind and attrs, plus the
  /// output_shape for input and reshape ops; block defaults to the current block.
  OpId add_op(Op op, const std::vector<OpId>& inputs);

  const Shape& shape(OpId v) const { return model_.op(v).output_shape; }
  const Op& op(OpId v) const { return model_.op(v); }
  std::optional<OpId> find(const std::string& name) const;
  const Model& model() const { return model_; }
  void set_dataset(std::string dataset) { model_.set_dataset(std::move(dataset)); }
  /// Hands over the finished model; the builder is empty afterwards.
  Model finish();

 private:
  OpId unary(OpKind kind, const std::string& name, OpId x);
  Model model_;
  std::unordered_map<std::string, OpId> by_name_;
  std::vector<std::string> blocks_;  // stack of full block paths
};

/// What ModelBuilder::add_op needs to rebuild `src` in another builder (a sharded copy of a model):
/// its name, kind, attrs and block, and the output shape of input and reshape ops; the new builder
/// infers everything else from the new inputs.
Op op_to_rebuild(const Op& src);

}  // namespace parasim::models
