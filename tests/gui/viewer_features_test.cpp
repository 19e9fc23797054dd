// What a person sees and does in the viewer (issue 14), on the lockstep run whose every time is known: rank 2 arrives
// 1 ms late at the first collective of each 7 ms step. Offscreen platform; no mocks.
#include <collscope/gui/main_window.hpp>
#include <collscope/gui/panels.hpp>
#include <collscope/gui/rank_views.hpp>
#include <collscope/gui/run_loader.hpp>
#include <collscope/gui/search.hpp>
#include <collscope/gui/timeline_view.hpp>
#include <collscope/testing/lockstep_run.hpp>

#include <QDialog>
#include <QHeaderView>
#include <QMenu>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTableWidget>
#include <QTest>

#include <filesystem>

namespace fs = std::filesystem;
using namespace collscope::gui;
namespace testing = collscope::testing;

namespace {

bool open_and_wait(MainWindow& window, const fs::path& dir) {
  QSignalSpy finished(&window, &MainWindow::loadFinished);
  window.openRun(QString::fromStdString(dir.string()));
  return finished.wait(60000);
}

// The collective of `rank_index` with sequence number `seq` (world communicator).
std::uint32_t call_of(const TimelineModel& m, int rank_index, std::int32_t seq) {
  for (std::uint32_t id = 0; id < m.collective_count(); ++id)
    if (m.rank_of_collective(id) == rank_index && m.call(id).seq == seq) return id;
  return kNoInstance;
}

int count_pixels(const QImage& image, int y, int x0, int x1, bool (*pick)(QColor)) {
  int n = 0;
  for (int x = std::max(0, x0); x < std::min(image.width(), x1); ++x) n += pick(image.pixelColor(x, y));
  return n;
}

}  // namespace

class ViewerFeaturesTest : public QObject {
  Q_OBJECT
  testing::LockstepSpec spec_;
  fs::path dir_;
  std::shared_ptr<const RunData> run_;

 private slots:
  void initTestCase() {
    dir_ = fs::temp_directory_path() / ("collscope-gui-features-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    testing::write_lockstep_run(dir_.string(), spec_);
    run_ = load_run(dir_.string());
    QVERIFY(run_->summaries);
  }
  void cleanupTestCase() { fs::remove_all(dir_); }

  void theLateRankIsTheRedRowAtFullZoom() {
    TimelineView view;
    view.resize(1200, 600);
    view.setRun(run_);
    const QImage image = view.grab().toImage();
    auto red = [](QColor c) { return c.red() > 150 && c.green() < 120 && c.blue() < 120; };
    auto blue = [](QColor c) { return c.blue() > 150 && c.red() < 140; };
    const int x0 = TimelineView::kLabelWidth, x1 = view.width();
    // Upper half of a rank's summary row: lateness; lower half: waiting.
    const int late2 = count_pixels(image, view.rankRowCentre(2) - 3, x0, x1, red);
    const int late0 = count_pixels(image, view.rankRowCentre(0) - 3, x0, x1, red);
    const int wait0 = count_pixels(image, view.rankRowCentre(0) + 3, x0, x1, blue);
    const int wait2 = count_pixels(image, view.rankRowCentre(2) + 3, x0, x1, blue);
    QVERIFY2(late2 >= 40 && late0 == 0, qPrintable(QString("late pixels: rank 2 %1, rank 0 %2").arg(late2).arg(late0)));
    QVERIFY2(wait0 >= 40 && wait2 == 0, qPrintable(QString("wait pixels: rank 0 %1, rank 2 %2").arg(wait0).arg(wait2)));
    // The lanes fill the window instead of leaving most of it empty.
    QVERIFY(view.laneCentre(8) > view.height() * 3 / 4);
  }

  void windowKeysWorkWhateverHasTheFocus() {
    MainWindow window;
    window.resize(1200, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    QVERIFY(open_and_wait(window, dir_));
    window.timeline()->setVisibleRange(0, 10'000'000);
    auto* table = window.findings()->view();
    table->setFocus();
    QTRY_VERIFY(table->hasFocus());
    const auto before = window.timeline()->visibleStart();
    QTest::keyClick(table, Qt::Key_D);
    QVERIFY(window.timeline()->visibleStart() > before + 500'000);
    QTest::keyClick(table, Qt::Key_Backspace);  // back is for jumps; D was a step, so nothing to go back to
    QTest::keyClick(table, Qt::Key_F1);
    QVERIFY(window.helpDialog() && window.helpDialog()->isVisible());
    window.helpDialog()->hide();
    QTest::keyClick(table, '?');
    QVERIFY(window.helpDialog()->isVisible());
    // Esc clears the tint a finding left.
    window.timeline()->setHighlightedRanks({2});
    QTest::keyClick(table, Qt::Key_Escape);
    QVERIFY(window.timeline()->highlightedRanks().empty());
  }

  void aFindingSelectsItsEvidenceAndTheTableShowsItsColumns() {
    MainWindow window;
    window.resize(1000, 700);
    window.show();
    QVERIFY(open_and_wait(window, dir_));
    if (!window.run()->analyzed) QSKIP("collscope built without the analyzer");
    const auto& findings = window.run()->findings;
    QVERIFY(!findings.empty());
    QCOMPARE(findings.front().kind, std::string("straggler"));
    auto* view = window.findings()->view();
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(view->model()->index(0, 1)).center());
    QVERIFY(window.timeline()->selectedCollective() != kNoInstance);
    QCOMPARE(window.timeline()->selectedCollective(), findings.front().evidence);
    QCOMPARE(window.details()->fieldValue("rank"), QString("2"));  // the straggler's own call
    QCOMPARE(window.details()->fieldValue("last arrival"), QString("rank 2"));
    // Severity, finding, cost and ranks in view, no sideways scrolling.
    QCOMPARE(view->horizontalScrollBar()->maximum(), 0);
    QVERIFY(view->columnViewportPosition(FindingsModel::Ranks) + view->columnWidth(FindingsModel::Ranks) <= view->viewport()->width());
  }

  void statisticsSortAndARowSelectsItsSlowestCollective() {
    StatisticsPanel panel;
    panel.resize(600, 200);
    panel.setRun(run_);
    panel.show();
    if (!run_->analyzed) QSKIP("collscope built without the analyzer");
    auto* view = panel.view();
    view->sortByColumn(StatisticsModel::Count, Qt::AscendingOrder);
    const auto first = view->model()->index(0, StatisticsModel::Op).data().toString();
    const auto last = view->model()->index(view->model()->rowCount() - 1, StatisticsModel::Op).data().toString();
    QCOMPARE(first, QString("bcast"));       // 10 instances
    QCOMPARE(last, QString("allreduce"));    // 30
    view->sortByColumn(StatisticsModel::Count, Qt::DescendingOrder);
    QCOMPARE(view->model()->index(0, StatisticsModel::Op).data().toString(), QString("allreduce"));
    QVERIFY(view->columnWidth(StatisticsModel::BusBw) < 200);
    QSignalSpy activated(&panel, &StatisticsPanel::collectiveActivated);
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(view->model()->index(view->model()->rowCount() - 1, 0)).center());
    QCOMPARE(activated.count(), 1);
    const auto id = activated.front().front().value<std::uint32_t>();
    QCOMPARE(run_->model().call(id).op, collscope::store::Op::Bcast);
  }

  void searchBySizeAsShownWithCountPreviousAndHighlight() {
    // Size terms: what is shown as "1 MiB" (3 significant digits), exact bytes, comparisons, ranges.
    const auto mib = parse_size_term("1 MiB");
    QVERIFY(mib && mib->first <= 1048576 && mib->second >= 1048576);
    QVERIFY(mib->second >= std::int64_t(1.004 * 1048576) && mib->second < std::int64_t(1.006 * 1048576));
    QCOMPARE(*parse_size_term("4096"), std::make_pair(std::int64_t(4096), std::int64_t(4096)));
    QCOMPARE(parse_size_term(">1MiB")->first, std::int64_t(1048577));
    QCOMPARE(*parse_size_term("64KiB..1MiB"), std::make_pair(std::int64_t(65536), std::int64_t(1048576)));
    QVERIFY(!parse_size_term("gemm"));

    MainWindow window;
    window.resize(1200, 800);
    window.show();
    QVERIFY(open_and_wait(window, dir_));
    const std::size_t calls = 3 * spec_.steps * spec_.collectives_per_step;
    QVERIFY(window.findNext("1 MiB"));
    QCOMPARE(window.searchStatus(), QString("1 of %1 matches").arg(calls));
    QVERIFY(window.findNext("1 MiB"));
    QCOMPARE(window.searchStatus(), QString("2 of %1 matches").arg(calls));
    QVERIFY(window.findPrevious("1 MiB"));
    QCOMPARE(window.searchStatus(), QString("1 of %1 matches").arg(calls));
    QVERIFY(window.findNext("bcast 1MiB"));
    QCOMPARE(window.searchStatus(), QString("1 of %1 matches").arg(3 * spec_.steps));
    QVERIFY(!window.findNext("2 MiB"));
    QCOMPARE(window.searchStatus(), QString("no match"));
    // A kernel name: every match highlighted on the timeline.
    QVERIFY(window.findNext("gemm_bwd"));
    QVERIFY(window.timeline()->search() && window.timeline()->search()->by_name());
    const auto& names = window.run()->model().names();
    const auto bwd = std::find(names.begin(), names.end(), "gemm_bwd") - names.begin();
    QVERIFY(window.timeline()->search()->matches_name(static_cast<std::uint32_t>(bwd)));
    QVERIFY2(window.searchStatus().endsWith(QString(" of %1 matches").arg(3 * spec_.steps)), qPrintable(window.searchStatus()));
  }

  void aRangeShowsItsDurationAndTotals() {
    // Step 2 exactly: 12 calls of 1 MiB; per rank in collectives 1.8, 1.8, 0.8 ms, waiting 1, 1, 0 ms.
    const std::int64_t a = 2 * testing::step_ns(spec_), b = 3 * testing::step_ns(spec_);
    const auto t = range_totals(run_->model(), a, b);
    QCOMPARE(t.duration_ns, b - a);
    QCOMPARE(t.calls, std::int64_t(12));
    QCOMPARE(t.bytes, std::int64_t(12) << 20);
    QCOMPARE(std::llround(t.busy_ns_per_rank * 3), std::llround(4.4e6));
    QCOMPARE(std::llround(t.wait_ns_per_rank * 3), std::llround(2e6));
    // Shift+drag on the timeline selects it.
    TimelineView view;
    view.resize(1200, 500);
    view.setRun(run_);
    view.show();
    view.setVisibleRange(0, 10 * testing::step_ns(spec_));
    QSignalSpy selected(&view, &TimelineView::rangeSelected);
    const double px_per_ns = (view.width() - TimelineView::kLabelWidth) / double(10 * testing::step_ns(spec_));
    const QPoint from(TimelineView::kLabelWidth + int(a * px_per_ns), 300), to(TimelineView::kLabelWidth + int(b * px_per_ns), 300);
    QTest::mousePress(&view, Qt::LeftButton, Qt::ShiftModifier, from);
    QMouseEvent move(QEvent::MouseMove, to, view.mapToGlobal(to), Qt::NoButton, Qt::LeftButton, Qt::ShiftModifier);
    QApplication::sendEvent(&view, &move);
    QTest::mouseRelease(&view, Qt::LeftButton, Qt::ShiftModifier, to);
    QCOMPARE(selected.count(), 1);
    QVERIFY(view.hasRange());
    QVERIFY(std::abs(view.range().second - view.range().first - (b - a)) < 2 / px_per_ns);
  }

  void headersCollapseLanesPinAndTheMenuOffersBoth() {
    TimelineView view;
    view.resize(1200, 700);
    view.setRun(run_);
    view.show();
    QCOMPARE(view.visibleLaneCount(), 9);
    QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(30, view.hostRowCentre(1)));  // host node1: rank 2
    QCOMPARE(view.visibleLaneCount(), 6);
    QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(30, view.rankRowCentre(0)));
    QCOMPARE(view.visibleLaneCount(), 3);
    QVERIFY(view.rankCollapsed(0));
    QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(30, view.hostRowCentre(1)));
    QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(30, view.rankRowCentre(0)));
    QCOMPARE(view.visibleLaneCount(), 9);
    // The context menu on rank 2's collectives: pin the lane; it moves above every rank.
    const auto& m = run_->model();
    view.setVisibleRange(0, testing::step_ns(spec_));
    const auto id = call_of(m, 2, 0);
    std::unique_ptr<QMenu> menu(view.contextMenuAt(view.pointOfCollective(id)));
    QAction* pin = nullptr;
    QStringList texts;
    for (auto* action : menu->actions()) {
      texts << action->text();
      if (action->text() == "Pin this lane to the top") pin = action;
    }
    QVERIFY2(pin && texts.contains("Zoom to this collective"), qPrintable(texts.join(", ")));
    pin->trigger();
    const int lane = static_cast<int>(m.lane_of_collective(id));
    QVERIFY(view.lanePinned(lane));
    QVERIFY(view.laneCentre(lane) < view.rankRowCentre(0));
  }

  void tooltipsArrowsLegendAndHistory() {
    TimelineView view;
    view.resize(1200, 700);
    view.setRun(run_);
    view.show();
    const auto& m = run_->model();
    view.jumpTo(2 * testing::step_ns(spec_), 3 * testing::step_ns(spec_));
    const auto id = call_of(m, 0, 8);  // step 2, rank 2 late
    const QString tip = view.toolTipAt(view.pointOfCollective(id));
    QVERIFY2(tip.contains("allreduce 1 MiB on MPI_COMM_WORLD (seq 8)") && tip.contains("1 ms of it waiting for rank 2"), qPrintable(tip));
    // Selected: arrows from ranks 0 and 1 end at rank 2's arrival (the head just left of its box).
    view.selectCollective(id);
    const QImage image = view.grab().toImage();
    const auto last = m.collective(call_of(m, 2, 8));
    const QPointF at = view.pointOfCollective(call_of(m, 2, 8));
    const int x_last = TimelineView::kLabelWidth +
                       int((last.start_ns - view.visibleStart()) * (view.width() - TimelineView::kLabelWidth) /
                           double(view.visibleEnd() - view.visibleStart()));
    const int head = count_pixels(image, int(at.y()), x_last - 7, x_last - 1,
                                  [](QColor c) { return c.red() > 150 && c.green() < 100 && c.blue() < 100; });
    QVERIFY2(head >= 2, qPrintable(QString::number(head)));
    // The legend names the run's ops in their colours.
    const int legend_y = view.height() - 10;
    for (const auto op : {collscope::store::Op::Allreduce, collscope::store::Op::Bcast}) {
      const QColor want = op_color(op);
      int found = 0;
      for (int x = 0; x < view.width(); ++x) found += image.pixelColor(x, legend_y) == want;
      QVERIFY2(found >= 6, qPrintable(QString("%1 legend pixels").arg(found)));
    }
    // History: back to the step, forward again; Backspace is back.
    view.jumpTo(5 * testing::step_ns(spec_), 6 * testing::step_ns(spec_));
    QVERIFY(view.back());
    QCOMPARE(view.visibleStart(), 2 * testing::step_ns(spec_));
    QVERIFY(view.forward());
    QCOMPARE(view.visibleStart(), 5 * testing::step_ns(spec_));
    QTest::keyClick(&view, Qt::Key_Backspace);
    QCOMPARE(view.visibleStart(), 2 * testing::step_ns(spec_));
  }

  void honestDetails() {
    DetailsPanel details;
    details.setRun(run_);
    const auto& m = run_->model();
    details.showCollective(call_of(m, 0, 8));
    QCOMPARE(details.fieldValue("wait"), QString("1 ms"));
    QCOMPARE(details.fieldValue("after last arrival"), QString("200 µs"));
    QCOMPARE(details.fieldValue("transfer time"), QString("200 µs"));
    QCOMPARE(details.fieldValue("communicator"), QString("MPI_COMM_WORLD"));
    QCOMPARE(details.fieldValue("recorded.reduce_op"), QString("MPI_SUM"));
    QCOMPARE(details.fieldValue("recorded.datatype"), QString("MPI_FLOAT"));
    QVERIFY(details.fieldValue("busbw").endsWith("GB/s"));
    QCOMPARE(details.ranksTable()->item(2, 1)->text(), QString("+1 ms"));  // rank 2's arrival after the first
    QCOMPARE(details.ranksTable()->item(0, 1)->text(), QString("+0 ns"));
  }

  void lanesSayTheirBackendAndCountersCarryStepTimeAndBusbw() {
    // Lane names: the backend the thread used (an MPI-only run says "MPI", never "MPI/NCCL"), NVTX lanes by thread.
    int collective_lanes = 0, nvtx_lanes = 0;
    for (const auto& lane : run_->model().lanes()) {
      const QString label = QString::fromStdString(lane.label);
      if (lane.kind == LaneKind::Collectives) {
        ++collective_lanes;
        QVERIFY2(label.startsWith("MPI ") && !label.contains("NCCL"), qPrintable(label));
      }
      if (lane.kind == LaneKind::Nvtx) {
        ++nvtx_lanes;
        QVERIFY2(label.startsWith("NVTX ") && !label.contains("["), qPrintable(label));
      }
    }
    QCOMPARE(collective_lanes, spec_.ranks);
    QCOMPARE(nvtx_lanes, spec_.ranks);
    // Counter tracks: one step-time point per step (each step lasts step_ns), one busbw point per collective at
    // its known bus bandwidth: 1 MiB in the 200 µs after the last arrival, x 2(n-1)/n = 4/3 for an allreduce of
    // 3 ranks, x 1 for a bcast.
    const auto& s = *run_->summaries;
    QCOMPARE(s.step_ns.value.size(), run_->steps.size());
    QVERIFY(run_->steps.size() >= std::size_t(spec_.steps - 1));
    for (const float v : s.step_ns.value) QCOMPARE(std::llround(v), std::llround(double(testing::step_ns(spec_))));
    QCOMPARE(s.busbw_gbps.value.size(), std::size_t(spec_.steps * spec_.collectives_per_step));
    const double algbw = double(spec_.bytes) / double(spec_.transfer_ns);  // GB/s
    int allreduce = 0, bcast = 0;
    for (const float v : s.busbw_gbps.value) {
      if (std::abs(v - algbw * 4 / 3) < 1e-3) ++allreduce;
      else if (std::abs(v - algbw) < 1e-3) ++bcast;
      else QFAIL(qPrintable(QString("busbw %1 GB/s").arg(v)));
    }
    QCOMPARE(bcast, spec_.steps);  // one bcast of four collectives per step
    QCOMPARE(allreduce, spec_.steps * 3);
  }

  void heatMapAndLensPointAtTheLateRank() {
    const auto& s = *run_->summaries;
    QCOMPARE(s.heat.ranks, 3);
    QCOMPARE(s.heat.steps, spec_.steps);
    for (int step = 0; step < spec_.steps; ++step) {
      QCOMPARE(double(s.heat.late(2, step)), 1e6);  // one late collective per step
      QCOMPARE(double(s.heat.late(0, step)), 0.0);
    }
    QCOMPARE(s.lens.size(), std::size_t(spec_.steps * spec_.collectives_per_step));
    for (const auto& row : s.lens) {
      const bool late = run_->model().matched().instances[row.instance].seq % spec_.late_every == 0;
      QCOMPARE(row.spread_ns, late ? spec_.late_ns : 0);
      if (!late) continue;
      QCOMPARE(row.last_rank, 2);
      QCOMPARE(row.held_ns, spec_.late_ns);
    }
    RankHeatMap heat;
    heat.resize(500, 200);
    heat.setRun(run_);
    heat.show();
    QImage image(heat.size(), QImage::Format_ARGB32_Premultiplied);
    heat.render(&image);
    QVERIFY(heat.lastCellsRead() <= 9LL * heat.plotRect().width() * heat.plotRect().height());
    const QRect plot = heat.plotRect();
    const QPoint cell(plot.left() + plot.width() * 5 / 10 + plot.width() / 20, plot.top() + plot.height() * 2 / 3 + plot.height() / 6);
    QCOMPARE(heat.cellAt(cell), std::make_pair(2, 5));
    QVERIFY(image.pixelColor(cell).green() < 100);  // dark red
    QVERIFY(image.pixelColor(QPoint(cell.x(), plot.top() + plot.height() / 6)).green() > 240);  // rank 0: white
    QSignalSpy activated(&heat, &RankHeatMap::cellActivated);
    QTest::mouseClick(&heat, Qt::LeftButton, {}, cell);
    QCOMPARE(activated.count(), 1);
    CollectiveLens lens;
    lens.resize(500, 300);
    lens.setRun(run_);
    lens.show();
    QSignalSpy picked(&lens, &CollectiveLens::collectiveActivated);
    QTest::mouseClick(&lens, Qt::LeftButton, {}, QPoint(lens.plotRect().center().x(), lens.plotRect().top() + 2));
    QCOMPARE(picked.count(), 1);
    const auto id = picked.front().front().value<std::uint32_t>();
    QCOMPARE(run_->model().rank_of_collective(id), 2);  // row 0 is seq 0: rank 2 came last
    QCOMPARE(run_->model().call(id).seq, 0);
    QVERIFY(lens.lastRowsRead() <= std::int64_t(run_->summaries->lens.size()) + lens.plotRect().height());
  }
};

QTEST_MAIN(ViewerFeaturesTest)
#include "viewer_features_test.moc"
