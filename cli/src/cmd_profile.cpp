#include "commands.hpp"

namespace parasim::cli {

void register_profile(CLI::App& app) { (void)app; }

}  // namespace parasim::cli
