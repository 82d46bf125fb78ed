#include "emitter.hpp"

#include <cmath>

namespace parasim::strategies::detail {

Ref Emitter::compute(int replica, int slot, const DurationFn& duration, std::string_view name, int op, int mb,
                     Phase phase) {
  Ref first;
  for (int t = 0; t < ranks(); ++t) {
    const hardware::DeviceId d = p_.device(replica, slot, t);  // kind_of() without a second lookup
    const TaskId id = b_.add_compute({.device = d,
                                      .stream = kComputeStream,
                                      .duration = duration(p_.kind_index[static_cast<std::size_t>(d)]),
                                      .name = name,
                                      .model_op = op,
                                      .microbatch = mb,
                                      .phase = phase});
    if (t == 0) first = Ref{id, true};
  }
  return first;
}

Ref Emitter::transfer(int replica, int src_slot, int dst_slot, Bytes bytes, std::string_view name, int op, int mb,
                      Phase phase) {
  Ref first;
  for (int t = 0; t < ranks(); ++t) {
    const TaskId id = b_.add_transfer({.src = p_.device(replica, src_slot, t),
                                       .dst = p_.device(replica, dst_slot, t),
                                       .bytes = bytes,
                                       .stream = kPipelineStream,
                                       .name = name,
                                       .model_op = op,
                                       .microbatch = mb,
                                       .phase = phase});
    if (t == 0) first = Ref{id, true};
  }
  return first;
}

simulator::GroupId Emitter::tp_group(int replica, int slot) {
  if (tp_groups_.empty())
    tp_groups_.assign(static_cast<std::size_t>(p_.replicas) * static_cast<std::size_t>(p_.stages), -1);
  simulator::GroupId& g = tp_groups_[static_cast<std::size_t>(replica) * static_cast<std::size_t>(p_.stages) +
                                     static_cast<std::size_t>(slot)];
  if (g < 0) {
    std::vector<simulator::DeviceId> devices;
    for (int t = 0; t < p_.tp_ranks; ++t) devices.push_back(p_.device(replica, slot, t));
    g = b_.add_group(devices);
  }
  return g;
}

simulator::GroupId Emitter::dp_group(int slot, int rank) {
  if (dp_groups_.empty())
    dp_groups_.assign(static_cast<std::size_t>(p_.stages) * static_cast<std::size_t>(p_.tp_ranks), -1);
  simulator::GroupId& g = dp_groups_[static_cast<std::size_t>(slot) * static_cast<std::size_t>(p_.tp_ranks) +
                                     static_cast<std::size_t>(rank)];
  if (g < 0) {
    // Context parallelism: gradients are reduced over DP x CP (Megatron-LM's combined group).
    std::vector<simulator::DeviceId> devices;
    for (int r = 0; r < p_.replicas; ++r)
      for (int c = 0; c < p_.cp; ++c) devices.push_back(p_.device(r, slot, rank, c));
    g = b_.add_group(devices);
  }
  return g;
}

Ref Emitter::tp_collective(int replica, int slot, CollectiveOp op, Bytes bytes, std::string_view name, int model_op,
                           int mb, Phase phase) {
  const TaskId id = b_.add_collective({.op = op,
                                       .group = tp_group(replica, slot),
                                       .bytes = bytes,
                                       .stream = kTensorParallelStream,
                                       .name = name,
                                       .model_op = model_op,
                                       .microbatch = mb,
                                       .phase = phase});
  return Ref{id, false};
}

Ref Emitter::dp_collective(int slot, CollectiveOp op, Bytes bytes, std::string_view name, int model_op, int mb,
                           Phase phase) {
  Ref first;
  for (int t = 0; t < ranks(); ++t) {
    const TaskId id = b_.add_collective({.op = op,
                                         .group = dp_group(slot, t),
                                         .bytes = bytes,
                                         .stream = kDataParallelStream,
                                         .name = name,
                                         .model_op = model_op,
                                         .microbatch = mb,
                                         .phase = phase});
    if (t == 0) first = Ref{id, true};
  }
  return first;
}

simulator::GroupId Emitter::replica_group(int first, int step, int count, int cp_ranks, int slot, int rank) {
  auto [it, fresh] = replica_groups_.try_emplace({first, step, cp_ranks, slot, rank}, -1);
  if (fresh) {
    std::vector<simulator::DeviceId> devices;
    for (int i = 0; i < count; ++i)
      for (int c = 0; c < cp_ranks; ++c) devices.push_back(p_.device(first + i * step, slot, rank, c));
    it->second = b_.add_group(devices);
  }
  return it->second;
}

Ref Emitter::ep_all_to_all(int replica, int slot, Bytes bytes, std::string_view name, int model_op, int mb, Phase phase,
                           std::int64_t key) {
  const int first = replica / p_.ep_replicas * p_.ep_replicas;
  auto [it, fresh] = all_to_all_.try_emplace({first, slot, key, mb});
  if (!fresh) return it->second;
  auto add = [&](simulator::GroupId group) {
    return b_.add_collective({.op = CollectiveOp::AllToAll,
                              .group = group,
                              .bytes = bytes,
                              .stream = kTensorParallelStream,
                              .name = name,
                              .model_op = model_op,
                              .microbatch = mb,
                              .phase = phase});
  };
  if (p_.ep_replicas != p_.ep) {
    // MoE parallel folding: one all-to-all over every TP rank of ep / tp replicas.
    auto [g, added] = folded_groups_.try_emplace({first, slot}, -1);
    if (added) {
      std::vector<simulator::DeviceId> devices;
      for (int r = first; r < first + p_.ep_replicas; ++r)
        for (int t = 0; t < p_.tp_ranks; ++t) devices.push_back(p_.device(r, slot, t));
      g->second = b_.add_group(devices);
    }
    it->second = Ref{add(g->second), false};
    return it->second;
  }
  for (int t = 0; t < ranks(); ++t) {
    const TaskId id = add(replica_group(first, 1, p_.ep, 1, slot, t));
    if (t == 0) it->second = Ref{id, true};
  }
  return it->second;
}

Ref Emitter::edp_collective(int replica, int slot, CollectiveOp op, Bytes bytes, std::string_view name, int mb,
                            Phase phase) {
  Ref first;
  for (int t = 0; t < ranks(); ++t) {
    const TaskId id = b_.add_collective(
        {.op = op,
         .group = replica_group(replica % p_.ep_replicas, p_.ep_replicas, p_.replicas / p_.ep_replicas, p_.cp, slot, t),
         .bytes = bytes,
         .stream = kDataParallelStream,
         .name = name,
         .model_op = -1,
         .microbatch = mb,
         .phase = phase});
    if (t == 0) first = Ref{id, true};
  }
  return first;
}

Ref Emitter::marker(std::string_view name) { return Ref{b_.add_marker(name), false}; }

Ref Emitter::rank_markers(std::string_view name) {
  const Ref first{b_.add_marker(name), true};
  for (int t = 1; t < ranks(); ++t) b_.add_marker(name);
  return first;
}

Ref Emitter::cp_transfer(int replica, int slot, int src, int dst, Bytes bytes, std::string_view name, int op, int mb,
                         Phase phase) {
  Ref first;
  for (int t = 0; t < ranks(); ++t) {
    const TaskId id = b_.add_transfer({.src = p_.device(replica, slot, t, src),
                                       .dst = p_.device(replica, slot, t, dst),
                                       .bytes = bytes,
                                       .stream = kContextParallelStream,
                                       .name = name,
                                       .model_op = op,
                                       .microbatch = mb,
                                       .phase = phase});
    if (t == 0) first = Ref{id, true};
  }
  return first;
}

Emitter::Ring Emitter::ring_pass(int replica, int slot, const DurationFn& step, const std::function<Bytes(int)>& bytes,
                                 bool after_step, std::string_view name, int op, int mb, Phase phase, const Refs& deps,
                                 Refs& work) {
  const int ring = p_.cp;
  Ring out;
  std::vector<Ref> into(static_cast<std::size_t>(ring));  // per rank: the previous step's transfer into it
  for (int j = 0; j < ring; ++j) {
    const Ref task = compute(replica, slot, step, name, op, mb, phase);
    if (j == 0) {
      after(task, deps);
      out.first = task;
    } else {
      after(task, out.last);
      after(task, into[0]);
    }
    work.push_back(task);
    out.last = task;
    const Bytes b = bytes(j);
    std::vector<Ref> next(static_cast<std::size_t>(ring));
    if (b > 0) {
      for (int c = 0; c < ring; ++c) {
        const Ref x = cp_transfer(replica, slot, c, (c + 1) % ring, b, "cp_ring", op, mb, phase);
        if (j == 0) after(x, deps);
        else after(x, into[static_cast<std::size_t>(c)]);
        if (after_step) after(x, task);
        next[static_cast<std::size_t>((c + 1) % ring)] = x;
      }
    }
    into = std::move(next);
  }
  out.done = {out.last};
  if (into[0].valid()) out.done.push_back(into[0]);
  return out;
}

void Emitter::after(Ref task, Ref dep) {
  if (!task.valid() || !dep.valid()) return;
  // One simulated TP rank (the planner's stage lowerings): every case is one edge. Kept lean,
  // the ranks' loops out of line: lowerings call this for millions of edges per plan.
  if (ranks() == 1) {
    b_.add_dependency(task.id, dep.id);
    return;
  }
  after_ranks(task, dep);
}

void Emitter::after_ranks(Ref task, Ref dep) {
  if (task.per_rank && dep.per_rank) {
    for (int t = 0; t < ranks(); ++t) b_.add_dependency(task.id + t, dep.id + t);
  } else if (task.per_rank) {
    for (int t = 0; t < ranks(); ++t) b_.add_dependency(task.id + t, dep.id);
  } else if (dep.per_rank) {
    for (int t = 0; t < ranks(); ++t) b_.add_dependency(task.id, dep.id + t);
  } else {
    b_.add_dependency(task.id, dep.id);
  }
}

void Emitter::memory(Ref task, Bytes alloc, Bytes free) {
  if (!task.valid() || (alloc == 0 && free == 0)) return;
  const int copies = task.per_rank ? ranks() : 1;
  for (int t = 0; t < copies; ++t) b_.set_memory(task.id + t, alloc, free);
}

Bytes GradientSync::gathered_bytes(Bytes gradient_bytes) const {
  // The buckets count gradient bytes; ZeRO gathers the updated weights, in the weights' dtype.
  return gradient_bytes / p_.grad_bytes_per_param() * models::dtype_size(p_.dtype);
}

bool GradientSync::reduces(Bytes bytes) const {
  // ZeRO-3 reduce-scatters each layer's gradients right after its backward (the lowerings emit it).
  return p_.grad_ranks() > 1 && bytes > 0 && !p_.zero3();
}

bool GradientSync::reduces_experts(Bytes expert_bytes) const {
  // Expert gradients: over the DP x CP ranks holding the same experts (dp / ep replicas x cp; with
  // folding dp / (ep / tp) replicas of the same TP rank).
  return p_.ep > 1 && p_.expert_grad_ranks() > 1 && expert_bytes > 0;
}

Refs GradientSync::reduce(int replica, int slot, int bucket, int mb, const Refs& ready, Bytes bytes, Bytes expert_bytes,
                          bool accumulating) {
  const bool reduce = reduces(bytes);
  const bool expert_reduce = reduces_experts(expert_bytes);
  const bool zero = p_.s.zero >= 1;  // ZeRO-1 and -2: reduce-scatter, update a shard, all-gather
  const auto key = std::make_tuple(slot, bucket, mb, accumulating);
  const auto expert_key = std::make_tuple(slot, bucket, mb, replica % p_.ep_replicas, accumulating);
  Refs out;
  if (reduce) {
    auto [it, fresh] = reduce_.try_emplace(key);
    if (fresh) {
      const std::string name = "grads.stage" + std::to_string(slot) + ".bucket" + std::to_string(bucket);
      it->second = e_.dp_collective(slot, zero ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce, bytes, name,
                                    -1, mb, Phase::BackwardWeight);
    }
    e_.after(it->second, ready);
    out.push_back(it->second);
  }
  if (expert_reduce) {
    auto [it, fresh] = expert_reduce_.try_emplace(expert_key);
    if (fresh) {
      const std::string name = "expert_grads.stage" + std::to_string(slot) + ".bucket" + std::to_string(bucket);
      it->second = e_.edp_collective(replica, slot, zero ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce,
                                     expert_bytes, name, mb, Phase::BackwardWeight);
    }
    e_.after(it->second, ready);
    out.push_back(it->second);
  }
  return out;
}

Refs GradientSync::sync(int replica, int slot, int bucket, int mb, const Refs& ready, Bytes bytes,
                        const std::vector<Update>& updates, Bytes expert_bytes) {
  const bool reduce_dp = reduces(bytes);
  const bool expert_reduce = reduces_experts(expert_bytes);
  const bool zero = p_.s.zero >= 1;
  const auto key = std::make_tuple(slot, bucket, mb);
  const auto expert_key = std::make_tuple(slot, bucket, mb, replica % p_.ep_replicas);
  Refs done;
  Refs after_reduce = reduce(replica, slot, bucket, mb, ready, bytes, expert_bytes, false);
  if (after_reduce.empty()) after_reduce = ready;
  // Without a reduction, every update waits for every micro-batch's backward of the bucket's ops:
  // ops x micro-batches x ops edges (5.4 M on a 1T-parameter pipeline of 512 micro-batches, more
  // than the rest of its graph). A zero-time join (the engine completes markers the moment they
  // are ready) takes ops x micro-batches + ops instead, whenever that is fewer.
  if (after_reduce.size() * updates.size() > after_reduce.size() + updates.size()) {
    const Ref join = e_.rank_markers("grads_ready");
    e_.after(join, after_reduce);
    after_reduce = Refs{join};
  }
  Refs update_tasks;
  for (const Update& up : updates) {
    const Ref u = e_.compute(replica, slot, up.duration, up.name, up.op, mb, Phase::Update);
    e_.after(u, after_reduce);
    update_tasks.push_back(u);
  }
  const Refs& updated = update_tasks.empty() ? after_reduce : update_tasks;
  if (zero && reduce_dp) {
    auto [it, fresh] = gather_.try_emplace(key);
    if (fresh) {
      const std::string name = "params.stage" + std::to_string(slot) + ".bucket" + std::to_string(bucket);
      it->second = e_.dp_collective(slot, CollectiveOp::AllGather, gathered_bytes(bytes), name, -1, mb, Phase::Update);
    }
    e_.after(it->second, updated);
    done.push_back(it->second);
  }
  if (zero && expert_reduce) {
    auto [it, fresh] = expert_gather_.try_emplace(expert_key);
    if (fresh) {
      const std::string name = "expert_params.stage" + std::to_string(slot) + ".bucket" + std::to_string(bucket);
      it->second = e_.edp_collective(replica, slot, CollectiveOp::AllGather, gathered_bytes(expert_bytes), name, mb,
                                     Phase::Update);
    }
    e_.after(it->second, updated);
    done.push_back(it->second);
  }
  if (done.empty()) done = updated;
  return done;
}

TimeNs weight_prediction_time(const Prepared& p, int kind, std::int64_t params) {
  if (params <= 0) return 0;
  const profiler::RooflineDevice device = p.roofline.device(p.kinds[static_cast<std::size_t>(kind)]);
  const profiler::KernelWork axpy{.cls = profiler::KernelClass::Memory,
                                  .count = 1,
                                  .flops = 2.0 * static_cast<double>(params),
                                  .bytes = 16.0 * static_cast<double>(params)};
  return static_cast<TimeNs>(std::llround(device.kernel_time_ns(axpy, models::DType::F32)));
}

}  // namespace parasim::strategies::detail
