// The job's knobs and where each came from (run/job_settings.hpp), on in-memory runs whose meta says exactly what
// the job ran with: environment before command line before Horovod's version defaults; DDP's recorded buckets.
#include <collscope/run/job_settings.hpp>

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

using namespace collscope;
using run::SettingSource;

namespace {

// A run of `ranks` ranks, each with `meta` (keys as in the rank files: "env.NAME", "command_line", ...).
run::Run run_with(const std::map<std::string, std::string>& meta, int ranks = 2) {
  run::Run r;
  r.world_size = ranks;
  for (int i = 0; i < ranks; ++i) {
    run::RankTrace t;
    t.meta = meta;
    r.ranks.push_back(std::move(t));
  }
  return r;
}

}  // namespace

TEST(JobSettings, HorovodVersionDefaultsWhenTheJobSaysNothing) {
  const auto r = run_with({});
  run::Workload horovod_0_20;
  horovod_0_20.horovod = true;
  horovod_0_20.horovod_version = "0.20.3";
  const auto old = run::job_settings(r, horovod_0_20);
  EXPECT_TRUE(old.horovod_applies);
  EXPECT_EQ(old.horovod.fusion_threshold_bytes.value, std::int64_t{64} << 20);
  EXPECT_EQ(old.horovod.cycle_time_ms.value, 5.0);
  EXPECT_EQ(old.horovod.fusion_threshold_bytes.source, SettingSource::FrameworkDefault);
  EXPECT_FALSE(old.horovod.cycle_time_ms.set_by_job());
  EXPECT_EQ(old.horovod.defaults_text, "the defaults of Horovod 0.20.3");

  const auto current = run::job_settings(r, run::Workload{});
  EXPECT_FALSE(current.horovod_applies);  // not Horovod, and no knob set
  EXPECT_EQ(current.horovod.fusion_threshold_bytes.value, std::int64_t{128} << 20);
  EXPECT_EQ(current.horovod.cycle_time_ms.value, 1.0);
  EXPECT_FALSE(current.ddp.has_value());
}

TEST(JobSettings, EnvironmentBeforeCommandLine) {
  const auto both = run_with({{"env.HOROVOD_FUSION_THRESHOLD", "1048576"},
                              {"env.HOROVOD_CYCLE_TIME", "3.5"},
                              {"command_line", "trainer --fusion-threshold 2048"}});
  const auto s = run::job_settings(both, run::Workload{});
  EXPECT_TRUE(s.horovod_applies);
  EXPECT_EQ(s.horovod.fusion_threshold_bytes.value, 1048576);
  EXPECT_EQ(s.horovod.fusion_threshold_bytes.source, SettingSource::Environment);
  EXPECT_EQ(s.horovod.cycle_time_ms.value, 3.5);
  EXPECT_EQ(s.horovod.cycle_time_ms.source, SettingSource::Environment);

  const auto cli = run::job_settings(run_with({{"command_line", "trainer --fusion_threshold=2048"}}), run::Workload{});
  EXPECT_TRUE(cli.horovod_applies);
  EXPECT_EQ(cli.horovod.fusion_threshold_bytes.value, 2048);
  EXPECT_EQ(cli.horovod.fusion_threshold_bytes.source, SettingSource::CommandLine);
  EXPECT_FALSE(cli.horovod.cycle_time_ms.set_by_job());
}

TEST(JobSettings, ACycleTimeThatIsNotANumberKeepsTheDefaultButMarksHorovod) {
  const auto s = run::job_settings(run_with({{"env.HOROVOD_CYCLE_TIME", "soon"}}), run::Workload{});
  EXPECT_TRUE(s.horovod_applies);
  EXPECT_EQ(s.horovod.cycle_time_ms.value, 1.0);
  EXPECT_EQ(s.horovod.cycle_time_ms.source, SettingSource::FrameworkDefault);
}

TEST(JobSettings, DdpBucketCapAsRecordedOnTheFirstRank) {
  const auto s = run::job_settings(run_with({{"ddp.bucket_cap_mb", "25"}}), run::Workload{});
  ASSERT_TRUE(s.ddp.has_value());
  EXPECT_EQ(s.ddp->bucket_cap_mb.value, 25.0);
  EXPECT_EQ(s.ddp->bucket_cap_mb.source, SettingSource::Annotation);
  EXPECT_FALSE(s.ddp->find_unused_parameters.has_value());  // not recorded: unknown, not false
  EXPECT_TRUE(s.ddp->bucket_bytes.empty());
  EXPECT_FALSE(run::ddp_settings(run_with({{"ddp.bucket_cap_mb", "0"}})).has_value());
}

TEST(JobSettings, DdpConstructorArgumentsThreadsAndReducerLog) {
  auto r = run_with({{"ddp.bucket_cap_mb", "0.07"},
                     {"ddp.find_unused_parameters", "true"},
                     {"ddp.gradient_as_bucket_view", "false"},
                     {"ddp.static_graph", "maybe"},  // not DDP's spelling: unknown
                     {"torch.num_threads", "2"},
                     {"torch.cpus", "2"},
                     {"ddp.bucket_sizes", "1048576,66048,66048"},
                     {"ddp.unused_parameter_bytes", "0"},
                     {"ddp.sampled_iterations", "10"},
                     {"ddp.backward_comm_ns", "5000000"},
                     {"ddp.backward_overlap_ns", "1000000"}},
                    3);
  r.ranks[1].meta["ddp.backward_overlap_ns"] = "3000000";  // waited least: 2 ms exposed
  r.ranks[2].host = "other";
  const auto d = run::ddp_settings(r);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->bucket_cap_mb.value, 0.07);
  ASSERT_TRUE(d->find_unused_parameters && d->gradient_as_bucket_view && d->num_threads);
  EXPECT_TRUE(d->find_unused_parameters->value);
  EXPECT_FALSE(d->gradient_as_bucket_view->value);
  EXPECT_FALSE(d->static_graph.has_value());
  EXPECT_EQ(d->num_threads->value, 2);
  ASSERT_EQ(d->hosts.size(), 2u);
  EXPECT_EQ(d->hosts[0].ranks, 2);
  EXPECT_EQ(d->hosts[0].threads, 4);
  EXPECT_EQ(d->hosts[0].cpus, 2);
  EXPECT_EQ(d->hosts[1].host, "other");
  EXPECT_EQ(d->bucket_bytes, (std::vector<std::int64_t>{1048576, 66048, 66048}));
  EXPECT_EQ(d->unused_parameter_bytes, 0);
  EXPECT_EQ(d->sampled_iterations, 10);
  EXPECT_EQ(d->least_exposed_comm_ns, 2e6);
  r.ranks[0].meta["ddp.bucket_sizes"] = "1048576,x";  // not DDP's list: none rather than part of one
  EXPECT_TRUE(run::ddp_settings(r)->bucket_bytes.empty());
}

TEST(JobSettings, LoaderReadsEachRanksOwnThreshold) {
  run::RankTrace t;
  t.meta["env.HOROVOD_FUSION_THRESHOLD"] = "4096";
  EXPECT_EQ(run::horovod_fusion_threshold_in_environment(t), 4096);
  t.meta["env.HOROVOD_FUSION_THRESHOLD"] = "4k";
  EXPECT_FALSE(run::horovod_fusion_threshold_in_environment(t).has_value());
}
