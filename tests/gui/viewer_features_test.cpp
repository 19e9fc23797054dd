// What a person sees and does in the viewer, on the lockstep run whose every time is known: rank 2 arrives
// 1 ms late at the first collective of each 7 ms step. Offscreen platform; no mocks.
#include <collscope/gui/main_window.hpp>
#include <collscope/gui/panels.hpp>
#include <collscope/gui/rank_views.hpp>
#include <collscope/gui/run_data_loader.hpp>
#include <collscope/gui/search.hpp>
#include <collscope/gui/timeline_view.hpp>
#include <collscope/testing/lockstep_run.hpp>

#include <QAbstractItemModel>
#include <QDialog>
#include <QLabel>
#include <QRegularExpression>
#include <QSpinBox>
#include <QTreeWidget>
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

// Every text a person can read in the window: labels, tables' cells and headers, trees, the timeline's drawn
// labels and its tooltips over every collective in view.
QStringList visible_texts(MainWindow& window) {
  QStringList out;
  for (auto* label : window.findChildren<QLabel*>()) out << label->text();
  for (auto* view : window.findChildren<QAbstractItemView*>()) {
    const auto* model = view->model();
    if (!model) continue;
    for (int c = 0; c < model->columnCount(); ++c) out << model->headerData(c, Qt::Horizontal).toString();
    for (int r = 0; r < model->rowCount(); ++r)
      for (int c = 0; c < model->columnCount(); ++c)
        for (int role : {int(Qt::DisplayRole), int(Qt::ToolTipRole)}) out << model->index(r, c).data(role).toString();
  }
  for (auto* tree : window.findChildren<QTreeWidget*>())
    for (QTreeWidgetItemIterator it(tree); *it; ++it)
      for (int c = 0; c < tree->columnCount(); ++c) out << (*it)->text(c) << (*it)->toolTip(c);
  auto* timeline = window.timeline();
  timeline->setRecordLabels(true);
  timeline->grab();
  for (const auto& l : timeline->lastLabels()) out << l.shown;
  for (int y = 0; y < timeline->height(); y += 4)
    for (int x = TimelineView::kLabelWidth; x < timeline->width(); x += 8) out << timeline->toolTipAt(QPointF(x, y));
  return out;
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

  void labelsAreWholeOrCutAtAWord() {
    // 160 steps, so that three-digit step numbers ("step 148") meet boxes too narrow for them; NVTX "step" boxes
    // and lane names meet narrow boxes and a narrow window.
    testing::LockstepSpec many;
    many.steps = 160;
    const auto dir = dir_.string() + "-labels";
    testing::write_lockstep_run(dir, many);
    const auto run = load_run(dir);
    fs::remove_all(dir);
    TimelineView view;
    view.setRecordLabels(true);
    view.setRun(run);
    const double step = double(testing::step_ns(many));
    int frames = 0, labels = 0, shortened = 0;
    for (const int width : {1400, 700, 420})
      for (const double steps_in_view : {160.0, 40.0, 12.0, 6.0, 2.5, 1.0, 0.3, 0.02}) {
        view.resize(width, 700);
        view.setVisibleRange(run->steps[148].start_ns + step / 2 - steps_in_view * step / 2,
                             run->steps[148].start_ns + step / 2 + steps_in_view * step / 2);
        view.grab();
        ++frames;
        for (const auto& l : view.lastLabels()) {
          ++labels;
          const QString why = QString("\"%1\" for \"%2\" in %3 px at width %4, %5 steps in view")
                                  .arg(l.shown, l.full).arg(l.rect.width()).arg(width).arg(steps_in_view);
          QVERIFY2(l.text_width <= l.rect.width() + 0.5, qPrintable("wider than its room: " + why));
          QVERIFY2(l.rect.left() >= -0.5 && l.rect.left() + l.text_width <= width + 0.5, qPrintable("off the view: " + why));
          if (l.shown == l.full) continue;
          ++shortened;
          // Shortened only to whole words: a run of leading words and "…", or one of its words ("148", "allreduce").
          const bool words_then_ellipsis = l.shown.endsWith(QChar(0x2026)) && l.full.startsWith(l.shown.chopped(1)) &&
                                           l.full.at(l.shown.size() - 1) == ' ';
          const bool one_word = l.full.split(' ', Qt::SkipEmptyParts).contains(l.shown);
          QVERIFY2(words_then_ellipsis || one_word, qPrintable("cut mid-word: " + why));
        }
      }
    QCOMPARE(frames, 24);
    QVERIFY(labels > 200);
    QVERIFY(shortened > 0);  // the narrow frames did shorten some
    // The step band at 12 steps in a 700 px view: step 148's number is there whole, never "step 14" or "14".
    view.resize(700, 700);
    view.setVisibleRange(run->steps[142].start_ns, run->steps[154].start_ns);
    view.grab();
    QStringList band;
    for (const auto& l : view.lastLabels())
      if (l.full.startsWith("step ") && l.full.mid(5).toInt() > 0) band << l.shown;
    QVERIFY2(band.contains("148") || band.contains("step 148"), qPrintable(band.join(", ")));
  }

  void theStepFieldFollowsTheView() {
    MainWindow window;
    window.resize(1200, 800);
    window.show();
    QVERIFY(open_and_wait(window, dir_));
    auto* field = window.findChild<QSpinBox*>("step");
    QVERIFY(field);
    const auto& steps = window.run()->steps;
    QVERIFY(steps.size() >= 8);
    auto* timeline = window.timeline();
    window.jumpToStep(5);
    QCOMPARE(field->value(), 5);
    // Panning right by one step's width moves the field to the next step; zooming around the centre keeps it.
    const double step_px = double(steps[6].start_ns - steps[5].start_ns) /
                           double(timeline->visibleEnd() - timeline->visibleStart()) *
                           (timeline->width() - TimelineView::kLabelWidth);
    timeline->panByPixels(step_px);
    QCOMPARE(field->value(), 6);
    timeline->zoomAround(0.5, TimelineView::kLabelWidth + (timeline->width() - TimelineView::kLabelWidth) / 2.0);
    QCOMPARE(field->value(), 6);
    timeline->setVisibleRange(double(steps[2].start_ns), double(steps[3].end_ns));  // steps 2-3: centre in 3
    QCOMPARE(field->value(), 3);
    timeline->zoomToFit();
    const auto centre = (timeline->visibleStart() + timeline->visibleEnd()) / 2;
    const int expect = int(std::upper_bound(steps.begin(), steps.end(), centre,
                                            [](std::int64_t t, const Step& s) { return t < s.start_ns; }) - steps.begin()) - 1;
    QCOMPARE(field->value(), std::max(0, expect));
  }

  void laneNamesSayTheBackend() {
    // The same lockstep job on another backend, loaded; its files removed.
    const auto lockstep_on = [&](collscope::store::Backend backend, const std::string& suffix) {
      testing::LockstepSpec spec;
      spec.backend = backend;
      const auto dir = dir_.string() + suffix;
      testing::write_lockstep_run(dir, spec);
      auto run = load_run(dir);
      fs::remove_all(dir);
      return std::make_pair(run, spec.ranks);
    };
    // Every collectives lane (one per rank) starts with `prefix` and names none of `absent`.
    const auto lanes_say = [](const auto& run, int ranks, const std::string& prefix,
                              const std::vector<std::string>& absent) {
      int lanes = 0;
      for (const auto& lane : run->model().lanes())
        if (lane.kind == LaneKind::Collectives) {
          ++lanes;
          bool clean = lane.label.rfind(prefix, 0) == 0;
          for (const auto& other : absent) clean = clean && lane.label.find(other) == std::string::npos;
          QVERIFY2(clean, lane.label.c_str());
        }
      QCOMPARE(lanes, ranks);
    };
    // On gloo (torch.distributed): its lanes say gloo, neither MPI nor NCCL.
    const auto [gloo_run, gloo_ranks] = lockstep_on(collscope::store::Backend::Gloo, "-gloo");
    lanes_say(gloo_run, gloo_ranks, "gloo ", {"MPI", "NCCL"});
    // On NCCL: its collectives lanes say NCCL, never MPI (the MPI run says MPI: below).
    const auto [run, ranks] = lockstep_on(collscope::store::Backend::Nccl, "-nccl");
    lanes_say(run, ranks, "NCCL ", {"MPI"});
    for (const auto& lane : run_->model().lanes())
      if (lane.kind == LaneKind::Collectives) QVERIFY2(lane.label.rfind("MPI ", 0) == 0, lane.label.c_str());
    // And as drawn: the label at the left of each collectives lane.
    TimelineView view;
    view.resize(1200, 700);
    view.setRecordLabels(true);
    view.setRun(run);
    view.grab();
    int drawn = 0;
    for (const auto& l : view.lastLabels()) drawn += l.shown.trimmed().startsWith("NCCL ");
    QCOMPARE(drawn, ranks);
  }

  void tinyCallsShowTheirBandwidthInUnitsThatFit() {
    // 8-byte allreduces taking 200 µs after the last arrival: 8 B / 200 µs × 4/3 = 53.3 kB/s, never "5.33e-05 GB/s".
    testing::LockstepSpec tiny;
    tiny.bytes = 8;
    const auto dir = dir_.string() + "-tiny";
    testing::write_lockstep_run(dir, tiny);
    MainWindow window;
    window.resize(1200, 800);
    window.show();
    QVERIFY(open_and_wait(window, dir));
    const auto& m = window.run()->model();
    window.details()->showCollective(call_of(m, 0, 1));
    QCOMPARE(window.details()->fieldValue("busbw"), QString("53.3 kB/s"));
    window.timeline()->setVisibleRange(0, 3 * double(testing::step_ns(tiny)));
    const QRegularExpression scientific(R"(\d(\.\d+)?e[+-]?\d)");
    int bandwidths = 0;
    for (const QString& text : visible_texts(window)) {
      QVERIFY2(!text.contains(scientific), qPrintable(text));
      QVERIFY2(!text.contains("0.00 GB/s") && !text.contains("0 GB/s"), qPrintable(text));
      bandwidths += text.contains("B/s");
    }
    QVERIFY(bandwidths >= 2);  // at least the counter track's label and the statistics' busbw column
    fs::remove_all(dir);
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
