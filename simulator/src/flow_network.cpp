#include "flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace parasim::simulator {

namespace {

// One set of per-link arrays per thread: a thread runs one simulation at a time (a nested one
// would find the pool empty and allocate its own).
thread_local std::unique_ptr<FlowLinkArrays> pooled_arrays;

std::unique_ptr<FlowLinkArrays> take_arrays(std::size_t links) {
  std::unique_ptr<FlowLinkArrays> a = std::move(pooled_arrays);
  if (a == nullptr || a->links.size() != links) {
    a = std::make_unique<FlowLinkArrays>();
    a->links.assign(links, FlowLinkState{});
    a->solver = MaxMinSolver(links);
  }
  return a;
}

}  // namespace

inline void FlowNetwork::advance(Flow& fl, TimeNs now) {
  fl.remaining = std::max(0.0, fl.remaining - fl.rate * static_cast<double>(now - fl.last));
  fl.last = now;
}

inline void FlowNetwork::reschedule(Flow& fl, FlowId f, double rate, TimeNs now, EventQueue& events) {
  if (rate == fl.rate) return;  // unchanged: its queued completion is still right
  fl.rate = rate;
  ++fl.version;
  // Capped: a flow squeezed to a tiny share may look centuries away until its rate rises again
  // (Engine::run has already checked that the real finish fits in 64-bit time).
  const double eta = std::min(fl.remaining / fl.rate, 8.0e18 - static_cast<double>(now));
  events.push(now + detail::round_half_up(eta), f, EventType::FlowDone, fl.version);
}

FlowNetwork::FlowNetwork(const hardware::Cluster& cluster, const RouteTable& routes, bool record_intervals)
    : routes_(routes),
      record_(record_intervals),
      arrays_(take_arrays(static_cast<std::size_t>(cluster.num_directed_links()))),
      capacity_(cluster.dir_bandwidths()),
      links_(arrays_->links.data()),
      epoch_(arrays_->epoch),
      solver_(arrays_->solver) {}

FlowNetwork::~FlowNetwork() {
  // Every flow has left its links by the end of a run; a run that threw may have left some, so
  // the flow lists are cleared too.
  for (hardware::DirLinkId l : arrays_->touched_list) {
    links_[static_cast<std::size_t>(l)].flows.clear();
    links_[static_cast<std::size_t>(l)].busy_since = links_[static_cast<std::size_t>(l)].busy = 0;
    links_[static_cast<std::size_t>(l)].bytes = 0;
  }
  arrays_->touched_list.clear();
  // Dirty marks of this run must not look current to the next one; the clock continues across
  // networks, so restart it (clearing every stamp) long before it could wrap.
  if (++epoch_ >= (1u << 31)) {
    for (FlowLinkState& ls : arrays_->links) ls.stamp = 0;
    epoch_ = 1;
  }
  arrays_->epoch = epoch_;
  pooled_arrays = std::move(arrays_);
}

FlowId FlowNetwork::add_slot(const RouteRef& route, Bytes bytes, std::uint8_t owner_kind, std::uint32_t owner,
                             double cap) {
  free_slots_.push_back(static_cast<FlowId>(flows_.size()));
  flows_.emplace_back();
  flow_stamp_.push_back(0);
  return add(route, bytes, owner_kind, owner, cap);
}

void FlowNetwork::record_interval(hardware::DirLinkId l, TimeNs start, TimeNs end) {
  if (end <= start) return;
  // Merge with this link's previous interval when they touch (a flow ended as another began).
  for (auto it = intervals_.rbegin(); it != intervals_.rend() && it != intervals_.rbegin() + 8; ++it)
    if (it->link == l) {
      if (it->end == start) {
        it->end = end;
        return;
      }
      break;
    }
  intervals_.push_back({l, start, end});
}

void FlowNetwork::settle(TimeNs now, EventQueue& events) {
  if (dirty_links_.empty()) return;
  // The common instant: every flow on a changed link is alone on its whole route (a transfer, a
  // ring step's messages; none at all when flows only left). The component search below would
  // find exactly these flows, in this order (first seen on the changed links), each taking its
  // slowest link; anything else falls through to the search.
  // A link stamped `comp` lies on the route of a flow taken already: while every flow is alone,
  // that flow is the link's only one, so the stamp does what a per-flow mark would.
  std::uint32_t comp = ++epoch_;
  if (shared_links_ == 0) {  // no link carries two flows: every flow is alone, nothing to check
    for (hardware::DirLinkId l : dirty_links_) {
      const LinkState& ls = links_[static_cast<std::size_t>(l)];
      if (ls.flows.empty()) continue;
      const FlowId f = ls.flows.front();
      if (flow_stamp_[f] == comp) continue;  // taken through another of its links
      flow_stamp_[f] = comp;
      Flow& fl = flows_[f];
      advance(fl, now);
      reschedule(fl, f, fl.alone, now, events);
    }
    dirty_links_.clear();
    ++epoch_;  // the dirty marks must not look current to the next mark_dirty
    return;
  }
  component_.clear();
  rates_.clear();
  bool all_alone = true;
  for (hardware::DirLinkId l : dirty_links_) {
    const LinkState& ls = links_[static_cast<std::size_t>(l)];
    if (ls.stamp == comp) continue;
    if (ls.flows.size() != 1) {
      if (ls.flows.empty()) continue;
      all_alone = false;
      break;
    }
    const FlowId f = ls.flows.front();
    const Flow& fl = flows_[f];
    double r = own_cap(fl);
    for (hardware::DirLinkId k : route_of(fl)) {
      LinkState& lk = links_[static_cast<std::size_t>(k)];
      all_alone = all_alone && lk.flows.size() == 1;
      lk.stamp = comp;
      r = std::min(r, capacity_[static_cast<std::size_t>(k)]);
    }
    if (!all_alone) break;
    component_.push_back(f);
    rates_.push_back(r);
  }
  if (all_alone) {
    dirty_links_.clear();
    ++epoch_;  // the dirty marks must not look current to the next mark_dirty
    for (std::size_t i = 0; i < component_.size(); ++i) {
      Flow& fl = flows_[component_[i]];
      advance(fl, now);
      reschedule(fl, component_[i], rates_[i], now, events);
    }
    return;
  }
  // The affected component: flows reachable from the dirty links through shared links.
  comp = ++epoch_;
  component_.clear();
  bfs_.clear();
  for (hardware::DirLinkId l : dirty_links_) {
    links_[static_cast<std::size_t>(l)].stamp = comp;
    bfs_.push_back(l);
  }
  dirty_links_.clear();
  for (std::size_t head = 0; head < bfs_.size(); ++head)
    for (FlowId f : links_[static_cast<std::size_t>(bfs_[head])].flows) {
      if (flow_stamp_[f] == comp) continue;
      flow_stamp_[f] = comp;
      component_.push_back(f);
      for (hardware::DirLinkId l : route_of(flows_[f]))
        if (links_[static_cast<std::size_t>(l)].stamp != comp) {
          links_[static_cast<std::size_t>(l)].stamp = comp;
          bfs_.push_back(l);
        }
    }
  ++epoch_;  // stamps of this settle must not look dirty to the next mark_dirty
  if (component_.empty()) return;

  // A flow alone on every link of its route (the common case: a transfer, or a ring step's
  // message on its own link) gets its slowest link, capped; only flows that share a link go to the
  // solver. Max-min fairness decomposes over connected components (progressive filling never
  // mixes two components' links), so solving the sharing ones together gives the same rates.
  spans_.clear();
  caps_.clear();
  shared_.clear();
  rates_.resize(component_.size());
  bool capped = false;
  for (std::size_t i = 0; i < component_.size(); ++i) {
    Flow& fl = flows_[component_[i]];
    advance(fl, now);
    const double cap = own_cap(fl);
    double r = cap;
    bool alone = true;
    for (hardware::DirLinkId l : route_of(fl)) {
      r = std::min(r, capacity_[static_cast<std::size_t>(l)]);
      alone = alone && links_[static_cast<std::size_t>(l)].flows.size() == 1;
    }
    rates_[i] = r;
    if (alone) continue;
    shared_.push_back(static_cast<std::uint32_t>(i));
    spans_.push_back(route_of(fl));
    capped = capped || fl.cap > 0;
    caps_.push_back(cap);
  }
  if (!shared_.empty()) {
    shared_rates_.assign(shared_.size(), 0.0);
    solver_.solve(spans_, capacity_, shared_rates_,
                  capped ? std::span<const double>(caps_) : std::span<const double>());
    for (std::size_t k = 0; k < shared_.size(); ++k) rates_[shared_[k]] = shared_rates_[k];
  }
  reschedule(now, events);
}

void FlowNetwork::reschedule(TimeNs now, EventQueue& events) {
  for (std::size_t i = 0; i < component_.size(); ++i)
    reschedule(flows_[component_[i]], component_[i], rates_[i], now, events);
}

void FlowNetwork::collect(StepResult& r) const {
  r.links.assign(arrays_->links.size(), LinkStats{});
  for (hardware::DirLinkId l : arrays_->touched_list)
    r.links[static_cast<std::size_t>(l)] = {links_[static_cast<std::size_t>(l)].busy,
                                            links_[static_cast<std::size_t>(l)].bytes};
  if (record_) {
    r.link_timeline = intervals_;
    std::stable_sort(r.link_timeline.begin(), r.link_timeline.end(),
                     [](const LinkInterval& a, const LinkInterval& b) { return a.link < b.link; });
  }
}

}  // namespace parasim::simulator
