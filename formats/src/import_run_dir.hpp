#pragma once
// The run directory an import writes: created when missing, and emptied of the rank files an earlier import or
// trace left in it (a smaller job imported over a larger one must not keep the larger one's extra ranks).
// Shared by every import.
#include <collscope/store/error.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <string>

namespace collscope::formats::detail {

inline void prepare_run_dir(const std::string& run_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  if (!fs::is_directory(run_dir, ec)) throw InputError(fmt::format("{}: cannot create the run directory", run_dir));
  for (const auto& entry : fs::directory_iterator(run_dir, ec)) {
    const auto name = entry.path().filename().string();
    if (name.starts_with("rank-") &&
        (name.ends_with(".sqlite") || name.ends_with(".sqlite-wal") || name.ends_with(".sqlite-shm")))
      fs::remove(entry.path(), ec);
  }
}

}  // namespace collscope::formats::detail
