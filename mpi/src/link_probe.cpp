// MPI ping-pong and all-reduce timings between ranks (see link_probe.hpp).
#include "parasim/mpi/link_probe.hpp"

#include <algorithm>
#include <string>

#include "mpi_check.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/index.hpp"
#include "world_impl.hpp"

namespace parasim::mpi {

namespace {

constexpr int kProbeTag = 9;

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
  const MPI_Comm comm = detail::world_comm(world);
  const int me = world.rank();
  Bytes largest = 1;
  for (Bytes b : o.sizes) largest = std::max(largest, b);
  std::vector<char> buf(ix(largest), 1);
  std::vector<float> floats(ix(largest / 4 + 1), 1.0f);
  const auto deadline = [&] { return detail::Clock::now() + world.timeouts().call; };
  RankLinkProbe out;
  world.barrier("the link probe");
  for (Bytes bytes : o.sizes) {
    std::vector<double> times;
    for (int i = 0; i < o.warmup + o.repetitions; ++i) {
      std::vector<MPI_Request> r(1, MPI_REQUEST_NULL);
      const int n = static_cast<int>(bytes);
      const auto start = detail::Clock::now();
      if (me == 0) {
        PARASIM_MPI_CHECK(MPI_Isend(buf.data(), n, MPI_CHAR, 1, kProbeTag, comm, &r[0]));
        detail::wait_all(world, r, deadline(), "the link probe's pong", {1});
        PARASIM_MPI_CHECK(MPI_Irecv(buf.data(), n, MPI_CHAR, 1, kProbeTag, comm, &r[0]));
        detail::wait_all(world, r, deadline(), "the link probe's pong", {1});
      } else if (me == 1) {
        PARASIM_MPI_CHECK(MPI_Irecv(buf.data(), n, MPI_CHAR, 0, kProbeTag, comm, &r[0]));
        detail::wait_all(world, r, deadline(), "the link probe's ping", {0});
        PARASIM_MPI_CHECK(MPI_Isend(buf.data(), n, MPI_CHAR, 0, kProbeTag, comm, &r[0]));
        detail::wait_all(world, r, deadline(), "the link probe's ping", {0});
      }
      const double ns = std::chrono::duration<double, std::nano>(detail::Clock::now() - start).count();
      if (i >= o.warmup) times.push_back(ns / 2);
    }
    if (me == 0) out.pingpong.push_back({bytes, median(times)});
  }
  world.barrier("the link probe");
  for (Bytes bytes : o.sizes) {
    std::vector<double> times;
    for (int i = 0; i < o.warmup + o.repetitions; ++i) {
      world.barrier("the link probe's all-reduce");
      std::vector<MPI_Request> r(1, MPI_REQUEST_NULL);
      const auto start = detail::Clock::now();
      PARASIM_MPI_CHECK(
          MPI_Iallreduce(MPI_IN_PLACE, floats.data(), static_cast<int>(bytes / 4), MPI_FLOAT, MPI_SUM, comm, &r[0]));
      detail::wait_all(world, r, deadline(), "the link probe's all-reduce", {});
      if (i >= o.warmup)
        times.push_back(std::chrono::duration<double, std::nano>(detail::Clock::now() - start).count());
    }
    if (me == 0) out.allreduce.push_back({bytes, median(times)});
  }
  out.pingpong = decode(world.broadcast(me == 0 ? encode(out.pingpong) : "", 0, "the link probe's results"));
  out.allreduce = decode(world.broadcast(me == 0 ? encode(out.allreduce) : "", 0, "the link probe's results"));
  out.pingpong_fit = profiler::fit_alpha_beta(out.pingpong);
  out.allreduce_fit = profiler::fit_alpha_beta(out.allreduce);
  return out;
}

}  // namespace parasim::mpi
