// Built without MPI: no runtime over MPI.
#include "parasim/common/error.hpp"
#include "parasim/mpi/mpi_runtime.hpp"

namespace parasim::mpi {

std::unique_ptr<executor::StreamRuntime> make_mpi_cpu_runtime(World&, executor::OpResolver, const MpiRuntimeOptions&) {
  throw RuntimeError("parasim was built without MPI (-DPARASIM_MPI=OFF)");
}

}  // namespace parasim::mpi
