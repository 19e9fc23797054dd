// The study report on trials with a known optimum: the knob effect finds it, its uncertainty grows away from the
// trials, the charts have integer trial ticks and parse as XML.
#include <collscope/autotuner/report.hpp>
#include <collscope/autotuner/search_space.hpp>
#include <collscope/autotuner/study.hpp>
#include <collscope/autotuner/tuner.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include "test_support.hpp"

using namespace collscope::autotuner;
using collscope::test::shell;
namespace fs = std::filesystem;

namespace {

// x in [0, 1] (optimum 0.3), mode a or b (b is 10 better), batch 8..64 (no effect); samples/s, higher is better.
const char* kSpace = R"(knobs:
  - {name: x, min: 0, max: 1}
  - {name: mode, type: categorical, values: [a, b]}
  - {name: batch, type: integer, min: 8, max: 64}
objective: {kind: throughput, batch_size: batch}
)";

double truth(double x, const std::string& mode) { return 100 - 400 * (x - 0.3) * (x - 0.3) + (mode == "b" ? 10 : 0); }

std::vector<TrialRecord> trials(const SearchSpace& space) {
  std::vector<TrialRecord> out;
  // Trials only in x <= 0.6: the model knows nothing near x = 1.
  const double xs[] = {0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.15, 0.45, 0.3};
  for (int i = 0; i < 12; ++i) {
    TrialRecord t;
    t.id = i + 1;
    t.kind = i < 5 ? "design" : "expected-improvement";
    t.status = TrialStatus::Ok;
    const std::string mode = i % 2 ? "b" : "a";
    t.values = {fmt::format("{}", xs[i]), mode, std::to_string(8 + 4 * i)};
    t.unit = space.to_unit(t.values);
    t.score = truth(xs[i], mode);
    out.push_back(t);
  }
  TrialRecord failed;
  failed.id = 13;
  failed.kind = "expected-improvement";
  failed.status = TrialStatus::Failed;
  failed.reason = "out of memory";
  failed.values = {"0.55", "a", "64"};
  failed.unit = space.to_unit(failed.values);
  out.push_back(failed);
  return out;
}

}  // namespace

TEST(StudyReport, KnobEffectFindsTheOptimumWithUncertaintyAwayFromTrials) {
  const auto space = SearchSpace::parse(kSpace, "report.yaml");
  const auto all = trials(space);
  const KnobEffect x = knob_effect(space, all, 0);
  ASSERT_GE(x.values.size(), 20u);
  const auto top = std::max_element(x.mean.begin(), x.mean.end()) - x.mean.begin();
  EXPECT_NEAR(std::stod(x.values[static_cast<std::size_t>(top)]), 0.3, 0.1);
  // The band is narrow where trials ran and wide where none did.
  EXPECT_GT(x.sd.back(), 3 * x.sd[static_cast<std::size_t>(top)]);
  const KnobEffect mode = knob_effect(space, all, 1);
  ASSERT_EQ(mode.values, (std::vector<std::string>{"a", "b"}));
  EXPECT_GT(mode.mean[1], mode.mean[0] + 5);
  // A small integer range gets every level it can tell apart, no more.
  const KnobEffect batch = knob_effect(space, all, 2);
  EXPECT_GE(batch.values.size(), 20u);
  EXPECT_TRUE(std::is_sorted(batch.values.begin(), batch.values.end(),
                             [](const auto& a, const auto& b) { return std::stoi(a) < std::stoi(b); }));
  EXPECT_TRUE(knob_effect(space, {}, 0).values.empty());
}

TEST(StudyReport, ChartsHaveIntegerTrialTicksUnitsAndParse) {
  const auto space = SearchSpace::parse(kSpace, "report.yaml");
  const auto dir = fs::temp_directory_path() / fmt::format("collscope-study-report-{}", ::getpid());
  fs::remove_all(dir);
  write_report(space, trials(space), dir.string(), "test study");
  for (const char* f : {"index.html", "convergence.svg", "effect-x.svg", "effect-mode.svg", "effect-batch.svg"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  std::ifstream in(dir / "convergence.svg");
  const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto ticks_at = svg.find("<g class=\"ticks\"");
  ASSERT_NE(ticks_at, std::string::npos);
  const std::string ticks = svg.substr(ticks_at, svg.find("</g>", ticks_at) - ticks_at);
  static const std::regex x_tick(R"(text-anchor="middle">([^<]*)<)");
  int count = 0;
  for (std::sregex_iterator it(ticks.begin(), ticks.end(), x_tick), end; it != end; ++it, ++count)
    EXPECT_TRUE(std::regex_match((*it)[1].str(), std::regex("[0-9]+"))) << (*it)[1].str();  // whole trials only
  EXPECT_GE(count, 2);
  EXPECT_NE(svg.find("failed (no score"), std::string::npos);
  EXPECT_NE(svg.find("trial 13 failed: out of memory"), std::string::npos);
  std::ifstream page(dir / "index.html");
  const std::string html((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("95 % band"), std::string::npos);
  EXPECT_EQ(html.find("e+0"), std::string::npos);  // no scientific notation anywhere
  const int rc = shell(fmt::format("python3 -c \"import re,sys,xml.etree.ElementTree as E; "
                                         "t=open(sys.argv[1],encoding='utf-8').read(); "
                                         "s=re.findall(r'<svg.*?</svg>',t,re.S); [E.fromstring(x) for x in s]; "
                                         "sys.exit(0 if len(s)==4 else 3)\" {}",
                                         (dir / "index.html").string()));
  EXPECT_EQ(rc, 0);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);  // kept to look at when a check failed
}

// The convergence curve's "best so far" is the tuner's best (best_settings: the best setting's mean over its runs)
// after each trial, not the best single run: a lucky run then a worse rerun of the same setting must bring it down.
TEST(StudyReport, BestSoFarIsTheBestSettingsMeanAfterEachTrial) {
  const auto space = SearchSpace::parse(kSpace, "report.yaml");
  auto trial = [&](int id, const std::string& x, double score, TrialStatus status = TrialStatus::Ok) {
    TrialRecord t;
    t.id = id;
    t.kind = id > 3 ? "confirm" : "design";
    t.status = status;
    t.values = {x, "a", "8"};
    t.unit = space.to_unit(t.values);
    t.score = score;
    return t;
  };
  // A: 100; B: 120 then 90 (mean 105); a failed trial changes nothing; A again at 110 (mean 105, a tie).
  const std::vector<TrialRecord> known{trial(1, "0.1", 100), trial(2, "0.2", 120), trial(3, "0.2", 90),
                                       trial(4, "0.3", 500, TrialStatus::Failed), trial(5, "0.1", 110)};
  const auto best = best_mean_after_each(space, known);
  ASSERT_EQ(best.size(), 5u);
  EXPECT_EQ(best[0], 100.0);
  EXPECT_EQ(best[1], 120.0);
  EXPECT_EQ(best[2], 105.0);  // the best single run so far is 120: the curve is not that
  EXPECT_EQ(best[3], 105.0);
  EXPECT_EQ(best[4], 105.0);
  // On a longer study with many reruns, every point equals best_settings() on the trials up to it.
  std::vector<TrialRecord> many;
  unsigned state = 12345;
  for (int i = 0; i < 300; ++i) {
    state = state * 1103515245u + 12345u;
    const std::string x = fmt::format("0.{}", (state >> 16) % 7);
    many.push_back(trial(i + 1, x, double((state >> 8) % 1000) / 10, (state >> 4) % 11 == 0 ? TrialStatus::Failed : TrialStatus::Ok));
  }
  const auto curve = best_mean_after_each(space, many);
  for (std::size_t n = 1; n <= many.size(); ++n) {
    const auto reference = best_settings(space, std::vector<TrialRecord>(many.begin(), many.begin() + long(n)));
    ASSERT_EQ(curve[n - 1].has_value(), reference.has_value()) << n;
    if (reference) {
      EXPECT_DOUBLE_EQ(*curve[n - 1], reference->mean_score) << n;
    }
  }
}

// A knob with `unit: bytes` is shown humanised wherever people read it (the setting, the trial table, the effect
// chart's ticks); the job and --export-env keep the raw number.
TEST(StudyReport, ByteKnobsShownInBytesUnits) {
  const auto space = SearchSpace::parse(R"(knobs:
  - {name: fusion_threshold, env: HOROVOD_FUSION_THRESHOLD, type: integer, scale: log, min: 65536, max: 268435456, unit: bytes}
  - {name: cycle, type: real, min: 0.1, max: 100, unit: ms}
objective: {kind: throughput}
)", "bytes.yaml");
  const Assignment best = {"146292434", "5"};
  EXPECT_EQ(space.describe(best), "fusion_threshold=140 MiB cycle=5 ms");
  EXPECT_EQ(space.knobs()[0].shown("not a number"), "not a number");
  std::vector<TrialRecord> all;
  for (int i = 0; i < 4; ++i) {
    TrialRecord t;
    t.id = i + 1;
    t.kind = "design";
    t.status = TrialStatus::Ok;
    t.values = {std::to_string(65536L << (3 * i)), std::to_string(1 + i)};
    t.unit = space.to_unit(t.values);
    t.score = 100 + i;
    all.push_back(t);
  }
  const auto dir = fs::temp_directory_path() / fmt::format("collscope-study-report-bytes-{}", ::getpid());
  fs::remove_all(dir);
  write_report(space, all, dir.string(), "bytes study");
  std::ifstream page(dir / "index.html");
  const std::string html((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("<code>fusion_threshold=32 MiB</code>"), std::string::npos);  // the best trial: 65536 << 9
  EXPECT_NE(html.find("<td>64 KiB</td>"), std::string::npos);                     // the trial table
  EXPECT_EQ(html.find("33554432"), std::string::npos);                            // no raw byte count shown
  EXPECT_NE(html.find("cycle (ms)"), std::string::npos);                           // the effect chart's axis
  const auto space_error = [](const char* yaml) {
    try {
      SearchSpace::parse(yaml, "bad.yaml");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(space_error("knobs:\n  - {name: m, type: categorical, values: [a, b], unit: bytes}\n").find("bad.yaml"), std::string::npos);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}
