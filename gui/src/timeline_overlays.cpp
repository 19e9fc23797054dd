// The timeline's overlays: the selected range with its totals, and the colour legend under the lanes.
#include <collscope/gui/timeline_view.hpp>

#include "timeline_layout.hpp"

#include <QPainter>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace collscope::gui {

using namespace timeline;

void TimelineView::paintRangeTotals(QPainter& p) {
  const double xa = timeToX(std::min(range_a_, range_b_)), xb = timeToX(std::max(range_a_, range_b_));
  p.fillRect(QRectF(xa, kHeaderHeight, xb - xa, plotBottom() - kHeaderHeight), QColor(80, 140, 255, 50));
  p.setPen(QColor(40, 90, 200));
  p.drawLine(QPointF(xa, kHeaderHeight), QPointF(xa, plotBottom()));
  p.drawLine(QPointF(xb, kHeaderHeight), QPointF(xb, plotBottom()));
  if (!hasRange() || selecting_range_) {
    // While dragging: the duration only.
    p.drawText(QRectF(xb + 4, kHeaderHeight + 2, 200, 16), Qt::AlignLeft | Qt::AlignVCenter,
               QString::fromStdString(format_duration(std::abs(range_b_ - range_a_))));
    return;
  }
  const auto& t = range_totals_;
  const double busy_pct = t.duration_ns > 0 ? 100.0 * t.busy_ns_per_rank / double(t.duration_ns) : 0;
  const QStringList lines = {
      QString::fromStdString(fmt::format("{} selected", format_duration(double(t.duration_ns)))),
      QString::fromStdString(fmt::format("{} collective calls, {}", t.calls, format_bytes(double(t.bytes)))),
      QString::fromStdString(fmt::format("per rank: {} in collectives ({:.0f} %), {} waiting",
                                         format_duration(t.busy_ns_per_rank), busy_pct,
                                         format_duration(t.wait_ns_per_rank))),
      tr("Z: zoom to it · Esc: clear")};
  const QFontMetrics fm = p.fontMetrics();
  int w = 0;
  for (const auto& l : lines) w = std::max(w, fm.horizontalAdvance(l));
  const QRectF box(std::clamp(xa + 4, double(kLabelWidth + 2), std::max(double(kLabelWidth + 2), width() - w - 16.0)),
                   kHeaderHeight + 4, w + 12, fm.height() * lines.size() + 8);
  p.fillRect(box, QColor(255, 255, 255, 235));
  p.setPen(QColor(40, 90, 200));
  p.drawRect(box);
  p.setPen(QColor(20, 20, 20));
  for (int k = 0; k < lines.size(); ++k)
    p.drawText(QPointF(box.left() + 6, box.top() + 4 + fm.ascent() + k * fm.height()), lines[k]);
}

void TimelineView::paintLegend(QPainter& p) {
  const int top = plotBottom();
  p.fillRect(QRect(0, top, width(), kLegendHeight), QColor(236, 238, 242));
  p.setPen(QColor(170, 175, 185));
  p.drawLine(0, top, width(), top);
  const QFontMetrics fm = p.fontMetrics();
  int x = 6;
  const int y = top + 4, sw = 12, sh = kLegendHeight - 8;
  const QString keys = tr("? or F1: keys");
  const int limit = width() - fm.horizontalAdvance(keys) - 16;
  auto item = [&](const QString& text, auto&& swatch) {
    if (x + sw + 4 + fm.horizontalAdvance(text) > limit) return;
    swatch(QRect(x, y, sw, sh));
    x += sw + 4;
    p.setPen(QColor(40, 40, 40));
    p.drawText(QRect(x, top, fm.horizontalAdvance(text) + 2, kLegendHeight), Qt::AlignVCenter | Qt::AlignLeft, text);
    x += fm.horizontalAdvance(text) + 12;
  };
  for (const auto op : ops_present_)
    item(QString::fromStdString(std::string(store::op_name(op))), [&](QRect r) { p.fillRect(r, op_color(op)); });
  item(tr("wait (light)"), [&](QRect r) {
    p.fillRect(r.adjusted(0, 0, -r.width() / 2, 0), op_color(store::Op::Allreduce).lighter(175));
    p.fillRect(r.adjusted(r.width() / 2, 0, 0, 0), op_color(store::Op::Allreduce));
  });
  if (run_->model().fusion_buffers())
    item(tr("fusion fill"), [&](QRect r) {
      p.fillRect(r, op_color(store::Op::Allreduce));
      p.fillRect(QRect(r.left(), r.bottom() - 2, r.width() * 2 / 3, 3), QColor(20, 20, 20));
    });
  if (run_->model().messages().size() > 0) {
    auto line = [&](const QColor& c) {
      return [&p, c](QRect r) {
        p.setPen(QPen(c, 2));
        p.drawLine(r.bottomLeft(), r.topRight());
      };
    };
    if (last_messages_in_view_ > kMaxMessageLines)
      item(tr("%1 messages in view: zoom in for their lines").arg(last_messages_in_view_), line(QColor(160, 160, 160)));
    else
      item(tr("message"), line(QColor(60, 60, 60)));
    item(tr("late sender"), line(kLateSenderColor));
    item(tr("late receiver"), line(kLateReceiverColor));
  }
  item(tr("in flight (hung)"), [&](QRect r) {
    p.fillRect(r, QColor(200, 30, 30));
    p.fillRect(r, QBrush(QColor(255, 255, 255, 110), Qt::BDiagPattern));
  });
  if (!visibleEventsLoaded() && !unloaded_note_.isEmpty())
    item(unloaded_note_, [&](QRect r) { p.fillRect(r, QColor(200, 200, 200)); });
  item(tr("rank late"), [&](QRect r) { p.fillRect(r, kLateColor); });
  item(tr("rank waited"), [&](QRect r) { p.fillRect(r, kWaitColor); });
  item(tr("search match"), [&](QRect r) {
    p.setPen(QPen(kSearchColor.darker(130), 2));
    p.drawRect(r.adjusted(1, 1, -1, -1));
  });
  p.setPen(QColor(90, 90, 90));
  p.drawText(QRect(width() - fm.horizontalAdvance(keys) - 8, top, fm.horizontalAdvance(keys) + 4, kLegendHeight),
             Qt::AlignVCenter | Qt::AlignRight, keys);
}

}  // namespace collscope::gui
