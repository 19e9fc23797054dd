// The NCCL tuner plugin as NCCL drives it: dlopen the .so, find ncclTunerPlugin_v6 / _v5 / _v4 / _v3, init per
// communicator, getCollInfo with NCCL's cost table (float[algorithms][protocols], -1 = not possible), v6's
// getChunkSize, destroy. NCCL itself needs a GPU (tests/gpu/run.sh loads the plugin into a real NCCL job there).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../../../tracer/src/nccl/tuner/nccl/tuner.hpp"
#include <collscope/tracer/nccl_tuning_rules.hpp>
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace collscope::nccl_tuner;
using collscope::test::shell;

namespace {

constexpr int kAlgos = 7, kProtos = 3;
std::vector<std::string> g_log;

void logger(int level, unsigned long, const char*, int, const char* fmt, ...) {
  char line[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(line, sizeof line, fmt, args);
  va_end(args);
  g_log.push_back((level == kLogWarn ? "WARN " : "INFO ") + std::string(line));
}

class NcclTuner : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_ = dlopen(COLLSCOPE_TEST_TUNER, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    v4_ = static_cast<TunerV4*>(dlsym(handle_, "ncclTunerPlugin_v4"));
    v3_ = static_cast<TunerV3*>(dlsym(handle_, "ncclTunerPlugin_v3"));
    ASSERT_NE(v4_, nullptr);
    ASSERT_NE(v3_, nullptr);
    g_log.clear();
  }
  void TearDown() override {
    if (handle_) dlclose(handle_);
    unsetenv("COLLSCOPE_NCCL_TUNER_RULES");
  }
  std::string rules_file(const std::string& name, const std::string& text) {
    const auto path = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".rules");
    std::ofstream(path) << text;
    return path.string();
  }
  // A cost table as NCCL fills it: every algorithm possible with every protocol at cost 10 + a + p, except
  // CollNet (2, 3), NVLS (4, 5) and PAT (6), not possible on this communicator.
  static std::vector<float> table() {
    std::vector<float> t(kAlgos * kProtos);
    for (int a = 0; a < kAlgos; ++a)
      for (int p = 0; p < kProtos; ++p) t[a * kProtos + p] = a >= 2 ? kIgnore : 10.0f + a + p;
    return t;
  }
  void* handle_ = nullptr;
  TunerV4* v4_ = nullptr;
  TunerV3* v3_ = nullptr;
};

}  // namespace

TEST_F(NcclTuner, RulesPickAlgorithmProtocolAndChannelsPerSize) {
  setenv("COLLSCOPE_NCCL_TUNER_RULES",
         rules_file("sizes", "# op  min max algo proto channels\n"
                             "allreduce 0 64K tree ll -\n"
                             "allreduce 64K inf ring simple 16\n"
                             "allgather 0 inf - ll128 4 8\n").c_str(), 1);
  void* ctx = nullptr;
  ASSERT_EQ(v4_->init(8, 1, logger, &ctx), kSuccess);
  ASSERT_EQ(g_log.size(), 1u);
  EXPECT_NE(g_log[0].find("3 rules"), std::string::npos) << g_log[0];

  auto small = table();
  int channels = -7;
  float* rows = small.data();
  ASSERT_EQ(v4_->getCollInfo(ctx, AllReduce, 4096, 1, reinterpret_cast<float**>(rows), kAlgos, kProtos, 0, &channels), kSuccess);
  EXPECT_EQ(small[kAlgoTree * kProtos + kProtoLL], 0.0f);
  EXPECT_EQ(channels, -7);  // "-": left to NCCL
  int changed = 0;
  for (std::size_t i = 0; i < small.size(); ++i) changed += small[i] != table()[i];
  EXPECT_EQ(changed, 1);

  auto large = table();
  rows = large.data();
  ASSERT_EQ(v4_->getCollInfo(ctx, AllReduce, 64 << 20, 1, reinterpret_cast<float**>(rows), kAlgos, kProtos, 0, &channels), kSuccess);
  EXPECT_EQ(large[kAlgoRing * kProtos + kProtoSimple], 0.0f);
  EXPECT_EQ(large[kAlgoTree * kProtos + kProtoLL], table()[kAlgoTree * kProtos + kProtoLL]);
  EXPECT_EQ(channels, 16);

  // Protocol only: the algorithm NCCL rates cheapest with LL128 (tree: 10 + 0 + 1).
  auto gather = table();
  rows = gather.data();
  channels = -7;
  ASSERT_EQ(v4_->getCollInfo(ctx, AllGather, 1 << 20, 1, reinterpret_cast<float**>(rows), kAlgos, kProtos, 0, &channels), kSuccess);
  EXPECT_EQ(gather[kAlgoTree * kProtos + kProtoLL128], 0.0f);
  EXPECT_EQ(channels, 4);
  // The rule is for 8 ranks: a 4-rank communicator keeps NCCL's choice.
  void* ctx4 = nullptr;
  ASSERT_EQ(v3_->init(4, 1, logger, &ctx4), kSuccess);
  auto other = table();
  rows = other.data();
  channels = -7;
  ASSERT_EQ(v3_->getCollInfo(ctx4, AllGather, 1 << 20, 1, reinterpret_cast<float**>(rows), kAlgos, kProtos, &channels), kSuccess);
  EXPECT_EQ(other, table());
  EXPECT_EQ(channels, -7);
  // No rule for broadcast: nothing changes.
  auto bcast = table();
  rows = bcast.data();
  ASSERT_EQ(v4_->getCollInfo(ctx, Broadcast, 1 << 20, 1, reinterpret_cast<float**>(rows), kAlgos, kProtos, 0, &channels), kSuccess);
  EXPECT_EQ(bcast, table());
  EXPECT_EQ(v4_->destroy(ctx), kSuccess);
  EXPECT_EQ(v3_->destroy(ctx4), kSuccess);
}

TEST_F(NcclTuner, ImpossibleChoiceLeavesNcclsAndWarnsOnce) {
  setenv("COLLSCOPE_NCCL_TUNER_RULES", rules_file("nvls", "allreduce 0 inf nvls simple -\n").c_str(), 1);
  void* ctx = nullptr;
  ASSERT_EQ(v4_->init(8, 1, logger, &ctx), kSuccess);
  for (int i = 0; i < 3; ++i) {
    auto t = table();
    float* rows = t.data();
    int channels = 0;
    ASSERT_EQ(v4_->getCollInfo(ctx, AllReduce, 1 << 20, 1, reinterpret_cast<float**>(rows), kAlgos, kProtos, 0, &channels), kSuccess);
    EXPECT_EQ(t, table());
  }
  int warnings = 0;
  for (const auto& l : g_log) warnings += l.starts_with("WARN") && l.find("cannot use") != std::string::npos;
  EXPECT_EQ(warnings, 1);
  v4_->destroy(ctx);
}

TEST_F(NcclTuner, BadOrMissingRulesFileLeavesNcclAloneWithOneWarning) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {rules_file("bad-op", "allreduce 0 inf ring simple -\nalltoall 0 inf ring simple -\n"), ":2: unknown op 'alltoall'"},
      {rules_file("bad-fields", "allreduce 0 inf ring\n"), ":1: expected"},
      {rules_file("bad-range", "allreduce 1M 1K ring simple -\n"), "min_bytes is above max_bytes"},
      {"/nonexistent/collscope.rules", "/nonexistent/collscope.rules: cannot open"},
  };
  for (const auto& [path, expected] : cases) {
    g_log.clear();
    setenv("COLLSCOPE_NCCL_TUNER_RULES", path.c_str(), 1);
    void* ctx = nullptr;
    ASSERT_EQ(v4_->init(8, 1, logger, &ctx), kSuccess) << path;
    ASSERT_EQ(g_log.size(), 1u) << path;
    EXPECT_TRUE(g_log[0].starts_with("WARN")) << g_log[0];
    EXPECT_NE(g_log[0].find(expected), std::string::npos) << g_log[0];
    auto t = table();
    float* rows = t.data();
    int channels = -7;
    ASSERT_EQ(v4_->getCollInfo(ctx, AllReduce, 1 << 20, 1, reinterpret_cast<float**>(rows), kAlgos, kProtos, 0, &channels), kSuccess);
    EXPECT_EQ(t, table());
    EXPECT_EQ(channels, -7);
    v4_->destroy(ctx);
  }
}

TEST_F(NcclTuner, Versions5And6TakeTheCommunicatorIdLeaveTheConstantsAndSetChunkSizes) {
  auto* v6 = static_cast<TunerV6*>(dlsym(handle_, "ncclTunerPlugin_v6"));
  auto* v5 = static_cast<TunerV5*>(dlsym(handle_, "ncclTunerPlugin_v5"));
  ASSERT_NE(v6, nullptr);
  ASSERT_NE(v5, nullptr);
  ASSERT_NE(v6->getChunkSize, nullptr);
  setenv("COLLSCOPE_NCCL_TUNER_RULES",
         rules_file("v6", "allreduce 0 64K tree ll 2\n"
                          "allreduce 64K inf ring simple 8 chunk=512K\n"
                          "allgather 0 inf - - - chunk=128K\n").c_str(), 1);
  NvlDomainInfoV5 nvl{1, 8, 8};
  TunerConstantsV5 constants;
  std::memset(&constants, 0, sizeof constants);
  constants.baseLatencies[kAlgoRing][kProtoSimple] = 8.4;
  const TunerConstantsV5 before = constants;
  void* ctx = nullptr;
  ASSERT_EQ(v6->init(&ctx, 0xc0ffee, 8, 1, logger, &nvl, &constants), kSuccess);
  EXPECT_EQ(std::memcmp(&before, &constants, sizeof constants), 0);  // NCCL's cost model stays NCCL's

  auto t = table();
  int channels = -7;
  ASSERT_EQ(v6->getCollInfo(ctx, AllReduce, 1 << 20, 1, reinterpret_cast<float**>(t.data()), kAlgos, kProtos, 0, &channels),
            kSuccess);
  EXPECT_EQ(t[kAlgoRing * kProtos + kProtoSimple], 0.0f);
  EXPECT_EQ(channels, 8);
  std::size_t chunk = 131072;  // NCCL's own choice
  ASSERT_EQ(v6->getChunkSize(ctx, AllReduce, 1 << 20, kAlgoRing, kProtoSimple, 8, &chunk), kSuccess);
  EXPECT_EQ(chunk, 512u << 10);
  chunk = 131072;  // the rule's chunk is for ring/simple: NCCL running tree keeps its own
  ASSERT_EQ(v6->getChunkSize(ctx, AllReduce, 1 << 20, kAlgoTree, kProtoSimple, 8, &chunk), kSuccess);
  EXPECT_EQ(chunk, 131072u);
  chunk = 4096;  // a rule without a chunk leaves NCCL's
  ASSERT_EQ(v6->getChunkSize(ctx, AllReduce, 1024, kAlgoTree, kProtoLL, 2, &chunk), kSuccess);
  EXPECT_EQ(chunk, 4096u);
  chunk = 1;  // a chunk-only rule, any algorithm
  ASSERT_EQ(v6->getChunkSize(ctx, AllGather, 1 << 20, kAlgoRing, kProtoLL128, 4, &chunk), kSuccess);
  EXPECT_EQ(chunk, 128u << 10);

  // Each rule says once per communicator that it decided, at INFO (what NCCL_DEBUG=INFO shows).
  for (int i = 0; i < 3; ++i) {
    auto u = table();
    v6->getCollInfo(ctx, AllReduce, 4 << 20, 1, reinterpret_cast<float**>(u.data()), kAlgos, kProtos, 0, &channels);
  }
  int decided = 0;
  for (const auto& l : g_log) decided += l.find("collscope tuner: rule 2 (allreduce 64K inf ring simple 8 chunk=512K) decides allreduce") != std::string::npos;
  EXPECT_EQ(decided, 1);
  EXPECT_EQ(v6->finalize(ctx), kSuccess);

  // v5: the same rules through NCCL 2.28's interface (no chunk sizes there).
  ASSERT_EQ(v5->init(&ctx, 0xc0ffee, 4, 1, logger, &nvl, &constants), kSuccess);
  auto small = table();
  channels = -7;
  ASSERT_EQ(v5->getCollInfo(ctx, AllReduce, 4096, 1, reinterpret_cast<float**>(small.data()), kAlgos, kProtos, 0, &channels),
            kSuccess);
  EXPECT_EQ(small[kAlgoTree * kProtos + kProtoLL], 0.0f);
  EXPECT_EQ(channels, 2);
  EXPECT_EQ(v5->finalize(ctx), kSuccess);
}

TEST(NcclTunerRules, FormatAndParseRoundTripAndChunkErrors) {
  std::string error;
  const std::string text = "allreduce 0 64K tree ll 2\nallgather 1M inf - simple - ranks=8 chunk=256K\nreduce 0 inf ring - 4 16\n";
  auto rules = parse_rules(text, "r.txt", error);
  ASSERT_TRUE(rules) << error;
  ASSERT_EQ(rules->size(), 3u);
  EXPECT_EQ((*rules)[1].ranks, 8);
  EXPECT_EQ((*rules)[1].chunk_bytes, 256u << 10);
  EXPECT_EQ((*rules)[2].ranks, 16);  // the older form: a bare 7th number is ranks
  std::string again;
  for (const auto& r : *rules) again += format_rule(r) + "\n";
  EXPECT_EQ(again, "allreduce 0 64K tree ll 2\nallgather 1M inf - simple - ranks=8 chunk=256K\nreduce 0 inf ring - 4 ranks=16\n");
  auto back = parse_rules(again, "again", error);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->size(), 3u);
  EXPECT_FALSE(parse_rules("allreduce 0 inf ring ll 2 chunk=0\n", "c.txt", error));
  EXPECT_NE(error.find("c.txt:1: chunk must be"), std::string::npos) << error;
  EXPECT_FALSE(parse_rules("allreduce 0 inf ring ll 2 speed=9\n", "s.txt", error));
  EXPECT_NE(error.find("s.txt:1: unknown field 'speed=9'"), std::string::npos) << error;
}

// A study over NCCL's per-size choices: each trial runs the job with the tuner plugin and the rules the space's
// template makes of the trial's knobs; the best becomes a rules file that the plugin, loaded as NCCL loads it,
// then applies per size (no NCCL_ALGO/NCCL_PROTO for the whole job).
TEST_F(NcclTuner, StudyExportsTheRulesThePluginThenApplies) {
  const auto dir = fs::temp_directory_path() / ("collscope-tuner-study-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto space = dir / "space.yaml";
  std::ofstream(space) << R"(knobs:
  - {name: small_proto, type: categorical, values: [simple, ll]}
  - {name: large_algo, type: categorical, values: [tree, ring]}
  - {name: large_channels, type: categorical, values: ["4", "16"]}
  - {name: large_chunk_kb, type: categorical, values: ["128", "512"]}
config_files:
  - path: nccl.rules
    contents: |
      allreduce 0 64K tree {small_proto} -
      allreduce 64K inf {large_algo} simple {large_channels} chunk={large_chunk_kb}K
objective: {kind: regex, regex: 'Avg bus bandwidth\s*:\s*([0-9.]+)', unit: GB/s}
trial: {timeout_s: 60, confirm_top: 1, early_stopping: false}
)";
  const auto rules = dir / "best.rules";
  const std::string bin = COLLSCOPE_TEST_BIN;
  const std::string cmd =
      "cd " + dir.string() + " && COLLSCOPE_PRELOAD=" COLLSCOPE_TEST_PRELOAD " " + bin + "/collscope tune " +
      space.string() + " --strategy grid --no-progress --study " + (dir / "study.sqlite").string() +
      " --export-nccl-rules " + rules.string() + " -- env NCCL_TUNER_PLUGIN=" COLLSCOPE_TEST_TUNER
      " COLLSCOPE_NCCL_TUNER_RULES={trial_dir}/nccl.rules " + bin + "/nccl_tuner_probe > " + (dir / "tune.out").string() + " 2>&1";
  ASSERT_EQ(shell(cmd), 0) << cmd;
  std::ifstream in(rules);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("allreduce 0 64K tree ll -\nallreduce 64K inf ring simple 16 chunk=512K\n"), std::string::npos) << text;

  setenv("COLLSCOPE_NCCL_TUNER_RULES", rules.c_str(), 1);
  auto* v6 = static_cast<TunerV6*>(dlsym(handle_, "ncclTunerPlugin_v6"));
  void* ctx = nullptr;
  ASSERT_EQ(v6->init(&ctx, 7, 8, 1, logger, nullptr, nullptr), kSuccess);
  EXPECT_NE(g_log.at(0).find("2 rules"), std::string::npos) << g_log.at(0);
  auto small = table();
  int channels = -7;
  v6->getCollInfo(ctx, AllReduce, 4096, 1, reinterpret_cast<float**>(small.data()), kAlgos, kProtos, 0, &channels);
  EXPECT_EQ(small[kAlgoTree * kProtos + kProtoLL], 0.0f);
  EXPECT_EQ(channels, -7);
  auto large = table();
  v6->getCollInfo(ctx, AllReduce, 16 << 20, 1, reinterpret_cast<float**>(large.data()), kAlgos, kProtos, 0, &channels);
  EXPECT_EQ(large[kAlgoRing * kProtos + kProtoSimple], 0.0f);
  EXPECT_EQ(channels, 16);
  std::size_t chunk = 131072;
  v6->getChunkSize(ctx, AllReduce, 16 << 20, kAlgoRing, kProtoSimple, 16, &chunk);
  EXPECT_EQ(chunk, 512u << 10);
  v6->finalize(ctx);
}
