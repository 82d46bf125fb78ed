// Private: the engine's event queue - a binary heap keyed by (time, sequence). The sequence
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

struct Event {
  TimeNs time;
  std::uint64_t seq;
  std::uint32_t id;   // task id or flow id
  std::uint32_t tag;  // EventType in bits 0-1, flow version above
  EventType type() const { return static_cast<EventType>(tag & 0x3u); }
  std::uint32_t version() const { return tag >> 2; }
};

class EventQueue {
 public:
  void push(TimeNs time, std::uint32_t id, EventType type, std::uint32_t version = 0) {
    heap_.push_back({time, seq_++, id, static_cast<std::uint32_t>(type) | (version << 2)});
    std::push_heap(heap_.begin(), heap_.end(), Later{});
  }
  bool empty() const { return heap_.empty(); }
  const Event& top() const { return heap_.front(); }
  Event pop() {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    const Event e = heap_.back();
    heap_.pop_back();
    return e;
  }
  std::size_t size() const { return heap_.size(); }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const { return a.time != b.time ? a.time > b.time : a.seq > b.seq; }
  };
  std::vector<Event> heap_;
  std::uint64_t seq_ = 0;
};

}  // namespace parasim::simulator
