// Viewer benchmark: a synthetic run of 1 M collectives and 1 M GPU activities (4 ranks on 2 hosts,
// plus 250 k NVTX step ranges). Measures time to first paint (load + lanes + first frame), paint time
// per zoom/pan frame with level-of-detail drawing, and the same frames drawn naively (every event a box)
// as the baseline measured in the same run; memory per event.
//   viewer_bench [--events-scale F] [--dir DIR]      (VIEWER_BENCH_VERBOSE=1: every frame's time)
#include <collscope/gui/main_window.hpp>
#include <collscope/gui/run_data_loader.hpp>
#include <collscope/gui/timeline_view.hpp>

#include <collscope/testing/lockstep_run.hpp>

#include "frame_stats.hpp"

#include <QApplication>
#include <QElapsedTimer>
#include <QImage>
#include <QSignalSpy>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <thread>
#include <numeric>

#include <malloc.h>
#include <sys/resource.h>
#include <time.h>

namespace fs = std::filesystem;
using namespace collscope::gui;
using namespace collscope::gui::bench;

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double load_average() {
  double l[1] = {0};
  return getloadavg(l, 1) == 1 ? l[0] : 0;
}

// Paints `frames` frames: zooms from the whole run to 1/10^5 of it around several centres, then pans.
Frames paint_frames(TimelineView& view, QImage& image, int frames) {
  Frames out;
  const double total = view.run()->model().duration_ns();
  const double centres[] = {0.13, 0.5, 0.77, 0.98};
  for (int f = 0; f < frames; ++f) {
    const double c = centres[f % 4] * total;
    const double zoom = std::pow(10.0, -5.0 * ((f / 4) % 11) / 10.0);  // 1 … 1e-5
    double span = total * zoom;
    double start = c - span / 2 + (f % 7) * span * 0.05;  // a little pan
    view.setVisibleRange(start, start + span);
    QElapsedTimer t;
    t.start();
    const double cpu0 = thread_cpu_ms();
    view.render(&image);
    out.ms.push_back(t.nsecsElapsed() / 1e6);
    out.cpu_ms.push_back(thread_cpu_ms() - cpu0);
    if (std::getenv("VIEWER_BENCH_VERBOSE"))
      fmt::print("frame {:2d}: span {:.3g} ns, {:.2f} ms, {} primitives\n", f, span, out.ms.back(), view.lastPaintedPrimitives());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  double scale = 1.0;
  fs::path dir = fs::temp_directory_path() / "collscope-viewer-bench";
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--events-scale")) scale = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--dir")) dir = argv[++i];
  }
  collscope::testing::LockstepSpec spec;
  spec.ranks = 4;
  spec.ranks_per_host = 2;
  spec.collectives_per_step = 4;
  spec.kernels_per_step = 4;
  spec.steps = std::max(1, static_cast<int>(62'500 * scale));  // 4 ranks × 4 per step = 1 M at scale 1
  spec.compute_ns = 400'000;
  spec.late_ns = 20'000;
  spec.transfer_ns = 50'000;
  spec.collective_gap_ns = 10'000;
  spec.late_every = 3;
  const fs::path marker = dir / fmt::format("complete-{}-steps", spec.steps);
  if (!fs::exists(marker)) {
    fs::remove_all(dir);
    QElapsedTimer t;
    t.start();
    collscope::testing::write_lockstep_run(dir.string(), spec);
    std::ofstream(marker) << "ok\n";
    fmt::print("wrote {} in {:.1f} s\n", dir.string(), t.nsecsElapsed() / 1e9);
  }

  // Time to first paint: the window's own path (background loader → timeline → first frame).
  const long rss_before = rss_kib();
  MainWindow window;
  window.resize(1600, 1000);
  window.show();
  QApplication::processEvents();
  QElapsedTimer open_timer;
  open_timer.start();
  QSignalSpy loaded(&window, &MainWindow::runLoaded);
  QSignalSpy finished(&window, &MainWindow::loadFinished);
  window.openRun(QString::fromStdString(dir.string()));
  if (!loaded.wait(120000)) {
    fmt::print("load failed: {}\n", window.message().toStdString());
    return 1;
  }
  window.timeline()->repaint();  // synchronous paint of the first frame
  const double first_paint_s = open_timer.nsecsElapsed() / 1e9;
  const double first_frame_ms = window.timeline()->lastPaintMs();
  const long peak_loaded = peak_rss_kib();  // the timeline loaded, the analysis under way
  finished.wait(300000);
  const double analyzed_s = open_timer.nsecsElapsed() / 1e9;
  const auto* run = window.run();
  const long rss_after = rss_kib();
  const long peak_after = peak_rss_kib();
  const auto& model = run->model();
  const double events = static_cast<double>(model.event_count());
  fmt::print("run: {} collectives, {} GPU activities, {} NVTX ranges, {} lanes, {} instances\n",
             model.collective_count(), model.span_count(LaneKind::GpuStream), model.span_count(LaneKind::Nvtx),
             model.lanes().size(), model.matched().instances.size());
  fmt::print("time to first paint: {:.2f} s (first frame {:.1f} ms); analysis done at {:.2f} s{}\n", first_paint_s,
             first_frame_ms, analyzed_s, run->analyzed ? "" : " (no analyzer)");
  fmt::print("memory: {:.0f} B/event for the run, its matching and the lanes; process RSS grew {:.0f} B/event, "
             "peak RSS {:.0f} B/event above the empty window ({:.0f} when the timeline was loaded)\n",
             model.memory_bytes() / events, (rss_after - rss_before) * 1024.0 / events,
             (peak_after - rss_before) * 1024.0 / events, (peak_loaded - rss_before) * 1024.0 / events);
  {
    // Where the RSS beyond the model goes: bytes malloc hands out (in use) against what it keeps from the system;
    // then what the process keeps once malloc returns its free pages (malloc_trim).
    const auto info = mallinfo2();
    const double in_use = double(info.uordblks + info.hblkhd), arenas = double(info.arena + info.hblkhd);
    malloc_trim(0);
    // Resident pages of mapped files (SQLite maps the rank files while reading them).
    double file_kib = 0;
    std::ifstream smaps("/proc/self/smaps");
    bool in_file = false;
    for (std::string line; std::getline(smaps, line);) {
      if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) && line.find('-') < 16)
        in_file = line.find(".sqlite") != std::string::npos;
      else if (in_file && line.rfind("Rss:", 0) == 0) file_kib += std::atof(line.c_str() + 4);
    }
    fmt::print("memory: malloc in use {:.0f} B/event of {:.0f} B/event it holds; RSS {:.0f} B/event above the empty "
               "window, of it {:.0f} B/event pages of the rank files still mapped\n",
               in_use / events, arenas / events, (rss_kib() - rss_before) * 1024.0 / events, file_kib * 1024 / events);
  }

  // Direct loader timing (no window), for the breakdown.
  {
    QElapsedTimer t;
    t.start();
    const double cpu0 = cpu_seconds();
    std::string stages;
    auto again = load_timeline(dir.string(), [&](int, const std::string& stage) {
      stages += fmt::format("  {:.2f} s {}\n", t.nsecsElapsed() / 1e9, stage);
    });
    fmt::print("load_timeline alone: {:.2f} s wall, {:.2f} s CPU (all threads), load average {:.1f} on {} cores\n{}",
               t.nsecsElapsed() / 1e9, cpu_seconds() - cpu0, load_average(), std::thread::hardware_concurrency(), stages);
  }

  TimelineView view;
  view.resize(1600, 900);
  view.setRun(window.run() ? std::make_shared<const RunData>(*run) : nullptr);  // shares the model
  QImage image(view.size(), QImage::Format_ARGB32_Premultiplied);
  view.setLevelOfDetail(true);
  // A fresh widget's first render pays one-time costs that no later frame does (style polish, the glyph
  // cache of the lane font: ~13 ms here, whatever the data); the window's first paint above includes it.
  // Zoom/pan frames are timed after it.
  {
    view.setVisibleRange(0, 1000);
    QElapsedTimer t;
    t.start();
    view.render(&image);
    fmt::print("first render of a fresh view (one-time set-up, 1 us visible): {:.1f} ms\n", t.nsecsElapsed() / 1e6);
  }
  const Frames lod = paint_frames(view, image, 88);
  view.setLevelOfDetail(false);
  const Frames naive = paint_frames(view, image, 8);  // the whole run and wide zooms: slow, few frames
  fmt::print("{:<28}{:>10}{:>10}{:>10}\n", "frame paint (1600x900)", "mean ms", "p95 ms", "max ms");
  fmt::print("{:<28}{:>10.2f}{:>10.2f}{:>10.2f}\n", "level of detail", lod.mean(), lod.pct(0.95), lod.max());
  fmt::print("{:<28}{:>10.2f}{:>10.2f}{:>10.2f}\n", "baseline: every event", naive.mean(), naive.pct(0.95), naive.max());
  fmt::print("{:<28}{:>10.2f}{:>10.2f}{:>10.2f}\n", "level of detail, CPU time", lod.cpu().mean(), lod.cpu().pct(0.95), lod.cpu().max());
  fmt::print("{:<28}{:>10.2f}{:>10.2f}{:>10.2f}\n", "baseline, CPU time", naive.cpu().mean(), naive.cpu().pct(0.95), naive.cpu().max());
  Frames lod_same;  // the baseline's 8 frames with level of detail, for the ratio
  lod_same.ms.assign(lod.ms.begin(), lod.ms.begin() + 8);
  fmt::print("ratio baseline/LOD on the same 8 frames: {:.0f}x\n", naive.mean() / std::max(1e-3, lod_same.mean()));
  return 0;
}
