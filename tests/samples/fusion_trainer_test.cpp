// fusion_trainer run for real with `mpirun -np 2` at a small model scale: its report must agree
// with its configuration, the injected straggler must show, bad flags and oversize batches fail.
#include <collscope/process/process.hpp>
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

struct CommandResult {
  int exit_code = -1;  // 124 when it ran past its time limit (as timeout(1) reports it), 128 + signal when killed
  std::string output;  // stdout, and stderr with merge_stderr
};

using Env = std::vector<std::pair<std::string, std::string>>;

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Every run is bounded by `timeout_s` (its process group gets SIGTERM, then SIGKILL after 5 s) so a broken build
// fails the test instead of hanging CI.
CommandResult run_command(const std::vector<std::string>& argv, const Env& env = {}, int timeout_s = 60,
                          bool merge_stderr = true) {
  collscope::process::Command command(argv);
  for (const auto& [k, v] : env) command.set_env(k, v);
  command.out = collscope::process::Redirect::capture();
  if (merge_stderr) command.err = collscope::process::Redirect::to_stdout();
  const auto r = collscope::process::run(command, std::chrono::seconds(timeout_s), std::chrono::seconds(5));
  return {r.timed_out ? 124 : r.status(), r.out};
}

std::string trainer_path() {
  const char* bin = std::getenv("COLLSCOPE_BIN");
  return std::string(bin ? bin : "bin") + "/fusion_trainer";
}

// fusion_trainer ARGUMENTS (split at spaces) under `mpirun -np RANKS`, stderr with stdout.
CommandResult run_mpi(int ranks, const std::string& arguments, const Env& env = {}, int timeout_s = 60) {
  std::vector<std::string> argv{"mpirun", "-np", std::to_string(ranks), "--oversubscribe", "--mca", "btl", "self,vader",
                                trainer_path()};
  for (auto& w : words(arguments)) argv.push_back(w);
  return run_command(argv, env, timeout_s);
}

// fusion_trainer ARGUMENTS alone.
CommandResult run_trainer(const std::string& arguments, const Env& env = {}, bool merge_stderr = true) {
  std::vector<std::string> argv{trainer_path()};
  for (auto& w : words(arguments)) argv.push_back(w);
  return run_command(argv, env, 60, merge_stderr);
}

// The COLLSCOPE_SAMPLE_REPORT lines, indexed by rank.
std::vector<json> reports_by_rank(const std::string& output, int ranks) {
  std::vector<json> reports(static_cast<std::size_t>(ranks));
  std::istringstream lines(output);
  const std::string marker = "COLLSCOPE_SAMPLE_REPORT ";
  std::string line;
  int found = 0;
  while (std::getline(lines, line)) {
    const auto at = line.find(marker);
    if (at == std::string::npos) continue;
    json report = json::parse(line.substr(at + marker.size()));
    const auto rank = report.at("rank").get<std::size_t>();
    reports.at(rank) = std::move(report);
    ++found;
  }
  EXPECT_EQ(found, ranks) << output;
  return reports;
}

std::uint64_t count_of(const json& report, const char* table, const char* op) {
  const json& entries = report.at(table);
  return entries.contains(op) ? entries.at(op).get<std::uint64_t>() : 0;
}

// The mean over the measured steps (after the warm-up), ms.
double mean_measured_step_ms(const json& report) {
  const auto steps = report.at("step_ms").get<std::vector<double>>();
  const auto warmup = report.at("warmup_steps").get<std::size_t>();
  return std::accumulate(steps.begin() + static_cast<long>(warmup), steps.end(), 0.0) /
         static_cast<double>(steps.size() - warmup);
}

constexpr int kSteps = 6;
constexpr std::uint64_t kTensors = 161;
// Negotiation payload: ceil(161 / 64) bitmask words + 1 stop word, 8 bytes each.
constexpr std::uint64_t kNegotiationBytes = 4 * 8;

// Checks that hold for any fusion configuration.
void expect_consistent(const std::vector<json>& reports, std::uint64_t threshold_bytes) {
  for (const json& report : reports) {
    SCOPED_TRACE(report.dump());
    EXPECT_EQ(report.at("world_size"), 2);
    EXPECT_EQ(report.at("steps"), kSteps);
    EXPECT_EQ(report.at("step_ms").size(), static_cast<std::size_t>(kSteps));
    EXPECT_EQ(report.at("fusion_threshold_bytes").get<std::uint64_t>(), threshold_bytes);
    EXPECT_EQ(report.at("tensors"), kTensors);
    EXPECT_GT(report.at("throughput_samples_per_s").get<double>(), 0.0);

    const auto model_bytes = report.at("model_bytes").get<std::uint64_t>();
    const json& fusion = report.at("fusion");
    const auto cycles = fusion.at("cycles").get<std::uint64_t>();
    const auto fused = fusion.at("fused_allreduces").get<std::uint64_t>();
    const auto unfused = fusion.at("unfused_allreduces").get<std::uint64_t>();
    // Every gradient is reduced exactly once per step.
    EXPECT_EQ(fusion.at("gradient_bytes").get<std::uint64_t>(), kSteps * model_bytes);
    EXPECT_LE(fusion.at("max_fusion_fill_bytes").get<std::uint64_t>(), threshold_bytes);
    EXPECT_GE(fused + unfused, static_cast<std::uint64_t>(kSteps));

    // Calls: initial broadcast per tensor, barrier at start and end, one iallreduce and one
    // process-set allreduce per step, the rest are the horovod thread's allreduces.
    EXPECT_EQ(count_of(report, "collectives", "bcast"), kTensors);
    EXPECT_EQ(count_of(report, "collectives", "barrier"), 2u);
    EXPECT_EQ(count_of(report, "collectives", "iallreduce"), static_cast<std::uint64_t>(kSteps));
    EXPECT_EQ(count_of(report, "collectives", "allreduce"), cycles + fused + unfused + kSteps);
    const json& by_comm = report.at("comm_calls_by_communicator");
    EXPECT_EQ(by_comm.at("world").get<std::uint64_t>(), kTensors + 2 + kSteps);
    EXPECT_EQ(by_comm.at("process_set").get<std::uint64_t>(), static_cast<std::uint64_t>(kSteps));
    EXPECT_EQ(by_comm.at("horovod").get<std::uint64_t>(), cycles + fused + unfused);

    // Bytes: count x datatype size of every call.
    EXPECT_EQ(count_of(report, "collective_bytes", "bcast"), model_bytes);
    EXPECT_EQ(count_of(report, "collective_bytes", "iallreduce"), kSteps * 2 * sizeof(float));
    EXPECT_EQ(count_of(report, "collective_bytes", "allreduce"),
              kSteps * model_bytes + cycles * kNegotiationBytes + kSteps * sizeof(float));
    EXPECT_GT(report.at("collective_ms").at("allreduce").get<double>(), 0.0);

    const int rank = report.at("rank");
    EXPECT_EQ(report.at("process_set").at("color"), rank % 2);
    EXPECT_EQ(report.at("process_set").at("members"), json::array({rank}));
  }
  // The negotiation keeps both ranks issuing the same collectives.
  EXPECT_EQ(reports[0].at("collectives"), reports[1].at("collectives"));
  EXPECT_EQ(reports[0].at("fusion"), reports[1].at("fusion"));
}

TEST(FusionTrainer, ReportMatchesConfigurationWithDefaultFusion) {
  const auto result =
      run_mpi(2, fmt::format("--steps {} --warmup-steps 1 --model-scale 0.01", kSteps));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto reports = reports_by_rank(result.output, 2);
  expect_consistent(reports, 128ull << 20);
  // 128 MiB holds the whole model: nothing goes unfused.
  EXPECT_EQ(reports[0].at("fusion").at("unfused_allreduces"), 0);
  EXPECT_NE(result.output.find("fusion_trainer: throughput "), std::string::npos);
}

TEST(FusionTrainer, SmallThresholdSplitsAndSendsLargeTensorsAlone) {
  // 16 KiB: at scale 0.01 the largest tensors (fc.weight: 20 480 floats) exceed it.
  const auto result = run_mpi(2, fmt::format("--steps {} --warmup-steps 1 --model-scale 0.01", kSteps),
                              {{"HOROVOD_FUSION_THRESHOLD", "16384"}, {"HOROVOD_CYCLE_TIME", "2"}});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto reports = reports_by_rank(result.output, 2);
  expect_consistent(reports, 16384);
  EXPECT_EQ(reports[0].at("cycle_time_ms").get<double>(), 2.0);
  EXPECT_GT(reports[0].at("fusion").at("unfused_allreduces").get<int>(), 0);
  // The model is 10 x the threshold: at least 10 reductions per step.
  EXPECT_GE(reports[0].at("fusion").at("fused_allreduces").get<int>() +
                reports[0].at("fusion").at("unfused_allreduces").get<int>(),
            10 * kSteps);
}

TEST(FusionTrainer, FlagsOverrideEnvironmentAndZeroThresholdDisablesFusion) {
  const auto result = run_mpi(2,
                              fmt::format("--steps {} --warmup-steps 1 --model-scale 0.01 "
                                          "--fusion-threshold 0 --cycle-time-ms 0.5",
                                          kSteps),
                              {{"HOROVOD_FUSION_THRESHOLD", "999999"}, {"HOROVOD_CYCLE_TIME", "50"}});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto reports = reports_by_rank(result.output, 2);
  expect_consistent(reports, 0);
  EXPECT_EQ(reports[0].at("cycle_time_ms").get<double>(), 0.5);
  EXPECT_EQ(reports[0].at("fusion").at("fused_allreduces"), 0);
  EXPECT_EQ(reports[0].at("fusion").at("unfused_allreduces"), kTensors * kSteps);
}

TEST(FusionTrainer, SlowRankSlowsEveryRankByItsExtraCompute) {
  // Rank 1 computes 30 ms more per step in a loop that ends by the clock, so its length does not depend on the
  // machine's load, and rank 0 cannot end a step before rank 1's gradients arrive. Both bounds follow from that
  // and hold on a loaded machine (an A/B comparison with a plain run did not: a plain run's own step time moves
  // by more than any useful margin when other processes take the cores). Means, not medians: the mean of a
  // rank's steps is the time from its first measured step's start to its last step's end over the step count,
  // so a step boundary that one rank crosses late (preempted in its optimizer) moves only the first and last.
  const double slow_ms = 30;
  const auto slowed =
      run_mpi(2, fmt::format("--steps 42 --warmup-steps 2 --model-scale 0.01 --slow-rank 1 --slow-ms {}", slow_ms));
  ASSERT_EQ(slowed.exit_code, 0) << slowed.output;
  const auto reports = reports_by_rank(slowed.output, 2);
  const double rank0_ms = mean_measured_step_ms(reports[0]), rank1_ms = mean_measured_step_ms(reports[1]);
  // Rank 0 waits for the extra compute in every step...
  EXPECT_GE(rank0_ms, slow_ms) << "rank 0 " << rank0_ms << " ms, rank 1 " << rank1_ms << " ms per step";
  // ...so it is slowed exactly as much as the slow rank: the two ranks' steps are the same length. What separates
  // the two means is only how late each rank reads the clock after the first and the last measured step's
  // synchronisation (time it waits for a CPU), over the 40 measured steps: 2 ms allows 80 ms of such skew. With 10
  // measured steps and one spinning neighbour (load 8.7-10 on 2 cores) the means differed by up to 1.89 ms in 10
  // runs, i.e. 18.9 ms of skew: 40 steps leave 4 times that.
  EXPECT_NEAR(rank0_ms, rank1_ms, 2.0) << "rank 0 " << rank0_ms << " ms, rank 1 " << rank1_ms << " ms per step";
}

TEST(FusionTrainer, MismatchedProcessSetCallHangsTheJob) {
  // One process set holding both ranks; rank 1 skips its call at step 2, rank 0 waits forever.
  const auto result =
      run_mpi(2, "--steps 6 --model-scale 0.01 --process-sets 1 --mismatch-rank 1 --mismatch-step 2", {}, 6);
  EXPECT_EQ(result.exit_code, 124) << result.output;  // killed by timeout
  EXPECT_EQ(result.output.find("COLLSCOPE_SAMPLE_REPORT"), std::string::npos);
}

TEST(FusionTrainer, ProcessSetsOfOneColourHoldAllRanks) {
  const auto result = run_mpi(2, "--steps 3 --warmup-steps 1 --model-scale 0.01 --process-sets 1");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  for (const json& report : reports_by_rank(result.output, 2)) {
    EXPECT_EQ(report.at("process_set").at("color"), 0);
    EXPECT_EQ(report.at("process_set").at("members"), json::array({0, 1}));
  }
}

TEST(FusionTrainer, HangAfterStepNeverFinishes) {
  const auto result = run_mpi(2, "--steps 6 --model-scale 0.01 --hang-after-step 2", {}, 5);
  EXPECT_EQ(result.exit_code, 124) << result.output;
  EXPECT_EQ(result.output.find("COLLSCOPE_SAMPLE_REPORT"), std::string::npos);
}

TEST(FusionTrainer, BatchAboveMaximumIsOutOfMemory) {
  const auto result = run_mpi(2, "--batch-size 2048 --max-batch-size 1024");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("fusion_trainer: out of memory: batch size 2048 exceeds 1024"),
            std::string::npos)
      << result.output;
}

TEST(FusionTrainer, BadFlagsExitTwoWithOneLine) {
  for (const std::string arguments : {"--no-such-flag", "--steps abc", "--steps 3 --warmup-steps 3"}) {
    const auto result = run_trainer(arguments);
    EXPECT_EQ(result.exit_code, 2) << arguments;
    EXPECT_EQ(std::count(result.output.begin(), result.output.end(), '\n'), 1) << result.output;
    EXPECT_EQ(result.output.rfind("fusion_trainer: ", 0), 0u) << result.output;
  }
  const auto bad_env = run_trainer("", {{"HOROVOD_CYCLE_TIME", "soon"}});
  EXPECT_EQ(bad_env.exit_code, 2);
  EXPECT_NE(bad_env.output.find("HOROVOD_CYCLE_TIME"), std::string::npos) << bad_env.output;
}

TEST(FusionTrainer, HelpExitsZero) {
  const auto result = run_trainer("--help", {}, false);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.output.find("--fusion-threshold"), std::string::npos);
  EXPECT_NE(result.output.find("--slow-rank"), std::string::npos);
}

}  // namespace
