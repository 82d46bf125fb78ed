// BENCHMARK_MAIN() with the allocator settings of the parasim CLI (common/allocator.hpp), so that
// a benchmark measures the memory behaviour a user's command gets.
#include <benchmark/benchmark.h>

#include "parasim/common/allocator.hpp"

int main(int argc, char** argv) {
  parasim::keep_freed_memory_for_reuse();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
