// CPU contention: the ranks' step threads, or the threads they wait for while they communicate, wait runnable for
// a CPU a real share of their steps' time (other processes on the node, more busy threads than cores, ranks bound
// to shared cores). A cause of slow steps that no knob of the job's communication fixes, and that a straggler
// finding sees only when one rank waits more than the others.
#include "detector_support.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace collscope::analyzer {

namespace {

// A rank's thread that waits most for a CPU in its steps: its step thread, or its communication thread (a background
// thread making its collectives, which the step thread waits for blocked: on a contended core the waiting shows
// there, as beside 3 spinners on its core with collectives 91 % of the step: step thread 2 %, that one far more).
struct WaitingThread {
  double share = 0;         // of the step windows' total time (0..1)
  double median_share = 0;  // the median over the steps of each step's share
  double per_step_ns = 0;   // the mean over the measured steps
  bool comm = false;        // the communication thread
  // Steadily (the median step) past the minimum share, or in all past the warning share: a loaded host that takes
  // whole scheduler slices from a few steps leaves the median step untouched (real LAMMPS beside a spinner per core:
  // 85 % of its steps' time waiting, median 0), while a rank bound with its own fusion thread to a core of its own
  // waited up to 13 % in all (the recorded run alone), under both.
  bool waits(const DetectorThresholds& limits) const {
    return median_share >= limits.contention_min_share || share >= limits.contention_warning_share;
  }
};

WaitingThread waiting_thread(const Lateness& late, std::size_t r, const DetectorThresholds& limits) {
  const RunQueueWait& step = late.step_thread_wait[r];
  WaitingThread w{step.share, step.median_share, step.per_step_ns, false};
  if (r < late.comm_thread_wait.size()) {
    const RunQueueWait& comm = late.comm_thread_wait[r];
    const WaitingThread c{comm.share, comm.median_share, comm.per_step_ns, true};
    if ((c.waits(limits) && !w.waits(limits)) || (c.waits(limits) == w.waits(limits) && c.share > w.share)) w = c;
  }
  return w;
}

}  // namespace

std::vector<Finding> detect_cpu_contention(const DetectorInput& in) {
  const Lateness& late = in.lateness;
  const StepSummary& steps = in.steps;
  const DetectorThresholds& limits = in.limits();
  std::vector<Finding> out;
  const std::size_t nranks = late.step_thread_wait.size();
  if (nranks == 0 || nranks != in.run.ranks.size() || steps.measured_steps() < limits.contention_min_steps ||
      !(steps.median_step_ns > 0))
    return out;
  std::vector<WaitingThread> threads;
  for (std::size_t r = 0; r < nranks; ++r) threads.push_back(waiting_thread(late, r, limits));
  // The ranks whose step thread or communication thread waits (WaitingThread::waits), most waiting first.
  std::vector<std::size_t> waiting;
  for (std::size_t r = 0; r < nranks; ++r)
    if (threads[r].waits(limits)) waiting.push_back(r);
  if (waiting.empty()) return out;
  std::stable_sort(waiting.begin(), waiting.end(),
                   [&](std::size_t a, std::size_t b) { return threads[a].share > threads[b].share; });
  const std::size_t most = waiting.front();
  const double top_share = threads[most].share;
  const bool any_comm = std::any_of(waiting.begin(), waiting.end(), [&](std::size_t r) { return threads[r].comm; });
  Finding f;
  f.kind = FindingKind::CpuContention;
  f.severity = top_share >= limits.contention_warning_share ? Severity::Warning : Severity::Info;
  for (std::size_t r : waiting) f.ranks.push_back(in.run.ranks[r].world_rank);
  std::string shares;
  const std::size_t named = std::min<std::size_t>(waiting.size(), 4);
  for (std::size_t i = 0; i < named; ++i)
    shares += fmt::format("{}rank {} {:.0f} %{}", i ? ", " : "", in.run.ranks[waiting[i]].world_rank,
                          100 * threads[waiting[i]].share, threads[waiting[i]].comm ? " (communication thread)" : "");
  if (waiting.size() > named) shares += fmt::format(" and {} more ranks", waiting.size() - named);
  const std::string who = any_comm
                              ? (waiting.size() == 1 ? "A rank's threads wait" : "The ranks' threads wait")
                              : (waiting.size() == 1 ? "A rank's step thread waits" : "The ranks' step threads wait");
  f.title = fmt::format("{} for a CPU inside {} steps: {} of {} steps' time", who,
                        waiting.size() == 1 ? "its" : "their", shares, waiting.size() == 1 ? "its" : "their");
  // The cost: the most any rank's thread waited for a CPU inside the measured steps, in all (its mean per step times
  // the steps). The ranks meet every step, and a step thread waits for its communication thread, so the steps are at
  // least that much longer than they would be with the CPU to themselves; docs/analyzer.md gives its error against
  // runs without the competing load.
  const double per_step = threads[most].per_step_ns;
  f.cost_ns = per_step * double(steps.measured_steps());
  f.evidence = {{"run_queue_per_step_ns", per_step},
                {"run_queue_share_pct", 100 * top_share},
                {"step_time_ns", steps.median_step_ns},
                {"waiting_ranks", double(waiting.size())},
                {"measured_steps", double(steps.measured_steps())}};
  for (std::size_t r = 0; r < nranks; ++r) {
    const int world = in.run.ranks[r].world_rank;
    f.evidence[fmt::format("rank_{}_run_queue_pct", world)] = 100 * late.step_thread_wait[r].share;
    if (r < late.comm_thread_wait.size() && late.comm_thread_wait[r].share > 0)
      f.evidence[fmt::format("rank_{}_comm_run_queue_pct", world)] = 100 * late.comm_thread_wait[r].share;
  }
  double least = 1, highest = 0;
  for (const auto& t : threads) least = std::min(least, t.share), highest = std::max(highest, t.share);
  f.evidence_text = fmt::format(
      "rank {}'s {} was runnable but waiting for a CPU (its scheduler counters, /proc/thread-self/schedstat) "
      "for {} per step on average, {:.0f} % of its steps' time (median step {}); over all {} ranks {:.0f}-{:.0f} % "
      "(the {} measured steps){}.",
      in.run.ranks[most].world_rank,
      threads[most].comm ? "thread that makes its collectives (not the one that runs its steps, which waits for it)"
                         : "thread that runs its steps",
      format_ms(per_step), 100 * top_share, format_ms(steps.median_step_ns), nranks, 100 * least, 100 * highest,
      steps.measured_steps(),
      any_comm ? "; for each rank the more waiting of its step thread and its communication thread" : "");
  f.suggestion =
      "More threads are ready to run than there are CPUs for them where these ranks run. Look for other processes "
      "on the node (top -H), compare each rank's busy threads with the cores it may use (OMP_NUM_THREADS, "
      "torch.set_num_threads, a communication thread that busy-polls), and check the binding (mpirun --bind-to "
      "core --report-bindings; srun --cpu-bind=cores): give every rank's busy threads cores of their own.";
  // Horovod's background thread negotiates inside MPI every cycle, polling: on real Horovod 0.28.1 on 2 busy cores
  // a 4.5-20 ms cycle gave 16-38 % shorter steps than the 1 ms default (docs/performance.md). Its knob, for a job
  // whose Horovod knobs apply, never at the value in effect.
  const auto settings = run::job_settings(in.run, run::describe_workload(in.run));
  if (settings.horovod_applies)
    f.suggestion += fmt::format(
        " Horovod's background thread negotiates inside MPI every cycle, polling a CPU: a HOROVOD_CYCLE_TIME longer "
        "than the {:g} ms in effect polls less often (`collscope predict RUN --set HOROVOD_CYCLE_TIME=...` estimates "
        "the step for a value).",
        settings.horovod.cycle_time_ms.value);
  out.push_back(std::move(f));
  return out;
}

}  // namespace collscope::analyzer
