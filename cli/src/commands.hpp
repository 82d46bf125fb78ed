// Each `parasim <command>` lives in its own cmd_<command>.cpp and registers itself here.
// A command's callback throws InputError for bad input (exit 2) and RuntimeError for
// failures while running (exit 1); main() maps them to exit codes and prints the message.
#pragma once

#include <CLI/CLI.hpp>

namespace parasim::cli {

void register_models(CLI::App& app);
void register_clusters(CLI::App& app);
void register_simulate(CLI::App& app);
void register_profile(CLI::App& app);
void register_plan(CLI::App& app);
void register_project(CLI::App& app);
void register_report(CLI::App& app);
void register_validate(CLI::App& app);
void register_calibrate(CLI::App& app);

}  // namespace parasim::cli
