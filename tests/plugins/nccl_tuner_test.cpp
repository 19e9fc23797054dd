// The NCCL tuner plugin as NCCL drives it: dlopen the .so, find ncclTunerPlugin_v4 / _v3, init per communicator,
// getCollInfo with NCCL's cost table (float[algorithms][protocols], -1 = not possible), destroy. NCCL itself needs
// a GPU (tests/gpu/run.sh loads the plugin into a real NCCL job there).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../../plugins/src/nccl_tuner/nccl_tuner_api.hpp"

namespace fs = std::filesystem;
using namespace collscope::nccl_tuner;

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
