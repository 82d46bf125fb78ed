// Embedding, cross-entropy and sampled softmax: gathers and scatters are reference loops (oneDNN
// has no gather primitive in 2.6), the dense parts use oneDNN (logsoftmax, matmul). Losses run in
// fp32 whatever the model dtype, as mixed-precision training does.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "cpu_kernel_common.hpp"
#include "parasim/kernels/gather.hpp"

#if PARASIM_HAVE_DNNL

namespace parasim::kernels::cpu {

namespace {

using namespace dnnl;

std::int64_t elements(const models::Shape& s) {
  return std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>());
}

/// Deterministic ids in [0, range).
std::vector<std::int32_t> random_ids(std::size_t n, std::int64_t range, std::uint64_t seed) {
  std::vector<std::int32_t> ids(n);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& id : ids) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    id = static_cast<std::int32_t>((x >> 16) % static_cast<std::uint64_t>(std::max<std::int64_t>(range, 1)));
  }
  return ids;
}

float* data(memory& m) { return static_cast<float*>(m.get_data_handle()); }

struct Embedding {
  std::int64_t dim = 0;
  std::vector<std::int32_t> ids;
  std::vector<float> table, out, dout, dtable;

  void forward() {
    for (std::size_t i = 0; i < ids.size(); ++i)
      std::memcpy(&out[i * static_cast<std::size_t>(dim)],
                  &table[static_cast<std::size_t>(ids[i]) * static_cast<std::size_t>(dim)],
                  static_cast<std::size_t>(dim) * sizeof(float));
  }
  void zero_grad() { std::fill(dtable.begin(), dtable.end(), 0.0f); }
  void scatter_add() {
    const auto d = static_cast<std::size_t>(dim);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      float* row = &dtable[static_cast<std::size_t>(ids[i]) * d];
      const float* g = &dout[i * d];
      for (std::size_t k = 0; k < d; ++k) row[k] += g[k];
    }
  }
};

}  // namespace

void build_embedding(Builder& b) {
  const models::Op& op = b.op();
  auto e = std::make_shared<Embedding>();
  e->dim = op.attrs.out_features;
  const auto n = static_cast<std::size_t>(elements(op.input_shapes.at(0)));
  const auto table = static_cast<std::size_t>(op.attrs.vocab * e->dim);
  e->ids = random_ids(n, op.attrs.vocab, 51);
  e->table = uniform_vector(table, 52);
  e->out.assign(n * static_cast<std::size_t>(e->dim), 0.0f);
  b.add(Phase::Forward, [e] { e->forward(); }, "gather");
  if (b.has(Phase::BackwardWeight)) {
    e->dout = uniform_vector(e->out.size(), 53);
    e->dtable.assign(table, 0.0f);
    // Like PyTorch's dense embedding backward: zero the whole gradient, then add the rows.
    b.add(Phase::BackwardWeight, [e] { e->zero_grad(); }, "zero_grad");
    b.add(Phase::BackwardWeight, [e] { e->scatter_add(); }, "scatter_add");
  }
  if (b.dt() != DataType::f32) b.note("gather/scatter loops run in fp32");
}

void build_gather(Builder& b) {
  // [B, T, D] -> [B, P, D] at evenly spaced positions; the backward zero-fills the input gradient
  // and scatter-adds (index_select's backward), two steps as on a GPU.
  struct Gather {
    std::int64_t batch = 0, seq = 0, dim = 0;
    std::vector<std::int64_t> idx;
    std::vector<float> x, y, dy, dx;
  };
  const models::Shape& in = b.op().input_shapes.at(0);
  auto g = std::make_shared<Gather>();
  g->batch = in.at(0), g->seq = in.at(1), g->dim = in.at(2);
  g->idx = gather_positions(g->seq, b.op().attrs.positions);
  g->x = uniform_vector(static_cast<std::size_t>(elements(in)), 71);
  g->y.assign(static_cast<std::size_t>(elements(b.op().output_shape)), 0.0f);
  auto forward = [g] { gather_forward(g->x.data(), g->idx, g->y.data(), g->batch, g->seq, g->dim); };
  b.add(Phase::Forward, forward, "gather");
  if (b.has(Phase::BackwardData)) {
    g->dy = uniform_vector(g->y.size(), 72);
    g->dx.assign(g->x.size(), 0.0f);
    auto zero = [g] { gather_zero_grad(g->dx.data(), g->batch, g->seq, g->dim); };
    auto scatter = [g] { gather_scatter_add(g->dy.data(), g->idx, g->dx.data(), g->batch, g->seq, g->dim); };
    b.add(Phase::BackwardData, zero, "zero_grad");
    b.add(Phase::BackwardData, scatter, "scatter_add");
  }
  if (b.dt() != DataType::f32) b.note("gather/scatter loops run in fp32");
}

void build_cross_entropy(Builder& b) {
  const auto& x = b.op().input_shapes.at(0);
  const memory::dim classes = x.back();
  const memory::dim rows = elements(x) / classes;
  const memory::desc md = plain_md({rows, classes}, DataType::f32);
  logsoftmax_forward::primitive_desc fwd_pd(logsoftmax_forward::desc(prop_kind::forward_training, md, 1),
                                            b.ctx().engine);
  auto fwd = b.add(Phase::Forward, make_prim<logsoftmax_forward>(b.ctx(), fwd_pd), "logsoftmax");
  auto labels = std::make_shared<std::vector<std::int32_t>>(random_ids(static_cast<std::size_t>(rows), classes, 61));
  auto loss = std::make_shared<float>(0.0f);
  const float* logp = data(fwd->arg(DNNL_ARG_DST));
  b.add(Phase::Forward, [labels, loss, logp, classes] {
    double acc = 0;
    for (std::size_t r = 0; r < labels->size(); ++r)
      acc -= logp[r * static_cast<std::size_t>(classes) + static_cast<std::size_t>((*labels)[r])];
    *loss = static_cast<float>(acc / static_cast<double>(labels->size()));
  }, "nll");
  if (!b.has(Phase::BackwardData)) return;
  logsoftmax_backward::primitive_desc pd(logsoftmax_backward::desc(md, md, 1), b.ctx().engine, fwd_pd);
  auto bwd = std::make_shared<Prim>(make_prim<logsoftmax_backward>(b.ctx(), pd, fwd->args));
  float* dlogp = data(bwd->arg(DNNL_ARG_DIFF_DST));
  b.add(Phase::BackwardData, [labels, dlogp, rows, classes] {
    // nll backward: zero, then -1/rows at each label.
    std::fill(dlogp, dlogp + rows * classes, 0.0f);
    for (std::size_t r = 0; r < labels->size(); ++r)
      dlogp[r * static_cast<std::size_t>(classes) + static_cast<std::size_t>((*labels)[r])] =
          -1.0f / static_cast<float>(rows);
  }, "nll_bwd");
  b.add(Phase::BackwardData, std::move(*bwd), "logsoftmax_bwd");
  if (b.dt() != DataType::f32) b.note("loss in fp32");
}

namespace {

/// Sampled softmax with `sampled` shared negatives: logits of row n are its true class (a dot
/// product with that class's row) followed by the sampled classes (one matmul for all rows).
struct SampledSoftmax {
  std::int64_t rows = 0, dim = 0, sampled = 0, vocab = 0;
  std::vector<std::int32_t> samples, labels;
  std::vector<float> table, bias, hidden;          // parameters and input
  float* ws = nullptr;                             // gathered sampled rows [S, d] (matmul operand)
  float* logits = nullptr;                         // [N, S] (matmul output)
  std::vector<float> sampled_bias, true_logit, probs, dtrue;  // probs [N, S + 1]
  float* dlogits = nullptr;                        // [N, S] (operand of the backward matmuls)
  float* dhidden = nullptr;                        // [N, d]
  float* dws = nullptr;                            // [S, d]
  std::vector<float> dtable, dbias;

  std::size_t d() const { return static_cast<std::size_t>(dim); }

  void gather() {
    for (std::int64_t s = 0; s < sampled; ++s) {
      const auto row = static_cast<std::size_t>(samples[static_cast<std::size_t>(s)]);
      std::memcpy(ws + static_cast<std::size_t>(s) * d(), &table[row * d()], d() * sizeof(float));
      sampled_bias[static_cast<std::size_t>(s)] = bias[row];
    }
  }
  void loss() {
    const auto cols = static_cast<std::size_t>(sampled) + 1;
    for (std::int64_t n = 0; n < rows; ++n) {
      const auto nn = static_cast<std::size_t>(n);
      const auto label = static_cast<std::size_t>(labels[nn]);
      float t = bias[label];
      for (std::size_t k = 0; k < d(); ++k) t += hidden[nn * d() + k] * table[label * d() + k];
      true_logit[nn] = t;
      float* p = &probs[nn * cols];
      p[0] = t;
      float mx = t;
      for (std::size_t s = 0; s < cols - 1; ++s) {
        p[s + 1] = logits[nn * (cols - 1) + s] + sampled_bias[s];
        mx = std::max(mx, p[s + 1]);
      }
      float sum = 0;
      for (std::size_t s = 0; s < cols; ++s) sum += (p[s] = std::exp(p[s] - mx));
      for (std::size_t s = 0; s < cols; ++s) p[s] /= sum;
    }
  }
  void loss_backward() {
    const auto cols = static_cast<std::size_t>(sampled) + 1;
    const float scale = 1.0f / static_cast<float>(rows);
    for (std::size_t n = 0; n < static_cast<std::size_t>(rows); ++n) {
      dtrue[n] = (probs[n * cols] - 1.0f) * scale;
      for (std::size_t s = 0; s + 1 < cols; ++s) dlogits[n * (cols - 1) + s] = probs[n * cols + s + 1] * scale;
    }
  }
  void true_class_backward() {
    for (std::size_t n = 0; n < static_cast<std::size_t>(rows); ++n) {
      const auto label = static_cast<std::size_t>(labels[n]);
      for (std::size_t k = 0; k < d(); ++k) dhidden[n * d() + k] += dtrue[n] * table[label * d() + k];
    }
  }
  void scatter_weights() {
    std::fill(dtable.begin(), dtable.end(), 0.0f);
    std::fill(dbias.begin(), dbias.end(), 0.0f);
    for (std::size_t s = 0; s < static_cast<std::size_t>(sampled); ++s) {
      const auto row = static_cast<std::size_t>(samples[s]);
      for (std::size_t k = 0; k < d(); ++k) dtable[row * d() + k] += dws[s * d() + k];
    }
    for (std::size_t n = 0; n < static_cast<std::size_t>(rows); ++n) {
      const auto label = static_cast<std::size_t>(labels[n]);
      for (std::size_t k = 0; k < d(); ++k) dtable[label * d() + k] += dtrue[n] * hidden[n * d() + k];
      dbias[label] += dtrue[n];
    }
  }
};

Prim plain_matmul(Context& ctx, const memory::desc& a, const memory::desc& w, const memory::desc& c) {
  matmul::primitive_desc pd(matmul::desc(a, w, c), ctx.engine);
  return make_prim<matmul>(ctx, pd);
}

}  // namespace

void build_sampled_softmax(Builder& b) {
  const models::Op& op = b.op();
  const auto& x = op.input_shapes.at(0);
  auto s = std::make_shared<SampledSoftmax>();
  s->dim = x.back();
  s->rows = elements(x) / s->dim;
  s->sampled = op.attrs.num_sampled;
  s->vocab = op.attrs.vocab;
  const auto n = static_cast<std::size_t>(s->rows), d = s->d(), ns = static_cast<std::size_t>(s->sampled);
  s->samples = random_ids(ns, s->vocab, 71);
  s->labels = random_ids(n, s->vocab, 72);
  s->table = uniform_vector(static_cast<std::size_t>(s->vocab) * d, 73);
  s->bias = uniform_vector(static_cast<std::size_t>(s->vocab), 74);
  s->sampled_bias.assign(ns, 0.0f);
  s->true_logit.assign(n, 0.0f);
  s->probs.assign(n * (ns + 1), 0.0f);
  s->dtrue.assign(n, 0.0f);
  const DataType f32 = DataType::f32;
  const memory::dim N = s->rows, D = s->dim, S = s->sampled;

  // logits [N, S] = hidden [N, d] x sampled_rows^T [d, S]
  auto logits = std::make_shared<Prim>(plain_matmul(b.ctx(), plain_md({N, D}, f32), memory::desc({D, S}, f32, Tag::ba),
                                                    plain_md({N, S}, f32)));
  s->hidden.assign(n * d, 0.0f);
  std::memcpy(s->hidden.data(), data(logits->arg(DNNL_ARG_SRC)), n * d * sizeof(float));
  logits->arg(DNNL_ARG_SRC).set_data_handle(s->hidden.data());
  s->ws = data(logits->arg(DNNL_ARG_WEIGHTS));
  s->logits = data(logits->arg(DNNL_ARG_DST));
  b.add(Phase::Forward, [s] { s->gather(); }, "gather_sampled");
  b.add(Phase::Forward, std::move(*logits), "logits_matmul");
  b.add(Phase::Forward, [s] { s->loss(); }, "softmax_xent");

  if (b.has(Phase::BackwardData) || b.has(Phase::BackwardWeight)) {
    // The loss gradient feeds both backward phases; it runs in the first one the op has.
    auto dl = std::make_shared<std::vector<float>>(uniform_vector(n * ns, 75));
    s->dlogits = dl->data();
    const Phase first = b.has(Phase::BackwardData) ? Phase::BackwardData : Phase::BackwardWeight;
    b.add(first, [s, dl] { s->loss_backward(); }, "softmax_xent_bwd");
  }
  if (b.has(Phase::BackwardData)) {
    // dhidden [N, d] = dlogits [N, S] x sampled_rows [S, d]
    Prim p = plain_matmul(b.ctx(), plain_md({N, S}, f32), plain_md({S, D}, f32), plain_md({N, D}, f32));
    p.arg(DNNL_ARG_SRC).set_data_handle(s->dlogits);
    p.arg(DNNL_ARG_WEIGHTS).set_data_handle(s->ws);
    s->dhidden = data(p.arg(DNNL_ARG_DST));
    b.add(Phase::BackwardData, std::move(p), "dhidden_matmul");
    b.add(Phase::BackwardData, [s] { s->true_class_backward(); }, "true_class_bwd");
  }
  if (b.has(Phase::BackwardWeight)) {
    // dsampled_rows [S, d] = dlogits^T [S, N] x hidden [N, d]
    Prim p = plain_matmul(b.ctx(), memory::desc({S, N}, f32, Tag::ba), plain_md({N, D}, f32), plain_md({S, D}, f32));
    p.arg(DNNL_ARG_SRC).set_data_handle(s->dlogits);
    p.arg(DNNL_ARG_WEIGHTS).set_data_handle(s->hidden.data());
    s->dws = data(p.arg(DNNL_ARG_DST));
    s->dtable.assign(s->table.size(), 0.0f);
    s->dbias.assign(s->bias.size(), 0.0f);
    b.add(Phase::BackwardWeight, std::move(p), "dweights_matmul");
    b.add(Phase::BackwardWeight, [s] { s->scatter_weights(); }, "zero_and_scatter_grad");
  }
  if (b.dt() != DataType::f32) b.note("sampled softmax in fp32");
}

}  // namespace parasim::kernels::cpu

#endif
