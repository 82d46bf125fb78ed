// Recycled slots of a vector (the engine's collective runs, the event queue's same-time runs): a
// released index keeps its object, and with it any capacity, for the next taker.
#pragma once

#include <cstdint>
#include <vector>

namespace parasim::simulator::detail {

/// A free slot of `pool`: the last index released into `free`, else a new element at the end.
template <class T>
std::uint32_t take_slot(std::vector<T>& pool, std::vector<std::uint32_t>& free) {
  if (!free.empty()) {
    const std::uint32_t r = free.back();
    free.pop_back();
    return r;
  }
  pool.emplace_back();
  return static_cast<std::uint32_t>(pool.size() - 1);
}

}  // namespace parasim::simulator::detail
