// Private: the engine's event queue - a heap keyed by (time, sequence). The sequence
// number is the scheduling order, so events at equal times pop in the order they were pushed
// and a run is reproducible bit for bit. The heap holds only what is in flight (running
// tasks and flows), not the whole graph, so it stays small and cache-resident.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "parasim/common/units.hpp"
#include "slot_pool.hpp"

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

// A sorted array while short, else a 4-ary min-heap: half the depth of a binary heap, and the four
// children of a node share a cache line pair, so sift-down costs fewer dependent loads. (time, seq)
// is a total order, so the pop order is the same whatever the form or the heap's shape; these
// shortcuts use that freedom:
//  - Runs: events pushed one after another at the same time (the messages of a collective step,
//    their completions) can never have another event between them in that order, so they share
//    one heap entry and pop from it in push order: one heap operation per step, not per message.
//  - The sorted form (see kToHeap): a pop is a pop_back, a push shifts the later entries.
//  - The heap's pop() only vacates the root. The engine usually pushes the next task's end right after
//    handling an event, and that push fills the root and sifts down once (a replace-top) instead
//    of a pop's sift-down plus a push's sift-up.
//  - (time, seq) compares as one 128-bit number: branch-free, two instructions.
class EventQueue {
 public:
  void push(TimeNs time, std::uint32_t id, EventType type, std::uint32_t version = 0) {
    const std::uint32_t tag = static_cast<std::uint32_t>(type) | (version << 2);
    if (last_ != kNone && heap_[last_].time == time) {  // joins the run of the previous push
      append(id, tag);
      return;
    }
    const Event e{time, seq_++, id, tag};
    std::size_t i = heap_.size();
    if (!sorted_ || i >= kToHeap) {
      push_heap(e);
      return;
    }
    // Insertion from the earliest end: the entries before e move up one. e's sequence number is
    // above every queued one's, so an entry is before e exactly when its time is not after e's.
    heap_.emplace_back();
    for (; i > 0 && heap_[i - 1].time <= time; --i) heap_[i] = heap_[i - 1];
    heap_[i] = e;
    last_ = i;
  }
  bool empty() const { return next_ == run_end_ && heap_.size() == static_cast<std::size_t>(hole_); }
  /// The time of the earliest event (not empty()).
  TimeNs top_time() {
    if (next_ != run_end_) return run_time_;
    if (sorted_) return heap_.back().time;
    fill();
    return heap_.front().time;
  }
  /// Removes and returns the earliest event (not empty()).
  Event pop() {
    last_ = kNone;
    if (next_ != run_end_) return member();
    if (!sorted_ && heap_.size() <= kToSorted) to_sorted();
    Event e;
    if (sorted_) {
      e = heap_.back();
      heap_.pop_back();
    } else {
      fill();
      hole_ = true;
      e = heap_.front();
    }
    if ((e.tag & 0x3u) != kRun) return e;
    run_ = e.id;
    run_time_ = e.time;
    next_ = 0;
    run_end_ = static_cast<std::uint32_t>(runs_[run_].size());
    return member();
  }
  /// Whether the earliest event left is at `t`, given that none is earlier.
  bool next_at(TimeNs t) const {
    if (next_ != run_end_) return true;  // the rest of a run shares its time
    if (sorted_) return !heap_.empty() && heap_.back().time == t;
    if (!hole_) return !heap_.empty() && heap_.front().time == t;
    // The root is vacant: the earliest is one of its children (all four compared, no branches).
    const std::size_t n = heap_.size();
    if (n >= 5)
      return static_cast<bool>(static_cast<int>(heap_[1].time == t) | static_cast<int>(heap_[2].time == t) |
                               static_cast<int>(heap_[3].time == t) | static_cast<int>(heap_[4].time == t));
    bool any = false;
    for (std::size_t c = 1; c < n; ++c)
      any = static_cast<bool>(static_cast<int>(any) | static_cast<int>(heap_[c].time == t));
    return any;
  }

 private:
  static constexpr std::uint32_t kRun = 3;  // tag of a heap entry standing for a run; id: its index
  static constexpr std::size_t kNone = ~std::size_t{0};
  // Few events are in flight (7 on average on the engine benchmark's mixed DAG), so the queue
  // starts as an array sorted by descending (time, seq): the earliest pops from the back, and a
  // push shifts the later entries up. It becomes a heap once kToHeap entries would make that
  // shifting slow, and sorted again when a pop finds kToSorted or fewer left.
  static constexpr std::size_t kToHeap = 24;
  static constexpr std::size_t kToSorted = 8;
  struct Member {
    std::uint32_t id, tag;
  };

  // Only the entry of the latest push can grow, so a run's members are appended to its own list
  // (lists are recycled with their capacity: no allocation once the step shapes have been seen).
  [[gnu::noinline]] void append(std::uint32_t id, std::uint32_t tag) {
    Event& e = heap_[last_];
    if ((e.tag & 0x3u) != kRun) {  // a single event becomes a run
      const std::uint32_t r = detail::take_slot(runs_, free_runs_);
      runs_[r].push_back({e.id, e.tag});
      e.id = r;
      e.tag = kRun;
    }
    runs_[e.id].push_back({id, tag});
    ++seq_;
  }
  Event member() {
    std::vector<Member>& run = runs_[run_];
    const Member m = run[next_++];
    if (next_ == run_end_) {  // the run is spent
      run.clear();
      free_runs_.push_back(run_);
      next_ = run_end_ = 0;
    }
    return {run_time_, 0, m.id, m.tag};
  }

  __extension__ using Key = unsigned __int128;
  // (time, seq) as one 128-bit number (times are never negative): a two-instruction compare.
  static Key key(const Event& e) { return static_cast<Key>(static_cast<std::uint64_t>(e.time)) << 64 | e.seq; }
  static bool before(const Event& a, const Event& b) { return key(a) < key(b); }
  [[gnu::noinline]] void push_heap(const Event& e) {
    if (sorted_) {  // grown past what insertion does cheaply: descending order reversed is a heap
      std::reverse(heap_.begin(), heap_.end());
      sorted_ = false;
    }
    if (hole_) {
      hole_ = false;
      last_ = place(0, e);
      return;
    }
    heap_.push_back(e);
    last_ = sift_up(heap_.size() - 1, e);
  }
  void to_sorted() {
    fill();
    std::sort(heap_.begin(), heap_.end(), [](const Event& a, const Event& b) { return before(b, a); });
    sorted_ = true;
  }
  // Moves the last event into the vacant root.
  void fill() {
    if (!hole_) return;
    hole_ = false;
    last_ = kNone;  // entries move
    const Event last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) place(0, last);
  }
  // Puts `e` into the subtree whose root `i` is vacant; returns where it went.
  std::size_t place(std::size_t i, const Event& e) {
    const std::size_t n = heap_.size();
    for (;;) {
      const std::size_t first = 4 * i + 1;
      if (first >= n) break;
      std::size_t best = first;
      const std::size_t end = std::min(first + 4, n);
      for (std::size_t c = first + 1; c < end; ++c) best = before(heap_[c], heap_[best]) ? c : best;
      if (!before(heap_[best], e)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = e;
    return i;
  }
  std::size_t sift_up(std::size_t i, const Event& e) {
    while (i > 0) {
      const std::size_t parent = (i - 1) / 4;
      if (!before(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
    return i;
  }

  std::vector<Event> heap_;
  std::uint64_t seq_ = 0;
  bool sorted_ = true;        // heap_ is sorted by descending (time, seq), not a heap
  bool hole_ = false;         // heap_[0] is vacant (popped, not yet refilled); never when sorted_
  std::size_t last_ = kNone;  // where the previous push went, while nothing else happened since
  std::vector<std::vector<Member>> runs_;
  std::vector<std::uint32_t> free_runs_;
  std::uint32_t run_ = 0;                 // the run being popped
  std::uint32_t next_ = 0, run_end_ = 0;  // its members left: runs_[run_][next_, run_end_)
  TimeNs run_time_ = 0;
};

}  // namespace parasim::simulator
