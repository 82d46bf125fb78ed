// Elementwise and data-movement ops: oneDNN eltwise (relu, gelu, tanh, sigmoid; the backward
// reads the output where the framework keeps it), softmax over the last dim, sum (Add of n
// inputs), binary multiply (Mul), concat and its backward as reorders out of the gradient's
// slices; dropout as a reference loop (mask generation + scale, as a framework's fused kernel).
#include <numeric>

#include "cpu_kernel_common.hpp"
#include "parasim/common/error.hpp"

#if PARASIM_HAVE_DNNL

namespace parasim::kernels::cpu {

namespace {

using namespace dnnl;

memory::dim elements(const models::Shape& s) {
  return std::accumulate(s.begin(), s.end(), memory::dim{1}, std::multiplies<>());
}

Prim binary_prim(Context& ctx, algorithm alg, const memory::desc& md) {
  binary::primitive_desc pd(binary::desc(alg, md, md, md), ctx.engine);
  return make_prim<binary>(ctx, pd);
}

}  // namespace

void build_eltwise(Builder& b) {
  algorithm alg = algorithm::eltwise_relu_use_dst_for_bwd;
  switch (b.op().kind) {
    case models::OpKind::Relu: alg = algorithm::eltwise_relu_use_dst_for_bwd; break;
    case models::OpKind::Tanh: alg = algorithm::eltwise_tanh_use_dst_for_bwd; break;
    case models::OpKind::Sigmoid: alg = algorithm::eltwise_logistic_use_dst_for_bwd; break;
    case models::OpKind::Gelu: alg = algorithm::eltwise_gelu_erf; break;  // PyTorch's exact GELU
    default: throw RuntimeError("CPU backend: " + models::to_string(b.op().kind) + " is not an eltwise op");
  }
  const memory::desc md = plain_md({elements(b.op().output_shape)}, b.dt());
  eltwise_forward::primitive_desc fwd_pd(eltwise_forward::desc(prop_kind::forward_training, alg, md, 0.0f, 0.0f),
                                         b.ctx().engine);
  auto fwd = b.add(Phase::Forward, make_prim<eltwise_forward>(b.ctx(), fwd_pd), "eltwise");
  if (!b.has(Phase::BackwardData)) return;
  eltwise_backward::primitive_desc pd(eltwise_backward::desc(alg, md, md, 0.0f, 0.0f), b.ctx().engine, fwd_pd);
  b.add(Phase::BackwardData, make_prim<eltwise_backward>(b.ctx(), pd, fwd->args), "eltwise_bwd");
}

void build_softmax(Builder& b) {
  const auto& x = b.op().input_shapes.at(0);
  const memory::dim cols = x.back();
  const memory::desc md = plain_md({elements(x) / cols, cols}, b.dt());
  softmax_forward::primitive_desc fwd_pd(softmax_forward::desc(prop_kind::forward_training, md, 1), b.ctx().engine);
  auto fwd = b.add(Phase::Forward, make_prim<softmax_forward>(b.ctx(), fwd_pd), "softmax");
  if (!b.has(Phase::BackwardData)) return;
  softmax_backward::primitive_desc pd(softmax_backward::desc(md, md, 1), b.ctx().engine, fwd_pd);
  b.add(Phase::BackwardData, make_prim<softmax_backward>(b.ctx(), pd, fwd->args), "softmax_bwd");
}

void build_add(Builder& b) {
  const auto n = static_cast<int>(b.op().input_shapes.size());
  const memory::desc md = plain_md({elements(b.op().output_shape)}, b.dt());
  sum::primitive_desc pd(md, std::vector<float>(static_cast<std::size_t>(n), 1.0f),
                         std::vector<memory::desc>(static_cast<std::size_t>(n), md), b.ctx().engine);
  b.add(Phase::Forward, make_prim<sum>(b.ctx(), pd, {}, n), "sum");
  // No backward: the gradient of a sum is passed to every input unchanged (op_has_phase).
}

void build_mul(Builder& b) {
  const std::size_t n = b.op().input_shapes.size();
  const memory::desc md = plain_md({elements(b.op().output_shape)}, b.dt());
  for (std::size_t i = 1; i < n; ++i) b.add(Phase::Forward, binary_prim(b.ctx(), algorithm::binary_mul, md), "mul");
  if (!b.has(Phase::BackwardData)) return;
  // dX_i = dY * (product of the other inputs): one multiply per input (exact for two inputs).
  for (std::size_t i = 0; i < n; ++i)
    b.add(Phase::BackwardData, binary_prim(b.ctx(), algorithm::binary_mul, md), "mul_bwd");
  if (n > 2) b.note("mul of " + std::to_string(n) + " inputs: backward approximated by one multiply per input");
}

void build_concat(Builder& b) {
  const models::Op& op = b.op();
  const auto axis = static_cast<int>(op.attrs.axis);
  const DataType dt = b.dt();
  std::vector<memory::desc> srcs;
  for (const auto& s : op.input_shapes) srcs.push_back(plain_md(Dims(s.begin(), s.end()), dt));
  const memory::desc dst = plain_md(Dims(op.output_shape.begin(), op.output_shape.end()), dt);
  concat::primitive_desc pd(dst, axis, srcs, b.ctx().engine);
  b.add(Phase::Forward, make_prim<concat>(b.ctx(), pd, {}, static_cast<int>(srcs.size())), "concat");
  if (!b.has(Phase::BackwardData)) return;
  // Backward: each input's gradient is a slice of the output gradient, copied out by a reorder.
  memory diff_dst(dst, b.ctx().engine);
  fill_memory(diff_dst, 31);
  Dims offsets(op.output_shape.size(), 0);
  for (const auto& src : srcs) {
    const memory::desc slice = dst.submemory_desc(src.dims(), offsets);
    offsets[static_cast<std::size_t>(axis)] += src.dims()[static_cast<std::size_t>(axis)];
    Prim p;
    reorder::primitive_desc rpd(b.ctx().engine, slice, b.ctx().engine, src);
    p.primitive = reorder(rpd);
    p.args = {{DNNL_ARG_FROM, memory(slice, b.ctx().engine, diff_dst.get_data_handle())},
              {DNNL_ARG_TO, memory(src, b.ctx().engine)}};
    p.impl = impl_name(rpd);
    p.keep_alive.push_back(diff_dst);  // the slices view its buffer
    b.add(Phase::BackwardData, std::move(p), "concat_bwd_slice");
  }
}

namespace {

struct Dropout {
  std::vector<float> x, y, dy, dx;
  std::vector<std::uint8_t> mask;
  float keep = 0.9f;
  std::uint64_t state = 0x2545F4914F6CDD1Dull;

  void forward() {
    const float scale = 1.0f / keep;
    const auto threshold = static_cast<std::uint32_t>(keep * 4294967295.0f);
    for (std::size_t i = 0; i < x.size(); ++i) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      mask[i] = static_cast<std::uint32_t>(state >> 32) < threshold ? 1 : 0;
      y[i] = x[i] * static_cast<float>(mask[i]) * scale;
    }
  }
  void backward() {
    const float scale = 1.0f / keep;
    for (std::size_t i = 0; i < dy.size(); ++i) dx[i] = dy[i] * static_cast<float>(mask[i]) * scale;
  }
};

}  // namespace

void build_dropout(Builder& b) {
  auto d = std::make_shared<Dropout>();
  const auto n = static_cast<std::size_t>(elements(b.op().output_shape));
  d->x = uniform_vector(n, 41);
  d->dy = uniform_vector(n, 42);
  d->y.assign(n, 0.0f);
  d->dx.assign(n, 0.0f);
  d->mask.assign(n, 0);
  d->keep = static_cast<float>(1.0 - b.op().attrs.p);
  b.add(Phase::Forward, [d] { d->forward(); }, "dropout");
  if (b.has(Phase::BackwardData)) b.add(Phase::BackwardData, [d] { d->backward(); }, "dropout_bwd");
}

}  // namespace parasim::kernels::cpu

#endif
