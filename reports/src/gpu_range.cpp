#include <algorithm>
#include <charconv>

#include "parasim/common/error.hpp"
#include "parasim/reports/projection_source.hpp"

namespace parasim::reports {

namespace {

constexpr std::int64_t kMaxGpus = 1 << 20;

std::int64_t parse_count(std::string_view s, const std::string& origin, std::string_view item) {
  std::int64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || v < 1 || v > kMaxGpus)
    throw InputError(origin + ": \"" + std::string(item) + "\": expected GPU counts like 8,16,32 or 8-1024 (powers " +
                     "of two) or 1-64x2, each between 1 and " + std::to_string(kMaxGpus));
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
      out.push_back(parse_count(item, origin, item));
    } else {
      const std::string_view tail = item.substr(dash + 1);
      const std::size_t x = tail.find('x');
      const std::int64_t lo = parse_count(item.substr(0, dash), origin, item);
      const std::int64_t hi = parse_count(tail.substr(0, x), origin, item);
      if (hi < lo) throw InputError(origin + ": \"" + std::string(item) + "\": the range ends before it starts");
      const std::size_t before = out.size();
      if (x != std::string_view::npos) {  // A-BxF: A, A*F, A*F^2, ... <= B
        const std::int64_t factor = parse_count(tail.substr(x + 1), origin, item);
        if (factor < 2) throw InputError(origin + ": \"" + std::string(item) + "\": the factor after x must be at least 2");
        for (std::int64_t n = lo; n <= hi; n *= factor) out.push_back(n);
      } else {  // A-B: the powers of two in [A, B]
        for (std::int64_t n = 1; n <= hi; n *= 2)
          if (n >= lo) out.push_back(n);
        if (out.size() == before)
          throw InputError(origin + ": \"" + std::string(item) + "\": no power of two in the range");
      }
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
