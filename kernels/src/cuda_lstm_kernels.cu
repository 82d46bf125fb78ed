// The pointwise half of one LSTM time step (the GEMM half is cuBLAS): gate activations, cell and
// hidden state forward; their gradients backward. Gates are laid out [batch, 4 * hidden] as i, f, g, o.
#include "cuda_kernel_common.cuh"

namespace parasim::kernels::cuda {
namespace {

__device__ __forceinline__ float sigmoid(float v) { return 1.0f / (1.0f + __expf(-v)); }

template <class T>
__global__ void lstm_cell_forward_kernel(T* gates, const T* bias, const T* c_prev, T* c_out, T* h_out,
                                         std::int64_t batch, std::int64_t hidden) {
  PARASIM_GRID_STRIDE_LOOP(idx, batch * hidden) {
    const std::int64_t b = idx / hidden;
    const std::int64_t j = idx - b * hidden;
    T* g = gates + b * 4 * hidden;
    const float i = sigmoid(to_f32(g[j]) + to_f32(bias[j]));
    const float f = sigmoid(to_f32(g[hidden + j]) + to_f32(bias[hidden + j]));
    const float z = tanhf(to_f32(g[2 * hidden + j]) + to_f32(bias[2 * hidden + j]));
    const float o = sigmoid(to_f32(g[3 * hidden + j]) + to_f32(bias[3 * hidden + j]));
    const float c = f * to_f32(c_prev[idx]) + i * z;
    g[j] = from_f32<T>(i);
    g[hidden + j] = from_f32<T>(f);
    g[2 * hidden + j] = from_f32<T>(z);
    g[3 * hidden + j] = from_f32<T>(o);
    c_out[idx] = from_f32<T>(c);
    h_out[idx] = from_f32<T>(o * tanhf(c));
  }
}

template <class T>
__global__ void lstm_cell_backward_kernel(const T* gates, const T* c_prev, const T* c, const T* dh, T* dc,
                                          T* dgates, std::int64_t batch, std::int64_t hidden) {
  PARASIM_GRID_STRIDE_LOOP(idx, batch * hidden) {
    const std::int64_t b = idx / hidden;
    const std::int64_t j = idx - b * hidden;
    const T* g = gates + b * 4 * hidden;
    T* dg = dgates + b * 4 * hidden;
    const float i = to_f32(g[j]);
    const float f = to_f32(g[hidden + j]);
    const float z = to_f32(g[2 * hidden + j]);
    const float o = to_f32(g[3 * hidden + j]);
    const float tc = tanhf(to_f32(c[idx]));
    const float dhv = to_f32(dh[idx]);
    const float dcv = to_f32(dc[idx]) + dhv * o * (1.0f - tc * tc);
    dg[j] = from_f32<T>(dcv * z * i * (1.0f - i));
    dg[hidden + j] = from_f32<T>(dcv * to_f32(c_prev[idx]) * f * (1.0f - f));
    dg[2 * hidden + j] = from_f32<T>(dcv * i * (1.0f - z * z));
    dg[3 * hidden + j] = from_f32<T>(dhv * tc * o * (1.0f - o));
    dc[idx] = from_f32<T>(dcv * f);  // gradient flowing to c_{t-1}
  }
}

}  // namespace

void lstm_cell_forward(void* gates, const void* bias, const void* c_prev, void* c_out, void* h_out,
                       std::int64_t batch, std::int64_t hidden, Elem dtype, cudaStream_t stream) {
  if (batch * hidden <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    lstm_cell_forward_kernel<T><<<grid_for(batch * hidden), kThreads, 0, stream>>>(
        static_cast<T*>(gates), static_cast<const T*>(bias), static_cast<const T*>(c_prev), static_cast<T*>(c_out),
        static_cast<T*>(h_out), batch, hidden);
  });
  PARASIM_CHECK_LAUNCH();
}

void lstm_cell_backward(const void* gates, const void* c_prev, const void* c, const void* dh, void* dc,
                        void* dgates, std::int64_t batch, std::int64_t hidden, Elem dtype, cudaStream_t stream) {
  if (batch * hidden <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    lstm_cell_backward_kernel<T><<<grid_for(batch * hidden), kThreads, 0, stream>>>(
        static_cast<const T*>(gates), static_cast<const T*>(c_prev), static_cast<const T*>(c),
        static_cast<const T*>(dh), static_cast<T*>(dc), static_cast<T*>(dgates), batch, hidden);
  });
  PARASIM_CHECK_LAUNCH();
}

}  // namespace parasim::kernels::cuda
