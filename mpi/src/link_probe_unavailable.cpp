// Built without MPI: no ranks to probe.
#include "parasim/common/error.hpp"
#include "parasim/mpi/link_probe.hpp"

namespace parasim::mpi {

RankLinkProbe probe_rank_links(World&, const RankLinkProbeOptions&) {
  throw RuntimeError("parasim was built without MPI (-DPARASIM_MPI=OFF)");
}

}  // namespace parasim::mpi
