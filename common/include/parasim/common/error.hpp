// The two kinds of failure the CLI distinguishes.
//
//   InputError   -> exit code 2: the user's input (a file, a flag, a name) is wrong. The message
//                   names the file, the field (JSON path or line) and what was expected.
//   RuntimeError -> exit code 1: the input was fine but something failed while running
//                   (a device error, a kernel that could not be created, an I/O failure).
#pragma once

#include <stdexcept>
#include <string>

namespace parasim {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntime = 1;
inline constexpr int kExitBadInput = 2;

}  // namespace parasim
