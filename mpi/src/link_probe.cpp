// Ping-pong between representative rank pairs and an all-reduce over every rank (see link_probe.hpp).
#include "parasim/mpi/link_probe.hpp"

#include <algorithm>
#include <string>

#include "mpi_check.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/index.hpp"
#include "probe_links.hpp"
#include "world_impl.hpp"

namespace parasim::mpi {

namespace detail {
namespace {

constexpr int kProbeTag = 9;

class MpiProbeLinks final : public ProbeLinks {
 public:
  MpiProbeLinks(World& world, Bytes largest)
      : world_(world), bytes_(ix(largest), 1), floats_(ix(largest / 4 + 1), 1.0f) {}

  double round_trip(int peer, Bytes bytes, bool first) override {
    const MPI_Comm comm = world_comm(world_);
    std::vector<MPI_Request> r(1, MPI_REQUEST_NULL);
    const int n = static_cast<int>(bytes);
    const auto start = Clock::now();
    for (int leg = 0; leg < 2; ++leg) {
      if ((leg == 0) == first) PARASIM_MPI_CHECK(MPI_Isend(bytes_.data(), n, MPI_CHAR, peer, kProbeTag, comm, &r[0]));
      else PARASIM_MPI_CHECK(MPI_Irecv(bytes_.data(), n, MPI_CHAR, peer, kProbeTag, comm, &r[0]));
      wait_all(world_, r, Clock::now() + world_.timeouts().call, "the link probe's ping-pong", {peer});
    }
    return std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  }

  double allreduce(Bytes bytes) override {
    std::vector<MPI_Request> r(1, MPI_REQUEST_NULL);
    const auto start = Clock::now();
    PARASIM_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, floats_.data(), static_cast<int>(bytes / 4), MPI_FLOAT, MPI_SUM,
                                     world_comm(world_), &r[0]));
    wait_all(world_, r, Clock::now() + world_.timeouts().call, "the link probe's all-reduce", {});
    return std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  }

 private:
  World& world_;
  std::vector<char> bytes_;
  std::vector<float> floats_;
};

}  // namespace

std::unique_ptr<ProbeLinks> make_mpi_probe_links(World& world, Bytes largest) {
  return std::make_unique<MpiProbeLinks>(world, largest);
}

}  // namespace detail

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

std::string encode(const std::vector<profiler::SizeTime>& v) {
  std::string s;
  for (const auto& p : v) s += std::to_string(p.bytes) + " " + std::to_string(p.time_ns) + "\n";
  return s;
}

std::vector<profiler::SizeTime> decode(const std::string& s) {
  std::vector<profiler::SizeTime> v;
  std::size_t pos = 0;
  while (pos < s.size()) {
    const std::size_t nl = s.find('\n', pos);
    const std::string line = s.substr(pos, nl - pos);
    const std::size_t sp = line.find(' ');
    v.push_back({std::stoll(line.substr(0, sp)), std::stod(line.substr(sp + 1))});
    pos = nl + 1;
  }
  return v;
}

}  // namespace

RankLinkProbe probe_rank_links(World& world, const RankLinkProbeOptions& o) {
  if (world.size() < 2) throw InputError("the MPI link probe needs at least two ranks");
  const int me = world.rank();
  Bytes largest = 1;
  for (Bytes b : o.sizes) largest = std::max(largest, b);
  const auto links = o.transport == ProbeTransport::Nccl ? detail::make_nccl_probe_links(world, largest)
                                                         : detail::make_mpi_probe_links(world, largest);
  RankLinkProbe out;
  out.transport = o.transport;
  out.host_of_rank = world.host_of_rank();
  bool limited = false;
  const std::vector<ProbePair> pairs = probe_pairs(out.host_of_rank, &limited);
  if (limited)
    out.notes.push_back(std::to_string(world.hosts().size()) +
                        " hosts: inter-host links probed from host 0 to each "
                        "other host only (not every host pair)");
  // One pair at a time, the other ranks waiting at a barrier: pairs never share a link's time.
  for (const ProbePair& pair : pairs) {
    world.barrier("the link probe of ranks " + std::to_string(pair.a) + " and " + std::to_string(pair.b));
    if (me != pair.a && me != pair.b) continue;
    const int peer = me == pair.a ? pair.b : pair.a;
    std::vector<profiler::SizeTime> points;
    for (Bytes bytes : o.sizes) {
      std::vector<double> times;
      for (int i = 0; i < o.warmup + o.repetitions; ++i) {
        const double ns = links->round_trip(peer, bytes, me == pair.a);
        if (i >= o.warmup) times.push_back(ns / 2);
      }
      points.push_back({bytes, median(times)});
    }
    if (me == pair.a) out.pairs.push_back({pair, points, {}});
  }
  world.barrier("the link probe");
  for (Bytes bytes : o.sizes) {
    std::vector<double> times;
    for (int i = 0; i < o.warmup + o.repetitions; ++i) {
      world.barrier("the link probe's all-reduce");
      const double ns = links->allreduce(bytes);
      if (i >= o.warmup) times.push_back(ns);
    }
    if (me == 0) out.allreduce.push_back({bytes, median(times)});
  }
  // Every rank: every pair's points (measured by its lower rank), rank 0's all-reduce.
  std::string mine;
  const auto head = [](const ProbePair& p) {
    std::string h = "#";  // (appending: GCC 12's -Wrestrict misfires on "#" + std::string)
    h += std::to_string(p.a);
    h += ' ';
    h += std::to_string(p.b);
    h += '\n';
    return h;
  };
  for (const ProbedPair& p : out.pairs) mine += head(p.pair) + encode(p.points) + "\n";
  const auto all = world.allgather(mine, "the link probe's results");
  out.pairs.clear();
  for (const ProbePair& pair : pairs) {
    const std::string& s = all[ix(pair.a)];
    const std::string h = head(pair);
    const std::size_t at = s.find(h);
    const std::size_t end = s.find("\n\n", at);
    if (at == std::string::npos || end == std::string::npos)
      throw RuntimeError("the link probe: rank " + std::to_string(pair.a) + " sent no result for its pair");
    ProbedPair p{pair, decode(s.substr(at + h.size(), end + 1 - at - h.size())), {}};
    p.fit = profiler::fit_alpha_beta(p.points);
    out.pairs.push_back(std::move(p));
  }
  out.allreduce = decode(world.broadcast(me == 0 ? encode(out.allreduce) : "", 0, "the link probe's results"));
  out.allreduce_fit = profiler::fit_alpha_beta(out.allreduce);
  out.pingpong = out.pairs.front().points;
  out.pingpong_fit = out.pairs.front().fit;
  return out;
}

}  // namespace parasim::mpi
