#include "parasim/common/units.hpp"

#include <cstdio>
#include <cstdlib>

namespace parasim {

namespace {
std::string printf_string(const char* fmt, double v, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v, unit);
  return buf;
}
}  // namespace

std::string format_time(TimeNs t) {
  const double a = std::abs(static_cast<double>(t));
  const double v = static_cast<double>(t);
  if (a < 1e3) return printf_string("%.0f %s", v, "ns");
  if (a < 1e6) return printf_string("%.2f %s", v / 1e3, "us");
  if (a < 1e9) return printf_string("%.3f %s", v / 1e6, "ms");
  if (a < 120e9) return printf_string("%.2f %s", v / 1e9, "s");
  if (a < 3600e9) return printf_string("%.1f %s", v / 60e9, "min");  // "48.3 min", not "2895.08 s"
  if (a < 86400e9 * 2) return printf_string("%.2f %s", v / 3600e9, "h");
  return printf_string("%.2f %s", v / 86400e9, "d");
}

std::string format_bytes(Bytes b) {
  const double a = std::abs(static_cast<double>(b));
  const double v = static_cast<double>(b);
  if (a < 1024.0) return printf_string("%.0f %s", v, "B");
  if (a < 1024.0 * 1024) return printf_string("%.2f %s", v / 1024.0, "KiB");
  if (a < 1024.0 * 1024 * 1024) return printf_string("%.2f %s", v / (1024.0 * 1024), "MiB");
  if (a < 1024.0 * 1024 * 1024 * 1024) return printf_string("%.2f %s", v / (1024.0 * 1024 * 1024), "GiB");
  return printf_string("%.2f %s", v / (1024.0 * 1024 * 1024 * 1024), "TiB");
}

std::string format_count(double n) {
  const double a = std::abs(n);
  if (a < 1e3) return printf_string("%.0f%s", n, "");
  if (a < 1e6) return printf_string("%.2f %s", n / 1e3, "K");
  if (a < 1e9) return printf_string("%.2f %s", n / 1e6, "M");
  if (a < 1e12) return printf_string("%.2f %s", n / 1e9, "G");
  return printf_string("%.2f %s", n / 1e12, "T");
}

}  // namespace parasim
