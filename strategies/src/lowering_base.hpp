// Internal: what the op- and stage-granularity lowerings share - the per-micro-batch work items
// of every chunk (chained in pipeline-schedule order), SpecTrain's weight prediction, the
// micro-batch barrier of non-pipelined branch/file placements and the async micro-batch markers.
#pragma once

#include <array>
#include <vector>

#include "emitter.hpp"
#include "parasim/strategies/lowering.hpp"
#include "parasim/strategies/pipeline_schedule.hpp"
#include "prepared_step.hpp"

namespace parasim::strategies::detail {

class LoweringBase {
 protected:
  LoweringBase(const Prepared& p, Emitter& e, LoweredStep& out);

  /// The compute tasks of (micro-batch, chunk, forward|backward), in the order they must run.
  Refs& item(int mb, int chunk, WorkKind kind) {
    return items_[static_cast<std::size_t>(mb)][static_cast<std::size_t>(chunk)][kind == WorkKind::Forward ? 0 : 1];
  }
  void reset_items();
  /// SpecTrain: the weight prediction of `chunk` before its forward of micro-batch `mb`.
  void predict_weights(int replica, int mb, int chunk);
  /// Chains every simulated device's compute tasks of replica r in its pipeline-schedule order
  /// (placement=layers); other placements rely on data dependencies alone.
  void chain_schedule(int replica);
  /// Async schedules: the end of micro-batch mb, once for all replicas.
  void mark_microbatch_done(int mb, const Refs& done);
  /// Whether gradients are reduced and weights updated after micro-batch mb's backward: every
  /// micro-batch for asynchronous schedules, once after the last one otherwise.
  bool final_microbatch(int mb) const { return p_.async || mb == p_.simulated_micro_batches - 1; }
  /// Whether micro-batch mb's backward of `chunk` is the one that completes the gradients (the
  /// last backward of the chunk in its device's schedule: micro-batch 0 for GPipe, K-1 for 1F1B).
  bool completes_gradients(int mb, int chunk) const {
    return p_.async || mb == last_backward_mb_[static_cast<std::size_t>(chunk)];
  }

  const Prepared& p_;
  Emitter& e_;
  LoweredStep& out_;
  GradientSync sync_;
  std::vector<std::int64_t> chunk_params_;

 private:
  std::vector<std::vector<std::array<Refs, 2>>> items_;
  std::vector<Ref> microbatch_marker_;
  std::vector<int> last_backward_mb_;  // by chunk
};

void lower_ops(const Prepared& p, Emitter& e, LoweredStep& out);
void lower_stages(const Prepared& p, Emitter& e, LoweredStep& out);

}  // namespace parasim::strategies::detail
