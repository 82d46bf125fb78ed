// What the link probe reports, as plain C++ (no CUDA): sizes, points, fits, the nccl-tests
// tables, the profile and the cluster built from the measurements.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>

#include "parasim/common/error.hpp"
#include "parasim/common/median.hpp"
#include "parasim/profiler/alpha_beta.hpp"
#include "parasim/profiler/link_probe.hpp"

namespace parasim::profiler {

namespace {

constexpr const char* kH2d = "pcie-h2d";
constexpr const char* kD2h = "pcie-d2h";
constexpr const char* kD2d = "d2d";
constexpr double kPcieMaxGbps = 64.0;          // PCIe 5.0 x16, per direction
constexpr double kNvSwitchUniformity = 1.25;   // max/min pair bandwidth still "one switch"

bool is_peer_curve(const LinkCurve& c) {
  return c.collective.empty() && c.src != c.dst && (c.kind == "nvlink" || c.kind == "pcie");
}

double large_message_beta(const LinkCurve& c) { return c.fit.segments.empty() ? 0.0 : c.fit.segments.back().beta_gbps; }
double small_message_alpha(const LinkCurve& c) {
  return c.fit.segments.empty() ? 0.0 : c.fit.segments.front().alpha_ns;
}

const LinkCurve* find_curve(const LinkProbeResult& r, const std::string& kind, int src, int dst) {
  for (const auto& c : r.curves)
    if (c.collective.empty() && c.kind == kind && c.src == src && c.dst == dst) return &c;
  return nullptr;
}

const LinkCurve* find_peer_curve(const LinkProbeResult& r, int src, int dst) {
  for (const auto& c : r.curves)
    if (is_peer_curve(c) && c.src == src && c.dst == dst) return &c;
  return nullptr;
}

std::string format_fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string pad_left(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

}  // namespace

std::vector<Bytes> probe_sizes(Bytes min_bytes, Bytes max_bytes, int factor) {
  if (min_bytes < 1)
    throw InputError("link probe: minimum size must be at least 1 byte, found " + std::to_string(min_bytes));
  if (max_bytes < min_bytes)
    throw InputError("link probe: maximum size " + std::to_string(max_bytes) + " is below the minimum " +
                     std::to_string(min_bytes));
  if (factor != 2 && factor != 4)
    throw InputError("link probe: size step must be 2 or 4, found " + std::to_string(factor));
  std::vector<Bytes> sizes;
  for (Bytes s = min_bytes; s <= max_bytes; s *= factor) {
    sizes.push_back(s);
    if (s > max_bytes / factor) break;  // the next step would pass max (or overflow)
  }
  if (sizes.back() != max_bytes) sizes.push_back(max_bytes);
  return sizes;
}

LinkPoint make_link_point(Bytes bytes, TimeNs time_ns, double busbw_factor) {
  LinkPoint p;
  p.bytes = bytes;
  p.time_ns = time_ns;
  p.algbw = bandwidth_of(bytes, time_ns).value;  // decimal GB/s = bytes per ns
  p.busbw = p.algbw * busbw_factor;
  return p;
}

void fit_link_curve(LinkCurve& curve) {
  std::vector<SizeTime> pts;
  for (const auto& p : curve.points)
    if (p.time_ns > 0) pts.push_back({p.bytes, static_cast<double>(p.time_ns)});
  curve.fit = pts.empty() ? PiecewiseAlphaBeta{} : fit_piecewise(std::move(pts));
}

std::string classify_peer_link(double large_message_gbps) {
  return large_message_gbps > kPcieMaxGbps ? "nvlink" : "pcie";
}

std::string link_curve_label(const LinkCurve& c) {
  if (!c.collective.empty()) return c.collective + " x" + std::to_string(c.ranks);
  const std::string dev = "gpu" + std::to_string(c.src);
  if (c.kind == kH2d) return "h2d " + dev;
  if (c.kind == kD2h) return "d2h " + dev;
  if (c.kind == kD2d) return "d2d " + dev;
  return "p2p " + dev + "->gpu" + std::to_string(c.dst);
}

void print_link_table(std::ostream& out, const LinkCurve& c) {
  const bool collective = !c.collective.empty();
  out << "#  " << link_curve_label(c) << " (" << c.kind << ")\n";
  out << "#" << pad_left("size", 14) << pad_left("count", 14) << pad_left("type", 7) << pad_left("time(us)", 12)
      << pad_left("algbw(GB/s)", 13) << pad_left("busbw(GB/s)", 13) << "\n";
  for (const auto& p : c.points) {
    // Collectives move floats (count = elements, as nccl-tests prints); copies move bytes.
    const Bytes count = collective ? p.bytes / 4 : p.bytes;
    out << " " << pad_left(std::to_string(p.bytes), 14) << pad_left(std::to_string(count), 14)
        << pad_left(collective ? "float" : "byte", 7) << pad_left(format_fixed(ns_to_us(p.time_ns), 2), 12)
        << pad_left(format_fixed(p.algbw, 2), 13) << pad_left(format_fixed(p.busbw, 2), 13) << "\n";
  }
  for (const auto& s : c.fit.segments) {
    out << "# fit " << s.min_bytes << ".." << s.max_bytes << " B: alpha " << format_fixed(s.alpha_ns / 1e3, 2)
        << " us, beta " << format_fixed(s.beta_gbps, 2) << " GB/s\n";
  }
}

void print_link_tables(std::ostream& out, const LinkProbeResult& r) {
  for (const auto& d : r.devices) {
    out << "# gpu" << d.index << ": " << d.name << " (" << d.kind << "), " << format_bytes(d.memory) << ", "
        << (d.pci_bus_id.empty() ? "bus ?" : d.pci_bus_id) << "\n";
  }
  if (r.nccl_version > 0)
    out << "# NCCL " << r.nccl_version / 10000 << "." << (r.nccl_version / 100) % 100 << "." << r.nccl_version % 100
        << "\n";
  for (const auto& n : r.notes) out << "# note: " << n << "\n";
  for (const auto& c : r.curves) {
    out << "\n";
    print_link_table(out, c);
  }
}

Profile link_probe_profile(const LinkProbeResult& r) {
  Profile p;
  p.created = utc_now_iso8601();
  p.backend = "cuda";
  p.source = CostSource::MeasuredGpu;
  if (!r.devices.empty()) p.device = to_profile_device_info(r.devices.front());
  p.links = r.curves;
  return p;
}

hardware::ClusterSpec cluster_spec_from_probe(const LinkProbeResult& r, const std::string& name) {
  using hardware::ClusterLink;
  using hardware::LinkKind;
  hardware::ClusterSpec spec;
  spec.name = name;
  spec.description = "measured by parasim profile links";
  spec.inter_node_fabric = "none";
  const auto n = static_cast<int>(r.devices.size());
  if (n == 0) throw InputError("cluster from link probe: no devices were probed");
  auto endpoint_of_device = [&](int i) { return static_cast<hardware::EndpointId>(i); };
  for (const auto& d : r.devices)
    spec.devices.push_back({"gpu" + std::to_string(d.index), d.kind, 0, d.memory});
  spec.endpoints.push_back({"cpu0", hardware::EndpointKind::Cpu, 0});
  const hardware::EndpointId cpu = n;

  for (int i = 0; i < n; ++i) {
    const int dev = r.devices[static_cast<std::size_t>(i)].index;
    const LinkCurve* h2d = find_curve(r, kH2d, dev, dev);
    const LinkCurve* d2h = find_curve(r, kD2h, dev, dev);
    if (h2d == nullptr || d2h == nullptr || h2d->fit.segments.empty() || d2h->fit.segments.empty())
      throw InputError("cluster from link probe: gpu" + std::to_string(dev) +
                       " has no h2d/d2h measurements (probe with host copies)");
    ClusterLink l;
    l.name = "pcie" + std::to_string(dev);
    l.kind = LinkKind::PCIe;
    l.a = endpoint_of_device(i);
    l.b = cpu;
    l.alpha = static_cast<TimeNs>(std::llround(0.5 * (small_message_alpha(*h2d) + small_message_alpha(*d2h))));
    l.bandwidth = GBps{std::min(large_message_beta(*h2d), large_message_beta(*d2h))};
    spec.links.push_back(l);
  }

  struct Pair {
    int i, j;
    double gbps;
    double alpha_ns;
    std::string kind;
  };
  std::vector<Pair> pairs;
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      const int a = r.devices[static_cast<std::size_t>(i)].index, b = r.devices[static_cast<std::size_t>(j)].index;
      const LinkCurve* ab = find_peer_curve(r, a, b);
      const LinkCurve* ba = find_peer_curve(r, b, a);
      if (ab == nullptr || ba == nullptr || ab->fit.segments.empty() || ba->fit.segments.empty()) continue;
      const double gbps = std::min(large_message_beta(*ab), large_message_beta(*ba));
      pairs.push_back({i, j, gbps, 0.5 * (small_message_alpha(*ab) + small_message_alpha(*ba)),
                       classify_peer_link(gbps)});
    }
  }
  const bool all_pairs = static_cast<int>(pairs.size()) == n * (n - 1) / 2;
  bool switched = n >= 3 && all_pairs;
  double lo = 1e300, hi = 0;
  for (const auto& p : pairs) {
    switched = switched && p.kind == "nvlink";
    lo = std::min(lo, p.gbps);
    hi = std::max(hi, p.gbps);
  }
  switched = switched && hi <= kNvSwitchUniformity * lo;
  if (switched) {
    std::vector<double> bw, alpha;
    for (const auto& p : pairs) {
      bw.push_back(p.gbps);
      alpha.push_back(p.alpha_ns);
    }
    spec.intra_node_fabric = "NVSwitch (inferred: uniform NVLink-class bandwidth between every GPU pair)";
    spec.endpoints.push_back({"nvswitch0", hardware::EndpointKind::NvSwitch, 0});
    const hardware::EndpointId sw = n + 1;
    for (int i = 0; i < n; ++i) {
      ClusterLink l;
      l.name = "nvswitch-gpu" + std::to_string(r.devices[static_cast<std::size_t>(i)].index);
      l.kind = LinkKind::NVSwitch;
      l.a = endpoint_of_device(i);
      l.b = sw;
      l.alpha = static_cast<TimeNs>(std::llround(median(alpha) / 2));  // a route crosses two of these
      l.bandwidth = GBps{median(bw)};
      spec.links.push_back(l);
    }
  } else {
    spec.intra_node_fabric = pairs.empty() ? "PCIe through the host" : "measured point-to-point links";
    for (const auto& p : pairs) {
      ClusterLink l;
      l.name = "p2p" + std::to_string(r.devices[static_cast<std::size_t>(p.i)].index) + "-" +
               std::to_string(r.devices[static_cast<std::size_t>(p.j)].index);
      l.kind = p.kind == "nvlink" ? LinkKind::NVLink : LinkKind::PCIe;
      l.a = endpoint_of_device(p.i);
      l.b = endpoint_of_device(p.j);
      l.alpha = static_cast<TimeNs>(std::llround(p.alpha_ns));
      l.bandwidth = GBps{p.gbps};
      spec.links.push_back(l);
    }
  }
  return spec;
}

}  // namespace parasim::profiler
