#include "parasim/strategies/pipeline_schedule.hpp"

#include <algorithm>

#include "parasim/common/error.hpp"

namespace parasim::strategies {

namespace {

std::vector<WorkItem> no_pipelining(int stage, int k) {
  std::vector<WorkItem> out;
  for (int j = 0; j < k; ++j) {
    out.push_back({j, stage, WorkKind::Forward});
    out.push_back({j, stage, WorkKind::Backward});
  }
  return out;
}

std::vector<WorkItem> gpipe(int stage, int k) {
  std::vector<WorkItem> out;
  for (int j = 0; j < k; ++j) out.push_back({j, stage, WorkKind::Forward});
  for (int j = k - 1; j >= 0; --j) out.push_back({j, stage, WorkKind::Backward});
  return out;
}

std::vector<WorkItem> one_f_one_b(int stages, int stage, int k) {
  std::vector<WorkItem> out;
  const int warmup = std::min(stages - stage - 1, k);
  for (int j = 0; j < warmup; ++j) out.push_back({j, stage, WorkKind::Forward});
  for (int i = 0; i < k - warmup; ++i) {
    out.push_back({warmup + i, stage, WorkKind::Forward});
    out.push_back({i, stage, WorkKind::Backward});
  }
  for (int j = k - warmup; j < k; ++j) out.push_back({j, stage, WorkKind::Backward});
  return out;
}

// Megatron-LM schedules.py, forward_backward_pipelining_with_interleaving.
std::vector<WorkItem> interleaved(int m, int v, int stage, int k) {
  if (k % m != 0)
    throw InputError("schedule=interleaved needs micro (" + std::to_string(k) + ") to be a multiple of mp (" +
                     std::to_string(m) + "), as in Megatron-LM");
  const int total = k * v;
  const int warmup = std::min((m - stage - 1) * 2 + (v - 1) * m, total);
  auto item = [&](int virtual_mb, WorkKind kind) {
    const int in_group = virtual_mb % (m * v);
    int chunk = in_group / m;
    if (kind == WorkKind::Backward) chunk = v - 1 - chunk;
    const int mb = (virtual_mb / (m * v)) * m + virtual_mb % m;
    return WorkItem{mb, chunk * m + stage, kind};
  };
  std::vector<WorkItem> out;
  for (int i = 0; i < warmup; ++i) out.push_back(item(i, WorkKind::Forward));
  for (int i = 0; i < total - warmup; ++i) {
    out.push_back(item(warmup + i, WorkKind::Forward));
    out.push_back(item(i, WorkKind::Backward));
  }
  for (int i = total - warmup; i < total; ++i) out.push_back(item(i, WorkKind::Backward));
  return out;
}

}  // namespace

std::vector<WorkItem> pipeline_order(Schedule schedule, int stages, int virtual_stages, int k, int stage) {
  switch (schedule) {
    case Schedule::None: return no_pipelining(stage, k);
    case Schedule::GPipe: return gpipe(stage, k);
    case Schedule::Interleaved: return interleaved(stages, virtual_stages, stage, k);
    case Schedule::OneFOneB:
    case Schedule::PipeDream:
    case Schedule::SpecTrain: return one_f_one_b(stages, stage, k);
  }
  return {};
}

std::string to_string(const WorkItem& w) {
  return std::string(w.kind == WorkKind::Forward ? "F" : "B") + std::to_string(w.microbatch) + ".c" +
         std::to_string(w.chunk);
}

}  // namespace parasim::strategies
