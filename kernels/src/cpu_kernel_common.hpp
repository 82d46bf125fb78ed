// Internal to the CPU backend: the pieces every CPU op kernel is built from.
//
// A CPU kernel is a list of steps per phase. A step is either a oneDNN primitive with all of its
// memory allocated once (Prim), or a small reference loop (a lambda owning its buffers). Each
// per-kind builder (cpu_kernel_<family>.cpp) only decides which steps an op's phases run.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "parasim/models/graph.hpp"
#include "parasim/kernels/kernel_backend.hpp"

#if PARASIM_HAVE_DNNL
// oneDNN's headers are not clean under -Wshadow/-Wpedantic; they are third-party code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
#include <oneapi/dnnl/dnnl.hpp>
#pragma GCC diagnostic pop
#endif

namespace parasim::kernels::cpu {

/// Deterministic values in [-1, 1) (xorshift), so denormals and NaNs never skew timings.
void fill_uniform(float* data, std::size_t n, std::uint64_t seed);
std::vector<float> uniform_vector(std::size_t n, std::uint64_t seed);

#if PARASIM_HAVE_DNNL
using dnnl::memory;
using Dims = memory::dims;
using Tag = memory::format_tag;
using DataType = memory::data_type;

struct Context {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  int threads = 1;
};

/// Plain row-major tag for a rank (a, ab, abc, ...).
Tag plain_tag(std::size_t rank);
memory::desc plain_md(const Dims& dims, DataType dt);
memory::desc any_md(const Dims& dims, DataType dt);

/// A primitive with every argument's memory allocated and filled once.
struct Prim {
  dnnl::primitive primitive;
  std::unordered_map<int, memory> args;
  std::string impl;  // oneDNN implementation name, e.g. "jit:avx512_core"
  std::vector<memory> keep_alive;  // buffers that argument memories view (sub-memories)
  void execute(Context& ctx) { primitive.execute(ctx.stream, args); }
  memory& arg(int id) { return args.at(id); }
};

/// Creates the primitive of `pd` and allocates every argument it takes (queried from the primitive
/// descriptor), filled with values in [-1, 1). An argument found in `reuse` with the same memory
/// descriptor is shared instead (a backward reuses the forward's workspace, statistics, source).
template <class PrimitiveType, class PrimitiveDesc>
Prim make_prim(Context& ctx, const PrimitiveDesc& pd, const std::unordered_map<int, memory>& reuse = {},
               int multiple_srcs = 0);

/// Fills f32/bf16 memory with values in [-1, 1), anything else with zeros.
void fill_memory(memory& m, std::uint64_t seed);
/// Non-template part of make_prim.
void allocate_args(Context& ctx, const dnnl::primitive_desc_base& pd, const std::unordered_map<int, memory>& reuse,
                   int multiple_srcs, std::unordered_map<int, memory>& args);
std::string impl_name(const dnnl::primitive_desc_base& pd);

template <class PrimitiveType, class PrimitiveDesc>
Prim make_prim(Context& ctx, const PrimitiveDesc& pd, const std::unordered_map<int, memory>& reuse, int multiple_srcs) {
  Prim p;
  p.primitive = PrimitiveType(pd);
  allocate_args(ctx, pd, reuse, multiple_srcs, p.args);
  p.impl = impl_name(pd);
  return p;
}

/// Collects the steps of one op's kernel while a per-kind builder runs.
class Builder {
 public:
  Builder(std::shared_ptr<Context> ctx, const models::Op& op, DataType dt) : ctx_(std::move(ctx)), op_(op), dt_(dt) {}

  Context& ctx() { return *ctx_; }
  const models::Op& op() const { return op_; }
  /// The oneDNN data type the op runs in (f32, or bf16 for bf16 models on capable hosts).
  DataType dt() const { return dt_; }
  bool has(Phase p) const { return op_has_phase(op_, p); }

  /// Adds a primitive execution to `phase`; returns it so later steps can reuse its memories.
  std::shared_ptr<Prim> add(Phase phase, Prim prim, const std::string& label);
  /// Adds a reference loop to `phase`.
  void add(Phase phase, std::function<void()> step, const std::string& label);
  void note(const std::string& n) { notes_.push_back(n); }

  std::array<std::vector<std::function<void()>>, 4> take_steps() { return std::move(steps_); }
  std::string notes() const;

 private:
  std::shared_ptr<Context> ctx_;
  const models::Op& op_;
  DataType dt_;
  std::array<std::vector<std::function<void()>>, 4> steps_;
  std::array<std::vector<std::string>, 4> labels_;
  std::vector<std::string> notes_;
};

// Per-family builders. Each adds the steps of every phase the op has (Builder::has) except the
// optimizer update, which the backend adds for all ops with parameters.
void build_conv(Builder& b);
void build_linear(Builder& b);
void build_matmul(Builder& b);
void build_batched_matmul(Builder& b);
void build_attention(Builder& b);
void build_lstm(Builder& b);
void build_pool(Builder& b);
void build_adaptive_avg_pool(Builder& b);
void build_batch_norm(Builder& b);
void build_layer_norm(Builder& b);
void build_eltwise(Builder& b);
void build_softmax(Builder& b);
void build_add(Builder& b);
void build_mul(Builder& b);
void build_concat(Builder& b);
void build_dropout(Builder& b);
void build_embedding(Builder& b);
void build_gather(Builder& b);
void build_cross_entropy(Builder& b);
void build_sampled_softmax(Builder& b);
#endif

/// The optimizer step over `params` fp32 parameters (weights, gradient and state allocated here).
std::function<void()> make_optimizer_step(Optimizer opt, std::int64_t params, int threads);

}  // namespace parasim::kernels::cpu
