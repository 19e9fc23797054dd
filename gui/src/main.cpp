// collscope-view [RUN_DIR] [--screenshot FILE.png]: the timeline viewer (`collscope view` runs it).
// --screenshot loads the run, selects the collective that waited longest in the first steps, saves a
// PNG of the main window and exits (used by the Xvfb screenshot test and for docs/images/viewer.png).
#include <collscope/gui/main_window.hpp>
#include <collscope/gui/communication_matrix.hpp>
#include <collscope/gui/rank_views.hpp>
#include <collscope/gui/run_data_loader.hpp>
#include <collscope/gui/timeline_view.hpp>
#include <collscope/run/wait_states.hpp>

#include <QApplication>
#include <QCommandLineParser>
#include <QComboBox>
#include <QDockWidget>
#include <QTimer>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string_view>
#include <utility>

using collscope::gui::kNoInstance;
using collscope::gui::MainWindow;

namespace {

// Shows steps 1..3 (or the whole run: view "fit") and selects the collective with the longest wait in view; view
// "ranks" also raises the Ranks panel (heat map and lens). View "messages" shows steps 1..3 with the Messages
// panel (the communication matrix) and selects the point-to-point call that waited longest; "matrix" selects the
// cell whose messages waited longest, as a click on it does.
void frame_interesting_part(MainWindow& window, const QString& view) {
  const auto* run = window.run();
  if (!run) return;
  auto* timeline = window.timeline();
  if (run->steps.size() >= 4 && view == "steps") timeline->setVisibleRange(run->steps[1].start_ns, run->steps[3].end_ns);
  else timeline->zoomToFit();
  if (view == "ranks")
    for (auto* dock : window.findChildren<QDockWidget*>())
      if (dock->widget() == static_cast<QWidget*>(window.rankViews())) dock->raise();
  // The instance in view with the largest spread of arrivals.
  const auto& m = run->model();
  std::uint32_t best = kNoInstance;
  std::int64_t best_wait = -1;
  const auto& instances = m.matched().instances;
  for (std::uint32_t i = 0; i < instances.size(); ++i) {
    const auto& inst = instances[i];
    const auto first = m.run_time(inst.first_arrival_ns), end = m.run_time(inst.last_completion_ns);
    if (first < timeline->visibleStart() || end > timeline->visibleEnd()) continue;
    if (inst.last_arrival_ns - inst.first_arrival_ns > best_wait) best_wait = inst.last_arrival_ns - inst.first_arrival_ns, best = i;
  }
  if (best != kNoInstance) {
    // Select the call that waited longest: the first arriver's.
    std::uint32_t waited = kNoInstance;
    std::int64_t earliest = std::numeric_limits<std::int64_t>::max();
    for (const auto id : m.instance_members(best))
      if (const auto e = m.collective(id); e.start_ns < earliest) earliest = e.start_ns, waited = id;
    best = waited;
  }
  if (best != kNoInstance && view != "messages" && view != "matrix") timeline->selectCollective(best);
  if (view != "messages" && view != "matrix") return;
  for (auto* dock : window.findChildren<QDockWidget*>())
    if (dock->widget() == static_cast<QWidget*>(window.communication())) dock->raise();
  const auto& messages = m.messages();
  if (view == "matrix") {
    // The pair that waited longest for each other, selected as a click on its cell selects it.
    const collscope::gui::MatrixCell* longest = nullptr;
    for (const auto& c : messages.matrix())
      if (!longest || c.wait_ns > longest->wait_ns) longest = &c;
    window.communication()->metricChooser()->setCurrentIndex(static_cast<int>(collscope::gui::MatrixMetric::Wait));
    if (longest) emit window.communication()->cellActivated(longest->sender, longest->receiver);
    return;
  }
  // The point-to-point call in view that waited longest: its message and the late side in the details.
  const collscope::run::MessageWait* longest = nullptr;
  for (const auto& w : messages.waits().waits)
    if (m.run_time(w.start_ns) >= timeline->visibleStart() && m.run_time(w.end_ns) <= timeline->visibleEnd() &&
        (!longest || w.wait_ns > longest->wait_ns))
      longest = &w;
  if (longest) {
    // Without steps to frame, about two periods of the exchange around that wait.
    if (run->steps.size() < 4) {
      const double a = double(m.run_time(longest->start_ns)), b = double(m.run_time(longest->end_ns));
      timeline->setVisibleRange(a - 1.2 * (b - a), b + 1.6 * (b - a));
    }
    const auto msg = messages.message(static_cast<std::uint32_t>(longest->message));
    timeline->selectPointToPoint(longest->state == collscope::run::WaitState::LateSender ? msg.recv : msg.send);
  }
}

// Without a display Qt's default platform aborts the process. A screenshot needs no screen, so it gets
// the offscreen platform; an interactive start says what is missing in one line instead of aborting.
bool choose_platform(int argc, char** argv) {
  if (!qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") || !qEnvironmentVariableIsEmpty("DISPLAY") ||
      !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"))
    return true;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--screenshot" || a.rfind("--screenshot=", 0) == 0) {
      qputenv("QT_QPA_PLATFORM", "offscreen");
      return true;
    }
    if (a == "-h" || a == "--help" || a == "--help-all" || a == "-v" || a == "--version") {
      qputenv("QT_QPA_PLATFORM", "offscreen");  // help text needs no screen either
      return true;
    }
  }
  std::fprintf(stderr, "collscope-view: no display: DISPLAY and WAYLAND_DISPLAY are not set (run it in a desktop "
                       "session, under xvfb-run, or with --screenshot FILE.png)\n");
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (!choose_platform(argc, argv)) return 2;
  QApplication app(argc, argv);
  QApplication::setApplicationName("collscope-view");
  QApplication::setOrganizationName("collscope");
  QCommandLineParser parser;
  parser.setApplicationDescription("collscope timeline viewer");
  parser.addHelpOption();
  parser.addPositionalArgument("path", "Run directory (rank-NNNNN.sqlite files)");
  QCommandLineOption screenshot("screenshot", "Save a PNG of the window after loading, then exit.", "file");
  parser.addOption(screenshot);
  QCommandLineOption view("view", "What the screenshot frames: steps (steps 1-3, the default), fit (the whole run), "
                                  "ranks (the whole run and the Ranks panel), messages (steps 1-3, the longest "
                                  "point-to-point wait and the Messages panel) or matrix (the matrix cell that "
                                  "waited longest, selected).", "steps|fit|ranks|messages|matrix", "steps");
  parser.addOption(view);
  parser.process(app);

  MainWindow window;
  window.show();
  const auto args = parser.positionalArguments();
  const QString shot = parser.value(screenshot);
  // A run that cannot be opened is shown in the window and also said on stderr, one line naming the file.
  bool failed = false;
  QObject::connect(&window, &MainWindow::loadFailed, [&failed](const QString& message) {
    failed = true;
    std::fprintf(stderr, "collscope-view: %s\n", qPrintable(message));
  });
  if (!shot.isEmpty()) {
    auto grab = [&] {
      // Let the layout settle and paint before grabbing.
      QTimer::singleShot(300, [&] {
        const bool saved = window.grab().save(shot, "PNG");
        if (!saved) std::fprintf(stderr, "collscope-view: %s: cannot write the screenshot\n", qPrintable(shot));
        QApplication::exit(saved && !failed ? 0 : 2);  // 2: an input or output error, as everywhere
      });
    };
    QObject::connect(&window, &MainWindow::loadFinished, [&] {
      frame_interesting_part(window, parser.value(view));
      if (!window.run() || !window.run()->windowed) return grab();
      // A large run read a window at a time: the events in view first (the collective to select among them), or
      // after 10 s whatever is there (a view past the window budget loads none).
      static bool grabbing = false;
      auto when_loaded = [&] {
        if (grabbing || window.loadingWindow() || !window.timeline()->visibleEventsLoaded()) return;
        grabbing = true;
        frame_interesting_part(window, parser.value(view));
        grab();
      };
      QObject::connect(&window, &MainWindow::windowLoaded, when_loaded);
      when_loaded();  // the window shown may hold the view already
      QTimer::singleShot(10000, [&] {
        if (!std::exchange(grabbing, true)) grab();
      });
    });
  }
  if (!args.isEmpty()) window.openRun(args.front());
  else if (!shot.isEmpty()) {
    std::fprintf(stderr, "collscope-view: --screenshot needs a run directory\n");
    return 2;
  }
  const int rc = app.exec();
  if (collscope::gui::RunLoadJob::activeLoads() > 0) {
    // A load (the analyzer) is still running on its thread: leave without static destructors under it.
    std::fflush(nullptr);
    std::_Exit(rc);
  }
  return rc;
}
