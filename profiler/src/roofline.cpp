// Which kernels each op phase launches and how much work each does (phase_work), and the
// RooflineCostModel that prices them. The per-kind decomposition mirrors what cuDNN/cuBLAS-based
// frameworks launch; docs/profiler.md lists it.
#include "parasim/profiler/roofline.hpp"

#include <algorithm>
#include <cmath>

#include "parasim/common/error.hpp"

namespace parasim::profiler {

using models::Op;
using models::OpKind;

std::string to_string(AttentionKernel a) {
  switch (a) {
    case AttentionKernel::Flash: return "flash";
    case AttentionKernel::Flash2: return "flash2";
    case AttentionKernel::Triton: return "triton";
    case AttentionKernel::Unfused: break;
  }
  return "unfused";
}

std::string to_string(Fp32Math m) {
  switch (m) {
    case Fp32Math::PyTorch: return "pytorch";
    case Fp32Math::Tf32: return "tf32";
    case Fp32Math::Fp32: return "fp32";
  }
  return "?";
}

std::optional<Fp32Math> parse_fp32_math(std::string_view s) {
  for (Fp32Math m : {Fp32Math::PyTorch, Fp32Math::Tf32, Fp32Math::Fp32})
    if (to_string(m) == s) return m;
  return std::nullopt;
}

std::string to_string(ConvLayout l) { return l == ConvLayout::Nhwc ? "nhwc" : "nchw"; }

std::optional<ConvLayout> parse_conv_layout(std::string_view s) {
  if (s == "nchw") return ConvLayout::Nchw;
  if (s == "nhwc") return ConvLayout::Nhwc;
  return std::nullopt;
}

std::string to_string(MixedPrecision m) { return m == MixedPrecision::Autocast ? "autocast" : "native"; }

std::optional<MixedPrecision> parse_mixed_precision(std::string_view s) {
  if (s == "native") return MixedPrecision::Native;
  if (s == "autocast") return MixedPrecision::Autocast;
  return std::nullopt;
}

std::string to_string(MoeKernels m) {
  if (m.fused_router && m.fused_permute) return "fused";
  if (m.fused_router) return "fused-router";
  if (m.fused_permute) return "fused-permute";
  return "eager";
}

std::optional<MoeKernels> parse_moe_kernels(std::string_view s) {
  if (s == "eager") return MoeKernels{};
  if (s == "fused") return MoeKernels{true, true};
  if (s == "fused-router") return MoeKernels{true, false};
  if (s == "fused-permute") return MoeKernels{false, true};
  return std::nullopt;
}

std::optional<AttentionKernel> parse_attention_kernel(std::string_view s) {
  if (s == "unfused") return AttentionKernel::Unfused;
  if (s == "flash") return AttentionKernel::Flash;
  if (s == "flash2") return AttentionKernel::Flash2;
  if (s == "triton") return AttentionKernel::Triton;
  return std::nullopt;
}

std::string to_string(KernelClass c) {
  switch (c) {
    case KernelClass::Conv: return "conv";
    case KernelClass::Gemm: return "gemm";
    case KernelClass::Memory: return "memory";
  }
  return "?";
}

namespace {

/// Byte counts every decomposition uses. Weights are assumed stored in the op's dtype.
struct OpBytes {
  double s = 4;        // bytes per element
  double weights = 0;  // weights read by the forward (a tied linear reads its owner's matrix)
  double in = 0;       // activations read in the forward (bytes_read minus weights)
  double out = 0;      // bytes_written
  double saved = 0;    // activation_bytes: what the backward reads back
  double rw = 0;       // bytes_read + bytes_written
};

OpBytes op_bytes(const Op& op) {
  OpBytes b;
  b.s = models::dtype_size(op.dtype);
  const auto& a = op.attrs;
  b.weights = op.kind == OpKind::Linear
                  ? static_cast<double>(a.out_features * a.in_features + (a.bias ? a.out_features : 0)) * b.s
                  : static_cast<double>(op.params) * b.s;
  b.in = std::max(0.0, static_cast<double>(op.bytes_read) - b.weights);
  b.out = static_cast<double>(op.bytes_written);
  b.saved = static_cast<double>(op.activation_bytes);
  b.rw = static_cast<double>(op.bytes_read + op.bytes_written);
  return b;
}

KernelWork mem(double bytes, std::int64_t count = 1) { return {KernelClass::Memory, count, 0.0, bytes}; }
KernelWork gemm(double macs, double bytes, std::int64_t count = 1) {
  return {KernelClass::Gemm, count, 2.0 * macs, bytes};
}
KernelWork conv(double macs, double bytes) { return {KernelClass::Conv, 1, 2.0 * macs, bytes}; }

KernelWork shaped(KernelWork k, std::int64_t m, std::int64_t n, std::int64_t kk, std::int64_t batch = 1) {
  k.gemm = {m, n, kk, batch};
  k.gemm.convolution = k.cls == KernelClass::Conv;
  return k;
}

/// The row strides of A, B and C where an op knows how its tensors are stored.
KernelWork strided(KernelWork k, std::int64_t lda, std::int64_t ldb, std::int64_t ldc) {
  k.gemm.lda = lda;
  k.gemm.ldb = ldb;
  k.gemm.ldc = ldc;
  return k;
}

std::int64_t idim(const models::Shape& s, std::size_t i) { return i < s.size() ? s[i] : 1; }

double dim(const models::Shape& s, std::size_t i, double fallback = 1) {
  return i < s.size() ? static_cast<double>(s[i]) : fallback;
}

/// Convolutions as implicit GEMMs (cuDNN): forward M = N*P*Q output pixels, N = K/g output
/// channels, K = C/g*R*S; backward-data and backward-weight transpose the roles. FP32 3x3 stride-1
/// convolutions run as Winograd F(2x2,3x3) (Lavin and Gray 2016: 2.25x fewer multiplies), paying
/// the transforms as extra traffic; tensor-core paths use implicit GEMM.
std::vector<KernelWork> conv_work(const Op& op, Phase phase, const OpBytes& b, bool tf32, bool transposed) {
  const auto& a = op.attrs;
  const models::Shape& x = op.input_shapes.empty() ? op.output_shape : op.input_shapes.front();
  const models::Shape& y = op.output_shape;
  const std::int64_t g = std::max<std::int64_t>(1, a.groups);
  const std::int64_t n = idim(x, 0), c = idim(x, 1), h = idim(x, 2), w = idim(x, 3);
  const std::int64_t k = idim(y, 1), p = idim(y, 2), q = idim(y, 3);
  const std::int64_t rs = std::max<std::int64_t>(1, a.kernel_h) * std::max<std::int64_t>(1, a.kernel_w);
  // On TF32 tensor cores cuDNN runs FP32 convolutions as implicit GEMMs: no Winograd there.
  const bool winograd = !tf32 && op.dtype == models::DType::F32 && a.kernel_h == 3 && a.kernel_w == 3 &&
                        a.stride_h == 1 && a.stride_w == 1 && a.dilation_h == 1 && a.dilation_w == 1 && g == 1;
  // Winograd: the K dimension shrinks by 2.25; the transformed tiles (4x4 per 2x2 outputs) add
  // about four times the input and output traffic.
  const std::int64_t rs_eff = winograd ? 4 : rs;
  const double transform = winograd ? 4.0 * (b.in + b.out) : 0.0;
  // NCHW activations around an NHWC tensor-core kernel: the input-side tensor transposed in, the
  // output-side one out (each read and written once), as separate kernels.
  auto transposes = [&](std::vector<KernelWork>& kw, double in_side, double out_side) {
    if (!transposed) return;
    kw.push_back(mem(2 * in_side));
    kw.push_back(mem(2 * out_side));
  };
  switch (phase) {
    case Phase::Forward: {
      std::vector<KernelWork> kw{shaped(conv(static_cast<double>(op.macs_fwd), b.rw + transform), n * p * q, k / g,
                                        c / g * rs_eff, g)};
      transposes(kw, b.in, b.out);
      if (op.attrs.bias) kw.push_back(mem(2 * b.out));  // separate bias-add kernel
      return kw;
    }
    case Phase::BackwardData: {
      std::vector<KernelWork> kw{
          shaped(conv(static_cast<double>(op.macs_bwd_data), b.out + b.weights + b.in + transform), n * h * w, c / g,
                 k / g * rs_eff, g)};
      transposes(kw, b.out, b.in);  // dY in, dX out
      return kw;
    }
    case Phase::BackwardWeight: {
      std::vector<KernelWork> kw{
          shaped(conv(static_cast<double>(op.macs_bwd_weight), b.out + b.in + b.weights + transform), k / g,
                 c / g * rs_eff, n * p * q, g)};
      transposes(kw, b.in, b.out);                  // X and dY in
      if (op.attrs.bias) kw.push_back(mem(b.out));  // bias gradient: reduce dY over N, H, W
      return kw;
    }
    case Phase::Update:
    case Phase::Recompute:
    case Phase::Other:
    case Phase::DataLoad: break;
  }
  return {};
}

std::vector<KernelWork> linear_work(const Op& op, Phase phase, const OpBytes& b) {
  const std::int64_t in = std::max<std::int64_t>(1, op.attrs.in_features),
                     out = std::max<std::int64_t>(1, op.attrs.out_features);
  const std::int64_t rows =
      op.input_shapes.empty() ? 1 : std::max<std::int64_t>(1, models::num_elements(op.input_shapes[0]) / in);
  switch (phase) {
    // Row-major X [rows][in], W [out][in], Y [rows][out]: every stride is `in` or `out`, never
    // `rows`, whichever operand a phase transposes (cuBLAS reads the transposes in place).
    case Phase::Forward:  // Y = X W^T; addmm fuses the bias
      return {strided(shaped(gemm(static_cast<double>(op.macs_fwd), b.rw), rows, out, in), in, in, out)};
    case Phase::BackwardData:  // dX = dY W
      return {strided(shaped(gemm(static_cast<double>(op.macs_bwd_data), b.out + b.weights + b.in), rows, in, out), out,
                      in, in)};
    case Phase::BackwardWeight: {  // dW = dY^T X
      std::vector<KernelWork> k{strided(
          shaped(gemm(static_cast<double>(op.macs_bwd_weight), b.out + b.in + b.weights), out, in, rows), out, in, in)};
      if (op.attrs.bias) k.push_back(mem(b.out));
      return k;
    }
    case Phase::Update:
    case Phase::Recompute:
    case Phase::Other:
    case Phase::DataLoad: break;
  }
  return {};
}

/// The kernels Megatron-Core launches around a mixture-of-experts bank's GEMMs on the rank that
/// routes T tokens (core_r0.9.0, PyTorch eager: TopKRouter with the auxiliary load-balancing loss,
/// MoEAlltoAllTokenDispatcher; docs/models.md, "Mixture of experts"). Dropless, the dispatch sorts
/// its T x k token-expert pairs and gathers them; with a capacity factor it pads every expert to C
/// slots (E x C = `slots`) and index-selects them. Counted per kernel, with the bytes each moves.
struct RoutingKernels {
  std::vector<KernelWork> router, dispatch, combine;  // forward
  std::vector<KernelWork> combine_back, dispatch_back, router_back;
};

RoutingKernels routing_kernels(const Op& op, double tokens, double slots, double s, MoeKernels moe) {
  const models::OpAttrs& a = op.attrs;
  const double h = static_cast<double>(op.input_shapes[0].back()), e = static_cast<double>(a.experts),
               k = static_cast<double>(a.top_k), tk = tokens * k, te = tokens * e, th = tokens * h * s,
               slot_h = slots * h * s;
  const bool dropless = a.capacity_factor <= 0.0;
  RoutingKernels r;
  if (moe.fused_router) {
    // Transformer Engine's fused top-k with its score function (reads the logits, writes the
    // probabilities and the routing map), the auxiliary loss's scores and the loss, and the
    // tokens per expert; backward: the two fused kernels' backwards and the loss scaler's.
    r.router = {mem(te * (s + 4 + 1)), mem(te * (s + 4)), mem(4 * te), mem(te)};
    r.router_back = {mem(3 * th), mem(te * (s + 4), 2), mem(0)};
  } else {
    // Router (router.py, moe_utils.py topk_softmax_with_capacity and the auxiliary loss): top-k
    // (select and sort), softmax of the k scores in fp32 and back, the softmax over all experts
    // for the loss (a cast and the softmax), the probability mass per expert, and five scalar ops.
    r.router = {mem((te * s + tk * (s + 8)) / 2, 2), mem((2 * (s + 4) + 8) * tk / 3, 3),
                mem((te * (s + 4) + 8 * te) / 2, 2), mem(4 * te), mem(0, 5)};
    if (dropless) {
      r.router.push_back(mem(8 * tk / 2, 2));  // histc: tokens per expert
    } else {
      // The capacity mask: zeros, a copy and a scatter three times (9 kernels of about T x E
      // each), top-C per expert over the tokens, two transposed copies and the padded counts.
      r.router.push_back(mem(te * s, 9));
      r.router.push_back(mem(te * s));
      r.router.push_back(mem(slots * (s + 8) / 2, 2));
      r.router.push_back(mem(te * s));
    }
    // The router's input gradient added into the token gradient, the loss scaler's backward (ones
    // and a scale), the auxiliary loss chain back to the logits (two scalings, a contiguous copy,
    // the softmax backward, a cast) and the top-k probabilities' path (cast, softmax backward, cast,
    // zeros + scatter, the add into the logits' gradient); with capacity also the top-C selection's
    // and the capacity scatter's backward.
    r.router_back = {mem(3 * th), mem(0, 2), mem(4 * te, 5), mem(4 * te, 6)};
    if (!dropless) r.router_back.push_back(mem(4 * te, 3));
  }
  if (moe.fused_permute) {
    // Transformer Engine's permute (a row-id map from the routing map, then the gather) and
    // un-permute (the probability-weighted sum over each token's experts in one pass); their
    // backwards are each other's movement.
    r.dispatch = {mem(8 * tk), mem(2 * slot_h)};
    r.combine = {mem(slot_h + th)};
    r.combine_back = {mem(slot_h + th)};
    r.dispatch_back = {mem(slot_h + th)};
  } else if (dropless) {
    // token_dispatcher.py: histc and four count sums (their D2H copies wait at one stream sync),
    // a contiguous slice, the stable argsort of the T x k pairs, //k, and the gather of the tokens.
    r.dispatch = {mem(8 * tk / 2, 2), mem(0, 4), mem(0), mem(2 * 8 * tk), mem(16 * tk), mem(2 * slot_h)};
    // unpermute: zeros, scatter_add of the expert outputs, the probability weighting, the sum over k.
    r.combine = {mem(slot_h), mem(2 * slot_h), mem(2 * slot_h), mem(slot_h + th)};
    r.combine_back = {mem(2 * slot_h), mem(2 * slot_h, 2), mem(2 * slot_h)};
    r.dispatch_back = {mem(th), mem(2 * slot_h)};  // the gather's backward: zeros + scatter_add
  } else {
    r.dispatch = {mem(8 * tokens / 2, 2), mem(2 * slot_h)};                 // histc (unused), index_select
    r.combine = {mem(2 * slot_h), mem(th), mem(2 * th), mem(slot_h + th)};  // weight, zeros, copy, scatter
    r.combine_back = {mem(2 * slot_h), mem(2 * slot_h), mem(2 * slot_h, 2)};
    r.dispatch_back = {mem(th), mem(2 * slot_h)};  // index_select's backward: zeros + index_add
  }
  return r;
}

/// A mixture-of-experts bank as grouped-GEMM MoE layers run it (Megatron-LM's GroupedMLP): the
/// router GEMM over every token the rank routes (1/expert_tp of them when the experts are split
/// over the TP ranks) and the routing kernels around it (routing_kernels), fc1 (gate and up
/// when gated) and fc2 of each local expert as one grouped GEMM over its share of the slots, the
/// activation between them, and the weighted un-permute back to the tokens. The backward runs the
/// same products transposed and the routing kernels' backwards.
std::vector<KernelWork> experts_work(const Op& op, Phase phase, const OpBytes& b, MoeKernels moe) {
  const models::OpAttrs& a = op.attrs;
  const std::int64_t d = op.input_shapes[0].back();
  const std::int64_t local = a.experts / a.expert_shards;
  const std::int64_t slots = models::expert_slots(op);
  const std::int64_t per_expert = std::max<std::int64_t>(1, (slots + local - 1) / local);
  const std::int64_t f = a.out_features;
  const std::int64_t width = a.gated ? 2 * f : f;  // fc1's outputs per slot
  const auto x = [](std::int64_t u, std::int64_t v) { return static_cast<double>(u) * static_cast<double>(v); };
  const double sd = x(slots, d), sf = x(slots, f), sw = x(slots, width);
  // Split over the TP ranks (expert_tp), a rank routes and permutes only its own tokens.
  const std::int64_t routed = models::expert_router_tokens(op);
  const double td = x(routed, d), te = x(routed, a.experts);
  const double router_w = x(a.experts, d), fc1_w = x(local, width) * static_cast<double>(d),
               fc2_w = x(local, f) * static_cast<double>(d);
  const double router_macs = td * static_cast<double>(a.experts), fc1_macs = sw * static_cast<double>(d),
               fc2_macs = sf * static_cast<double>(d);
  // The slots this rank dispatches: its own tokens' k experts each, or E x C with a capacity.
  const double own_pairs = x(routed, a.top_k);
  const double own_slots =
      a.capacity_factor > 0.0
          ? static_cast<double>(a.experts) * std::ceil(a.capacity_factor * own_pairs / static_cast<double>(a.experts))
          : own_pairs;
  const RoutingKernels routing = routing_kernels(op, static_cast<double>(routed), own_slots, b.s, moe);
  std::vector<KernelWork> work;
  const auto append = [&work](const std::vector<KernelWork>& ks) { work.insert(work.end(), ks.begin(), ks.end()); };
  switch (phase) {
    case Phase::Forward:
      work.push_back(shaped(gemm(router_macs, (td + router_w + te) * b.s), routed, a.experts, d));  // router
      append(routing.router);
      append(routing.dispatch);
      work.push_back(shaped(gemm(fc1_macs, (sd + fc1_w + sw) * b.s), per_expert, width, d, local));  // fc1
      work.push_back(mem((sw + sf) * b.s));  // the activation: reads gate (and up), writes its output
      work.push_back(shaped(gemm(fc2_macs, (sf + fc2_w + sd) * b.s), per_expert, d, f, local));  // fc2
      append(routing.combine);
      return work;
    case Phase::BackwardData:
      append(routing.combine_back);
      work.push_back(shaped(gemm(fc2_macs, (sd + fc2_w + sf) * b.s), per_expert, f, d, local));
      work.push_back(mem((2 * sw + sf) * b.s));  // reads the saved pre-activations and dY, writes their gradient
      work.push_back(shaped(gemm(fc1_macs, (sw + fc1_w + sd) * b.s), per_expert, d, width, local));
      append(routing.dispatch_back);
      work.push_back(shaped(gemm(router_macs, (te + router_w + td) * b.s), routed, d, a.experts));
      append(routing.router_back);
      return work;
    case Phase::BackwardWeight:
      return {shaped(gemm(fc1_macs, (sd + sw + fc1_w) * b.s), width, d, per_expert, local),
              shaped(gemm(fc2_macs, (sf + sd + fc2_w) * b.s), d, f, per_expert, local),
              shaped(gemm(router_macs, (td + te + router_w) * b.s), a.experts, d, routed)};
    default: return {};
  }
}

/// C = A B: backward computes dA = dC B^T and dB = A^T dC, one GEMM each for every operand that
/// needs a gradient (macs_bwd_data is macs_fwd per such operand).
std::vector<KernelWork> matmul_work(const Op& op, Phase phase, const OpBytes& b) {
  const models::Shape& out = op.output_shape;
  const std::int64_t n = out.empty() ? 1 : out.back();
  const std::int64_t m = out.size() >= 2 ? out[out.size() - 2] : 1;
  const std::int64_t kk = op.input_shapes.empty() || op.input_shapes[0].empty() ? 1 : op.input_shapes[0].back();
  const std::int64_t batch = std::max<std::int64_t>(1, models::num_elements(out) / std::max<std::int64_t>(1, m * n));
  if (phase == Phase::Forward) return {shaped(gemm(static_cast<double>(op.macs_fwd), b.rw), m, n, kk, batch)};
  if (phase == Phase::BackwardData) {
    const std::int64_t count = std::max<std::int64_t>(1, op.macs_bwd_data / std::max<std::int64_t>(op.macs_fwd, 1));
    // dA = dC B^T (m x k over n); dB = A^T dC (k x n over m): the same FLOPs, priced as the first.
    return {
        shaped(gemm(static_cast<double>(op.macs_bwd_data) / static_cast<double>(count), b.rw, count), m, kk, n, batch)};
  }
  return {};
}

/// Attention dimensions from a packed qkv [B, T, 3D] input or separate q, k, v.
struct AttentionDims {
  double batch = 1, heads = 1, tq = 1, tk = 1, d = 1, dv = 1;
  double kv_ratio = 1;  // grouped-query attention: K and V hold kv_heads / heads of q's features
};

AttentionDims attention_dims(const Op& op) {
  AttentionDims a;
  a.heads = static_cast<double>(std::max<std::int64_t>(op.attrs.heads, 1));
  if (op.input_shapes.size() == 1 && op.input_shapes[0].size() == 3) {
    const auto& x = op.input_shapes[0];
    a.batch = dim(x, 0);
    a.tq = a.tk = dim(x, 1);
    // Packed [B, T, (H + 2K) hd]; K = H (kv_heads 0) is the classic [B, T, 3D].
    const double kv = op.attrs.kv_heads > 0 ? static_cast<double>(op.attrs.kv_heads) : a.heads;
    a.d = a.dv = dim(x, 2) / (a.heads + 2 * kv) * a.heads;
    a.kv_ratio = kv / a.heads;
  } else if (op.input_shapes.size() == 3) {
    a.batch = dim(op.input_shapes[0], 0);
    a.tq = dim(op.input_shapes[0], 1);
    a.d = dim(op.input_shapes[0], 2);
    a.tk = dim(op.input_shapes[2], 1);
    a.dv = dim(op.input_shapes[2], 2);
  }
  return a;
}

/// Attention core with h heads: S = Q K^T (B*h*Tq*Tk scores), P = softmax(S), O = P V.
/// Backward: dV = P^T dO, dP = dO V^T, dS = softmax'(P, dP), dQ = dS K, dK = dS^T Q.
/// Additive (Bahdanau) scores v.tanh(q + k + b) materialize a [B, Tq, Tk, D] tensor, as an eager
/// framework does: broadcast add, tanh, and a matrix-vector product with v.
std::vector<KernelWork> attention_work(const Op& op, Phase phase, const OpBytes& b) {
  const AttentionDims a = attention_dims(op);
  const double q = a.batch * a.tq * a.d * b.s, k = a.batch * a.tk * a.d * a.kv_ratio * b.s;
  const double v = a.batch * a.tk * a.dv * a.kv_ratio * b.s, o = a.batch * a.tq * a.dv * b.s;
  const double scores = a.batch * a.heads * a.tq * a.tk * b.s;
  const double big = a.batch * a.tq * a.tk * a.d * b.s;  // additive only
  const double score_macs = a.batch * a.tq * a.tk * a.d, context_macs = a.batch * a.tq * a.tk * a.dv;
  // Per head: S = Q_h K_h^T is [tq x tk] over d/h, O_h = P V_h is [tq x dv/h] over tk.
  const auto bh = static_cast<std::int64_t>(a.batch * a.heads);
  const auto tq = static_cast<std::int64_t>(a.tq), tk = static_cast<std::int64_t>(a.tk);
  const auto dh = static_cast<std::int64_t>(a.d / a.heads), dvh = static_cast<std::int64_t>(a.dv / a.heads);
  const bool dot = !op.attrs.additive;
  auto sh = [&](KernelWork kw, std::int64_t m, std::int64_t n, std::int64_t kk) {
    return dot ? shaped(kw, m, n, kk, bh) : kw;
  };
  if (phase == Phase::Forward) {
    std::vector<KernelWork> w;
    if (op.attrs.additive) w = {mem(q + k + big), mem(2 * big), gemm(score_macs, big + scores)};
    else w = {sh(gemm(score_macs, q + k + scores), tq, tk, dh)};
    w.push_back(mem(2 * scores));
    // Dropout on the probabilities (GPT, BERT, Megatron-LM): read P, write P' and a byte mask.
    if (op.attrs.p > 0) w.push_back(mem(2 * scores + scores / b.s));
    w.push_back(sh(gemm(context_macs, scores + v + o), tq, dvh, tk));
    return w;
  }
  if (phase == Phase::BackwardData) {
    std::vector<KernelWork> w{sh(gemm(context_macs, o + v + scores), tk, dvh, tq),
                              sh(gemm(context_macs, scores + o + v), tq, tk, dvh), mem(3 * scores)};
    if (op.attrs.p > 0) w.push_back(mem(2 * scores + scores / b.s));  // dropout backward: dP' and the mask
    if (op.attrs.additive) {
      w.push_back(gemm(score_macs, scores + big));  // d(tanh) = dS x v
      w.push_back(mem(3 * big));                   // tanh backward
      w.push_back(mem(big + q + k));               // reduce to dq and dk
    } else {
      w.push_back(sh(gemm(score_macs, scores + k + q, 2), tq, dh, tk));  // dQ = dS K, dK = dS^T Q
    }
    return w;
  }
  if (phase == Phase::BackwardWeight && op.attrs.additive) return {mem(2 * big)};  // dv: reduce over the 4-D tensor
  return {};
}

/// One LSTM layer over [B, T, in]: the input projection for all timesteps is one big GEMM; the
/// recurrent GEMM and the gate elementwise kernel run once per timestep (sequential), so small
/// per-step GEMMs run at low efficiency and launch overhead is paid 2T times.
std::vector<KernelWork> lstm_work(const Op& op, Phase phase, const OpBytes& b) {
  const auto& x = op.input_shapes.empty() ? op.output_shape : op.input_shapes.front();
  const double batch = dim(x, 0);
  const double steps = x.size() >= 3 ? dim(x, 1) : 1.0;
  const double in = dim(x, x.size() - 1);
  const double hidden = static_cast<double>(std::max<std::int64_t>(op.attrs.hidden, 1));
  const double proj = op.attrs.proj > 0 ? static_cast<double>(op.attrs.proj) : hidden;
  const double input_macs_per_step = 4 * hidden * in;
  const double recurrent_macs_per_step = 4 * hidden * proj + (op.attrs.proj > 0 ? hidden * proj : 0.0);
  const double recurrent_share = recurrent_macs_per_step / (input_macs_per_step + recurrent_macs_per_step);
  const double w_input = 4 * hidden * in * b.s;
  const double w_recurrent = recurrent_macs_per_step * b.s;
  const double gates = batch * 4 * hidden * b.s;  // one timestep's gate pre-activations
  const double state = batch * hidden * b.s;      // one timestep's h or c
  const auto n = static_cast<std::int64_t>(steps);
  // GEMM shapes: the input projection [B*T x 4H] over `in`, the recurrent step [B x 4H] over proj.
  const auto ib = static_cast<std::int64_t>(batch), bt = static_cast<std::int64_t>(batch * steps);
  const auto h4 = static_cast<std::int64_t>(4 * hidden), ip = static_cast<std::int64_t>(proj);
  auto split = [&](std::int64_t macs, double gate_bytes_per_step) {
    const double total = static_cast<double>(macs);
    return std::vector<KernelWork>{
        shaped(gemm(total * (1 - recurrent_share), b.in + w_input + steps * gates), bt, h4,
               static_cast<std::int64_t>(in)),
        shaped(gemm(total * recurrent_share / steps, w_recurrent + batch * proj * b.s + gates, n), ib, h4, ip),
        mem(gate_bytes_per_step, n)};
  };
  switch (phase) {
    // gates: read 4H pre-activations (+ the input part), c_prev; write c, h (and keep them).
    case Phase::Forward: return split(op.macs_fwd, 2 * gates + 4 * state);
    // gate backward: read dh, dc, saved gates and c; write d(gates), dc_prev.
    case Phase::BackwardData: return split(op.macs_bwd_data, 3 * gates + 4 * state);
    case Phase::BackwardWeight: {
      // dW_ih = sum_t d(gates)^T x and dW_hh = sum_t d(gates)^T h: one GEMM each over all steps.
      const double total = static_cast<double>(op.macs_bwd_weight);
      return {shaped(gemm(total * (1 - recurrent_share), b.in + steps * gates + w_input), h4,
                     static_cast<std::int64_t>(in), bt),
              shaped(gemm(total * recurrent_share, steps * (gates + batch * proj * b.s) + w_recurrent), h4, ip, bt)};
    }
    case Phase::Update:
    case Phase::Recompute:
    case Phase::Other:
    case Phase::DataLoad: break;
  }
  return {};
}

/// Gather of B*T rows; the backward zero-fills the dense gradient and scatter-adds the rows.
std::vector<KernelWork> embedding_work(const Op& op, Phase phase, const OpBytes& b) {
  const double ids = op.input_shapes.empty() ? 0.0 : static_cast<double>(models::num_elements(op.input_shapes[0])) * 8;
  if (phase == Phase::Forward) return {mem(ids + 2 * b.out)};
  const double dense_grad = static_cast<double>(op.attrs.vocab * op.attrs.out_features) * b.s;
  if (phase == Phase::BackwardWeight) return {mem(dense_grad), mem(ids + 3 * b.out)};
  return {};
}

/// Sampled softmax over hidden [N, d] and num_sampled classes: gather the sampled rows, one GEMM
/// for the logits [N, S], softmax + cross-entropy; backward mirrors it.
std::vector<KernelWork> sampled_softmax_work(const Op& op, Phase phase, const OpBytes& b) {
  const auto& x = op.input_shapes.empty() ? op.output_shape : op.input_shapes.front();
  const double d = dim(x, x.size() - 1);
  const double rows = d > 0 ? static_cast<double>(models::num_elements(x)) / d : 0;
  const double sampled = static_cast<double>(std::max<std::int64_t>(op.attrs.num_sampled, 1));
  const double w = sampled * d * b.s, h = rows * d * b.s, logits = rows * sampled * b.s;
  switch (phase) {
    case Phase::Forward:
      return {mem(2 * w),
              shaped(gemm(static_cast<double>(op.macs_fwd), h + w + logits), static_cast<std::int64_t>(rows),
                     static_cast<std::int64_t>(sampled), static_cast<std::int64_t>(d)),
              mem(2 * logits)};
    case Phase::BackwardData: return {mem(3 * logits), gemm(static_cast<double>(op.macs_bwd_data), logits + w + h)};
    case Phase::BackwardWeight:
      return {gemm(static_cast<double>(op.macs_bwd_weight), logits + h + w), mem(b.weights), mem(3 * w)};
    case Phase::Update:
    case Phase::Recompute:
    case Phase::Other:
    case Phase::DataLoad: break;
  }
  return {};
}

/// log_softmax + nll_loss and their backwards (two kernels each way).
/// The nll kernels touch one value per row: out (the loss) plus labels, counted as 8 bytes.
std::vector<KernelWork> cross_entropy_work(Phase phase, const OpBytes& b) {
  if (phase == Phase::Forward) return {mem(2 * b.in), mem(b.out + 8)};
  if (phase == Phase::BackwardData) return {mem(b.in), mem(3 * b.in)};
  return {};
}

/// index_select of P of the T positions of [B, T, D]: the forward copies the B*P*D selected
/// elements (reading the P int64 indices); the backward zero-fills the [B, T, D] input gradient
/// and scatter-adds the B*P*D output gradient into it (index_add_): two kernels.
std::vector<KernelWork> gather_work(const Op& op, Phase phase, const OpBytes& b) {
  const double indices = static_cast<double>(models::kGatherIndexBytes * op.attrs.positions);
  if (phase == Phase::Forward) return {mem(b.rw)};
  if (phase != Phase::BackwardData) return {};
  const double input_grad =
      op.input_shapes.empty() ? 0.0 : static_cast<double>(models::num_elements(op.input_shapes[0])) * b.s;
  return {mem(input_grad), mem(2 * b.out + indices)};
}

/// Bandwidth-bound ops: the forward reads inputs (+ small weights) and writes the output; the
/// backward reads dY, the saved activations and weights and writes dX.
std::vector<KernelWork> memory_op_work(const Op& op, Phase phase, const OpBytes& b) {
  const bool normalization =
      op.kind == OpKind::BatchNorm || op.kind == OpKind::LayerNorm || op.kind == OpKind::RmsNorm;
  // Normalizations read their input twice: once for the statistics, once to normalize.
  const double extra = normalization ? b.in : 0.0;
  if (phase == Phase::Forward) return {mem(b.rw + extra)};
  if (phase == Phase::BackwardData) {
    // A layer or RMS norm's backward is two kernels in PyTorch, apex and Transformer Engine alike:
    // the input gradient (reads dY and X, writes dX) and the weight gradient, a column reduction
    // reading dY and X again (PyTorch's GammaBetaBackward, measured on the H200 beside it).
    if (op.params > 0 && (op.kind == OpKind::LayerNorm || op.kind == OpKind::RmsNorm))
      return {mem(b.rw + b.saved), mem(b.out + b.in)};
    const std::int64_t kernels = op.kind == OpKind::Mul ? 2 : 1;  // dA = dY*B and dB = dY*A
    return {mem((b.rw + b.saved + extra) / static_cast<double>(kernels), kernels)};
  }
  return {};
}

// The rates of fused attention kernels per GPU are the kernel model's (hardware::AttentionRates,
// with their sources); without one (a datasheet-less GPU) FlashAttention-2 on an A100's: forward at
// 60% of peak (Dao 2023: 50-73%), backward at 50%.
constexpr double kFlashForwardFraction = 0.6;
constexpr double kFlashBackwardFraction = 0.5;

/// What FlashAttention keeps for its backward (Dao et al. 2022, section 3.1): Q, K, V, the output O
/// and the fp32 log-sum-exp of each query row; dropout masks are regenerated from the RNG state.
Bytes flash_attention_saved_bytes(const Op& op) {
  const AttentionDims a = attention_dims(op);
  double inputs = 0;
  for (const auto& shape : op.input_shapes) inputs += static_cast<double>(models::num_elements(shape));
  const double output = static_cast<double>(models::num_elements(op.output_shape));
  const double bytes = (inputs + output) * models::dtype_size(op.dtype) + a.batch * a.heads * a.tq * 4.0;
  return static_cast<Bytes>(std::llround(bytes));
}

/// One fused kernel per direction: Q, K, V (and O, dO, dQ, dK, dV backward) cross HBM once. FLOPs
/// as flash-attention counts them: a causal self-attention computes half the score matrix (the
/// kernels skip the masked blocks; the rates are measured on that count), the backward 2.5 times
/// the forward (five matrix products instead of two, S recomputed).
double flash_attention_ns(const Op& op, Phase phase, const RooflineDevice& d, models::DType dtype,
                          AttentionKernel kernel) {
  const auto kernels =
      kernel == AttentionKernel::Flash ? hardware::FusedAttention::Native : hardware::FusedAttention::Ampere;
  const AttentionDims a = attention_dims(op);
  const double s = models::dtype_size(op.dtype);
  // MosaicML's Triton kernel: its tables time it as the whole matrix at FlashAttention-2's rates.
  const bool causal = op.attrs.causal && a.tq == a.tk && kernel != AttentionKernel::Triton;
  const double fwd_flops = 2.0 * (a.batch * a.tq * a.tk * a.d + a.batch * a.tq * a.tk * a.dv) * (causal ? 0.5 : 1.0);
  const double qkv = a.batch * (a.tq * a.d + a.tk * a.d + a.tk * a.dv) * s, o = a.batch * a.tq * a.dv * s;
  const double peak = d.peak_flops_per_ns(dtype);
  const bool backward = phase == Phase::BackwardData;
  if (!backward && phase != Phase::Forward) return 0;
  const double modelled = d.kernels ? d.kernels->attention(kernels).fraction(backward, a.tk, a.d / a.heads, causal) : 0;
  const double fraction = modelled > 0 ? modelled : backward ? kFlashBackwardFraction : kFlashForwardFraction;
  const double flops = backward ? 2.5 * fwd_flops : fwd_flops;
  const double bytes = backward ? 2 * (qkv + o) : qkv + o;
  return std::max(flops / (peak * fraction), bytes / d.spec.mem_bandwidth.value) + d.launch_overhead_ns;
}

/// FP8 scaling kernels of an FP8 GEMM op's phase (docs/models.md "FP8 matmuls"): forward, the
/// cast-transpose of its input X; backward-data, that of the output gradient dY (E5M2); each reads
/// bf16 and writes fp8 and its transpose, and writes the tensor's amax in the same pass (delayed
/// scaling: no separate amax pass). The weights W are cast once per step, not per micro-batch:
/// Transformer Engine caches their fp8 copy from the step's first micro-batch on
/// (`is_first_microbatch`, which Megatron-Core sets), and with `fp8_params` the optimizer step
/// writes it; so it is priced with the update (divided over ZeRO's ranks: right with fp8_params,
/// where each casts its shard, an underestimate without). Update also: the amax
/// history and scales of its 3 FP8 tensors (X, W, dY: kFp8AmaxHistory fp32 each, read and
/// written) - one fused kernel per step in Transformer Engine, so no launch of its own.
/// An experts op multiplies in FP8 twice per expert, on its dispatched slots: forward the casts of
/// fc1's input (slots x D) and fc2's (slots x F); backward-data those of fc2's output gradient
/// (slots x D) and fc1's (slots x 2F gated); once per step its experts' weights (the router
/// multiplies in bf16). Each local expert's fc1 and fc2 keep their own amax histories.
std::vector<KernelWork> expert_fp8_scaling_work(const Op& op, Phase phase) {
  const models::OpAttrs& a = op.attrs;
  const auto slots = static_cast<double>(models::expert_slots(op));
  const auto d = static_cast<double>(op.input_shapes[0].back()), f = static_cast<double>(a.out_features);
  const double width = a.gated ? 2 * f : f;
  const double expert_weights = static_cast<double>(op.params) - static_cast<double>(a.experts) * d;
  switch (phase) {
    case Phase::Forward: return {mem(kFp8CastBytesPerElement * slots * d), mem(kFp8CastBytesPerElement * slots * f)};
    case Phase::BackwardData:
      return {mem(kFp8CastBytesPerElement * slots * d), mem(kFp8CastBytesPerElement * slots * width)};
    case Phase::Update: {  // the scaling state of fc1 and fc2 of every local expert
      const auto gemms = static_cast<double>(2 * (a.experts / a.expert_shards));
      return {mem(kFp8CastBytesPerElement * expert_weights),
              {KernelClass::Memory, 0, 0.0, gemms * 3.0 * kFp8AmaxHistory * 4 * 2}};
    }
    default: return {};
  }
}

std::vector<KernelWork> fp8_scaling_work(const Op& op, Phase phase) {
  if (op.kind == OpKind::Experts) return expert_fp8_scaling_work(op, phase);
  const double x = op.input_shapes.empty() ? 0.0 : static_cast<double>(models::num_elements(op.input_shapes[0]));
  const double y = static_cast<double>(models::num_elements(op.output_shape));
  switch (phase) {
    case Phase::Forward: return {mem(kFp8CastBytesPerElement * x)};
    case Phase::BackwardData: return {mem(kFp8CastBytesPerElement * y)};
    case Phase::Update:
      return {mem(kFp8CastBytesPerElement * static_cast<double>(op.params)),
              {KernelClass::Memory, 0, 0.0, 3.0 * kFp8AmaxHistory * 4 * 2}};
    default: return {};
  }
}

}  // namespace

models::DType compute_dtype(const Op& op) {
  if (op.dtype != models::DType::FP8) return op.dtype;
  return fp8_gemm(op) ? models::DType::FP8 : models::DType::BF16;
}

double matmul_flops_per_sample(const models::Model& model) {
  double flops = 0;
  for (models::OpId v = 0; v < model.num_ops(); ++v)
    for (const Phase phase : {Phase::Forward, Phase::BackwardData, Phase::BackwardWeight})
      for (const KernelWork& k : phase_work(model.op(v), phase, Optimizer::Sgd))
        if (k.cls != KernelClass::Memory) flops += k.flops * static_cast<double>(k.count);
  return flops / static_cast<double>(std::max<std::int64_t>(1, model.batch()));
}

std::string fp8_overheads_note() {
  return "fp8: FP8 GEMMs (E4M3 forward, E5M2 gradients) in the transformer layers' linear and expert ops on the "
         "FP8 tensor cores (at the FP8 path's achievable share of its peak: `parasim clusters show`), bf16 tensors "
         "between ops, LM head, attention and elementwise ops in bf16; modelled "
         "overheads: cast-transpose of each GEMM input (X forward, dY backward, each expert GEMM's on its routed "
         "slots; W once per step, as Transformer Engine caches it across micro-batches: read bf16, write fp8 and its "
         "transpose, amax in the same pass), the delayed-scaling amax history update (" +
         std::to_string(kFp8AmaxHistory) +
         " entries), an fp8 copy and transpose of every weight (2 B/param); not modelled: the amax all-reduce "
         "across ranks (docs/models.md)";
}

std::vector<KernelWork> phase_work(const Op& op, Phase phase, Optimizer opt, bool tf32_convolutions,
                                   bool transposed_convolutions, MoeKernels moe) {
  if (!op_has_phase(op, phase)) return {};
  if (fp8_gemm(op)) {
    Op bf16 = op;
    bf16.dtype = models::DType::BF16;
    std::vector<KernelWork> work = phase_work(bf16, phase, opt, tf32_convolutions, transposed_convolutions, moe);
    for (const KernelWork& k : fp8_scaling_work(op, phase)) work.push_back(k);
    return work;
  }
  const OpBytes b = op_bytes(op);
  if (phase == Phase::Update) {
    // One fused (multi-tensor) kernel per op: bandwidth-bound at every optimizer's intensity.
    const double params = static_cast<double>(op.params);
    return {{KernelClass::Memory, 1, params * static_cast<double>(optimizer_flops_per_param(opt)),
             params * static_cast<double>(optimizer_traffic_bytes_per_param(opt, op.dtype))}};
  }
  switch (op.kind) {
    case OpKind::Conv2d: return conv_work(op, phase, b, tf32_convolutions, transposed_convolutions);
    case OpKind::Linear: return linear_work(op, phase, b);
    case OpKind::Experts: return experts_work(op, phase, b, moe);
    case OpKind::Matmul:
    case OpKind::BatchedMatmul: return matmul_work(op, phase, b);
    case OpKind::Attention: return attention_work(op, phase, b);
    case OpKind::Lstm: return lstm_work(op, phase, b);
    case OpKind::Embedding: return embedding_work(op, phase, b);
    case OpKind::SampledSoftmax: return sampled_softmax_work(op, phase, b);
    case OpKind::CrossEntropy: return cross_entropy_work(phase, b);
    case OpKind::Gather: return gather_work(op, phase, b);
    default: return memory_op_work(op, phase, b);
  }
}

// ------------------------------------------------------------------------------------------

double RooflineDevice::eff_max(KernelClass c) const {
  switch (c) {
    case KernelClass::Conv: return eff_conv;
    case KernelClass::Gemm: return eff_gemm;
    case KernelClass::Memory: return eff_mem;
  }
  return eff_mem;
}

double RooflineDevice::f_half(KernelClass c, models::DType dtype) const {
  return eff_max(c) * peak_flops_per_ns(dtype) * fill_time_ns;
}

double RooflineDevice::kernel_time_ns(const KernelWork& k, models::DType dtype, Fp32Math math) const {
  const bool memory_kernel = k.cls == KernelClass::Memory;
  // FP32 data on TF32 tensor cores: convolutions unless strict FP32, matmuls only when allowed.
  const bool tf32 =
      (k.cls == KernelClass::Conv && math != Fp32Math::Fp32) || (k.cls == KernelClass::Gemm && math == Fp32Math::Tf32);
  if (kernels && !memory_kernel && k.gemm.known())
    return kernels->gemm_time_ns(k.gemm, dtype, k.bytes, tf32) + launch_overhead_ns;
  double compute = 0;
  if (k.flops > 0) {
    if (k.cls == KernelClass::Memory) {
      // Elementwise arithmetic (optimizer, gates) runs on the plain FP32 units, no efficiency curve.
      compute = k.flops / (spec.peak_tflops(models::DType::F32) * 1e3);
    } else {
      // flops / (peak * eff(f)) with eff(f) = eff_max * f / (f + f_half)  ==  (f + f_half) / (peak * eff_max)
      compute = (k.flops + f_half(k.cls, dtype)) / (peak_flops_per_ns(dtype) * eff_max(k.cls));
    }
  }
  // GPUs price bandwidth-bound kernels on the kernel model's HBM curve; shapeless GEMMs and CPUs
  // keep the flat eff_mem.
  const double memory = kernels && memory_kernel ? kernels->memory_time_ns(k.bytes)
                        : k.bytes > 0            ? k.bytes / (spec.mem_bandwidth.value * eff_mem)
                                                 : 0.0;
  return std::max(compute, memory) + launch_overhead_ns;
}

RooflineCostModel::RooflineCostModel() = default;

void RooflineCostModel::set_kernel_scales(double matrix, double memory) {
  kernel_calibration_.kernels = {{std::string(Calibration::kAllKinds), KernelFactors{matrix, memory}}};
}

void RooflineCostModel::set_kernel_factors(std::map<std::string, KernelFactors, std::less<>> by_kind) {
  kernel_calibration_.kernels = std::move(by_kind);
}

KernelFactors RooflineCostModel::kernel_factors(const RooflineDevice& device) const {
  return kernel_calibration_.kernels.empty() ? KernelFactors{} : kernel_calibration_.kernel_factors(device.spec.kind);
}

void RooflineCostModel::add_device(RooflineDevice device) {
  std::lock_guard lock(mu_);
  const std::string kind = device.spec.kind;
  devices_[kind] = std::move(device);
}

const RooflineDevice& RooflineCostModel::device(const std::string& device_kind) const {
  std::lock_guard lock(mu_);
  if (auto it = devices_.find(device_kind); it != devices_.end()) return it->second;
  if (auto spec = hardware::find_device_spec(device_kind))
    return devices_.emplace(device_kind, gpu_roofline_device(*spec)).first->second;
  if (device_kind == "cpu" || device_kind.rfind("cpu-", 0) == 0)
    return devices_.emplace(device_kind, cpu_roofline_device(detect_host_cpu(), 1)).first->second;
  std::string known;
  for (const auto& s : hardware::device_specs()) known += s.kind + ", ";
  throw InputError("roofline: unknown device kind \"" + device_kind + "\"; known kinds: " + known + "cpu");
}

void RooflineCostModel::set_attention_kernel(AttentionKernel kernel) { attention_ = kernel; }

void RooflineCostModel::set_fp32_math(Fp32Math math) { fp32_math_ = math; }

void RooflineCostModel::set_conv_layout(ConvLayout layout) { conv_layout_ = layout; }

void RooflineCostModel::set_optimizer_kernels(OptimizerKernels kernels) { optimizer_kernels_ = kernels; }

void RooflineCostModel::set_moe_kernels(MoeKernels kernels) { moe_kernels_ = kernels; }

void RooflineCostModel::set_mixed_precision(MixedPrecision precision) { mixed_precision_ = precision; }

namespace {

/// What eager torch.autocast adds to a 16-bit op's kernels (fp32 modules; docs/fidelity.md):
/// norms, residual adds, embeddings and the loss move every byte at 4 bytes an element, a norm's
/// output is cast for the GEMM it feeds (read 4, write 2; its gradient back: read 2, write 4), the
/// logits likewise for the loss, and each weight is cast in the forward and its gradient back
/// after the weight-gradient GEMM (6 B per parameter each way).
void add_autocast_work(const Op& op, Phase phase, std::vector<KernelWork>& work) {
  const double s = static_cast<double>(models::dtype_size(op.dtype));
  const double widen = 4.0 / s;
  const double out = static_cast<double>(models::num_elements(op.output_shape));
  const bool norm = op.kind == OpKind::LayerNorm || op.kind == OpKind::RmsNorm;
  const bool fp32_op = norm || op.kind == OpKind::Embedding || op.kind == OpKind::CrossEntropy ||
                       (op.kind == OpKind::Add && op.attrs.residual);
  if (fp32_op)
    for (KernelWork& k : work)
      if (k.cls == KernelClass::Memory) k.bytes *= widen;
  const bool activation_pass = phase == Phase::Forward || phase == Phase::BackwardData;
  if (norm && activation_pass) work.push_back(mem(6.0 * out));
  if (op.kind == OpKind::CrossEntropy && activation_pass && !op.input_shapes.empty())
    work.push_back(mem(6.0 * static_cast<double>(models::num_elements(op.input_shapes[0]))));
  // The weights an autocast op casts: a linear layer's matrix (a tied head casts the table it shares).
  double weights = 0;
  if (op.kind == OpKind::Linear) weights = static_cast<double>(op.attrs.in_features * op.attrs.out_features);
  else if (op.kind == OpKind::Conv2d || op.kind == OpKind::Experts || op.kind == OpKind::Lstm)
    weights = static_cast<double>(op.params);
  if (weights > 0 && (phase == Phase::Forward || phase == Phase::BackwardWeight)) work.push_back(mem(6.0 * weights));
}

}  // namespace

TimeNs RooflineCostModel::phase_time(const Op& op, Phase phase, const RooflineDevice& device, Optimizer opt) const {
  TimeNs launch = 0;
  return phase_time(op, phase, device, opt, launch);
}

TimeNs RooflineCostModel::phase_time(const Op& op, Phase phase, const RooflineDevice& device, Optimizer opt,
                                     TimeNs& launch) const {
  const models::DType dtype = compute_dtype(op);
  const KernelFactors factors = kernel_factors(device);
  launch = 0;
  if (attention_ != AttentionKernel::Unfused && !device.is_cpu && op.kind == OpKind::Attention && !op.attrs.additive &&
      op_has_phase(op, phase)) {
    const TimeNs t =
        static_cast<TimeNs>(std::llround(flash_attention_ns(op, phase, device, dtype, attention_) * factors.matrix));
    launch = std::min(t, static_cast<TimeNs>(std::llround(device.launch_overhead_ns * factors.matrix)));
    return t;
  }
  double t = 0, launches = 0;
  const bool tf32_convolutions =
      !device.is_cpu && fp32_math_ != Fp32Math::Fp32 && device.spec.tf32_tflops > device.spec.fp32_tflops;
  // Tensor-core convolutions on NCHW activations pay cuDNN's layout transposes.
  const bool tensor_core_convs =
      device.kernels && (dtype == models::DType::F32 ? tf32_convolutions : device.kernels->uses_tensor_cores(dtype));
  const bool transposed = tensor_core_convs && conv_layout_ == ConvLayout::Nchw;
  std::vector<KernelWork> work = phase_work(op, phase, opt, tf32_convolutions, transposed, moe_kernels_);
  // torch.optim's foreach steps: the same launch (a multi-tensor kernel spans many ops' tensors),
  // one pass per elementwise step. The optimizer's kernel comes first; FP8's weight cast and
  // amax-history work after it stay as they are.
  if (phase == Phase::Update && optimizer_kernels_ == OptimizerKernels::Foreach && !device.is_cpu && !work.empty())
    work.front().bytes =
        static_cast<double>(op.params) * static_cast<double>(foreach_optimizer_traffic_bytes_per_param(opt));
  const bool sixteen_bit = op.dtype == models::DType::F16 || op.dtype == models::DType::BF16;
  if (mixed_precision_ == MixedPrecision::Autocast && !device.is_cpu && sixteen_bit && !work.empty())
    add_autocast_work(op, phase, work);
  for (const KernelWork& k : work) {
    // count 0: a share of a kernel fused across ops (FP8 amax history): its bytes, no launch.
    const double one = k.count == 0 && device.kernels
                           ? device.kernels->memory_time_ns(k.bytes)
                           : static_cast<double>(k.count) * device.kernel_time_ns(k, dtype, fp32_math_);
    const double factor = k.cls == KernelClass::Memory ? factors.memory : factors.matrix;
    t += one * factor;
    launches += static_cast<double>(k.count) * device.launch_overhead_ns * factor;  // count 0: no launch
  }
  const auto total = static_cast<TimeNs>(std::llround(t));
  launch = std::min(total, static_cast<TimeNs>(std::llround(launches)));
  return total;
}

OpCost RooflineCostModel::cost(const Op& op, const std::string& device_kind, Optimizer opt) const {
  const RooflineDevice& d = device(device_kind);
  if (op.dtype == models::DType::FP8) hardware::require_dtype_support(d.spec.kind, op.dtype);
  OpCost c;
  c.source = CostSource::Roofline;
  for (Phase p : kPhases) {
    TimeNs launch = 0;
    c.at(p) = phase_time(op, p, d, opt, launch);
    if (p == Phase::Forward) c.launch_fwd = launch;
    if (p == Phase::BackwardData) c.launch_bwd_data = launch;
    if (p == Phase::BackwardWeight) c.launch_bwd_weight = launch;
  }
  if (attention_ != AttentionKernel::Unfused && !d.is_cpu && op.kind == OpKind::Attention && !op.attrs.additive)
    c.saved_bytes = std::min<Bytes>(op.activation_bytes, flash_attention_saved_bytes(op));
  return c;
}

TimeNs RooflineCostModel::memory_pass_ns(Bytes bytes, const std::string& device_kind) const {
  if (bytes <= 0) return 0;
  const RooflineDevice& d = device(device_kind);
  const KernelWork pass{KernelClass::Memory, 1, 0.0, static_cast<double>(bytes)};
  return static_cast<TimeNs>(
      std::llround(d.kernel_time_ns(pass, models::DType::F32, fp32_math_) * kernel_factors(d).memory));
}

namespace {
constexpr const char* kKernelModelSummary =
    "GPU kernel model (GEMM/conv tiles and waves at measured achievable fractions of peak, HBM by kernel size, 5 us "
    "per kernel launch, ";
}  // namespace

std::string RooflineCostModel::describe_per_run_kernels() {
  return std::string(kKernelModelSummary) +
         "attention kernels, convolution layout, optimizer kernels, mixed precision and MoE routing kernels as each "
         "run "
         "states them (its caveats; the attention column); docs/fidelity.md); CPU roofline";
}

std::string RooflineCostModel::describe() const {
  const char* fp32 = fp32_math_ == Fp32Math::PyTorch ? ", FP32 convolutions on TF32 tensor cores where there are"
                     : fp32_math_ == Fp32Math::Tf32  ? ", FP32 convolutions and matmuls on TF32 tensor cores where "
                                                       "there are"
                                                     : ", FP32 math on CUDA cores";
  return kKernelModelSummary + to_string(attention_) + " attention" + fp32 +
         (conv_layout_ == ConvLayout::Nchw ? ", NCHW convolutions transposed around tensor-core kernels"
                                           : ", NHWC convolutions") +
         (optimizer_kernels_ == OptimizerKernels::Fused ? ", fused optimizer kernels"
                                                        : ", torch.optim foreach optimizer (one pass per step)") +
         (mixed_precision_ == MixedPrecision::Native
              ? ""
              : ", torch.autocast (fp32 norms, residual stream and loss, casts)") +
         (moe_kernels_ == MoeKernels{} ? "" : ", MoE routing kernels " + to_string(moe_kernels_)) +
         "; docs/fidelity.md); CPU roofline";
}

}  // namespace parasim::profiler
