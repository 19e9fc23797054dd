// One clock for every view of a run: the viewer's timeline, the analyzer's JSON report and the Chrome export put
// every collective at the same run time, to the nanosecond (all three take ClockAlignment from collscope::run and
// count from its origin_ns). On a synthetic run whose hosts' clocks disagree by milliseconds and, when
// COLLSCOPE_SAMPLE_RUN names one, on the sample's real traced run.
#include <collscope/analyzer/analysis.hpp>
#include <collscope/analyzer/report.hpp>
#include <collscope/gui/run_data_loader.hpp>
#include <collscope/formats/chrome_trace.hpp>
#include <collscope/store/trace_reader.hpp>
#include <collscope/testing/synthetic_run.hpp>

#include <QTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <tuple>

namespace fs = std::filesystem;
using namespace collscope;

namespace {

// (world rank, communicator key, seq) -> run time of the call's start.
using Starts = std::map<std::tuple<int, std::uint64_t, std::int64_t>, std::int64_t>;

Starts timeline_starts(const gui::TimelineModel& m) {
  Starts out;
  for (std::uint32_t id = 0; id < m.collective_count(); ++id) {
    if (m.in_flight(id)) continue;
    const auto& c = m.call(id);
    out[{m.run().ranks[m.rank_of_collective(id)].world_rank, m.run().communicators[c.comm].key, c.seq}] =
        m.collective(id).start_ns;
  }
  return out;
}

}  // namespace

class TimeAgreementTest : public QObject {
  Q_OBJECT

  void check(const fs::path& dir) {
    const auto data = gui::load_run(dir.string());
    const auto& m = data->model();
    const Starts timeline = timeline_starts(m);
    QVERIFY(timeline.size() > 10);

    // The JSON report: raw start (read back from each rank file) + the rank's clock_offset_ns − clock.origin_ns.
    const auto report = analyzer::json_report(analyzer::analyze_run(dir.string()));
    const std::int64_t origin = report["clock"]["origin_ns"].get<std::int64_t>();
    std::size_t compared = 0;
    for (const auto& rank : report["ranks"]) {
      const int world = rank["world_rank"].get<int>();
      const std::int64_t offset = rank["clock_offset_ns"].get<std::int64_t>();
      store::TraceReader reader(rank["file"].get<std::string>());
      std::map<std::int64_t, std::uint64_t> key_of;
      for (const auto& c : reader.communicators()) key_of[c.id] = c.key;
      reader.for_each_collective_summary([&](const store::CollectiveSummary& c) {
        const auto it = timeline.find({world, key_of.at(c.comm), c.seq});
        QVERIFY(it != timeline.end());
        QCOMPARE(c.start_ns + offset - origin, it->second);
        ++compared;
      });
    }
    QCOMPARE(compared, timeline.size());
    // Steps: the report's (aligned) starts are the timeline's step band.
    QCOMPARE(report["steps"].size(), data->steps.size());
    for (std::size_t k = 0; k < data->steps.size(); ++k)
      QCOMPARE(report["steps"][k]["start_ns"].get<std::int64_t>() - origin, data->steps[k].start_ns);

    // The Chrome export: "ts" in microseconds with three decimals, i.e. nanoseconds of run time.
    std::ostringstream out;
    formats::export_chrome_trace(dir.string(), out);
    const auto trace = nlohmann::json::parse(out.str());
    std::map<std::string, std::uint64_t> key_by_name;  // names used by one communicator only
    std::map<std::string, int> uses;
    for (const auto& c : m.run().communicators) ++uses[c.name], key_by_name[c.name] = c.key;
    std::size_t exported = 0;
    for (const auto& e : trace["traceEvents"]) {
      if (e.value("cat", "") != "collective") continue;
      const auto name = e["args"]["communicator"].get<std::string>();
      if (uses[name] != 1) continue;  // two communicators of one name: not told apart by the export
      const auto it = timeline.find({e["pid"].get<int>(), key_by_name[name], e["args"]["seq"].get<std::int64_t>()});
      QVERIFY(it != timeline.end());
      QCOMPARE(std::llround(e["ts"].get<double>() * 1000.0), it->second);
      ++exported;
    }
    QVERIFY2(exported * 2 > timeline.size(), qPrintable(QString("%1 of %2").arg(exported).arg(timeline.size())));
  }

 private slots:
  void syntheticRunWithSkewedHosts() {
    const auto dir = fs::temp_directory_path() / ("collscope-time-agreement-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    testing::SyntheticRunSpec spec;
    spec.ranks = 4;
    spec.ranks_per_host = 1;  // four hosts: four clocks
    spec.steps = 8;
    spec.clock_shift_ns = {0, 3'000'000, -2'000'000, 500'000};
    spec.slow_rank = 2;
    spec.slow_ms = 3;
    testing::write_synthetic_run(dir.string(), spec);
    check(dir);
    fs::remove_all(dir);
  }

  void sampleRun() {
    const QByteArray dir = qgetenv("COLLSCOPE_SAMPLE_RUN");
    if (dir.isEmpty()) QSKIP("COLLSCOPE_SAMPLE_RUN not set (sample or tracer not built)");
    check(dir.toStdString());
  }
};

QTEST_GUILESS_MAIN(TimeAgreementTest)
#include "time_agreement_test.moc"
