// parasim: project, plan and validate parallel DNN training before booking a cluster.
#include <cstdio>
#include <exception>
#include <iostream>
#include <new>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "parasim/common/allocator.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/progress.hpp"

int main(int argc, char** argv) {
  parasim::keep_freed_memory_for_reuse();
  CLI::App app{
      "parasim: how to split a DNN training job across GPUs, how long it will take, and proof.\n"
      "Exit codes: 0 ok, 1 runtime failure, 2 bad input."};
  app.name("parasim");
  app.require_subcommand(1);
  bool no_progress = false;
  app.add_flag("--no-progress", no_progress, "Never draw progress bars (they are off anyway when stderr is not a terminal)");
  app.set_version_flag("--version", "parasim 0.1.0");

  parasim::cli::register_models(app);
  parasim::cli::register_clusters(app);
  parasim::cli::register_simulate(app);
  parasim::cli::register_profile(app);
  parasim::cli::register_plan(app);
  parasim::cli::register_project(app);
  parasim::cli::register_report(app);
  parasim::cli::register_validate(app);
  parasim::cli::register_calibrate(app);
  // `parasim plan ... --no-progress` as well as `parasim --no-progress plan ...`: every command
  // (and every nested one, such as `profile links`) takes it.
  std::vector<CLI::App*> commands = app.get_subcommands([](CLI::App*) { return true; });
  for (std::size_t i = 0; i < commands.size(); ++i) {
    for (CLI::App* nested : commands[i]->get_subcommands([](CLI::App*) { return true; })) commands.push_back(nested);
    commands[i]->add_flag("--no-progress", no_progress, "Never draw progress bars (off anyway when stderr is not a terminal)");
  }

  app.parse_complete_callback([&] {
    if (no_progress) parasim::ProgressBar::set_global_enabled(false);
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return parasim::kExitBadInput;
  } catch (const parasim::InputError& e) {
    std::cerr << "parasim: error: " << e.what() << "\n";
    return parasim::kExitBadInput;
  } catch (const parasim::RuntimeError& e) {
    std::cerr << "parasim: runtime failure: " << e.what() << "\n";
    return parasim::kExitRuntime;
  } catch (const std::bad_alloc&) {
    std::cerr << "parasim: runtime failure: out of memory\n";
    return parasim::kExitRuntime;
  } catch (const std::exception& e) {
    std::cerr << "parasim: runtime failure: " << e.what() << "\n";
    return parasim::kExitRuntime;
  }
  return parasim::kExitOk;
}
