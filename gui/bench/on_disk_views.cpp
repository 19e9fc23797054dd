// rank_views_bench --on-disk DIR: the viewer on a generated run on disk (one rank file per rank), opened in the
// real MainWindow twice in the same run: whole (today's load: every event read, matched and summarised; the child
// process, which also writes the view cache as the viewer does for a run this large) and windowed (the overview
// from the view cache, then the events of the visible ranks and range). Prints for each: time to first paint,
// memory, events loaded against events in the run; for the windowed viewer also frame times and window loads
// while it pans, zooms and scrolls down the ranks.
#include <collscope/gui/main_window.hpp>
#include <collscope/gui/rank_views.hpp>
#include <collscope/gui/timeline_view.hpp>
#include <collscope/gui/windowed_run.hpp>
#include <collscope/store/trace_reader.hpp>
#include <collscope/testing/synthetic_run.hpp>

#include "frame_stats.hpp"

#include <QApplication>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QImage>
#include <QTimer>

#include <fmt/format.h>

#include <cstring>
#include <filesystem>

#include <sys/wait.h>
#include <unistd.h>

namespace collscope::gui::bench {
namespace {

// Runs the event loop until `done` or `limit_s` (s) passed; false on timeout.
template <typename Done>
bool wait_until(Done&& done, double limit_s) {
  QElapsedTimer t;
  t.start();
  while (!done()) {
    if (t.nsecsElapsed() / 1e9 > limit_s) return false;
    QApplication::processEvents(QEventLoop::AllEvents, 5);
  }
  return true;
}

struct Opened {
  double first_paint_s = 0;  // openRun → the first frame of the window (timeline + rank views) painted
  std::int64_t events_loaded = 0;
};

// Opens `dir` in a 1600x1000 MainWindow and paints its first frame as soon as a run is shown.
Opened open_and_paint(MainWindow& window, const std::string& dir, QImage& image) {
  Opened out;
  bool shown = false;
  auto c = QObject::connect(&window, &MainWindow::runLoaded, [&] { shown = true; });
  QElapsedTimer t;
  t.start();
  window.openRun(QString::fromStdString(dir));
  if (!wait_until([&] { return shown; }, 600)) throw std::runtime_error("the run did not open in 600 s");
  window.render(&image);
  out.first_paint_s = t.nsecsElapsed() / 1e9;
  out.events_loaded = static_cast<std::int64_t>(window.run()->model().event_count());
  QObject::disconnect(c);
  return out;
}

// The application and its 1600x1000 main window, in the process that measures them.
struct Viewer {
  int argc = 1;
  char name[17] = "rank_views_bench";
  char* argv[2] = {name, nullptr};
  QApplication app{argc, argv};
  MainWindow window;
  QImage image;
  Viewer() {
    window.resize(1600, 1000);
    window.show();
    image = QImage(window.size(), QImage::Format_ARGB32_Premultiplied);
  }
};

int whole_run_child(const std::string& dir) {
  Viewer viewer;
  auto& window = viewer.window;
  auto& image = viewer.image;
  bool finished = false;
  QObject::connect(&window, &MainWindow::loadFinished, [&] { finished = true; });
  QElapsedTimer t;
  t.start();
  const auto opened = open_and_paint(window, dir, image);
  const long rss_first = rss_kib();
  wait_until([&] { return window.run()->summaries != nullptr; }, 1200);  // the analysis: heat map and lens
  window.render(&image);
  const double summaries_s = t.nsecsElapsed() / 1e9;
  wait_until([&] { return finished; }, 1200);  // then the view cache written
  fmt::print("whole run   first paint {:7.2f} s   events loaded {:>10} of {:>10}   RSS at first paint {:6.0f} MB, "
             "peak {:6.0f} MB; heat map and lens drawn at {:.2f} s, view cache written at {:.2f} s\n",
             opened.first_paint_s, opened.events_loaded, window.run()->model().event_count(), rss_first / 1024.0,
             peak_rss_kib() / 1024.0, summaries_s, t.nsecsElapsed() / 1e9);
  std::fflush(stdout);
  return window.run() && window.run()->analyzed ? 0 : 1;
}

}  // namespace

int on_disk_views(const std::string& dir, int ranks, int steps) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(dir, ec) || store::rank_files(dir).size() != static_cast<std::size_t>(ranks)) {
    // In a process of its own: the writers' memory must not count in the viewers' RSS.
    std::fflush(stdout);
    const pid_t writer = ::fork();
    if (writer == 0) {
      QElapsedTimer t;
      t.start();
      fs::remove_all(dir);
      testing::SyntheticRunSpec spec;
      spec.ranks = ranks;
      spec.steps = steps;
      spec.allreduces_per_step = 1;
      spec.allreduce_bytes = 64 << 20;
      spec.compute_ms = 8;
      spec.slow_rank = 7;  // 2 ms late in every step
      spec.slow_ms = 2;
      const auto rows = testing::write_synthetic_run(dir, spec);
      fmt::print("generated {}: {} ranks x {} steps, {} collectives + as many NVTX step ranges, in {:.1f} s\n", dir,
                 ranks, steps, rows, t.nsecsElapsed() / 1e9);
      std::fflush(stdout);
      ::_exit(0);
    }
    int status = 0;
    ::waitpid(writer, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  }
  const std::string cache = view_cache_path(dir);
  // RANK_VIEWS_BENCH_WINDOWED_ONLY=1: the windowed viewer alone, on the cache a previous run left.
  if (!std::getenv("RANK_VIEWS_BENCH_WINDOWED_ONLY") || !fs::exists(cache, ec)) {
    fs::remove(cache, ec);  // the whole-run opening writes it again
    std::fflush(stdout);
    const pid_t child = ::fork();
    if (child == 0) ::_exit(whole_run_child(dir));
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fmt::print("the whole-run opening failed\n");
      return 1;
    }
  }
  fmt::print("view cache {}: {:.0f} MB\n", cache, double(fs::file_size(cache, ec)) / 1e6);

  Viewer viewer;
  auto& window = viewer.window;
  auto& image = viewer.image;
  int windows = 0;
  QElapsedTimer since_open;
  double first_window_s = 0;
  QObject::connect(&window, &MainWindow::windowLoaded, [&] {
    if (windows++ == 0) first_window_s = since_open.nsecsElapsed() / 1e9;
  });
  since_open.start();
  const auto opened = open_and_paint(window, dir, image);
  const auto* run = window.run();
  if (!run || !run->windowed) {
    fmt::print("the run did not open windowed (events {} below COLLSCOPE_VIEW_WINDOWED_MIN_EVENTS?)\n",
               run ? run->model().event_count() : 0);
    return 1;
  }
  const std::int64_t in_run = run->windowed->event_count();
  const long rss_first = rss_kib();
  wait_until([&] { return windows > 0; }, 60);
  fmt::print("windowed    first paint {:7.2f} s   events loaded {:>10} of {:>10}   RSS at first paint {:6.0f} MB; "
             "the first window ({} events) shown at {:.2f} s\n",
             opened.first_paint_s, opened.events_loaded, in_run, rss_first / 1024.0, window.run()->model().event_count(),
             first_window_s);

  // Pan, zoom and scroll down the ranks; each frame is the timeline painted after the event loop ran (a window
  // arriving is shown in the frame after it).
  auto* timeline = window.timeline();
  const double total = double(run->windowed->duration_ns());
  Frames frames;  // the timeline's paint
  Frames gui;     // the GUI thread's whole frame: input, the windows arriving (setRun), paint
  std::int64_t most_loaded = 0;
  const int kFrames = 120;
  for (int i = 0; i < kFrames; ++i) {
    QElapsedTimer whole;
    whole.start();
    const double whole_cpu0 = thread_cpu_ms();
    if (i % 40 == 0) timeline->setVisibleRange(total * 0.3, total * 0.3 + total / 50);  // 1/50 of the run
    else if (i % 4 == 3) timeline->handleKey(Qt::Key_PageDown, Qt::NoModifier);
    else if (i % 20 == 10) timeline->zoomAround(0.5, timeline->width() / 2.0);
    else timeline->panByPixels(-120);
    QApplication::processEvents(QEventLoop::AllEvents, 2);
    const double cpu0 = thread_cpu_ms();
    QElapsedTimer f;
    f.start();
    timeline->repaint();
    frames.ms.push_back(f.nsecsElapsed() / 1e6);
    frames.cpu_ms.push_back(thread_cpu_ms() - cpu0);
    gui.ms.push_back(whole.nsecsElapsed() / 1e6);
    gui.cpu_ms.push_back(thread_cpu_ms() - whole_cpu0);
    most_loaded = std::max<std::int64_t>(most_loaded, window.run()->model().event_count());
    if (std::getenv("RANK_VIEWS_BENCH_VERBOSE"))
      fmt::print("  frame {:3d}: paint {:6.2f} ms, GUI thread {:6.2f} ms ({:.2f} ms CPU), {} windows, ranks {}-{}, {} events "
                 "loaded\n", i, frames.ms.back(), gui.ms.back(), gui.cpu_ms.back(), windows,
                 timeline->visibleRanks().first, timeline->visibleRanks().second, window.run()->model().event_count());
  }
  wait_until([&] { return !timeline->visibleEventsLoaded() ? false : true; }, 10);
  fmt::print("windowed scrolling, {} frames (pan, zoom, page down through the ranks): paint wall mean / p95 / max "
             "{:.2f} / {:.2f} / {:.2f} ms, CPU mean / p95 {:.2f} / {:.2f} ms; whole GUI-thread frame (input, windows "
             "shown, paint) mean / p95 / max {:.2f} / {:.2f} / {:.2f} ms, its CPU mean / p95 / max {:.2f} / {:.2f} / "
             "{:.2f} ms; {} windows loaded; at most {} events loaded ({:.2f} % of the run); peak RSS {:.0f} MB\n",
             kFrames, frames.mean(), frames.pct(0.95), frames.max(), frames.cpu().mean(), frames.cpu().pct(0.95),
             gui.mean(), gui.pct(0.95), gui.max(), gui.cpu().mean(), gui.cpu().pct(0.95), gui.cpu().max(), windows, most_loaded, 100.0 * double(most_loaded) / double(in_run),
             peak_rss_kib() / 1024.0);
  // A lens row clicked: the view goes to that collective on its last arriver's row, which loads, and selects it.
  {
    const auto& lens = window.run()->summaries->lens;
    const auto& row = lens[lens.size() / 3];
    QElapsedTimer c;
    c.start();
    emit window.rankViews()->instanceActivated(row.instance, row.last_rank);
    wait_until([&] { return timeline->selectedCollective() != kNoInstance; }, 30);
    timeline->repaint();
    fmt::print("lens row clicked -> its collective selected on rank {} and drawn: {:.3f} s\n", row.last_rank,
               c.nsecsElapsed() / 1e9);
  }
  if (const char* png = std::getenv("RANK_VIEWS_BENCH_SCREENSHOT")) {
    wait_until([&] { return !window.loadingWindow() && timeline->visibleEventsLoaded(); }, 30);
    if (auto* dock = qobject_cast<QDockWidget*>(window.rankViews()->parentWidget())) dock->raise();
    QApplication::processEvents();
    window.grab().save(png);
    fmt::print("screenshot {}\n", png);
  }
  return 0;
}

}  // namespace collscope::gui::bench
