// Printed throughput, stop rules, the batch size's memory limit, no accidental repeats, Horovod's method.
#include <collscope/testing/synthetic_run.hpp>
#include <collscope/autotuner/scoring.hpp>
#include <collscope/autotuner/search_rules.hpp>
#include <collscope/autotuner/search_space.hpp>
#include <collscope/autotuner/strategy.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

using namespace collscope::autotuner;
namespace fs = std::filesystem;

namespace {
std::string log_with(const std::string& text) {
  const auto p = fs::temp_directory_path() / ("collscope-printed-" + std::to_string(::getpid()) + ".log");
  std::ofstream(p) << text;
  return p.string();
}

TrialRecord trial(int id, TrialStatus status, Assignment values, std::optional<double> score,
                  const std::string& reason = "") {
  TrialRecord t;
  t.id = id;
  t.kind = "design";
  t.status = status;
  t.values = std::move(values);
  t.score = score;
  t.reason = reason;
  return t;
}
}  // namespace

TEST(PrintedThroughput, HorovodBenchmarkTotalWinsOverItsPerIterationLines) {
  const auto path = log_with(
      "Iter #0: 27.3 img/sec per CPU\nIter #1: 28.1 img/sec per CPU\nImg/sec per CPU: 27.7 +-0.8\n"
      "Total img/sec on 2 CPU(s): 55.4 +-1.6\n");
  const auto p = printed_throughput(path);
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(p->value, 55.4);
  EXPECT_EQ(p->unit, "img/s");
  EXPECT_EQ(p->pattern, "Horovod total img/sec");
}

TEST(PrintedThroughput, CommonRatesAndTheLastMatch) {
  auto p = printed_throughput(log_with("epoch 1: 1200.5 samples/s\nepoch 2: 1302.25 samples/s\ndone\n"));
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(p->value, 1302.25);
  EXPECT_EQ(p->unit, "samples/s");
  p = printed_throughput(log_with("100%|##########| 50/50 [00:05<00:00, 9.87it/s]\n"));
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(p->value, 9.87);
  EXPECT_EQ(p->unit, "it/s");
  p = printed_throughput(log_with("fusion_trainer: throughput 812.4 samples/s, mean step 78.79 ms\n"));
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(p->value, 812.4);
  EXPECT_FALSE(printed_throughput(log_with("loss 0.31 lr 0.001 step 12\n")));  // no rate: no score
}

TEST(StopRules, NoisePaybackAndTimeBudget) {
  StopInputs in;
  in.best = 1000;
  in.expected_gain = 30;
  in.confirm_repeats = 1;
  EXPECT_FALSE(stop_rule(in));  // no noise estimate, no job length: nothing to stop on
  in.noise = NoiseEstimate{150, 0.15, 1, 2};
  auto r = stop_rule(in);  // 30 < 150 / sqrt(2)
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->starts_with("noise:")) << *r;
  in.noise = NoiseEstimate{10, 0.01, 1, 2};
  EXPECT_FALSE(stop_rule(in));  // 30 > 7.1: worth a trial
  // 3 % of a 0.2 s step over 1000 steps saves ~5.8 s; a trial costs 20 s.
  in.job_steps = 1000;
  in.best_step_s = 0.2;
  in.mean_trial_s = 20;
  r = stop_rule(in);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->starts_with("payback:")) << *r;
  in.job_steps = 1'000'000;  // a long job: the same gain pays back many times
  EXPECT_FALSE(stop_rule(in));
  in.time_budget_s = 60;
  in.elapsed_s = 61;
  r = stop_rule(in);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->starts_with("time budget:")) << *r;
}

TEST(NoiseEstimate, PooledOverRepeatedSettings) {
  const auto space = SearchSpace::parse("knobs:\n  - {name: a, type: categorical, values: [x, y, z]}\n", "n.yaml");
  const std::vector<TrialRecord> trials{trial(1, TrialStatus::Ok, {"x"}, 100), trial(2, TrialStatus::Ok, {"x"}, 110), trial(3, TrialStatus::Ok, {"y"}, 50),
                                        trial(4, TrialStatus::Ok, {"y"}, 40), trial(5, TrialStatus::Ok, {"z"}, 70)};
  const auto n = estimate_noise(space, trials);
  ASSERT_TRUE(n);
  EXPECT_NEAR(n->sd, std::sqrt((50.0 + 50.0) / 2), 1e-9);  // each pair: 2 x 5^2 = 50, one dof
  EXPECT_EQ(n->settings, 2);
  EXPECT_FALSE(estimate_noise(space, {trials[0], trials[2]}));
}

TEST(BatchLimit, ProbesBetweenWhatRanAndWhatRanOutOfMemory) {
  const auto space = SearchSpace::parse(
      "knobs:\n  - {name: t, type: real, min: 1, max: 2}\n  - {name: batch, type: integer, min: 8, max: 128, default: 32}\n"
      "objective: {kind: throughput, batch_size: batch}\n",
      "b.yaml");
  std::vector<TrialRecord> trials{trial(1, TrialStatus::Ok, {"1", "32"}, 100),
                                  trial(2, TrialStatus::Failed, {"1", "118"}, std::nullopt,
                                        "exit code 1: fusion_trainer: out of memory: batch size 118 exceeds 96")};
  auto limit = batch_limit(space, trials);
  EXPECT_EQ(limit.fits_max, 32);
  EXPECT_EQ(limit.oom_min, 118);
  Assignment v{"1.5", "120"};
  EXPECT_EQ(keep_batch_below_limit(space, limit, v), "batch 120 -> 75: 118 ran out of memory, 32 ran");
  EXPECT_EQ(v[1], "75");
  Assignment small{"1.5", "64"};
  EXPECT_EQ(keep_batch_below_limit(space, limit, small), "");  // below the limit: untouched
  trials.push_back(trial(3, TrialStatus::Ok, {"1", "96"}, 300));
  trials.push_back(trial(4, TrialStatus::Failed, {"1", "97"}, std::nullopt, "CUDA out of memory. Tried to allocate 2.00 GiB"));
  limit = batch_limit(space, trials);
  Assignment big{"1.5", "128"};
  keep_batch_below_limit(space, limit, big);
  EXPECT_EQ(big[1], "96");  // the limit is known to one: the largest that ran
  // The report's note: the optimisation changes; accumulation 32/16 = 2 keeps the default's global batch.
  const auto note = batch_note(space, limit, {"1", "16"});
  EXPECT_NE(note.find("changes the optimisation"), std::string::npos) << note;
  EXPECT_NE(note.find("accumulating gradients over 2 steps at batch 16"), std::string::npos) << note;
  EXPECT_NE(note.find("--fixed-batch"), std::string::npos) << note;
  EXPECT_NE(note.find("97 per rank ran out of memory, 96 was the largest that ran"), std::string::npos) << note;
  EXPECT_FALSE(is_out_of_memory("exit code 1: bad argument --room"));
  // --fixed-batch: one value left, the model ignores it.
  const auto fixed = space.with_knob_fixed("batch");
  EXPECT_EQ(fixed.knobs()[1].values, std::vector<std::string>{"32"});
  EXPECT_EQ(fixed.to_values({0.3, 0.99})[1], "32");
}

TEST(BayesianOptimisation, NeverRerunsAMeasuredSettingUnlessEverySettingWasMeasured) {
  // Eight settings; the best is at the edge, where EI keeps pointing.
  const auto space = SearchSpace::parse("knobs:\n  - {name: a, type: integer, min: 1, max: 8}\n", "d.yaml");
  Strategy bo(space, StrategyKind::Bayesian, 1, 20);
  std::vector<Observation> history;
  std::set<Assignment> seen;
  for (int i = 0; i < 12; ++i) {
    const auto s = bo.suggest(i, history);
    ASSERT_TRUE(s);
    const Assignment values = space.to_values(s->unit);
    const bool is_new = seen.insert(values).second;
    if (s->source == "expected-improvement") {
      EXPECT_TRUE(is_new) << "trial " << i << " re-ran a=" << values[0];
    }
    if (s->source == "repeat") {
      EXPECT_EQ(seen.size(), 8u) << "a repeat while settings were left";  // deliberate, and said so
      return;
    }
    const double a = std::stod(values[0]);
    history.push_back({s->unit, 10 * a + (i % 2 ? 3.0 : -3.0), values});
  }
  ADD_FAILURE() << "no repeat after 12 suggestions over 8 settings";
}

TEST(HorovodStrategy, WarmupSeedPointsThenItsBoxAndItsBudget) {
  const auto space = SearchSpace::parse(
      "knobs:\n  - {name: f, env: HOROVOD_FUSION_THRESHOLD, type: integer, scale: log, min: 1, max: 268435456}\n"
      "  - {name: c, env: HOROVOD_CYCLE_TIME, type: real, min: 0.1, max: 100}\n",
      "h.yaml");
  Strategy h(space, StrategyKind::Horovod, 0, 23);
  std::vector<Observation> history;
  std::vector<std::pair<std::string, std::string>> expect{{"4194304", "5"},   {"4194304", "5"},  {"4194304", "5"},
                                                          {"4194304", "5"},   {"33554432", "50"}, {"16777216", "25"},
                                                          {"8388608", "10"}};
  for (int i = 0; i < kHorovodWarmupSamples + kHorovodMaxSamples; ++i) {
    const auto s = h.suggest(i, history);
    ASSERT_TRUE(s && s->values);
    if (i < static_cast<int>(expect.size())) {
      EXPECT_EQ((*s->values)[0], expect[static_cast<std::size_t>(i)].first) << i;
      EXPECT_EQ((*s->values)[1], expect[static_cast<std::size_t>(i)].second) << i;
      EXPECT_EQ(s->source, i < kHorovodWarmupSamples ? "warm-up" : "horovod-seed");
    } else {
      EXPECT_EQ(s->source, "horovod-bo");
      const double mb = std::stod((*s->values)[0]) / 1048576, ms = std::stod((*s->values)[1]);
      EXPECT_TRUE(mb >= 0 && mb <= 64 && ms >= 1 && ms <= 100) << mb << " MB " << ms << " ms";
    }
    if (i >= kHorovodWarmupSamples) history.push_back({s->unit, std::stod((*s->values)[1]), *s->values});
  }
  EXPECT_FALSE(h.suggest(kHorovodWarmupSamples + kHorovodMaxSamples, history));  // 20 samples, then it stops
}

// Without a batch size the steps measure steps per second: said so in the unit, never "samples/s" with a batch of 1.
TEST(Scoring, StepsWithoutABatchSizeAreStepsPerSecond) {
  const auto dir = fs::temp_directory_path() / ("collscope-steps-unit-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  collscope::testing::SyntheticRunSpec spec;
  spec.steps = 20;
  collscope::testing::write_synthetic_run(dir.string(), spec);
  Objective o;
  const auto no_output = (dir / "none.log").string();
  const Score per_step = score_trial(o, 1, dir.string(), no_output);
  ASSERT_TRUE(per_step.value) << per_step.problem;
  EXPECT_EQ(per_step.unit, "steps/s");
  o.batch_size = "8";
  o.batch_size_given = true;
  const Score samples = score_trial(o, 8, dir.string(), no_output);
  ASSERT_TRUE(samples.value) << samples.problem;
  const auto progress = read_step_progress(dir.string(), "step", o.warmup_steps, 8);
  ASSERT_TRUE(progress);
  EXPECT_NEAR(*samples.value, *per_step.value * 8 * progress->ranks, 1e-6 * *samples.value);
  fs::remove_all(dir);
}
