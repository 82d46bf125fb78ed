// Data loading: the host input pipeline (PyTorch's DataLoader) that feeds a replica its samples.
// Off by default: parasim then assumes the next batch is always ready, and every output says
// "data loading: not modelled (off)". When on, the simulator gives each replica a loader resource
// (docs/strategies.md, "Data loading"):
//   workers = 0  the training process loads the step's samples itself before it issues the step
//                (num_workers=0): the step pays the whole load;
//   workers >= 1 worker processes prefetch while the step runs: the step pays max(0, load - step).
//
// Example:
//   DataLoading d = parse_data_loading("sample_ms=0.5,workers=8");  // InputError naming the option
//   TimeNs t = d.load_time(256);          // 256 x 0.5 ms / 8 workers = 16 ms
//   std::cout << "data loading: " << d.describe() << "\n";
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "parasim/common/units.hpp"

namespace parasim {

struct DataLoading {
  bool enabled = false;
  double sample_ms = 0;      // host time to load one sample on one worker (or the training process)
  double samples_per_s = 0;  // the same as given by throughput (per worker); 0 when given as sample_ms
  int workers = 0;           // 0: synchronous in the training process; >= 1: prefetching workers

  bool overlapped() const { return enabled && workers > 0; }
  /// samples x sample_ms / max(workers, 1), in ns; 0 when off.
  TimeNs load_time(std::int64_t samples) const;
  /// "not modelled (off)" or "0.5 ms per sample, 8 workers prefetching (overlaps the step)".
  std::string describe() const;
};

/// "off", or comma-separated keys: exactly one of sample_ms=MS (> 0) and samples_per_s=RATE (> 0,
/// per worker), and optionally workers=N (0 to 4096, default 0 as in PyTorch). InputError naming
/// `option` and what was expected otherwise.
DataLoading parse_data_loading(std::string_view spec, std::string_view option = "--data-loading");

/// {"modelled": false} or {"modelled": true, "sample_ms", "workers", "overlapped", ...}.
nlohmann::json data_loading_to_json(const DataLoading& d);

}  // namespace parasim
