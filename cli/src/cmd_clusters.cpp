#include "commands.hpp"

namespace parasim::cli {

void register_clusters(CLI::App& app) { (void)app; }

}  // namespace parasim::cli
