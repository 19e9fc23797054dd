#pragma once
// What the job ran with for each knob collscope knows, and where each value came from: the one place that reads
// the recorded environment, command line and framework annotations for them. The loader (fusion buffer capacity),
// the analyzer's advice and the autotuner's Horovod strategy ask here instead of reading env or argv themselves.
#include <collscope/run/run.hpp>
#include <collscope/run/workload.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collscope::run {

// The environment variables through which Horovod (and the sample trainer, which mimics it) reads its knobs.
namespace horovod_env {
inline constexpr std::string_view kFusionThreshold = "HOROVOD_FUSION_THRESHOLD";  // bytes
inline constexpr std::string_view kCycleTime = "HOROVOD_CYCLE_TIME";              // milliseconds
}  // namespace horovod_env

// Where a knob's value came from, in the order they are consulted.
enum class SettingSource {
  Environment,       // meta "env.NAME": the job's environment
  CommandLine,       // "--name N" on the job's recorded command line
  Annotation,        // recorded by the Python annotation from the framework's own object (meta "ddp.bucket_cap_mb")
  FrameworkDefault,  // the job did not say: the framework's default for its version
};
std::string_view to_string(SettingSource source);

template <class T>
struct JobSetting {
  T value{};
  SettingSource source = SettingSource::FrameworkDefault;
  // Whether the job chose the value (advice must then say "now N", not "the default").
  bool set_by_job() const { return source != SettingSource::FrameworkDefault; }
};

// Horovod's tuning knobs as they were in effect. An unset knob is the default of the job's Horovod version, never
// "unknown": advice must not recommend the value already in effect.
struct HorovodSettings {
  JobSetting<std::int64_t> fusion_threshold_bytes{std::int64_t{128} << 20};  // HOROVOD_FUSION_THRESHOLD (bytes)
  JobSetting<double> cycle_time_ms{1.0};                                     // HOROVOD_CYCLE_TIME (milliseconds)
  // The defaults' origin for people: "the defaults of Horovod 0.28.1", or that the version is not recorded.
  std::string defaults_text;
};

// One host's torch ranks and the intra-op threads they compute with, against the CPUs they may run on.
struct TorchThreadsOnHost {
  std::string host;
  int ranks = 0;    // ranks that recorded torch.num_threads
  int threads = 0;  // the sum over them of torch.get_num_threads()
  int cpus = 0;     // the most CPUs any of them may run on (its affinity); 0: not recorded
};

// PyTorch DDP as the Python annotation recorded it from the DDP object of the first rank (meta "ddp.*", "torch.*").
struct DdpSettings {
  // The constructor's arguments in effect: DDP's own attributes after its __init__, so its defaults included.
  JobSetting<double> bucket_cap_mb{25.0};  // megabytes of 2^20 bytes (DDP multiplies by 1024 * 1024)
  std::optional<JobSetting<bool>> find_unused_parameters, gradient_as_bucket_view, static_graph;
  std::optional<JobSetting<int>> num_threads;  // torch.get_num_threads(): intra-op threads of the first rank
  std::vector<TorchThreadsOnHost> hosts;       // every rank's threads, per host (in order of first rank)
  // What DDP's reducer logged (torch >= 1.10; empty or nullopt before): its buckets' bytes in bucket-index order,
  // the order DDP launches their allreduces in (the rebuilt layout once it rebuilt it; the first bucket is capped at
  // 1 MiB, the others at bucket_cap_mb); the parameter bytes it found unused (only with find_unused_parameters);
  // and its means over the iterations it sampled (the first 10, then every 100th) of backward's compute, of the
  // bucket allreduces from the first launch to the last completion, and of the time the two overlap (ns).
  std::vector<std::int64_t> bucket_bytes;
  std::optional<std::int64_t> unused_parameter_bytes;
  int sampled_iterations = 0;
  std::optional<double> backward_compute_ns, backward_comm_ns, backward_overlap_ns;
  // The least over the ranks of backward_comm_ns - backward_overlap_ns (ns): the allreduce time backward's compute
  // did not hide on the rank that waited least for the others (a straggler's peers wait inside these allreduces).
  std::optional<double> least_exposed_comm_ns;
};

struct JobSettings {
  // Whether Horovod's knobs apply: a Horovod job, or one that sets them (the sample, which mimics Horovod).
  bool horovod_applies = false;
  HorovodSettings horovod;
  // A PyTorch DDP job's knobs; nullopt when no DDP object was recorded (meta ddp.bucket_cap_mb, > 0).
  std::optional<DdpSettings> ddp;
};

// The settings of a run whose workload the caller already described (describe_workload), or describes here.
JobSettings job_settings(const Run& run, const Workload& workload);
JobSettings job_settings(const Run& run);

// JobSettings::ddp alone, for a caller that needs no workload description (which scans the calls).
std::optional<DdpSettings> ddp_settings(const Run& run);

// A rank's own HOROVOD_FUSION_THRESHOLD (bytes) from its environment, for the loader, which sizes each rank's
// fusion buffers before the run exists; nullopt when unset or not a 64-bit number.
std::optional<std::int64_t> horovod_fusion_threshold_in_environment(const RankTrace& rank);

// The job's whole-number option "--NAME N" / "--NAME=N" from its recorded command line (first rank that has it; '-'
// and '_' in NAME match either). nullopt when absent or not a number that fits 64 bits: unknown, never an error.
std::optional<std::int64_t> command_line_int(const Run& run, const std::string& name);

}  // namespace collscope::run
