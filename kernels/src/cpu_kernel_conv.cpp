// Conv2d on oneDNN: convolution forward (training), backward data and backward weights (with the
// bias gradient), direct algorithm, layouts chosen by oneDNN (format any), as a framework that
// keeps oneDNN's blocked layouts between layers would run them.
#include "cpu_kernel_common.hpp"

#if PARASIM_HAVE_DNNL

namespace parasim::kernels::cpu {

void build_conv(Builder& b) {
  using namespace dnnl;
  const models::Op& op = b.op();
  const auto& x = op.input_shapes.at(0);
  const auto& y = op.output_shape;
  const auto& a = op.attrs;
  const memory::dim groups = a.groups;
  const Dims src{x[0], x[1], x[2], x[3]};
  const Dims dst{y[0], y[1], y[2], y[3]};
  const Dims weights = groups > 1 ? Dims{groups, y[1] / groups, x[1] / groups, a.kernel_h, a.kernel_w}
                                  : Dims{y[1], x[1], a.kernel_h, a.kernel_w};
  const Dims strides{a.stride_h, a.stride_w};
  const Dims dilates{a.dilation_h - 1, a.dilation_w - 1};  // oneDNN counts dilation from 0
  const Dims pad_l{a.pad_h, a.pad_w};
  // Right padding that reproduces the output size exactly (PyTorch's floor rule).
  const Dims pad_r{(y[2] - 1) * a.stride_h + (a.kernel_h - 1) * a.dilation_h + 1 - x[2] - a.pad_h,
                   (y[3] - 1) * a.stride_w + (a.kernel_w - 1) * a.dilation_w + 1 - x[3] - a.pad_w};
  const DataType dt = b.dt();
  const memory::desc bias = a.bias ? plain_md({y[1]}, dt) : memory::desc();

  convolution_forward::desc fwd_desc(prop_kind::forward_training, algorithm::convolution_direct, any_md(src, dt),
                                     any_md(weights, dt), bias, any_md(dst, dt), strides, dilates, pad_l, pad_r);
  convolution_forward::primitive_desc fwd_pd(fwd_desc, b.ctx().engine);
  auto fwd = b.add(Phase::Forward, make_prim<convolution_forward>(b.ctx(), fwd_pd), "conv");

  if (b.has(Phase::BackwardData)) {
    convolution_backward_data::desc d(algorithm::convolution_direct, any_md(src, dt), any_md(weights, dt),
                                      any_md(dst, dt), strides, dilates, pad_l, pad_r);
    convolution_backward_data::primitive_desc pd(d, b.ctx().engine, fwd_pd);
    b.add(Phase::BackwardData, make_prim<convolution_backward_data>(b.ctx(), pd, fwd->args), "conv_bwd_data");
  }
  if (b.has(Phase::BackwardWeight)) {
    convolution_backward_weights::desc d(algorithm::convolution_direct, any_md(src, dt), any_md(weights, dt), bias,
                                         any_md(dst, dt), strides, dilates, pad_l, pad_r);
    convolution_backward_weights::primitive_desc pd(d, b.ctx().engine, fwd_pd);
    b.add(Phase::BackwardWeight, make_prim<convolution_backward_weights>(b.ctx(), pd, fwd->args), "conv_bwd_weights");
  }
}

}  // namespace parasim::kernels::cpu

#endif
