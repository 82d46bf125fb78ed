// Built without MPI (-DPARASIM_MPI=OFF): no world; a process started by mpirun says so.
#include <cstdlib>
#include <string>

#include "parasim/common/error.hpp"
#include "parasim/mpi/world.hpp"

namespace parasim::mpi {

struct World::Impl {};

namespace {
[[noreturn]] void unavailable() {
  throw RuntimeError(
      "parasim was built without MPI (-DPARASIM_MPI=OFF): rebuild with Open MPI (libopenmpi-dev) to run "
      "under mpirun or srun");
}
}  // namespace

bool built_with_mpi() { return false; }

World& World::init(int&, char**&, Timeouts) { unavailable(); }
World* World::current() { return nullptr; }
void World::finalize() {}
World::~World() = default;
int World::dead_rank() const { return -1; }
std::vector<std::string> World::hosts() const { unavailable(); }
std::vector<int> World::host_of_rank() const { unavailable(); }
std::string World::broadcast(std::string, int, std::string_view, std::chrono::milliseconds) { unavailable(); }
std::vector<std::string> World::allgather(const std::string&, std::string_view, std::chrono::milliseconds) {
  unavailable();
}
void World::barrier(std::string_view, std::chrono::milliseconds) { unavailable(); }
void World::abort(const std::string& message, int code) {
  (void)message;
  std::_Exit(code);
}

}  // namespace parasim::mpi
