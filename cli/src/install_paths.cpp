// Finding the parts of collscope from the running executable. The relative paths from bin/ to the library,
// helper and data directories come from GNUInstallDirs at configure time (cli/CMakeLists.txt), so an installed
// tree works wherever it is unpacked; the build tree (bin/, lib/ under the build directory) is the fallback.
#include <collscope/store/error.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "commands.hpp"

namespace collscope::cli {
namespace fs = std::filesystem;

namespace {

std::optional<std::string> first_existing(std::initializer_list<fs::path> candidates) {
  for (const auto& p : candidates) {
    std::error_code ec;
    if (fs::exists(p, ec)) return fs::weakly_canonical(p, ec).string();
  }
  return std::nullopt;
}

// The file an environment variable names instead of the installed one ($COLLSCOPE_PRELOAD,
// $COLLSCOPE_NCCL_PROFILER): its absolute path, nullopt when unset or empty; InputError when it names no file.
std::optional<std::string> from_environment(const char* variable) {
  const char* env = std::getenv(variable);
  if (!env || !*env) return std::nullopt;
  if (!fs::exists(env)) throw InputError(fmt::format("{}: {} names no such file", env, variable));
  return fs::absolute(env).string();
}

}  // namespace

std::string self_dir() {
  std::error_code ec;
  auto exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

std::string find_preload() {
  if (auto p = from_environment("COLLSCOPE_PRELOAD")) return *p;
  const fs::path dir = self_dir();
  const char* name = "libcollscope-preload.so";
  if (auto p = first_existing({dir / COLLSCOPE_BIN_TO_LIB / name, dir / ".." / "lib" / name, dir / name})) return *p;
  throw InputError(fmt::format("{}: {} not found (looked beside collscope too; set COLLSCOPE_PRELOAD)",
                               (dir / COLLSCOPE_BIN_TO_LIB).lexically_normal().string(), name));
}

std::string find_nccl_profiler() {
  if (auto p = from_environment("COLLSCOPE_NCCL_PROFILER")) return *p;
  // Installed beside the preload (LIBDIR/collscope), and so is it in the build tree (lib/).
  const fs::path dir = fs::path(find_preload()).parent_path();
  const char* name = "libcollscope-nccl-profiler.so";
  if (auto p = first_existing({dir / name})) return *p;
  throw InputError(fmt::format("{}: {} not found beside the preload (set COLLSCOPE_NCCL_PROFILER)", dir.string(), name));
}

std::optional<std::string> find_program(const std::string& name) {
  const fs::path dir = self_dir();
  return first_existing({dir / COLLSCOPE_BIN_TO_LIBEXEC / name, dir / name});
}

std::optional<std::string> find_data(const std::string& relative) {
  const fs::path dir = self_dir();
  if (auto p = first_existing({dir / COLLSCOPE_BIN_TO_DATA / relative})) return p;
  // Running from the build tree: the source tree's copy.
  std::error_code ec;
  if (fs::equivalent(dir, COLLSCOPE_BUILD_BIN_DIR, ec)) return first_existing({fs::path(COLLSCOPE_SOURCE_DIR) / relative});
  return std::nullopt;
}

std::optional<std::string> find_python_annotation_dir() {
  const fs::path dir = self_dir();
  const char* file = "sitecustomize.py";
  std::optional<std::string> found = first_existing({dir / COLLSCOPE_BIN_TO_DATA / "python" / file});
  std::error_code ec;
  if (!found && fs::equivalent(dir, COLLSCOPE_BUILD_BIN_DIR, ec))
    found = first_existing({fs::path(COLLSCOPE_SOURCE_DIR) / "tracer" / "python" / file});
  if (!found) return std::nullopt;
  return fs::path(*found).parent_path().string();
}

}  // namespace collscope::cli
