// Private: the engine's event queue - a heap keyed by (time, sequence). The sequence
// number is the scheduling order, so events at equal times pop in the order they were pushed
// and a run is reproducible bit for bit. The heap holds only what is in flight (running
// tasks and flows), not the whole graph, so it stays small and cache-resident.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "parasim/common/units.hpp"

namespace parasim::simulator {

enum class EventType : std::uint32_t { TaskEnd = 0, FlowLatencyDone = 1, FlowDone = 2 };

/// Events carry the low 30 bits of a flow's version; compare versions through this mask.
inline constexpr std::uint32_t kVersionMask = (1u << 30) - 1;

struct Event {
  TimeNs time;
  std::uint64_t seq;
  std::uint32_t id;   // task id or flow id
  std::uint32_t tag;  // EventType in bits 0-1, flow version above
  EventType type() const { return static_cast<EventType>(tag & 0x3u); }
  std::uint32_t version() const { return tag >> 2; }
};

// A 4-ary min-heap: half the depth of a binary heap, and the four children of a node share a
// cache line pair, so sift-down costs fewer dependent loads.
class EventQueue {
 public:
  void push(TimeNs time, std::uint32_t id, EventType type, std::uint32_t version = 0) {
    const Event e{time, seq_++, id, static_cast<std::uint32_t>(type) | (version << 2)};
    std::size_t i = heap_.size();
    heap_.push_back(e);
    while (i > 0) {
      const std::size_t parent = (i - 1) / 4;
      if (!before(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }
  bool empty() const { return heap_.empty(); }
  const Event& top() const { return heap_.front(); }
  Event pop() {
    const Event top = heap_.front();
    const Event last = heap_.back();
    heap_.pop_back();
    const std::size_t n = heap_.size();
    if (n == 0) return top;
    std::size_t i = 0;
    for (;;) {
      const std::size_t first = 4 * i + 1;
      if (first >= n) break;
      std::size_t best = first;
      const std::size_t end = std::min(first + 4, n);
      for (std::size_t c = first + 1; c < end; ++c) best = before(heap_[c], heap_[best]) ? c : best;
      if (!before(heap_[best], last)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = last;
    return top;
  }
  std::size_t size() const { return heap_.size(); }

 private:
  // Branch-free (time, seq) order: event times are random, so a branchy compare mispredicts
  // about half the time; setcc/and/or does not.
  static bool before(const Event& a, const Event& b) {
    return static_cast<bool>(static_cast<int>(a.time < b.time) |
                             (static_cast<int>(a.time == b.time) & static_cast<int>(a.seq < b.seq)));
  }
  std::vector<Event> heap_;
  std::uint64_t seq_ = 0;
};

}  // namespace parasim::simulator
