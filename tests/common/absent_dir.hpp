#pragma once
// A per-test output directory that does not exist yet, for commands that create their own (`collscope trace -o`).
#include <unistd.h>

#include <filesystem>
#include <string>

namespace collscope::testing {

// <tmp>/<prefix>-<pid>/<name>, removed if an earlier test left it, its parent created.
inline std::filesystem::path absent_dir(const std::string& prefix, const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(::getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir.parent_path());
  return dir;
}

}  // namespace collscope::testing
