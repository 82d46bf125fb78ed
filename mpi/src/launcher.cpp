// What a process learns from its launcher's environment, and the hash ranks compare: the same with
// and without MPI built in (-DPARASIM_MPI=OFF still recognises a process started by mpirun).
#include <cstdlib>
#include <string>

#include "parasim/mpi/world.hpp"

namespace parasim::mpi {

namespace {
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}
}  // namespace

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

}  // namespace parasim::mpi
