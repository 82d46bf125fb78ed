#include "commands.hpp"

namespace parasim::cli {

void register_models(CLI::App& app) { (void)app; }

}  // namespace parasim::cli
