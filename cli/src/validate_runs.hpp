// `parasim validate --runs FILE`: recorded runs (published-runs/1) projected next to their measured
// step times, with median and max |error| over the runs parasim can express. Nothing is executed.
//
//   parasim validate --runs shared/data/published_runs.json [--calibration cal.json] [--json] [-o FILE]
#pragma once

#include <string>

namespace parasim::cli {

struct ValidateRunsArgs {
  std::string file;
  std::string calibration;  // empty: the default (uncalibrated) model
  std::string data_loading = "off";  // --data-loading
  bool json = false;
  std::string output;
};

void run_validate_runs(const ValidateRunsArgs& args);

}  // namespace parasim::cli
