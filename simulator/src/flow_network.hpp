// Private: the links as shared resources. A flow crosses the directed links of its route;
// every directed link divides its bandwidth among its flows by max-min fairness. Membership
// changes (join/leave) take effect immediately for busy-time accounting; rates are recomputed
// once per instant, by settle(), for the connected components of flows that changed.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "parasim/hardware/cluster.hpp"
#include "parasim/simulator/step_result.hpp"
#include "event_queue.hpp"
#include "max_min.hpp"
#include "route_table.hpp"

namespace parasim::simulator {

using FlowId = std::uint32_t;

struct Flow {
  std::uint32_t route_offset = 0;
  std::uint32_t hops = 0;
  Bytes bytes = 0;
  double remaining = 0;  // bytes still to move
  double rate = 0;       // bytes per ns
  double cap = 0;        // the most it may get (> 0), or 0 for no bound beyond its links
  double alone = 0;      // its rate while alone on every link of its route: its cap or slowest link
  TimeNs last = 0;       // when `remaining` was last brought up to date
  std::uint32_t version = 0;
  std::uint32_t owner = 0;
  std::uint8_t owner_kind = 0;
  bool joined = false;
};

/// What a FlowNetwork keeps per directed link of the cluster. Tens of thousands of links on a
/// 5,128-GPU cluster while a symmetric step touches a few hundred, so these arrays are allocated
/// once per thread and handed from one FlowNetwork to the next: each returns them with only the
/// links it touched reset (flow_network.cpp).
struct FlowLinkState {
  std::vector<FlowId> flows;
  TimeNs busy_since = 0;
  TimeNs busy = 0;
  Bytes bytes = 0;          // > 0 once a flow joined (a flow of 0 bytes never joins): touched
  std::uint32_t stamp = 0;  // FlowNetwork's epoch when last marked dirty or reached by settle()
};
struct FlowLinkArrays {
  std::vector<FlowLinkState> links;
  std::uint32_t epoch = 1;                        // the links' stamp clock, continued across networks
  std::vector<hardware::DirLinkId> touched_list;  // links whose state a network must reset
  MaxMinSolver solver{0};
};

class FlowNetwork {
 public:
  FlowNetwork(const hardware::Cluster& cluster, const RouteTable& routes, bool record_intervals);
  ~FlowNetwork();
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  FlowId add(const RouteRef& route, Bytes bytes, std::uint8_t owner_kind, std::uint32_t owner, double cap = 0);
  Flow& flow(FlowId f) { return flows_[f]; }
  /// The flow starts moving data: it joins every link of its route.
  void join(FlowId f, TimeNs now);
  /// The flow is done (or never joined): it leaves its links and its slot is reused.
  void release(FlowId f, TimeNs now);
  /// Recomputes the rates of flows sharing links with flows that joined or left since the last
  /// call; queues a new completion (EventType::FlowDone with the flow's version) for every flow
  /// whose rate changed - straight into the engine's queue, in the order they were found.
  void settle(TimeNs now, EventQueue& events);
  bool has_pending_changes() const { return !dirty_links_.empty(); }

  void collect(StepResult& r) const;

 private:
  using LinkState = FlowLinkState;
  std::span<const hardware::DirLinkId> route_of(const Flow& f) const {
    return {routes_.link_data() + f.route_offset, f.hops};
  }
  // add() when no slot is free: makes one, then adds (kept out of add()'s common path).
  [[gnu::noinline]] FlowId add_slot(const RouteRef& route, Bytes bytes, std::uint8_t owner_kind, std::uint32_t owner,
                                    double cap);
  void mark_dirty(LinkState& ls, hardware::DirLinkId l) {
    if (ls.stamp == epoch_) return;
    ls.stamp = epoch_;
    dirty_links_.push_back(l);
  }
  /// Bytes sent at the flow's current rate since it was last brought up to date, now off it.
  static void advance(Flow& fl, TimeNs now);
  /// The flow's own rate bound: its cap, or none.
  static double own_cap(const Flow& fl) { return fl.cap > 0 ? fl.cap : std::numeric_limits<double>::infinity(); }
  /// New completions for the flows of component_ whose rate (rates_) changed.
  void reschedule(TimeNs now, EventQueue& events);
  /// A new completion for flow f (fl) if its rate changes to `rate`.
  static void reschedule(Flow& fl, FlowId f, double rate, TimeNs now, EventQueue& events);
  void record_interval(hardware::DirLinkId l, TimeNs start, TimeNs end);  // with record_intervals

  const RouteTable& routes_;
  bool record_;
  std::unique_ptr<FlowLinkArrays> arrays_;  // from the thread's pool; back to it on destruction
  std::span<const double> capacity_;  // the cluster's dir_bandwidths()
  LinkState* links_;                  // arrays_->links.data(): the hot loops index it without reloading
  std::vector<Flow> flows_;
  std::vector<FlowId> free_slots_;
  std::uint32_t shared_links_ = 0;  // links carrying two flows or more
  std::vector<hardware::DirLinkId> dirty_links_;
  std::vector<std::uint32_t> flow_stamp_;
  std::uint32_t epoch_;  // arrays_->epoch while this network runs (written back on destruction)
  // settle() scratch
  std::vector<hardware::DirLinkId> bfs_;
  std::vector<FlowId> component_;
  std::vector<std::span<const hardware::DirLinkId>> spans_;
  std::vector<double> rates_;
  std::vector<double> caps_;
  std::vector<std::uint32_t> shared_;  // component indices of the flows that share a link
  std::vector<double> shared_rates_;
  MaxMinSolver& solver_;
  std::vector<LinkInterval> intervals_;
};

// Inline: the engine calls these for every flow (add as it begins, join as its latency ends,
// release as it completes).
inline FlowId FlowNetwork::add(const RouteRef& route, Bytes bytes, std::uint8_t owner_kind, std::uint32_t owner,
                               double cap) {
  if (free_slots_.empty()) return add_slot(route, bytes, owner_kind, owner, cap);  // a tail call: no spills here
  const FlowId f = free_slots_.back();
  free_slots_.pop_back();
  Flow& fl = flows_[f];
  fl.route_offset = route.offset;
  fl.hops = route.hops;
  fl.bytes = bytes;
  fl.remaining = static_cast<double>(bytes);
  fl.rate = 0;
  fl.cap = cap;
  // The route's bottleneck is the least of its links' capacities (capacity_), bit for bit.
  fl.alone = cap > 0 ? std::min(cap, route.bottleneck) : route.bottleneck;
  fl.last = 0;
  ++fl.version;  // versions keep counting across reuse: stale events stay stale
  fl.owner = owner;
  fl.owner_kind = owner_kind;
  fl.joined = false;
  return f;
}

inline void FlowNetwork::join(FlowId f, TimeNs now) {
  Flow& fl = flows_[f];
  fl.joined = true;
  fl.last = now;
  fl.rate = 0;
  for (hardware::DirLinkId l : route_of(fl)) {
    auto& ls = links_[static_cast<std::size_t>(l)];
    const std::size_t on = ls.flows.size();
    if (on == 0) {
      ls.busy_since = now;
      if (ls.bytes == 0) arrays_->touched_list.push_back(l);  // never carried a flow before
    }
    shared_links_ += on == 1;
    ls.flows.push_back(f);
    ls.bytes += fl.bytes;
    mark_dirty(ls, l);
  }
}

inline void FlowNetwork::release(FlowId f, TimeNs now) {
  Flow& fl = flows_[f];
  if (fl.joined) {
    for (hardware::DirLinkId l : route_of(fl)) {
      auto& ls = links_[static_cast<std::size_t>(l)];
      FlowId* it = ls.flows.data();
      while (*it != f) ++it;  // it is there: a short list (std::find's unrolled search costs more)
      *it = ls.flows.back();
      ls.flows.pop_back();
      if (ls.flows.empty()) {
        ls.busy += now - ls.busy_since;
        if (record_) record_interval(l, ls.busy_since, now);
        continue;  // no flow left whose rate could change: settle() would skip the link anyway
      }
      shared_links_ -= ls.flows.size() == 1;
      mark_dirty(ls, l);
    }
  }
  fl.joined = false;
  ++fl.version;  // any completion event still queued for this flow is now stale
  free_slots_.push_back(f);
}

}  // namespace parasim::simulator
