#pragma once
// Errors at module boundaries: collscope uses exceptions, one type for all input/output problems.
// The message is one line that names the file (or object) and the problem, ready to print as is:
//   "run/rank-00001.sqlite: schema version 2.0 is newer than this collscope reads (1.x)"
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>

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

// Runs `work` on one input (a run directory, a study, a timeline) for a command line: whatever fails below without
// naming it (out of memory, an error from code that does not know the file) is rethrown naming it, so every error
// the CLI prints names its file. `doing` completes "out of memory while ...": "analysing this run".
template <typename Work>
auto naming_input(const std::string& input, std::string_view doing, Work&& work) -> decltype(work()) {
  try {
    return work();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw InputError(input + ": out of memory while " + std::string(doing));
  } catch (const std::exception& e) {
    throw Error(input + ": internal error while " + std::string(doing) + ": " + e.what());
  }
}

}  // namespace collscope
