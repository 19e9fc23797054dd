// The replay model (predict/): its size-to-time curve and knob parsing, and the error bound it is held to on
// recorded real runs of the fusion trainer (tests/data/fusion-trainer-predict: traced baselines and the measured
// median step of each setting, run for real; README.md there says how they were made).
#include <collscope/predict/knobs.hpp>
#include <collscope/predict/replay.hpp>
#include <collscope/run/job_settings.hpp>
#include <collscope/store/error.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "test_support.hpp"

namespace {

using namespace collscope;
using collscope::test::unpack_test_data;

TEST(CostCurve, InterpolatesMediansAndPoolsFallingTimes) {
  predict::CostCurve c;
  for (int i = 0; i < 5; ++i) c.add(1024, 10'000), c.add(4096, 8'000), c.add(1 << 20, 1'000'000), c.add(2 << 20, 2'000'000);
  c.add(300'000, 90'000'000);  // one descheduled call of its own size class: not a class
  c.finish();
  EXPECT_DOUBLE_EQ(c.ns(1024), 9'000);  // 1 KiB and 4 KiB pooled: times must not fall with size
  EXPECT_NEAR(c.ns(1.5 * (1 << 20)), 1'500'000, 1);
  EXPECT_NEAR(c.ns(4 << 20), 4'000'000, 1);  // beyond: the bandwidth between the last two classes
  EXPECT_LT(c.ns(300'000), 1'000'000);
}

// Real Horovod on 2 busy cores measured 0.2 ms at 256 KiB and 11.8 ms at 512 KiB (its few large buffers were the
// descheduled ones): a buffer twice the size costs at most two of the smaller, so bandwidth never falls with size.
TEST(CostCurve, BandwidthNeverFallsWithSize) {
  predict::CostCurve c;
  for (int i = 0; i < 5; ++i) c.add(256 << 10, 200'000), c.add(512 << 10, 11'800'000), c.add(1 << 20, 43'000'000);
  c.finish();
  EXPECT_NEAR(c.ns(256 << 10), 200'000, 1);
  EXPECT_NEAR(c.ns(512 << 10), 400'000, 1);
  EXPECT_NEAR(c.ns(1 << 20), 800'000, 1);
  EXPECT_NEAR(c.ns(4 << 20), 3'200'000, 1);  // beyond: at most the best bandwidth measured
}

TEST(Knobs, KnownUnknownAndMalformed) {
  predict::Change change;
  std::vector<std::string> not_predicted;
  predict::apply_knob("HOROVOD_CYCLE_TIME=4.5", change, not_predicted);
  predict::apply_knob("HOROVOD_FUSION_THRESHOLD=1048576", change, not_predicted);
  predict::apply_knob("backward_passes_per_step=4", change, not_predicted);
  predict::apply_knob("fp16_compression=1", change, not_predicted);
  predict::apply_knob("batch-size=64", change, not_predicted);
  EXPECT_EQ(change.cycle_time_ms, 4.5);
  EXPECT_EQ(change.fusion_threshold_bytes, 1048576);
  EXPECT_EQ(change.backward_passes_per_step, 4);
  EXPECT_TRUE(change.fp16_compression);
  EXPECT_EQ(change.batch_size, 64);
  EXPECT_TRUE(not_predicted.empty());
  predict::apply_knob("NCCL_ALGO=ring", change, not_predicted);
  ASSERT_EQ(not_predicted.size(), 1u);
  EXPECT_NE(not_predicted[0].find("NCCL_ALGO: the model cannot predict"), std::string::npos);
  EXPECT_THROW(predict::apply_knob("HOROVOD_CYCLE_TIME", change, not_predicted), InputError);
  EXPECT_THROW(predict::apply_knob("HOROVOD_CYCLE_TIME=fast", change, not_predicted), InputError);
}

// With the tensors' sizes known, buffers are packed as Horovod and the trainer pack them: in order, a tensor larger
// than the threshold alone, the others together until the next would overflow. Four tensors of 100, 10, 10 and 280
// KB, all ready at once: 3 buffers at 64 KiB (100 | 10+10 | 280), 4 without fusion, 1 at 1 MiB; cut from their mean
// size (100 KB) alone, 64 KiB would have made 4.
TEST(Replay, BuffersPackedFromTheTensorsSizes) {
  predict::ReplayModel m;
  m.usable = true;
  m.negotiates = true;
  m.ranks = 1;
  m.gradient_bytes = 400'000;
  m.tensor_ends = {100'000, 110'000, 120'000, 400'000};
  m.op_overhead_ns = 1'000;
  for (int i = 0; i < 3; ++i) m.cost.add(1 << 20, 1'000'000);  // every buffer up to 1 MiB: 1 ms
  m.cost.finish();
  m.settings.fusion_threshold_bytes = 64 << 10;
  m.settings.cycle_time_ms = 1;
  m.steps.push_back({.measured_ns = 4e6, .ranks = {predict::RankStep{}}});
  m.rank_speed = {predict::RankStep{1, 1, 1}};
  m.baseline_step_ns = 4e6;
  const auto step_ms = [&](std::int64_t threshold) {
    const auto p = predict::predict(m, {.fusion_threshold_bytes = threshold});
    EXPECT_TRUE(p.not_predicted.empty()) << predict::prediction_text(p, "RUN");
    return p.step_ms;
  };
  const double buffer_ms = 1.001;
  EXPECT_NEAR(step_ms(0) - step_ms(64 << 10), buffer_ms, 1e-6);
  EXPECT_NEAR(step_ms(64 << 10) - step_ms(1 << 20), 2 * buffer_ms, 1e-6);
  m.tensor_ends.clear();
  m.mean_tensor_bytes = 100'000;
  EXPECT_NEAR(step_ms(64 << 10) - step_ms(1 << 20), 3 * buffer_ms, 1e-6);
}

predict::ReplayModel model_of(const std::string& dir) {
  const run::Run run = run::load_run(dir);
  const auto clocks = run::ClockAligner().align(run);
  const auto matched = run::CollectiveMatcher().match(run, clocks);
  const auto steps = run::StepDetector({.batch_size = run::command_line_int(run, "batch-size").value_or(0)})
                         .detect(run, clocks, matched);
  return predict::build_model(run, clocks, matched, steps);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The target: a median absolute error <= 10 %, each <= 20 %, and the direction right wherever the real
// change exceeds the run-to-run noise. These recordings were made on the quiet 2-core VM (2026-12-07, the test loop
// paused; baseline 24.9 ms, noise +-2.6 ms over 5 rounds): from the last round's traces the errors are -13.6 % (the
// 64 KiB threshold) to +7.9 %, median 7.9 % (docs/performance.md). Before the tensors' sizes, the overhead per byte
// and the CPU work of packing were modelled, the 64 KiB threshold was +20.2 % over (its 35 buffers cut from the mean
// tensor size as 78, each charged the 275 us measured before 2.5 MB buffers) and each error was held to 25 %.
TEST(PredictRecorded, ErrorOnRealRunsWithinBounds) {
  std::ifstream f(std::string(COLLSCOPE_TEST_DATA_DIR) + "/fusion-trainer-predict/measured.json");
  ASSERT_TRUE(f) << "tests/data/fusion-trainer-predict/measured.json";
  const auto measured = nlohmann::json::parse(f);
  std::map<std::string, predict::ReplayModel> models;
  std::vector<double> errors;
  // The plain setting's untraced rounds: its median step and its noise (2 x 1.4826 x MAD), as the bench judges.
  const auto plain = measured.at("baseline_step_ms").get<std::vector<double>>();
  const double plain_ms = median(plain);
  std::vector<double> deviations;
  for (double v : plain) deviations.push_back(std::abs(v - plain_ms));
  const double noise = 2 * 1.4826 * median(deviations);
  for (const auto& s : measured.at("settings")) {
    const std::string base = s.at("baseline");
    if (!models.count(base)) models.emplace(base, model_of(unpack_test_data("fusion-trainer-predict/" + base).string()));
    const auto& model = models.at(base);
    ASSERT_TRUE(model.usable) << base << ": " << model.why_not;
    predict::Change change;
    std::vector<std::string> not_predicted;
    const auto args = s.at("predict_args").get<std::vector<std::string>>();
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (args[i] == "--balanced") change.balanced = true;
      else if (args[i] == "--set" && i + 1 < args.size()) predict::apply_knob(args[++i], change, not_predicted);
    }
    ASSERT_TRUE(not_predicted.empty()) << s.at("label");
    const auto p = predict::predict(model, change);
    const double real = median(s.at("measured_step_ms").get<std::vector<double>>());
    const double error = (p.step_ms - real) / real;
    errors.push_back(std::abs(error));
    std::printf("%s: predicted %.2f ms, measured %.2f ms, error %+.1f %%\n", s.at("label").get<std::string>().c_str(),
                p.step_ms, real, 100 * error);
    EXPECT_LE(std::abs(error), 0.20) << s.at("label") << ": predicted " << p.step_ms << " ms, measured " << real;
    // The direction, where the real change from the plain setting's untraced runs exceeds their noise.
    if (std::abs(real - plain_ms) > noise)
      EXPECT_GT((p.step_ms - plain_ms) * (real - plain_ms), 0)
          << s.at("label") << ": predicted " << p.step_ms << " ms, measured " << real << ", plain " << plain_ms;
  }
  ASSERT_GE(errors.size(), 6u);
  EXPECT_LE(median(errors), 0.10);
}

// The trainer broadcasts its 161 tensors (the ResNet-50 list) from rank 0 before its first step and spends 100 us
// (--op-overhead-us) plus its packing before each buffer: the model reads the sizes from the broadcasts and the
// overhead from the gaps before small and large buffers (103-114 us before 200-byte buffers, 293-340 us before
// 2.5 MB ones in this recording).
TEST(PredictRecorded, TensorSizesFromTheBroadcastsAndOverheadPerByte) {
  const auto model = model_of(unpack_test_data("fusion-trainer-predict/plain").string());
  ASSERT_TRUE(model.usable) << model.why_not;
  ASSERT_EQ(model.tensor_ends.size(), 161u);
  EXPECT_DOUBLE_EQ(model.tensor_ends.back(), model.gradient_bytes);
  EXPECT_TRUE(std::is_sorted(model.tensor_ends.begin(), model.tensor_ends.end()));
  EXPECT_DOUBLE_EQ(model.tensor_ends.front(), 200);  // fc.bias, 1000 x 0.05 floats: registered last, ready first
  std::printf("overhead before each buffer: %.1f us + %.3f ns per byte\n", model.op_overhead_ns / 1e3,
              model.op_overhead_ns_per_byte);
  EXPECT_GT(model.op_overhead_ns, 100e3);
  EXPECT_LT(model.op_overhead_ns, 130e3);
  EXPECT_GT(model.op_overhead_ns_per_byte, 0.02);
  EXPECT_LT(model.op_overhead_ns_per_byte, 0.2);
}

TEST(PredictRecorded, KnobsTheRunCannotTellAreOneLineEach) {
  const auto model = model_of(unpack_test_data("fusion-trainer-predict/plain").string());
  ASSERT_TRUE(model.usable);
  const auto p = predict::predict(model, {.bucket_cap_mb = 50});
  ASSERT_EQ(p.not_predicted.size(), 1u);
  EXPECT_NE(p.not_predicted[0].find("bucket_cap_mb:"), std::string::npos);
  EXPECT_NEAR(p.step_ms, p.baseline_step_ms, 1e-9);  // nothing changed
  const auto json = nlohmann::json::parse(predict::prediction_json(predict::predict(model, {.cycle_time_ms = 5}), "RUN"));
  EXPECT_GT(json.at("predicted").at("step_ms").get<double>(), 0);
  EXPECT_GT(json.at("predicted").at("samples_per_s").get<double>(), 0);
  EXPECT_EQ(json.at("settings").at("cycle_time_ms").get<double>(), 5);
  EXPECT_GT(json.at("baseline").at("step_ms").get<double>(), 0);
}

// A DDP run (tests/data/ddp-gloo-small-buckets: bucket_cap_mb 0.07, its buckets recorded by the comm hook): the
// prediction speaks DDP's language, its settings in bucket_cap_mb alone, never Horovod's knobs or negotiation
// cycles (a DDP user has neither). bucket_cap_mb is not predicted (replay.cpp says why). And this run's bucket
// allreduces were timed from their issue on the training thread, queueing behind each other included, so the model
// replays the run at 3.8 x its measured step: no number for any knob, one line why.
TEST(PredictRecorded, DdpRunInDdpsOwnKnobAndNoNumberTheModelCannotSupport) {
  const auto model = model_of(std::string(COLLSCOPE_TEST_DATA_DIR) + "/ddp-gloo-small-buckets");
  ASSERT_TRUE(model.usable) << model.why_not;
  const auto p = predict::predict(model, {.bucket_cap_mb = 25, .balanced = true});
  EXPECT_EQ(p.steps_replayed, 0);
  ASSERT_EQ(p.not_predicted.size(), 2u);
  EXPECT_TRUE(p.not_predicted[0].starts_with("bucket_cap_mb: the replay does not yet hold")) << p.not_predicted[0];
  EXPECT_NE(p.not_predicted[1].find("the model does not reproduce this run"), std::string::npos) << p.not_predicted[1];
  const std::string text = predict::prediction_text(p, "RUN");
  EXPECT_EQ(text.find("predicted median step"), std::string::npos) << text;
  EXPECT_NE(text.find("settings: bucket_cap_mb=0.07 balanced"), std::string::npos) << text;
  EXPECT_EQ(text.find("HOROVOD_"), std::string::npos) << text;
  EXPECT_EQ(text.find("negotiation"), std::string::npos) << text;
  EXPECT_EQ(text.find("fusion pack"), std::string::npos) << text;
}

// Real Horovod 0.28.1 on 2 busy cores (tests/data/horovod-0.28.1-cpu-samples, README there): its background
// thread polls in MPI every 1 ms cycle beside the training thread, and untraced runs measured shorter steps at longer
// cycles: 141.8, 135.0 and 104.1 ms at 4.5, 9 and 20 ms against 168.7 ms at 1 ms (noise +-18.4 ms). Without CPU
// sharing the replay predicted the wrong way (+1-2 % on the fixtures, +38 % in predict_vs_horovod.py). With it but
// with the transfer curve as measured (1.6 GB/s at 256-505 KiB, 0.05 GB/s at 514-972 KiB: the few large buffers
// were the descheduled ones), 9 and 20 ms came out 0 and +14 % longer; bandwidth that never falls with size gives
// -22, -25 and -24 %; with the CPU work before each buffer apart from the polling (2026-12-07), -15.6, -18.1 and
// -16.9 %.
TEST(PredictRecorded, RealHorovodLongerCycleGivesTheCpuBack) {
  const auto model = model_of(unpack_test_data("horovod-0.28.1-cpu-samples/plain-nvtx").string());
  ASSERT_TRUE(model.usable) << model.why_not;
  EXPECT_TRUE(model.cpu_sharing);
  const double baseline = 168.7, noise = 18.4 / 168.7;  // the README's untraced medians
  for (const auto& [cycle_ms, measured_ms] : {std::pair{4.5, 141.8}, {9.0, 135.0}, {20.0, 104.1}}) {
    const auto p = predict::predict(model, {.cycle_time_ms = cycle_ms});
    ASSERT_GT(p.steps_replayed, 0) << predict::prediction_text(p, "RUN");
    const double change = p.step_ms / p.baseline_step_ms - 1, measured = measured_ms / baseline - 1;
    std::printf("HOROVOD_CYCLE_TIME=%g: predicted %+.1f %%, measured %+.1f %%\n", cycle_ms, 100 * change,
                100 * measured);
    // The direction wherever the real change exceeds the noise (all three); the size within the noise where the
    // model holds it (4.5 and 9 ms). At 20 ms it predicts -17 % for -38 %: what a cycle that long gives back
    // beyond the polling (the training thread alone on a core most of the step) is not modelled.
    EXPECT_LT(change, 0) << cycle_ms << " ms: " << predict::prediction_text(p, "RUN");
    if (cycle_ms < 20) {
      EXPECT_NEAR(change, measured, noise) << cycle_ms << " ms: " << predict::prediction_text(p, "RUN");
    }
  }
}

}  // namespace
