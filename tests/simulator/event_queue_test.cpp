// The engine's private event queue (simulator/src/event_queue.hpp) against a sorted reference:
// whatever its shortcuts (radix buckets, runs of same-time pushes sharing an entry), events
// must pop in (time, push order), which is what makes a run reproducible to the nanosecond.
#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "event_queue.hpp"

namespace parasim::simulator {
namespace {

struct Ref {
  TimeNs time;
  std::uint64_t seq;
  std::uint32_t id;
  std::uint32_t tag;
};

void insert_sorted(std::vector<Ref>& ref, const Ref& r) {
  const auto before = [](const Ref& a, const Ref& b) { return std::tie(a.time, a.seq) < std::tie(b.time, b.seq); };
  ref.insert(std::upper_bound(ref.begin(), ref.end(), r, before), r);
}

// Pushes and pops in random interleavings with few distinct times (many ties, many runs),
// checking every pop and next_at against the reference order. A burst of pushes is `push_in_8`
// in 8 of the steps: 4 grows the queue to thousands, 2 keeps it at tens.
void check_against_reference(std::uint32_t seed, int distinct_times, unsigned push_in_8 = 4) {
  std::mt19937 rng(seed);
  EventQueue q;
  std::vector<Ref> ref;  // kept sorted by (time, seq)
  std::uint64_t seq = 0;
  TimeNs now = 0;
  std::uint32_t next_id = 0;
  for (int step = 0; step < 20'000; ++step) {
    const unsigned op = rng() % 8;
    if (op < push_in_8 || ref.empty()) {  // a burst of pushes, often at one time (a collective step)
      const int burst = 1 + static_cast<int>(rng() % 5);
      const TimeNs t = now + static_cast<TimeNs>(rng() % static_cast<unsigned>(distinct_times));
      for (int k = 0; k < burst; ++k) {
        const TimeNs tk = rng() % 3 == 0 ? now + static_cast<TimeNs>(rng() % static_cast<unsigned>(distinct_times)) : t;
        const auto type = static_cast<EventType>(rng() % 3);
        const std::uint32_t version = rng() % 1000;
        q.push(tk, next_id, type, version);
        insert_sorted(ref, {tk, seq++, next_id++, static_cast<std::uint32_t>(type) | (version << 2)});
      }
    } else {  // pop, as the engine does: the earliest time, then everything at that time
      ASSERT_FALSE(q.empty());
      ASSERT_EQ(q.next_time(), ref.front().time);
      now = ref.front().time;
      do {
        const Event e = q.pop();
        ASSERT_EQ(e.time, ref.front().time);
        ASSERT_EQ(e.id, ref.front().id);
        ASSERT_EQ(e.tag, ref.front().tag);
        ref.erase(ref.begin());
        if (rng() % 4 == 0) {  // handling an event may push more at the same instant
          q.push(now, next_id, EventType::TaskEnd);
          insert_sorted(ref, {now, seq++, next_id++, 0});
        }
        ASSERT_EQ(q.next_at(now), !ref.empty() && ref.front().time == now);
      } while (q.next_at(now));
    }
    ASSERT_EQ(q.empty(), ref.empty());
    if (step % 2 == 0) {
      ASSERT_EQ(q.next_time(), ref.empty() ? EventQueue::kNever : ref.front().time);
    }
  }
}

TEST(EventQueue, PopsInTimeThenPushOrderWithManyTies) {
  check_against_reference(1, 3);
  check_against_reference(2, 1);  // every push at the current time or one later
}

TEST(EventQueue, PopsInTimeThenPushOrderWithFewTies) { check_against_reference(3, 1'000'000); }

// A short queue is a sorted array and a long one a radix heap: these two grow past 24 events and
// shrink to 8 or fewer 15 and 27 times (the two above, 135 and 44 times).
TEST(EventQueue, PopsInOrderAcrossTheSortedAndRadixForms) {
  check_against_reference(4, 1'000'000, 2);
  check_against_reference(7, 100, 2);
}

TEST(EventQueue, RunOfSameTimePushesPopsInPushOrder) {
  EventQueue q;
  q.push(50, 9, EventType::TaskEnd);
  for (std::uint32_t i = 0; i < 5; ++i) q.push(100, i, EventType::FlowDone, i + 1);  // one run
  q.push(100, 7, EventType::TaskEnd);  // joins the run too: pushed right after it, same time
  q.push(20, 8, EventType::FlowLatencyDone);
  std::vector<std::uint32_t> ids;
  while (!q.empty()) ids.push_back(q.pop().id);
  EXPECT_EQ(ids, (std::vector<std::uint32_t>{8, 9, 0, 1, 2, 3, 4, 7}));
}

// Ties across the forms, hand-checked: 24 events alternating between two times fill the sorted
// array; the 25th turns it into a radix heap, whose buckets must keep the queued ones in their
// push order; popping to 8 turns it back, and later pushes at a queued time still pop after the
// queued ones (nothing is pushed before the last pop's time, as in the engine).
TEST(EventQueue, TiesKeepPushOrderAcrossTheForms) {
  EventQueue q;
  for (std::uint32_t i = 0; i < 24; ++i) q.push(i % 2 == 0 ? 10 : 20, i, EventType::TaskEnd);
  q.push(10, 24, EventType::TaskEnd);  // a radix heap from here on
  q.push(20, 25, EventType::FlowDone, 3);
  std::vector<std::uint32_t> ids;
  for (int k = 0; k < 18; ++k) ids.push_back(q.pop().id);  // every 10, then 20 for ids 1..9
  EXPECT_EQ(ids, (std::vector<std::uint32_t>{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 1, 3, 5, 7, 9}));
  q.push(30, 26, EventType::TaskEnd);  // 8 left (11..25 at 20): sorted again at the next pop
  q.push(20, 27, EventType::FlowLatencyDone);
  ids.clear();
  while (!q.empty()) ids.push_back(q.pop().id);
  EXPECT_EQ(ids, (std::vector<std::uint32_t>{11, 13, 15, 17, 19, 21, 23, 25, 27, 26}));
}

// The sorted form's slot 0 is a sentinel later than any event: nothing queued is not "at" a time,
// and a push right after the queue empties starts a new entry instead of joining a run.
TEST(EventQueue, EmptiedQueueStartsAfresh) {
  EventQueue q;
  q.push(5, 1, EventType::TaskEnd);
  q.push(5, 2, EventType::TaskEnd);  // a run of two
  EXPECT_EQ(q.pop().id, 1u);
  EXPECT_TRUE(q.next_at(5));
  EXPECT_EQ(q.pop().id, 2u);
  EXPECT_FALSE(q.next_at(5));
  EXPECT_TRUE(q.empty());
  q.push(5, 3, EventType::TaskEnd);  // at the spent run's time: a new entry
  q.push(6, 4, EventType::TaskEnd);
  EXPECT_EQ(q.next_time(), 5);
  EXPECT_EQ(q.pop().id, 3u);
  EXPECT_FALSE(q.next_at(5));
  EXPECT_EQ(q.next_time(), 6);
  EXPECT_EQ(q.pop().id, 4u);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.next_time(), EventQueue::kNever);
}

}  // namespace
}  // namespace parasim::simulator
