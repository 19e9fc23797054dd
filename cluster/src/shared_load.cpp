// A run loaded by every process of the job: one plan from process 0, one share back from each process.
#include <collscope/cluster/shared_load.hpp>
#include <collscope/run/run_share.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/trace_reader.hpp>

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <optional>

namespace collscope::cluster {
namespace {

// Process 0's plan as bytes: "ok" then, per file, its process and path, each followed by '\0' (a path holds no
// '\0'); or "error" then the one-line reason, when the run cannot be listed.
std::string encode_plan(const std::vector<std::string>& paths, const std::vector<int>& owners) {
  std::string out = "ok";
  out += '\0';
  for (std::size_t i = 0; i < paths.size(); ++i) {
    out += std::to_string(owners[i]);
    out += '\0';
    out += paths[i];
    out += '\0';
  }
  return out;
}

struct Plan {
  std::string error;  // process 0 could not list the run: every process stops
  std::vector<std::string> paths;
  std::vector<int> owners;
};

Plan decode_plan(const std::string& bytes) {
  std::vector<std::string> fields;
  for (std::size_t at = 0; at < bytes.size();) {
    const auto end = bytes.find('\0', at);
    fields.push_back(bytes.substr(at, end == std::string::npos ? std::string::npos : end - at));
    at = end == std::string::npos ? bytes.size() : end + 1;
  }
  Plan plan;
  if (fields.empty() || fields[0] != "ok") {
    plan.error = fields.size() > 1 ? fields[1] : "process 0 could not share out the run";
    return plan;
  }
  for (std::size_t i = 1; i + 1 < fields.size(); i += 2) {
    plan.owners.push_back(std::stoi(fields[i]));
    plan.paths.push_back(fields[i + 1]);
  }
  return plan;
}

}  // namespace

std::vector<int> share_out_files(const std::vector<std::uintmax_t>& file_bytes, int processes) {
  std::vector<std::size_t> largest_first(file_bytes.size());
  std::iota(largest_first.begin(), largest_first.end(), std::size_t{0});
  std::stable_sort(largest_first.begin(), largest_first.end(),
                   [&](std::size_t a, std::size_t b) { return file_bytes[a] > file_bytes[b]; });
  std::vector<std::uintmax_t> load(static_cast<std::size_t>(std::max(processes, 1)), 0);
  std::vector<int> owner(file_bytes.size(), 0);
  for (const std::size_t f : largest_first) {
    const auto least = std::min_element(load.begin(), load.end()) - load.begin();
    owner[f] = static_cast<int>(least);
    load[static_cast<std::size_t>(least)] += std::max<std::uintmax_t>(file_bytes[f], 1);
  }
  return owner;
}

int loader_threads_per_process(int local_processes) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const int cpus = ::sched_getaffinity(0, sizeof allowed, &allowed) == 0 ? CPU_COUNT(&allowed) : 1;
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  const bool bound = online > 0 && cpus < online;  // a launcher's binding: these CPUs are this process's own
  return std::max(1, bound ? cpus : cpus / std::max(local_processes, 1));
}

SharedLoad load_run_shared(const std::string& run_dir, const run::LoadOptions& options, MpiProcesses& processes) {
  std::string plan_bytes;
  std::string listing_error;
  if (processes.rank() == 0) {
    try {
      const auto paths = store::rank_files(run_dir);
      std::vector<std::uintmax_t> bytes;
      for (const auto& p : paths) {
        std::error_code ec;
        const auto n = std::filesystem::file_size(p, ec);
        bytes.push_back(ec ? 0 : n);
      }
      plan_bytes = encode_plan(paths, share_out_files(bytes, processes.size()));
    } catch (const Error& e) {
      listing_error = e.what();
      plan_bytes = std::string("error") + '\0' + listing_error;
    }
  }
  const Plan plan = decode_plan(processes.broadcast(std::move(plan_bytes)));
  if (!plan.error.empty()) {
    if (processes.rank() == 0) throw InputError(listing_error);
    return {};
  }

  std::vector<std::size_t> mine;
  for (std::size_t f = 0; f < plan.owners.size(); ++f)
    if (plan.owners[f] == processes.rank()) mine.push_back(f);
  std::optional<run::RunShare> share;
  std::string failed;  // why this process could not load its share (out of memory): process 0 says so
  try {
    share = run::RunLoader(options).load_share(plan.paths, mine);
  } catch (const std::exception& e) {
    failed = fmt::format("{}: process {} could not load its share of the rank files ({})", run_dir, processes.rank(),
                         e.what());
  }
  if (processes.rank() != 0) {
    // 'S' and the share's tables, then each file on its own, its rows freed once sent; or 'E' and why not.
    if (!share) {
      processes.send_to_root("E" + failed);
      return {};
    }
    processes.send_to_root("S" + run::encode_share_tables(*share));
    for (auto& file : share->files) {
      processes.send_to_root(run::encode_loaded_file(file));
      file = {};
    }
    return {};
  }

  SharedLoad out;
  std::vector<run::RunShare> shares;
  out.files_per_process.push_back(share ? share->files.size() : 0);
  out.bytes_per_process.push_back(0);  // process 0's own share is never encoded
  if (share) shares.push_back(std::move(*share));
  // Every message of every process is received, even after one could not be read, so that no process is left
  // waiting to send; the first problem is thrown after. A file another process could not read (on a host that
  // does not see the run's directory, or with a relative path from another working directory), or a share it
  // could not load at all, process 0 reads itself: the run is then the one it would read alone.
  std::string problem = failed;  // process 0's own share, if it could not load it
  std::vector<std::size_t> read_again;
  for (int p = 1; p < processes.size(); ++p) {
    const std::string origin = fmt::format("process {}'s share of {}", p, run_dir);
    std::string bytes = processes.receive_from(p);
    std::size_t received = bytes.size();
    if (bytes.empty() || bytes[0] != 'S') {
      for (std::size_t f = 0; f < plan.owners.size(); ++f)
        if (plan.owners[f] == p) read_again.push_back(f);
      out.files_per_process.push_back(0);
      out.bytes_per_process.push_back(received);
      continue;
    }
    std::size_t files = 0;
    try {
      auto [tables, count] = run::decode_share_tables(std::string_view(bytes).substr(1), origin);
      shares.push_back(std::move(tables));
      files = count;
    } catch (const InputError& e) {
      if (problem.empty()) problem = e.what();
      continue;  // without the count, the rest of this process's messages cannot be told apart: MPI stops them
    }
    for (std::size_t k = 0; k < files; ++k) {
      bytes = processes.receive_from(p);
      received += bytes.size();
      try {
        auto file = run::decode_loaded_file(bytes, origin, shares.back());
        if (file.trace) shares.back().files.push_back(std::move(file));
        else read_again.push_back(file.index);
      } catch (const InputError& e) {
        if (problem.empty()) problem = e.what();
      }
    }
    out.files_per_process.push_back(shares.back().files.size());  // the files it read; the rest process 0 reads
    out.bytes_per_process.push_back(received);
  }
  if (!problem.empty()) throw InputError(problem);
  if (!read_again.empty()) {
    std::sort(read_again.begin(), read_again.end());
    shares.push_back(run::RunLoader(options).load_share(plan.paths, read_again));
    out.files_read_again = read_again.size();
  }
  out.run = run::RunLoader::assemble(run_dir, std::move(shares));
  return out;
}

}  // namespace collscope::cluster
