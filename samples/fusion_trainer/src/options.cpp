#include "options.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <charconv>
#include <cstdlib>
#include <iostream>

namespace collscope::sample {
namespace {

std::uint64_t parse_env_bytes(const char* name, const char* text) {
  std::uint64_t value = 0;
  const char* end = text + std::char_traits<char>::length(text);
  auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc() || ptr != end || ptr == text)
    throw UsageError(fmt::format("{}='{}' is not a byte count", name, text));
  return value;
}

double parse_env_ms(const char* name, const char* text) {
  char* end = nullptr;
  double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(value > 0.0))
    throw UsageError(fmt::format("{}='{}' is not a positive number of milliseconds", name, text));
  return value;
}

}  // namespace

TrainerOptions parse_options(int argc, char** argv) {
  TrainerOptions options;
  if (const char* env = std::getenv("HOROVOD_FUSION_THRESHOLD"); env && *env)
    options.fusion_threshold_bytes = parse_env_bytes("HOROVOD_FUSION_THRESHOLD", env);
  if (const char* env = std::getenv("HOROVOD_CYCLE_TIME"); env && *env)
    options.cycle_time_ms = parse_env_ms("HOROVOD_CYCLE_TIME", env);
  if (const char* env = std::getenv("HOROVOD_TIMELINE"); env && *env) options.timeline_path = env;

  CLI::App app{
      "fusion_trainer: data-parallel training loop over MPI with Horovod-style tensor fusion.\n"
      "Run with mpirun -np N. Each rank prints one line 'COLLSCOPE_SAMPLE_REPORT {json}'."};
  app.add_option("--steps", options.steps, "training steps")->check(CLI::PositiveNumber);
  app.add_option("--warmup-steps", options.warmup_steps, "first steps excluded from throughput")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--batch-size", options.batch_size, "samples per rank per step")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-batch-size", options.max_batch_size,
                 "largest batch that fits in memory; a larger one exits 1")
      ->check(CLI::PositiveNumber);
  app.add_option("--model-scale", options.model_scale,
                 "multiplies every tensor's size of the ResNet-50 list (1 = 25.6 M parameters)")
      ->check(CLI::PositiveNumber);
  app.add_option("--compute-scale", options.compute_scale,
                 "multiplies the floating-point work per parameter and sample")
      ->check(CLI::PositiveNumber);
  app.add_option("--fusion-threshold", options.fusion_threshold_bytes,
                 "fusion buffer bytes (overrides HOROVOD_FUSION_THRESHOLD; 0 = no fusion)");
  app.add_option("--cycle-time-ms", options.cycle_time_ms,
                 "background cycle in ms (overrides HOROVOD_CYCLE_TIME)")
      ->check(CLI::PositiveNumber);
  app.add_option("--op-overhead-us", options.op_overhead_us,
                 "fixed CPU work per gradient allreduce on the background thread, us (Horovod's "
                 "per-response cost)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--cycle-overhead-us", options.cycle_overhead_us,
                 "fixed CPU work per negotiation cycle on the background thread, us (Horovod's "
                 "coordinator bookkeeping)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--process-sets", options.process_sets,
                 "process-set colour = world_rank % this (MPI_Comm_split)")
      ->check(CLI::PositiveNumber);
  app.add_option("--slow-rank", options.slow_rank, "rank that does extra compute every step")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--slow-ms", options.slow_ms, "extra compute per step on --slow-rank, ms")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--slow-every", options.slow_every,
                 "with --slow-rank: the extra compute only in steps N, 2N, ... (a periodic pause, as a checkpoint)")
      ->check(CLI::PositiveNumber);
  app.add_option("--mismatch-rank", options.mismatch_rank,
                 "rank that skips its process-set allreduce at --mismatch-step (job hangs)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--mismatch-step", options.mismatch_step, "step (counted from 0) of the skipped allreduce")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--hang-after-step", options.hang_after_step, "sleep forever once this many steps are done")
      ->check(CLI::NonNegativeNumber);

  app.add_option("--timeline", options.timeline_path,
                 "write a Horovod Timeline (Chrome-trace JSON) on rank 0 (overrides HOROVOD_TIMELINE)");
  app.add_flag("--no-nvtx", options.no_nvtx,
               "mark no NVTX ranges, as most real jobs: steps are inferred from the collectives");
  app.add_flag("--keep-mpi-binding", options.keep_mpi_binding,
               "keep mpirun's binding of each rank to one core (by default the rank's threads may "
               "use every core: its compute and background threads must not share one core)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    throw HelpRequested{};
  } catch (const CLI::ParseError& error) {
    throw UsageError(error.what());
  }
  if (options.warmup_steps >= options.steps)
    throw UsageError(fmt::format("--warmup-steps {} leaves no measured step of --steps {}",
                                 options.warmup_steps, options.steps));
  if (options.slow_rank && options.slow_ms <= 0.0)
    throw UsageError("--slow-rank needs --slow-ms > 0");
  return options;
}

}  // namespace collscope::sample
