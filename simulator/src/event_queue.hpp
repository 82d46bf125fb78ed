// Private: the engine's event queue - ordered by (time, push order), so events at equal times
// pop in the order they were pushed and a run is reproducible bit for bit. It holds only what is
// in flight (running tasks and flows), not the whole graph, so it stays small and cache-resident.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "parasim/common/units.hpp"
#include "slot_pool.hpp"

namespace parasim::simulator {

enum class EventType : std::uint32_t { TaskEnd = 0, FlowLatencyDone = 1, FlowDone = 2 };

/// Events carry the low 30 bits of a flow's version; compare versions through this mask.
inline constexpr std::uint32_t kVersionMask = (1u << 30) - 1;

namespace detail {
/// std::llround without the libm call, for the event times the engine and the flow network divide
/// out (work left / rate): a non-negative eta below 2^52, where x - trunc(x) is exact; anything
/// else (NaN included) goes to llround itself.
inline TimeNs round_half_up(double x) {
  if (!(x >= 0 && x < 4503599627370496.0)) return std::llround(x);
  const auto whole = static_cast<TimeNs>(x);
  return whole + static_cast<TimeNs>(x - static_cast<double>(whole) >= 0.5);
}
}  // namespace detail

struct Event {
  TimeNs time;
  std::uint64_t seq;
  std::uint32_t id;   // task id or flow id
  std::uint32_t tag;  // EventType in bits 0-1, flow version above
  EventType type() const { return static_cast<EventType>(tag & 0x3u); }
  std::uint32_t version() const { return tag >> 2; }
};

// A sorted array while short, else a 4-ary min-heap keyed by (time, sequence number). The pop
// order is the same whatever the form or the heap's shape; these shortcuts use that freedom:
//  - Runs: events pushed one after another at the same time (the messages of a collective step,
//    their completions) can never have another event between them in that order, so they share
//    one entry and pop from it in push order: one queue operation per step, not per message.
//  - The sorted form (see kToHeap) is a fixed array in descending order: a pop takes the last
//    entry, a push shifts the later ones up. Its position in the array is an entry's push order
//    among equal times, so it needs no sequence number: a 16-byte entry moves in one copy, and
//    slot 0 holds a sentinel later than any event, which ends the shifting without a bound check
//    and makes "the previous push" and "the earliest" tests branch-free when nothing is queued.
//    Converting to the heap numbers the entries in pop order.
//  - The heap's pop() only vacates the root. The engine usually pushes the next task's end right after
//    handling an event, and that push fills the root and sifts down once (a replace-top) instead
//    of a pop's sift-down plus a push's sift-up.
//  - (time, seq) compares as one 128-bit number: branch-free, two instructions.
class EventQueue {
 public:
  void push(TimeNs time, std::uint32_t id, EventType type, std::uint32_t version = 0) {
    const std::uint32_t tag = static_cast<std::uint32_t>(type) | (version << 2);
    if (sorted_) [[likely]] {
      if (short_[last_].time == time) {  // joins the run of the previous push (never the sentinel's)
        append(short_[last_], id, tag);
        return;
      }
      if (n_ == kToHeap) [[unlikely]] {
        to_heap();
        push_heap(time, id, tag);
        return;
      }
      // Insertion from the earliest end: the entries before the new one move up one. Its push
      // order is after every queued one's, so an entry is before it exactly when its time is not
      // after the new time; the sentinel's time is after every event's.
      std::size_t i = ++n_;
      for (; short_[i - 1].time <= time; --i) short_[i] = short_[i - 1];
      short_[i] = {time, id, tag};
      last_ = i;
      return;
    }
    if (last_ != kNone && heap_[last_].time == time) {
      append(heap_[last_], id, tag);
      return;
    }
    push_heap(time, id, tag);
  }
  bool empty() const {
    return next_ == run_end_ && (sorted_ ? n_ == 0 : heap_.size() == static_cast<std::size_t>(hole_));
  }
  /// What next_time() returns when nothing is queued: later than any event.
  static constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();
  /// The time of the earliest event, or kNever when none is queued (one call for the engine's
  /// loop, which needs no separate empty()).
  TimeNs next_time() {
    if (next_ != run_end_) return run_time_;
    if (sorted_) [[likely]]
      return short_[n_].time;  // the sentinel's kNever when nothing is queued
    fill();
    return heap_.empty() ? kNever : heap_.front().time;
  }
  /// Removes and returns the earliest event (not empty()).
  Event pop() {
    if (next_ != run_end_) {
      last_ = sorted_ ? 0 : kNone;
      return member();
    }
    if (!sorted_ && heap_.size() <= kToSorted) to_sorted();
    Event e;
    if (sorted_) {
      last_ = 0;
      const Slot& s = short_[n_--];
      e = {s.time, 0, s.id, s.tag};
    } else {
      last_ = kNone;
      fill();
      hole_ = true;
      e = heap_.front();
    }
    if ((e.tag & 0x3u) != kRun) return e;
    run_ = e.id;
    run_time_ = e.time;
    next_ = 0;
    run_end_ = runs_[run_].size;
    return member();
  }
  /// Whether the earliest event left is at `t`, given that none is earlier.
  bool next_at(TimeNs t) const {
    if (next_ != run_end_) return true;        // the rest of a run shares its time
    if (sorted_) return short_[n_].time == t;  // with nothing queued, the sentinel's time is not t
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
  static constexpr std::uint32_t kRun = 3;  // tag of an entry standing for a run; id: its index
  static constexpr std::size_t kNone = ~std::size_t{0};
  // Few events are in flight (7 on average on the engine benchmark's mixed DAG), so the queue
  // starts as the sorted array. It becomes a heap once kToHeap entries would make the shifting
  // slow, and sorted again when a pop finds kToSorted or fewer left.
  static constexpr std::size_t kToHeap = 24;
  static constexpr std::size_t kToSorted = 8;
  struct Slot {  // an entry of the sorted form
    TimeNs time;
    std::uint32_t id, tag;
  };
  static constexpr Slot kSentinel{kNever, 0, 0};
  struct Member {
    std::uint32_t id, tag;
  };
  // A run's members: `size` of them in `items`, whose size is the capacity (kept when the run is
  // spent), so that an append is a compare and a store, without a library call.
  struct Run {
    std::vector<Member> items;
    std::uint32_t size = 0;
    void add(Member m) {
      if (size == items.size()) [[unlikely]]
        grow();
      items[size++] = m;
    }
    [[gnu::noinline]] void grow() { items.resize(items.empty() ? 16 : 2 * items.size()); }
  };

  // Only the entry of the latest push can grow, so a run's members are appended to its own list
  // (lists are recycled with their capacity: no allocation once the step shapes have been seen).
  // The entry is a run already from the third member on (a collective step's messages): that
  // append stays inline.
  template <class Entry>
  void append(Entry& e, std::uint32_t id, std::uint32_t tag) {
    if ((e.tag & 0x3u) != kRun) [[unlikely]] {
      start_run(e, id, tag);
      return;
    }
    runs_[e.id].add({id, tag});
  }
  // A single event becomes a run of it and the new one.
  template <class Entry>
  [[gnu::noinline]] void start_run(Entry& e, std::uint32_t id, std::uint32_t tag) {
    const std::uint32_t r = detail::take_slot(runs_, free_runs_);
    runs_[r].add({e.id, e.tag});
    runs_[r].add({id, tag});
    e.id = r;
    e.tag = kRun;
  }
  Event member() {
    Run& run = runs_[run_];
    const Member m = run.items[next_++];
    if (next_ == run_end_) {  // the run is spent
      run.size = 0;
      free_runs_.push_back(run_);
      next_ = run_end_ = 0;
    }
    return {run_time_, 0, m.id, m.tag};
  }

  __extension__ using Key = unsigned __int128;
  // (time, seq) as one 128-bit number (times are never negative): a two-instruction compare.
  static Key key(const Event& e) { return static_cast<Key>(static_cast<std::uint64_t>(e.time)) << 64 | e.seq; }
  static bool before(const Event& a, const Event& b) { return key(a) < key(b); }
  // The sorted entries, earliest first, numbered on from seq_: ascending order is a heap.
  [[gnu::noinline]] void to_heap() {
    heap_.clear();
    for (std::size_t i = n_; i > 0; --i) heap_.push_back({short_[i].time, seq_++, short_[i].id, short_[i].tag});
    n_ = 0;
    sorted_ = false;
    hole_ = false;
    last_ = kNone;
  }
  [[gnu::noinline]] void push_heap(TimeNs time, std::uint32_t id, std::uint32_t tag) {
    const Event e{time, seq_++, id, tag};
    if (hole_) {
      hole_ = false;
      last_ = place(0, e);
      return;
    }
    heap_.push_back(e);
    last_ = sift_up(heap_.size() - 1, e);
  }
  [[gnu::noinline]] void to_sorted() {
    fill();
    std::sort(heap_.begin(), heap_.end(), [](const Event& a, const Event& b) { return before(b, a); });
    n_ = heap_.size();
    for (std::size_t i = 0; i < n_; ++i) short_[i + 1] = {heap_[i].time, heap_[i].id, heap_[i].tag};
    heap_.clear();
    sorted_ = true;
    last_ = 0;
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

  // Sorted form: short_[1..n_] in descending (time, push order), short_[0] the sentinel.
  std::array<Slot, kToHeap + 1> short_{kSentinel};
  std::size_t n_ = 0;
  bool sorted_ = true;
  // Heap form:
  std::vector<Event> heap_;
  std::uint64_t seq_ = 0;
  bool hole_ = false;  // heap_[0] is vacant (popped, not yet refilled)
  // Where the previous push went, while nothing else happened since: in the sorted form 0 (the
  // sentinel) for none, in the heap form kNone.
  std::size_t last_ = 0;
  std::vector<Run> runs_;
  std::vector<std::uint32_t> free_runs_;
  std::uint32_t run_ = 0;                 // the run being popped
  std::uint32_t next_ = 0, run_end_ = 0;  // its members left: runs_[run_][next_, run_end_)
  TimeNs run_time_ = 0;
};

}  // namespace parasim::simulator
