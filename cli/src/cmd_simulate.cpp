#include "commands.hpp"

namespace parasim::cli {

void register_simulate(CLI::App& app) { (void)app; }

}  // namespace parasim::cli
