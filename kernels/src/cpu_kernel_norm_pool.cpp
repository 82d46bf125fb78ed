// Pooling and normalization on oneDNN: max/avg pooling fwd (training, with the max-pool index
// workspace) and bwd; adaptive average pooling as plain average pooling when the input divides
// evenly (7x7 -> 1x1) and as a reference loop otherwise; batch and layer normalization forward
// (training statistics) and backward (one call producing dX and the scale/shift gradients).
#include <algorithm>

#include "cpu_kernel_common.hpp"

#if PARASIM_HAVE_DNNL

namespace parasim::kernels::cpu {

namespace {

using namespace dnnl;

/// Right padding that makes oneDNN's floor rule give PyTorch's output size (ceil_mode included).
memory::dim right_pad(memory::dim in, memory::dim out, memory::dim kernel, memory::dim stride, memory::dim pad_l) {
  const memory::dim needed = (out - 1) * stride + kernel - in - pad_l;
  return std::max(pad_l, needed);
}

void build_pooling(Builder& b, algorithm alg, const Dims& kernel, const Dims& strides, const Dims& pad_l) {
  const models::Op& op = b.op();
  const auto& x = op.input_shapes.at(0);
  const auto& y = op.output_shape;
  const DataType dt = b.dt();
  const Dims pad_r{right_pad(x[2], y[2], kernel[0], strides[0], pad_l[0]),
                   right_pad(x[3], y[3], kernel[1], strides[1], pad_l[1])};
  const memory::desc src = plain_md({x[0], x[1], x[2], x[3]}, dt), dst = plain_md({y[0], y[1], y[2], y[3]}, dt);
  pooling_forward::primitive_desc fwd_pd(
      pooling_forward::desc(prop_kind::forward_training, alg, src, dst, strides, kernel, pad_l, pad_r), b.ctx().engine);
  auto fwd = b.add(Phase::Forward, make_prim<pooling_forward>(b.ctx(), fwd_pd), "pooling");
  if (!b.has(Phase::BackwardData)) return;
  pooling_backward::primitive_desc pd(pooling_backward::desc(alg, src, dst, strides, kernel, pad_l, pad_r),
                                      b.ctx().engine, fwd_pd);
  b.add(Phase::BackwardData, make_prim<pooling_backward>(b.ctx(), pd, fwd->args), "pooling_bwd");
}

/// PyTorch's adaptive pooling windows: [floor(i*in/out), ceil((i+1)*in/out)).
struct AdaptiveAvgPool {
  std::int64_t planes, ih, iw, oh, ow;
  std::vector<float> x, y, dy, dx;

  static std::int64_t start(std::int64_t i, std::int64_t in, std::int64_t out) { return i * in / out; }
  static std::int64_t end(std::int64_t i, std::int64_t in, std::int64_t out) { return ((i + 1) * in + out - 1) / out; }

  template <class Body>
  void windows(Body body) {
    for (std::int64_t p = 0; p < planes; ++p)
      for (std::int64_t i = 0; i < oh; ++i)
        for (std::int64_t j = 0; j < ow; ++j) {
          const std::int64_t h0 = start(i, ih, oh), h1 = end(i, ih, oh), w0 = start(j, iw, ow), w1 = end(j, iw, ow);
          body(static_cast<std::size_t>((p * oh + i) * ow + j), p, h0, h1, w0, w1,
               1.0f / static_cast<float>((h1 - h0) * (w1 - w0)));
        }
  }
  void forward() {
    windows([&](std::size_t o, std::int64_t p, std::int64_t h0, std::int64_t h1, std::int64_t w0, std::int64_t w1,
                float scale) {
      float acc = 0;
      for (std::int64_t h = h0; h < h1; ++h)
        for (std::int64_t w = w0; w < w1; ++w) acc += x[static_cast<std::size_t>((p * ih + h) * iw + w)];
      y[o] = acc * scale;
    });
  }
  void backward() {
    std::fill(dx.begin(), dx.end(), 0.0f);
    windows([&](std::size_t o, std::int64_t p, std::int64_t h0, std::int64_t h1, std::int64_t w0, std::int64_t w1,
                float scale) {
      const float g = dy[o] * scale;
      for (std::int64_t h = h0; h < h1; ++h)
        for (std::int64_t w = w0; w < w1; ++w) dx[static_cast<std::size_t>((p * ih + h) * iw + w)] += g;
    });
  }
};

}  // namespace

void build_pool(Builder& b) {
  const auto& a = b.op().attrs;
  const algorithm alg =
      b.op().kind == models::OpKind::MaxPool2d ? algorithm::pooling_max : algorithm::pooling_avg_include_padding;
  build_pooling(b, alg, {a.kernel_h, a.kernel_w}, {a.stride_h, a.stride_w}, {a.pad_h, a.pad_w});
}

void build_adaptive_avg_pool(Builder& b) {
  const auto& x = b.op().input_shapes.at(0);
  const auto& y = b.op().output_shape;
  if (x[2] % y[2] == 0 && x[3] % y[3] == 0) {
    const memory::dim kh = x[2] / y[2], kw = x[3] / y[3];
    build_pooling(b, algorithm::pooling_avg_exclude_padding, {kh, kw}, {kh, kw}, {0, 0});
    return;
  }
  auto pool = std::make_shared<AdaptiveAvgPool>();
  pool->planes = x[0] * x[1];
  pool->ih = x[2];
  pool->iw = x[3];
  pool->oh = y[2];
  pool->ow = y[3];
  pool->x = uniform_vector(static_cast<std::size_t>(pool->planes * pool->ih * pool->iw), 21);
  pool->dx.assign(pool->x.size(), 0.0f);
  pool->y.assign(static_cast<std::size_t>(pool->planes * pool->oh * pool->ow), 0.0f);
  pool->dy = uniform_vector(pool->y.size(), 22);
  b.add(Phase::Forward, [pool] { pool->forward(); }, "adaptive_avg_pool");
  if (b.has(Phase::BackwardData)) b.add(Phase::BackwardData, [pool] { pool->backward(); }, "adaptive_avg_pool_bwd");
  b.note("uneven adaptive windows: reference loop in fp32");
}

void build_batch_norm(Builder& b) {
  const auto& x = b.op().input_shapes.at(0);
  memory::dim spatial = 1;
  for (std::size_t i = 2; i < x.size(); ++i) spatial *= x[i];
  const memory::desc md = plain_md({x[0], x[1], spatial, 1}, b.dt());
  const auto flags = normalization_flags::use_scale | normalization_flags::use_shift;
  constexpr float eps = 1e-5f;
  batch_normalization_forward::primitive_desc fwd_pd(
      batch_normalization_forward::desc(prop_kind::forward_training, md, eps, flags), b.ctx().engine);
  auto fwd = b.add(Phase::Forward, make_prim<batch_normalization_forward>(b.ctx(), fwd_pd), "batch_norm");
  if (!b.has(Phase::BackwardData)) return;
  batch_normalization_backward::primitive_desc pd(
      batch_normalization_backward::desc(prop_kind::backward, md, md, eps, flags), b.ctx().engine, fwd_pd);
  b.add(Phase::BackwardData, make_prim<batch_normalization_backward>(b.ctx(), pd, fwd->args), "batch_norm_bwd");
}

void build_layer_norm(Builder& b) {
  const auto& x = b.op().input_shapes.at(0);
  memory::dim rows = 1;
  for (std::size_t i = 0; i + 1 < x.size(); ++i) rows *= x[i];
  const memory::desc md = plain_md({rows, x.back()}, b.dt());
  const auto flags = normalization_flags::use_scale | normalization_flags::use_shift;
  constexpr float eps = 1e-5f;
  layer_normalization_forward::primitive_desc fwd_pd(
      layer_normalization_forward::desc(prop_kind::forward_training, md, eps, flags), b.ctx().engine);
  auto fwd = b.add(Phase::Forward, make_prim<layer_normalization_forward>(b.ctx(), fwd_pd), "layer_norm");
  if (!b.has(Phase::BackwardData)) return;
  layer_normalization_backward::primitive_desc pd(
      layer_normalization_backward::desc(prop_kind::backward, md, md, eps, flags), b.ctx().engine, fwd_pd);
  b.add(Phase::BackwardData, make_prim<layer_normalization_backward>(b.ctx(), pd, fwd->args), "layer_norm_bwd");
}

}  // namespace parasim::kernels::cpu

#endif
