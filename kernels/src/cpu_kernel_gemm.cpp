// Matrix ops on oneDNN: Linear (inner_product fwd / bwd data / bwd weights), Matmul and
// BatchedMatmul (matmul, with transposed operands as strided memory descriptors in the backward),
// and the attention core (QK^T and PV as batched matmuls around a softmax; Bahdanau additive
// scores as a reference loop because oneDNN has no primitive for v.tanh(q + k + b)).
#include <cmath>
#include <numeric>

#include "cpu_kernel_common.hpp"
#include "parasim/common/error.hpp"

#if PARASIM_HAVE_DNNL

namespace parasim::kernels::cpu {

namespace {

using namespace dnnl;

std::int64_t product(const models::Shape& s, std::size_t first, std::size_t last) {
  std::int64_t p = 1;
  for (std::size_t i = first; i < last && i < s.size(); ++i) p *= s[i];
  return p;
}

Prim matmul_prim(Context& ctx, const memory::desc& a, const memory::desc& b, const memory::desc& c) {
  matmul::primitive_desc pd(matmul::desc(a, b, c), ctx.engine);
  return make_prim<matmul>(ctx, pd);
}

/// A [.., rows, cols] stored row-major, described as its transpose [.., cols, rows].
memory::desc transposed_md(const Dims& stored, DataType dt) {
  if (stored.size() == 2) return memory::desc({stored[1], stored[0]}, dt, Tag::ba);
  return memory::desc({stored[0], stored[2], stored[1]}, dt, Tag::acb);
}

/// How many operands of a two-input matmul need a gradient (0, 1 or 2).
std::int64_t data_gradients(const models::Op& op) {
  if (op.macs_fwd <= 0) return 0;
  return std::min<std::int64_t>(2, op.macs_bwd_data / op.macs_fwd);
}

/// C = A B with A [batch, M, K] (batch = 0: 2-D), B [batch, K, N].
void build_gemm_pair(Builder& b, const Dims& a, const Dims& w, const Dims& c) {
  const DataType dt = b.dt();
  b.add(Phase::Forward, matmul_prim(b.ctx(), plain_md(a, dt), plain_md(w, dt), plain_md(c, dt)), "matmul");
  if (!b.has(Phase::BackwardData)) return;
  const std::int64_t grads = data_gradients(b.op());
  // dA = dC B^T
  b.add(Phase::BackwardData, matmul_prim(b.ctx(), plain_md(c, dt), transposed_md(w, dt), plain_md(a, dt)), "matmul_dA");
  // dB = A^T dC
  if (grads >= 2)
    b.add(Phase::BackwardData, matmul_prim(b.ctx(), transposed_md(a, dt), plain_md(c, dt), plain_md(w, dt)),
          "matmul_dB");
}

}  // namespace

void build_linear(Builder& b) {
  const models::Op& op = b.op();
  const auto& x = op.input_shapes.at(0);
  const memory::dim in = x.back();
  const memory::dim rows = product(x, 0, x.size() - 1);
  const memory::dim out = op.attrs.out_features;
  const DataType dt = b.dt();
  const memory::desc src = plain_md({rows, in}, dt), dst = plain_md({rows, out}, dt);
  const memory::desc weights = any_md({out, in}, dt);
  const memory::desc bias = op.attrs.bias ? plain_md({out}, dt) : memory::desc();
  inner_product_forward::primitive_desc fwd_pd(
      inner_product_forward::desc(prop_kind::forward_training, src, weights, bias, dst), b.ctx().engine);
  auto fwd = b.add(Phase::Forward, make_prim<inner_product_forward>(b.ctx(), fwd_pd), "inner_product");
  if (b.has(Phase::BackwardData)) {
    inner_product_backward_data::primitive_desc pd(inner_product_backward_data::desc(src, weights, dst), b.ctx().engine,
                                                   fwd_pd);
    b.add(Phase::BackwardData, make_prim<inner_product_backward_data>(b.ctx(), pd, fwd->args), "ip_bwd_data");
  }
  if (b.has(Phase::BackwardWeight)) {
    inner_product_backward_weights::primitive_desc pd(inner_product_backward_weights::desc(src, weights, bias, dst),
                                                      b.ctx().engine, fwd_pd);
    b.add(Phase::BackwardWeight, make_prim<inner_product_backward_weights>(b.ctx(), pd, fwd->args), "ip_bwd_weights");
  }
}

void build_matmul(Builder& b) {
  const models::Op& op = b.op();
  const auto& a = op.input_shapes.at(0);
  const auto& w = op.input_shapes.at(1);
  const memory::dim rows = product(a, 0, a.size() - 1);
  build_gemm_pair(b, {rows, a.back()}, {w[0], w[1]}, {rows, w[1]});
}

void build_batched_matmul(Builder& b) {
  const models::Op& op = b.op();
  const auto& a = op.input_shapes.at(0);
  const auto& w = op.input_shapes.at(1);
  const std::size_t r = a.size();
  const memory::dim batch = product(a, 0, r - 2);
  build_gemm_pair(b, {batch, a[r - 2], a[r - 1]}, {batch, w[r - 2], w[r - 1]}, {batch, a[r - 2], w[r - 1]});
}

namespace {

struct AttentionShape {
  memory::dim batch, heads, tq, tk, d, dv;
};

AttentionShape attention_shape(const models::Op& op) {
  AttentionShape s{};
  s.heads = std::max<memory::dim>(op.attrs.heads, 1);
  if (op.input_shapes.size() == 1) {
    if (op.attrs.kv_heads > 0) throw RuntimeError("CPU backend: no grouped-query attention kernel yet");
    const auto& x = op.input_shapes[0];
    s = {x[0], s.heads, x[1], x[1], x[2] / 3, x[2] / 3};
  } else {
    const auto& q = op.input_shapes.at(0);
    const auto& v = op.input_shapes.at(2);
    s = {q[0], s.heads, q[1], v[1], q[2], v[2]};
  }
  return s;
}

/// Bahdanau scores S[b,h,i,j] = sum over d in head h of v[d] tanh(q[b,i,d] + k[b,j,d] + bias[d]),
/// and their gradients. tanh is recomputed in the backward instead of keeping a [B,Tq,Tk,D] tensor.
struct AdditiveScores {
  AttentionShape s;
  std::vector<float> q, k, v, bias, scores, dscores, dq, dk, dv, dbias;

  explicit AdditiveScores(const AttentionShape& shape) : s(shape) {
    const auto n = [](auto... d) { return static_cast<std::size_t>((d * ...)); };
    q = uniform_vector(n(s.batch, s.tq, s.d), 11);
    k = uniform_vector(n(s.batch, s.tk, s.d), 12);
    v = uniform_vector(n(s.d), 13);
    bias = uniform_vector(n(s.d), 14);
    scores.assign(n(s.batch, s.heads, s.tq, s.tk), 0.0f);
    dscores = uniform_vector(scores.size(), 15);
    dq.assign(q.size(), 0.0f);
    dk.assign(k.size(), 0.0f);
    dv.assign(v.size(), 0.0f);
    dbias.assign(bias.size(), 0.0f);
  }

  template <class Body>
  void for_each(Body body) {
    const memory::dim dh = s.d / s.heads;
    for (memory::dim bi = 0; bi < s.batch; ++bi)
      for (memory::dim h = 0; h < s.heads; ++h)
        for (memory::dim i = 0; i < s.tq; ++i)
          for (memory::dim j = 0; j < s.tk; ++j) {
            const std::size_t si = static_cast<std::size_t>(((bi * s.heads + h) * s.tq + i) * s.tk + j);
            const float* qi = &q[static_cast<std::size_t>((bi * s.tq + i) * s.d + h * dh)];
            const float* kj = &k[static_cast<std::size_t>((bi * s.tk + j) * s.d + h * dh)];
            body(si, qi, kj, h * dh, dh, bi, i, j);
          }
  }

  void forward() {
    for_each([&](std::size_t si, const float* qi, const float* kj, memory::dim d0, memory::dim dh, memory::dim,
                 memory::dim, memory::dim) {
      float acc = 0;
      for (memory::dim d = 0; d < dh; ++d)
        acc += v[static_cast<std::size_t>(d0 + d)] * std::tanh(qi[d] + kj[d] + bias[static_cast<std::size_t>(d0 + d)]);
      scores[si] = acc;
    });
  }

  void backward_data() {
    std::fill(dq.begin(), dq.end(), 0.0f);
    std::fill(dk.begin(), dk.end(), 0.0f);
    for_each([&](std::size_t si, const float* qi, const float* kj, memory::dim d0, memory::dim dh, memory::dim bi,
                 memory::dim i, memory::dim j) {
      for (memory::dim d = 0; d < dh; ++d) {
        const auto c = static_cast<std::size_t>(d0 + d);
        const float t = std::tanh(qi[d] + kj[d] + bias[c]);
        const float g = dscores[si] * v[c] * (1 - t * t);
        dq[static_cast<std::size_t>((bi * s.tq + i) * s.d) + c] += g;
        dk[static_cast<std::size_t>((bi * s.tk + j) * s.d) + c] += g;
      }
    });
  }

  void backward_weight() {
    std::fill(dv.begin(), dv.end(), 0.0f);
    std::fill(dbias.begin(), dbias.end(), 0.0f);
    for_each([&](std::size_t si, const float* qi, const float* kj, memory::dim d0, memory::dim dh, memory::dim,
                 memory::dim, memory::dim) {
      for (memory::dim d = 0; d < dh; ++d) {
        const auto c = static_cast<std::size_t>(d0 + d);
        const float t = std::tanh(qi[d] + kj[d] + bias[c]);
        dv[c] += dscores[si] * t;
        dbias[c] += dscores[si] * v[c] * (1 - t * t);
      }
    });
  }
};

}  // namespace

void build_attention(Builder& b) {
  const AttentionShape s = attention_shape(b.op());
  const bool additive = b.op().attrs.additive;
  const DataType dt = additive ? DataType::f32 : b.dt();
  const memory::dim bh = s.batch * s.heads, dh = s.d / s.heads, dvh = s.dv / s.heads;
  const Dims q{bh, s.tq, dh}, k{bh, s.tk, dh}, v{bh, s.tk, dvh}, scores{bh, s.tq, s.tk}, out{bh, s.tq, dvh};

  std::shared_ptr<AdditiveScores> add_scores;
  if (additive) {
    add_scores = std::make_shared<AdditiveScores>(s);
    b.add(Phase::Forward, [add_scores] { add_scores->forward(); }, "additive_scores");
    b.note("additive scores: reference loop in fp32, tanh recomputed in the backward");
  } else {
    b.add(Phase::Forward, matmul_prim(b.ctx(), plain_md(q, dt), transposed_md(k, dt), plain_md(scores, dt)), "QK^T");
  }
  softmax_forward::primitive_desc sm_pd(softmax_forward::desc(prop_kind::forward_training, plain_md(scores, dt), 2),
                                        b.ctx().engine);
  auto sm = b.add(Phase::Forward, make_prim<softmax_forward>(b.ctx(), sm_pd), "softmax");
  b.add(Phase::Forward, matmul_prim(b.ctx(), plain_md(scores, dt), plain_md(v, dt), plain_md(out, dt)), "PV");

  if (b.has(Phase::BackwardData)) {
    b.add(Phase::BackwardData, matmul_prim(b.ctx(), transposed_md(scores, dt), plain_md(out, dt), plain_md(v, dt)),
          "dV");
    b.add(Phase::BackwardData, matmul_prim(b.ctx(), plain_md(out, dt), transposed_md(v, dt), plain_md(scores, dt)),
          "dP");
    softmax_backward::primitive_desc pd(softmax_backward::desc(plain_md(scores, dt), plain_md(scores, dt), 2),
                                        b.ctx().engine, sm_pd);
    b.add(Phase::BackwardData, make_prim<softmax_backward>(b.ctx(), pd, sm->args), "softmax_bwd");
    if (additive) {
      b.add(Phase::BackwardData, [add_scores] { add_scores->backward_data(); }, "additive_scores_bwd");
    } else {
      b.add(Phase::BackwardData, matmul_prim(b.ctx(), plain_md(scores, dt), plain_md(k, dt), plain_md(q, dt)), "dQ");
      b.add(Phase::BackwardData, matmul_prim(b.ctx(), transposed_md(scores, dt), plain_md(q, dt), plain_md(k, dt)),
            "dK");
    }
  }
  if (additive && b.has(Phase::BackwardWeight))
    b.add(Phase::BackwardWeight, [add_scores] { add_scores->backward_weight(); }, "additive_scores_dW");
}

}  // namespace parasim::kernels::cpu

#endif
