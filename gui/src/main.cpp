// collscope-view [RUN_DIR] [--screenshot FILE.png]: the timeline viewer (`collscope view` runs it).
// --screenshot loads the run, selects the collective that waited longest in the first steps, saves a
// PNG of the main window and exits (used by the Xvfb screenshot test and for docs/images/viewer.png).
#include <collscope/gui/main_window.hpp>
#include <collscope/gui/run_loader.hpp>
#include <collscope/gui/timeline_view.hpp>

#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>

#include <cstdio>
#include <cstdlib>

using collscope::gui::kNoInstance;
using collscope::gui::MainWindow;

namespace {

// Shows steps 1..3 (or the whole run) and selects the collective with the longest wait in view.
void frame_interesting_part(MainWindow& window) {
  const auto* run = window.run();
  if (!run) return;
  auto* timeline = window.timeline();
  if (run->steps.size() >= 4) timeline->setVisibleRange(run->steps[1].start_ns, run->steps[3].end_ns);
  else timeline->zoomToFit();
  std::uint32_t best = kNoInstance;
  std::int64_t best_wait = -1;
  for (std::uint32_t i = 0; i < run->collectives.size(); ++i) {
    const auto& e = run->collectives[i];
    if (e.instance == kNoInstance || e.start_ns < timeline->visibleStart() || e.end_ns > timeline->visibleEnd()) continue;
    const auto wait = run->instances[e.instance].last_arrival_ns - e.start_ns;
    if (wait > best_wait) best_wait = wait, best = i;
  }
  if (best != kNoInstance) timeline->selectCollective(best);
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("collscope-view");
  QApplication::setOrganizationName("collscope");
  QCommandLineParser parser;
  parser.setApplicationDescription("collscope timeline viewer");
  parser.addHelpOption();
  parser.addPositionalArgument("path", "Run directory (rank-NNNNN.sqlite files)");
  QCommandLineOption screenshot("screenshot", "Save a PNG of the window after loading, then exit.", "file");
  parser.addOption(screenshot);
  parser.process(app);

  MainWindow window;
  window.show();
  const auto args = parser.positionalArguments();
  const QString shot = parser.value(screenshot);
  bool failed = false;
  if (!shot.isEmpty()) {
    QObject::connect(&window, &MainWindow::loadFailed, [&failed] { failed = true; });
    QObject::connect(&window, &MainWindow::loadFinished, [&] {
      frame_interesting_part(window);
      // Let the layout settle and paint before grabbing.
      QTimer::singleShot(300, [&] {
        const bool saved = window.grab().save(shot, "PNG");
        if (!saved) std::fprintf(stderr, "collscope-view: %s: cannot write the screenshot\n", qPrintable(shot));
        QApplication::exit(saved && !failed ? 0 : 1);
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
