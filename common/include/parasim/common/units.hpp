// Unit-carrying types and the one set of conversions parasim uses everywhere.
//
//   TimeNs  integer nanoseconds (the simulator's clock; never floating point inside the engine)
//   Bytes   signed 64-bit byte counts (signed so that deltas such as frees are natural)
//   GBps    decimal gigabytes per second (1 GB/s = 1e9 B/s = 1 byte per ns), as nccl-tests reports
//
// Example:
//   using namespace parasim;
//   TimeNs t = transfer_time(alpha_ns(5'000), Bytes{64} * MiB, GBps{25.0});  // 5 us + 2'684'355 ns
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

namespace parasim {

using TimeNs = std::int64_t;
using Bytes = std::int64_t;

inline constexpr Bytes KiB = 1024;
inline constexpr Bytes MiB = 1024 * KiB;
inline constexpr Bytes GiB = 1024 * MiB;
inline constexpr Bytes KB = 1000;
inline constexpr Bytes MB = 1000 * KB;
inline constexpr Bytes GB = 1000 * MB;

inline constexpr TimeNs kNsPerUs = 1'000;
inline constexpr TimeNs kNsPerMs = 1'000'000;
inline constexpr TimeNs kNsPerS = 1'000'000'000;

/// Decimal gigabytes per second. Because 1 GB/s moves exactly one byte per nanosecond,
/// `bytes / gbps` is a duration in nanoseconds.
struct GBps {
  double value = 0.0;
  constexpr auto operator<=>(const GBps&) const = default;
};

/// Time to push `bytes` through a pipe of bandwidth `bw`, rounded to the nearest nanosecond.
/// A zero-byte payload takes zero time; a non-positive bandwidth is a caller bug (loaders reject it).
inline TimeNs serialization_time(Bytes bytes, GBps bw) {
  if (bytes <= 0) return 0;
  return static_cast<TimeNs>(std::llround(static_cast<double>(bytes) / bw.value));
}

/// alpha-beta cost of one message: latency plus serialization.
inline TimeNs transfer_time(TimeNs alpha, Bytes bytes, GBps bw) { return alpha + serialization_time(bytes, bw); }

/// Achieved bandwidth of `bytes` moved in `t` nanoseconds.
inline GBps bandwidth_of(Bytes bytes, TimeNs t) {
  return GBps{t > 0 ? static_cast<double>(bytes) / static_cast<double>(t) : 0.0};
}

inline double ns_to_ms(TimeNs t) { return static_cast<double>(t) / 1e6; }
inline double ns_to_us(TimeNs t) { return static_cast<double>(t) / 1e3; }
inline double ns_to_s(TimeNs t) { return static_cast<double>(t) / 1e9; }
inline TimeNs ms_to_ns(double ms) { return static_cast<TimeNs>(std::llround(ms * 1e6)); }
inline TimeNs us_to_ns(double us) { return static_cast<TimeNs>(std::llround(us * 1e3)); }
inline TimeNs s_to_ns(double s) { return static_cast<TimeNs>(std::llround(s * 1e9)); }

/// Human-readable duration: "812 ns", "12.40 us", "3.215 ms", "4.20 s" (below 2 minutes),
/// "48.3 min" (below an hour), "2.10 h", "3.40 d".
std::string format_time(TimeNs t);
/// Human-readable size with binary prefixes: "512 B", "1.50 KiB", "25.00 MiB", "16.00 GiB".
std::string format_bytes(Bytes b);
/// Count with SI suffix: "25.56 M", "4.09 G".
std::string format_count(double n);

}  // namespace parasim
