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
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}
}  // namespace

bool built_with_mpi() { return false; }
bool launched_by_mpi() {
  return !env("OMPI_COMM_WORLD_SIZE").empty() || !env("PMIX_RANK").empty() || !env("PMI_RANK").empty();
}
int launcher_local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "PMIX_LOCAL_RANK", "SLURM_LOCALID"}) {
    const std::string v = env(name);
    if (!v.empty()) return std::atoi(v.c_str());
  }
  return -1;
}
std::uint64_t fnv1a(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull;  // the FNV-1a 64 offset basis
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;  // the FNV 64 prime
  }
  return h;
}

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
