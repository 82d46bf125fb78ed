// Which rank pairs the link probe measures, and the cluster built from them (see link_probe.hpp).
#include <algorithm>
#include <string>

#include "parasim/common/error.hpp"
#include "parasim/common/index.hpp"
#include "parasim/mpi/link_probe.hpp"

namespace parasim::mpi {

std::vector<ProbePair> probe_pairs(const std::vector<int>& host_of_rank, bool* limited) {
  int hosts = 0;
  for (int h : host_of_rank) hosts = std::max(hosts, h + 1);
  std::vector<std::vector<int>> ranks(ix(hosts));
  for (std::size_t r = 0; r < host_of_rank.size(); ++r) ranks[ix(host_of_rank[r])].push_back(static_cast<int>(r));
  std::vector<ProbePair> out;
  for (int h = 0; h < hosts; ++h)
    if (ranks[ix(h)].size() >= 2) out.push_back({ranks[ix(h)][0], ranks[ix(h)][1], h, h});
  const bool all = hosts <= kMaxHostsAllPairs;
  if (limited) *limited = !all;
  for (int h = 0; h < hosts; ++h)
    for (int k = h + 1; k < hosts; ++k) {
      if (!all && h > 0) break;
      if (ranks[ix(h)].empty() || ranks[ix(k)].empty()) continue;
      out.push_back({ranks[ix(h)][0], ranks[ix(k)][0], h, k});
    }
  return out;
}

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

}  // namespace

hardware::ClusterSpec cluster_from_ranks(const RankLinkProbe& probe, const std::string& device_kind, Bytes memory,
                                         const std::string& name) {
  std::vector<double> intra_alpha, intra_beta, inter_alpha, inter_beta;
  for (const ProbedPair& p : probe.pairs) {
    (p.pair.same_host() ? intra_alpha : inter_alpha).push_back(p.fit.alpha_ns);
    (p.pair.same_host() ? intra_beta : inter_beta).push_back(p.fit.beta_gbps);
  }
  if (intra_alpha.empty() && inter_alpha.empty())
    throw InputError("the cluster of the MPI ranks: the link probe measured no pair of ranks");
  int hosts = 0;
  for (int h : probe.host_of_rank) hosts = std::max(hosts, h + 1);
  const bool gpus = probe.transport == ProbeTransport::Nccl;
  hardware::ClusterSpec s;
  s.name = name;
  std::string how = gpus ? "NCCL send/recv" : "MPI ping-pong";
  s.description = std::to_string(probe.host_of_rank.size()) + " MPI ranks on " + std::to_string(hosts) + " host" +
                  (hosts == 1 ? "" : "s") + ", links from " + how + " between representative pairs (medians)";
  if (intra_alpha.empty()) {
    intra_alpha = inter_alpha, intra_beta = inter_beta;
    s.description += "; one rank per host: no intra-host pair, taken as the inter-host pairs";
  }
  const double a_in = median(intra_alpha), b_in = median(intra_beta);
  s.intra_node_fabric = gpus ? "GPUs of one host (NCCL, measured)" : "ranks of one host (MPI, measured)";
  s.inter_node_fabric = hosts > 1 ? "network between hosts (measured)" : "none";
  for (std::size_t r = 0; r < probe.host_of_rank.size(); ++r)
    s.devices.push_back({"rank" + std::to_string(r), device_kind, probe.host_of_rank[r], memory});
  const int devices = static_cast<int>(s.devices.size());
  const auto bw = [](double b) { return GBps{std::clamp(b, 0.01, 10'000.0)}; };
  const auto hub_kind = gpus ? hardware::EndpointKind::NvSwitch : hardware::EndpointKind::Cpu;
  for (int h = 0; h < hosts; ++h) s.endpoints.push_back({"host" + std::to_string(h), hub_kind, h});
  // Two hops within a host: each carries half the measured latency.
  for (int r = 0; r < devices; ++r)
    s.links.push_back({"rank" + std::to_string(r) + "-host",
                       gpus ? hardware::LinkKind::NVSwitch : hardware::LinkKind::QPI, r,
                       devices + probe.host_of_rank[ix(r)], static_cast<TimeNs>(a_in / 2), bw(b_in)});
  if (hosts > 1) {
    // Four hops between hosts: the two inner ones carry what the inter-host latency adds.
    const double a_out = median(inter_alpha), b_out = median(inter_beta);
    s.endpoints.push_back({"network", hardware::EndpointKind::IbSwitch, -1});
    for (int h = 0; h < hosts; ++h)
      s.links.push_back({"host" + std::to_string(h) + "-network",
                         gpus ? hardware::LinkKind::InfiniBand : hardware::LinkKind::Ethernet, devices + h,
                         devices + hosts, static_cast<TimeNs>(std::max(a_out - a_in, 0.0) / 2), bw(b_out)});
  }
  return s;
}

}  // namespace parasim::mpi
