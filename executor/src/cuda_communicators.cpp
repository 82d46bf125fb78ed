// ncclCommInitAll for groups whose members all live in this process.
#include "cuda_communicators.hpp"

#include <string>

#include "parasim/common/error.hpp"
#include "parasim/kernels/cuda_check.hpp"

namespace parasim::executor::cuda_detail {

std::vector<ncclComm_t> SingleProcessCommunicators::create(std::span<const simulator::DeviceId> group) {
  std::vector<int> devices;
  for (simulator::DeviceId d : group) {
    if (!ranks_.is_local(d))
      throw RuntimeError("executor: device " + std::to_string(d) +
                         " lives in another process; multi-process runs need an MPI communicator factory");
    devices.push_back(ranks_.cuda_device[static_cast<std::size_t>(d)]);
  }
  std::vector<ncclComm_t> comms(devices.size(), nullptr);
  PARASIM_NCCL_CHECK(ncclCommInitAll(comms.data(), static_cast<int>(devices.size()), devices.data()));
  return comms;
}

}  // namespace parasim::executor::cuda_detail
