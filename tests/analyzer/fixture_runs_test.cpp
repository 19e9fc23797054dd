// The analyzer on real Horovod 0.28.1 runs nobody on the project wrote (tests/data/horovod-0.28.1-cpu, README
// there): the ground truth is what the jobs did and printed.
#include <collscope/analyzer/analysis.hpp>
#include <collscope/analyzer/report.hpp>

#include <gtest/gtest.h>

#include <filesystem>

#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace collscope::analyzer;

namespace {

const Analysis& fixture(const std::string& name) {
  static std::map<std::string, Analysis> cache;
  auto it = cache.find(name);
  if (it == cache.end())
    it = cache.emplace(name, analyze_run(collscope::test::unpack_test_data("horovod-0.28.1-cpu/" + name).string())).first;
  return it->second;
}

const Finding* find(const Analysis& a, FindingKind k) {
  for (const auto& f : a.findings)
    if (f.kind == k) return &f;
  return nullptr;
}

}  // namespace

TEST(HorovodFixtures, StepsWithoutNvtxFromThePayloadBytes) {
  // 30 and 40 training steps; the job printed a median step of about 189 ms and about 685 samples/s (plain).
  const Analysis& plain = fixture("plain");
  EXPECT_EQ(plain.steps.source, "inferred");
  EXPECT_EQ(plain.steps.method, collscope::run::StepMethod::PayloadBytes);
  EXPECT_EQ(plain.steps.steps.size(), 30u) << plain.steps.basis;
  EXPECT_EQ(plain.steps.bytes_per_step, 3698084);  // 924 521 float gradients (the model's parameters) x 4 bytes
  EXPECT_GE(plain.steps.confidence, 0.8) << plain.steps.basis;
  EXPECT_NEAR(plain.steps.median_step_ns / 1e6, 189, 0.1 * 189);
  EXPECT_NEAR(plain.steps.throughput_samples_per_s, 685, 0.1 * 685);  // --batch-size 64 from the command line
  const Analysis& slow = fixture("straggler-rank1-30ms");
  EXPECT_EQ(slow.steps.steps.size(), 40u) << slow.steps.basis;
  EXPECT_GE(slow.steps.confidence, 0.8) << slow.steps.basis;
}

TEST(HorovodFixtures, NvtxStepsWhereTheJobMarksThem) {
  for (const char* name : {"plain-nvtx", "straggler-rank1-30ms-nvtx"}) {
    const Analysis& a = fixture(name);
    EXPECT_EQ(a.steps.method, collscope::run::StepMethod::Nvtx) << name;
    EXPECT_EQ(a.steps.steps.size(), 40u) << name;
    EXPECT_EQ(a.steps.confidence, 1) << name;
  }
}

TEST(HorovodFixtures, HangRunStepsCoverNoneOfItsTime) {
  // hang_hvd.py reduces five 4000-byte tensors in a loop, then hangs for 24 s: five iterations, and the
  // confidence says they are no picture of the run.
  const Analysis& a = fixture("hang-rank1-never-submits");
  EXPECT_LE(a.steps.steps.size(), 5u);
  EXPECT_LT(a.steps.confidence, 0.5) << a.steps.basis;
}
