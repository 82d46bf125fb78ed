// One rank's NCCL program from the issue plan (see nccl_program.hpp).
#include "parasim/mpi/nccl_program.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "parasim/common/error.hpp"
#include "parasim/common/index.hpp"

namespace parasim::mpi {

using executor::CommandKind;
using simulator::TaskGraph;
using simulator::TaskId;
using simulator::TaskKind;

bool NcclCall::is_nccl() const {
  switch (kind) {
    case NcclCallKind::Send:
    case NcclCallKind::Recv:
    case NcclCallKind::SignalSend:
    case NcclCallKind::SignalRecv:
    case NcclCallKind::Collective: return true;
    default: return false;
  }
}

std::vector<NcclCommKey> nccl_communicators(const TaskGraph& graph) {
  std::set<NcclCommKey> keys;
  for (TaskId t = 0; t < static_cast<TaskId>(graph.size()); ++t) {
    if (graph.kind(t) != TaskKind::Collective) continue;
    const auto m = graph.group_devices(graph.group(t));
    keys.insert({std::vector<int>(m.begin(), m.end()), graph.stream(t)});
  }
  return {keys.begin(), keys.end()};
}

namespace {

// A zero-count ncclSend/ncclRecv is a no-op that orders nothing: p2p calls move at least a byte.
Bytes p2p_bytes(Bytes b) { return std::max<Bytes>(b, 1); }

// Whether rank `waiter` learns that `event` happened from the transfer it follows rather than a
// signal: the event is recorded right after a transfer into the waiter.
bool arrival_is_transfer(const TaskGraph& g, const executor::EventSite& site, int waiter) {
  return g.kind(site.task) == TaskKind::Transfer && g.dst(site.task) == waiter && g.src(site.task) != waiter;
}

}  // namespace

NcclProgram nccl_program(const TaskGraph& g, const executor::IssuePlan& plan, int me) {
  if (me < 0 || me >= plan.num_devices)
    throw RuntimeError("nccl_program: rank " + std::to_string(me) + " outside the plan's " +
                       std::to_string(plan.num_devices) + " devices");
  NcclProgram p;
  p.rank = me;
  p.streams_per_device = plan.streams_per_device;
  p.comms = nccl_communicators(g);
  const int spd = plan.streams_per_device;
  const auto owner = [spd](executor::StreamIndex s) { return s / spd; };
  for (std::size_t c = 0; c < p.comms.size(); ++c) {
    const auto& m = p.comms[c].members;
    if (std::find(m.begin(), m.end(), me) != m.end()) p.member_of.push_back(static_cast<int>(c));
  }
  // Per event: the ranks other than its owner with a stream that waits for it.
  std::vector<std::set<int>> waiters(plan.events.size());
  for (const executor::Command& c : plan.commands)
    if (c.kind == CommandKind::Wait && owner(c.stream) != owner(plan.events[ix(c.event)].stream)) {
      waiters[ix(c.event)].insert(owner(c.stream));
      p.job_p2p = true;
    }
  for (TaskId t = 0; t < static_cast<TaskId>(g.size()); ++t)
    if (g.kind(t) == TaskKind::Transfer && g.src(t) != g.dst(t)) p.job_p2p = true;

  int last_nccl = kNoStream;
  const auto add = [&](NcclCall call) {
    if (call.is_nccl()) {
      if (last_nccl != kNoStream && last_nccl != call.stream) call.after_stream = last_nccl;
      last_nccl = call.stream;
      if (call.kind != NcclCallKind::Collective) p.p2p = true;
    }
    p.calls.push_back(call);
  };
  for (std::size_t pos = 0; pos < plan.commands.size(); ++pos) {
    const executor::Command& c = plan.commands[pos];
    const int at = static_cast<int>(pos);
    switch (c.kind) {
      case CommandKind::Wait: {
        if (owner(c.stream) != me) break;
        const executor::EventSite& site = plan.events[ix(c.event)];
        if (owner(site.stream) == me)
          add({.kind = NcclCallKind::WaitEvent, .position = at, .stream = c.stream % spd, .event = c.event});
        else
          add({.kind = NcclCallKind::WaitArrival,
               .position = at,
               .stream = c.stream % spd,
               .event = c.event,
               .peer = owner(site.stream)});
        break;
      }
      case CommandKind::Record: {
        const executor::EventSite& site = plan.events[ix(c.event)];
        const int from = owner(c.stream);
        if (from == me) {
          add({.kind = NcclCallKind::RecordEvent, .position = at, .stream = c.stream % spd, .event = c.event});
          for (int w : waiters[ix(c.event)])
            if (!arrival_is_transfer(g, site, w))
              add({.kind = NcclCallKind::SignalSend,
                   .position = at,
                   .stream = c.stream % spd,
                   .event = c.event,
                   .peer = w,
                   .bytes = 1});
        } else if (waiters[ix(c.event)].count(me) && !arrival_is_transfer(g, site, me)) {
          add({.kind = NcclCallKind::SignalRecv,
               .position = at,
               .stream = kReceiveStream,
               .event = c.event,
               .peer = from,
               .bytes = 1});
        }
        break;
      }
      case CommandKind::Launch: {
        const TaskId t = c.task;
        switch (g.kind(t)) {
          case TaskKind::Compute:
            if (g.device(t) == me)
              add({.kind = NcclCallKind::Compute, .position = at, .stream = g.stream(t), .task = t});
            break;
          case TaskKind::Transfer:
            if (g.src(t) == me && g.dst(t) == me)
              add({.kind = NcclCallKind::Copy, .position = at, .stream = g.stream(t), .task = t, .bytes = g.bytes(t)});
            else if (g.src(t) == me)
              add({.kind = NcclCallKind::Send,
                   .position = at,
                   .stream = g.stream(t),
                   .task = t,
                   .peer = g.dst(t),
                   .bytes = p2p_bytes(g.bytes(t))});
            else if (g.dst(t) == me)
              add({.kind = NcclCallKind::Recv,
                   .position = at,
                   .stream = kReceiveStream,
                   .task = t,
                   .peer = g.src(t),
                   .bytes = p2p_bytes(g.bytes(t))});
            break;
          case TaskKind::Collective: {
            const auto m = g.group_devices(g.group(t));
            if (std::find(m.begin(), m.end(), me) == m.end()) break;
            const NcclCommKey key{std::vector<int>(m.begin(), m.end()), g.stream(t)};
            const auto it = std::lower_bound(p.comms.begin(), p.comms.end(), key);
            add({.kind = NcclCallKind::Collective,
                 .position = at,
                 .stream = g.stream(t),
                 .task = t,
                 .bytes = g.bytes(t),
                 .comm = static_cast<int>(it - p.comms.begin())});
            break;
          }
          case TaskKind::Marker: break;
        }
        break;
      }
    }
  }
  return p;
}

int rank_cuda_device(int local_rank, int visible) {
  if (visible == 1) return 0;
  return local_rank >= 0 && local_rank < visible ? local_rank : -1;
}

std::string to_string(const NcclCall& c) {
  static const char* const kNames[] = {"WaitEvent", "WaitArrival", "RecordEvent", "Compute",    "Copy",
                                       "Send",      "Recv",        "SignalSend",  "SignalRecv", "Collective"};
  const auto stream = [](int s) {
    std::string name = "s";  // (appending: GCC 12's -Wrestrict misfires on "s" + std::string)
    name += std::to_string(s);
    return s == kReceiveStream ? std::string("recv") : name;
  };
  std::string out = std::to_string(c.position);
  out += ' ';
  out += stream(c.stream);
  out += ' ';
  out += kNames[static_cast<int>(c.kind)];
  if (c.task != simulator::kNoTask) {
    out += " t";
    out += std::to_string(c.task);
  }
  if (c.event >= 0) {
    out += " e";
    out += std::to_string(c.event);
  }
  if (c.peer >= 0) {
    const bool sends = c.kind == NcclCallKind::Send || c.kind == NcclCallKind::SignalSend;
    out += sends ? " ->" : " <-";
    out += std::to_string(c.peer);
  }
  if (c.bytes > 0) {
    out += ' ';
    out += std::to_string(c.bytes);
    out += 'B';
  }
  if (c.comm >= 0) {
    out += " c";
    out += std::to_string(c.comm);
  }
  if (c.after_stream != kNoStream) {
    out += " after ";
    out += stream(c.after_stream);
  }
  return out;
}

void check_nccl_programs(const std::vector<NcclProgram>& ranks) {
  const auto fail = [](const std::string& what) { throw RuntimeError("NCCL programs do not match: " + what); };
  const auto r = [](int k) { return "rank " + std::to_string(k); };
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    const NcclProgram& p = ranks[k];
    if (p.rank != static_cast<int>(k)) fail("program " + std::to_string(k) + " is " + r(p.rank) + "'s");
    if (p.comms != ranks.front().comms) fail(r(p.rank) + " lists other communicators than rank 0");
    int last = kNoStream, position = -1;
    for (const NcclCall& c : p.calls) {
      if (c.position < position)
        fail(r(p.rank) + ": call " + to_string(c) + " after position " + std::to_string(position));
      position = c.position;
      if (!c.is_nccl()) continue;
      const int expect = last != kNoStream && last != c.stream ? last : kNoStream;
      if (c.after_stream != expect) fail(r(p.rank) + ": " + to_string(c) + " is not chained to its previous NCCL call");
      last = c.stream;
    }
  }
  // Point to point: per ordered pair, sends in order = receives in order.
  using Key = std::tuple<int, simulator::TaskId, executor::EventId, Bytes, bool>;  // position, ..., signal?
  const int n = static_cast<int>(ranks.size());
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      std::vector<Key> sent, received;
      for (const NcclCall& c : ranks[ix(a)].calls)
        if ((c.kind == NcclCallKind::Send || c.kind == NcclCallKind::SignalSend) && c.peer == b)
          sent.emplace_back(c.position, c.task, c.event, c.bytes, c.kind == NcclCallKind::SignalSend);
      for (const NcclCall& c : ranks[ix(b)].calls)
        if ((c.kind == NcclCallKind::Recv || c.kind == NcclCallKind::SignalRecv) && c.peer == a)
          received.emplace_back(c.position, c.task, c.event, c.bytes, c.kind == NcclCallKind::SignalRecv);
      if (sent.size() != received.size())
        fail(r(a) + " sends " + std::to_string(sent.size()) + " messages to " + r(b) + ", which receives " +
             std::to_string(received.size()));
      for (std::size_t i = 0; i < sent.size(); ++i)
        if (sent[i] != received[i])
          fail("message " + std::to_string(i) + " from " + r(a) + " to " + r(b) + ": sent at position " +
               std::to_string(std::get<0>(sent[i])) + ", received at position " +
               std::to_string(std::get<0>(received[i])));
    }
  // Collectives: every member, the same tasks in the same order at the same positions.
  for (std::size_t comm = 0; comm < ranks.front().comms.size(); ++comm) {
    std::vector<std::tuple<int, simulator::TaskId, Bytes>> first;
    bool have_first = false;
    for (int m : ranks.front().comms[comm].members) {
      if (m >= n) fail("communicator " + std::to_string(comm) + " names " + r(m) + " of " + std::to_string(n));
      std::vector<std::tuple<int, simulator::TaskId, Bytes>> seq;
      for (const NcclCall& c : ranks[ix(m)].calls)
        if (c.kind == NcclCallKind::Collective && c.comm == static_cast<int>(comm))
          seq.emplace_back(c.position, c.task, c.bytes);
      const auto& mine = ranks[ix(m)].member_of;
      if (!std::binary_search(mine.begin(), mine.end(), static_cast<int>(comm)))
        fail(r(m) + " does not join communicator " + std::to_string(comm));
      if (!have_first) first = std::move(seq), have_first = true;
      else if (seq != first)
        fail(r(m) + " issues other collectives on communicator " + std::to_string(comm) + " than " +
             r(ranks.front().comms[comm].members.front()));
    }
  }
}

}  // namespace parasim::mpi
