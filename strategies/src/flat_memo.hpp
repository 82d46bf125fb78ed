// Internal: a memo from small keys (tuples of integers) to values, looked up far more often than
// it is iterated - never, here. Open addressing with linear probing over a power-of-two table:
// one hash and, mostly, one probe a lookup, no node to allocate per key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

namespace parasim::strategies::detail {

template <class Key, class Value>
class FlatMemo {
 public:
  using Entry = std::pair<Key, Value>;
  /// The entry of `key` (its value default-constructed when new) and whether it is new. The
  /// pointer is valid until the next try_emplace (which may move every entry).
  std::pair<Entry*, bool> try_emplace(const Key& key) {
    if (4 * (size_ + 1) > 3 * entries_.size()) grow();  // at most three quarters full
    const std::size_t mask = entries_.size() - 1;
    for (std::size_t i = hash(key) & mask;; i = (i + 1) & mask) {
      if (!used_[i]) {
        used_[i] = 1;
        entries_[i] = {key, Value{}};
        ++size_;
        return {&entries_[i], true};
      }
      if (entries_[i].first == key) return {&entries_[i], false};
    }
  }
  std::size_t size() const { return size_; }

 private:
  // Each integer folded in and multiplied through, then the high bits folded down (the mask keeps
  // the low ones).
  static std::size_t hash(const Key& k) {
    std::uint64_t h = 0x9E3779B97F4A7C15ull;
    std::apply([&h](const auto&... v) { ((h = (h ^ static_cast<std::uint64_t>(v)) * 0xFF51AFD7ED558CCDull), ...); }, k);
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
  [[gnu::noinline]] void grow() {
    std::vector<Entry> old = std::move(entries_);
    std::vector<std::uint8_t> old_used = std::move(used_);
    entries_.assign(old.empty() ? 64 : 2 * old.size(), Entry{});
    used_.assign(entries_.size(), 0);
    size_ = 0;
    for (std::size_t i = 0; i < old.size(); ++i)
      if (old_used[i]) try_emplace(old[i].first).first->second = std::move(old[i].second);
  }
  std::vector<Entry> entries_;
  std::vector<std::uint8_t> used_;  // whether entries_[i] holds a key
  std::size_t size_ = 0;
};

}  // namespace parasim::strategies::detail
