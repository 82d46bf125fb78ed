// ModelBuilder: shape inference, per-op costs, loud shape errors (exact text), blocks.
#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "parasim/models/builder.hpp"
#include "support/input_error.hpp"

namespace parasim::models {
namespace {

using test_support::input_error;

TEST(Conv2d, ShapeAndCosts) {
  ModelBuilder b("m", 2);
  OpId x = b.input("x", {2, 3, 8, 8});
  OpId c1 = b.conv2d("c1", x, 4, 3, 1, 1);
  OpId c2 = b.conv2d("c2", c1, 8, 3, 2, 1, 2, 1, false);
  const Op& first = b.op(c1);
  EXPECT_EQ(first.output_shape, (Shape{2, 4, 8, 8}));
  EXPECT_EQ(first.macs_fwd, 2 * 4 * 8 * 8 * 3 * 3 * 3);  // N Cout Hout Wout (Cin/g) kh kw
  EXPECT_EQ(first.macs_bwd_data, 0);                       // fed by the data batch
  EXPECT_EQ(first.macs_bwd_weight, first.macs_fwd);
  EXPECT_EQ(first.params, 3 * 4 * 9 + 4);
  EXPECT_EQ(first.bytes_read, (2 * 3 * 8 * 8 + 3 * 4 * 9 + 4) * 4);
  EXPECT_EQ(first.bytes_written, 2 * 4 * 8 * 8 * 4);
  EXPECT_EQ(first.activation_bytes, 2 * 3 * 8 * 8 * 4);  // keeps its input
  const Op& second = b.op(c2);
  EXPECT_EQ(second.output_shape, (Shape{2, 8, 4, 4}));
  EXPECT_EQ(second.macs_fwd, 2 * 8 * 4 * 4 * (4 / 2) * 9);
  EXPECT_EQ(second.macs_bwd_data, second.macs_fwd);
  EXPECT_EQ(second.params, 8 * 2 * 9);  // grouped, no bias
  // Dilation and asymmetric kernels.
  OpId d = b.conv2d("dil", x, 4, {1, 3}, 1, {0, 2}, 1, {1, 2});
  EXPECT_EQ(b.shape(d), (Shape{2, 4, 8, 8}));
}

TEST(Pooling, FloorCeilAndAdaptive) {
  ModelBuilder b("m", 1);
  OpId x = b.input("x", {1, 64, 112, 112});
  EXPECT_EQ(b.shape(b.max_pool2d("floor", x, 3, 2)), (Shape{1, 64, 55, 55}));
  EXPECT_EQ(b.shape(b.max_pool2d("ceil", x, 3, 2, 0, true)), (Shape{1, 64, 56, 56}));
  EXPECT_EQ(b.shape(b.max_pool2d("pad", x, 3, 2, 1)), (Shape{1, 64, 56, 56}));
  // PyTorch's ceil_mode rule: the last window must start inside the input (7 -> 4, not 5).
  OpId small = b.input("small", {1, 1, 14, 14});
  EXPECT_EQ(b.shape(b.max_pool2d("ceil14", small, 2, 2, 0, true)), (Shape{1, 1, 7, 7}));
  OpId seven = b.input("seven", {1, 1, 7, 7});
  EXPECT_EQ(b.shape(b.max_pool2d("ceil7", seven, 3, 2, 1, true)), (Shape{1, 1, 4, 4}));
  const OpId mp = b.max_pool2d("mp", seven, 3, 1, 1);
  EXPECT_EQ(b.op(mp).macs_fwd, 0);
  EXPECT_EQ(b.op(mp).activation_bytes, 2 * 49 * 4);  // input and output
  EXPECT_EQ(b.shape(b.adaptive_avg_pool2d("ap", x, {7, 5})), (Shape{1, 64, 7, 5}));
  EXPECT_EQ(b.op(b.avg_pool2d("avg", x, 2, 2)).activation_bytes, 0);
}

TEST(Linear, CostsTiedWeightsAndFirstLayer) {
  ModelBuilder b("m", 4);
  OpId ids = b.input("ids", {4, 16});
  OpId emb = b.embedding("wte", ids, 1000, 64);
  EXPECT_EQ(b.op(emb).params, 64000);
  EXPECT_EQ(b.op(emb).macs_fwd, 0);
  EXPECT_EQ(b.op(emb).bytes_read, (4 * 16 + 4 * 16 * 64) * 4);  // ids + gathered rows, not the table
  OpId h = b.linear("proj", emb, 64, 32);
  EXPECT_EQ(b.shape(h), (Shape{4, 16, 32}));
  EXPECT_EQ(b.op(h).macs_fwd, 4 * 16 * 64 * 32);
  EXPECT_EQ(b.op(h).macs_bwd_data, b.op(h).macs_fwd);
  EXPECT_EQ(b.op(h).params, 64 * 32 + 32);
  EXPECT_EQ(b.op(h).attrs.in_features, 64);
  OpId back = b.linear("back", h, 32, 64, false);
  OpId head = b.linear_tied("head", back, "wte");
  EXPECT_EQ(b.shape(head), (Shape{4, 16, 1000}));
  EXPECT_EQ(b.op(head).params, 0);  // the weight belongs to wte
  EXPECT_EQ(b.op(head).macs_bwd_weight, 4 * 16 * 64 * 1000);
  EXPECT_EQ(b.op(head).bytes_read, (4 * 16 * 64 + 1000 * 64) * 4);
  OpId head_b = b.linear_tied("head_b", back, "wte", true);
  EXPECT_EQ(b.op(head_b).params, 1000);  // only its own bias
  // A linear straight on the data skips its data gradient.
  OpId feats = b.input("feats", {4, 10});
  EXPECT_EQ(b.op(b.linear("first", feats, 10, 3)).macs_bwd_data, 0);
}

TEST(Lstm, CostsWithAndWithoutProjection) {
  ModelBuilder b("m", 2);
  OpId x = b.input("x", {2, 5, 16});
  OpId e = b.linear("e", x, 16, 16);
  OpId l = b.lstm("l", e, 32);
  EXPECT_EQ(b.shape(l), (Shape{2, 5, 32}));
  EXPECT_EQ(b.op(l).params, 4 * 32 * (16 + 32) + 8 * 32);  // W_ih, W_hh, b_ih + b_hh
  EXPECT_EQ(b.op(l).macs_fwd, 2 * 5 * 4 * 32 * (16 + 32));
  EXPECT_EQ(b.op(l).macs_bwd_data, b.op(l).macs_fwd);
  EXPECT_EQ(b.op(l).activation_bytes, (2 * 5 * 16 + 2 * 5 * 7 * 32) * 4);
  OpId p = b.lstm("p", l, 64, 8, true, true);
  EXPECT_EQ(b.shape(p), (Shape{2, 5, 8}));
  EXPECT_EQ(b.op(p).params, 4 * 64 * (32 + 8) + 8 * 64 + 64 * 8);
  EXPECT_EQ(b.op(p).macs_fwd, 2 * 5 * (4 * 64 * (32 + 8) + 64 * 8));
  EXPECT_TRUE(b.op(p).attrs.reverse);
}

TEST(Attention, PackedAndSeparateInputs) {
  ModelBuilder b("m", 2);
  OpId x = b.input("x", {2, 10, 48});
  OpId qkv = b.linear("qkv", x, 48, 144);
  OpId a = b.attention("attn", qkv, 4);
  EXPECT_EQ(b.shape(a), (Shape{2, 10, 48}));
  EXPECT_EQ(b.op(a).macs_fwd, 2 * 10 * 10 * 48 * 2);  // Q K^T and P V
  EXPECT_EQ(b.op(a).macs_bwd_data, 2 * b.op(a).macs_fwd);
  EXPECT_EQ(b.op(a).activation_bytes, (2 * 10 * 144 + 2 * 4 * 10 * 10) * 4);
  OpId q = b.input("q", {2, 3, 8});
  OpId k = b.input("k", {2, 7, 8});
  OpId v = b.input("v", {2, 7, 6});
  OpId c = b.attention("cross", q, k, v, 2, true);
  EXPECT_EQ(b.shape(c), (Shape{2, 3, 6}));
  EXPECT_EQ(b.op(c).macs_fwd, 2 * 3 * 7 * (8 + 6));
  EXPECT_EQ(b.op(c).params, 2 * 8 + 1);  // Bahdanau v, b and g
  EXPECT_EQ(b.op(c).macs_bwd_data, 0);   // all inputs are data
}

TEST(Elementwise, BytesAndActivationsWithoutMacs) {
  ModelBuilder b("m", 1);
  OpId x = b.input("x", {1, 100});
  OpId h = b.linear("h", x, 100, 100);
  const Op& relu = b.op(b.relu("relu", h));
  EXPECT_EQ(relu.macs_fwd, 0);
  EXPECT_EQ(relu.bytes_read, 400);
  EXPECT_EQ(relu.bytes_written, 400);
  EXPECT_EQ(relu.activation_bytes, 400);
  const Op& drop = b.op(b.dropout("drop", h, 0.1));
  EXPECT_EQ(drop.bytes_written, 400 + 100);  // output + 1-byte mask
  EXPECT_EQ(drop.activation_bytes, 100);
  const Op& view = b.op(b.reshape("view", h, {10, -1}));
  EXPECT_EQ(view.output_shape, (Shape{10, 10}));
  EXPECT_EQ(view.bytes_read + view.bytes_written + view.activation_bytes, 0);
  const Op& loss = b.op(b.cross_entropy("loss", h));
  EXPECT_EQ(loss.output_shape, Shape{});
  EXPECT_EQ(loss.activation_bytes, 400);
  // fp32 logits: the forward holds them (400 B) beside the kept log-softmax; the backward the fp32
  // gradients of the log-softmax's output and input.
  EXPECT_EQ(loss.transient_fwd_bytes, 400);
  EXPECT_EQ(loss.transient_bwd_bytes, 800);
}

TEST(Elementwise, TheLossOf16BitLogitsIsFormedInFp32) {
  // Megatron-LM's logits.float() and torch.autocast's fp32 cross_entropy: 100 bf16 logits keep a
  // 4-byte log-softmax (400 B); the forward holds the 2-byte logits and their 4-byte copy (600 B).
  ModelBuilder b("m", 1, DType::BF16);
  const OpId x = b.input("x", {1, 10});
  const Op& loss = b.op(b.cross_entropy("loss", b.linear("head", x, 10, 100)));
  EXPECT_EQ(loss.activation_bytes, 400);
  EXPECT_EQ(loss.transient_fwd_bytes, 600);
  EXPECT_EQ(loss.transient_bwd_bytes, 800);
  EXPECT_EQ(b.op(b.relu("relu", x)).transient_fwd_bytes, 0);  // only the loss has a working set here
}

TEST(Gather, ShapeAndCosts) {
  // [2, 8, 4] fp32 -> 3 of the 8 positions: [2, 3, 4] = 24 elements.
  ModelBuilder b("m", 2);
  const OpId x = b.input("x", {2, 8, 4});
  const OpId h = b.linear("h", x, 4, 4);
  const Op& g = b.op(b.gather("g", h, 3));
  EXPECT_EQ(g.kind, OpKind::Gather);
  EXPECT_EQ(g.output_shape, (Shape{2, 3, 4}));
  EXPECT_EQ(g.params, 0);
  EXPECT_EQ(g.macs_fwd + g.macs_bwd_data + g.macs_bwd_weight, 0);
  EXPECT_EQ(g.bytes_read, 24 * 4 + 3 * 8);  // the selected rows and 3 int64 indices, not all 64 elements
  EXPECT_EQ(g.bytes_written, 24 * 4);
  EXPECT_EQ(g.activation_bytes, 3 * 8);  // only the indices, to scatter the gradient
  EXPECT_EQ(b.op(b.gather("all", h, 8)).output_shape, (Shape{2, 8, 4}));
  EXPECT_EQ(input_error([&] { b.gather("nine", h, 9); }),
            "gather \"nine\" with input [2, 8, 4]: expected positions in [1, 8] (at most the sequence length), "
            "found 9");
  EXPECT_EQ(input_error([&] { b.gather("zero", h, 0); }),
            "gather \"zero\" with input [2, 8, 4]: expected positions in [1, 8] (at most the sequence length), "
            "found 0");
  const OpId flat = b.reshape("flat", h, {16, 4});
  EXPECT_EQ(input_error([&] { b.gather("rank2", flat, 2); }),
            "gather \"rank2\" with input [16, 4]: expected a 3-D input [B, T, D] (gathered along the sequence "
            "axis T)");
}

TEST(SampledSoftmax, CostsAndParams) {
  ModelBuilder b("m", 2);
  OpId x = b.input("x", {2, 5, 16});
  OpId h = b.linear("h", x, 16, 16);
  const Op& s = b.op(b.sampled_softmax("loss", h, 1000, 64));
  EXPECT_EQ(s.params, 1000 * 17);
  EXPECT_EQ(s.macs_fwd, 2 * 5 * 65 * 16);
  EXPECT_EQ(s.bytes_read, (2 * 5 * 16 + (10 + 64) * 17) * 4);
}

TEST(ShapeErrors, ExactMessages) {
  ModelBuilder b("m", 1);
  OpId img = b.input("img", {1, 6, 8, 8});
  EXPECT_EQ(input_error([&] { b.conv2d("c", img, 8, 3, 1, 1, 4); }),
            "conv2d \"c\" with input [1, 6, 8, 8]: expected input channels (6) divisible by groups (4)");
  EXPECT_EQ(input_error([&] { b.conv2d("c", img, 8, 3, 1, 1, 3); }),
            "conv2d \"c\" with input [1, 6, 8, 8]: expected out_channels (8) divisible by groups (3)");
  OpId small = b.input("small", {1, 3, 4, 4});
  EXPECT_EQ(input_error([&] { b.conv2d("big", small, 8, 7, 1, 1); }),
            "conv2d \"big\" with input [1, 3, 4, 4]: expected a padded input (6x6) at least as large as the "
            "dilated kernel (7x7)");
  EXPECT_EQ(input_error([&] { b.conv2d("s0", small, 8, 3, 0); }),
            "conv2d \"s0\" with input [1, 3, 4, 4]: expected stride height >= 1, found 0");
  EXPECT_EQ(input_error([&] {
              b.conv2d("flat", b.input("v", {1, 3}), 8, 1);
            }),
            "conv2d \"flat\" with input [1, 3]: expected a 4-D input [N, C, H, W]");
  OpId a = b.input("a", {1, 4});
  OpId c = b.input("c", {1, 5});
  EXPECT_EQ(input_error([&] {
              b.add("sum", {a, c});
            }),
            "add \"sum\" with inputs [1, 4], [1, 5]: expected all inputs to have the same shape");
  EXPECT_EQ(input_error([&] { b.add("one", {a}); }),
            "add \"one\" with input [1, 4]: expected at least 2 inputs, found 1");
  OpId feat = b.input("feat", {2, 2048});
  EXPECT_EQ(input_error([&] { b.linear("fc", feat, 25088, 4096); }),
            "linear \"fc\" with input [2, 2048]: expected the last input dimension to be in_features = 25088");
  EXPECT_EQ(input_error([&] {
              b.concat("cat", {img, small}, 1);
            }),
            "concat \"cat\" with inputs [1, 6, 8, 8], [1, 3, 4, 4]: expected inputs that agree in every dimension "
            "except axis 1");
  EXPECT_EQ(input_error([&] {
              b.concat("cat", {a, a}, 2);
            }),
            "concat \"cat\" with inputs [1, 4], [1, 4]: expected axis in [-2, 1], found 2");
  EXPECT_EQ(input_error([&] {
              b.reshape("r", a, {3, -1});
            }),
            "reshape \"r\" with input [1, 4]: expected a target shape with 4 elements, found [3, -1]");
  EXPECT_EQ(input_error([&] { b.dropout("d", a, 1.5); }),
            "dropout \"d\" with input [1, 4]: expected dropout probability p in [0, 1), found 1.5");
  EXPECT_EQ(input_error([&] { b.lstm("l", a, 8); }),
            "lstm \"l\" with input [1, 4]: expected a 3-D input [B, T, features]");
  EXPECT_EQ(input_error([&] { b.max_pool2d("p", small, 3, 1, 2); }),
            "max_pool2d \"p\" with input [1, 3, 4, 4]: expected padding (2x2) at most half the kernel (3x3)");
  EXPECT_EQ(input_error([&] { b.matmul("mm", a, c); }),
            "matmul \"mm\" with inputs [1, 4], [1, 5]: expected A's last dimension (4) to equal B's first (1)");
  EXPECT_EQ(input_error([&] {
              b.attention("at", b.input("t", {1, 3, 12}), 3);
            }),
            "attention \"at\" with input [1, 3, 12]: expected model dimension (4) divisible by heads (3)");
  EXPECT_EQ(input_error([&] { b.linear_tied("tied", a, "nothing"); }),
            "linear \"tied\" with input [1, 4]: expected shares_weights_with to name an earlier op, found \"nothing\"");
  EXPECT_EQ(input_error([&] { b.input("a", {1, 4}); }), "duplicate op name \"a\" in model m");
  EXPECT_EQ(input_error([&] {
              b.input("neg", {1, 0});
            }),
            "input \"neg\": expected an output_shape with positive dimensions, found [1, 0]");
  EXPECT_EQ(input_error([&] {
              b.linear("huge", b.input("wide", {1LL << 31, 1LL << 20}), 1LL << 20, 1LL << 30);
            }),
            "linear \"huge\" with input [2147483648, 1048576]: sizes overflow a 64-bit integer");
  EXPECT_EQ(input_error([] { ModelBuilder zero("z", 0); }), "model z: batch must be >= 1, found 0");
}

TEST(WeightSharing, OwnerMustMatch) {
  ModelBuilder b("m", 1);
  OpId ids = b.input("ids", {1, 4});
  OpId e = b.embedding("wte", ids, 100, 8);
  OpId h = b.linear("h", e, 8, 16);
  EXPECT_EQ(input_error([&] { b.linear_tied("head", h, "wte"); }),
            "linear \"head\" with input [1, 4, 16]: expected the last input dimension to be in_features = 8");
  OpId shared = b.embedding_shared("dec", ids, "wte");
  EXPECT_EQ(b.op(shared).params, 0);
  EXPECT_EQ(b.shape(shared), (Shape{1, 4, 8}));
  EXPECT_EQ(input_error([&] { b.embedding_shared("chain", ids, "dec"); }),
            "embedding \"chain\" with input [1, 4]: expected shares_weights_with to name the op that owns the weight, "
            "but embedding \"dec\" itself shares \"wte\"");
}

TEST(Blocks, NestedScopesSetOpBlock) {
  ModelBuilder b("m", 1);
  OpId x = b.input("x", {1, 4});
  {
    auto outer = b.block("Mixed_5b");
    OpId y = b.relu("y", x);
    EXPECT_EQ(b.op(y).block, "Mixed_5b");
    {
      auto inner = b.block("branch3x3dbl");
      EXPECT_EQ(b.op(b.relu("z", y)).block, "Mixed_5b/branch3x3dbl");
    }
    EXPECT_EQ(b.current_block(), "Mixed_5b");
  }
  EXPECT_EQ(b.op(b.relu("top", x)).block, "");
  b.push_block("manual");
  EXPECT_EQ(b.op(b.relu("m1", x)).block, "manual");
  b.pop_block();
  EXPECT_EQ(b.current_block(), "");
}

TEST(Builder, FlattenAndFinish) {
  ModelBuilder b("m", 3);
  OpId x = b.input("x", {3, 2, 4, 5});
  EXPECT_EQ(b.shape(b.flatten("f", x)), (Shape{3, 40}));
  EXPECT_EQ(b.shape(b.flatten("f2", x, 2)), (Shape{3, 2, 20}));
  Model m = b.finish();
  EXPECT_EQ(m.num_ops(), 3u);
  EXPECT_EQ(m.batch(), 3);
  // Tensors on edges carry the producer's shape, bytes and input position.
  auto [e, end] = boost::out_edges(0, m.graph());
  ASSERT_NE(e, end);
  EXPECT_EQ(m.graph()[*e].shape, (Shape{3, 2, 4, 5}));
  EXPECT_EQ(m.graph()[*e].bytes, 3 * 40 * 4);
  EXPECT_EQ(b.model().num_ops(), 0u);
}

TEST(Builder, Fp16HalvesBytesNotMacs) {
  ModelBuilder f32("a", 2, DType::F32);
  ModelBuilder f16("a", 2, DType::F16);
  const Op& a = f32.op(f32.conv2d("c", f32.input("x", {2, 3, 8, 8}), 4, 3));
  const Op& h = f16.op(f16.conv2d("c", f16.input("x", {2, 3, 8, 8}), 4, 3));
  EXPECT_EQ(a.macs_fwd, h.macs_fwd);
  EXPECT_EQ(a.bytes_read, 2 * h.bytes_read);
  EXPECT_EQ(h.dtype, DType::F16);
}

TEST(Builder, Fp8GemmsKeepTheirInputsAsFp8Casts) {
  // Transformer Engine saves the FP8 cast of a layer GEMM's input (1 B an element) for the
  // weight gradient; ops outside a layer, and bf16 models, keep the bf16 input (2 B).
  ModelBuilder b("fp8", 2, DType::FP8);
  OpId x = b.input("x", {2, 16, 64});
  OpId fc = 0, moe = 0;
  {
    auto scope = b.block("h.0");
    fc = b.linear("fc", x, 64, 128, /*bias=*/false);
    // 2 x 16 = 32 tokens, top-2 of 4 experts of width 32, SwiGLU, dropless: 64 slots.
    moe = b.experts("moe", fc, 4, 2, 32, /*gated=*/true);
  }
  OpId head = b.linear("head", moe, 128, 256, /*bias=*/false);
  EXPECT_TRUE(fp8_gemm(b.op(fc)));
  EXPECT_FALSE(fp8_gemm(b.op(head)));
  EXPECT_EQ(b.op(fc).activation_bytes, 2 * 16 * 64);  // 2,048 elements at 1 B
  EXPECT_EQ(b.op(head).activation_bytes, 2 * 2 * 16 * 128);
  // Experts: fp8 per slot the dispatched token (128) and the fc2 input (32): 64 x 160 = 10,240 B;
  // bf16 the router input (4,096), its probabilities (32 x 4 = 128) and per slot gate and up
  // (64 x 64 = 4,096): 8,320 elements at 2 B = 16,640 B.
  EXPECT_EQ(b.op(moe).activation_bytes, 10'240 + 16'640);

  ModelBuilder bf("bf16", 2, DType::BF16);
  OpId y = bf.input("x", {2, 16, 64});
  auto scope = bf.block("h.0");
  EXPECT_EQ(bf.op(bf.linear("fc", y, 64, 128, false)).activation_bytes, 2 * 2 * 16 * 64);
}

}  // namespace
}  // namespace parasim::models
