// The optimizer update of one op's parameters: fused loops over fp32 master weights, gradient and
// state, as PyTorch's foreach/fused optimizers do per parameter group.
#include <cmath>
#include <memory>
#include <vector>

#include "cpu_kernel_common.hpp"

// OpenMP comes with oneDNN's runtime; without it the loops run on one thread.
#if PARASIM_HAVE_DNNL
#define PARASIM_PARALLEL_FOR _Pragma("omp parallel for num_threads(threads) if (threads > 1) schedule(static)")
#else
#define PARASIM_PARALLEL_FOR
#endif

namespace parasim::kernels::cpu {

namespace {

struct OptimizerState {
  Optimizer opt = Optimizer::Sgd;
  int threads = 1;
  std::vector<float> w, g, m, v;
  std::int64_t step = 0;

  void run() {
    const auto n = static_cast<std::int64_t>(w.size());
    float* W = w.data();
    const float* G = g.data();
    constexpr float lr = 1e-3f;
    switch (opt) {
      case Optimizer::Sgd:
PARASIM_PARALLEL_FOR
        for (std::int64_t i = 0; i < n; ++i) W[i] -= lr * G[i];
        break;
      case Optimizer::Momentum: {
        float* M = m.data();
        constexpr float mu = 0.9f;
PARASIM_PARALLEL_FOR
        for (std::int64_t i = 0; i < n; ++i) {
          M[i] = mu * M[i] + G[i];
          W[i] -= lr * M[i];
        }
        break;
      }
      case Optimizer::Adam: {
        float* M = m.data();
        float* V = v.data();
        ++step;
        constexpr float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
        const float c1 = 1.0f / (1.0f - std::pow(b1, static_cast<float>(step)));
        const float c2 = 1.0f / (1.0f - std::pow(b2, static_cast<float>(step)));
PARASIM_PARALLEL_FOR
        for (std::int64_t i = 0; i < n; ++i) {
          M[i] = b1 * M[i] + (1 - b1) * G[i];
          V[i] = b2 * V[i] + (1 - b2) * G[i] * G[i];
          W[i] -= lr * (M[i] * c1) / (std::sqrt(V[i] * c2) + eps);
        }
        if (step > 1000) step = 0;  // keep the bias corrections finite over long profiling runs
        break;
      }
    }
  }
};

}  // namespace

std::function<void()> make_optimizer_step(Optimizer opt, std::int64_t params, int threads) {
  auto s = std::make_shared<OptimizerState>();
  const auto n = static_cast<std::size_t>(std::max<std::int64_t>(params, 0));
  s->opt = opt;
  s->threads = std::max(threads, 1);
  s->w = uniform_vector(n, 81);
  s->g = uniform_vector(n, 82);
  for (float& x : s->g) x *= 1e-3f;
  if (opt != Optimizer::Sgd) s->m.assign(n, 0.0f);
  if (opt == Optimizer::Adam) s->v.assign(n, 0.0f);
  return [s] { s->run(); };
}

}  // namespace parasim::kernels::cpu
