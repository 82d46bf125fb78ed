// Private: the engine's event queue - ordered by (time, push order), so events at equal times
// pop in the order they were pushed and a run is reproducible bit for bit. It holds only what is
// in flight (running tasks and flows), not the whole graph, so it stays small and cache-resident.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "parasim/common/assert.hpp"
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
  std::uint32_t id;   // task id or flow id
  std::uint32_t tag;  // EventType in bits 0-1, flow version above
  EventType type() const { return static_cast<EventType>(tag & 0x3u); }
  std::uint32_t version() const { return tag >> 2; }
};

// A sorted array while short, else a radix heap. The pop order is (time, push order) whatever the
// form; these shortcuts use that freedom:
//  - Runs: events pushed one after another at the same time (the messages of a collective step,
//    their completions) can never have another event between them in that order, so they share
//    one entry and pop from it in push order: one queue operation per step, not per message.
//  - The sorted form (see kToRadix) is a fixed array in descending order: a pop takes the last
//    entry, a push shifts the later ones up. Its position in the array is an entry's push order
//    among equal times, so it needs no sequence number: a 16-byte entry moves in one copy, and
//    slot 0 holds a sentinel later than any event, which ends the shifting without a bound check
//    and makes "the previous push" and "the earliest" tests branch-free when nothing is queued.
//  - The radix form relies on what a discrete-event loop guarantees: nothing is pushed earlier
//    than the last pop (base_). An entry sits in the bucket of the highest bit in which its time
//    differs from base_ (bucket 0: equal), so a push is an append, and the buckets hold ascending
//    ranges of times. A pop takes bucket 0's front; when it is empty, the lowest non-empty bucket's
//    earliest time becomes base_ and its entries move down, each to a lower bucket (Ahuja et al.
//    1990). Appends and moves keep every bucket in push order, and entries of equal times always
//    share a bucket, so equal times pop in push order without sequence numbers. Tens to thousands
//    of events (a pipeline's running tasks) cost a few moves each instead of a heap's sift-down
//    over random keys.
class EventQueue {
 public:
  /// `time` is never before the last pop's (what a discrete-event loop does: the radix form needs it).
  void push(TimeNs time, std::uint32_t id, EventType type, std::uint32_t version = 0) {
    PARASIM_ASSERT(time >= base_);
    const std::uint32_t tag = static_cast<std::uint32_t>(type) | (version << 2);
    if (sorted_) [[likely]] {
      if (short_[last_].time == time) {  // joins the run of the previous push (never the sentinel's)
        append(short_[last_], id, tag);
        return;
      }
      if (n_ == kToRadix) [[unlikely]] {
        push_to_radix(time, id, tag);
        return;
      }
      // Insertion from the earliest end: the entries before the new one move up one. Its push
      // order is after every queued one's, so an entry is before it exactly when its time is not
      // after the new time; the sentinel's time is after every event's.
      Slot* at = short_.data() + ++n_;  // a pointer, not an index: two instructions fewer a step
      for (; at[-1].time <= time; --at) at[0] = at[-1];
      *at = {time, id, tag};
      last_ = static_cast<std::size_t>(at - short_.data());
      return;
    }
    push_radix(time, id, tag);
  }
  bool empty() const { return next_ == run_end_ && (sorted_ ? n_ == 0 : count_ == 0); }
  /// What next_time() returns when nothing is queued: later than any event.
  static constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();
  /// The time of the earliest event, or kNever when none is queued (one call for the engine's
  /// loop, which needs no separate empty()).
  TimeNs next_time() {
    if (next_ != run_end_) return run_time_;
    if (sorted_) [[likely]]
      return short_[n_].time;  // the sentinel's kNever when nothing is queued
    return earliest_radix();
  }
  /// Removes and returns the earliest event (not empty()).
  Event pop() {
    if (next_ != run_end_) {
      last_ = sorted_ ? 0 : kNone;
      return member();
    }
    if (!sorted_ && count_ <= kToSorted) to_sorted();
    Event e;
    if (sorted_) {
      last_ = 0;
      const Slot& s = short_[n_--];
      e = {s.time, s.id, s.tag};
      base_ = s.time;
    } else {
      e = pop_radix();
    }
    if ((e.tag & 0x3u) != kRun) return e;
    run_ = e.id;
    run_time_ = e.time;
    next_ = 0;
    run_end_ = runs_[run_].size;
    return member();
  }
  /// Whether the earliest event left is at `t`, given that none is earlier.
  bool next_at(TimeNs t) {
    if (next_ != run_end_) return true;        // the rest of a run shares its time
    if (sorted_) return short_[n_].time == t;  // with nothing queued, the sentinel's time is not t
    if (head_ < buckets_[0].size()) return base_ == t;
    // Every entry is later than base_ (the last pop's time, which the engine asks about).
    return t != base_ && earliest_radix() == t;
  }

 private:
  static constexpr std::uint32_t kRun = 3;  // tag of an entry standing for a run; id: its index
  static constexpr std::size_t kNone = ~std::size_t{0};
  // Few events are in flight (7 on average on the engine benchmark's mixed DAG), so the queue
  // starts as the sorted array. It becomes a radix heap once kToRadix entries would make the
  // shifting slow, and sorted again when a pop finds kToSorted or fewer left.
  static constexpr std::size_t kToRadix = 24;
  static constexpr std::size_t kToSorted = 8;
  struct Slot {  // an entry of either form
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
      if (size == items.size()) [[unlikely]] {
        grow_and_add(m);
        return;
      }
      items[size++] = m;
    }
    // Out of line and last, so that the callers' common path keeps nothing across a call.
    [[gnu::noinline]] void grow_and_add(Member m) {
      items.resize(items.empty() ? 16 : 2 * items.size());
      items[size++] = m;
    }
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
    return {run_time_, m.id, m.tag};
  }

  // ---- radix form
  static constexpr std::array<TimeNs, 64> filled_with_never() {
    std::array<TimeNs, 64> a{};
    a.fill(kNever);
    return a;
  }
  // The bucket of time t: 0 when t == base_, else one more than the highest bit in which they
  // differ (times are never negative: at most 63).
  std::size_t bucket_of(TimeNs t) const {
    return static_cast<std::size_t>(std::bit_width(static_cast<std::uint64_t>(t ^ base_)));
  }
  void put(const Slot& s) {
    const std::size_t b = bucket_of(s.time);
    buckets_[b].push_back(s);
    occupied_ |= std::uint64_t{1} << b;
    bucket_min_[b] = std::min(bucket_min_[b], s.time);
  }
  // The sorted array is full: it becomes the radix form, then takes the push (out of line and
  // last, so that push() keeps nothing across a call).
  [[gnu::noinline]] void push_to_radix(TimeNs time, std::uint32_t id, std::uint32_t tag) {
    to_radix();
    push_radix(time, id, tag);
  }
  // The sorted entries, earliest first, into the buckets (base_ is the last pop's time).
  [[gnu::noinline]] void to_radix() {
    for (std::size_t i = n_; i > 0; --i) put(short_[i]);
    count_ = n_;
    n_ = 0;
    sorted_ = false;
    last_ = kNone;
  }
  [[gnu::noinline]] void push_radix(TimeNs time, std::uint32_t id, std::uint32_t tag) {
    if (last_ != kNone) {
      Slot& prev = buckets_[last_ >> 32][last_ & 0xFFFF'FFFFu];
      if (prev.time == time) {  // joins the run of the previous push
        append(prev, id, tag);
        return;
      }
    }
    const std::size_t b = bucket_of(time);
    last_ = b << 32 | buckets_[b].size();
    put({time, id, tag});
    ++count_;
  }
  // The earliest time queued (kNever for none), from the lowest occupied bucket's minimum. Only a
  // pop moves base_ there: an event may still be pushed at the current base_ until then.
  TimeNs earliest_radix() const {
    if (head_ < buckets_[0].size()) return base_;
    const std::uint64_t higher = occupied_ & ~std::uint64_t{1};
    return higher == 0 ? kNever : bucket_min_[static_cast<std::size_t>(std::countr_zero(higher))];
  }
  // Before a pop: makes bucket 0 hold the earliest entries (there is one): the lowest occupied
  // bucket's earliest time becomes base_ and its entries move down, in their order.
  void fill() {
    if (head_ < buckets_[0].size()) return;
    const auto b = static_cast<std::size_t>(std::countr_zero(occupied_ & ~std::uint64_t{1}));
    std::vector<Slot>& from = buckets_[b];
    base_ = bucket_min_[b];
    buckets_[0].clear();
    head_ = 0;
    occupied_ &= ~(std::uint64_t{1} | std::uint64_t{1} << b);
    bucket_min_[b] = bucket_min_[0] = kNever;
    for (const Slot& s : from) put(s);  // each to a bucket below b
    from.clear();
    last_ = kNone;  // entries moved
  }
  Event pop_radix() {
    fill();
    const Slot& s = buckets_[0][head_++];
    const Event e{s.time, s.id, s.tag};
    --count_;
    last_ = kNone;
    return e;
  }
  // Back to the sorted array: bucket 0 from its front, then each higher bucket ordered by time
  // (stable: equal times keep their push order), earliest last in short_.
  [[gnu::noinline]] void to_sorted() {
    std::size_t k = count_;
    auto take = [&](const Slot& s) { short_[k--] = s; };
    for (std::size_t i = head_; i < buckets_[0].size(); ++i) take(buckets_[0][i]);
    for (std::size_t b = 1; b < buckets_.size(); ++b) {
      std::vector<Slot>& bucket = buckets_[b];
      std::stable_sort(bucket.begin(), bucket.end(), [](const Slot& x, const Slot& y) { return x.time < y.time; });
      for (const Slot& s : bucket) take(s);
      bucket.clear();
    }
    buckets_[0].clear();
    head_ = 0;
    occupied_ = 0;
    bucket_min_.fill(kNever);
    n_ = count_;
    count_ = 0;
    sorted_ = true;
    last_ = 0;
  }

  // Sorted form: short_[1..n_] in descending (time, push order), short_[0] the sentinel.
  std::array<Slot, kToRadix + 1> short_{kSentinel};
  std::size_t n_ = 0;
  bool sorted_ = true;
  // Radix form:
  std::array<std::vector<Slot>, 64> buckets_;
  std::size_t head_ = 0;                                     // bucket 0's entries before this index were popped
  std::uint64_t occupied_ = 0;                               // bit b: bucket b holds entries (bucket 0: see head_)
  std::array<TimeNs, 64> bucket_min_ = filled_with_never();  // the earliest time in each bucket
  std::size_t count_ = 0;
  TimeNs base_ = 0;  // the last popped time: no event is queued or pushed before it
  // Where the previous push went, while nothing else happened since: in the sorted form 0 (the
  // sentinel) for none; in the radix form kNone, or its bucket << 32 | index.
  std::size_t last_ = 0;
  std::vector<Run> runs_;
  std::vector<std::uint32_t> free_runs_;
  std::uint32_t run_ = 0;                 // the run being popped
  std::uint32_t next_ = 0, run_end_ = 0;  // its members left: runs_[run_][next_, run_end_)
  TimeNs run_time_ = 0;
};

}  // namespace parasim::simulator
