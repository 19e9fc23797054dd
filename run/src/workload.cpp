// What kind of job a run is: known benchmarks by their program name, communication from a background thread.
#include <collscope/run/workload.hpp>

#include <algorithm>
#include <array>
#include <set>
#include <string_view>

namespace collscope::run {

bool is_nonblocking(store::Op op) {
  const auto name = store::op_name(op);
  return name.starts_with('i') || name.ends_with("_init");
}

std::string benchmark_in_command(const Run& run) {
  // Program names of the common collective benchmarks: OSU micro-benchmarks (osu_allreduce, osu_bw, ...), Intel
  // MPI Benchmarks (IMB-MPI1, IMB-NBC), nccl-tests (all_reduce_perf, ...), mpiBench, SKaMPI, ReproMPI, HPCC, HPL.
  static constexpr std::array<std::string_view, 6> kPrefixes = {"osu_", "IMB-", "mpiBench", "skampi", "mpibenchmark", "reprompi"};
  // Whole names: the HPC Challenge suite (Debian's hpcc: HPL, PTRANS, RandomAccess, FFT, b_eff) and HPL alone.
  static constexpr std::array<std::string_view, 2> kNames = {"hpcc", "xhpl"};
  for (const auto& rank : run.ranks) {
    const auto cmd = rank.meta_value(std::string(store::meta_key::kCommandLine));
    if (!cmd) continue;
    // The program and its arguments, split at spaces; each word's last path component is a program name.
    std::size_t pos = 0;
    while (pos < cmd->size()) {
      const std::size_t end = std::min(cmd->find(' ', pos), cmd->size());
      std::string_view word(cmd->data() + pos, end - pos);
      pos = end + 1;
      if (const auto slash = word.rfind('/'); slash != std::string_view::npos) word.remove_prefix(slash + 1);
      for (auto prefix : kPrefixes)
        if (word.starts_with(prefix) && word.size() > prefix.size()) return std::string(word);
      for (auto name : kNames)
        if (word == name) return std::string(word);
      if (word.size() > 5 && word.ends_with("_perf") && word.find('_') < word.size() - 5) return std::string(word);
    }
  }
  return {};
}

bool collectives_from_background_thread(const Run& run) {
  bool any = false;
  for (const auto& rank : run.ranks) {
    if (rank.collectives.empty()) continue;
    const auto pid = rank.meta_int(std::string(store::meta_key::kPid));
    if (!pid) return false;  // which thread is the main one is unknown
    std::set<std::uint16_t> threads;
    for (const auto& c : rank.collectives) threads.insert(c.thread);
    if (threads.size() != 1) return false;
    const auto row = std::find_if(rank.threads.begin(), rank.threads.end(),
                                  [&](const store::ThreadRow& t) { return t.id == *threads.begin(); });
    if (row == rank.threads.end() || row->tid == *pid) return false;
    any = true;
  }
  return any;
}

Workload describe_workload(const Run& run) {
  Workload w;
  w.benchmark = benchmark_in_command(run);
  std::vector<bool> used(run.communicators.size(), false);
  bool control = false;
  for (const auto& rank : run.ranks) {
    for (const auto& c : rank.collectives) {
      used[c.comm] = true;
      control = control || is_control_reduction(c.reduction);
    }
    for (const auto& [key, value] : rank.meta)
      if (key.starts_with(std::string(store::meta_key::kEnvPrefix) + "HOROVOD_")) w.horovod = true;
    if (auto v = rank.meta_value("python.horovod_version"); v && w.horovod_version.empty()) w.horovod_version = *v;
    if (auto v = rank.meta_value("mpi_library_version"); v && w.mpi_library.empty()) w.mpi_library = *v;
    if (!rank.gpu_activities.empty()) w.compute_recorded = true;
    if (rank.meta_value("ddp.bucket_cap_mb")) w.fusion_buffers = true;
    for (const auto& b : rank.buffers)
      if (b.tensors_packed > 0) w.fusion_buffers = true;
  }
  if (!w.horovod_version.empty() || (control && collectives_from_background_thread(run))) w.horovod = true;
  if (w.horovod) w.fusion_buffers = true;
  for (std::size_t c = 0; c < run.communicators.size(); ++c) {
    if (!used[c]) continue;
    switch (run.communicators[c].backend) {
      case store::Backend::Nccl: w.nccl = true; break;
      case store::Backend::Mpi: w.mpi = true; break;
      case store::Backend::Gloo:
      case store::Backend::Torch: w.torch_distributed = true; break;
    }
  }
  return w;
}

}  // namespace collscope::run
