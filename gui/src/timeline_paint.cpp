// Painting the timeline: rows (counters, hosts, rank strips, lanes) with level of detail, the selected instance
// with its wait arrows, the selected range with its totals, the header and the colour legend.
#include <collscope/gui/timeline_view.hpp>
#include <collscope/run/palette.hpp>
#include <collscope/run/wait_states.hpp>

#include "text_fit.hpp"
#include "timeline_layout.hpp"

#include <QElapsedTimer>
#include <QImage>
#include <QPainter>
#include <QPainterPath>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace collscope::gui {

using namespace timeline;

namespace {

// Adjacent aggregated pixel columns of one colour, filled as one rectangle (a dense lane zoomed out is then a
// handful of fills instead of one per pixel).
class ColumnRun {
 public:
  ColumnRun(QPainter& p, int top, int height, std::int64_t& primitives) : p_(p), top_(top), height_(height), primitives_(primitives) {}
  ~ColumnRun() { flush(); }
  void add(int x, QRgb color) {
    if (x0_ >= 0 && x == x1_ && color == color_) {
      ++x1_;
      return;
    }
    flush();
    x0_ = x;
    x1_ = x + 1;
    color_ = color;
  }
  void flush() {
    if (x0_ < 0) return;
    p_.fillRect(QRect(x0_, top_, x1_ - x0_, height_), QColor(color_));
    ++primitives_;
    x0_ = -1;
  }

 private:
  QPainter& p_;
  int top_, height_;
  std::int64_t& primitives_;
  int x0_ = -1, x1_ = -1;
  QRgb color_ = 0;
};

}  // namespace

QColor op_color(store::Op op) {
  // The one palette (run/palette.hpp) that the reports use too, cached: frames look colours up per box.
  static const auto colors = [] {
    std::array<QColor, store::kOpCount> c;
    for (int o = 0; o < store::kOpCount; ++o) c[o] = QColor(QRgb(run::palette::op_colour(static_cast<store::Op>(o))));
    return c;
  }();
  const int i = static_cast<int>(op);
  return i >= 0 && i < store::kOpCount ? colors[i] : QColor(QRgb(run::palette::op_colour(store::Op::Unknown)));
}

void TimelineView::drawLabel(QPainter& p, const QRectF& rect, int flags, const QString& shown, const QString& full) {
  if (shown.isEmpty()) return;
  p.drawText(rect, flags, shown);
  if (record_labels_) last_labels_.push_back({shown, full, rect, double(p.fontMetrics().horizontalAdvance(shown))});
}

void TimelineView::paintEvent(QPaintEvent*) {
  QElapsedTimer timer;
  timer.start();
  last_labels_.clear();
  last_primitives_ = 0;
  last_p2p_calls_ = last_message_lines_ = last_messages_in_view_ = 0;
  QPainter p(this);
  p.fillRect(rect(), QColor(250, 250, 250));
  if (!run_) {
    p.setPen(Qt::darkGray);
    p.drawText(rect(), Qt::AlignCenter, tr("No run loaded: File ▸ Open a run directory"));
    return;
  }
  QFont small = font();
  small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
  p.setFont(small);
  const int bottom = plotBottom();
  // Scrolled rows (the first visible one found by binary search: thousands of ranks), then the pinned ones.
  p.save();
  p.setClipRect(QRect(0, scrolledTop(), width(), std::max(0, bottom - scrolledTop())));
  auto first = std::find_if(rows_.begin(), rows_.end(), [](const Row& r) { return !r.pinned; });
  auto it = std::upper_bound(first, rows_.end(), scroll_y_, [](int y, const Row& r) { return y < r.top + r.height; });
  for (; it != rows_.end(); ++it) {
    const int top = screenTop(*it);
    if (top > bottom) break;
    paintRow(p, *it, top);
  }
  p.restore();
  p.save();
  p.setClipRect(QRect(0, kHeaderHeight, width(), pinned_height_));
  for (auto r = rows_.begin(); r != first; ++r) paintRow(p, *r, r->top);
  if (pinned_height_ > 0) {
    p.setPen(QColor(150, 155, 165));
    p.drawLine(0, scrolledTop() - 1, width(), scrolledTop() - 1);
  }
  p.restore();

  // The hovered and the selected instance on every rank, the selected range.
  p.save();
  p.setClipRect(QRect(kLabelWidth, kHeaderHeight, width() - kLabelWidth, bottom - kHeaderHeight));
  paintMessageLines(p);
  if (hovered_ != kNoInstance && hovered_ < run_->model().collective_count() && hovered_ != selected_)
    paintInstanceOutline(p, hovered_, QColor(60, 60, 60, 160), 1, false);
  if (selected_ != kNoInstance) paintInstanceOutline(p, selected_, QColor(0, 0, 0), 2, true);
  if (range_a_ >= 0 && range_b_ >= 0) paintRangeTotals(p);
  p.restore();

  p.fillRect(QRect(0, 0, width(), kHeaderHeight), QColor(236, 238, 242));
  paintRuler(p, QRect(kLabelWidth, 0, width() - kLabelWidth, kRulerHeight));
  paintSteps(p, QRect(kLabelWidth, kRulerHeight, width() - kLabelWidth, kStepBandHeight));
  p.setPen(QColor(60, 60, 60));
  p.setFont(small);
  const QString visible = QString::fromStdString("visible " + format_duration(t1_ - t0_));
  drawLabel(p, QRect(6, 0, kLabelWidth - 10, kRulerHeight), Qt::AlignVCenter | Qt::AlignLeft,
            elided_at_word(p.fontMetrics(), visible, kLabelWidth - 10), visible);
  const QString steps = run_->steps.empty() ? tr("steps (none found)") : tr("steps (%1)").arg(run_->steps.size());
  drawLabel(p, QRect(6, kRulerHeight, kLabelWidth - 10, kStepBandHeight), Qt::AlignVCenter | Qt::AlignLeft,
            elided_at_word(p.fontMetrics(), steps, kLabelWidth - 10), steps);
  paintLegend(p);
  p.setPen(QColor(160, 160, 170));
  p.drawLine(kLabelWidth - 1, 0, kLabelWidth - 1, bottom);
  last_paint_ms_ = timer.nsecsElapsed() / 1e6;
}

void TimelineView::paintRow(QPainter& p, const Row& row, int top) {
  const auto& m = run_->model();
  const int h = row.height;
  const QRect label(6, top, kLabelWidth - 10, h);
  auto draw_label = [&](const QString& text, bool bold = false) {
    QFont f = p.font();
    f.setBold(bold);
    p.setFont(f);
    drawLabel(p, label, Qt::AlignVCenter | Qt::AlignLeft, elided_at_word(p.fontMetrics(), text, label.width()), text);
    f.setBold(false);
    p.setFont(f);
  };
  switch (row.kind) {
    case RowKind::Counter: {
      p.fillRect(QRect(0, top, width(), h), QColor(246, 247, 250));
      p.setPen(QColor(40, 40, 40));
      const bool steps = row.index == 0;
      const auto& series = steps ? run_->summaries->step_ns : run_->summaries->busbw_gbps;
      draw_label(steps ? tr("step time (max %1)").arg(QString::fromStdString(format_duration(series.max)))
                       : tr("busbw, log (max %1)").arg(QString::fromStdString(run::format_bandwidth(series.max))));
      p.save();
      p.setClipRect(QRect(kLabelWidth, top, width() - kLabelWidth, h), Qt::IntersectClip);
      paintCounter(p, row.index, top, h);
      p.restore();
      break;
    }
    case RowKind::Host: {
      p.fillRect(QRect(0, top, width(), h), QColor(222, 227, 236));
      p.setPen(QColor(40, 50, 70));
      const auto& hosts = m.clocks().hosts;
      const std::string name = row.index < static_cast<int>(hosts.size()) ? hosts[row.index] : std::string("?");
      draw_label(QString::fromStdString(fmt::format("{} host {} · {} rank{}", host_collapsed_[row.index] ? "▸" : "▾",
                                                    name.empty() ? "(unnamed)" : name, host_ranks_[row.index].size(),
                                                    host_ranks_[row.index].size() == 1 ? "" : "s")),
                 true);
      break;
    }
    case RowKind::Rank: {
      const bool tinted = std::find(highlighted_ranks_.begin(), highlighted_ranks_.end(), row.index) != highlighted_ranks_.end();
      p.fillRect(QRect(0, top, width(), h), tinted ? QColor(255, 226, 180) : QColor(238, 240, 244));
      p.setPen(QColor(180, 186, 196));
      p.drawLine(0, top, width(), top);
      p.setPen(QColor(20, 20, 20));
      const auto& rank = m.run().ranks[row.index];
      draw_label(QString::fromStdString(fmt::format("{} rank {}{}", rank_collapsed_[row.index] ? "▸" : "▾", rank.world_rank,
                                                    rank_lanes_[row.index].empty() ? "  (no events)" : "")),
                 true);
      paintRankActivity(p, row.index, top, h);
      break;
    }
    case RowKind::Lane: {
      const auto& lane = m.lanes()[row.index];
      const bool tinted = std::find(highlighted_ranks_.begin(), highlighted_ranks_.end(), lane.rank_index) != highlighted_ranks_.end();
      p.fillRect(QRect(0, top, width(), h),
                 tinted ? QColor(255, 236, 200) : lane.rank_index % 2 ? QColor(244, 246, 250) : QColor(255, 255, 255));
      p.setPen(QColor(30, 30, 30));
      const auto& rank = m.run().ranks[lane.rank_index];
      draw_label(row.pinned ? QString::fromStdString(fmt::format("📌 rank {} {}", rank.world_rank, lane.label))
                            : QString::fromStdString("   " + lane.label));
      p.save();
      p.setClipRect(QRect(kLabelWidth, top, width() - kLabelWidth, h), Qt::IntersectClip);
      if (lane.kind == LaneKind::Collectives) paintCollectiveLane(p, lane, top, h);
      else paintSpanLane(p, lane, top, h);
      p.restore();
      break;
    }
  }
}

void TimelineView::paintRuler(QPainter& p, const QRect& r) {
  // Ticks every 1, 2 or 5 × 10^k ns, at least 90 px apart, labelled in ns/µs/ms/s of run time.
  const double ns_per_px = (t1_ - t0_) / r.width();
  const double min_step = ns_per_px * 90;
  double step = std::pow(10.0, std::floor(std::log10(std::max(min_step, 1.0))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (step * m >= min_step) {
      step *= m;
      break;
    }
  p.setPen(QColor(70, 70, 70));
  const double first = std::ceil(t0_ / step) * step;
  for (double t = first; t <= t1_; t += step) {
    const double x = timeToX(t);
    p.drawLine(QPointF(x, r.bottom() - 6), QPointF(x, r.bottom()));
    // A tick's time whole or not at all: the last one is not cut by the window's edge.
    const QString text = QString::fromStdString(format_duration(std::abs(t) < step / 2 ? 0.0 : std::round(t)));
    if (x + 3 + p.fontMetrics().horizontalAdvance(text) <= r.right())
      drawLabel(p, QRectF(x + 3, r.top(), 120, r.height() - 4), Qt::AlignVCenter | Qt::AlignLeft, text, text);
    ++last_primitives_;
  }
}

void TimelineView::paintSteps(QPainter& p, const QRect& r) {
  const auto& steps = run_->steps;
  auto it = std::lower_bound(steps.begin(), steps.end(), t0_, [](const Step& s, double t) { return s.end_ns < t; });
  double last_x = -1;
  const double digit_px = p.fontMetrics().horizontalAdvance(QLatin1Char('0'));
  for (; it != steps.end() && it->start_ns <= t1_; ++it) {
    const double x0 = std::max<double>(timeToX(it->start_ns), r.left());
    const double x1 = std::min<double>(timeToX(it->end_ns), r.right());
    if (x1 < last_x + 1) continue;  // many steps per pixel: one column is enough
    last_x = x1;
    const QRectF box(x0, r.top() + 2, std::max(1.0, x1 - x0 - 1), r.height() - 4);
    p.fillRect(box, it->number % 2 ? QColor(120, 170, 120) : QColor(150, 200, 150));
    // Measuring text is the costly part of a frame over thousands of steps: only where the number could fit.
    if (box.width() - 4 < digit_px * (it->number < 10 ? 1 : 1 + std::floor(std::log10(double(it->number))))) {
      ++last_primitives_;
      continue;
    }
    const QString whole = QString("step %1").arg(it->number);
    const QString text = fitting(p.fontMetrics(), whole, QString::number(it->number), box.width() - 4);
    if (!text.isEmpty()) {
      p.setPen(QColor(20, 50, 20));
      drawLabel(p, box, Qt::AlignCenter, text, whole);
    }
    ++last_primitives_;
  }
}

void TimelineView::paintCounter(QPainter& p, int counter, int top, int h) {
  const double ns_per_px = (t1_ - t0_) / plotWidth();
  const int base = top + h - 2;
  const double scale = (h - 5);
  if (counter == 0) {
    // Step time: a bar per step, as wide as the step; slower than 1.1 × the median in orange.
    const auto& steps = run_->steps;
    const auto& s = run_->summaries->step_ns;
    const float median = s.median;
    auto it = std::lower_bound(steps.begin(), steps.end(), t0_, [](const Step& st, double t) { return st.end_ns < t; });
    double last_x = -1;
    for (; it != steps.end() && it->start_ns <= t1_; ++it) {
      const double x0 = timeToX(it->start_ns), x1 = std::max(timeToX(it->end_ns) - 1, x0 + 1);
      if (x1 < last_x + 1) continue;
      last_x = x1;
      const double v = double(it->end_ns - it->start_ns);
      const double bar = std::max(1.0, v / s.max * scale);
      p.fillRect(QRectF(x0, base - bar, x1 - x0, bar), v > 1.1 * median ? QColor(230, 140, 30) : QColor(120, 160, 120));
      ++last_primitives_;
    }
    return;
  }
  // Bus bandwidth: the highest of the instances starting in each pixel column, on a log scale over four decades
  // below the run's highest (small messages reach a thousandth of what large ones do).
  const auto& s = run_->summaries->busbw_gbps;
  const double top_log = std::log10(std::max(1e-9, double(s.max))), floor_log = top_log - 4;
  auto i = static_cast<std::size_t>(std::lower_bound(s.t_ns.begin(), s.t_ns.end(), static_cast<std::int64_t>(t0_)) - s.t_ns.begin());
  for (int x = 0; x < plotWidth() && i < s.t_ns.size(); ++x) {
    const double column_end = t0_ + (x + 1) * ns_per_px;
    float best = -1;
    for (; i < s.t_ns.size() && s.t_ns[i] < column_end; ++i) best = std::max(best, s.value[i]);
    if (best < 0) continue;
    const double bar = std::max(1.0, (std::log10(std::max(1e-12, double(best))) - floor_log) / 4.0 * scale);
    p.fillRect(QRectF(kLabelWidth + x, base - bar, 1, bar), QColor(70, 120, 190));
    ++last_primitives_;
  }
}

void TimelineView::paintRankActivity(QPainter& p, int rank_index, int top, int h) {
  // Per pixel column: the share of the column's time this rank was late to collectives (red, upper half) and
  // waited for others (blue, lower half); full colour at half of the time. One image per row.
  if (!run_->summaries) return;
  const auto& a = run_->summaries->activity;
  const int w = static_cast<int>(plotWidth());
  QImage strip(w, 2, QImage::Format_ARGB32_Premultiplied);
  strip.fill(Qt::transparent);
  const double ns_per_px = (t1_ - t0_) / w;
  auto* late_line = reinterpret_cast<QRgb*>(strip.scanLine(0));
  auto* wait_line = reinterpret_cast<QRgb*>(strip.scanLine(1));
  for (int x = 0; x < w; ++x) {
    const double c0 = t0_ + x * ns_per_px, c1 = c0 + ns_per_px;
    if (c1 <= 0 || c0 >= double(a.bucket_ns) * a.buckets) continue;
    const int b0 = std::clamp(static_cast<int>(std::floor(c0 / double(a.bucket_ns))), 0, a.buckets - 1);
    const int b1 = std::clamp(static_cast<int>(std::ceil(c1 / double(a.bucket_ns))), b0 + 1, a.buckets);
    double late = 0, wait = 0;
    for (int b = b0; b < b1; ++b) late += a.late(rank_index, b), wait += a.wait(rank_index, b);
    const double span = double(b1 - b0) * double(a.bucket_ns);
    auto shade = [](const QColor& c, double share) {
      const int alpha = static_cast<int>(std::clamp(share * 2.0, 0.0, 1.0) * 255);
      return qPremultiply(qRgba(c.red(), c.green(), c.blue(), alpha));
    };
    late_line[x] = shade(kLateColor, late / span);
    wait_line[x] = shade(kWaitColor, wait / span);
  }
  p.drawImage(QRect(kLabelWidth, top + 1, w, h - 2), strip);
  ++last_primitives_;
}

std::uint32_t TimelineView::aggregated_until(const Lane& lane, std::uint32_t i, double column_end_t, double ns_per_px) const {
  // Everything after event i that starts in the same pixel column joins its aggregated column, except an event
  // that reaches on past the column: a long call right after short ones must still be drawn as a box. Events
  // of one lane mostly follow each other, so the prefix maximum of end is each event's own end there and a
  // binary search finds the first long one (when an earlier, overlapping event holds the maximum, the
  // candidate is checked and the column stays whole).
  const auto& m = run_->model();
  std::uint32_t next = m.first_starting_at_from(lane, static_cast<std::int64_t>(std::ceil(column_end_t)), i + 1);
  const auto reach = static_cast<std::int64_t>(column_end_t + kMinBoxPx * ns_per_px);
  const std::uint32_t long_one = m.first_ending_after(lane, reach, i + 1, next);
  if (long_one < next && m.end_at(lane, long_one) > reach) next = long_one;
  return next;
}

void TimelineView::paintPointToPoint(QPainter& p, const Lane& track, int top, int h) {
  // A thread's point-to-point calls on its MPI lane, under its collectives (the same thread makes no two calls at
  // once, but a non-blocking call's request stays open across other calls: a thin line between its posting and
  // its completion). Where the call waited (run/'s late sender or late receiver) it is lighter, as a
  // collective's wait is.
  if (track.begin == track.end) return;
  const auto& m = run_->model();
  const auto& messages = m.messages();
  const double ns_per_px = (t1_ - t0_) / plotWidth();
  const int box_top = top + 3, box_h = h - 6;
  ColumnRun columns(p, box_top, box_h, last_primitives_);
  const int r = track.rank_index;
  const bool selected_here = selected_p2p_ != kNoInstance || !selected_messages_.empty();
  // Waits and selection outlines go over every box of the track: the requests one MPI_Waitall completes share
  // its span, and the one that waited must not be hidden under the others.
  std::vector<std::pair<QRectF, QColor>> tints;
  std::vector<QRectF> outlines;
  std::uint32_t i = m.first_ending_after(track, static_cast<std::int64_t>(std::floor(t0_)));
  while (i < track.end && m.start_at(track, i) <= t1_) {
    const double x0 = timeToX(m.start_at(track, i)), x1 = timeToX(m.end_at(track, i));
    const auto& c = m.point_to_point_at(track, i);
    if (!level_of_detail_ || x1 - x0 >= kMinBoxPx) {
      columns.flush();
      const QColor color = op_color(c.op);
      const auto spans = run::spans_in_mpi(c);
      auto x_of = [&](std::int64_t raw) { return timeToX(double(m.run_time(r, raw))); };
      auto box = [&](const run::MpiSpan& s) {
        const double a = x_of(s.start_ns), b = x_of(s.end_ns);
        p.fillRect(QRectF(a, box_top, std::max(1.0, b - a), box_h), color);
      };
      if (spans.nonblocking) {
        p.fillRect(QRectF(x0, top + h / 2.0 - 1, std::max(1.0, x1 - x0), 2), color.lighter(140));
        box(spans.post);
        if (spans.completion.length() > 0) box(spans.completion);
      } else {
        box(spans.post);
      }
      const std::uint32_t id = m.id_at(LaneKind::PointToPoint, i);
      std::vector<std::uint32_t> mine;
      if (messages.waits().waits.size() > 0 || selected_here) mine = messages.messages_of_call(id);
      for (const auto msg : mine) {
        const auto* w = messages.wait_of(msg);
        if (!w) continue;
        const auto mm = messages.message(msg);
        const std::uint32_t waiting = w->state == run::WaitState::LateSender ? mm.recv : mm.send;
        if (waiting != id) continue;
        const double a = timeToX(double(m.run_time(w->start_ns))), b = timeToX(double(m.run_time(w->end_ns)));
        if (b > a) tints.push_back({QRectF(a, box_top, b - a, box_h), color.lighter(175)});
      }
      if (selected_p2p_ == id ||
          std::any_of(mine.begin(), mine.end(), [&](std::uint32_t msg) {
            return std::binary_search(selected_messages_.begin(), selected_messages_.end(), msg);
          }))
        outlines.push_back(QRectF(x0 - 1, box_top - 1, std::max(3.0, x1 - x0 + 2), box_h + 2));
      ++last_primitives_;
      ++last_p2p_calls_;
      ++i;
      continue;
    }
    const double column = std::floor(x0);
    const double column_end_t = t0_ + (column + 1 - kLabelWidth) * ns_per_px;
    const std::uint32_t next = std::max(aggregated_until(track, i, column_end_t, ns_per_px), i + 1);
    columns.add(static_cast<int>(column), op_color(c.op).rgb());
    last_p2p_calls_ += next - i;
    i = next;
  }
  columns.flush();
  for (const auto& [r, colour] : tints) p.fillRect(r, colour);
  p.setPen(QPen(Qt::black, 2));
  p.setBrush(Qt::NoBrush);
  for (const auto& r : outlines) p.drawRect(r);
}

void TimelineView::paintMessageLines(QPainter& p) {
  // Vampir's message lines: from the send's posting on the sender's lane to the receive's completion on the
  // receiver's, for the messages whose line crosses the visible range and whose lanes are shown. A message a
  // receiver waited for is red (late sender), one a sender waited for orange (late receiver), others grey.
  const auto& m = run_->model();
  const auto& messages = m.messages();
  if (messages.size() == 0) return;
  const auto [first, last] = messages.lines_in(static_cast<std::int64_t>(std::floor(t0_)), static_cast<std::int64_t>(std::ceil(t1_)));
  last_messages_in_view_ = last - first;
  auto endpoints = [&](std::uint32_t msg, QPointF& a, QPointF& b) {
    const Message mm = messages.message(msg);
    const int ya = laneCentre(static_cast<int>(m.lane_of_point_to_point(mm.send)));
    const int yb = laneCentre(static_cast<int>(m.lane_of_point_to_point(mm.recv)));
    if (ya < 0 || yb < 0) return false;
    a = QPointF(timeToX(double(mm.send_ns)), ya);
    b = QPointF(timeToX(double(mm.recv_ns)), yb);
    return true;
  };
  auto colour_of = [&](std::uint32_t msg) {
    const auto* w = messages.wait_of(msg);
    return !w ? QColor(60, 60, 60, 170)
              : w->state == run::WaitState::LateSender ? kLateSenderColor : kLateReceiverColor;
  };
  if (last - first <= kMaxMessageLines) {
    QLineF previous;
    QColor previous_colour;
    for (std::uint32_t pos = first; pos < last; ++pos) {
      if (messages.line_end(pos) < t0_) continue;
      QPointF a, b;
      const std::uint32_t msg = messages.line_at(pos);
      if (!endpoints(msg, a, b)) continue;
      ++last_message_lines_;
      // Lines on the same pixels as the last one drawn (a zoomed-out burst of messages) are drawn once.
      const QLineF line(QPointF(std::round(a.x()), a.y()), QPointF(std::round(b.x()), b.y()));
      const QColor colour = colour_of(msg);
      if (line == previous && colour == previous_colour) continue;
      previous = line;
      previous_colour = colour;
      p.setPen(QPen(colour, 1));
      p.drawLine(a, b);
      ++last_primitives_;
    }
  }
  // The selected messages over the others, wherever they are (at most kMaxMessageLines of them).
  if (selected_messages_.empty()) return;
  p.setRenderHint(QPainter::Antialiasing, true);
  std::size_t drawn = 0;
  for (const auto msg : selected_messages_) {
    if (drawn++ >= kMaxMessageLines) break;
    QPointF a, b;
    if (!endpoints(msg, a, b)) continue;
    p.setPen(QPen(QColor(0, 0, 0), 3));
    p.drawLine(a, b);
    p.setPen(QPen(kSearchColor, 1.5));
    p.drawLine(a, b);
    // An arrow head at the receive.
    const QLineF l(b, a);
    if (l.length() > 8) {
      const QLineF u = l.unitVector();
      const QPointF d = (u.p2() - u.p1()) * 8, n(-d.y() * 0.45, d.x() * 0.45);
      p.setBrush(QColor(0, 0, 0));
      p.setPen(Qt::NoPen);
      p.drawPolygon(QPolygonF({b, b + d + n, b + d - n}));
    }
    ++last_primitives_;
  }
  p.setRenderHint(QPainter::Antialiasing, false);
}

void TimelineView::paintCollectiveLane(QPainter& p, const Lane& lane, int top, int h) {
  const auto& m = run_->model();
  paintPointToPoint(p, m.point_to_point_track(static_cast<std::size_t>(&lane - m.lanes().data())), top, h);
  const double ns_per_px = (t1_ - t0_) / plotWidth();
  const int box_top = top + 3, box_h = h - 6;
  ColumnRun columns(p, box_top, box_h, last_primitives_);
  static const auto op_rgb = [] {
    std::array<QRgb, store::kOpCount> colors{};
    for (int o = 0; o < store::kOpCount; ++o) colors[o] = op_color(static_cast<store::Op>(o)).rgb();
    return colors;
  }();
  const bool searching = search_ && !search_->by_name();
  std::uint32_t i = m.first_ending_after(lane, static_cast<std::int64_t>(std::floor(t0_)));
  while (i < lane.end && m.start_at(lane, i) <= t1_) {
    const double x0 = timeToX(m.start_at(lane, i)), x1 = timeToX(m.end_at(lane, i));
    if (!level_of_detail_ || x1 - x0 >= kMinBoxPx) {
      columns.flush();
      const auto e = m.collective_at(lane, i);
      const bool in_flight = e.flags & kCallInFlight;
      const QColor color = in_flight ? QColor(QRgb(run::palette::kInFlight)) : op_color(e.op);
      double wait_x = x0;
      if (e.instance != kNoInstance)
        wait_x = std::min(x1, timeToX(std::max<double>(e.start_ns, m.run_time(m.matched().instances[e.instance].last_arrival_ns))));
      if (wait_x > x0) p.fillRect(QRectF(x0, box_top, wait_x - x0, box_h), color.lighter(175));
      p.fillRect(QRectF(wait_x, box_top, std::max(1.0, x1 - wait_x), box_h), color);
      if (e.fusion_fill_percent > 0 && x1 - x0 >= 6) {
        // Fusion buffer fill: a bar along the bottom, as long as the buffer was full.
        p.fillRect(QRectF(x0, box_top + box_h - 4, (x1 - x0) * e.fusion_fill_percent / 100.0, 4), QColor(20, 20, 20, 190));
      }
      if (in_flight) {
        // Never returned: hatched, with an open right edge (the call went on past the last time it was seen).
        p.fillRect(QRectF(x0, box_top, std::max(1.0, x1 - x0), box_h), QBrush(QColor(255, 255, 255, 110), Qt::BDiagPattern));
      }
      if (searching && search_->matches_call(m.call_at(lane, i))) {
        p.setPen(QPen(kSearchColor.darker(130), 2));
        p.drawRect(QRectF(x0 - 1, box_top - 2, std::max(2.0, x1 - x0 + 2), box_h + 4));
      }
      // The label's room is the box's visible part: a box running past the right edge keeps its text in view.
      const double left = std::max<double>(wait_x, kLabelWidth) + 2, room = std::min<double>(x1, width()) - left - 2;
      if (room > 20) {
        const std::string op(store::op_name(e.op));
        const QString whole = QString::fromStdString(
            fmt::format("{}{} {}", in_flight ? "in flight: " : "", op, format_bytes(double(e.bytes))));
        const QString text = fitting(p.fontMetrics(), whole, QString::fromStdString(op), room);
        if (!text.isEmpty()) {
          p.setPen(Qt::white);
          drawLabel(p, QRectF(left, box_top, room, box_h - 3), Qt::AlignVCenter | Qt::AlignLeft, text, whole);
        }
      }
      ++last_primitives_;
      ++i;
      continue;
    }
    // Aggregate everything that starts in this pixel column into one column in the first event's colour.
    const double column = std::floor(x0);
    const double column_end_t = t0_ + (column + 1 - kLabelWidth) * ns_per_px;
    const std::uint32_t next = aggregated_until(lane, i, column_end_t, ns_per_px);
    const auto& call = m.call_at(lane, i);
    columns.add(static_cast<int>(column), searching && search_->matches_call(call)
                                              ? kSearchColor.rgb()
                                              : op_rgb[static_cast<int>(call.op) % store::kOpCount]);
    i = std::max(next, i + 1);
  }
}

void TimelineView::paintSpanLane(QPainter& p, const Lane& lane, int top, int h) {
  const auto& m = run_->model();
  const double ns_per_px = (t1_ - t0_) / plotWidth();
  const int box_top = top + 2, box_h = h - 4;
  ColumnRun columns(p, box_top, box_h, last_primitives_);
  const bool searching = search_ && search_->by_name();
  std::uint32_t i = m.first_ending_after(lane, static_cast<std::int64_t>(std::floor(t0_)));
  while (i < lane.end && m.start_at(lane, i) <= t1_) {
    const double x0 = timeToX(m.start_at(lane, i)), x1 = timeToX(m.end_at(lane, i));
    const auto name = m.name_at(lane, i);
    const bool hit = searching && search_->matches_name(name);
    if (!level_of_detail_ || x1 - x0 >= kMinBoxPx) {
      columns.flush();
      const QRectF box(x0, box_top, std::max(1.0, x1 - x0), box_h);
      p.fillRect(box, QColor(name_rgb_[name]));
      if (hit) {
        p.setPen(QPen(kSearchColor.darker(130), 2));
        p.drawRect(box.adjusted(-1, -1, 1, 1));
      }
      if (x1 - x0 > 24) {
        p.setPen(QColor(20, 20, 20));
        const double left = std::max<double>(x0, kLabelWidth), right = std::min<double>(x1, width());
        const QString whole = QString::fromStdString(m.names()[name]);
        drawLabel(p, QRectF(left + 2, box_top, right - left - 4, box_h), Qt::AlignVCenter | Qt::AlignLeft,
                  elided_at_word(p.fontMetrics(), whole, right - left - 4), whole);
      }
      ++last_primitives_;
      ++i;
      continue;
    }
    const double column = std::floor(x0);
    const double column_end_t = t0_ + (column + 1 - kLabelWidth) * ns_per_px;
    const std::uint32_t next = aggregated_until(lane, i, column_end_t, ns_per_px);
    columns.add(static_cast<int>(column), hit ? kSearchColor.rgb() : name_rgb_dark_[name]);
    i = std::max(next, i + 1);
  }
}

void TimelineView::paintInstanceOutline(QPainter& p, std::uint32_t event, const QColor& color, int width, bool arrows) {
  const auto& m = run_->model();
  if (event >= m.collective_count()) return;
  // Every rank's call of the same collective; the band spans first arrival to last exit, the dashed line is the
  // last arrival, and an arrow runs from each rank that waited to the rank it waited for.
  const auto members = m.members(event);
  std::int64_t first = std::numeric_limits<std::int64_t>::max(), last_arrival = std::numeric_limits<std::int64_t>::min();
  std::int64_t last_end = last_arrival;
  std::uint32_t last_member = event;
  for (const auto id : members) {
    const auto e = m.collective(id);
    first = std::min(first, e.start_ns);
    if (e.start_ns > last_arrival) last_arrival = e.start_ns, last_member = id;
    last_end = std::max(last_end, e.end_ns);
  }
  const double xa = timeToX(first), xb = timeToX(last_end);
  if (width > 1) p.fillRect(QRectF(xa, kHeaderHeight, std::max(2.0, xb - xa), plotBottom() - kHeaderHeight), QColor(255, 200, 0, 45));
  const double x_last = timeToX(last_arrival);
  p.setPen(QPen(QColor(200, 30, 30, 200), 1, Qt::DashLine));
  p.drawLine(QPointF(x_last, kHeaderHeight), QPointF(x_last, plotBottom()));
  auto outlines = [&] {
    p.setPen(QPen(color, width));
    p.setBrush(Qt::NoBrush);
    for (const auto id : members) {
      const auto e = m.collective(id);
      const int y = laneCentre(e.lane);
      if (y < 0) continue;
      const int h = rows_[lane_row_[e.lane]].height;
      const double x0 = timeToX(e.start_ns), x1 = std::max(timeToX(e.end_ns), x0 + 3);
      p.drawRect(QRectF(x0 - 1, y - h / 2 + 2, x1 - x0 + 2, h - 4));
    }
  };
  if (!arrows) {
    outlines();
    return;
  }
  // Wait arrows (under the outlines), the longest waits first, at most kMaxArrows.
  const auto target = m.collective(last_member);
  const int ty = laneCentre(target.lane);
  std::vector<std::pair<std::int64_t, std::uint32_t>> waits;
  for (const auto id : members)
    if (id != last_member) waits.emplace_back(last_arrival - m.collective(id).start_ns, id);
  std::sort(waits.rbegin(), waits.rend());
  if (waits.size() > static_cast<std::size_t>(kMaxArrows)) waits.resize(kMaxArrows);
  const QPointF to(x_last, ty);
  p.setRenderHint(QPainter::Antialiasing, true);
  for (const auto& [wait, id] : waits) {
    if (wait <= 0 || ty < 0) continue;
    const auto e = m.collective(id);
    const int y = laneCentre(e.lane);
    if (y < 0) continue;
    const QPointF from(timeToX(e.start_ns), y);
    QPainterPath path(from);
    const double bend = std::clamp(std::abs(to.y() - from.y()) * 0.4, 8.0, 60.0);
    path.cubicTo(from + QPointF(bend, 0), to - QPointF(bend, 0), to);
    p.setPen(QPen(QColor(190, 40, 30, 190), 1.5));
    p.setBrush(Qt::NoBrush);
    p.drawPath(path);
    const QPointF back = to - QPointF(7, 0);
    p.setBrush(QColor(190, 40, 30, 190));
    p.drawPolygon(QPolygonF({to, back + QPointF(0, -3.5), back + QPointF(0, 3.5)}));
    ++last_primitives_;
  }
  p.setRenderHint(QPainter::Antialiasing, false);
  outlines();
}

}  // namespace collscope::gui
