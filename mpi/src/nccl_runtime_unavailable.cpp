// The NCCL-over-MPI runtime needs both MPI and CUDA; this build lacks one of them.
#include "parasim/common/error.hpp"
#include "parasim/mpi/mpi_runtime.hpp"
#include "probe_links.hpp"

namespace parasim::mpi {

bool nccl_runtime_built() { return false; }

std::unique_ptr<executor::StreamRuntime> make_mpi_nccl_runtime(World&, executor::OpResolver, const MpiRuntimeOptions&) {
  throw RuntimeError("--backend cuda under MPI: this parasim was built without CUDA or without MPI");
}

namespace detail {
std::unique_ptr<ProbeLinks> make_nccl_probe_links(World&, Bytes) {
  throw RuntimeError("the NCCL link probe: this parasim was built without CUDA or without MPI");
}
}  // namespace detail

}  // namespace parasim::mpi
