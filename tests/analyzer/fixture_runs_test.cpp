// The analyzer on real Horovod 0.28.1 runs nobody on the project wrote (tests/data/horovod-0.28.1-cpu, README
// there): the ground truth is what the jobs did and printed.
#include <collscope/analyzer/analysis.hpp>
#include <collscope/analyzer/compare.hpp>
#include <collscope/analyzer/report.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include <nlohmann/json.hpp>

#include "test_support.hpp"
#include "finding_lookup.hpp"

namespace fs = std::filesystem;
using namespace collscope::analyzer;

namespace {

using collscope::test::find_finding;

const Analysis& fixture(const std::string& name) {
  static std::map<std::string, Analysis> cache;
  auto it = cache.find(name);
  if (it == cache.end())
    it = cache.emplace(name, analyze_run(collscope::test::unpack_test_data("horovod-0.28.1-cpu/" + name).string())).first;
  return it->second;
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

TEST(HorovodFixtures, StragglerFromNvtxPhasesWithItsInjectedDelay) {
  // Rank 1 sleeps 30 ms between forward and backward in every step.
  const Analysis& a = fixture("straggler-rank1-30ms-nvtx");
  EXPECT_EQ(a.lateness.source, collscope::run::LatenessSource::Phases);
  const Finding* f = find_finding(a, FindingKind::Straggler);
  ASSERT_NE(f, nullptr) << text_report(a);
  EXPECT_EQ(f->ranks, std::vector<int>{1});
  // Where it falls behind: the 30 ms sleep, exactly where it is.
  EXPECT_NEAR(f->evidence.at("largest_lag_gain_ns"), 30e6, 0.2 * 30e6) << f->title;
  EXPECT_NE(f->title.find("between forward and backward"), std::string::npos) << f->title;
  // Its lateness at the synchronisation is the sleep plus what rank 1 lags with nothing injected: on this 2-core
  // host its forward and backward run a few ms slower (7.7 ms late per step in the plain twin run, below the
  // straggler threshold there). The injection adds 30 ms +-20 % to that.
  const Analysis& plain = fixture("plain-nvtx");
  const double added = f->evidence.at("lateness_per_step_ns") - plain.lateness.median_lateness_ns.at(1);
  EXPECT_NEAR(added, 30e6, 0.2 * 30e6);
  // The finding, the table and the JSON say the same number.
  EXPECT_DOUBLE_EQ(f->evidence.at("lateness_per_step_ns"), a.lateness.median_lateness_ns.at(1));
  const auto j = json_report(a);
  EXPECT_DOUBLE_EQ(j["ranks"][1]["lateness_per_step_ns"].get<double>(), f->evidence.at("lateness_per_step_ns"));
  EXPECT_NE(text_report(a).find(fmt::format("{:.2f}", a.lateness.median_lateness_ns.at(1) / 1e6)), std::string::npos);
}

TEST(HorovodFixtures, NoStragglerOnThePlainRuns) {
  for (const char* name : {"plain", "plain-nvtx"}) {
    const Analysis& a = fixture(name);
    EXPECT_EQ(find_finding(a, FindingKind::Straggler), nullptr) << name << "\n" << text_report(a);
  }
}

TEST(HorovodFixtures, StragglerWithoutPhasesSaysWhyItCannotBeSeen) {
  // No NVTX: all collectives come from Horovod's background thread and meet in lockstep. Nobody is named (in
  // particular not rank 0, whom the cycle's phase makes wait), and the report says why in one line.
  const Analysis& a = fixture("straggler-rank1-30ms");
  EXPECT_EQ(find_finding(a, FindingKind::Straggler), nullptr) << text_report(a);
  EXPECT_FALSE(a.lateness.measurable());
  EXPECT_NE(a.lateness.basis.find("background thread"), std::string::npos) << a.lateness.basis;
  // The text report wraps at 100 columns: compare with runs of white space as one space.
  auto words = [](const std::string& s) {
    std::string out;
    for (char c : s)
      if (!std::isspace(static_cast<unsigned char>(c))) out += c;
      else if (!out.empty() && out.back() != ' ') out += ' ';
    return out;
  };
  EXPECT_NE(words(text_report(a)).find(words(a.lateness.basis)), std::string::npos);
}

TEST(HorovodFixtures, AdviceFitsTheJob) {
  // Horovod 0.28 with its knobs unset: fusion threshold 128 MiB, cycle time 1 ms. The job's own measurement: the
  // fusion threshold hardly mattered, a ~9 ms cycle gave +36 % samples/s. No NVIDIA library anywhere: MPI only.
  for (const char* name : {"plain", "plain-nvtx", "straggler-rank1-30ms", "straggler-rank1-30ms-nvtx", "hang-rank1-never-submits"}) {
    const Analysis& a = fixture(name);
    for (const auto& f : a.findings) {
      EXPECT_EQ(f.suggestion.find("NCCL_"), std::string::npos) << name << ": " << f.suggestion;
      EXPECT_EQ(f.suggestion.find("HOROVOD_FUSION_THRESHOLD=134217728"), std::string::npos) << name << ": " << f.suggestion;
      EXPECT_EQ(f.suggestion.find("HOROVOD_CYCLE_TIME=1 "), std::string::npos) << name << ": " << f.suggestion;
      // No overlap claims without compute data (no NVTX, no GPU): only the NVTX runs may have one.
      if (a.steps.method != collscope::run::StepMethod::Nvtx) {
        EXPECT_NE(f.kind, FindingKind::ExposedCommunication) << name;
      }
    }
  }
  for (const char* name : {"plain", "straggler-rank1-30ms"}) {
    const Analysis& a = fixture(name);
    const Finding* f = find_finding(a, FindingKind::LatencyBound);
    ASSERT_NE(f, nullptr) << name << "\n" << text_report(a);
    EXPECT_NE(f->suggestion.find("HOROVOD_CYCLE_TIME="), std::string::npos) << f->suggestion;
    EXPECT_EQ(f->suggestion.find("HOROVOD_FUSION_THRESHOLD="), std::string::npos) << f->suggestion;
    EXPECT_EQ(f->evidence.at("cycle_time_ms"), 1);
    EXPECT_EQ(f->evidence.at("fusion_threshold_bytes"), 128 << 20);
    EXPECT_GE(f->evidence.at("suggested_cycle_time_ms"), 2);
    EXPECT_LE(f->evidence.at("suggested_cycle_time_ms"), 20);
  }
}

TEST(HorovodFixtures, HungJobIsAStallNotAMismatch) {
  // Rank 0 submits a tensor rank 1 never submits; Horovod's background threads cycle their negotiation for 24 s
  // until the job is killed. Each rank's last writer batch was lost at the kill (21 853 vs 21 851 calls): that is
  // a truncated trace, not a collective mismatch, and the cycling is no straggler.
  const Analysis& a = fixture("hang-rank1-never-submits");
  EXPECT_EQ(find_finding(a, FindingKind::Mismatch), nullptr) << text_report(a);
  EXPECT_EQ(find_finding(a, FindingKind::Straggler), nullptr) << text_report(a);
  ASSERT_FALSE(a.findings.empty());
  const Finding& f = a.findings.front();
  EXPECT_EQ(f.kind, FindingKind::Stall) << text_report(a);
  EXPECT_EQ(f.severity, Severity::Critical);
  EXPECT_EQ(f.ranks, (std::vector<int>{0, 1}));  // both still cycling: the MPI calls cannot tell who withholds
  EXPECT_NE(f.title.find("stalled"), std::string::npos) << f.title;
  EXPECT_GT(f.evidence.at("quiet_ns"), 20e9);
  EXPECT_LT(f.evidence.at("last_payload_ns"), 50e6);  // the five allreduces at the start
  EXPECT_NE(f.evidence_text.find("Missing ranks"), std::string::npos) << f.evidence_text;
  ASSERT_EQ(a.notes.size(), 1u);
  EXPECT_NE(a.notes[0].find("rank 1's trace lacks its last 2 call(s)"), std::string::npos) << a.notes[0];
  EXPECT_NE(a.notes[0].find("Truncated, not a mismatch"), std::string::npos) << a.notes[0];
}

TEST(HorovodFixtures, NoMismatchHangOrStallOnThePlainRuns) {
  for (const char* name : {"plain", "plain-nvtx", "straggler-rank1-30ms", "straggler-rank1-30ms-nvtx"}) {
    const Analysis& a = fixture(name);
    EXPECT_EQ(find_finding(a, FindingKind::Mismatch), nullptr) << name << "\n" << text_report(a);
    EXPECT_EQ(find_finding(a, FindingKind::Stall), nullptr) << name << "\n" << text_report(a);
    EXPECT_TRUE(a.notes.empty()) << name;
  }
}

// Golden reports, in the Perfetto style: the exact JSON report of each fixture is checked in beside it
// (tests/data/horovod-0.28.1-cpu/golden/), so any change in any number is a visible diff in review. Numbers are
// compared at 6 significant digits (the last bits of a double may differ between compilers); the run directory
// and rank files (temporary paths) keep their names only, the analysis time is left out. Regenerate after an intended change with
// COLLSCOPE_UPDATE_GOLDEN=1 ctest -R Golden, and read the diff before committing it.
namespace {

nlohmann::json comparable(const nlohmann::json& j) {
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : j.items())
      if (k == "file" && v.is_string()) out[k] = fs::path(v.get<std::string>()).filename().string();  // a temp path
      else if (k != "run_dir" && k != "analysis_seconds") out[k] = comparable(v);
    return out;
  }
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : j) out.push_back(comparable(v));
    return out;
  }
  if (j.is_number_float()) return std::stod(fmt::format("{:.6g}", j.get<double>()));
  return j;
}

}  // namespace

TEST(HorovodFixtures, CommunicatorsNamedAsPeopleKnowThem) {
  // Horovod 0.28.1 dups MPI_COMM_WORLD, dups that twice (its process-set contexts) and the second again; the
  // training traffic runs on that last dup, recorded as dup(dup(dup(MPI_COMM_WORLD#0)#1)#0).
  const Analysis& a = fixture("plain");
  std::map<std::string, std::string> shown;  // recorded → display
  for (const auto& c : a.run.communicators) shown[c.name] = c.shown_name();
  EXPECT_EQ(shown.at("MPI_COMM_WORLD"), "MPI_COMM_WORLD");
  EXPECT_EQ(shown.at("dup(MPI_COMM_WORLD#0)"), "dup of MPI_COMM_WORLD (Horovod) #1");
  EXPECT_EQ(shown.at("dup(dup(dup(MPI_COMM_WORLD#0)#1)#0)"), "dup of MPI_COMM_WORLD (Horovod) #4");
  EXPECT_EQ(shown.at("split(dup(dup(dup(MPI_COMM_WORLD#0)#1)#0)#1,color=0)"),
            "split of dup of MPI_COMM_WORLD (Horovod) #4, colour 0, 1 rank");
  EXPECT_NE(a.steps.basis.find("on dup of MPI_COMM_WORLD (Horovod) #4:"), std::string::npos) << a.steps.basis;
  // The JSON keeps the recorded name and adds the display name.
  const auto j = json_report(a);
  bool found = false;
  for (const auto& c : j["communicators"])
    if (c["name"] == "dup(dup(dup(MPI_COMM_WORLD#0)#1)#0)") found = c["display_name"] == "dup of MPI_COMM_WORLD (Horovod) #4";
  EXPECT_TRUE(found) << j["communicators"].dump(1);
}

TEST(HorovodFixtures, TextReportsFitA100ColumnTerminal) {
  const std::string machine_prefix = collscope::test::temp_root("collscope-test-data").string();
  const char* names[] = {"plain", "plain-nvtx", "straggler-rank1-30ms", "straggler-rank1-30ms-nvtx", "hang-rank1-never-submits"};
  for (const char* name : names) {
    const auto [columns, line] = collscope::test::widest_line(text_report(fixture(name)), machine_prefix);
    EXPECT_LE(columns, 100u) << name << ": " << line;
  }
  for (const auto& [base, next] : {std::pair{"plain", "straggler-rank1-30ms"}, std::pair{"plain-nvtx", "straggler-rank1-30ms-nvtx"}}) {
    const auto [columns, line] = collscope::test::widest_line(comparison_text(compare_analyses(fixture(base), fixture(next), 0.05)), machine_prefix);
    EXPECT_LE(columns, 100u) << base << " vs " << next << ": " << line;
  }
}

TEST(HorovodFixtures, GoldenReports) {
  const fs::path golden_dir = fs::path(COLLSCOPE_TEST_DATA_DIR) / "horovod-0.28.1-cpu" / "golden";
  const bool update = std::getenv("COLLSCOPE_UPDATE_GOLDEN") != nullptr;
  for (const char* name : {"plain", "plain-nvtx", "straggler-rank1-30ms", "straggler-rank1-30ms-nvtx", "hang-rank1-never-submits"}) {
    const std::string actual = comparable(json_report(fixture(name))).dump(1) + "\n";
    const fs::path golden = golden_dir / (std::string(name) + ".json");
    if (update) {
      fs::create_directories(golden_dir);
      std::ofstream(golden) << actual;
      continue;
    }
    std::ifstream in(golden);
    ASSERT_TRUE(in) << golden << " is missing: run with COLLSCOPE_UPDATE_GOLDEN=1 to write it";
    const std::string expected((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (actual != expected) {
      const fs::path got = collscope::test::temp_root("collscope-golden") / (std::string(name) + ".json");
      std::ofstream(got) << actual;
      ADD_FAILURE() << name << ": the report changed; see `diff " << golden.string() << " " << got.string()
                    << "`; if intended, regenerate with COLLSCOPE_UPDATE_GOLDEN=1";
    }
  }
}
