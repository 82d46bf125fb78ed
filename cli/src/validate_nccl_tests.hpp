// `parasim validate --nccl-tests FILE`: published nccl-tests curves (parasim.nccl_tests/1) next to
// the bus bandwidth parasim's NCCL cost model gives on the matching preset. Nothing is executed.
//
//   parasim validate --nccl-tests validation/data/nccl_tests_published.json [--json] [-o FILE]
#pragma once

#include <string>

namespace parasim::cli {

struct ValidateNcclTestsArgs {
  std::string file;
  bool json = false;
  std::string output;
};

void run_validate_nccl_tests(const ValidateNcclTestsArgs& args);

}  // namespace parasim::cli
