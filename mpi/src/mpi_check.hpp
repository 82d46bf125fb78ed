// PARASIM_MPI_CHECK: the checked-call macro for MPI, as kernels/cuda_check.hpp has one per
// vendor API. Errors are returned (MPI_ERRORS_RETURN on every communicator parasim uses), and a
// failing call throws RuntimeError "MPI call failed: MPI_Isend(...) at mpi_cpu_runtime.cpp:120:
// MPI_ERR_RANK: invalid rank (code 6)".
#pragma once

#include <mpi.h>

#include <string>

#include "parasim/kernels/cuda_check.hpp"

namespace parasim::mpi::detail {

/// "MPI_ERR_TRUNCATE: message truncated (code 15)".
inline std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  int error_class = code;
  MPI_Error_class(code, &error_class);
  return std::string(text, static_cast<std::size_t>(length)) + " (class " + std::to_string(error_class) + ", code " +
         std::to_string(code) + ")";
}

}  // namespace parasim::mpi::detail

#define PARASIM_MPI_CHECK(call)                                                                                   \
  do {                                                                                                            \
    const int parasim_mpi_status_ = (call);                                                                       \
    if (parasim_mpi_status_ != MPI_SUCCESS) {                                                                     \
      ::parasim::kernels::throw_vendor_call_failure("MPI", #call, __FILE__, __LINE__,                             \
                                                    ::parasim::mpi::detail::mpi_error_text(parasim_mpi_status_)); \
    }                                                                                                             \
  } while (0)
