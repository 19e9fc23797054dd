// fusion_trainer: a data-parallel training loop over MPI with Horovod-style tensor fusion and
// cycle time; the workload every collscope test traces. See ../README.md.
#include "collective_stats.hpp"
#include "compute.hpp"
#include "fusion_engine.hpp"
#include "model.hpp"
#include "options.hpp"

#include <mpi.h>

#ifndef COLLSCOPE_NO_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cmath>
#include <memory>
#include <numeric>
#include <span>
#include <thread>
#include <vector>

namespace collscope::sample {
namespace {

using Clock = std::chrono::steady_clock;

// --no-nvtx: the trainer marks nothing, as most real jobs (Python ones above all) do not.
bool g_nvtx_enabled = true;

// NVTX ranges (header-only NVTX 3: free without an injected tool; compiled out without headers).
class NvtxRange {
 public:
  explicit NvtxRange([[maybe_unused]] const char* name) {
#ifndef COLLSCOPE_NO_NVTX
    if (g_nvtx_enabled) nvtxRangePushA(name);
#endif
  }
  ~NvtxRange() {
#ifndef COLLSCOPE_NO_NVTX
    if (g_nvtx_enabled) nvtxRangePop();
#endif
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

double milliseconds_between(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double, std::milli>(end - start).count();
}

// Forward passes per layer are half the backward ones (backward computes two gradients per
// layer: inputs and weights), both proportional to the batch.
long forward_passes(const TrainerOptions& options) {
  return std::max(1L, std::lround(0.5 * options.batch_size * options.compute_scale));
}
long backward_passes(const TrainerOptions& options) {
  return std::max(1L, std::lround(1.0 * options.batch_size * options.compute_scale));
}

struct Model {
  std::vector<TensorSpec> specs;
  std::vector<std::vector<float>> parameters;
  std::vector<std::vector<float>> gradients;
  std::vector<float> activations;  // forward scratch, as large as the largest tensor
  std::size_t parameter_count = 0;
};

Model build_model(const TrainerOptions& options, int world_rank) {
  Model model;
  model.specs = resnet50_tensors(options.model_scale);
  std::size_t largest = 0;
  for (const TensorSpec& spec : model.specs) {
    std::vector<float> values(spec.elements, 0.0f);
    if (world_rank == 0) {
      // Deterministic small initial weights; the other ranks receive them by broadcast.
      for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = 1e-3f * static_cast<float>((i * 2654435761u) % 1000) - 0.5e-3f;
    }
    model.parameters.push_back(std::move(values));
    model.gradients.emplace_back(spec.elements, 0.0f);
    model.parameter_count += spec.elements;
    largest = std::max(largest, spec.elements);
  }
  model.activations.assign(largest, 0.0f);
  return model;
}

nlohmann::json process_set_members(MPI_Comm process_set_comm) {
  MPI_Group world_group, set_group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Comm_group(process_set_comm, &set_group);
  int size = 0;
  MPI_Group_size(set_group, &size);
  std::vector<int> set_ranks(static_cast<std::size_t>(size)), world_ranks(set_ranks.size());
  std::iota(set_ranks.begin(), set_ranks.end(), 0);
  MPI_Group_translate_ranks(set_group, size, set_ranks.data(), world_group, world_ranks.data());
  MPI_Group_free(&set_group);
  MPI_Group_free(&world_group);
  return world_ranks;
}

// mpirun binds each of 2 ranks to one core; a rank's compute thread and its background thread then
// share that core even while the other core idles. Undo it for this thread (the background
// thread, started later, inherits it).
void allow_all_cores() {
  cpu_set_t all_cores;
  CPU_ZERO(&all_cores);
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  for (long core = 0; core < cores && core < CPU_SETSIZE; ++core) CPU_SET(core, &all_cores);
  sched_setaffinity(0, sizeof(all_cores), &all_cores);  // failure only keeps the binding
}

// mpirun forwards each rank's stdout in chunks of about 1 KiB, so two report lines written at
// once can interleave mid-line. Rank 0 therefore prints every rank's line, in rank order, after
// receiving them point to point (not collectives: the reported counts stay exact).
void print_reports(int world_rank, int world_size, const std::string& own_line) {
  constexpr int kReportTag = 7301;
  if (world_rank != 0) {
    MPI_Send(own_line.data(), static_cast<int>(own_line.size()), MPI_CHAR, 0, kReportTag,
             MPI_COMM_WORLD);
    return;
  }
  std::fwrite(own_line.data(), 1, own_line.size(), stdout);
  for (int rank = 1; rank < world_size; ++rank) {
    MPI_Status status;
    MPI_Probe(rank, kReportTag, MPI_COMM_WORLD, &status);
    int length = 0;
    MPI_Get_count(&status, MPI_CHAR, &length);
    std::string line(static_cast<std::size_t>(length), '\0');
    MPI_Recv(line.data(), length, MPI_CHAR, rank, kReportTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    std::fwrite(line.data(), 1, line.size(), stdout);
  }
  std::fflush(stdout);
}

[[noreturn]] void sleep_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

int train(const TrainerOptions& options) {
  int world_rank = 0, world_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);

  CollectiveStats stats;
  CollectiveCaller caller(stats);

  MPI_Comm horovod_comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &horovod_comm);
  const int process_set_color = world_rank % options.process_sets;
  MPI_Comm process_set_comm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, process_set_color, world_rank, &process_set_comm);

  Model model = build_model(options, world_rank);
  caller.barrier(MPI_COMM_WORLD, CommunicatorRole::world);
  // Horovod's broadcast_parameters: one broadcast per tensor from rank 0.
  for (auto& values : model.parameters)
    caller.bcast(values.data(), static_cast<int>(values.size()), MPI_FLOAT, 0, MPI_COMM_WORLD,
                 CommunicatorRole::world);

  std::vector<std::span<float>> gradient_views(model.gradients.begin(), model.gradients.end());
  // Horovod writes its timeline on rank 0 only.
  std::unique_ptr<HorovodTimeline> timeline;
  TimelineConfig timeline_config;
  if (!options.timeline_path.empty()) {
    timeline_config.gather_readiness = true;
    if (world_rank == 0) {
      timeline = std::make_unique<HorovodTimeline>(options.timeline_path);
      timeline_config.writer = timeline.get();
      for (const auto& spec : model.specs) timeline_config.tensor_names.push_back(spec.name);
    }
  }
  FusionEngine engine(std::move(gradient_views),
                      {options.fusion_threshold_bytes, options.cycle_time_ms, options.op_overhead_us,
                       options.cycle_overhead_us}, horovod_comm,
                      caller, std::move(timeline_config));

  const long forward = forward_passes(options);
  const long backward = backward_passes(options);
  const float learning_rate = 1e-4f;
  const std::size_t layer_count = model.specs.size();
  std::vector<double> step_ms;
  Clock::time_point measured_start = Clock::now();
  volatile float checksum_sink = 0.0f;

  for (int step = 0; step < options.steps; ++step) {
    if (options.hang_after_step && step == *options.hang_after_step) sleep_forever();
    const auto step_start = Clock::now();
    if (step == options.warmup_steps) measured_start = step_start;
    {
      NvtxRange step_range("step");
      engine.begin_step();
      float loss = 0.0f;
      {
        NvtxRange range("forward");
        for (std::size_t layer = 0; layer < layer_count; ++layer)
          loss += layer_compute(model.activations.data(), model.parameters[layer].data(),
                                model.specs[layer].elements, forward);
      }
      if (options.slow_rank && *options.slow_rank == world_rank &&
          (options.slow_every <= 1 || (step > 0 && step % options.slow_every == 0))) {
        NvtxRange range("straggler_compute");
        busy_compute_for(options.slow_ms);
      }
      {
        NvtxRange range("backward");
        for (std::size_t layer = layer_count; layer-- > 0;) {
          checksum_sink = checksum_sink + layer_compute(model.gradients[layer].data(),
                                                        model.parameters[layer].data(),
                                                        model.specs[layer].elements, backward);
          engine.mark_ready(layer);
        }
        engine.wait_all_reduced();
      }
      {
        NvtxRange range("optimizer");
        for (std::size_t layer = 0; layer < layer_count; ++layer) {
          float* parameters = model.parameters[layer].data();
          const float* gradients = model.gradients[layer].data();
          for (std::size_t i = 0; i < model.specs[layer].elements; ++i)
            parameters[i] -= learning_rate * gradients[i];
        }
      }
      // Metric averaging: loss and a metric over the world, then a per-process-set metric.
      float metrics[2] = {std::abs(loss) / static_cast<float>(layer_count), 1.0f / (step + 1)};
      float averaged[2] = {0.0f, 0.0f};
      caller.iallreduce_wait(metrics, averaged, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                             CommunicatorRole::world);
      const bool skip_process_set = options.mismatch_rank && *options.mismatch_rank == world_rank &&
                                    step == options.mismatch_step;
      if (!skip_process_set) {
        float set_metric = averaged[0];
        caller.allreduce(MPI_IN_PLACE, &set_metric, 1, MPI_FLOAT, MPI_SUM, process_set_comm,
                         CommunicatorRole::process_set);
      }
    }
    step_ms.push_back(milliseconds_between(step_start, Clock::now()));
  }
  const auto measured_end = Clock::now();
  if (options.hang_after_step && *options.hang_after_step == options.steps) sleep_forever();

  engine.stop();
  caller.barrier(MPI_COMM_WORLD, CommunicatorRole::world);

  const int measured_steps = options.steps - options.warmup_steps;
  const double measured_seconds = milliseconds_between(measured_start, measured_end) / 1000.0;
  const double throughput =
      static_cast<double>(world_size) * options.batch_size * measured_steps / measured_seconds;
  const FusionCounters fusion = engine.counters();

  nlohmann::json report;
  report["rank"] = world_rank;
  report["world_size"] = world_size;
  report["steps"] = options.steps;
  report["warmup_steps"] = options.warmup_steps;
  report["batch_size"] = options.batch_size;
  report["fusion_threshold_bytes"] = options.fusion_threshold_bytes;
  report["cycle_time_ms"] = options.cycle_time_ms;
  report["op_overhead_us"] = options.op_overhead_us;
  report["cycle_overhead_us"] = options.cycle_overhead_us;
  report["model_scale"] = options.model_scale;
  report["tensors"] = layer_count;
  report["model_bytes"] = model.parameter_count * sizeof(float);
  report["throughput_samples_per_s"] = throughput;
  report["step_ms"] = step_ms;
  stats.write_json(report);
  report["fusion"] = {{"cycles", fusion.cycles},
                      {"fused_allreduces", fusion.fused_allreduces},
                      {"unfused_allreduces", fusion.unfused_allreduces},
                      {"gradient_bytes", fusion.gradient_bytes},
                      {"max_fusion_fill_bytes", fusion.max_fusion_fill_bytes}};
  report["process_set"] = {{"color", process_set_color},
                           {"members", process_set_members(process_set_comm)}};

  print_reports(world_rank, world_size, "COLLSCOPE_SAMPLE_REPORT " + report.dump() + "\n");
  if (world_rank == 0) {
    const double mean_step_ms =
        std::accumulate(step_ms.begin() + options.warmup_steps, step_ms.end(), 0.0) /
        measured_steps;
    fmt::print("fusion_trainer: throughput {:.1f} samples/s, mean step {:.2f} ms\n", throughput,
               mean_step_ms);
    std::fflush(stdout);
  }

  MPI_Comm_free(&process_set_comm);
  MPI_Comm_free(&horovod_comm);
  return 0;
}

}  // namespace
}  // namespace collscope::sample

int main(int argc, char** argv) {
  using namespace collscope::sample;
  TrainerOptions options;
  try {
    options = parse_options(argc, argv);
  } catch (const HelpRequested&) {
    return 0;
  } catch (const UsageError& error) {
    fmt::print(stderr, "fusion_trainer: {}\n", error.what());
    return 2;
  }
  if (options.batch_size > options.max_batch_size) {
    fmt::print(stderr, "fusion_trainer: out of memory: batch size {} exceeds {}\n",
               options.batch_size, options.max_batch_size);
    return 1;
  }

  // Two ranks of two threads each on a 2-core machine: Open MPI's busy polling must yield the core
  // to the thread it is waiting for (Open MPI does this by itself only when it sees more ranks
  // than cores). A value set by the user wins.
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    fmt::print(stderr, "fusion_trainer: MPI provides thread level {}, MPI_THREAD_MULTIPLE needed\n",
               provided);
    MPI_Finalize();
    return 1;
  }
  if (!options.keep_mpi_binding) allow_all_cores();
  g_nvtx_enabled = !options.no_nvtx;
  const int rc = train(options);
  MPI_Finalize();
  return rc;
}
