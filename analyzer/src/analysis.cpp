// The pipeline from a run directory to findings.
#include <collscope/analyzer/analysis.hpp>
#include <collscope/run/job_settings.hpp>
#include <collscope/run/workload.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "lazy_replay_model.hpp"

namespace collscope::analyzer {
namespace {

std::vector<OpSizeStats> op_size_stats(const MatchedRun& m) {
  std::map<std::pair<int, int>, OpSizeStats> by_key;
  std::map<std::pair<int, int>, std::vector<double>> all_bw;
  for (const auto& i : m.instances) {
    if (i.ranks < 2 || i.op == store::Op::Barrier || i.bytes <= 0 || i.duration_ns <= 0 || run::is_nonblocking(i.op)) continue;
    const int log2b = static_cast<int>(std::log2(double(i.bytes)));
    auto& s = by_key[{static_cast<int>(i.op), log2b}];
    s.op = i.op;
    s.size_bucket_bytes = std::int64_t{1} << log2b;
    s.min_bytes = s.instances == 0 ? i.bytes : std::min(s.min_bytes, i.bytes);
    s.max_bytes = std::max(s.max_bytes, i.bytes);
    ++s.instances;
    s.total_duration_ns += double(i.duration_ns);
    all_bw[{static_cast<int>(i.op), log2b}].push_back(i.busbw_gbps());
  }
  std::vector<OpSizeStats> out;
  for (auto& [key, s] : by_key) {
    auto& bw = all_bw[key];
    std::sort(bw.begin(), bw.end());
    s.median_busbw_gbps = bw[bw.size() / 2];
    s.best_busbw_gbps = run::p95_of_sorted(bw);
    for (std::size_t k = 0; k < std::min<std::size_t>(256, bw.size()); ++k) s.busbw_samples.push_back(bw[k * bw.size() / std::min<std::size_t>(256, bw.size())]);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

RunResults analyze_matched(const Run& run, const ClockAlignment& clocks, const MatchedRun& matched,
                           const AnalysisOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  RunResults a;
  a.options = options;
  // "--batch-size 64" in the traced command line; a number too large to read is no batch size (no throughput).
  const std::int64_t batch = options.batch_size > 0 ? options.batch_size : run::command_line_int(run, "batch-size").value_or(0);
  a.steps = StepDetector({.batch_size = batch}).detect(run, clocks, matched);
  a.lateness = run::measure_lateness(run, clocks, matched, a.steps);
  run::apply_waits(a.lateness, a.steps);
  a.op_sizes = op_size_stats(matched);
  if (run.point_to_point_count() > 0)
    a.point_to_point = run::summarize_point_to_point(run, run::measure_point_to_point_waits(run, clocks));
  // The replay model, for the advice in Horovod's knobs to quote its predicted step (the one model of a step under
  // changed settings: docs/design.md, "Predict").
  const LazyReplayModel replay(run, clocks, matched, a.steps);
  const bool advice_may_quote = run::job_settings(run, run::describe_workload(run)).horovod_applies;
  a.findings =
      detect_findings({run, clocks, matched, a.steps, a.lateness, options, advice_may_quote ? &replay : nullptr});
  if (auto note = straggler_within_noise({run, clocks, matched, a.steps, a.lateness, options})) a.notes.push_back(*note);
  for (const auto& t : matched.truncations) {
    const auto& name = run.communicators[t.comm].shown_name();
    a.notes.push_back(fmt::format("rank {}'s trace lacks its last {} call(s) on {} (from seq {}) that the other ranks "
                                  "made: {}. Truncated, not a mismatch.",
                                  t.world_rank, t.missing, name.empty() ? fmt::format("comm {:#x}", t.comm_key) : name,
                                  t.from_seq, t.why));
  }
  a.wall_ns = matched.wall_ns;
  double comm = 0;
  for (const auto& r : run.ranks)
    for (std::size_t j = 0; j < r.collectives.size(); ++j)
      if (const auto spans = run::spans_in_mpi(r, j)) comm += double(spans->total_ns());  // time in MPI
  a.comm_ns = run.ranks.empty() ? 0 : comm / double(run.ranks.size());
  a.analysis_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return a;
}

Analysis analyze(Run run, const AnalysisOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  Analysis a;
  a.run = std::move(run);
  a.clocks = ClockAligner().align(a.run);
  a.matched = CollectiveMatcher().match(a.run, a.clocks);
  static_cast<RunResults&>(a) = analyze_matched(a.run, a.clocks, a.matched, options);
  a.analysis_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return a;
}

Analysis analyze_run(const std::string& run_dir, const AnalysisOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  LoadOptions lo;
  lo.threads = options.threads;
  Analysis a = analyze(load_run(run_dir, lo), options);
  a.analysis_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return a;
}

}  // namespace collscope::analyzer
