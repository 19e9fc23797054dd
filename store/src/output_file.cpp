#include <collscope/store/error.hpp>
#include <collscope/store/output_file.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <system_error>

namespace collscope::store {

void write_output_file(const std::string& path, const std::function<void(std::ostream&)>& write) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status target = fs::status(path, ec);  // follows links: /dev/stdout is a link to a descriptor
  if (fs::exists(target) && !fs::is_regular_file(target)) {
    if (fs::is_directory(target)) throw InputError(fmt::format("{}: is a directory", path));
    std::ofstream out(path, std::ios::binary);
    if (!out) throw InputError(fmt::format("{}: cannot write", path));
    write(out);
    out.flush();
    if (!out) throw InputError(fmt::format("{}: write failed", path));
    return;
  }
  // Through a link to a regular file, its target is replaced and the link stays.
  const std::string real = fs::is_symlink(fs::symlink_status(path, ec)) ? fs::canonical(path, ec).string() : path;
  const std::string partial = (real.empty() ? path : real) + ".partial";
  try {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(fmt::format("{}: cannot write", path));
    write(out);
    out.close();
    if (!out) throw InputError(fmt::format("{}: write failed", path));
    fs::rename(partial, real.empty() ? path : real, ec);
    if (ec) throw InputError(fmt::format("{}: cannot put the written file in place: {}", path, ec.message()));
  } catch (...) {
    fs::remove(partial, ec);
    throw;
  }
}

}  // namespace collscope::store
