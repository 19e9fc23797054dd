// The viewer on runs with a known ground truth (synthetic, written with the real TraceWriter) and, when
// COLLSCOPE_SAMPLE_RUN names one, on the sample's traced run. Offscreen platform; no mocks.
#include <collscope/gui/main_window.hpp>
#include <collscope/gui/panels.hpp>
#include <collscope/gui/run_data_loader.hpp>
#include <collscope/gui/study_view.hpp>
#include <collscope/gui/timeline_view.hpp>
#include <collscope/store/sqlite.hpp>
#ifdef COLLSCOPE_TEST_HAVE_AUTOTUNER
#include <collscope/autotuner/study.hpp>
#endif
#include <collscope/store/trace_writer.hpp>

#include <collscope/testing/lockstep_run.hpp>

#include <QElapsedTimer>
#include <QHeaderView>
#include <QLabel>
#include <QSignalSpy>
#include <QTableView>
#include <QTableWidget>
#include <QTest>

#include <fstream>

#include <fmt/format.h>

#include <set>

namespace fs = std::filesystem;
using namespace collscope::gui;
namespace synthetic = collscope::testing;

namespace {

fs::path scratch(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("collscope-gui-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Opens `dir` in the window and waits for the loader (and the analyzer, when built) to finish.
bool open_and_wait(MainWindow& window, const fs::path& dir) {
  QSignalSpy finished(&window, &MainWindow::loadFinished);
  window.openRun(QString::fromStdString(dir.string()));
  return finished.wait(60000);
}

}  // namespace

class ViewerTest : public QObject {
  Q_OBJECT
 private:
  synthetic::LockstepSpec spec_;
  fs::path run_dir_;

 private slots:
  void initTestCase() {
    run_dir_ = scratch("synthetic");
    synthetic::write_lockstep_run(run_dir_.string(), spec_);
  }

  void loaderMatchesGroundTruth() {
    auto run = load_run(run_dir_.string());
    const auto& m = run->model();
    QCOMPARE(run->run().ranks.size(), std::size_t(3));
    // Per rank: collectives on the "comm" thread, NVTX depth 0, one GPU stream.
    QCOMPARE(m.lanes().size(), std::size_t(9));
    QCOMPARE(m.collective_count(), std::size_t(3 * spec_.steps * spec_.collectives_per_step));
    QCOMPARE(m.matched().instances.size(), std::size_t(spec_.steps * spec_.collectives_per_step));
    QCOMPARE(run->steps.size(), std::size_t(spec_.steps));
    QCOMPARE(m.span_count(LaneKind::GpuStream), std::size_t(3 * spec_.steps * spec_.kernels_per_step));
    // Lanes grouped by host: node0 (ranks 0, 1) before node1 (rank 2).
    QCOMPARE(run->run().ranks[m.lanes().back().rank_index].host, std::string("node1"));
    for (const auto& inst : m.matched().instances) {
      QCOMPARE(int(inst.ranks), 3);
      const bool late = inst.seq % spec_.late_every == 0;
      QCOMPARE(inst.last_arrival_ns - inst.first_arrival_ns, late ? spec_.late_ns : 0);
      if (late) QCOMPARE(inst.last_arriver, spec_.late_rank);
    }
    for (std::uint32_t id = 0; id < m.collective_count(); ++id)
      QCOMPARE(int(m.collective(id).fusion_fill_percent), 25);  // 1 MiB of 4 MiB
    QVERIFY(m.memory_bytes() / m.event_count() < 200);
  }

  void lanesHoldTheirOwnRankEventsSortedWhenHostsInterleave() {
    // Ranks 0 and 2 on node0, 1 and 3 on node1: display order (by host) differs from world-rank order, so
    // each rank's block of every event array sits elsewhere than its rank number suggests.
    synthetic::LockstepSpec spec;
    spec.ranks = 4;
    spec.hosts_round_robin = true;
    spec.late_rank = 3;
    spec.steps = 50;
    const auto dir = scratch("interleaved");
    synthetic::write_lockstep_run(dir.string(), spec);
    auto run = load_run(dir.string());
    const auto& m = run->model();
    QCOMPARE(m.lanes().size(), std::size_t(12));
    std::vector<int> lane_world;
    for (const auto& lane : m.lanes()) lane_world.push_back(run->run().ranks[lane.rank_index].world_rank);
    QCOMPARE(lane_world, (std::vector<int>{0, 0, 0, 2, 2, 2, 1, 1, 1, 3, 3, 3}));
    // Lane ranges partition each array; events carry their lane and rank, sorted by start, with the prefix
    // maxima of end the visible-range search relies on.
    std::size_t covered[3] = {0, 0, 0};
    for (std::uint16_t l = 0; l < m.lanes().size(); ++l) {
      const auto& lane = m.lanes()[l];
      const auto kind = lane.kind;
      covered[static_cast<int>(kind)] += lane.end - lane.begin;
      const std::size_t expected = kind == LaneKind::Collectives ? spec.steps * spec.collectives_per_step
                                   : kind == LaneKind::GpuStream ? spec.steps * spec.kernels_per_step
                                                                 : spec.steps;
      QCOMPARE(std::size_t(lane.end - lane.begin), expected);
      std::int64_t max_end = std::numeric_limits<std::int64_t>::min();
      for (std::uint32_t i = lane.begin; i < lane.end; ++i) {
        const auto start = m.start_at(lane, i), end = m.end_at(lane, i);
        if (i > lane.begin) QVERIFY(m.start_at(lane, i - 1) <= start);
        max_end = std::max(max_end, end);
        QCOMPARE(m.max_end(kind)[i], max_end);
        const auto id = m.id_at(kind, i);
        if (kind == LaneKind::Collectives) {
          QCOMPARE(int(m.lane_of_collective(id)), int(l));
          QCOMPARE(m.rank_of_collective(id), lane.rank_index);
          QCOMPARE(m.collective(id).start_ns, start);
        } else {
          QCOMPARE(int(m.span(kind, id).lane), int(l));
          QCOMPARE(m.span(kind, id).start_ns, start);
          QCOMPARE(m.names()[m.span(kind, id).name].empty(), false);
        }
      }
    }
    QCOMPARE(covered[0], m.collective_count());
    QCOMPARE(covered[1], m.span_count(LaneKind::Nvtx));
    QCOMPARE(covered[2], m.span_count(LaneKind::GpuStream));
    // Matching across the interleaved blocks: every instance has all 4 ranks, the late one named.
    QCOMPARE(m.matched().instances.size(), std::size_t(spec.steps * spec.collectives_per_step));
    for (std::uint32_t id = 0; id < m.matched().instances.size(); ++id) {
      const auto& inst = m.matched().instances[id];
      QCOMPARE(int(inst.ranks), 4);
      std::set<int> members;
      for (const auto member : m.instance_members(id)) {
        const auto e = m.collective(member);
        QCOMPARE(e.instance, id);
        members.insert(run->run().ranks[e.rank_index].world_rank);
      }
      QCOMPARE(members, (std::set<int>{0, 1, 2, 3}));
      if (inst.seq % spec.late_every == 0) QCOMPARE(inst.last_arriver, 3);
    }
    // Run time 0 is the tracer's start, here the first event; the run ends with the last one (the last step's
    // NVTX range).
    QCOMPARE(m.clocks().origin_ns, spec.base_ns);
    QCOMPARE(m.duration_ns(), spec.steps * synthetic::step_ns(spec));
  }

  void hugePageArraysAreAlignedAndKeepTheirContents() {
    // Grows from the ordinary allocator (< 2 MiB) into 2 MiB-aligned mappings and back down by copy.
    EventVector<std::int64_t> v;
    for (std::int64_t i = 0; i < 1'000'000; ++i) v.push_back(i * 3);
    QCOMPARE(reinterpret_cast<std::uintptr_t>(v.data()) % (std::uintptr_t{2} << 20), std::uintptr_t(0));
    for (std::int64_t i = 0; i < 1'000'000; i += 9973) QCOMPARE(v[i], i * 3);
    EventVector<std::int64_t> small(v.begin(), v.begin() + 1000);
    QCOMPARE(small.back(), std::int64_t(999 * 3));
    v = {};
    QVERIFY(v.empty());
  }

  void callsInFlightAreDrawnAsHungCalls() {
    // The synthetic run, then rank 2 hung 5 s in one more allreduce, as the tracer leaves it when a job is killed.
    const auto dir = scratch("in-flight");
    synthetic::write_lockstep_run(dir.string(), spec_);
    const std::int64_t start = spec_.base_ns + spec_.steps * synthetic::step_ns(spec_) + 1000;
    const std::int64_t seq = std::int64_t(spec_.steps) * spec_.collectives_per_step;
    collscope::store::sqlite::Database((dir / "rank-00002.sqlite").string(), collscope::store::sqlite::OpenMode::ReadWrite)
        .exec(fmt::format("INSERT INTO calls_in_flight VALUES(2, 1, {}, 1, 262144, 0, 1048576, 0, NULL, {}, {})", seq,
                          start, start + 5'000'000'000LL));

    auto run = load_run(dir.string());
    const auto& m = run->model();
    std::vector<std::uint32_t> hung;
    for (std::uint32_t i = 0; i < m.collective_count(); ++i)
      if (m.collective(i).flags & kCallInFlight) hung.push_back(i);
    QCOMPARE(hung.size(), std::size_t(1));
    const auto e = m.collective(hung[0]);
    QCOMPARE(run->run().ranks[e.rank_index].world_rank, 2);
    QCOMPARE(m.lanes()[e.lane].kind, LaneKind::Collectives);
    QCOMPARE(e.end_ns - e.start_ns, std::int64_t(5'000'000'000));
    QCOMPARE(m.members(hung[0]).size(), std::size_t(1));  // nobody else arrived
    QCOMPARE(m.collective_count(), std::size_t(3 * seq + 1));

    // Zoomed out to the whole run, the hung call (most of it) is a red box, not folded into its neighbours'
    // pixel column: sample its lane across the middle of the call.
    TimelineView view;
    view.resize(1000, 400);
    view.setRun(run);
    QImage image(view.size(), QImage::Format_ARGB32_Premultiplied);
    view.render(&image);
    const QPointF centre = view.pointOfCollective(hung[0]);
    QVERIFY(!centre.isNull());
    int red = 0;
    for (int dx = -20; dx <= 20; ++dx) {
      const QColor c = image.pixelColor(int(centre.x()) + dx, int(centre.y()));
      red += c.red() > 150 && c.green() < 120 && c.blue() < 120;
    }
    QVERIFY2(red >= 20, qPrintable(QString::number(red)));

    MainWindow window;
    window.show();
    QVERIFY(open_and_wait(window, dir));
    std::uint32_t shown = kNoInstance;
    for (std::uint32_t i = 0; i < window.run()->model().collective_count(); ++i)
      if (window.run()->model().in_flight(i)) shown = i;
    QVERIFY(shown != kNoInstance);
    window.timeline()->selectCollective(shown);
    QVERIFY(window.details()->fieldValue("state").startsWith("in flight"));
  }

  void opensRunAndShowsOneLaneGroupPerRank() {
    MainWindow window;
    window.resize(1400, 800);
    window.show();
    QVERIFY(open_and_wait(window, run_dir_));
    QVERIFY2(window.message().isEmpty(), qPrintable(window.message()));
    QCOMPARE(window.timeline()->laneCount(), 9);
    std::set<int> ranks;
    for (const auto& lane : window.run()->model().lanes()) ranks.insert(window.run()->run().ranks[lane.rank_index].world_rank);
    QCOMPARE(ranks, (std::set<int>{0, 1, 2}));
  }

  void clickSelectsCollectiveOnEveryRank() {
    MainWindow window;
    window.resize(1400, 800);
    window.show();
    QVERIFY(open_and_wait(window, run_dir_));
    auto* timeline = window.timeline();
    const auto& m = window.run()->model();
    // Step 2, collective 0 (seq 8: rank 2 is late) on rank 0.
    timeline->setVisibleRange(synthetic::arrival_ns(spec_, 0, 2, 0) - spec_.base_ns - 500'000,
                              synthetic::end_ns(spec_, 2, 0) - spec_.base_ns + 500'000);
    std::uint32_t target = kNoInstance;
    for (std::uint32_t i = 0; i < m.collective_count(); ++i)
      if (m.collective(i).rank_index == 0 && m.call(i).seq == 8) target = i;
    QVERIFY(target != kNoInstance);
    const QPointF at = timeline->pointOfCollective(target);
    QVERIFY(!at.isNull());
    QTest::mouseClick(timeline, Qt::LeftButton, {}, at.toPoint());
    QCOMPARE(timeline->selectedCollective(), target);

    auto* details = window.details();
    QCOMPARE(details->fieldValue("op"), QString("allreduce"));
    QCOMPARE(details->fieldValue("seq"), QString("8"));
    QCOMPARE(details->fieldValue("wait"), QString("1 ms"));
    QCOMPARE(details->fieldValue("last arrival"), QString("rank 2"));
    QCOMPARE(details->fieldValue("recorded.bytes"), QString::number(spec_.bytes));
    QCOMPARE(details->fieldValue("fusion buffer fill"), QString("25 %"));
    QCOMPARE(details->ranksTable()->rowCount(), 3);
    QCOMPARE(details->ranksTable()->item(2, 2)->text(), QString("0 ns"));  // rank 2 arrived last: no wait

    // Cross-rank highlight: every member is outlined in black at its left edge.
    const QImage image = timeline->grab().toImage();
    QCOMPARE(m.instance_members(timeline->selectedInstance()).size(), std::size_t(3));
    for (const auto member : m.instance_members(timeline->selectedInstance())) {
      const QPointF centre = timeline->pointOfCollective(member);
      const double x0 = TimelineView::kLabelWidth + (m.collective(member).start_ns - timeline->visibleStart()) /
                            double(timeline->visibleEnd() - timeline->visibleStart()) * (timeline->width() - TimelineView::kLabelWidth);
      const QColor c = image.pixelColor(int(std::floor(x0)) - 1, int(centre.y()));
      QVERIFY2(c.red() < 60 && c.green() < 60 && c.blue() < 60,
               qPrintable(QString("rank %1 not outlined: %2").arg(m.collective(member).rank_index).arg(c.name())));
    }
    // An unrelated collective on rank 1 (seq 9) is not outlined.
    std::uint32_t other = kNoInstance;
    for (std::uint32_t i = 0; i < m.collective_count(); ++i)
      if (m.collective(i).rank_index == 1 && m.call(i).seq == 9) other = i;
    const double ox0 = TimelineView::kLabelWidth + (m.collective(other).start_ns - timeline->visibleStart()) /
                           double(timeline->visibleEnd() - timeline->visibleStart()) * (timeline->width() - TimelineView::kLabelWidth);
    if (ox0 < timeline->width() - 2) {
      const QColor c = image.pixelColor(int(std::floor(ox0)) - 1, int(timeline->pointOfCollective(target).y()) + 24);
      QVERIFY(!(c.red() < 60 && c.green() < 60 && c.blue() < 60));
    }
  }

  void clickingAFindingZoomsToItsEvidence() {
    MainWindow window;
    window.resize(1400, 800);
    window.show();
    QVERIFY(open_and_wait(window, run_dir_));
    // The analyzer's findings when it is built; always also one with a known range, to check the wiring.
    auto run = std::make_shared<RunData>(*window.run());
    Finding f;
    f.kind = "straggler";
    f.severity = "warning";
    f.summary = "rank 2 arrives late";
    f.start_ns = 3'000'000;
    f.end_ns = 4'500'000;
    f.world_ranks = {2};
    run->findings.insert(run->findings.begin(), f);
    run->analyzed = true;
    window.showRun(run);
    auto* view = window.findings()->view();
    QCOMPARE(view->model()->rowCount(), int(run->findings.size()));
    const QRect cell = view->visualRect(view->model()->index(0, 1));
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, cell.center());
    QCOMPARE(window.timeline()->visibleStart(), std::int64_t(3'000'000));
    QCOMPARE(window.timeline()->visibleEnd(), std::int64_t(4'500'000));
    QCOMPARE(window.timeline()->highlightedRanks(), (std::vector<int>{2}));
  }

  void analyzerFindsTheLateRank() {
    MainWindow window;
    window.show();
    QVERIFY(open_and_wait(window, run_dir_));
    if (!window.run()->analyzed) QSKIP("collscope built without the analyzer");
    bool straggler = false;
    for (const auto& f : window.run()->findings)
      if (std::find(f.world_ranks.begin(), f.world_ranks.end(), spec_.late_rank) != f.world_ranks.end()) {
        straggler = true;
        QVERIFY(f.end_ns > f.start_ns);
      }
    QVERIFY(straggler);
    QVERIFY(!window.run()->statistics.empty());
  }

  void brokenAndPartialRunsShowAMessage() {
    MainWindow window;
    window.show();
    auto empty = scratch("empty");
    QVERIFY(open_and_wait(window, empty));
    QVERIFY2(window.message().contains("not a collscope run directory"), qPrintable(window.message()));

    auto broken = scratch("broken");
    std::ofstream(broken / "rank-00000.sqlite") << "this is not a database, it is a text file of some length\n";
    QVERIFY(open_and_wait(window, broken));
    QVERIFY2(window.message().contains("rank-00000.sqlite"), qPrintable(window.message()));

    QVERIFY(open_and_wait(window, scratch("missing") / "nope"));
    QVERIFY2(window.message().contains("no such run directory"), qPrintable(window.message()));

    // One good rank of three: loads, with a warning naming the problem.
    auto partial = scratch("partial");
    fs::copy_file(run_dir_ / "rank-00001.sqlite", partial / "rank-00001.sqlite");
    std::ofstream(partial / "rank-00000.sqlite") << "garbage";
    QVERIFY(open_and_wait(window, partial));
    QVERIFY(window.run() && window.run()->run().ranks.size() == 1);
    QVERIFY2(window.message().contains("rank-00000.sqlite"), qPrintable(window.message()));
    QVERIFY2(window.message().contains("1 of 3 ranks"), qPrintable(window.message()));

    // A rank whose file holds no event (it traced nothing before the job ended): a rank without lanes.
    auto quiet = scratch("quiet-rank");
    for (const char* f : {"rank-00000.sqlite", "rank-00001.sqlite", "rank-00002.sqlite"}) fs::copy_file(run_dir_ / f, quiet / f);
    {
      collscope::store::TraceWriter w((quiet / "rank-00003.sqlite").string());
      w.begin();
      w.set_meta(collscope::store::meta_key::kWorldRank, "3");
      w.set_meta(collscope::store::meta_key::kHost, "node1");
      w.commit();
    }
    auto run = load_run(quiet.string());
    QCOMPARE(run->run().ranks.size(), std::size_t(4));
    QCOMPARE(run->model().lanes().size(), std::size_t(9));
    QCOMPARE(run->model().collective_count(), std::size_t(3 * spec_.steps * spec_.collectives_per_step));
  }

  void closingWhileLoadingDoesNotWaitOrCrash() {
    QElapsedTimer t;
    t.start();
    {
      MainWindow window;
      window.openRun(QString::fromStdString(run_dir_.string()));
      window.openRun(QString::fromStdString(run_dir_.string()));  // the first load's results are dropped
    }
    // Not waiting for the loads shows either way: they are still running when the window is gone, or the window
    // was gone within 1 s. Only the second is a wall time, and on a loaded machine it can exceed 1 s without any
    // waiting (the window's own construction gets a fraction of a core); the loads are then slowed as much and
    // still running. Both false is what a window that waits for its loads gives.
    const qint64 took_ms = t.elapsed();
    const int still_loading = RunLoadJob::activeLoads();
    QVERIFY2(still_loading > 0 || took_ms < 1000,
             qPrintable(QString("closed after %1 ms with no load left running").arg(took_ms)));
    QTRY_COMPARE_WITH_TIMEOUT(RunLoadJob::activeLoads(), 0, 30000);
    QCoreApplication::processEvents();  // the abandoned loads' queued results go nowhere
  }

  void searchAndStepsNavigate() {
    MainWindow window;
    window.resize(1400, 800);
    window.show();
    QVERIFY(open_and_wait(window, run_dir_));
    const auto* run = window.run();
    const auto& m = run->model();
    QVERIFY(window.findNext("bcast"));
    const auto first = window.timeline()->selectedCollective();
    QCOMPARE(m.collective(first).op, collscope::store::Op::Bcast);
    QVERIFY(window.findNext("bcast"));
    QVERIFY(m.collective(window.timeline()->selectedCollective()).start_ns >= m.collective(first).start_ns);
    QVERIFY(window.findNext("1MiB"));
    QVERIFY(!window.findNext("4 GiB"));
    QVERIFY(window.findNext("gemm_bwd"));
    QVERIFY(!window.findNext("no-such-kernel"));
    window.jumpToStep(5);
    const auto& s = run->steps[5];
    QVERIFY(window.timeline()->visibleStart() < s.start_ns && window.timeline()->visibleStart() > s.start_ns - (s.end_ns - s.start_ns) / 10);
    QVERIFY(window.timeline()->visibleEnd() > s.end_ns);
  }

  void wheelZoomKeepsTimeUnderCursorAndKeysNavigate() {
    TimelineView view;
    view.resize(1200, 400);
    view.setRun(load_run(run_dir_.string()));
    view.show();
    view.setVisibleRange(0, 10'000'000);
    const double x = TimelineView::kLabelWidth + 0.25 * (1200 - TimelineView::kLabelWidth);  // 2.5 ms
    QWheelEvent wheel(QPointF(x, 100), view.mapToGlobal(QPointF(x, 100)), {}, QPoint(0, 240), Qt::NoButton, {},
                      Qt::NoScrollPhase, false);
    QApplication::sendEvent(&view, &wheel);
    const double span = view.visibleEnd() - view.visibleStart();
    QVERIFY(std::abs(span - 10'000'000 * 0.64) < 10);
    const double under_cursor = view.visibleStart() + 0.25 * span;
    QVERIFY(std::abs(under_cursor - 2'500'000) < 10);
    const auto before = view.visibleStart();
    QTest::keyClick(&view, Qt::Key_D);
    QVERIFY(std::abs(view.visibleStart() - before - span / 10) < 10);
    QTest::keyClick(&view, Qt::Key_A);
    QVERIFY(std::abs(view.visibleStart() - before) < 10);
    QTest::keyClick(&view, Qt::Key_S);
    QVERIFY(view.visibleEnd() - view.visibleStart() > span * 1.2);
    QTest::keyClick(&view, Qt::Key_W);
    QVERIFY(std::abs((view.visibleEnd() - view.visibleStart()) - span) < 100);
  }

  void levelOfDetailBoundsTheWorkPerFrame() {
    // 40 000 collectives + 40 000 kernels fully zoomed out: aggregated to at most a column per pixel per lane.
    synthetic::LockstepSpec big;
    big.steps = 10'000;
    big.compute_ns = 100'000;
    big.late_ns = 10'000;
    big.transfer_ns = 20'000;
    auto dir = scratch("lod");
    synthetic::write_lockstep_run(dir.string(), big);
    TimelineView view;
    view.resize(1000, 400);
    auto run = load_run(dir.string());
    view.setRun(run);
    QImage image(view.size(), QImage::Format_ARGB32_Premultiplied);
    view.render(&image);
    const auto plot_width = 1000 - TimelineView::kLabelWidth;
    // One column per pixel per lane, plus the steps band (as many) and the ruler's ticks.
    QVERIFY2(view.lastPaintedPrimitives() <= std::int64_t(run->model().lanes().size() + 1) * plot_width + 100,
             qPrintable(QString::number(view.lastPaintedPrimitives())));
    view.setLevelOfDetail(false);
    view.render(&image);
    QVERIFY(view.lastPaintedPrimitives() >= std::int64_t(run->model().event_count()) - 10);
  }

  void studyFileShowsTrialsAndConvergence() {
#ifndef COLLSCOPE_TEST_HAVE_AUTOTUNER
    QSKIP("autotuner not built: the viewer reads no study files");
#else
    // A study as `collscope tune` writes it (the autotuner's own Study): one knob, step time (lower is better), a
    // failed trial, and a confirmation run of trial 3's settings, so that the tuner's best (the best mean over a
    // setting's runs: 67108864 at (7.0 + 8.6) / 2 = 7.8 ms) is not the best single score (7.0 ms).
    namespace at = collscope::autotuner;
    const auto dir = scratch("study");
    const auto path = dir / "STUDY.sqlite";
    const std::string space =
        "knobs:\n  - name: fusion_threshold\n    env: HOROVOD_FUSION_THRESHOLD\n    type: integer\n    scale: log\n"
        "    min: 65536\n    max: 268435456\nobjective:\n  kind: step_time\n";
    const auto trace = dir / "trial-3" / "trace";
    synthetic::write_lockstep_run(trace.string(), spec_);
    {
      auto study = at::Study::create(path.string(), {{"space", space}});
      const at::SearchSpace parsed = at::SearchSpace::parse(space, "test");
      auto add = [&](std::string kind, at::TrialStatus status, std::string value, std::optional<double> score, std::string trial_dir) {
        at::TrialRecord t;
        t.kind = std::move(kind);
        t.values = {std::move(value)};
        t.unit = parsed.to_unit(t.values);
        t.dir = std::move(trial_dir);
        study.add_trial(t);
        t.status = status;
        t.score = score;
        t.wall_s = 3.25;
        if (!score) t.reason = "exit code 1";
        study.update_trial(t);
      };
      add("design", at::TrialStatus::Ok, "1048576", 10.0, "");
      add("design", at::TrialStatus::Failed, "65536", std::nullopt, "");
      add("expected-improvement", at::TrialStatus::Ok, "67108864", 7.0, (dir / "trial-3").string());
      add("expected-improvement", at::TrialStatus::Ok, "33554432", 8.0, "");
      add("confirm", at::TrialStatus::Ok, "67108864", 8.6, "");
      study.close_for_readers();
    }
    MainWindow window;
    window.show();
    QVERIFY(open_and_wait(window, path));
    const auto& study = window.study()->study();
    QVERIFY(!study.maximize);
    auto* table = window.study()->trialsTable();
    QCOMPARE(table->rowCount(), 5);
    QStringList headers;
    for (int c = 0; c < table->columnCount(); ++c) headers << table->horizontalHeaderItem(c)->text();
    QCOMPARE(headers, (QStringList{"trial", "kind", "status", "fusion_threshold (HOROVOD_FUSION_THRESHOLD)", "score (ms)",
                                   "wall time", "why"}));  // knobs by name, the cube point left out
    QCOMPARE(table->item(2, 3)->text(), QString("67108864"));
    QCOMPARE(table->item(2, 4)->text(), QString("7.000"));  // the reports' precision: a thousandth of the value
    QCOMPARE(table->item(1, 4)->text(), QString("-"));
    QCOMPARE(table->item(1, 6)->text(), QString("exit code 1"));
    QVERIFY2(table->item(0, 5)->text().startsWith("3.2"), qPrintable(table->item(0, 5)->text()));
    // The header's best is the tuner's: the mean over the setting's runs, with the runs named.
    QVERIFY(study.best_mean && std::abs(*study.best_mean - 7.8) < 1e-9);
    const QString title = window.study()->title()->text();
    QVERIFY2(title.contains("Best: 7.800 ms: fusion_threshold=67108864 (mean of 2 runs, trials 3,5)"), qPrintable(title));
    // The plot's line is the same best: after trial 5 (a worse rerun of trial 3's setting) it is that setting's
    // mean, which the header names, not trial 3's lucky 7.0.
    const auto& best = study.best_so_far;
    QCOMPARE(best.size(), std::size_t(5));
    QCOMPARE(*best[1], 10.0);
    QCOMPARE(*best[2], 7.0);
    QCOMPARE(*best[4], *study.best_mean);
    QVERIFY(!study.scores[1].has_value());
    // Trial 3 left a trace: activating its row opens it; trial 1 left none and its row opens nothing.
    QSignalSpy requested(window.study(), &StudyView::traceRequested);
    QSignalSpy finished(&window, &MainWindow::loadFinished);
    emit table->cellDoubleClicked(0, 0);
    QCOMPARE(requested.count(), 0);
    table->setCurrentCell(2, 0);
    table->setFocus();
    QTest::keyClick(table, Qt::Key_Return);  // Enter on the row (a double-click emits the same cellActivated)
    QCOMPARE(requested.count(), 1);
    QCOMPARE(requested.front().front().toString(), QString::fromStdString(trace.string()));
    QVERIFY(finished.wait(60000));
    QVERIFY(window.run());
    QCOMPARE(window.run()->dir, trace.string());
#endif
  }

  void sampleRun() {
    const QByteArray dir = qgetenv("COLLSCOPE_SAMPLE_RUN");
    if (dir.isEmpty()) QSKIP("COLLSCOPE_SAMPLE_RUN not set (sample or tracer not built)");
    MainWindow window;
    window.resize(1400, 800);
    window.show();
    QVERIFY(open_and_wait(window, dir.toStdString()));
    QVERIFY(window.run());
    QVERIFY2(window.run()->run().ranks.size() == 2, qPrintable(window.message()));
    const auto& m = window.run()->model();
    std::set<int> ranks;
    for (const auto& lane : m.lanes()) ranks.insert(lane.rank_index);
    QCOMPARE(int(ranks.size()), 2);
    QVERIFY(m.collective_count() > 0);
    // Select the first matched collective of rank 0: the details show the same instance on both ranks.
    std::uint32_t target = kNoInstance;
    for (std::uint32_t i = 0; i < m.collective_count() && target == kNoInstance; ++i)
      if (const auto e = m.collective(i); e.rank_index == 0 && e.instance != kNoInstance && m.matched().instances[e.instance].ranks == 2) target = i;
    QVERIFY(target != kNoInstance);
    window.timeline()->selectCollective(target);
    window.timeline()->zoomToSelection();
    QCOMPARE(window.details()->ranksTable()->rowCount(), 2);
    QVERIFY(!window.timeline()->pointOfCollective(target).isNull());
  }
};

QTEST_MAIN(ViewerTest)
#include "viewer_test.moc"
