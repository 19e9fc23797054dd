// A large run read a window at a time (windowed_run.hpp), in the real MainWindow on the offscreen platform: a
// generated run of 48 ranks, viewed windowed through a lowered threshold and a small window budget. After opening,
// zooming and scrolling down the ranks, the events loaded stay bounded by the visible ranks and range (with the
// loader's margins), never the run; what the timeline has to draw in view (every event of the visible ranks and
// range, and each collective's instance: its wait) equals the whole-run viewer's, and so do the pixels where both
// lay their rows out alike.
#include <collscope/gui/main_window.hpp>
#include <collscope/gui/rank_views.hpp>
#include <collscope/gui/run_data_loader.hpp>
#include <collscope/gui/timeline_view.hpp>
#include <collscope/gui/windowed_run.hpp>
#include <collscope/testing/synthetic_run.hpp>

#include <QSignalSpy>
#include <QTest>

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <tuple>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace collscope::gui;

namespace {

constexpr int kRanks = 48, kSteps = 120;
constexpr std::int64_t kWindowEvents = 1500;  // the window budget in this test (events)

// What the timeline draws of one event: world rank, kind, start and end (run time), op or name, and for a
// collective its instance's first and last arrival (its wait).
using DrawnEvent = std::tuple<int, int, std::int64_t, std::int64_t, int, std::int64_t, std::int64_t>;

std::set<DrawnEvent> events_in_view(const TimelineModel& m, int rank_begin, int rank_end, std::int64_t t0, std::int64_t t1) {
  std::set<DrawnEvent> out;
  for (std::size_t l = 0; l < m.lanes().size(); ++l) {
    const auto& lane = m.lanes()[l];
    if (lane.rank_index < rank_begin || lane.rank_index >= rank_end) continue;
    const int world = m.run().ranks[static_cast<std::size_t>(lane.rank_index)].world_rank;
    const auto& track = m.point_to_point_track(l);  // the lane's point-to-point calls
    for (std::uint32_t pos = m.first_ending_after(track, t0); pos < track.end && m.start_at(track, pos) <= t1; ++pos) {
      const auto id = m.id_at(LaneKind::PointToPoint, pos);
      out.emplace(world, 3, m.point_to_point_start(id), m.point_to_point_end(id),
                  static_cast<int>(m.point_to_point(id).op), m.point_to_point(id).seq, m.point_to_point(id).send_peer);
    }
    for (std::uint32_t pos = m.first_ending_after(lane, t0); pos < lane.end && m.start_at(lane, pos) <= t1; ++pos) {
      if (lane.kind == LaneKind::Collectives) {
        const auto e = m.collective_at(lane, pos);
        std::int64_t first = -1, last = -1;
        if (e.instance != kNoInstance) {
          first = m.run_time(m.matched().instances[e.instance].first_arrival_ns);
          last = m.run_time(m.matched().instances[e.instance].last_arrival_ns);
        }
        out.emplace(world, 0, e.start_ns, e.end_ns, static_cast<int>(e.op), first, last);
      } else {
        const auto id = m.id_at(lane.kind, pos);
        const auto s = m.span(lane.kind, id);
        out.emplace(world, static_cast<int>(lane.kind), s.start_ns, s.end_ns, static_cast<int>(s.name), 0, 0);
      }
    }
  }
  return out;
}

// Events of the whole run overlapping ranks [rank_begin, rank_end) and [t0, t1].
std::size_t count_in(const TimelineModel& m, int rank_begin, int rank_end, std::int64_t t0, std::int64_t t1) {
  std::size_t n = 0;
  for (const auto& lane : m.lanes()) {
    if (lane.rank_index < rank_begin || lane.rank_index >= rank_end) continue;
    for (std::uint32_t pos = m.first_ending_after(lane, t0); pos < lane.end && m.start_at(lane, pos) <= t1; ++pos) ++n;
  }
  return n;
}

}  // namespace

class WindowedViewTest : public QObject {
  Q_OBJECT
  fs::path dir_, cache_dir_;
  std::shared_ptr<const RunData> full_;

  bool waitForEvents(MainWindow& window) {
    for (int i = 0; i < 300 && (window.loadingWindow() || !window.timeline()->visibleEventsLoaded()); ++i) QTest::qWait(20);
    return window.timeline()->visibleEventsLoaded();
  }

  // Loaded: exactly the run's events in the window, which holds the view; no more than 4 times those of the
  // loader's largest margin around the view (the visible ranks and range again on each side), or a quarter of
  // the window budget: a window is kept while the view stays inside it.
  void checkBounded(MainWindow& window) {
    const auto* t = window.timeline();
    const auto [first, last] = t->visibleRanks();
    const auto& w = window.run()->window;
    const auto loaded = window.run()->model().event_count();
    std::size_t in_window = 0, pinned_around = 0;
    for (const int r : w.ranks()) in_window += count_in(full_->model(), r, r + 1, w.start_ns, w.end_ns);
    QCOMPARE(loaded, in_window);
    QVERIFY(w.rank_begin <= first && last <= w.rank_end);
    for (const int r : t->pinnedRanks()) QVERIFY(w.holds_rank(r));
    QVERIFY(w.start_ns <= std::max<std::int64_t>(0, t->visibleStart()));
    QVERIFY(w.end_ns >= std::min(t->visibleEnd(), full_->model().duration_ns()));
    const std::int64_t width = t->visibleEnd() - t->visibleStart();
    const auto around = count_in(full_->model(), first - (last - first), last + (last - first),
                                 t->visibleStart() - width, t->visibleEnd() + width);
    for (const int r : t->pinnedRanks())
      if (r < first - (last - first) || r >= last + (last - first))
        pinned_around += count_in(full_->model(), r, r + 1, t->visibleStart() - width, t->visibleEnd() + width);
    // 5/4: the estimate's error (it spreads each rank's events evenly over the run)
    const auto bound = std::max<std::size_t>(4 * (around + pinned_around), kWindowEvents / 4) * 5 / 4;
    QVERIFY2(loaded <= bound, qPrintable(QString("%1 events loaded, %2 around the view; window ranks %3-%4 %5-%6 ns, view ranks %7-%8 %9-%10 ns")
                                             .arg(loaded).arg(around).arg(w.rank_begin).arg(w.rank_end).arg(w.start_ns).arg(w.end_ns)
                                             .arg(first).arg(last).arg(t->visibleStart()).arg(t->visibleEnd())));
    QVERIFY2(loaded * 8 < full_->model().event_count(),
             qPrintable(QString("%1 events loaded of %2 in the run").arg(loaded).arg(full_->model().event_count())));
  }

  // The timeline's events in view equal the whole-run model's.
  void checkSameEvents(MainWindow& window) {
    const auto* t = window.timeline();
    const auto [first, last] = t->visibleRanks();
    QVERIFY(last > first);
    const auto windowed = events_in_view(window.run()->model(), first, last, t->visibleStart(), t->visibleEnd());
    const auto whole = events_in_view(full_->model(), first, last, t->visibleStart(), t->visibleEnd());
    QVERIFY(!whole.empty());
    QCOMPARE(windowed.size(), whole.size());
    QVERIFY(windowed == whole);
  }

 private slots:
  void initTestCase() {
    dir_ = fs::temp_directory_path() / fmt::format("collscope-windowed-view-{}", ::getpid());
    cache_dir_ = dir_ / "cache";
    fs::remove_all(dir_);
    collscope::testing::SyntheticRunSpec spec;
    spec.ranks = kRanks;
    spec.steps = kSteps;
    spec.allreduces_per_step = 2;
    spec.slow_rank = 5;
    spec.slow_ms = 2;
    collscope::testing::write_synthetic_run((dir_ / "run").string(), spec);
    qputenv("COLLSCOPE_VIEW_CACHE_DIR", cache_dir_.string().c_str());
    qputenv("COLLSCOPE_VIEW_WINDOWED_MIN_EVENTS", "1");
    qputenv("COLLSCOPE_VIEW_WINDOW_EVENTS", QByteArray::number(static_cast<qlonglong>(kWindowEvents)));
    full_ = load_run((dir_ / "run").string());
    QVERIFY(full_->analyzed && full_->summaries);
  }
  void cleanupTestCase() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // The whole-run opening writes the cache for a run past the threshold; the next opening is windowed.
  void wholeOpeningWritesTheCache() {
    const auto run = (dir_ / "run").string();
    QVERIFY(!fs::exists(view_cache_path(run)));
    QVERIFY(view_cache_path(run).rfind(cache_dir_.string(), 0) == 0);
    MainWindow window;
    QSignalSpy finished(&window, &MainWindow::loadFinished);
    window.openRun(QString::fromStdString(run));
    QVERIFY(finished.wait(60000));
    QVERIFY(!window.run()->windowed);
    QCOMPARE(window.run()->model().event_count(), full_->model().event_count());
    QVERIFY(fs::exists(view_cache_path(run)));
    QVERIFY(!fs::exists(dir_ / "run" / "cache"));  // nothing written in the run directory
  }

  void opensWindowedAndStaysBounded() {
    MainWindow window;
    window.resize(1400, 900);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QSignalSpy shown(&window, &MainWindow::runLoaded);
    window.openRun(QString::fromStdString((dir_ / "run").string()));
    QVERIFY(shown.wait(30000));
    const auto* overview = window.run();
    QVERIFY(overview->windowed);
    QCOMPARE(overview->windowed->event_count(), static_cast<std::int64_t>(full_->model().event_count()));
    QCOMPARE(overview->model().event_count(), std::size_t{0});  // the first frame: summaries only
    QCOMPARE(overview->summaries->heat.ranks, kRanks);
    QCOMPARE(overview->summaries->lens.size(), full_->summaries->lens.size());
    QCOMPARE(overview->steps.size(), full_->steps.size());
    QCOMPARE(overview->findings.size(), full_->findings.size());
    auto* timeline = window.timeline();

    // Zoomed in on a twentieth of the run: the visible ranks' events of that range (and margins) load.
    const double total = double(full_->model().duration_ns());
    timeline->setVisibleRange(total * 0.4, total * 0.45);
    QVERIFY(waitForEvents(window));
    checkBounded(window);
    checkSameEvents(window);

    // At the top both viewers lay out the same rows: the same pixels.
    {
      TimelineView whole;
      whole.resize(timeline->size());
      whole.setRun(full_);
      whole.setVisibleRange(timeline->visibleStart(), timeline->visibleEnd());
      QImage a(timeline->size(), QImage::Format_ARGB32_Premultiplied), b(a.size(), a.format());
      timeline->render(&a);
      whole.render(&b);
      const auto [first, last] = timeline->visibleRanks();
      QVERIFY2(first == 0 && window.run()->window.rank_begin == 0, "the view opens at the first rank");
      QVERIFY2(a == b, "the windowed timeline draws what the whole-run timeline draws");
    }

    // A pinned lane stays pinned in the windows that follow (its position differs in each).
    const auto& first_lane = window.run()->model().lanes().front();
    const auto pinned = std::tuple{first_lane.rank_index, first_lane.kind, first_lane.key};
    timeline->setLanePinned(0, true);

    // Down the ranks, page by page, panning as well: every window stays bounded and draws the same events.
    std::size_t most = 0;
    for (int page = 0; page < 12; ++page) {
      QTest::keyClick(timeline, Qt::Key_PageDown);
      if (page % 3 == 1) timeline->panByPixels(-200);
      if (page % 4 == 2) timeline->zoomAround(0.5, timeline->width() / 2.0);
      QVERIFY(waitForEvents(window));
      checkBounded(window);
      checkSameEvents(window);
      most = std::max(most, window.run()->model().event_count());
      const auto& lanes = window.run()->model().lanes();
      const auto it = std::find_if(lanes.begin(), lanes.end(), [&](const Lane& l) {
        return std::tuple{l.rank_index, l.kind, l.key} == pinned;
      });
      QVERIFY(it != lanes.end());  // the window holds the pinned lane's rank, wherever the view is
      QVERIFY(timeline->lanePinned(static_cast<int>(it - lanes.begin())));
    }
    QVERIFY(timeline->visibleRanks().first > kRanks / 4);  // it did scroll down the ranks
    qInfo("at most %zu of %zu events loaded", most, full_->model().event_count());

    // A lens row clicked: the view goes to the instance on its last arriver's row, and selects that call when its
    // window has loaded (the whole-run viewer selects the same call).
    {
      const auto& row = overview->summaries->lens[overview->summaries->lens.size() / 3];
      emit window.rankViews()->instanceActivated(row.instance, row.last_rank);
      QVERIFY(waitForEvents(window));
      const auto& m = window.run()->model();
      const auto selected = timeline->selectedCollective();
      QVERIFY(selected != kNoInstance);
      QCOMPARE(m.rank_of_collective(selected), row.last_rank);
      QCOMPARE(m.instance_of_collective(selected), row.instance);
      const auto& inst = m.matched().instances[row.instance];
      QCOMPARE(m.call(selected).seq, inst.seq);
      const auto [first, last] = timeline->visibleRanks();
      QVERIFY(first <= row.last_rank && row.last_rank < last);
    }

    // Zoomed out to the whole run: past the budget nothing more is loaded, and the legend says why.
    timeline->zoomToFit();
    QTest::qWait(50);
    QVERIFY(window.run()->model().event_count() <= most);
  }

  // A traced MPI run with point-to-point calls (a halo exchange: Irecv/Isend/Waitall, then an allreduce per step)
  // read a window at a time: the same calls in view, non-blocking ones included, and the same messages (the
  // whole run's matching, with their late-sender waits) between the calls the window holds.
  void tracedRunWithPointToPoint() {
    const char* halo = std::getenv("COLLSCOPE_HALO_RUN");
    if (!halo || !fs::exists(fs::path(halo) / "rank-00000.sqlite")) QSKIP("COLLSCOPE_HALO_RUN not set (halo_probe not built)");
    const auto whole = load_run(halo);
    const auto& wm = whole->model();
    QVERIFY(wm.point_to_point_count() > 0);
    const auto cache = (cache_dir_ / "halo.view").string();
    write_view_cache(*whole, cache);
    const auto windowed = WindowedRun::open(halo, cache);
    QVERIFY(windowed);
    QCOMPARE(windowed->event_count(), static_cast<std::int64_t>(wm.event_count()));
    const int ranks = static_cast<int>(wm.run().ranks.size());
    // The middle fifth of the messages (a traced run's time is not spread evenly: startup, a loaded machine).
    std::vector<std::int64_t> sends;
    for (std::uint32_t k = 0; k < wm.messages().size(); ++k) sends.push_back(wm.messages().message(k).send_ns);
    std::sort(sends.begin(), sends.end());
    QVERIFY(sends.size() >= 10);
    const std::int64_t t0 = sends[sends.size() * 2 / 5], t1 = sends[sends.size() * 3 / 5];
    const auto window = windowed->load({.rank_begin = 1, .rank_end = ranks, .pinned_ranks = {}, .start_ns = t0, .end_ns = t1});
    const auto& m = window->model();
    QVERIFY(m.point_to_point_count() > 0 && m.event_count() < wm.event_count());
    const auto in_view = events_in_view(m, 1, ranks, t0, t1);
    QCOMPARE(in_view.size(), events_in_view(wm, 1, ranks, t0, t1).size());
    QVERIFY(in_view == events_in_view(wm, 1, ranks, t0, t1));

    // Messages: (sender, receiver, send posted, receive completed, wait state or -1) of every message whose two
    // calls are in the window.
    using Line = std::tuple<int, int, std::int64_t, std::int64_t, int>;
    auto lines = [&](const TimelineModel& model, bool only_window) {
      std::set<Line> out;
      const auto& index = model.messages();
      auto inside = [&](std::uint32_t call, int rank) {
        return rank >= 1 && model.point_to_point_start(call) <= t1 && model.point_to_point_end(call) >= t0;
      };
      for (std::uint32_t k = 0; k < index.size(); ++k) {
        const auto msg = index.message(k);
        if (only_window && !(inside(msg.send, msg.send_rank) && inside(msg.recv, msg.recv_rank))) continue;
        out.emplace(model.run().ranks[static_cast<std::size_t>(msg.send_rank)].world_rank,
                    model.run().ranks[static_cast<std::size_t>(msg.recv_rank)].world_rank, msg.send_ns, msg.recv_ns,
                    msg.wait ? static_cast<int>(msg.wait->state) : -1);
      }
      return out;
    };
    const auto window_lines = lines(m, false);
    QVERIFY(!window_lines.empty() && window_lines.size() < wm.messages().size());
    QVERIFY(window_lines == lines(wm, true));
    QVERIFY(std::any_of(window_lines.begin(), window_lines.end(), [](const Line& l) { return std::get<4>(l) >= 0; }));

    // The communication matrix is the whole run's, from the first frame on (the overview).
    auto cells = [](const TimelineModel& model) {
      std::vector<std::tuple<int, int, std::int64_t, std::int64_t, std::int64_t, std::int64_t>> out;
      for (const auto& c : model.messages().matrix()) out.emplace_back(c.sender, c.receiver, c.messages, c.bytes, c.time_ns, c.wait_ns);
      return out;
    };
    QVERIFY(!cells(wm).empty());
    QVERIFY(cells(windowed->overview()->model()) == cells(wm));
    QVERIFY(cells(m) == cells(wm));
    QCOMPARE(windowed->overview()->model().messages().waits().messages, wm.messages().waits().messages);
  }

  // A rank file changed since (a run traced again, or still being written): the cache is ignored, the run read whole.
  void changedRunIsReadWhole() {
    const auto run = (dir_ / "run").string();
    QVERIFY(WindowedRun::open(run, view_cache_path(run)));
    const auto file = dir_ / "run" / "rank-00003.sqlite";
    fs::last_write_time(file, fs::last_write_time(file) + std::chrono::seconds(1));
    QVERIFY(!WindowedRun::open(run, view_cache_path(run)));
    MainWindow window;
    QSignalSpy finished(&window, &MainWindow::loadFinished);  // after the analysis and the cache written anew
    window.openRun(QString::fromStdString(run));
    QVERIFY(finished.wait(60000));
    QVERIFY(!window.run()->windowed);
    QVERIFY(WindowedRun::open(run, view_cache_path(run)));
  }
};

QTEST_MAIN(WindowedViewTest)
#include "windowed_view_test.moc"
