// The parts of the mpi component that need no launcher: what it reads from the environment, the
// graph hash, and that a process nobody launched has no world (so every command stays local).
#include <cstdlib>

#include <gtest/gtest.h>

#include "parasim/mpi/world.hpp"

namespace parasim::mpi {
namespace {

class Env {  // sets a variable for one test and restores it
 public:
  Env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~Env() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(Mpi, Fnv1aKnownValues) {
  // FNV-1a 64 reference values (offset basis; "a"; "foobar").
  EXPECT_EQ(fnv1a(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a("foobar"), 0x85944171f73967e8ull);
}

TEST(Mpi, LaunchedByAnyKnownLauncher) {
  Env a("OMPI_COMM_WORLD_SIZE", nullptr), b("PMIX_RANK", nullptr), c("PMI_RANK", nullptr);
  EXPECT_FALSE(launched_by_mpi());
  {
    Env ompi("OMPI_COMM_WORLD_SIZE", "4");
    EXPECT_TRUE(launched_by_mpi());
  }
  {
    Env pmix("PMIX_RANK", "0");  // srun --mpi=pmix
    EXPECT_TRUE(launched_by_mpi());
  }
  {
    Env pmi("PMI_RANK", "3");
    EXPECT_TRUE(launched_by_mpi());
  }
}

TEST(Mpi, LocalRankPrefersOpenMpiThenPmixThenSlurm) {
  Env a("OMPI_COMM_WORLD_LOCAL_RANK", nullptr), b("PMIX_LOCAL_RANK", nullptr), c("SLURM_LOCALID", nullptr);
  EXPECT_EQ(launcher_local_rank(), -1);
  Env slurm("SLURM_LOCALID", "5");
  EXPECT_EQ(launcher_local_rank(), 5);
  Env pmix("PMIX_LOCAL_RANK", "2");
  EXPECT_EQ(launcher_local_rank(), 2);
  Env ompi("OMPI_COMM_WORLD_LOCAL_RANK", "1");
  EXPECT_EQ(launcher_local_rank(), 1);
}

TEST(Mpi, NoWorldUnlessInitialised) {
  EXPECT_EQ(World::current(), nullptr);
  EXPECT_EQ(built_with_mpi(), PARASIM_HAVE_MPI == 1);
}

TEST(Mpi, AgreedErrorCarriesItsExitCode) {
  const AgreedError e("rank 1: differs", 2);
  EXPECT_STREQ(e.what(), "rank 1: differs");
  EXPECT_EQ(e.code(), 2);
}

}  // namespace
}  // namespace parasim::mpi
