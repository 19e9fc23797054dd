// The collective lens (collective_lens.hpp): one row per collective of the reference communicator; along x the
// arrival offset after the first rank (ns), the ranks' arrivals as a density (from each row's 32-bin histogram in
// RunSummaries::lens), the last arriver in red. Rows narrower than a pixel are added up per pixel row, so a frame
// reads each visible row's histogram once and fills one image.
#include <collscope/gui/collective_lens.hpp>

#include "text_fit.hpp"
#include "tool_tip.hpp"

#include <QElapsedTimer>
#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace collscope::gui {
namespace {

constexpr int kLeft = 150, kBottom = 18, kRight = 10, kTop = 4;

}  // namespace

CollectiveLens::CollectiveLens(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumSize(240, 120);
  setAttribute(Qt::WA_OpaquePaintEvent);
}

void CollectiveLens::setRun(std::shared_ptr<const RunData> run) {
  const bool same = run_ && run && run_->summaries == run->summaries;
  run_ = std::move(run);
  if (same) return;
  row0_ = 0;
  row1_ = run_ && run_->summaries ? std::max<double>(1, double(run_->summaries->lens.size())) : 1;
  scale_ns_ = 0;
  update();
}

void CollectiveLens::setVisibleRows(double a, double b) {
  if (!run_ || !run_->summaries) return;
  const double total = std::max<double>(1, double(run_->summaries->lens.size()));
  const double span = std::clamp(b - a, std::min(1.0, total), total);
  row0_ = std::clamp(a, 0.0, total - span);
  row1_ = row0_ + span;
  update();
}

QRect CollectiveLens::plotRect() const {
  return QRect(kLeft, kTop, std::max(1, width() - kLeft - kRight), std::max(1, height() - kTop - kBottom));
}

int CollectiveLens::rowAt(QPointF pos) const {
  const QRect plot = plotRect();
  if (!run_ || !run_->summaries || pos.y() < plot.top() || pos.y() >= plot.bottom() || pos.x() >= plot.right()) return -1;
  const int row = static_cast<int>(row0_ + (pos.y() - plot.top()) / plot.height() * (row1_ - row0_));
  return row >= 0 && row < static_cast<int>(run_->summaries->lens.size()) ? row : -1;
}

void CollectiveLens::paintEvent(QPaintEvent*) {
  QElapsedTimer timer;
  timer.start();
  last_rows_read_ = 0;
  QPainter p(this);
  p.fillRect(rect(), QColor(250, 250, 250));
  if (!run_ || !run_->summaries || run_->summaries->lens.empty()) {
    p.setPen(Qt::darkGray);
    p.drawText(rect(), Qt::AlignCenter, !run_ ? tr("No run loaded") : !run_->summaries ? tr("Analyzing…") : tr("No collectives"));
    return;
  }
  const auto& rows = run_->summaries->lens;
  const auto& m = run_->model();
  const QRect plot = plotRect();
  const int first = std::max(0, static_cast<int>(std::floor(row0_)));
  const int last = std::min(static_cast<int>(rows.size()), static_cast<int>(std::ceil(row1_)));
  double scale = scale_ns_;
  if (scale <= 0)
    for (int r = first; r < last; ++r) scale = std::max(scale, double(rows[r].spread_ns));
  scale = std::max(scale, 1.0);
  const double rows_per_px = (row1_ - row0_) / plot.height();
  const int w = plot.width();
  QImage image(plot.size(), QImage::Format_RGB32);
  image.fill(QColor(252, 252, 252));
  std::vector<float> acc(static_cast<std::size_t>(w));
  std::vector<int> last_x;
  for (int y = 0; y < plot.height(); ++y) {
    const double a = row0_ + y * rows_per_px, b = a + rows_per_px;
    const int ra = std::max(first, static_cast<int>(std::floor(a)));
    const int rb = std::min(last, std::max(ra + 1, static_cast<int>(std::ceil(b))));
    std::fill(acc.begin(), acc.end(), 0.f);
    last_x.clear();
    float peak = 0;
    for (int r = ra; r < rb; ++r) {
      const auto& row = rows[r];
      ++last_rows_read_;
      const double px_per_ns = w / scale;
      if (level_of_detail_) {
        for (int bin = 0; bin < kLensBins; ++bin) {
          if (!row.arrivals[bin]) continue;
          const int x = std::clamp(static_cast<int>((bin + 0.5) * row.spread_ns / kLensBins * px_per_ns), 0, w - 1);
          acc[static_cast<std::size_t>(x)] += row.arrivals[bin];
          peak = std::max(peak, acc[static_cast<std::size_t>(x)]);
        }
      } else {  // the baseline: every rank's arrival read from the run
        const auto first_arrival = m.run_time(m.matched().instances[row.instance].first_arrival_ns);
        for (const auto id : m.instance_members(row.instance)) {
          const int x = std::clamp(static_cast<int>(double(m.collective(id).start_ns - first_arrival) * px_per_ns), 0, w - 1);
          acc[static_cast<std::size_t>(x)] += 1;
          peak = std::max(peak, acc[static_cast<std::size_t>(x)]);
        }
      }
      if (row.spread_ns > 0) last_x.push_back(std::min(w - 1, static_cast<int>(row.spread_ns * px_per_ns)));
    }
    auto* line = reinterpret_cast<QRgb*>(image.scanLine(y));
    // Marks 3 px wide, so that a handful of ranks is visible too; darker where more ranks arrived.
    for (int x = 0; x < w; ++x) {
      if (acc[static_cast<std::size_t>(x)] <= 0) continue;
      const double v = std::log1p(acc[static_cast<std::size_t>(x)]) / std::log1p(std::max(peak, 1.f));  // 0..1
      const int shade = static_cast<int>(200 - 160 * v);
      for (int dx = -1; dx <= 1; ++dx)
        if (x + dx >= 0 && x + dx < w && (dx == 0 || line[x + dx] == qRgb(252, 252, 252)))
          line[x + dx] = qRgb(shade, std::min(255, shade + 10), 235);
    }
    for (const int x : last_x)
      for (int dx = -1; dx <= 1; ++dx)
        if (x + dx >= 0 && x + dx < w) line[x + dx] = qRgb(205, 30, 30);
  }
  p.drawImage(plot.topLeft(), image);
  p.setPen(QColor(150, 150, 160));
  p.drawRect(plot.adjusted(0, 0, -1, -1));

  QFont small = font();
  small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
  p.setFont(small);
  // Row labels and the last arriver's name, where rows are tall enough.
  const double px_per_row = plot.height() / (row1_ - row0_);
  const int label_step = std::max(1, static_cast<int>(std::ceil(14 / px_per_row)));
  for (int r = (first + label_step - 1) / label_step * label_step; r < last; r += label_step) {
    const auto& row = rows[r];
    const auto& inst = m.matched().instances[row.instance];
    const double y = plot.top() + (r + 0.5 - row0_) * px_per_row;
    p.setPen(QColor(50, 50, 50));
    // Op, size and sequence number; without the number, or nothing, when that does not fit (never cut).
    const QString label = QString::fromStdString(fmt::format("{} {}", store::op_name(inst.op), format_bytes(double(inst.bytes))));
    p.drawText(QRectF(2, y - 7, kLeft - 6, 14), Qt::AlignRight | Qt::AlignVCenter,
               fitting(p.fontMetrics(), label + QString(" #%1").arg(inst.seq), label, kLeft - 6));
    if (px_per_row >= 12 && row.last_rank >= 0 && row.spread_ns > 0) {
      const double x = plot.left() + std::min(1.0, row.spread_ns / scale) * w;
      p.setPen(QColor(160, 20, 20));
      p.drawText(QRectF(x - 90, y - 7, 86, 14), Qt::AlignRight | Qt::AlignVCenter,
                 QString("rank %1").arg(run_->run().ranks[row.last_rank].world_rank));
    }
  }
  // The offset axis.
  p.setPen(QColor(50, 50, 50));
  for (int k = 0; k <= 4; ++k) {
    const double x = plot.left() + k * w / 4.0;
    p.drawLine(QPointF(x, plot.bottom()), QPointF(x, plot.bottom() + 3));
    // Centred under its tick, but moved left or right to stay whole inside the widget ("+7.85" was cut at the edge).
    const QString text = QString::fromStdString((k == 0 ? "first arrival" : "+" + format_duration(scale * k / 4)));
    const double tw = p.fontMetrics().horizontalAdvance(text) + 2;
    const double left = std::clamp(x - tw / 2, 0.0, std::max(0.0, width() - tw));
    p.drawText(QRectF(left, plot.bottom() + 2, tw, kBottom - 2), Qt::AlignCenter, text);
  }
  last_paint_ms_ = timer.nsecsElapsed() / 1e6;
}

QString CollectiveLens::toolTipAt(QPointF pos) const {
  const int r = rowAt(pos);
  if (r < 0) return {};
  const auto& row = run_->summaries->lens[r];
  const auto& inst = run_->model().matched().instances[row.instance];
  const auto& comm = run_->run().communicators[inst.comm];
  std::string text = fmt::format("{} {} on {} (seq {}) at {}: {} ranks arrived over {}", store::op_name(inst.op),
                                 format_bytes(double(inst.bytes)), comm.shown_name().empty() ? "a communicator" : comm.shown_name(), inst.seq,
                                 format_duration(double(row.start_ns)), row.ranks, format_duration(double(row.spread_ns)));
  if (row.last_rank >= 0 && row.spread_ns > 0)
    text += fmt::format("\nlast: rank {}, which alone held the others {}", run_->run().ranks[row.last_rank].world_rank,
                        format_duration(double(row.held_ns)));
  return QString::fromStdString(text + "\nclick: select it on the timeline");
}

void CollectiveLens::wheelEvent(QWheelEvent* e) {
  const double factor = std::pow(0.8, e->angleDelta().y() / 120.0);
  if (e->modifiers() & Qt::ControlModifier) {
    // The offset scale: from the visible rows' largest spread.
    double base = scale_ns_;
    if (base <= 0 && run_ && run_->summaries)
      for (int r = static_cast<int>(row0_); r < std::min<int>(static_cast<int>(std::ceil(row1_)), static_cast<int>(run_->summaries->lens.size())); ++r)
        base = std::max(base, double(run_->summaries->lens[r].spread_ns));
    setOffsetScale(std::max(10.0, base * factor));
  } else {
    const QRect plot = plotRect();
    const double f = std::clamp((e->position().y() - plot.top()) / plot.height(), 0.0, 1.0);
    const double anchor = row0_ + f * (row1_ - row0_);
    setVisibleRows(anchor - (anchor - row0_) * factor, anchor + (row1_ - anchor) * factor);
  }
  e->accept();
}

void CollectiveLens::mousePressEvent(QMouseEvent* e) {
  press_ = e->position();
  press_row0_ = row0_;
  dragged_ = false;
}

void CollectiveLens::mouseMoveEvent(QMouseEvent* e) {
  if (!(e->buttons() & Qt::LeftButton)) return;
  const double dy = e->position().y() - press_.y();
  if (std::abs(dy) > 3) dragged_ = true;
  if (!dragged_) return;
  const double d = dy / plotRect().height() * (row1_ - row0_);
  setVisibleRows(press_row0_ - d, press_row0_ - d + (row1_ - row0_));
}

void CollectiveLens::mouseReleaseEvent(QMouseEvent* e) {
  if (dragged_ || e->button() != Qt::LeftButton) return;
  const int r = rowAt(e->position());
  if (r < 0) return;
  const auto& row = run_->summaries->lens[r];
  const auto members = run_->model().instance_members(row.instance);
  for (const auto id : members)
    if (run_->model().rank_of_collective(id) == row.last_rank) {
      emit collectiveActivated(id);
      return;
    }
  if (run_->windowed) emit instanceActivated(row.instance, row.last_rank);
  else if (!members.empty()) emit collectiveActivated(members.front());
}

void CollectiveLens::mouseDoubleClickEvent(QMouseEvent*) {
  scale_ns_ = 0;
  if (run_ && run_->summaries) setVisibleRows(0, double(run_->summaries->lens.size()));
}

bool CollectiveLens::event(QEvent* e) {
  return answer_tool_tip(this, e, [this](QPointF pos) { return toolTipAt(pos); }) || QWidget::event(e);
}

}  // namespace collscope::gui
