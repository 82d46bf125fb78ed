// Factories of the CUDA op kernels, one per op family; the backend dispatches on OpKind.
// Private to the backend. Each throws RuntimeError when the op cannot be run (shape beyond a
// library's limits, out of memory).
#pragma once

#include <memory>

#include "cuda_backend_context.hpp"
#include "parasim/kernels/kernel_backend.hpp"

namespace parasim::kernels::cuda {

// cuda_conv_kernel.cpp
std::unique_ptr<OpKernel> make_conv2d_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt);
// cuda_dense_kernels.cpp: Linear, Matmul, BatchedMatmul
std::unique_ptr<OpKernel> make_linear_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt);
std::unique_ptr<OpKernel> make_matmul_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt);
// cuda_attention_kernel.cpp: dot-product and additive attention cores
std::unique_ptr<OpKernel> make_attention_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt);
// cuda_lstm_kernel.cpp
std::unique_ptr<OpKernel> make_lstm_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt);
// cuda_cudnn_kernels.cpp: MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, BatchNorm, Softmax
std::unique_ptr<OpKernel> make_pooling_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt);
std::unique_ptr<OpKernel> make_batchnorm_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt);
std::unique_ptr<OpKernel> make_softmax_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt);
// cuda_elementwise_ops.cpp: activations, Add, Mul, Dropout, Concat, LayerNorm
std::unique_ptr<OpKernel> make_activation_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt);
std::unique_ptr<OpKernel> make_add_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt);
std::unique_ptr<OpKernel> make_mul_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt);
std::unique_ptr<OpKernel> make_dropout_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt);
std::unique_ptr<OpKernel> make_concat_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt);
std::unique_ptr<OpKernel> make_layernorm_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt);
// cuda_token_ops.cpp: Embedding, CrossEntropy, SampledSoftmax
std::unique_ptr<OpKernel> make_embedding_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt);
std::unique_ptr<OpKernel> make_gather_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt);
std::unique_ptr<OpKernel> make_cross_entropy_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt);
std::unique_ptr<OpKernel> make_sampled_softmax_kernel(BackendContext& ctx, const models::Op& op, Optimizer opt);

}  // namespace parasim::kernels::cuda
