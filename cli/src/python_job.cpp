// Is the traced job Python? Then `collscope trace` puts collscope's sitecustomize (tracer/python) first on
// PYTHONPATH so that PyTorch training steps and their phases are annotated without a change to the job's code.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "commands.hpp"

namespace collscope::cli {
namespace fs = std::filesystem;

namespace {

std::string base_name(const std::string& arg) { return fs::path(arg).filename().string(); }

// python, python3, python3.11 (not pythonw, python3-config).
bool is_python_interpreter(const std::string& arg) {
  const std::string name = base_name(arg);
  if (!name.starts_with("python")) return false;
  for (char c : std::string_view(name).substr(6))
    if (!(c == '.' || (c >= '0' && c <= '9'))) return false;
  return true;
}

bool is_python_script(const std::string& arg) { return arg.size() > 3 && arg.ends_with(".py"); }

// The file `cmd` runs: as given when it holds a slash, else found on PATH.
std::optional<fs::path> resolve(const std::string& cmd) {
  std::error_code ec;
  if (cmd.find('/') != std::string::npos) return fs::is_regular_file(cmd, ec) ? std::optional<fs::path>(cmd) : std::nullopt;
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "";
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    const fs::path p = fs::path(std::string(rest.substr(0, colon))) / cmd;
    if (fs::is_regular_file(p, ec)) return p;
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
  }
  return std::nullopt;
}

// An executable script whose #! line names a Python interpreter (console entry points: `train --lr 1e-3`).
bool has_python_shebang(const std::string& cmd) {
  const auto file = resolve(cmd);
  if (!file) return false;
  std::ifstream in(*file, std::ios::binary);
  char head[128] = {};
  in.read(head, sizeof head - 1);
  const std::string_view line(head, static_cast<std::size_t>(in.gcount()));
  if (!line.starts_with("#!")) return false;
  const std::string_view first = line.substr(0, line.find('\n'));
  return first.find("python") != std::string_view::npos;
}

bool is_launcher(const std::string& name) {
  for (const char* l : {"mpirun", "mpiexec", "orterun", "mpirun.openmpi", "mpiexec.openmpi", "mpirun.mpich",
                        "mpiexec.mpich", "mpiexec.hydra", "srun", "horovodrun", "env"})
    if (name == l) return true;
  return false;
}

}  // namespace

bool is_python_job(const std::vector<std::string>& command) {
  if (command.empty()) return false;
  const std::string first = base_name(command.front());
  if (first == "torchrun") {
    // torchrun runs its script with Python unless told --no-python / --no_python.
    for (const auto& arg : command)
      if (arg == "--no-python" || arg == "--no_python") return false;
    return true;
  }
  if (is_launcher(first)) {
    // Launcher options are not parsed: any word naming a Python interpreter or script marks the program.
    for (std::size_t i = 1; i < command.size(); ++i)
      if (is_python_interpreter(command[i]) || is_python_script(command[i])) return true;
    return false;
  }
  return is_python_interpreter(command.front()) || is_python_script(command.front()) ||
         has_python_shebang(command.front());
}

}  // namespace collscope::cli
