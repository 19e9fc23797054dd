// The Horovod Timeline importer on timelines real Horovod 0.28.1 jobs wrote (tests/data/horovod-0.28.1-cpu, README
// there): 2 ranks, 30 steps, 101 gradient tensors; rank 1 sleeps 30 ms per step in the straggler run.
#include <collscope/analyzer/analysis.hpp>
#include <collscope/analyzer/report.hpp>
#include <collscope/formats/horovod_timeline.hpp>

#include <gtest/gtest.h>

#include <filesystem>

#include "test_support.hpp"
#include "finding_lookup.hpp"

namespace fs = std::filesystem;
using namespace collscope;

namespace {

using collscope::test::find_finding;

struct Imported {
  formats::HorovodImportCounts counts;
  analyzer::Analysis analysis;
};

// Unpacks timeline-<name>.json.gz and imports it (once per test process).
const Imported& imported(const std::string& name) {
  static std::map<std::string, Imported> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  const fs::path root = test::temp_root("collscope-timelines");
  const fs::path json = root / ("timeline-" + name + ".json");
  const fs::path gz = fs::path(COLLSCOPE_TEST_DATA_DIR) / "horovod-0.28.1-cpu" / ("timeline-" + name + ".json.gz");
  EXPECT_EQ(test::shell("gzip -dc '" + gz.string() + "' > '" + json.string() + "'"), 0);
  Imported x;
  x.counts = formats::import_horovod_timeline(json.string(), (root / name).string());
  x.analysis = analyzer::analyze_run((root / name).string());
  return cache.emplace(name, std::move(x)).first->second;
}

}  // namespace

TEST(HorovodFixtureTimelines, StepsAndBroadcastBytes) {
  for (const char* name : {"plain-cache-on", "plain-cache-off", "straggler-rank1-30ms-cache-off"}) {
    const auto& [counts, a] = imported(name);
    EXPECT_EQ(counts.ranks, 2) << name;
    EXPECT_EQ(counts.steps, 30) << name;
    EXPECT_EQ(a.steps.steps.size(), 30u) << name;
    // Broadcast end events carry no shape. broadcast_parameters' 101 tensors take their gradient's
    // ("broadcast.head.weight" <- "allreduce.head.weight"): 924 521 floats. The optimizer state
    // ("broadcast.momentum_buffer.17") has no named twin and stays unsized rather than guessed.
    std::int64_t bcast_bytes = 0;
    for (const auto& c : a.run.ranks[0].collectives)
      if (c.op == store::Op::Bcast) bcast_bytes += c.bytes;
    EXPECT_EQ(counts.sized_from_names, 101) << name;
    EXPECT_EQ(bcast_bytes, 924521 * 4) << name;
    // No host is claimed: one clock, the timeline's.
    for (const auto& r : a.run.ranks) EXPECT_EQ(r.host, "timeline clock") << name;
  }
}

TEST(HorovodFixtureTimelines, CacheOnCannotShowStragglersAndSaysSo) {
  const auto& [counts, a] = imported("plain-cache-on");
  EXPECT_GE(counts.steps_without_ticks, 28);
  EXPECT_NE(counts.lateness_unknown.find("response cache"), std::string::npos) << counts.lateness_unknown;
  EXPECT_NE(counts.lateness_unknown.find("HOROVOD_CACHE_CAPACITY=0"), std::string::npos) << counts.lateness_unknown;
  EXPECT_EQ(a.lateness.source, run::LatenessSource::None);
  EXPECT_NE(a.lateness.basis.find("response cache"), std::string::npos) << a.lateness.basis;
  EXPECT_EQ(find_finding(a, analyzer::FindingKind::Straggler), nullptr) << analyzer::text_report(a);
}

TEST(HorovodFixtureTimelines, CacheOffNegotiationLagIsNotAStraggler) {
  // With the cache off every step has ticks, but on this 2-core host rank 1's lag behind rank 0 swings from 0 to
  // 300 ms from step to step with nothing injected (and around 150 ms with 30 ms injected): the coordinator's
  // negotiation sets it. Neither run may name a straggler; both say why lateness cannot be measured.
  for (const char* name : {"plain-cache-off", "straggler-rank1-30ms-cache-off"}) {
    const auto& [counts, a] = imported(name);
    EXPECT_EQ(counts.steps_without_ticks, 0) << name;
    EXPECT_NE(counts.lateness_unknown.find("negotiation delays set them"), std::string::npos) << name << ": " << counts.lateness_unknown;
    EXPECT_EQ(a.lateness.source, run::LatenessSource::None) << name;
    EXPECT_EQ(find_finding(a, analyzer::FindingKind::Straggler), nullptr) << name << "\n" << analyzer::text_report(a);
    EXPECT_EQ(find_finding(a, analyzer::FindingKind::ExposedCommunication), nullptr) << name;
  }
}
