// The CPU kernel backend: oneDNN engine + stream, argument allocation for primitives, the step
// list every CPU op kernel is, and the dispatch from op kind to the per-family builders.
#include <algorithm>
#include <cstring>
#include <sstream>

#include "cpu_kernel_common.hpp"
#include "parasim/common/error.hpp"
#include "parasim/kernels/host_cpu.hpp"

#if PARASIM_HAVE_DNNL
#include <omp.h>
#endif

namespace parasim::kernels {

namespace cpu {

void fill_uniform(float* data, std::size_t n, std::uint64_t seed) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  for (std::size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    // 24 random bits -> [-1, 1)
    data[i] = static_cast<float>(static_cast<double>(x >> 40) / 8388608.0 - 1.0);
  }
}

std::vector<float> uniform_vector(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  fill_uniform(v.data(), n, seed);
  return v;
}

#if PARASIM_HAVE_DNNL

Tag plain_tag(std::size_t rank) {
  switch (rank) {
    case 1: return Tag::a;
    case 2: return Tag::ab;
    case 3: return Tag::abc;
    case 4: return Tag::abcd;
    case 5: return Tag::abcde;
    default: throw RuntimeError("CPU backend: tensors of rank " + std::to_string(rank) + " are not supported");
  }
}

memory::desc plain_md(const Dims& dims, DataType dt) { return memory::desc(dims, dt, plain_tag(dims.size())); }
memory::desc any_md(const Dims& dims, DataType dt) { return memory::desc(dims, dt, Tag::any); }

namespace {

/// Every argument a primitive may take (multiple sources are added per primitive).
constexpr int kCandidateArgs[] = {
    DNNL_ARG_SRC_0,         DNNL_ARG_SRC_1,          DNNL_ARG_SRC_2,         DNNL_ARG_SRC_3,
    DNNL_ARG_DST_0,         DNNL_ARG_DST_1,          DNNL_ARG_DST_2,         DNNL_ARG_WEIGHTS_0,
    DNNL_ARG_WEIGHTS_1,     DNNL_ARG_WEIGHTS_2,      DNNL_ARG_WEIGHTS_3,     DNNL_ARG_BIAS,
    DNNL_ARG_MEAN,          DNNL_ARG_VARIANCE,       DNNL_ARG_SCALE,         DNNL_ARG_SHIFT,
    DNNL_ARG_WORKSPACE,     DNNL_ARG_SCRATCHPAD,     DNNL_ARG_DIFF_SRC_0,    DNNL_ARG_DIFF_SRC_1,
    DNNL_ARG_DIFF_SRC_2,    DNNL_ARG_DIFF_SRC_3,     DNNL_ARG_DIFF_DST_0,    DNNL_ARG_DIFF_DST_1,
    DNNL_ARG_DIFF_DST_2,    DNNL_ARG_DIFF_WEIGHTS_0, DNNL_ARG_DIFF_WEIGHTS_1, DNNL_ARG_DIFF_WEIGHTS_2,
    DNNL_ARG_DIFF_WEIGHTS_3, DNNL_ARG_DIFF_BIAS,     DNNL_ARG_DIFF_SCALE,    DNNL_ARG_DIFF_SHIFT,
};

std::uint16_t to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return static_cast<std::uint16_t>(u >> 16);
}

}  // namespace

void fill_memory(memory& m, std::uint64_t seed) {
  const memory::desc md = m.get_desc();
  const std::size_t bytes = md.get_size();
  auto* p = static_cast<std::uint8_t*>(m.get_data_handle());
  switch (md.data_type()) {
    case DataType::f32: fill_uniform(reinterpret_cast<float*>(p), bytes / 4, seed); break;
    case DataType::bf16: {
      std::vector<float> tmp = uniform_vector(bytes / 2, seed);
      auto* q = reinterpret_cast<std::uint16_t*>(p);
      for (std::size_t i = 0; i < tmp.size(); ++i) q[i] = to_bf16(tmp[i]);
      break;
    }
    default: std::memset(p, 0, bytes); break;  // workspaces, indices: produced by the forward
  }
}

void allocate_args(Context& ctx, const dnnl::primitive_desc_base& pd, const std::unordered_map<int, memory>& reuse,
                   int multiple_srcs, std::unordered_map<int, memory>& args) {
  std::vector<int> ids(std::begin(kCandidateArgs), std::end(kCandidateArgs));
  for (int i = 0; i < multiple_srcs; ++i) ids.push_back(DNNL_ARG_MULTIPLE_SRC + i);
  std::uint64_t seed = 1;
  for (int id : ids) {
    const memory::desc md = pd.query_md(dnnl::query::exec_arg_md, id);
    if (md.is_zero()) continue;
    if (auto it = reuse.find(id); it != reuse.end() && it->second.get_desc() == md) {
      args.emplace(id, it->second);
      continue;
    }
    memory m(md, ctx.engine);
    fill_memory(m, seed++ * 7919 + static_cast<std::uint64_t>(id));
    args.emplace(id, m);
  }
}

std::string impl_name(const dnnl::primitive_desc_base& pd) {
  const char* s = pd.impl_info_str();
  return s ? s : "?";
}

std::shared_ptr<Prim> Builder::add(Phase phase, Prim prim, const std::string& label) {
  auto p = std::make_shared<Prim>(std::move(prim));
  std::shared_ptr<Context> ctx = ctx_;
  steps_[phase_index(phase)].push_back([p, ctx] { p->execute(*ctx); });
  labels_[phase_index(phase)].push_back(label + ":" + p->impl);
  return p;
}

void Builder::add(Phase phase, std::function<void()> step, const std::string& label) {
  steps_[phase_index(phase)].push_back(std::move(step));
  labels_[phase_index(phase)].push_back(label + ":loop");
}

std::string Builder::notes() const {
  std::string s;
  for (Phase p : kPhases) {
    const auto& l = labels_[phase_index(p)];
    if (l.empty()) continue;
    if (!s.empty()) s += "; ";
    s += phase_key(p) + "=";
    for (std::size_t i = 0; i < l.size() && i < 4; ++i) s += (i ? "," : "") + l[i];
    if (l.size() > 4) s += ",... (" + std::to_string(l.size()) + " steps)";
  }
  for (const auto& n : notes_) s += (s.empty() ? "" : "; ") + n;
  return s;
}

#endif  // PARASIM_HAVE_DNNL

}  // namespace cpu

std::string onednn_version() {
#if PARASIM_HAVE_DNNL
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
#else
  return "";
#endif
}

namespace {

#if PARASIM_HAVE_DNNL

using cpu::Builder;
using cpu::DataType;

/// Sets oneDNN's OpenMP thread count for the calling thread (an OpenMP ICV is per thread).
void use_threads(int threads) {
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
}

class CpuOpKernel final : public OpKernel {
 public:
  CpuOpKernel(std::array<std::vector<std::function<void()>>, 4> steps, std::string note, int threads)
      : steps_(std::move(steps)), note_(std::move(note)), threads_(threads) {}

  void run(Phase phase) override {
    use_threads(threads_);
    for (auto& step : steps_[phase_index(phase)]) step();
  }
  std::string note() const override { return note_; }
  std::int64_t launches(Phase phase) const override {
    return static_cast<std::int64_t>(steps_[phase_index(phase)].size());
  }

 private:
  std::array<std::vector<std::function<void()>>, 4> steps_;
  std::string note_;
  int threads_;
};

void build_steps(Builder& b) {
  using models::OpKind;
  switch (b.op().kind) {
    case OpKind::Input:
    case OpKind::Reshape: return;  // nothing runs
    case OpKind::Conv2d: return cpu::build_conv(b);
    case OpKind::Linear: return cpu::build_linear(b);
    case OpKind::Matmul: return cpu::build_matmul(b);
    case OpKind::BatchedMatmul: return cpu::build_batched_matmul(b);
    case OpKind::Attention: return cpu::build_attention(b);
    case OpKind::Lstm: return cpu::build_lstm(b);
    case OpKind::MaxPool2d:
    case OpKind::AvgPool2d: return cpu::build_pool(b);
    case OpKind::AdaptiveAvgPool2d: return cpu::build_adaptive_avg_pool(b);
    case OpKind::BatchNorm: return cpu::build_batch_norm(b);
    case OpKind::LayerNorm: return cpu::build_layer_norm(b);
    case OpKind::Relu:
    case OpKind::Gelu:
    case OpKind::Tanh:
    case OpKind::Sigmoid: return cpu::build_eltwise(b);
    case OpKind::Softmax: return cpu::build_softmax(b);
    case OpKind::Add: return cpu::build_add(b);
    case OpKind::Mul: return cpu::build_mul(b);
    case OpKind::Concat: return cpu::build_concat(b);
    case OpKind::Dropout: return cpu::build_dropout(b);
    case OpKind::Embedding: return cpu::build_embedding(b);
    case OpKind::Gather: return cpu::build_gather(b);
    case OpKind::CrossEntropy: return cpu::build_cross_entropy(b);
    case OpKind::SampledSoftmax: return cpu::build_sampled_softmax(b);
    case OpKind::RmsNorm:
    case OpKind::Swiglu:
    case OpKind::SquaredRelu:
    case OpKind::Rotary:
    case OpKind::Experts:
      // The profile records the op as not measured; the cost model falls back to the roofline.
      throw RuntimeError("CPU backend: no kernel for " + models::to_string(b.op().kind) + " yet");
  }
}

class CpuKernelBackend final : public KernelBackend {
 public:
  explicit CpuKernelBackend(int threads) : ctx_(std::make_shared<cpu::Context>()), host_(detect_host_cpu()) {
    ctx_->threads = std::max(threads, 1);
  }

  std::unique_ptr<OpKernel> prepare(const models::Op& op, Optimizer opt) override {
    use_threads(ctx_->threads);
    std::string dtype_note;
    DataType dt = DataType::f32;
    if (op.dtype == models::DType::BF16) {
      if (host_.avx512_bf16) dt = DataType::bf16;
      else dtype_note = "bf16 needs AVX512-BF16, which this CPU lacks: timed in fp32";
    } else if (op.dtype == models::DType::F16) {
      dtype_note = "fp16: oneDNN 2.6 has no fp16 CPU kernels here: timed in fp32";
    }
    Builder b(ctx_, op, dt);
    try {
      build_steps(b);
    } catch (const dnnl::error& e) {
      if (dt == DataType::f32) throw RuntimeError(describe(op) + ": oneDNN cannot create its kernels: " + e.what());
      Builder f32(ctx_, op, DataType::f32);  // e.g. a primitive without a bf16 implementation
      try {
        build_steps(f32);
      } catch (const dnnl::error& e2) {
        throw RuntimeError(describe(op) + ": oneDNN cannot create its kernels: " + e2.what());
      }
      f32.note(std::string("bf16 unsupported for this op (") + e.what() + "): timed in fp32");
      return finish(f32, op, opt, dtype_note);
    }
    return finish(b, op, opt, dtype_note);
  }

  void synchronize() override { ctx_->stream.wait(); }
  std::string name() const override { return "cpu-onednn"; }
  std::string device_kind() const override { return host_device_kind(host_); }

 private:
  static std::string describe(const models::Op& op) {
    return models::to_string(op.kind) + " \"" + op.name + "\"";
  }

  std::unique_ptr<OpKernel> finish(Builder& b, const models::Op& op, Optimizer opt, const std::string& dtype_note) {
    if (op_has_phase(op, Phase::Update))
      b.add(Phase::Update, cpu::make_optimizer_step(opt, op.params, ctx_->threads), to_string(opt));
    if (!dtype_note.empty()) b.note(dtype_note);
    std::string note = b.notes();
    auto kernel = std::make_unique<CpuOpKernel>(b.take_steps(), std::move(note), ctx_->threads);
    // One forward now, so that workspaces (max-pool indices, LSTM states) and batch statistics
    // the backward reads are valid.
    kernel->run(Phase::Forward);
    ctx_->stream.wait();
    return kernel;
  }

  std::shared_ptr<cpu::Context> ctx_;
  HostCpu host_;
};

#else  // !PARASIM_HAVE_DNNL

class CpuKernelBackend final : public KernelBackend {
 public:
  explicit CpuKernelBackend(int) : host_(detect_host_cpu()) {}
  std::unique_ptr<OpKernel> prepare(const models::Op&, Optimizer) override {
    throw RuntimeError(
        "parasim was built without oneDNN; the CPU kernel backend needs it (install libdnnl-dev and rebuild)");
  }
  void synchronize() override {}
  std::string name() const override { return "cpu-onednn"; }
  std::string device_kind() const override { return host_device_kind(host_); }

 private:
  HostCpu host_;
};

#endif

}  // namespace

std::unique_ptr<KernelBackend> make_cpu_kernel_backend(int threads) {
  return std::make_unique<CpuKernelBackend>(threads);
}

}  // namespace parasim::kernels
