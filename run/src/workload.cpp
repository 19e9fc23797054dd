// What kind of job a run is: known benchmarks by their program name, communication from a background thread.
#include <collscope/run/workload.hpp>

#include <algorithm>
#include <array>
#include <set>
#include <string_view>

namespace collscope::run {

std::string benchmark_in_command(const Run& run) {
  // Program names of the common collective benchmarks: OSU micro-benchmarks (osu_allreduce, osu_bw, ...), Intel
  // MPI Benchmarks (IMB-MPI1, IMB-NBC), nccl-tests (all_reduce_perf, ...), mpiBench, SKaMPI, ReproMPI.
  static constexpr std::array<std::string_view, 6> kPrefixes = {"osu_", "IMB-", "mpiBench", "skampi", "mpibenchmark", "reprompi"};
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

}  // namespace collscope::run
