#include <algorithm>
#include <charconv>

#include "parasim/common/error.hpp"
#include "parasim/reports/projection_source.hpp"

namespace parasim::reports {

namespace {

constexpr std::int64_t kMaxGpus = 1 << 20;

std::int64_t parse_count(std::string_view s, const std::string& origin, const std::string& text) {
  std::int64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || v < 1 || v > kMaxGpus)
    throw InputError(origin + ": \"" + text + "\": expected GPU counts from 1 to " + std::to_string(kMaxGpus) +
                     " as N, N,M,... or A-B (powers of two from A to B), found \"" + std::string(s) + "\"");
  return v;
}

}  // namespace

std::vector<std::int64_t> parse_gpu_range(const std::string& text, const std::string& origin) {
  std::vector<std::int64_t> out;
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const std::size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      out.push_back(parse_count(item, origin, text));
    } else {
      const std::int64_t a = parse_count(item.substr(0, dash), origin, text);
      const std::int64_t b = parse_count(item.substr(dash + 1), origin, text);
      if (b < a) throw InputError(origin + ": \"" + text + "\": range " + std::string(item) + " runs backwards");
      for (std::int64_t n = a; n <= b; n *= 2) out.push_back(n);
    }
    if (out.size() > 4096) throw InputError(origin + ": \"" + text + "\": more than 4096 GPU counts");
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace parasim::reports
