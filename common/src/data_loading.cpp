#include "parasim/common/data_loading.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

#include "parasim/common/error.hpp"

namespace parasim {

namespace {

[[noreturn]] void bad(std::string_view option, std::string_view spec, const std::string& why) {
  throw InputError(std::string(option) + ": expected off or sample_ms=MS|samples_per_s=RATE[,workers=N], found \"" +
                   std::string(spec) + "\" (" + why + ")");
}

double positive_number(std::string_view option, std::string_view spec, std::string_view key, std::string_view v) {
  double x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc{} || end != v.data() + v.size() || !std::isfinite(x) || x <= 0)
    bad(option, spec, std::string(key) + " must be a number > 0, found \"" + std::string(v) + "\"");
  return x;
}

}  // namespace

TimeNs DataLoading::load_time(std::int64_t samples) const {
  if (!enabled) return 0;
  return static_cast<TimeNs>(
      std::llround(static_cast<double>(samples) * sample_ms * 1e6 / static_cast<double>(std::max(workers, 1))));
}

std::string DataLoading::describe() const {
  if (!enabled) return "not modelled (off)";
  char buf[160];
  if (samples_per_s > 0) std::snprintf(buf, sizeof buf, "%g samples/s per worker", samples_per_s);
  else std::snprintf(buf, sizeof buf, "%g ms per sample", sample_ms);
  std::string s = buf;
  if (workers == 0) return s + ", in the training process (num_workers=0: the step pays the whole load)";
  return s + ", " + std::to_string(workers) + (workers == 1 ? " worker" : " workers") +
         " prefetching (the step pays max(0, load - step))";
}

DataLoading parse_data_loading(std::string_view spec, std::string_view option) {
  DataLoading d;
  if (spec == "off") return d;
  bool have_workers = false;
  std::string_view rest = spec;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) bad(option, spec, "\"" + std::string(item) + "\" is not key=value");
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "sample_ms" || key == "samples_per_s") {
      if (d.sample_ms > 0) bad(option, spec, "give one of sample_ms and samples_per_s, once");
      const double x = positive_number(option, spec, key, value);
      if (key == "sample_ms") {
        d.sample_ms = x;
      } else {
        d.samples_per_s = x;
        d.sample_ms = 1e3 / x;
      }
    } else if (key == "workers") {
      int n = -1;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (have_workers || ec != std::errc{} || end != value.data() + value.size() || n < 0 || n > 4096)
        bad(option, spec,
            "workers must be given once, an integer from 0 to 4096, found \"" + std::string(value) + "\"");
      d.workers = n;
      have_workers = true;
    } else {
      bad(option, spec, "unknown key \"" + std::string(key) + "\"");
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  if (d.sample_ms <= 0) bad(option, spec, "sample_ms or samples_per_s is required");
  d.enabled = true;
  return d;
}

nlohmann::json data_loading_to_json(const DataLoading& d) {
  if (!d.enabled) return {{"modelled", false}, {"description", d.describe()}};
  nlohmann::json j{{"modelled", true},
                   {"sample_ms", d.sample_ms},
                   {"workers", d.workers},
                   {"overlapped", d.overlapped()},
                   {"description", d.describe()}};
  if (d.samples_per_s > 0) j["samples_per_s_per_worker"] = d.samples_per_s;
  return j;
}

}  // namespace parasim
