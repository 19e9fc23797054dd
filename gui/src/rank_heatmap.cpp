// The rank heat map (rank_heatmap.hpp): lateness per rank per step from RunSummaries::heat, drawn from a pyramid
// of max-pooled levels so a frame reads at most a few cells per pixel at any zoom.
#include <collscope/gui/rank_heatmap.hpp>
#include <collscope/run/palette.hpp>

#include "tool_tip.hpp"

#include <QElapsedTimer>
#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace collscope::gui {
namespace {

constexpr int kLeft = 64, kBottom = 18, kRight = 86, kTop = 4;  // px around the cells

// The palette's lateness ramp (run/palette.hpp, as in the HTML report): white (on time) to dark red (the colour
// scale's top: the 99th percentile, or later), sampled once for the cells' 256 levels.
const std::array<QRgb, 256>& heat_colors() {
  static const auto lut = [] {
    std::array<QRgb, 256> c{};
    for (int v = 0; v < 256; ++v) c[v] = QRgb(run::palette::lateness_colour(v / 255.0)) | 0xff000000u;
    return c;
  }();
  return lut;
}

// The coarsest level whose cells are still no wider than a pixel: each pixel then spans one or two of its cells.
int level_for(double cells_per_px) { return cells_per_px <= 1 ? 0 : static_cast<int>(std::floor(std::log2(cells_per_px))); }

}  // namespace

RankHeatMap::RankHeatMap(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumSize(240, 120);
  setAttribute(Qt::WA_OpaquePaintEvent);
}

void RankHeatMap::setRun(std::shared_ptr<const RunData> run) {
  const bool same = run_ && run && run_->summaries == run->summaries;
  run_ = std::move(run);
  if (same) return;
  levels_.clear();
  if (run_ && run_->summaries) {
    const auto& h = run_->summaries->heat;
    r0_ = 0, r1_ = std::max(1, h.ranks), s0_ = 0, s1_ = std::max(1, h.steps);
  }
  update();
}

void RankHeatMap::setVisibleCells(double rank0, double rank1, double step0, double step1) {
  if (!run_ || !run_->summaries) return;
  const auto& h = run_->summaries->heat;
  auto clamp_span = [](double& a, double& b, double total) {
    const double span = std::clamp(b - a, std::min(1.0, total), total);
    a = std::clamp(a, 0.0, total - span);
    b = a + span;
  };
  clamp_span(rank0, rank1, std::max(1, h.ranks));
  clamp_span(step0, step1, std::max(1, h.steps));
  r0_ = rank0, r1_ = rank1, s0_ = step0, s1_ = step1;
  update();
}

QRect RankHeatMap::plotRect() const { return QRect(kLeft, kTop, std::max(1, width() - kLeft - kRight), std::max(1, height() - kTop - kBottom)); }

const RankHeatMap::Level& RankHeatMap::level(int ly, int lx) {
  const auto& h = run_->summaries->heat;
  if (levels_.size() <= static_cast<std::size_t>(ly)) levels_.resize(ly + 1);
  auto& row = levels_[ly];
  if (row.size() <= static_cast<std::size_t>(lx)) row.resize(lx + 1);
  Level& out = row[lx];
  if (!out.cells.empty() || (h.ranks == 0 || h.steps == 0)) return out;
  if (ly == 0 && lx == 0) {
    out.rows = h.ranks, out.cols = h.steps;
    out.cells.resize(static_cast<std::size_t>(out.rows) * out.cols);
    for (std::size_t k = 0; k < out.cells.size(); ++k)
      out.cells[k] = static_cast<std::uint8_t>(std::clamp(h.late_ns[k] / h.scale_ns * 255.0f, 0.0f, 255.0f));
    return out;
  }
  // Max-pool the next finer level by two along one axis.
  const bool pool_rows = ly > 0;
  const Level& src = pool_rows ? level(ly - 1, lx) : level(ly, lx - 1);
  Level pooled;
  pooled.rows = pool_rows ? (src.rows + 1) / 2 : src.rows;
  pooled.cols = pool_rows ? src.cols : (src.cols + 1) / 2;
  pooled.cells.assign(static_cast<std::size_t>(pooled.rows) * pooled.cols, 0);
  for (int r = 0; r < src.rows; ++r)
    for (int c = 0; c < src.cols; ++c) {
      auto& cell = pooled.cells[static_cast<std::size_t>(pool_rows ? r / 2 : r) * pooled.cols + (pool_rows ? c : c / 2)];
      cell = std::max(cell, src.cells[static_cast<std::size_t>(r) * src.cols + c]);
    }
  levels_[ly][lx] = std::move(pooled);  // `row` may have moved while the finer levels were built
  return levels_[ly][lx];
}

void RankHeatMap::paintEvent(QPaintEvent*) {
  QElapsedTimer timer;
  timer.start();
  last_cells_read_ = 0;
  QPainter p(this);
  p.fillRect(rect(), QColor(250, 250, 250));
  if (!run_ || !run_->summaries || run_->summaries->heat.ranks == 0) {
    p.setPen(Qt::darkGray);
    p.drawText(rect(), Qt::AlignCenter, run_ ? tr("Analyzing…") : tr("No run loaded"));
    return;
  }
  const auto& h = run_->summaries->heat;
  const QRect plot = plotRect();
  const double rows_per_px = (r1_ - r0_) / plot.height(), cols_per_px = (s1_ - s0_) / plot.width();
  const int ly = level_of_detail_ ? level_for(rows_per_px) : 0, lx = level_of_detail_ ? level_for(cols_per_px) : 0;
  const Level& lv = level(ly, lx);
  // Per pixel row and column: the range of level cells it covers (at most 2-3 each way).
  auto ranges = [](double first, double per_px, int px, int shift, int limit) {
    std::vector<std::pair<int, int>> out(static_cast<std::size_t>(px));
    for (int k = 0; k < px; ++k) {
      const double a = first + k * per_px, b = a + per_px;
      const int lo = std::clamp(static_cast<int>(std::floor(a)) >> shift, 0, limit - 1);
      const int hi = std::clamp((static_cast<int>(std::ceil(b)) + (1 << shift) - 1) >> shift, lo + 1, limit);
      out[static_cast<std::size_t>(k)] = {lo, hi};
    }
    return out;
  };
  const auto row_ranges = ranges(r0_, rows_per_px, plot.height(), ly, lv.rows);
  const auto col_ranges = ranges(s0_, cols_per_px, plot.width(), lx, lv.cols);
  QImage image(plot.size(), QImage::Format_RGB32);
  const auto& lut = heat_colors();
  // One line of max over the pixel row's level rows, then per pixel the max over its columns.
  std::vector<std::uint8_t> merged(static_cast<std::size_t>(lv.cols));
  for (int y = 0; y < plot.height(); ++y) {
    auto* line = reinterpret_cast<QRgb*>(image.scanLine(y));
    const auto [ra, rb] = row_ranges[static_cast<std::size_t>(y)];
    const int ca0 = col_ranges.front().first, cb1 = col_ranges.back().second;
    const std::uint8_t* first_row = lv.cells.data() + static_cast<std::size_t>(ra) * lv.cols;
    std::copy(first_row + ca0, first_row + cb1, merged.begin() + ca0);
    for (int r = ra + 1; r < rb; ++r) {
      const std::uint8_t* row = lv.cells.data() + static_cast<std::size_t>(r) * lv.cols;
      for (int c = ca0; c < cb1; ++c) merged[static_cast<std::size_t>(c)] = std::max(merged[static_cast<std::size_t>(c)], row[c]);
    }
    last_cells_read_ += std::int64_t(rb - ra) * (cb1 - ca0);
    for (int x = 0; x < plot.width(); ++x) {
      const auto [ca, cb] = col_ranges[static_cast<std::size_t>(x)];
      std::uint8_t v = merged[static_cast<std::size_t>(ca)];
      for (int c = ca + 1; c < cb; ++c) v = std::max(v, merged[static_cast<std::size_t>(c)]);
      line[x] = lut[v];
    }
  }
  p.drawImage(plot.topLeft(), image);
  p.setPen(QColor(150, 150, 160));
  p.drawRect(plot.adjusted(0, 0, -1, -1));

  // Axes: ranks on the left, steps (or time buckets) below, at most one label per 14 px / 60 px.
  QFont small = font();
  small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
  p.setFont(small);
  p.setPen(QColor(50, 50, 50));
  const auto& ranks = run_->run().ranks;
  const double px_per_row = plot.height() / (r1_ - r0_);
  const int row_step = std::max(1, static_cast<int>(std::ceil(14 / px_per_row)));
  for (int r = static_cast<int>(std::ceil(r0_ / row_step)) * row_step; r < r1_; r += row_step) {
    const double y = plot.top() + (r + 0.5 - r0_) * px_per_row;
    p.drawText(QRectF(2, y - 7, kLeft - 6, 14), Qt::AlignRight | Qt::AlignVCenter,
               QString("rank %1").arg(r < static_cast<int>(ranks.size()) ? ranks[r].world_rank : r));
  }
  const double px_per_col = plot.width() / (s1_ - s0_);
  const int col_step = std::max(1, static_cast<int>(std::ceil(60 / px_per_col)));
  for (int s = static_cast<int>(std::ceil(s0_ / col_step)) * col_step; s < s1_; s += col_step) {
    const double x = plot.left() + (s + 0.5 - s0_) * px_per_col;
    p.drawText(QRectF(x - 30, plot.bottom() + 2, 60, kBottom - 2), Qt::AlignCenter,
               h.from_steps ? QString("step %1").arg(s) : QString::fromStdString(format_duration(double(h.step_start_ns[s]))));
  }
  // The colour scale.
  const QRect bar(plot.right() + 10, plot.top(), 12, plot.height());
  for (int y = 0; y < bar.height(); ++y)
    p.fillRect(QRect(bar.left(), bar.bottom() - y, bar.width(), 1), QColor(lut[std::clamp(y * 255 / std::max(1, bar.height() - 1), 0, 255)]));
  p.setPen(QColor(50, 50, 50));
  p.drawText(QRect(bar.right() + 3, bar.top(), kRight - 26, 14), Qt::AlignLeft | Qt::AlignVCenter,
             QString::fromStdString("≥ " + format_duration(h.scale_ns)));
  p.drawText(QRect(bar.right() + 3, bar.bottom() - 14, kRight - 26, 14), Qt::AlignLeft | Qt::AlignVCenter, "0");
  p.drawText(QRect(bar.right() + 3, bar.center().y() - 14, kRight - 26, 28), Qt::AlignLeft | Qt::AlignVCenter | Qt::TextWordWrap,
             tr("late per %1").arg(h.from_steps ? tr("step") : tr("bucket")));
  last_paint_ms_ = timer.nsecsElapsed() / 1e6;
}

std::pair<int, int> RankHeatMap::cellAt(QPointF pos) const {
  const QRect plot = plotRect();
  if (!run_ || !run_->summaries || !plot.contains(pos.toPoint())) return {-1, -1};
  const auto& h = run_->summaries->heat;
  const int r = static_cast<int>(r0_ + (pos.y() - plot.top()) / plot.height() * (r1_ - r0_));
  const int s = static_cast<int>(s0_ + (pos.x() - plot.left()) / plot.width() * (s1_ - s0_));
  if (r < 0 || r >= h.ranks || s < 0 || s >= h.steps) return {-1, -1};
  return {r, s};
}

QString RankHeatMap::toolTipAt(QPointF pos) const {
  const auto [r, s] = cellAt(pos);
  if (r < 0) return {};
  const auto& h = run_->summaries->heat;
  return QString::fromStdString(fmt::format(
      "rank {}, {} {}: arrived {} after the first rank, summed over the {}'s collectives\nclick: show it on the timeline",
      run_->run().ranks[r].world_rank, h.from_steps ? "step" : "from", h.from_steps ? std::to_string(s) : format_duration(double(h.step_start_ns[s])),
      format_duration(h.late(r, s)), h.from_steps ? "step" : "interval"));
}

void RankHeatMap::wheelEvent(QWheelEvent* e) {
  const double factor = std::pow(0.8, e->angleDelta().y() / 120.0);
  const QRect plot = plotRect();
  const double fy = std::clamp((e->position().y() - plot.top()) / plot.height(), 0.0, 1.0);
  const double fx = std::clamp((e->position().x() - plot.left()) / plot.width(), 0.0, 1.0);
  const double ar = r0_ + fy * (r1_ - r0_), as = s0_ + fx * (s1_ - s0_);
  const bool rows = !(e->modifiers() & Qt::ControlModifier), cols = !(e->modifiers() & Qt::ShiftModifier);
  setVisibleCells(rows ? ar - (ar - r0_) * factor : r0_, rows ? ar + (r1_ - ar) * factor : r1_,
                  cols ? as - (as - s0_) * factor : s0_, cols ? as + (s1_ - as) * factor : s1_);
  e->accept();
}

void RankHeatMap::mousePressEvent(QMouseEvent* e) {
  press_ = e->position();
  press_r0_ = r0_, press_s0_ = s0_;
  dragged_ = false;
}

void RankHeatMap::mouseMoveEvent(QMouseEvent* e) {
  if (!(e->buttons() & Qt::LeftButton)) return;
  const QPointF d = e->position() - press_;
  if (std::abs(d.x()) + std::abs(d.y()) > 3) dragged_ = true;
  if (!dragged_) return;
  const QRect plot = plotRect();
  const double dr = d.y() / plot.height() * (r1_ - r0_), ds = d.x() / plot.width() * (s1_ - s0_);
  setVisibleCells(press_r0_ - dr, press_r0_ - dr + (r1_ - r0_), press_s0_ - ds, press_s0_ - ds + (s1_ - s0_));
}

void RankHeatMap::mouseReleaseEvent(QMouseEvent* e) {
  if (dragged_ || e->button() != Qt::LeftButton) return;
  const auto [r, s] = cellAt(e->position());
  if (r >= 0) emit cellActivated(r, s);
}

void RankHeatMap::mouseDoubleClickEvent(QMouseEvent*) {
  if (run_ && run_->summaries) setVisibleCells(0, run_->summaries->heat.ranks, 0, run_->summaries->heat.steps);
}

bool RankHeatMap::event(QEvent* e) {
  return answer_tool_tip(this, e, [this](QPointF pos) { return toolTipAt(pos); }) || QWidget::event(e);
}

}  // namespace collscope::gui
