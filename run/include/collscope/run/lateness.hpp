#pragma once
// Who is late, who waits, and by how much: the one definition of each, per step and rank, used by the straggler
// finding, the per-rank table, the JSON report and the viewer (ns throughout).
//
//   lateness   of a rank in a step: how much later than the others it reaches the point where the ranks
//              synchronise.
//              - From collectives: at each synchronising collective it arrives at last, last arrival − second-last
//                arrival (what it alone held the others up), summed over the step's synchronising collectives.
//              - From phases: its phase lag in the step at its synchronisation point, the boundary where it is
//                furthest behind in the median step (0 when it is never behind).
//   wait       of a rank in a step: time it spends waiting for the others there.
//              - From collectives: at each synchronising collective, last arrival − own arrival, summed.
//              - From phases: the latest rank's lateness in the step − its own.
//   phase lag  of a rank at a phase boundary (the start or end of the step, or of an NVTX range every rank has
//              inside the step, by name): its aligned time there − the median of the other ranks' times.
//
//   Tracer flushes (schema 1.5: a job thread writing the tracer's full buffers out) inside a rank's step window are
//   taken off its lateness in that step: the tracer, not the job, held the others up for that long.
//
//   causes     of a rank's lateness (schema 1.4 traces, cpu_samples): over its own part of each step, how much
//              more time than the median other rank it spent on a CPU (more work, or a slower or shared CPU),
//              waiting runnable for a CPU (run queue: more busy threads than cores, another process), and off a
//              CPU without being runnable (sleeping, blocked on I/O or a lock, page faults). Its own part: from
//              phases, the step's start to the boundary where the latest rank is furthest behind; from
//              collectives, the gaps between its MPI calls on the thread that makes the synchronising ones (each
//              gap's part inside the step it ends in: an NVTX step begins just after the call before it ended).
//              Each is the median over the measured steps, ns. Where perf events count instructions retired
//              (schema 1.8), also its instructions there relative to the median other rank's.
//   run queue  of a rank in a step (absolute, not an excess): the time that same thread waited runnable for a CPU
//              inside the rank's whole step window.
//
// Which source: phases when the job marks steps and phases with NVTX (they show what the ranks do between
// collectives); else collectives, unless every rank makes all its collectives from one background thread
// (Horovod): then the ranks meet in lockstep whatever they compute, and lateness cannot be measured (`basis`
// says so).
#include <collscope/run/clock_alignment.hpp>
#include <collscope/run/matching.hpp>
#include <collscope/run/run.hpp>
#include <collscope/run/steps.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collscope::run {

enum class LatenessSource { None, Collectives, Phases };
std::string_view lateness_source_name(LatenessSource s);  // "none", "collectives", "phases"

// Where in the step a rank falls behind (phases only): between two consecutive phase boundaries.
struct LagSegment {
  std::string label;                // "in forward", "between forward and backward", "before forward"
  std::vector<double> lag_gain_ns;  // per rank index: median over steps of its lag at the segment's end − at its start
};

// Why a rank is late: its excess over the median other rank in each kind of time (see `causes` above), ns.
struct LatenessCauses {
  double on_cpu_ns = 0;
  double run_queue_ns = 0;
  double off_cpu_ns = 0;
  double own_ns = 0;  // the time these add up to on this rank (its own part of the step), median per step
  // Instructions it retired in its own part of the step over the median other rank's, less 1 (0.25: a quarter
  // more), the median over the steps; where every rank's samples count them (schema 1.8, perf events). The same
  // count in more CPU time is a slower or shared CPU; more is more work.
  std::optional<double> extra_instructions;
};

// A thread's run-queue delay inside its rank's measured step windows (Step::rank_start_ns, rank_duration_ns): the
// time it waited runnable for a CPU.
struct RunQueueWait {
  double per_step_ns = 0;   // the mean over the measured steps
  double share = 0;         // of the windows' total time, 0..1
  double median_share = 0;  // the median over the steps of each step's share, 0..1
};

struct Lateness {
  LatenessSource source = LatenessSource::None;
  std::string basis;  // one line: what the numbers rest on, or why lateness cannot be measured
  // [rank index][step]: the run's steps (measured or not); without steps, one entry for the whole run.
  std::vector<std::vector<double>> lateness_ns, wait_ns;
  // [rank index][step]: its largest lag at any phase boundary of the step, where lateness_ns reads it at the one
  // boundary where it is furthest behind in the median step: a pause one rank takes in a few steps, at another
  // place in them (a checkpoint before the step's first collective), shows here. From the collectives: the same.
  std::vector<std::vector<double>> peak_lateness_ns;
  int first_measured = 0;  // steps before it (warm-up) are left out of the medians
  // Per rank index: the median over measured steps, and the sum over all of them.
  std::vector<double> median_lateness_ns, median_wait_ns, total_lateness_ns, total_wait_ns;
  std::vector<LagSegment> segments;  // in step order (phases only)
  // Per rank index; empty when the trace has no CPU samples (before schema 1.4, COLLSCOPE_CPU_SAMPLE_US=0).
  std::vector<LatenessCauses> causes;
  // Per rank index, on the same thread as the causes (the one that marks its steps, or makes its synchronising
  // collectives). A steadily shared core shows in the median share; a loaded host that takes whole scheduler slices
  // from a few steps only in the total (real LAMMPS beside a spinner per core waited 85 % of its steps' time while
  // its median step waited nothing). The job-wide CPU contention finding reads them. Empty with `causes`, or
  // without steps.
  std::vector<RunQueueWait> step_thread_wait;
  // The same, per rank index, for the thread that makes most of its synchronising collectives where that is another
  // one (a background communication thread, as Horovod's and the fusion trainer's): the step thread waits blocked
  // (not runnable) while it communicates, so a contended core shows here. Only its wait beyond the step thread's
  // CPU time in the window counts: bound to one core with it, it waits while its own step thread computes, which
  // is not contention (the recorded fusion trainer alone: 39-52 % of that). Zeros where the step thread makes them.
  std::vector<RunQueueWait> comm_thread_wait;
  // Per rank index: the thread whose scheduler counters `causes` and `step_thread_wait` read (run/thread_counters.hpp),
  // for detectors that read the counters over other windows (the slow steps). Empty with `causes`.
  std::vector<std::int64_t> counters_thread;
  // How many measured steps each rank was the latest in, and the steps measured (the straggler's sign test).
  std::vector<int> steps_latest;
  int measured_steps = 0;
  // Per rank index: tracer flush time inside its step windows, summed over all steps, ns (taken off its lateness).
  std::vector<double> tracer_flush_ns;
  bool measurable() const { return source != LatenessSource::None; }
};

Lateness measure_lateness(const Run& run, const ClockAlignment& clocks, const MatchedRun& matched,
                          const StepSummary& steps);

// Intervals of aligned time, [rank index][bucket]: a rank's own part of each step, or its time outside MPI over a
// whole run of point-to-point exchanges (one bucket).
using OwnWindows = std::vector<std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>>;

// Why each rank is late, from the scheduler counters of its thread `thread[r]` over its windows: in each bucket,
// its time on a CPU, waiting for one and off one, less the median other rank's; then the median over the buckets
// from `first_bucket` on (the one definition of LatenessCauses). A bucket a rank's counters do not cover is left
// out for that rank.
std::vector<LatenessCauses> causes_over_windows(const Run& run, const ClockAlignment& clocks,
                                                const std::vector<std::int64_t>& thread, const OwnWindows& windows,
                                                std::size_t first_bucket);

// Puts the waits into the steps (Step::rank_wait_ns, Step::wait_ns, StepSummary::mean_wait_ns), so that the step
// table and the per-rank table say the same.
void apply_waits(const Lateness& lateness, StepSummary& steps);

}  // namespace collscope::run
