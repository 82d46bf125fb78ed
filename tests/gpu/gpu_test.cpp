// The `gpu` label: tests that need a real NVIDIA GPU and skip, saying why, where there is none.
// `ctest -L gpu` runs them; scripts/gpu_check.sh runs them first on a GPU machine.
//   * profile tiny_cnn: every phase of every op has launches and is reliable (the CUPTI join works)
//   * d2d and peer copies are traced and attributed; the CUPTI tracer can be created twice
//   * each of our .cu kernels against a CPU reference on small inputs (fp32)
//   * the link probe up to 64 KiB
//   * `parasim validate --backend cuda` on tiny_cnn dp=1, and dp=2 where two GPUs exist
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#if PARASIM_HAVE_CUDA
#include <sys/wait.h>

#include <cuda_runtime_api.h>

#include "cuda_kernels.hpp"  // kernels/src: the launchers under test
#include "parasim/kernels/cuda_check.hpp"
#include "parasim/models/zoo.hpp"
#include "parasim/profiler/cupti_activity.hpp"
#include "parasim/profiler/gpu_profiler.hpp"
#include "parasim/profiler/link_probe.hpp"
#endif

namespace parasim::gpu_test {
namespace {

#if !PARASIM_HAVE_CUDA

TEST(Gpu, Skipped) {
  GTEST_SKIP() << "parasim was built without CUDA: no GPU test can run (configure with the toolkit)";
}

#else

/// GPUs visible to this process, and why none when there are none.
int gpu_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (why) *why = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
    return 0;
  }
  if (n == 0 && why) *why = "the driver reports 0 GPUs";
  return n;
}

#define PARASIM_REQUIRE_GPUS(n)                                                                             \
  do {                                                                                                      \
    std::string parasim_why_;                                                                               \
    const int parasim_gpus_ = gpu_count(&parasim_why_);                                                     \
    if (parasim_gpus_ == 0) {                                                                               \
      GTEST_SKIP() << "no GPU: " << parasim_why_;                                                           \
    }                                                                                                       \
    if (parasim_gpus_ < (n)) {                                                                              \
      GTEST_SKIP() << "needs " << (n) << " GPUs, " << parasim_gpus_ << " visible";                          \
    }                                                                                                       \
  } while (0)

// ------------------------------------------------------------------ profiling

TEST(GpuProfile, TinyCnnEveryPhaseHasLaunchesAndIsReliable) {
  PARASIM_REQUIRE_GPUS(1);
  const models::Model model = models::build_zoo_model("tiny_cnn", {.batch = 8});
  profiler::GpuProfileOptions o;
  o.plan = {.warmup = 2, .repetitions = 5};
  std::vector<std::string> warnings;
  const profiler::Profile p = profiler::profile_model_on_gpu(model, o, &warnings);
  for (const std::string& w : warnings) ADD_FAILURE() << "warning: " << w;
  ASSERT_FALSE(p.ops.empty());
  for (const profiler::ProfileEntry& e : p.ops) {
    EXPECT_EQ(e.note.rfind("UNRELIABLE", 0), std::string::npos) << e.names.front() << ": " << e.note;
    EXPECT_EQ(e.note.rfind("not measured", 0), std::string::npos) << e.names.front() << ": " << e.note;
    int phases = 0;
    for (profiler::Phase ph : profiler::kPhases) {
      if (!e.has(ph)) continue;
      ++phases;
      EXPECT_GT(e.phase(ph).launches, 0) << e.names.front() << " " << profiler::phase_key(ph);
      EXPECT_GT(e.phase(ph).median_ns, 0) << e.names.front() << " " << profiler::phase_key(ph);
      EXPECT_EQ(e.phase(ph).reps, 5);
    }
    EXPECT_GT(phases, 0) << e.names.front();
  }
}

/// Copies inside a range are traced and attributed: d2d within one GPU (MEMCPY) and, with two
/// GPUs, peer copies (MEMCPY2, untraced before). The tracer is created twice in one process.
void expect_traced_copy(int src, int dst, profiler::MemcpyKind kind) {
  const std::size_t bytes = 1 << 20;
  void* a = nullptr;
  void* b = nullptr;
  PARASIM_CUDA_CHECK(cudaSetDevice(src));
  PARASIM_CUDA_CHECK(cudaMalloc(&a, bytes));
  PARASIM_CUDA_CHECK(cudaSetDevice(dst));
  PARASIM_CUDA_CHECK(cudaMalloc(&b, bytes));
  PARASIM_CUDA_CHECK(cudaSetDevice(src));
  for (int round = 0; round < 2; ++round) {
    auto source = profiler::make_cupti_activity_source();
    profiler::ActivityAttributor attributor;
    const std::uint64_t id = attributor.register_range({.op = 0, .phase = profiler::Phase::Forward, .repetition = 0});
    {
      profiler::ScopedExternalId tag(*source, id);
      PARASIM_CUDA_CHECK(cudaMemcpyPeerAsync(b, dst, a, src, bytes, nullptr));
    }
    PARASIM_CUDA_CHECK(cudaDeviceSynchronize());
    const profiler::ActivityBatch batch = source->flush();
    attributor.add(batch);
    const profiler::RangeTiming t = attributor.timing({0, profiler::Phase::Forward, 0});
    EXPECT_EQ(t.memcpys, 1) << "round " << round;
    EXPECT_EQ(t.memcpy_bytes, static_cast<Bytes>(bytes)) << "round " << round;
    EXPECT_GT(t.copy_ns, 0) << "round " << round;
    bool kind_seen = false;
    for (const auto& m : batch.memcpys) kind_seen = kind_seen || m.kind == kind;
    EXPECT_TRUE(kind_seen) << profiler::to_string(kind) << ", round " << round;
    EXPECT_TRUE(attributor.reliable()) << attributor.reliability_note();
  }
  (void)cudaFree(a);
  (void)cudaFree(b);
}

TEST(GpuTracing, DeviceToDeviceCopiesAreTracedAndAttributed) {
  PARASIM_REQUIRE_GPUS(1);
  expect_traced_copy(0, 0, profiler::MemcpyKind::DeviceToDevice);
}

TEST(GpuTracing, PeerCopiesAreTracedAndAttributed) {
  PARASIM_REQUIRE_GPUS(2);
  expect_traced_copy(0, 1, profiler::MemcpyKind::PeerToPeer);
}

// ------------------------------------------------------------------ kernels vs CPU references

using kernels::cuda::Elem;

/// Device copy of host floats, freed at scope end.
class Dev {
 public:
  explicit Dev(const std::vector<float>& host) : n_(host.size()) {
    PARASIM_CUDA_CHECK(cudaMalloc(&p_, std::max<std::size_t>(n_, 1) * sizeof(float)));
    if (n_) PARASIM_CUDA_CHECK(cudaMemcpy(p_, host.data(), n_ * sizeof(float), cudaMemcpyHostToDevice));
  }
  explicit Dev(std::size_t n) : Dev(std::vector<float>(n, 0.0f)) {}
  ~Dev() { (void)cudaFree(p_); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  float* get() const { return static_cast<float*>(p_); }
  std::vector<float> host() const {
    std::vector<float> h(n_);
    PARASIM_CUDA_CHECK(cudaDeviceSynchronize());
    if (n_) PARASIM_CUDA_CHECK(cudaMemcpy(h.data(), p_, n_ * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  void* p_ = nullptr;
  std::size_t n_;
};

std::vector<float> ramp(std::size_t n, float scale = 1.0f, float shift = 0.0f) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * (std::sin(0.7f * static_cast<float>(i) + shift));
  return v;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, float tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0f + std::fabs(want[i]))) << what << " [" << i << "]";
}

constexpr cudaStream_t kStream = nullptr;  // the legacy default stream; Dev::host() synchronizes

TEST(GpuKernels, FillAndActivations) {
  PARASIM_REQUIRE_GPUS(1);
  const std::size_t n = 257;
  const auto x = ramp(n, 2.0f);
  Dev dx(x), dy(n), dg(ramp(n, 0.5f, 1.0f)), dd(n);
  kernels::cuda::fill_zero(dy.get(), static_cast<std::int64_t>(n), Elem::F32, kStream);
  expect_near_all(dy.host(), std::vector<float>(n, 0.0f), 0, "fill_zero");
  using kernels::cuda::Activation;
  const auto g = dg.host();
  for (Activation a : {Activation::Relu, Activation::Gelu, Activation::Tanh, Activation::Sigmoid}) {
    kernels::cuda::activation_forward(a, dx.get(), dy.get(), static_cast<std::int64_t>(n), Elem::F32, kStream);
    kernels::cuda::activation_backward(a, dx.get(), dy.get(), dg.get(), dd.get(), static_cast<std::int64_t>(n),
                                       Elem::F32, kStream);
    std::vector<float> y(n), d(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double v = x[i];
      double f = 0, df = 0;
      switch (a) {
        case Activation::Relu: f = v > 0 ? v : 0; df = v > 0 ? 1 : 0; break;
        case Activation::Gelu:
          f = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
          df = 0.5 * (1 + std::erf(v / std::sqrt(2.0))) + v * std::exp(-0.5 * v * v) / std::sqrt(2 * M_PI);
          break;
        case Activation::Tanh: f = std::tanh(v); df = 1 - f * f; break;
        case Activation::Sigmoid: f = 1 / (1 + std::exp(-v)); df = f * (1 - f); break;
      }
      y[i] = static_cast<float>(f);
      d[i] = static_cast<float>(g[i] * df);
    }
    expect_near_all(dy.host(), y, 1e-5f, "activation_forward");
    expect_near_all(dd.host(), d, 1e-4f, "activation_backward");
  }
}

TEST(GpuKernels, AddMulBiasAndStridedCopy) {
  PARASIM_REQUIRE_GPUS(1);
  const std::int64_t rows = 5, cols = 7, n = rows * cols;
  const auto a = ramp(35), b = ramp(35, 1.5f, 2.0f), bias = ramp(7, 0.3f, 4.0f), bcast = ramp(5, 1.0f, 3.0f);
  Dev da(a), db(b), dy(35), dbias(bias), dbc(bcast);
  kernels::cuda::add(da.get(), db.get(), dy.get(), n, Elem::F32, kStream);
  std::vector<float> want(35);
  for (std::size_t i = 0; i < 35; ++i) want[i] = a[i] + b[i];
  expect_near_all(dy.host(), want, 1e-6f, "add");
  // mul with b broadcast over the trailing 7 elements: y[r, c] = a[r, c] * bcast[r]
  kernels::cuda::mul_forward(da.get(), dbc.get(), dy.get(), n, cols, Elem::F32, kStream);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) want[r * cols + c] = a[r * cols + c] * bcast[r];
  expect_near_all(dy.host(), want, 1e-6f, "mul_forward");
  Dev dz(a);
  kernels::cuda::add_bias(dz.get(), dbias.get(), rows, cols, Elem::F32, kStream);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) want[r * cols + c] = a[r * cols + c] + bias[c];
  expect_near_all(dz.host(), want, 1e-6f, "add_bias");
  // strided_copy: columns 2..4 of each row of a [5, 7] into a [5, 3]
  Dev dc(15);
  kernels::cuda::strided_copy(da.get(), cols, 2, dc.get(), 3, 0, rows, 3, Elem::F32, kStream);
  std::vector<float> part(15);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < 3; ++j) part[r * 3 + j] = a[r * cols + 2 + j];
  expect_near_all(dc.host(), part, 0, "strided_copy");
}

TEST(GpuKernels, ReductionsLossAndLayerNorm) {
  PARASIM_REQUIRE_GPUS(1);
  const std::int64_t rows = 6, cols = 40;
  const auto x = ramp(240, 2.0f), y = ramp(240, 1.0f, 0.5f);
  Dev dx(x), dyv(y), dout(6), dcol(40), dscratch(80);
  kernels::cuda::row_dot(dx.get(), dyv.get(), dout.get(), 1, rows, cols, Elem::F32, kStream);
  std::vector<float> dots(6, 0.0f), sums(40, 0.0f);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      dots[r] += x[r * cols + c] * y[r * cols + c];
      sums[c] += x[r * cols + c];
    }
  expect_near_all(dout.host(), dots, 1e-5f, "row_dot");
  kernels::cuda::column_sum(dx.get(), dcol.get(), dscratch.get(), rows, cols, Elem::F32, kStream);
  expect_near_all(dcol.host(), sums, 1e-5f, "column_sum");

  // cross entropy with labels r * 3
  std::vector<std::int32_t> labels(6);
  for (int r = 0; r < 6; ++r) labels[r] = r * 3;
  std::int32_t* dl = nullptr;
  PARASIM_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&dl), sizeof(std::int32_t) * 6));
  PARASIM_CUDA_CHECK(cudaMemcpy(dl, labels.data(), sizeof(std::int32_t) * 6, cudaMemcpyHostToDevice));
  Dev dloss(6), dlogits(240);
  kernels::cuda::cross_entropy_forward(dx.get(), dl, dloss.get(), rows, cols, Elem::F32, kStream);
  kernels::cuda::cross_entropy_backward(dx.get(), dl, dlogits.get(), rows, cols, Elem::F32, kStream);
  std::vector<float> loss(6), grad(240);
  for (std::int64_t r = 0; r < rows; ++r) {
    double mx = -1e30, s = 0;
    for (std::int64_t c = 0; c < cols; ++c) mx = std::max<double>(mx, x[r * cols + c]);
    for (std::int64_t c = 0; c < cols; ++c) s += std::exp(x[r * cols + c] - mx);
    loss[r] = static_cast<float>(mx + std::log(s) - x[r * cols + labels[r]]);
    for (std::int64_t c = 0; c < cols; ++c)
      grad[r * cols + c] = static_cast<float>((std::exp(x[r * cols + c] - mx) / s - (c == labels[r] ? 1.0 : 0.0)) /
                                              static_cast<double>(rows));
  }
  expect_near_all(dloss.host(), loss, 1e-5f, "cross_entropy_forward");
  expect_near_all(dlogits.host(), grad, 1e-5f, "cross_entropy_backward");
  (void)cudaFree(dl);

  // layer norm forward with gamma 1 + 0.1 i, beta 0.01 i
  std::vector<float> gamma(40), beta(40);
  for (int c = 0; c < 40; ++c) {
    gamma[c] = 1.0f + 0.1f * static_cast<float>(c);
    beta[c] = 0.01f * static_cast<float>(c);
  }
  Dev dgamma(gamma), dbeta(beta), dln(240), dmean(6), drstd(6);
  kernels::cuda::layernorm_forward(dx.get(), dgamma.get(), dbeta.get(), dln.get(), dmean.get(), drstd.get(), rows, cols,
                                   Elem::F32, kStream);
  std::vector<float> ln(240);
  for (std::int64_t r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (std::int64_t c = 0; c < cols; ++c) m += x[r * cols + c];
    m /= cols;
    for (std::int64_t c = 0; c < cols; ++c) v += (x[r * cols + c] - m) * (x[r * cols + c] - m);
    v /= cols;
    for (std::int64_t c = 0; c < cols; ++c)
      ln[r * cols + c] = static_cast<float>((x[r * cols + c] - m) / std::sqrt(v + 1e-5) * gamma[c] + beta[c]);
  }
  expect_near_all(dln.host(), ln, 1e-4f, "layernorm_forward");
}

TEST(GpuKernels, EmbeddingLstmCellAndAdditiveAttention) {
  PARASIM_REQUIRE_GPUS(1);
  // embedding: 4 ids into a [6, 5] table, id 2 twice (scatter-add accumulates)
  const std::vector<std::int32_t> ids{2, 0, 5, 2};
  std::int32_t* did = nullptr;
  PARASIM_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&did), sizeof(std::int32_t) * 4));
  PARASIM_CUDA_CHECK(cudaMemcpy(did, ids.data(), sizeof(std::int32_t) * 4, cudaMemcpyHostToDevice));
  const auto table = ramp(30);
  Dev dtable(table), dout(20), dgrad(ramp(20, 1.0f, 1.0f)), dtab_grad(30);
  kernels::cuda::embedding_gather(did, dtable.get(), dout.get(), 4, 5, Elem::F32, kStream);
  kernels::cuda::embedding_scatter_add(did, dgrad.get(), dtab_grad.get(), 4, 5, Elem::F32, kStream);
  std::vector<float> gathered(20), scattered(30, 0.0f);
  const auto g = dgrad.host();
  for (int i = 0; i < 4; ++i)
    for (int d = 0; d < 5; ++d) {
      gathered[i * 5 + d] = table[ids[i] * 5 + d];
      scattered[ids[i] * 5 + d] += g[i * 5 + d];
    }
  expect_near_all(dout.host(), gathered, 0, "embedding_gather");
  expect_near_all(dtab_grad.host(), scattered, 1e-6f, "embedding_scatter_add");
  (void)cudaFree(did);

  // LSTM cell: batch 3, hidden 4
  const std::int64_t B = 3, H = 4;
  const auto gates = ramp(48, 1.5f), bias = ramp(16, 0.2f, 1.0f), c_prev = ramp(12, 0.8f, 2.0f);
  Dev dgates(gates), dbias(bias), dcp(c_prev), dc(12), dh(12);
  kernels::cuda::lstm_cell_forward(dgates.get(), dbias.get(), dcp.get(), dc.get(), dh.get(), B, H, Elem::F32, kStream);
  std::vector<float> c(12), h(12);
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t j = 0; j < H; ++j) {
      const float* gr = &gates[b * 4 * H];
      const double i = sig(gr[j] + bias[j]), f = sig(gr[H + j] + bias[H + j]);
      const double z = std::tanh(gr[2 * H + j] + bias[2 * H + j]), o = sig(gr[3 * H + j] + bias[3 * H + j]);
      const double cc = f * c_prev[b * H + j] + i * z;
      c[b * H + j] = static_cast<float>(cc);
      h[b * H + j] = static_cast<float>(o * std::tanh(cc));
    }
  expect_near_all(dc.host(), c, 1e-5f, "lstm_cell_forward c");
  expect_near_all(dh.host(), h, 1e-5f, "lstm_cell_forward h");

  // Additive attention scores: B=2, heads=2, Tq=3, Tk=4, head_dim=2 (D = 4)
  const kernels::cuda::AdditiveDims ad{2, 2, 3, 4, 2};
  const auto q = ramp(2 * 3 * 4), k = ramp(2 * 4 * 4, 1.0f, 1.0f), w = ramp(4, 1.0f, 2.0f), ab = ramp(4, 0.1f, 3.0f);
  Dev dq(q), dk(k), dw(w), dab(ab), dgs(std::vector<float>{0.5f}), dscores(2 * 2 * 3 * 4);
  kernels::cuda::additive_attention_scores(dq.get(), dk.get(), dw.get(), dab.get(), dgs.get(), dscores.get(), ad,
                                           Elem::F32, kStream);
  std::vector<float> scores(48);
  for (int b = 0; b < 2; ++b)
    for (int hh = 0; hh < 2; ++hh)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) {
          double acc = 0;
          for (int f = 0; f < 2; ++f) {
            const int feat = hh * 2 + f;
            acc += w[feat] * std::tanh(q[(b * 3 + i) * 4 + feat] + k[(b * 4 + j) * 4 + feat] + ab[feat]);
          }
          scores[((b * 2 + hh) * 3 + i) * 4 + j] = static_cast<float>(0.5 * acc);
        }
  expect_near_all(dscores.host(), scores, 1e-5f, "additive_attention_scores");
}

TEST(GpuKernels, Optimizers) {
  PARASIM_REQUIRE_GPUS(1);
  const std::int64_t n = 33;
  const auto p0 = ramp(33), grad = ramp(33, 0.5f, 1.0f);
  Dev sgd(p0), dg(grad), mom(p0), vel(ramp(33, 0.1f, 2.0f)), adam(p0), m(ramp(33, 0.1f, 3.0f)),
      v(std::vector<float>(33, 0.04f));
  const auto vel0 = vel.host(), m0 = m.host(), v0 = v.host();
  kernels::cuda::sgd_update(sgd.get(), dg.get(), n, 0.1f, Elem::F32, kStream);
  kernels::cuda::momentum_update(mom.get(), dg.get(), vel.get(), n, 0.1f, 0.9f, Elem::F32, kStream);
  kernels::cuda::adam_update(adam.get(), dg.get(), m.get(), v.get(), n, 0.01f, 0.9f, 0.999f, 1e-8f, 0.1f, 0.001f,
                             Elem::F32, kStream);
  std::vector<float> ws(33), wm(33), wa(33);
  for (std::size_t i = 0; i < 33; ++i) {
    ws[i] = p0[i] - 0.1f * grad[i];
    const double vi = 0.9 * vel0[i] + grad[i];
    wm[i] = static_cast<float>(p0[i] - 0.1 * vi);
    const double mi = 0.9 * m0[i] + 0.1 * grad[i], vv = 0.999 * v0[i] + 0.001 * grad[i] * grad[i];
    wa[i] = static_cast<float>(p0[i] - 0.01 * (mi / 0.1) / (std::sqrt(vv / 0.001) + 1e-8));
  }
  expect_near_all(sgd.host(), ws, 1e-6f, "sgd_update");
  expect_near_all(mom.host(), wm, 1e-5f, "momentum_update");
  expect_near_all(adam.host(), wa, 1e-4f, "adam_update");
}

// ------------------------------------------------------------------ link probe

TEST(GpuLinks, ProbeUpTo64KiB) {
  PARASIM_REQUIRE_GPUS(1);
  profiler::LinkProbeOptions o;
  o.max_bytes = 64 * KiB;
  o.warmup = 2;
  o.iterations = 5;
  const profiler::LinkProbeResult r = profiler::probe_links(o);
  ASSERT_FALSE(r.curves.empty());
  EXPECT_GT(r.nccl_version, 0);
  for (const profiler::LinkCurve& c : r.curves) {
    ASSERT_FALSE(c.points.empty()) << c.kind << " " << c.collective;
    if (c.collective.empty()) {
      EXPECT_EQ(c.points.back().bytes, 64 * KiB) << c.kind;
    }
    for (const profiler::LinkPoint& pt : c.points) {
      EXPECT_GT(pt.time_ns, 0) << c.kind << " " << c.collective << " " << pt.bytes;
      EXPECT_GT(pt.algbw, 0) << c.kind << " " << c.collective << " " << pt.bytes;
    }
  }
}

// ------------------------------------------------------------------ validate --backend cuda

/// The parasim to run: $PARASIM_BINARY where set (a bundle built on another machine,
/// scripts/gpu_bundle.sh), else the one this build made.
std::string parasim_binary() {
  const char* env = std::getenv("PARASIM_BINARY");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string(PARASIM_BINARY);
}

/// Runs the built parasim with `args`; returns its exit status and output.
int run_parasim(const std::string& args, std::string& output) {
  const std::string cmd = parasim_binary() + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return -1;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), static_cast<int>(buf.size()), pipe)) output += buf.data();
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void validate_tiny_cnn(const std::string& strategy) {
  std::string out;
  const int rc = run_parasim("validate --backend cuda --model tiny_cnn --batch 8 --strategy " + strategy +
                                 " --reps 5 --warmup 2 --profile-reps 5",
                             out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("tiny_cnn"), std::string::npos) << out;
  EXPECT_EQ(out.find("UNRELIABLE"), std::string::npos) << out;
}

TEST(GpuValidate, TinyCnnDp1) {
  PARASIM_REQUIRE_GPUS(1);
  validate_tiny_cnn("dp=1");
}

TEST(GpuValidate, TinyCnnDp2) {
  PARASIM_REQUIRE_GPUS(2);
  validate_tiny_cnn("dp=2");
}

// ------------------------------------------------------------------ validate --backend cuda over MPI

/// mpirun -np 2 parasim validate --backend cuda --json: one rank per GPU, NCCL between them.
void validate_on_two_ranks(const std::string& strategy) {
#ifndef PARASIM_MPIEXEC
  (void)strategy;
  GTEST_SKIP() << "parasim was built without MPI or no mpirun was found";
#else
  const std::string mpirun = PARASIM_MPIEXEC;
  const std::string dir = mpirun.substr(0, mpirun.find_last_of('/'));
  // By name on the PATH (Open MPI run as /usr/bin/mpirun takes "/" for its prefix and refuses).
  const std::string cmd = "PATH=" + dir + ":$PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun " +
                          "--bind-to none -np 2 " + parasim_binary() + " validate --backend cuda --model tiny_cnn " +
                          "--batch 8 --strategy " + strategy + " --reps 5 --warmup 2 --profile-reps 5 --json 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), static_cast<int>(buf.size()), pipe)) out += buf.data();
  const int status = pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_NE(out.find("\"runtime\": \"mpi-cuda (2 ranks"), std::string::npos) << out;
  EXPECT_NE(out.find("\"transport\": \"nccl\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"measured\": true"), std::string::npos) << out;
#endif
}

TEST(GpuMpiValidate, TinyCnnDp2OnTwoRanks) {
  PARASIM_REQUIRE_GPUS(2);
  validate_on_two_ranks("dp=2");
}

TEST(GpuMpiValidate, TinyCnn1F1BOnTwoRanks) {
  PARASIM_REQUIRE_GPUS(2);
  validate_on_two_ranks("mp=2,schedule=1f1b,micro=4");
}

#endif

}  // namespace
}  // namespace parasim::gpu_test
