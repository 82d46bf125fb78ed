// TaskGraph enums, the interned string table and the graph's own memory accounting.
#include "parasim/simulator/task_graph.hpp"

#include <array>
#include <functional>

#include "parasim/common/enum_names.hpp"

namespace parasim::simulator {

namespace {

constexpr std::array<std::string_view, 4> kKinds{"compute", "transfer", "collective", "marker"};
constexpr std::array<std::string_view, 7> kAlgorithms{
    "auto", "ring", "tree", "hierarchical", "nvls", "hierarchical_tree", "pat"};
constexpr std::array<std::string_view, 2> kMemoryCategories{"activations", "other"};

std::uint64_t hash_string(std::string_view s) { return std::hash<std::string_view>{}(s); }

}  // namespace

std::string_view to_string(TaskKind k) { return enum_name(k, kKinds); }
std::string_view to_string(CollectiveAlgorithm a) { return enum_name(a, kAlgorithms); }
std::string_view to_string(MemoryCategory c) { return enum_name(c, kMemoryCategories); }
std::optional<TaskKind> parse_task_kind(std::string_view s) { return parse_enum_name<TaskKind>(s, kKinds); }
std::optional<CollectiveAlgorithm> parse_collective_algorithm(std::string_view s) {
  return parse_enum_name<CollectiveAlgorithm>(s, kAlgorithms);
}
std::optional<MemoryCategory> parse_memory_category(std::string_view s) {
  return parse_enum_name<MemoryCategory>(s, kMemoryCategories);
}

// ------------------------------------------------------------------------------ StringTable

StringTable::StringTable() : offsets_{0}, slots_(16, 0) { intern(""); }

std::uint32_t StringTable::intern(std::string_view s) {
  Recent& recent = recent_[(reinterpret_cast<std::uintptr_t>(s.data()) >> 4) % recent_.size()];
  if (recent.data == s.data() && recent.size == s.size() && get(recent.id) == s) return recent.id;
  const std::uint32_t id = intern_hashed(s);
  recent = {s.data(), static_cast<std::uint32_t>(s.size()), id};
  return id;
}

std::uint32_t StringTable::intern_hashed(std::string_view s) {
  if (slots_.empty()) grow();  // the index was dropped: rebuild it
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = hash_string(s) & mask;; i = (i + 1) & mask) {
    const std::uint32_t slot = slots_[i];
    if (slot == 0) {
      const auto id = static_cast<std::uint32_t>(size());
      chars_.insert(chars_.end(), s.begin(), s.end());
      offsets_.push_back(static_cast<std::uint32_t>(chars_.size()));
      slots_[i] = id + 1;
      if (2 * size() > slots_.size()) grow();  // keep the load factor <= 1/2
      return id;
    }
    if (get(slot - 1) == s) return slot - 1;
  }
}

void StringTable::grow() {
  std::vector<std::uint32_t> bigger(std::max<std::size_t>(16, slots_.size() * 2), 0);
  const std::size_t mask = bigger.size() - 1;
  for (std::uint32_t id = 0; id < size(); ++id) {
    std::size_t i = hash_string(get(id)) & mask;
    while (bigger[i] != 0) i = (i + 1) & mask;
    bigger[i] = id + 1;
  }
  slots_ = std::move(bigger);
}

void StringTable::drop_index() {
  slots_.clear();
  slots_.shrink_to_fit();
  chars_.shrink_to_fit();
  offsets_.shrink_to_fit();
}

std::size_t StringTable::memory_bytes() const {
  return chars_.capacity() + offsets_.capacity() * sizeof(std::uint32_t) + slots_.capacity() * sizeof(std::uint32_t) +
         sizeof(recent_);
}

// ------------------------------------------------------------------------------ TaskGraph

void TaskGraph::dependency_counts(std::int32_t* out) const {
  const std::uint32_t* offsets = dep_offsets_.data();
  const std::size_t n = size();
  for (std::size_t t = 0; t < n; ++t) out[t] = static_cast<std::int32_t>(offsets[t + 1] - offsets[t]);
}

std::size_t TaskGraph::memory_bytes() const {
  auto v = [](const auto& vec) { return vec.capacity() * sizeof(vec[0]); };
  return v(meta_) + v(device_) + v(peer_) + v(model_op_) + v(microbatch_) + v(name_) + v(amount_) + v(alloc_) +
         v(free_) + v(dep_offsets_) + v(deps_) + v(succ_offsets_) + v(succs_) + v(group_offsets_) + v(group_devices_) +
         v(static_memory_) + strings_.memory_bytes();
}

}  // namespace parasim::simulator
