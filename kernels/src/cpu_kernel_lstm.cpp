// LSTM on oneDNN's lstm_forward / lstm_backward (one layer, one direction, optional projection
// = LSTMP). oneDNN's backward computes the data and weight gradients in one call; it is run in
// BackwardData (or in BackwardWeight when the op has no data gradient) and the other phase is
// empty. The profile note says so, and the simulator sees the same split the executor runs.
#include "cpu_kernel_common.hpp"

#if PARASIM_HAVE_DNNL

namespace parasim::kernels::cpu {

void build_lstm(Builder& b) {
  using namespace dnnl;
  const models::Op& op = b.op();
  const auto& x = op.input_shapes.at(0);  // [B, T, in]
  const memory::dim batch = x[0], steps = x[1], in = x[2];
  const memory::dim hidden = op.attrs.hidden;
  const memory::dim proj = op.attrs.proj;
  const memory::dim recurrent = proj > 0 ? proj : hidden;
  const DataType dt = b.dt();
  const auto direction =
      op.attrs.reverse ? rnn_direction::unidirectional_right2left : rnn_direction::unidirectional_left2right;

  const memory::desc none;
  const memory::desc src_layer({steps, batch, in}, dt, Tag::tnc);
  const memory::desc dst_layer({steps, batch, recurrent}, dt, Tag::tnc);
  const memory::desc w_layer = any_md({1, 1, in, 4, hidden}, dt);
  const memory::desc w_iter = any_md({1, 1, recurrent, 4, hidden}, dt);
  const memory::desc w_proj = proj > 0 ? any_md({1, 1, hidden, proj}, dt) : none;
  // oneDNN keeps biases in fp32 for bf16 RNNs.
  const memory::desc bias = op.attrs.bias ? memory::desc({1, 1, 4, hidden}, DataType::f32, Tag::ldgo) : none;

  lstm_forward::desc fwd_desc(prop_kind::forward_training, direction, src_layer, none, none, w_layer, w_iter, none,
                              w_proj, bias, dst_layer, none, none);
  lstm_forward::primitive_desc fwd_pd(fwd_desc, b.ctx().engine);
  auto fwd = b.add(Phase::Forward, make_prim<lstm_forward>(b.ctx(), fwd_pd), "lstm");

  const Phase backward_phase = b.has(Phase::BackwardData) ? Phase::BackwardData : Phase::BackwardWeight;
  if (!b.has(backward_phase)) return;
  lstm_backward::desc bwd_desc(prop_kind::backward, direction, src_layer, none, none, w_layer, w_iter, none, w_proj,
                               bias, dst_layer, none, none, src_layer, none, none, w_layer, w_iter, none, w_proj, bias,
                               dst_layer, none, none);
  lstm_backward::primitive_desc bwd_pd(bwd_desc, b.ctx().engine, fwd_pd);
  b.add(backward_phase, make_prim<lstm_backward>(b.ctx(), bwd_pd, fwd->args), "lstm_bwd");
  b.note(std::string("lstm_backward computes data and weight gradients in one call, timed in ") +
         phase_key(backward_phase));
}

}  // namespace parasim::kernels::cpu

#endif
