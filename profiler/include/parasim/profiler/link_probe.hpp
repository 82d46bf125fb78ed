// Measuring the links between host and GPUs and among GPUs, nccl-tests style: for every message
// size from 1 KiB to 1 GiB (x2 or x4 steps), `warmup` untimed runs, then `iterations` timed runs
// whose total time is divided by the count. Copies are timed with CUDA events on the issuing
// stream; NCCL collectives over all probed GPUs in one process (ncclCommInitAll) are timed with the
// host clock around the launches of every rank plus a synchronize of every stream, exactly as
// nccl-tests does. Every curve gets a piecewise alpha-beta fit (alpha_beta.hpp).
//
//   curve       kind         src, dst            what moves
//   h2d         pcie-h2d     device, device      pinned host -> device (cudaMemcpyAsync)
//   d2h         pcie-d2h     device, device      device -> pinned host
//   d2d         d2d          device, device      within one device's memory (read + write)
//   p2p         nvlink|pcie  src, dst            cudaMemcpyPeerAsync (kind from the bandwidth, see below)
//   collective  nccl         first, last device  allreduce, allgather, reducescatter over `ranks` GPUs
//
// algbw = size / time; busbw = algbw x factor with the nccl-tests factors (allreduce 2(n-1)/n,
// allgather and reducescatter (n-1)/n, copies 1); for allgather and reducescatter `size` is the
// whole gathered/reduced buffer, as nccl-tests reports it (docs/gpu_profiling.md).
//
// The measuring functions exist in CUDA builds only; the report functions (tables, profile,
// cluster) are plain C++.
//
// Example:
//   #if PARASIM_HAVE_CUDA
//   LinkProbeOptions opt;                     // all visible GPUs, 1 KiB .. 1 GiB, x2 steps
//   LinkProbeResult r = probe_links(opt);
//   print_link_tables(std::cout, r);          // "size count type time(us) algbw(GB/s) busbw(GB/s)"
//   save_profile(link_probe_profile(r), "links.json");
//   hardware::save_cluster_file(hardware::Cluster(cluster_spec_from_probe(r, "my-box")), "my-box.json");
//   #endif
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "parasim/common/units.hpp"
#include "parasim/hardware/cluster.hpp"
#include "parasim/profiler/gpu_profiler.hpp"
#include "parasim/profiler/profile.hpp"

namespace parasim::profiler {

struct LinkProbeOptions {
  std::vector<int> devices;        // CUDA device indices; empty: every visible GPU
  Bytes min_bytes = 1 * KiB;
  Bytes max_bytes = 1 * GiB;
  int size_factor = 2;             // 2 or 4: each size is the previous one times this
  int warmup = 5;
  int iterations = 20;
  bool host_copies = true;         // h2d and d2h for every probed device
  bool device_copies = true;       // d2d within every probed device
  bool peer_copies = true;         // every ordered pair of probed devices
  bool collectives = true;         // NCCL allreduce, allgather, reducescatter over all probed devices
  /// Called after each curve with (curve label, done, total).
  std::function<void(const std::string&, std::size_t, std::size_t)> on_progress;
};

struct LinkProbeResult {
  std::vector<GpuDeviceInfo> devices;  // the probed devices, in probe order
  int nccl_version = 0;                // ncclGetVersion (22703 = 2.27.3); 0 if NCCL was not used
  std::vector<LinkCurve> curves;
  std::vector<std::string> notes;      // e.g. "no peer access 0 -> 3: copy staged through the host"
};

/// Message sizes min, min*f, min*f^2, ... up to and including max (max is added if not hit).
/// InputError for min < 1, max < min or a factor other than 2 or 4.
std::vector<Bytes> probe_sizes(Bytes min_bytes, Bytes max_bytes, int factor);

/// One measured point: algbw = bytes / time (GB/s = bytes/ns), busbw = algbw * factor.
LinkPoint make_link_point(Bytes bytes, TimeNs time_ns, double busbw_factor);

/// Fills curve.fit from curve.points with fit_piecewise (points with time 0 are skipped).
void fit_link_curve(LinkCurve& curve);

/// Point-to-point kind from the measured large-message bandwidth: above 64 GB/s no PCIe link
/// (PCIe 5.0 x16 peaks at 64 GB/s per direction) can have carried it, so "nvlink", else "pcie".
std::string classify_peer_link(double large_message_gbps);

/// A label for tables and progress: "h2d gpu0", "p2p gpu0->gpu1", "allreduce x8".
std::string link_curve_label(const LinkCurve& curve);

/// The nccl-tests table of one curve:
///   #  h2d gpu0 (pcie-h2d)
///   #       size         count   type    time(us)  algbw(GB/s)  busbw(GB/s)
///           1024           256  float       10.52         0.10         0.10
/// followed by the fitted segments ("# fit 1024..65536 B: alpha 9.8 us, beta 11.2 GB/s").
void print_link_table(std::ostream& out, const LinkCurve& curve);
void print_link_tables(std::ostream& out, const LinkProbeResult& result);

/// The measurements as a parasim.profile/1 profile with no ops: device block of the first probed
/// device (backend "cuda", source measured-gpu) and every curve under "links".
Profile link_probe_profile(const LinkProbeResult& result);

/// A single-node cluster (parasim.cluster/1) from the measurements: one device per probed GPU
/// (kind and memory from the query), a host CPU endpoint with a PCIe link to every GPU (bandwidth:
/// the smaller of its h2d/d2h large-message betas; latency: the small-message alpha), and for
/// every pair with peer copies in both directions a direct link of the pair's kind (bandwidth:
/// the smaller direction's beta). When every pair is NVLink-class with near-equal bandwidth and
/// there are 3 or more GPUs, the GPUs hang off one NVSwitch endpoint instead (HGX boards), the
/// route latency split over the two hops. InputError when a curve the cluster needs is missing.
hardware::ClusterSpec cluster_spec_from_probe(const LinkProbeResult& result, const std::string& name);

/// Runs the probe (CUDA + NCCL builds only). Throws RuntimeError("no CUDA device: ...") without a
/// GPU, InputError for bad options (sizes, factor, iteration counts, device indices).
LinkProbeResult probe_links(const LinkProbeOptions& options);

}  // namespace parasim::profiler
