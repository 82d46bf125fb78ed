// Internal: adds tasks to the TaskGraphBuilder for one *logical* task at a time.
//
// A logical compute task or transfer exists once per simulated TP rank; those copies get
// consecutive task ids, so a Ref {id, per_rank = true} names rank t's copy as id + t. A
// collective shared by the ranks (a TP allreduce) is a Ref with per_rank = false. Dependencies
// between two per-rank refs connect rank t to rank t.
#pragma once

#include <array>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "flat_memo.hpp"
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
/// A short list of Refs: the dependency lists the lowerings pass around per task, almost always 1
/// to 4 long. They live inline up to four, on the heap beyond, so that lowering a graph of
/// 100,000 tasks does not call malloc for every list. Appends at the end only.
class Refs {
 public:
  Refs() = default;
  Refs(std::initializer_list<Ref> refs) {
    for (const Ref& r : refs) push_back(r);
  }
  void push_back(const Ref& r) {
    if (size_ < kInline) {
      inline_[size_++] = r;
      return;
    }
    if (size_ == kInline) heap_.assign(inline_.begin(), inline_.end());
    heap_.push_back(r);
    ++size_;
  }
  template <typename It>
  void insert(const Ref* at, It first, It last) {  // at == end(): the only place the lowerings insert
    (void)at;
    for (; first != last; ++first) push_back(*first);
  }
  const Ref* begin() const { return size_ <= kInline ? inline_.data() : heap_.data(); }
  const Ref* end() const { return begin() + size_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Ref& back() const { return begin()[size_ - 1]; }

 private:
  static constexpr std::size_t kInline = 4;
  std::array<Ref, kInline> inline_{};
  std::size_t size_ = 0;
  std::vector<Ref> heap_;  // every element once size_ > kInline
};

/// Duration of a compute task on device kind `k`.
using DurationFn = std::function<TimeNs(int kind)>;

class Emitter {
 public:
  Emitter(const Prepared& p, simulator::TaskGraphBuilder& b) : p_(p), b_(b) {}

  int ranks() const { return p_.sim_tp; }

  Ref compute(int replica, int slot, const DurationFn& duration, std::string_view name, int op, int mb, Phase phase);
  /// Activation `bytes` from `src_slot` to `dst_slot` of one replica, one transfer per TP rank.
  Ref transfer(int replica, int src_slot, int dst_slot, Bytes bytes, std::string_view name, int op, int mb,
               Phase phase);
  /// One collective over the TP group of (replica, slot).
  Ref tp_collective(int replica, int slot, CollectiveOp op, Bytes bytes, std::string_view name, int model_op, int mb,
                    Phase phase);
  /// One collective per simulated TP rank over the DP group of (slot, rank): the same stage of every replica.
  Ref dp_collective(int slot, CollectiveOp op, Bytes bytes, std::string_view name, int model_op, int mb, Phase phase);
  /// One all-to-all per simulated TP rank over the expert-parallel group of (replica, slot, rank):
  /// the ep consecutive replicas holding replica's block, on the simulated CP rank (each CP rank
  /// routes its S/C tokens among the same CP rank of the group). Replicas of one group share it:
  /// the first to ask for (key, mb) creates it (with its bytes), the others get the same Ref.
  Ref ep_all_to_all(int replica, int slot, Bytes bytes, std::string_view name, int model_op, int mb, Phase phase,
                    std::int64_t key);
  /// One collective per simulated TP rank over the expert-data-parallel group of (slot, rank) that
  /// `replica` belongs to: every CP rank of the replicas holding the same experts (replica % ep).
  Ref edp_collective(int replica, int slot, CollectiveOp op, Bytes bytes, std::string_view name, int mb, Phase phase);
  Ref marker(std::string_view name);
  /// One marker per simulated TP rank (consecutive ids, per_rank): a join that lets many tasks wait
  /// for many others through one edge each instead of one edge per pair, rank t for rank t.
  Ref rank_markers(std::string_view name);

  /// Context parallelism: one ring-attention pass (forward, recompute or backward of one attention
  /// op, or of a chunk's attention ops at Stage granularity) of `replica` on `slot`, simulated on
  /// CP rank 0 (the other ranks run the same steps at the same time). Step j is a compute task of
  /// `step(kind)`; meanwhile every CP rank c sends `bytes(j)` (0: nothing) to rank c + 1 as a real
  /// transfer on the context-parallel stream. A transfer waits for the chunk it passes on (the
  /// previous step's transfer into its sender; step 0: `deps`) and, when `after_step`, for step j
  /// (backward: the dK/dV it just accumulated); step j + 1 waits for the transfer into rank 0.
  struct Ring {
    Ref first, last;  // the first and last step's compute
    Refs done;        // last step and the final transfer into rank 0 (backward: dK/dV back home)
  };
  Ring ring_pass(int replica, int slot, const DurationFn& step, const std::function<Bytes(int)>& bytes, bool after_step,
                 std::string_view name, int op, int mb, Phase phase, const Refs& deps, Refs& work);

  void after(Ref task, Ref dep);
  void after(Ref task, const Refs& deps) {
    for (const Ref& d : deps) after(task, d);
  }
  void memory(Ref task, Bytes alloc, Bytes free);

  simulator::TaskGraphBuilder& builder() { return b_; }

 private:
  [[gnu::noinline]] void after_ranks(Ref task, Ref dep);  // after() with several simulated TP ranks
  /// `bytes` from CP rank `src` to CP rank `dst` of (replica, slot), one transfer per simulated TP rank.
  Ref cp_transfer(int replica, int slot, int src, int dst, Bytes bytes, std::string_view name, int op, int mb,
                  Phase phase);
  simulator::GroupId tp_group(int replica, int slot);
  simulator::GroupId dp_group(int slot, int rank);
  /// Replicas first, first + step, ... (count of them) of (slot, rank), each with its CP ranks
  /// 0 .. cp_ranks - 1.
  simulator::GroupId replica_group(int first, int step, int count, int cp_ranks, int slot, int rank);

  const Prepared& p_;
  simulator::TaskGraphBuilder& b_;
  // Group ids by replica x slot (TP) and slot x rank (DP), -1 until first used: looked up for
  // every collective task.
  std::vector<simulator::GroupId> tp_groups_, dp_groups_;
  // (first, step, cp_ranks, slot, rank)
  std::map<std::tuple<int, int, int, int, int>, simulator::GroupId> replica_groups_;
  std::map<std::tuple<int, int, std::int64_t, int>, Ref> all_to_all_;            // (group, slot, key, mb)
  std::map<std::pair<int, int>, simulator::GroupId> folded_groups_;              // (first replica, slot)
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
  /// `expert_bytes` (expert parallelism): the bucket's expert gradients, reduced over the replicas
  /// holding the same experts instead of the whole DP group.
  Refs sync(int replica, int slot, int bucket, int mb, const Refs& ready, Bytes bytes,
            const std::vector<Update>& updates, Bytes expert_bytes = 0);
  /// The bucket's DP (and expert-DP) reduction of micro-batch mb after `ready`: a reduce-scatter
  /// with ZeRO, else an all-reduce; one collective per group however many replicas ask; none on
  /// one rank. sync() starts with it; ZeRO-2 with gradient accumulation calls it for every other
  /// micro-batch (DeepSpeed reduces each micro-batch's buckets into the rank's shard).
  Refs reduce(int replica, int slot, int bucket, int mb, const Refs& ready, Bytes bytes, Bytes expert_bytes = 0,
              bool accumulating = true);

 private:
  Bytes gathered_bytes(Bytes gradient_bytes) const;  // ZeRO's weight all-gather of a bucket
  bool reduces(Bytes bytes) const;                 // a DP reduction of the bucket
  bool reduces_experts(Bytes expert_bytes) const;  // an expert-DP reduction of its expert part
  const Prepared& p_;
  Emitter& e_;
  // Flat, not trees: a 4,096-GPU GPT-3 plan makes a key per stage, bucket and micro-batch of every
  // candidate, and a tree's node per key - allocated, walked, freed - was a tenth of its time.
  template <class Key>
  using Memo = FlatMemo<Key, Ref>;
  Memo<std::tuple<int, int, int>> gather_;
  Memo<std::tuple<int, int, int, int>> expert_gather_;  // (slot, bucket, mb, replica % ep)
  // Reductions, keyed as above plus whether the step's last (sync) or an accumulating micro-batch's.
  Memo<std::tuple<int, int, int, bool>> reduce_;
  Memo<std::tuple<int, int, int, int, bool>> expert_reduce_;
};

/// SpecTrain's weight prediction W' = W - s * lr * v over `params` parameters: a memory-bound
/// axpy reading W and v and writing W' (fp32: 3 reads + 1 write of 4 bytes per parameter
/// counting the learning-rate-scaled staleness as a read), 2 flops per parameter.
TimeNs weight_prediction_time(const Prepared& p, int kind, std::int64_t params);

}  // namespace parasim::strategies::detail
