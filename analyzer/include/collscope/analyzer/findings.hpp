#pragma once
// Findings: what slows the job, with evidence in numbers, the time it cost and what to change.
#include <collscope/analyzer/run_model.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collscope::predict {
struct ReplayModel;
}

namespace collscope::analyzer {

class LazyReplayModel;  // analyzer/src/lazy_replay_model.hpp

enum class FindingKind {
  Straggler,
  LatencyBound,
  LowBandwidth,
  ExposedCommunication,
  UnderfilledFusion,
  CycleTimeStall,
  ProcessSetImbalance,
  Mismatch,
  Stall,  // killed long after its last payload collective, its ranks still exchanging control messages
  PointToPointWait,  // ranks wait in point-to-point calls for one rank (late sender / late receiver)
  FrameworkSetting,  // a framework knob (DDP's, torch's threads) whose value in effect the trace shows costs time
  SlowSteps,  // a few steps many times the median one (a checkpoint, an evaluation), a real share of the step time
  CpuContention,  // the ranks' step threads wait runnable for a CPU a real share of each step
};
std::string_view finding_kind_name(FindingKind k);  // "straggler", "latency_bound", ...

enum class Severity { Info = 0, Warning = 1, Critical = 2 };
std::string_view severity_name(Severity s);

struct Finding {
  FindingKind kind = FindingKind::Straggler;
  Severity severity = Severity::Info;
  std::string title;                     // one line
  std::vector<int> ranks;                // world ranks concerned
  std::optional<std::uint64_t> comm_key; // communicator concerned
  std::string comm_name;
  std::optional<std::int64_t> seq;       // collective concerned (mismatch)
  std::map<std::string, double> evidence;  // numbers behind it (units in the key: "_ns", "_gbps", "_bytes", "_pct")
  std::string evidence_text;             // the same in a sentence
  double cost_ns = 0;                    // estimated time the job would save (wall clock)
  std::string suggestion;                // what to change
};

// Every threshold a detector decides by, with its unit, in one place; AnalysisOptions::thresholds overrides them
// (tests name them instead of repeating the numbers).
struct DetectorThresholds {
  // Straggler: one rank's lateness (run/lateness.hpp) in the median step must be this many times any other
  // rank's, and at least:
  double straggler_dominance = 3;
  // Of the median step. A rank on a busy shared host runs its phases a few % slower for whole runs (5-8 % seen on
  // 2 cores under load, 3.6 % in the plain Horovod fixture): that is not a straggler. 10 % still catches 30 ms
  // in steps up to 300 ms (the 15 % of earlier versions hid it from 200 ms on).
  double straggler_min_share = 0.10;
  double straggler_min_delay_ns = 200e3;
  double straggler_critical_share = 0.2;
  // Named only when it is the latest rank in so many of the measured steps that ranks late by chance (each
  // equally likely to be the latest in a step) would do so in at most this share of runs (one-sided sign test).
  // The same test, on the same figures, names a rank that point-to-point partners wait for.
  double straggler_false_positive_rate = 0.01;
  int straggler_min_steps_for_test = 5;
  // Where perf events count instructions retired (schema 1.8): a straggler late on a CPU retiring at least this
  // share more instructions than the median other rank in its own part of the step does more work; fewer, the
  // same work in more CPU time: a slower or shared CPU. Data-parallel ranks run the same code on equal batches
  // (run-to-run differences of a percent or two: branches, allocation, the MPI progress loop).
  double straggler_more_work_instructions = 0.05;
  // DDP buckets: named from this many buckets per step.
  double ddp_min_buckets_per_step = 8;  // fewer measured steps: no test (the run's lateness as a whole)      // of the step: critical from here
  // DDP's other knobs (ddp_knobs.cpp): find_unused_parameters from this many iterations DDP's reducer sampled;
  // torch threads when the training threads waited for a CPU this share of their traced time; accumulation when
  // the bucket allreduces backward does not hide are this share of the median step, sized to bring them down to
  // the target share of the time per micro-batch.
  int ddp_min_sampled_iterations = 2;
  double ddp_threads_min_run_queue_share = 0.10;
  double ddp_accumulate_min_exposed_share = 0.3;
  double ddp_accumulate_target_share = 0.1;
  double late_arrival_ns = 20e3;              // a rank "arrives last" only when later than this
  // Latency-bound: payload collectives in [control, fusable) bytes are what fusion would merge.
  std::int64_t control_message_bytes = 1 << 10;
  std::int64_t fusable_message_bytes = 1 << 20;
  double latency_bound_min_share = 0.5;       // of the time in payload collectives
  double latency_bound_critical_share = 0.8;
  double latency_bound_min_per_step = 16;     // small collectives per step
  double latency_bound_min_wall_share = 0.02;  // their time, of the run's (or its steps') wall time
  // Low bandwidth: sizes from this many bytes, with enough instances, below this fraction of the target.
  std::int64_t bandwidth_min_bytes = 64 << 10;
  int bandwidth_min_instances = 8;
  double bandwidth_low_fraction = 0.5;        // median below this × (link, or the size's own p95)
  double bandwidth_min_cost_share = 0.05;     // of all time in collectives
  double bandwidth_min_cost_ns = 1e6;
  // Exposed communication: share of the step.
  double exposed_min_share = 0.2;
  double exposed_warning_share = 0.4;
  // Horovod cycle time and fusion: buffer fill (of the threshold) and gaps between collectives.
  double stall_max_fill = 0.25;
  double stall_min_gap_share = 0.3;           // of the gaps fall within [0.3, 1.3] × the cycle time
  double stall_min_wall_share = 0.1;          // stalled time of the run's wall time
  double stall_critical_wall_share = 0.25;
  double underfilled_max_fill = 0.05;
  // Stalled job (killed, nothing in flight): no payload collective for at least this long, and this many times the
  // job's rhythm (its median step, else the spacing of its payload collectives).
  double stalled_min_quiet_ns = 5e9;
  double stalled_min_quiet_rhythms = 20;
  // Process sets: same work, this many times slower, costing this share of the wall time.
  double process_set_min_ratio = 1.5;
  double process_set_min_wall_share = 0.05;
  // Point-to-point wait states (run/wait_states.hpp): the ranks waiting for one rank, each for at least this
  // share of the median step (of the wall time without steps) and this long per step, this many times longer than
  // the typical wait for any other rank (the median over the others of the longest wait for each); critical from
  // the critical share.
  double p2p_wait_min_share = 0.10;
  double p2p_wait_min_ns = 200e3;
  double p2p_wait_dominance = 3;
  double p2p_wait_critical_share = 0.3;
  // Slow steps: from this many measured steps, steps whose span is at least this many times the median step span
  // and this much longer (a scheduler's hiccup on a busy host is a few ms), each adding at least this share of the
  // largest one's excess (pauses of one kind), at most this share of the steps, adding up to at least this share
  // of the measured steps' time (a warning from the second share).
  int slow_steps_min_steps = 20;
  double slow_steps_min_ratio = 3;
  double slow_steps_min_excess_ns = 20e6;
  // A loaded 2-core host (load 9) made plain steps 3.6x the median, 240 ms longer: a quarter of a 1 s pause.
  double slow_steps_min_share_of_largest = 0.25;
  double slow_steps_max_share_of_steps = 0.2;
  double slow_steps_min_time_share = 0.1;
  double slow_steps_warning_time_share = 0.25;
  // CPU contention: from this many measured steps, a rank's step thread waiting runnable for a CPU at least this
  // share of its step window (median over the steps; run/lateness.hpp), a warning from the second share.
  int contention_min_steps = 5;
  double contention_min_share = 0.15;
  double contention_warning_share = 0.3;
};

struct AnalysisOptions {
  double link_gbps = 0;          // expected bus bandwidth (GB/s); 0 = compare with the best seen only
  std::int64_t batch_size = 0;   // samples per rank per step; 0 = from the command line ("--batch-size N") if any
  int threads = 0;               // loader threads, 0 = one per core
  DetectorThresholds thresholds;
};

// What every detector reads: the run on its aligned clock, matched across ranks, with its steps.
struct DetectorInput {
  const Run& run;
  const ClockAlignment& clocks;
  const MatchedRun& matched;
  const StepSummary& steps;
  const Lateness& lateness;
  const AnalysisOptions& options;
  // The replay model of the run (collscope predict), which knob advice quotes for its predicted step: built the
  // first time a detector asks (most runs get no knob advice, and building it reads every step of every rank);
  // nullptr where no advice may quote it (a job without Horovod's knobs) or the run has no steps.
  const LazyReplayModel* replay_model = nullptr;
  const DetectorThresholds& limits() const { return options.thresholds; }
  const predict::ReplayModel* replay() const;
};

// Each detector looks at one thing (one file each in src/detectors/); detect_findings runs them all.
std::vector<Finding> detect_mismatches(const DetectorInput&);
std::vector<Finding> detect_stragglers(const DetectorInput&);
// When the latest rank is late by more than the straggler's size limits but not consistently enough to be named
// (the sign test and noise bound in straggler.cpp), the report's one line saying so, with the figures; else nullopt.
std::optional<std::string> straggler_within_noise(const DetectorInput&);
std::vector<Finding> detect_latency_bound(const DetectorInput&);
std::vector<Finding> detect_low_bandwidth(const DetectorInput&);
std::vector<Finding> detect_exposed_communication(const DetectorInput&);
std::vector<Finding> detect_fusion_and_cycle_time(const DetectorInput&);
std::vector<Finding> detect_process_set_imbalance(const DetectorInput&);
std::vector<Finding> detect_stall(const DetectorInput&);
std::vector<Finding> detect_point_to_point_waits(const DetectorInput&);
std::vector<Finding> detect_ddp_buckets(const DetectorInput&);
std::vector<Finding> detect_ddp_knobs(const DetectorInput&);
std::vector<Finding> detect_slow_steps(const DetectorInput&);
std::vector<Finding> detect_cpu_contention(const DetectorInput&);
// From the calls in flight when a hung job was killed (part of detect_mismatches; the autotuner asks it why a
// trial hung); step_evidence names the culprit of a deadlock cycle when the NVTX steps show one.
std::vector<Finding> detect_hangs(const Run&, const MatchedRun&, const std::vector<Mismatch>& step_evidence);

// All detectors, ordered by cost (mismatches first: they hang jobs).
std::vector<Finding> detect_findings(const DetectorInput&);

}  // namespace collscope::analyzer
