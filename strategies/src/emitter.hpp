// Internal: adds tasks to the TaskGraphBuilder for one *logical* task at a time.
//
// A logical compute task or transfer exists once per simulated TP rank; those copies get
// consecutive task ids, so a Ref {id, per_rank = true} names rank t's copy as id + t. A
// collective shared by the ranks (a TP allreduce) is a Ref with per_rank = false. Dependencies
// between two per-rank refs connect rank t to rank t.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "prepared_step.hpp"
#include "parasim/simulator/task_graph.hpp"

namespace parasim::strategies::detail {

using simulator::CollectiveOp;
using simulator::Phase;
using simulator::TaskId;

struct Ref {
  TaskId id = simulator::kNoTask;
  bool per_rank = true;
  bool valid() const { return id != simulator::kNoTask; }
};
using Refs = std::vector<Ref>;

/// Duration of a compute task on device kind `k`.
using DurationFn = std::function<TimeNs(int kind)>;

class Emitter {
 public:
  Emitter(const Prepared& p, simulator::TaskGraphBuilder& b) : p_(p), b_(b) {}

  int ranks() const { return p_.sim_tp; }

  Ref compute(int replica, int slot, const DurationFn& duration, std::string_view name, int op, int mb, Phase phase);
  /// Activation `bytes` from `src_slot` to `dst_slot` of one replica, one transfer per TP rank.
  Ref transfer(int replica, int src_slot, int dst_slot, Bytes bytes, std::string_view name, int op, int mb, Phase phase);
  /// One collective over the TP group of (replica, slot).
  Ref tp_collective(int replica, int slot, CollectiveOp op, Bytes bytes, std::string_view name, int model_op, int mb,
                    Phase phase);
  /// One collective per simulated TP rank over the DP group of (slot, rank): the same stage of every replica.
  Ref dp_collective(int slot, CollectiveOp op, Bytes bytes, std::string_view name, int model_op, int mb, Phase phase);
  Ref marker(std::string_view name);

  void after(Ref task, Ref dep);
  void after(Ref task, const Refs& deps) {
    for (const Ref& d : deps) after(task, d);
  }
  void memory(Ref task, Bytes alloc, Bytes free);

  simulator::TaskGraphBuilder& builder() { return b_; }

 private:
  simulator::GroupId tp_group(int replica, int slot);
  simulator::GroupId dp_group(int slot, int rank);

  const Prepared& p_;
  simulator::TaskGraphBuilder& b_;
  std::map<std::pair<int, int>, simulator::GroupId> tp_groups_;
  std::map<std::pair<int, int>, simulator::GroupId> dp_groups_;
};

/// DP gradient reduction and optimizer update of one bucket, shared by both granularities. The
/// collectives of a (slot, bucket, micro-batch) are created by the first simulated replica and
/// reused by the others (they are one collective over all replicas).
class GradientSync {
 public:
  GradientSync(const Prepared& p, Emitter& e) : p_(p), e_(e) {}

  struct Update {
    int op = -1;              // model op, -1 for a whole bucket (Stage granularity)
    std::string_view name{};
    DurationFn duration;
  };
  /// `ready`: the tasks that produce the bucket's final gradients on replica r; `updates` run
  /// after the reduction. Returns what ends the bucket.
  Refs sync(int replica, int slot, int bucket, int mb, const Refs& ready, Bytes bytes,
            const std::vector<Update>& updates);

 private:
  const Prepared& p_;
  Emitter& e_;
  std::map<std::tuple<int, int, int>, Ref> reduce_, gather_;
};

/// SpecTrain's weight prediction W' = W - s * lr * v over `params` parameters: a memory-bound
/// axpy reading W and v and writing W' (fp32: 3 reads + 1 write of 4 bytes per parameter
/// counting the learning-rate-scaled staleness as a read), 2 flops per parameter.
TimeNs weight_prediction_time(const Prepared& p, int kind, std::int64_t params);

}  // namespace parasim::strategies::detail
