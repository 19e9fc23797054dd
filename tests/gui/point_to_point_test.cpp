// Point-to-point in the viewer, on a real Open MPI run with known messages (trace_halo_run.sh: halo_probe on 4
// ranks, 10 steps; per step every rank posts MPI_Irecv from both neighbours and MPI_Isend of 8 KiB to both, then
// MPI_Waitall and an MPI_Allreduce; rank 2 computes 20 ms longer, so ranks 1 and 3 wait for its sends): calls on
// each rank's MPI lane, message lines between matched pairs, the communication matrix and its cells, the details
// of a message. And fusion-buffer notions only where the trace proves a fusion buffer. Offscreen platform.
#include <collscope/gui/communication_matrix.hpp>
#include <collscope/gui/main_window.hpp>
#include <collscope/gui/panels.hpp>
#include <collscope/gui/run_data_loader.hpp>
#include <collscope/gui/timeline_view.hpp>
#include <collscope/testing/lockstep_run.hpp>

#include <QComboBox>
#include <QDockWidget>
#include <QSignalSpy>
#include <QTest>
#include <QTreeWidget>

#include <filesystem>
#include <set>

#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace collscope::gui;
namespace run = collscope::run;
namespace testing = collscope::testing;

namespace {

constexpr int kRanks = 4, kSteps = 10;
constexpr std::int64_t kMessageBytes = 1024 * 8;  // 1024 doubles

bool open_and_wait(MainWindow& window, const fs::path& dir) {
  QSignalSpy finished(&window, &MainWindow::loadFinished);
  window.openRun(QString::fromStdString(dir.string()));
  return finished.wait(60000);
}

// Point-to-point calls of a rank whose span overlaps [t0, t1] (run time).
std::int64_t calls_overlapping(const TimelineModel& m, std::int64_t t0, std::int64_t t1) {
  std::int64_t n = 0;
  for (std::uint32_t id = 0; id < m.point_to_point_count(); ++id)
    if (m.point_to_point_end(id) >= t0 && m.point_to_point_start(id) <= t1) ++n;
  return n;
}

}  // namespace

class PointToPointViewerTest : public QObject {
  Q_OBJECT

 private:
  fs::path halo_;
  fs::path tmp_;

  void needHalo() {
    if (halo_.empty()) QSKIP("COLLSCOPE_HALO_RUN not set (halo_probe, the tracer or mpirun not built)");
  }

 private slots:
  void initTestCase() {
    if (const char* dir = std::getenv("COLLSCOPE_HALO_RUN"); dir && fs::exists(fs::path(dir) / "rank-00000.sqlite"))
      halo_ = dir;
    tmp_ = fs::temp_directory_path() / ("collscope-gui-p2p-" + std::to_string(::getpid()));
    fs::remove_all(tmp_);
  }
  void cleanupTestCase() { fs::remove_all(tmp_); }

  void callsSitOnEachRanksMpiLane() {
    needHalo();
    const auto data = load_timeline(halo_.string());
    const auto& m = data->model();
    QCOMPARE(int(data->run().ranks.size()), kRanks);
    QCOMPARE(m.point_to_point_count(), std::size_t(kRanks * kSteps * 4));  // 2 Irecv + 2 Isend per step
    for (int r = 0; r < kRanks; ++r) {
      // The rank's main thread has one MPI lane: its barrier and allreduces, and on its track all 40 calls.
      std::size_t on_tracks = 0;
      int mpi_lanes = 0;
      for (std::size_t l = 0; l < m.lanes().size(); ++l) {
        const auto& lane = m.lanes()[l];
        if (lane.rank_index != r || lane.kind != LaneKind::Collectives) continue;
        ++mpi_lanes;
        QVERIFY2(lane.label.starts_with("MPI "), lane.label.c_str());
        const auto& track = m.point_to_point_track(l);
        QCOMPARE(track.kind, LaneKind::PointToPoint);
        on_tracks += track.end - track.begin;
        for (std::uint32_t pos = track.begin; pos + 1 < track.end; ++pos)
          QVERIFY(m.start_at(track, pos) <= m.start_at(track, pos + 1));
        for (std::uint32_t pos = track.begin; pos < track.end; ++pos) {
          const auto id = m.id_at(LaneKind::PointToPoint, pos);
          QCOMPARE(m.rank_of_point_to_point(id), r);
          QCOMPARE(m.lane_of_point_to_point(id), std::uint32_t(l));
        }
      }
      QCOMPARE(mpi_lanes, 1);
      QCOMPARE(on_tracks, std::size_t(kSteps * 4));
    }
  }

  void messagesAreRunsMatchingWithLateSenders() {
    needHalo();
    const auto data = load_timeline(halo_.string());
    const auto& messages = data->model().messages();
    const auto matched = run::match_messages(data->run());  // the viewer's are run/'s, not its own
    QCOMPARE(messages.size(), matched.messages.size());
    QCOMPARE(messages.size(), std::size_t(kRanks * 2 * kSteps));
    QCOMPARE(messages.matched().unmatched_sends + messages.matched().unmatched_receives, std::int64_t(0));
    // Rank 2's sends came late to ranks 1 and 3: their receives waited (late sender), blamed on rank 2.
    for (const int receiver : {1, 3}) {
      int late = 0;
      for (const auto id : messages.messages_between(2, receiver))
        if (const auto* w = messages.wait_of(id); w && w->state == run::WaitState::LateSender && w->waited_for == 2 &&
                                                  w->waiting_rank == receiver)
          ++late;
      QVERIFY2(late >= kSteps - 1, qPrintable(QString("%1 of rank 2's messages to rank %2 waited for").arg(late).arg(receiver)));
    }
  }

  void timelineDrawsCallsAndMessageLinesInView() {
    needHalo();
    MainWindow window;
    window.resize(1500, 1000);
    window.show();
    QVERIFY(open_and_wait(window, halo_));
    auto* timeline = window.timeline();
    const auto& m = window.run()->model();
    timeline->zoomToFit();
    timeline->repaint();
    QCOMPARE(timeline->lastPointToPointCalls(), std::int64_t(kRanks * kSteps * 4));
    QCOMPARE(timeline->lastMessageLines(), std::int64_t(kRanks * 2 * kSteps));

    // Steps 3 to 6: run time from just after the last rank entered step 2's allreduce to just after the last
    // entered step 6's. Every rank's calls of a step end before it enters that step's allreduce, and the next step's
    // begin after its allreduce returns, which is after the last rank entered, plus its 2 ms compute: so whatever
    // the load, the range holds 4 steps of calls and messages. (Half a millisecond after the last completion, as
    // before, held a fifth step's calls of a rank that had left the allreduce 1.5 ms before the last did.)
    std::vector<const run::InstanceSummary*> allreduces;
    for (const auto& inst : m.matched().instances)
      if (inst.op == collscope::store::Op::Allreduce) allreduces.push_back(&inst);
    QCOMPARE(int(allreduces.size()), kSteps);
    const std::int64_t t0 = m.run_time(allreduces[2]->last_arrival_ns) + 1'000;
    const std::int64_t t1 = m.run_time(allreduces[6]->last_arrival_ns) + 1'000;
    timeline->setVisibleRange(double(t0), double(t1));
    timeline->repaint();
    QCOMPARE(calls_overlapping(m, t0, t1), std::int64_t(kRanks * 4 * 4));
    QCOMPARE(timeline->lastPointToPointCalls(), std::int64_t(kRanks * 4 * 4));
    QCOMPARE(timeline->lastMessageLines(), std::int64_t(kRanks * 2 * 4));

    // A click on a call selects it and its message; its details name the peer and who was late.
    std::uint32_t target = kNoInstance;  // rank 1's receive from rank 2 in the visible range
    for (std::uint32_t id = 0; id < m.point_to_point_count() && target == kNoInstance; ++id) {
      const auto& c = m.point_to_point(id);
      if (data_rank(m, id) == 1 && c.receives() && c.recv_peer == 2 && m.point_to_point_start(id) > t0) target = id;
    }
    QVERIFY(target != kNoInstance);
    const QPointF at = timeline->pointOfPointToPoint(target);
    QVERIFY(!at.isNull());
    QTest::mouseClick(timeline, Qt::LeftButton, {}, at.toPoint());
    const auto clicked = timeline->selectedPointToPoint();
    QVERIFY(clicked != kNoInstance);
    QCOMPARE(m.rank_of_point_to_point(clicked), m.rank_of_point_to_point(target));
    QVERIFY(!timeline->selectedMessages().empty());

    timeline->selectPointToPoint(target);
    QCOMPARE(timeline->selectedMessages().size(), std::size_t(1));
    auto* details = window.details();
    QCOMPARE(details->fieldValue("op"), QString("irecv"));
    QCOMPARE(details->fieldValue("rank"), QString("1"));
    QCOMPARE(details->fieldValue("peer"), QString("rank 2"));
    QCOMPARE(details->fieldValue("tag"), QString("0"));  // rank 2 sends leftwards with tag 0
    QCOMPARE(details->fieldValue("bytes"), QString::fromStdString(run::format_bytes(double(kMessageBytes))));
    QCOMPARE(details->fieldValue("late side"), QString("sender (rank 2)"));
    QVERIFY(details->fieldValue("wait").endsWith(" ms"));
    QVERIFY(!details->fieldValue("message time").isEmpty());
    const QString tip = timeline->toolTipAt(timeline->pointOfPointToPoint(target));
    QVERIFY2(tip.contains("late sender"), qPrintable(tip));
    // A collective clicked afterwards replaces it.
    timeline->selectCollective(0);
    QCOMPARE(timeline->selectedPointToPoint(), kNoInstance);
    QVERIFY(timeline->selectedMessages().empty());
    QVERIFY(details->fieldValue("peer").isEmpty());
  }

  void matrixCellsHoldTheKnownPairsAndSelectTheirMessages() {
    needHalo();
    MainWindow window;
    window.resize(1500, 1000);
    window.show();
    QVERIFY(open_and_wait(window, halo_));
    const auto& messages = window.run()->model().messages();
    // Each rank sends to its two ring neighbours, kSteps messages of 8 KiB each, and to nobody else.
    std::set<std::pair<int, int>> pairs;
    for (int r = 0; r < kRanks; ++r)
      for (const int peer : {(r + 1) % kRanks, (r + kRanks - 1) % kRanks}) pairs.insert({r, peer});
    QCOMPARE(messages.matrix().size(), pairs.size());
    for (int s = 0; s < kRanks; ++s)
      for (int r = 0; r < kRanks; ++r) {
        const auto* cell = messages.cell(s, r);
        if (!pairs.count({s, r})) {
          QVERIFY(!cell);
          continue;
        }
        QVERIFY(cell);
        QCOMPARE(cell->messages, std::int64_t(kSteps));
        QCOMPARE(cell->bytes, std::int64_t(kSteps) * kMessageBytes);
        QVERIFY(cell->time_ns > 0);
      }
    // The late sender's cells carry the waits: rank 2 → 1 waited far longer than rank 0 → 1.
    QVERIFY(messages.cell(2, 1)->wait_ns > 5 * messages.cell(0, 1)->wait_ns);

    // Clicking a cell selects exactly its messages on the timeline.
    window.communicationDock()->raise();
    auto* matrix = window.communication()->matrix();
    QTRY_VERIFY(matrix->isVisible());
    const QRectF cell = matrix->cellRect(2, 1);
    QVERIFY(!cell.isEmpty());
    QTest::mouseClick(matrix, Qt::LeftButton, {}, cell.center().toPoint());
    const auto& selected = window.timeline()->selectedMessages();
    QVERIFY(selected == messages.messages_between(2, 1));
    QCOMPARE(selected.size(), std::size_t(kSteps));
    for (const auto id : selected) {
      const auto msg = messages.message(id);
      QCOMPARE(window.run()->run().ranks[msg.send_rank].world_rank, 2);
      QCOMPARE(window.run()->run().ranks[msg.recv_rank].world_rank, 1);
      QCOMPARE(msg.bytes, kMessageBytes);
    }
    // The view frames them: every selected message's line lies in the visible range.
    for (const auto id : selected) {
      const auto msg = messages.message(id);
      QVERIFY(msg.send_ns >= window.timeline()->visibleStart() && msg.recv_ns <= window.timeline()->visibleEnd());
    }
    // The metric chooser switches what the cells show; the cells' tooltips say all three.
    window.communication()->metricChooser()->setCurrentIndex(int(MatrixMetric::Messages));
    QCOMPARE(matrix->metric(), MatrixMetric::Messages);
    const QString tip = matrix->toolTipAt(cell.center());
    QVERIFY2(tip.contains("rank 2 → rank 1: 10 messages"), qPrintable(tip));
  }

  void fusionFillOnlyWhereTheTraceProvesABuffer() {
    // A job that reuses one send buffer with different sizes and is no fusion job (LAMMPS reduces 16 and 24 bytes
    // from one array): the run notes the reuse, the viewer says nothing of fusion.
    testing::LockstepSpec plain;
    plain.fusion_buffer_bytes = 0;  // no HOROVOD_FUSION_THRESHOLD: nothing says the job fuses tensors
    const auto plain_dir = tmp_ / "reused-buffer";
    testing::write_lockstep_run(plain_dir.string(), plain);
    {
      MainWindow window;
      window.resize(1400, 900);
      window.show();
      QVERIFY(open_and_wait(window, plain_dir));
      const auto& m = window.run()->model();
      QVERIFY(!m.fusion_buffers());
      bool reused = false;
      for (std::uint32_t id = 0; id < m.collective_count(); ++id) {
        reused = reused || m.call(id).fusion_fill_pct > 0;  // the run's reading of the buffer table
        QCOMPARE(int(m.collective(id).fusion_fill_percent), 0);
      }
      QVERIFY(reused);
      window.timeline()->selectCollective(0);
      QCOMPARE(window.details()->fieldValue("op"), QString("allreduce"));
      QVERIFY(window.details()->fieldValue("fusion buffer fill").isEmpty());
      for (int i = 0; i < window.details()->fieldsTree()->topLevelItemCount(); ++i)
        QVERIFY(!window.details()->fieldsTree()->topLevelItem(i)->text(0).contains("fusion"));
    }
    // The same buffer in a Horovod job (its fusion threshold set) is a fusion buffer: 1 MiB of 4 MiB.
    testing::LockstepSpec horovod;
    const auto horovod_dir = tmp_ / "horovod";
    testing::write_lockstep_run(horovod_dir.string(), horovod);
    {
      MainWindow window;
      window.show();
      QVERIFY(open_and_wait(window, horovod_dir));
      QVERIFY(window.run()->model().fusion_buffers());
      window.timeline()->selectCollective(0);
      QCOMPARE(window.details()->fieldValue("fusion buffer fill"), QString("25 %"));
    }
    // A real Horovod job (tests/data, 2 ranks): its fused allreduces show their fill.
    {
      const auto data = load_timeline(collscope::test::unpack_test_data("horovod-0.28.1-cpu/plain").string());
      const auto& m = data->model();
      QVERIFY(m.fusion_buffers());
      std::uint32_t fused = kNoInstance;
      for (std::uint32_t id = 0; id < m.collective_count() && fused == kNoInstance; ++id)
        if (m.collective(id).fusion_fill_percent > 0) fused = id;
      QVERIFY(fused != kNoInstance);
      DetailsPanel details;
      details.setRun(data);
      details.showCollective(fused);
      QVERIFY(details.fieldValue("fusion buffer fill").endsWith(" %"));
    }
    // fusion_trainer packs its tensors with collscope_fusion_pack (buffers.tensors_packed): the trace proves a
    // fusion buffer.
    const char* sample = std::getenv("COLLSCOPE_SAMPLE_RUN");
    if (!sample || !fs::exists(fs::path(sample) / "rank-00000.sqlite")) return;
    QVERIFY(load_timeline(sample)->model().fusion_buffers());
  }

 private:
  static int data_rank(const TimelineModel& m, std::uint32_t id) {
    return m.run().ranks[m.rank_of_point_to_point(id)].world_rank;
  }
};

QTEST_MAIN(PointToPointViewerTest)
#include "point_to_point_test.moc"
