// Views at scale: a run of 4 096 ranks × 1 000 steps (one world allreduce per step, 4 M calls, built in memory:
// the loader's speed is viewer_bench's business) through the viewer's model, its summaries, the rank heat map,
// the collective lens and the timeline. Frames are painted at several zooms and pans with level of detail, and
// the heat map's and lens's frames again without it (every cell, every rank's arrival) as the baseline measured
// in the same run. Peak RSS is printed at the end (the whole process: run, model, summaries, views).
//   rank_views_bench [--ranks N] [--steps N]     (RANK_VIEWS_BENCH_VERBOSE=1: every frame)
//   rank_views_bench --on-disk DIR [--ranks N] [--steps N]: the same views on a run written to DIR (generated once),
//     opened whole and windowed (on_disk_views.cpp)
#include <collscope/gui/rank_views.hpp>
#include <collscope/gui/run_summaries.hpp>
#include <collscope/gui/timeline_view.hpp>

#include "frame_stats.hpp"

#include <QApplication>
#include <QElapsedTimer>
#include <QImage>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <numeric>

using namespace collscope;
using namespace collscope::gui;
using namespace collscope::gui::bench;

namespace {

// Rank r arrives (r * 7919 % 97) µs after the step's slot; every 50th rank a further 2 ms late in every 10th step.
std::shared_ptr<const run::Run> make_run(int ranks, int steps) {
  auto out = std::make_shared<run::Run>();
  out->dir = "(in memory)";
  out->world_size = ranks;
  out->strings = {"", "MPI_FLOAT"};
  run::Communicator world;
  world.key = 0x5ca1e;
  world.size = ranks;
  world.name = "MPI_COMM_WORLD";
  for (int r = 0; r < ranks; ++r) world.members.push_back(r);
  out->communicators.push_back(world);
  const std::int64_t step_ns = 10'000'000, transfer_ns = 300'000;
  out->ranks.resize(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    auto& rank = out->ranks[static_cast<std::size_t>(r)];
    rank.world_rank = r;
    rank.host = fmt::format("node{}", r / 8);
    rank.threads.push_back({1, 1000 + r, "main"});
    rank.collectives.reserve(static_cast<std::size_t>(steps));
  }
  for (int s = 0; s < steps; ++s) {
    const std::int64_t slot = s * step_ns + 6'000'000;
    std::int64_t last = 0;
    auto arrival = [&](int r) { return slot + (r * 7919 % 97) * 1000 + (r % 50 == 7 && s % 10 == 3 ? 2'000'000 : 0); };
    for (int r = 0; r < ranks; ++r) last = std::max(last, arrival(r));
    for (int r = 0; r < ranks; ++r)
      out->ranks[static_cast<std::size_t>(r)].collectives.push_back(
          {.start_ns = arrival(r), .end_ns = last + transfer_ns, .bytes = 64 << 20, .count = 16 << 20, .seq = s, .comm = 0,
           .datatype = 1, .op = store::Op::Allreduce, .thread = 1});
  }
  return out;
}

template <typename Paint>
Frames frames(int n, Paint&& paint) {
  Frames f;
  for (int i = 0; i < n; ++i) {
    QElapsedTimer t;
    t.start();
    paint(i);
    f.ms.push_back(t.nsecsElapsed() / 1e6);
    if (std::getenv("RANK_VIEWS_BENCH_VERBOSE")) fmt::print("  frame {:2d}: {:.2f} ms\n", i, f.ms.back());
  }
  return f;
}

void print(const std::string& what, const Frames& f) {
  fmt::print("{:<44}{:>9.2f}{:>9.2f}{:>9.2f}\n", what, f.mean(), f.pct(0.95), f.max());
}

}  // namespace

namespace collscope::gui::bench {
int on_disk_views(const std::string& dir, int ranks, int steps);  // on_disk_views.cpp
}

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  int ranks = 4096, steps = 1000;
  std::string on_disk;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--ranks")) ranks = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--on-disk")) on_disk = argv[++i];
  }
  if (!on_disk.empty()) return on_disk_views(on_disk, ranks, steps);
  QApplication app(argc, argv);
  QElapsedTimer t;
  t.start();
  const auto run = make_run(ranks, steps);
  fmt::print("run: {} ranks × {} steps, {} calls, built in {:.2f} s\n", ranks, steps, run->collective_count(), t.nsecsElapsed() / 1e9);
  run::ClockAlignment clocks;
  clocks.offset_ns.assign(run->ranks.size(), 0);
  clocks.anchor_offset_ns = clocks.offset_ns;
  clocks.residual_ns.assign(run->ranks.size(), 0);
  for (int r = 0; r < ranks; ++r) {
    if (r % 8 == 0) clocks.hosts.push_back(fmt::format("node{}", r / 8));
    clocks.host_of_rank.push_back(r / 8);
  }
  t.restart();
  auto data = std::make_shared<RunData>();
  data->dir = run->dir;
  data->timeline = std::make_shared<const TimelineModel>(run, clocks);
  const double model_s = t.nsecsElapsed() / 1e9;
  for (int s = 0; s < steps; ++s) data->steps.push_back({s, s * 10'000'000LL, (s + 1) * 10'000'000LL});
  t.restart();
  data->summaries = std::make_shared<const RunSummaries>(summarize(data->model(), data->steps));
  const double summaries_s = t.nsecsElapsed() / 1e9;
  const auto& s = *data->summaries;
  const double summary_mb = (s.activity.late_ns.size() * 2 + s.heat.late_ns.size()) * 4.0 / 1e6 +
                            s.lens.size() * sizeof(LensRow) / 1e6;
  fmt::print("model (lanes + matching): {:.2f} s; summaries: {:.2f} s, {:.1f} MB; peak RSS {:.0f} MB\n", model_s,
             summaries_s, summary_mb, peak_rss_kib() / 1024.0);

  const int w = 1200, h = 700;
  QImage image(w, h, QImage::Format_ARGB32_Premultiplied);
  fmt::print("{:<44}{:>9}{:>9}{:>9}\n", fmt::format("frame ({}x{})", w, h), "mean ms", "p95 ms", "max ms");
  RankHeatMap heat;
  heat.resize(w, h);
  heat.setRun(data);
  heat.render(&image);
  // Zoom from everything to 64 ranks × 20 steps around a few centres, with pans.
  std::int64_t cells_read = 0;  // over frames 0-7, the ones both sides paint
  auto heat_view = [&](int i) {
    const double zoom = std::pow(64.0 / ranks, (i % 8) / 7.0);
    const double rc = ranks * (0.2 + 0.6 * ((i * 37) % 10) / 10.0), sc = steps * (0.1 + 0.8 * ((i * 53) % 10) / 10.0);
    const double rs = ranks * zoom, ss = std::max(20.0, steps * zoom);
    heat.setVisibleCells(rc - rs / 2, rc + rs / 2, sc - ss / 2, sc + ss / 2);
    heat.render(&image);
    if (i < 8) cells_read += heat.lastCellsRead();
  };
  // The pyramid's levels are built on first use (~0.1 s each at this size): one untimed pass builds those the
  // frames below use, so both sides of the ratio time painting only.
  for (int i = 0; i < 48; ++i) heat_view(i);
  cells_read = 0;
  const Frames heat_lod = frames(48, heat_view);
  const std::int64_t cells_lod = cells_read;
  cells_read = 0;
  heat.setLevelOfDetail(false);
  const Frames heat_naive = frames(8, heat_view);
  const std::int64_t cells_naive = cells_read;
  heat.setLevelOfDetail(true);
  print("rank heat map, level of detail", heat_lod);
  print("rank heat map, every cell (baseline)", heat_naive);
  Frames heat_same;
  heat_same.ms.assign(heat_lod.ms.begin(), heat_lod.ms.begin() + 8);
  fmt::print("  ratio baseline / level of detail (same 8 frames): {:.1f}x; cells read per frame {:.2f} M / {:.2f} M\n",
             heat_naive.mean() / std::max(1e-3, heat_same.mean()), cells_naive / 8e6, cells_lod / 8e6);

  CollectiveLens lens;
  lens.resize(w, h);
  lens.setRun(data);
  auto lens_view = [&](int i) {
    const double rows = double(s.lens.size());
    const double span = rows * std::pow(20.0 / rows, (i % 8) / 7.0), centre = rows * (0.1 + 0.8 * ((i * 37) % 10) / 10.0);
    lens.setVisibleRows(centre - span / 2, centre + span / 2);
    lens.render(&image);
  };
  const Frames lens_lod = frames(48, lens_view);
  lens.setLevelOfDetail(false);
  const Frames lens_naive = frames(4, lens_view);  // ~3 s a frame: 4 of them
  print("collective lens, level of detail", lens_lod);
  print("collective lens, every arrival (baseline)", lens_naive);
  Frames lens_same;
  lens_same.ms.assign(lens_lod.ms.begin(), lens_lod.ms.begin() + 4);
  fmt::print("  ratio baseline / level of detail (same 4 frames): {:.0f}x\n", lens_naive.mean() / std::max(1e-3, lens_same.mean()));

  TimelineView timeline;
  timeline.resize(w, h);
  timeline.setRun(data);
  const Frames lanes = frames(24, [&](int i) {
    const double total = double(data->model().duration_ns());
    const double span = total * std::pow(1e-3, (i % 6) / 5.0), c = total * (0.1 + 0.8 * ((i * 37) % 10) / 10.0);
    timeline.setVisibleRange(c - span / 2, c + span / 2);
    timeline.render(&image);
  });
  print(fmt::format("timeline ({} rank rows + lanes)", ranks), lanes);
  fmt::print("peak RSS {:.0f} MB\n", peak_rss_kib() / 1024.0);
  return 0;
}
