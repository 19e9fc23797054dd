#pragma once
// Errors at module boundaries: collscope uses exceptions, one type for all input/output problems.
// The message is one line that names the file (or object) and the problem, ready to print as is:
//   "run/rank-00001.sqlite: schema version 2.0 is newer than this collscope reads (1.x)"
#include <stdexcept>
#include <string>

namespace collscope {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input from the user (a file, a flag, a search space): the CLI exits 2.
class InputError : public Error {
 public:
  using Error::Error;
};

}  // namespace collscope
