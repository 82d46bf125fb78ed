// parasim: project, plan and validate parallel DNN training before booking a cluster.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <new>
#include <streambuf>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "parasim/common/allocator.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/interrupt.hpp"
#include "parasim/common/progress.hpp"
#include "parasim/mpi/world.hpp"

namespace {

/// Where ranks other than 0 print (a buffer, not nullptr: OutputFile swaps std::cout's buffer).
class DiscardBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return c; }
};

// Under mpirun / srun with several ranks: only these commands know how to share their work.
constexpr const char* kRankAwareCommands[] = {"validate", "plan", "project"};

/// Ends the MPI job on the way out: an error every rank agreed on ends normally (MPI_Finalize)
/// with its exit code; any other error of one rank ends every rank (MPI_Abort), since the
/// others would wait for it.
int finish(int code, const std::string& error, bool agreed) {
  parasim::mpi::World* world = parasim::mpi::World::current();
  if (world == nullptr) return code;
  if (!error.empty() && !agreed && world->size() > 1)
    world->abort("this rank failed (above); ending every rank of the job", code);
  parasim::mpi::World::finalize();
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  parasim::keep_freed_memory_for_reuse();
  // Ctrl-C / SIGTERM set a flag that long loops and every file write check (interrupt.hpp).
  parasim::install_interrupt_handlers();
  if (parasim::mpi::launched_by_mpi()) {
    const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (!parasim::mpi::built_with_mpi()) {
      if (size != nullptr && std::atoi(size) > 1) {
        std::cerr << "parasim: error: started as one of " << size
                  << " MPI ranks, but this parasim was built without MPI "
                  << "(-DPARASIM_MPI=OFF); rebuild with libopenmpi-dev, or run it without mpirun\n";
        return parasim::kExitBadInput;
      }
    } else {
      try {
        parasim::mpi::World::init(argc, argv);
      } catch (const std::exception& e) {
        std::cerr << "parasim: runtime failure: " << e.what() << "\n";
        return parasim::kExitRuntime;
      }
    }
  }
  CLI::App app{
      "parasim: how to split a DNN training job across GPUs, how long it will take, and proof.\n"
      "Exit codes: 0 ok, 1 runtime failure, 2 bad input."};
  app.name("parasim");
  app.require_subcommand(1);
  bool no_progress = false;
  app.add_flag("--no-progress", no_progress,
               "Never draw progress bars (they are off anyway when stderr is not a terminal)");
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
    commands[i]->add_flag("--no-progress", no_progress,
                          "Never draw progress bars (off anyway when stderr is not a terminal)");
  }

  app.parse_complete_callback([&] {
    if (no_progress) parasim::ProgressBar::set_global_enabled(false);
    const parasim::mpi::World* world = parasim::mpi::World::current();
    if (world == nullptr || world->size() == 1) return;
    if (!world->root()) {
      // Rank 0 prints the command's output; the others computed shares of it.
      parasim::ProgressBar::set_global_enabled(false);
      // Never destroyed: std::cout is flushed after every static is gone, through this buffer.
      static auto* const discard = new DiscardBuffer;
      std::cout.rdbuf(discard);
    }
    for (const char* name : kRankAwareCommands)
      if (app.got_subcommand(name)) return;
    throw parasim::mpi::AgreedError("only validate, plan and project run on several MPI ranks; run " +
                                        app.get_subcommands().front()->get_name() + " without mpirun",
                                    parasim::kExitBadInput);
  });
  // Parse errors are the same on every rank (same command line), so they count as agreed.
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return finish(app.exit(e), "", true);
  } catch (const CLI::CallForAllHelp& e) {
    return finish(app.exit(e), "", true);
  } catch (const CLI::CallForVersion& e) {
    return finish(app.exit(e), "", true);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return finish(parasim::kExitBadInput, "", true);
  } catch (const parasim::Interrupted&) {
    std::cerr << "\nparasim: interrupted\n";
    return finish(parasim::kExitInterrupted, "interrupted", false);
  } catch (const parasim::mpi::AgreedError& e) {
    // One write: every rank prints it at about the same time.
    std::cerr << std::string("parasim: ") + (e.code() == parasim::kExitBadInput ? "error: " : "runtime failure: ") +
                     e.what() + "\n";
    return finish(e.code(), "", true);
  } catch (const parasim::InputError& e) {
    std::cerr << "parasim: error: " << e.what() << "\n";
    return finish(parasim::kExitBadInput, std::string("error: ") + e.what(), false);
  } catch (const parasim::RuntimeError& e) {
    std::cerr << "parasim: runtime failure: " << e.what() << "\n";
    return finish(parasim::kExitRuntime, std::string("runtime failure: ") + e.what(), false);
  } catch (const std::bad_alloc&) {
    std::cerr << "parasim: runtime failure: out of memory\n";
    return finish(parasim::kExitRuntime, "runtime failure: out of memory", false);
  } catch (const std::exception& e) {
    std::cerr << "parasim: runtime failure: " << e.what() << "\n";
    return finish(parasim::kExitRuntime, std::string("runtime failure: ") + e.what(), false);
  }
  if (parasim::interrupted()) {  // stopped after its last check: whatever it wrote is complete
    std::cerr << "\nparasim: interrupted\n";
    return finish(parasim::kExitInterrupted, "interrupted", false);
  }
  return finish(parasim::kExitOk, "", true);
}
