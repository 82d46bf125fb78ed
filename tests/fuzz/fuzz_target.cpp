// libFuzzer entry point, compiled once per loader with PARASIM_FUZZ_LOADER="<name>".
//
// Returning normally or throwing parasim::InputError is the only acceptable outcome. Anything
// else is reported (the exception text first) and turned into a crash so that libFuzzer saves
// the input; scripts/fuzz.sh then asks for it to be added under tests/fuzz/regressions/<name>/.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

#include "loader_targets.hpp"
#include "parasim/common/error.hpp"

#ifndef PARASIM_FUZZ_LOADER
#error "compile with -DPARASIM_FUZZ_LOADER=\"<loader name>\""
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const parasim::fuzz::LoaderTarget& target = parasim::fuzz::loader_target(PARASIM_FUZZ_LOADER);
  try {
    target.load(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const parasim::InputError&) {
    // The expected way to refuse bad input.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parasim fuzz [%s]: escaped exception: %s\n", PARASIM_FUZZ_LOADER, e.what());
    std::abort();
  }
  return 0;
}
