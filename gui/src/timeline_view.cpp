#include <collscope/gui/timeline_view.hpp>
#include <collscope/run/palette.hpp>

#include <QElapsedTimer>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace collscope::gui {
namespace {

constexpr int kRulerHeight = 24;       // px
constexpr int kStepBandHeight = 16;    // px
constexpr int kHeaderHeight = kRulerHeight + kStepBandHeight;
constexpr int kHostHeaderHeight = 16;  // px, host name row above its ranks
constexpr int kCollectiveLaneHeight = 24;
constexpr int kSpanLaneHeight = 16;
constexpr double kMinBoxPx = 2.0;      // narrower events are aggregated per pixel column

QColor name_color(std::uint32_t name) {
  // Stable, distinct hues for kernel and NVTX names (golden-angle walk).
  const int hue = static_cast<int>((name * 137.508)) % 360;
  return QColor::fromHsv(hue, 110, 215);
}

// Adjacent aggregated pixel columns of one colour, filled as one rectangle (a dense lane zoomed out is
// then a handful of fills instead of one per pixel).
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

QColor op_color(store::Op op) { return QColor(QRgb(run::palette::op_colour(op))); }

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setMinimumSize(400, 200);
  setAttribute(Qt::WA_OpaquePaintEvent);
}

void TimelineView::setRun(std::shared_ptr<const RunData> run, bool keep_range) {
  const bool same_events = run_ && run && run_->collectives.size() == run->collectives.size();
  run_ = std::move(run);
  if (!same_events || !keep_range) {
    selected_ = kNoInstance;
    hovered_ = kNoInstance;
    highlighted_ranks_.clear();
  }
  range_a_ = range_b_ = -1;
  name_rgb_.clear();
  name_rgb_dark_.clear();
  if (run_)
    for (std::uint32_t n = 0; n < run_->names.size(); ++n) {
      name_rgb_.push_back(name_color(n).rgb());
      name_rgb_dark_.push_back(name_color(n).darker(115).rgb());
    }
  layoutLanes();
  if (!keep_range) zoomToFit();
  update();
}

void TimelineView::layoutLanes() {
  lane_top_.clear();
  lane_height_.clear();
  host_header_top_.clear();
  host_header_name_.clear();
  int y = 0;
  std::string host;
  if (run_) {
    for (const auto& lane : run_->lanes) {
      const auto& h = run_->ranks[lane.rank_index].host;
      if (lane_top_.empty() || h != host) {
        host = h;
        host_header_top_.push_back(y);
        host_header_name_.push_back(h);
        y += kHostHeaderHeight;
      }
      const int height = lane.kind == LaneKind::Collectives ? kCollectiveLaneHeight : kSpanLaneHeight;
      lane_top_.push_back(y);
      lane_height_.push_back(height);
      y += height;
    }
  }
  content_height_ = y;
  clampVerticalScroll();
}

void TimelineView::clampVerticalScroll() {
  const int room = height() - kHeaderHeight;
  scroll_y_ = std::clamp(scroll_y_, 0, std::max(0, content_height_ - room));
}

int TimelineView::laneCount() const { return run_ ? static_cast<int>(run_->lanes.size()) : 0; }
double TimelineView::plotWidth() const { return std::max(1, width() - kLabelWidth); }
double TimelineView::timeToX(double t) const { return kLabelWidth + (t - t0_) / (t1_ - t0_) * plotWidth(); }
double TimelineView::xToTime(double x) const { return t0_ + (x - kLabelWidth) / plotWidth() * (t1_ - t0_); }

int TimelineView::laneAt(double y) const {
  const double content_y = y - kHeaderHeight + scroll_y_;
  for (std::size_t i = 0; i < lane_top_.size(); ++i)
    if (content_y >= lane_top_[i] && content_y < lane_top_[i] + lane_height_[i]) return static_cast<int>(i);
  return -1;
}

void TimelineView::setVisibleRange(double start_ns, double end_ns) {
  const double total = run_ ? std::max<double>(run_->duration_ns, 1000) : 1000;
  double span = std::clamp(end_ns - start_ns, 10.0, total * 1.2);  // 10 ns at the deepest zoom
  double mid = (start_ns + end_ns) / 2;
  mid = std::clamp(mid, -0.1 * total + span / 2 - span, total * 1.1 - span / 2 + span);
  t0_ = mid - span / 2;
  t1_ = mid + span / 2;
  update();
  emit visibleRangeChanged(visibleStart(), visibleEnd());
}

void TimelineView::zoomToFit() {
  const double total = run_ ? std::max<double>(run_->duration_ns, 1000) : 1000;
  setVisibleRange(-0.01 * total, total * 1.01);
}

void TimelineView::zoomAround(double factor, double x) {
  const double anchor = xToTime(std::clamp<double>(x, kLabelWidth, width()));
  setVisibleRange(anchor - (anchor - t0_) * factor, anchor + (t1_ - anchor) * factor);
}

void TimelineView::panByPixels(double dx) {
  const double dt = dx / plotWidth() * (t1_ - t0_);
  setVisibleRange(t0_ + dt, t1_ + dt);
}

std::uint32_t TimelineView::selectedInstance() const {
  return run_ && selected_ < run_->collectives.size() ? run_->collectives[selected_].instance : kNoInstance;
}

void TimelineView::zoomToSelection() {
  if (range_a_ >= 0 && range_b_ > range_a_) {
    setVisibleRange(range_a_, range_b_);
    range_a_ = range_b_ = -1;
    return;
  }
  const auto inst = selectedInstance();
  if (inst == kNoInstance) return;
  const auto& i = run_->instances[inst];
  const double w = std::max<double>(i.last_end_ns - i.first_arrival_ns, 100);
  setVisibleRange(i.first_arrival_ns - 0.25 * w, i.last_end_ns + 0.25 * w);
}

void TimelineView::selectCollective(std::uint32_t event) {
  if (!run_ || event >= run_->collectives.size()) event = kNoInstance;
  if (event == selected_) return;
  selected_ = event;
  update();
  emit collectiveSelected(event);
}

void TimelineView::setHighlightedRanks(std::vector<int> rank_indices) {
  highlighted_ranks_ = std::move(rank_indices);
  update();
}

QPointF TimelineView::pointOfCollective(std::uint32_t event) const {
  if (!run_ || event >= run_->collectives.size()) return {};
  const auto& e = run_->collectives[event];
  const double x = timeToX((e.start_ns + e.end_ns) / 2.0);
  const double y = kHeaderHeight - scroll_y_ + lane_top_[e.lane] + lane_height_[e.lane] / 2.0;
  if (x < kLabelWidth || x >= width() || y < kHeaderHeight || y >= height()) return {};
  return {x, y};
}

std::uint32_t TimelineView::collectiveAt(QPointF pos) const {
  if (!run_ || pos.x() < kLabelWidth) return kNoInstance;
  const int l = laneAt(pos.y());
  if (l < 0 || run_->lanes[l].kind != LaneKind::Collectives) return kNoInstance;
  const auto& lane = run_->lanes[l];
  const double t = xToTime(pos.x());
  const double tolerance = 3.0 / plotWidth() * (t1_ - t0_);  // 3 px
  std::uint32_t best = kNoInstance;
  double best_distance = tolerance;
  for (std::uint32_t i = run_->first_ending_after(lane, static_cast<std::int64_t>(t - tolerance));
       i < lane.end && run_->collectives[i].start_ns <= t + tolerance; ++i) {
    const auto& e = run_->collectives[i];
    const double d = t < e.start_ns ? e.start_ns - t : t > e.end_ns ? t - e.end_ns : 0;
    if (d <= best_distance) best_distance = d, best = i;
    if (d == 0) break;
  }
  return best;
}

void TimelineView::paintEvent(QPaintEvent*) {
  QElapsedTimer timer;
  timer.start();
  last_primitives_ = 0;
  QPainter p(this);
  p.fillRect(rect(), QColor(250, 250, 250));
  if (!run_) {
    p.setPen(Qt::darkGray);
    p.drawText(rect(), Qt::AlignCenter, tr("No run loaded: File ▸ Open a run directory"));
    return;
  }
  const QRect plot(kLabelWidth, kHeaderHeight, width() - kLabelWidth, height() - kHeaderHeight);

  // Lanes (clipped below the header).
  p.save();
  p.setClipRect(QRect(0, kHeaderHeight, width(), height() - kHeaderHeight));
  QFont small = font();
  small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
  for (std::size_t h = 0; h < host_header_top_.size(); ++h) {
    const int y = kHeaderHeight - scroll_y_ + host_header_top_[h];
    if (y + kHostHeaderHeight < kHeaderHeight || y > height()) continue;
    p.fillRect(QRect(0, y, width(), kHostHeaderHeight), QColor(225, 229, 236));
    p.setPen(QColor(40, 50, 70));
    QFont bold = small;
    bold.setBold(true);
    p.setFont(bold);
    p.drawText(QRect(6, y, width(), kHostHeaderHeight), Qt::AlignVCenter | Qt::AlignLeft,
               QString::fromStdString("host " + host_header_name_[h]));
  }
  p.setFont(small);
  int previous_rank = -1;
  for (std::size_t l = 0; l < run_->lanes.size(); ++l) {
    const auto& lane = run_->lanes[l];
    const int top = kHeaderHeight - scroll_y_ + lane_top_[l];
    const int h = lane_height_[l];
    const bool first_of_rank = lane.rank_index != previous_rank;
    previous_rank = lane.rank_index;
    if (top + h < kHeaderHeight || top > height()) continue;
    const bool tinted = std::find(highlighted_ranks_.begin(), highlighted_ranks_.end(), lane.rank_index) != highlighted_ranks_.end();
    QColor background = tinted ? QColor(255, 236, 200) : (lane.rank_index % 2 ? QColor(244, 246, 250) : QColor(255, 255, 255));
    p.fillRect(QRect(0, top, width(), h), background);
    if (first_of_rank) {
      p.setPen(QColor(180, 186, 196));
      p.drawLine(0, top, width(), top);
    }
    // Label: rank on its first lane, then what the lane holds.
    p.setPen(QColor(30, 30, 30));
    const auto& rank = run_->ranks[lane.rank_index];
    const QString label = first_of_rank ? QString::fromStdString(fmt::format("rank {}  {}", rank.world_rank, lane.label))
                                        : QString::fromStdString("      " + lane.label);
    p.drawText(QRect(6, top, kLabelWidth - 10, h), Qt::AlignVCenter | Qt::AlignLeft,
               p.fontMetrics().elidedText(label, Qt::ElideRight, kLabelWidth - 10));
    p.save();
    p.setClipRect(QRect(kLabelWidth, std::max(top, kHeaderHeight), plot.width(), h));
    if (lane.kind == LaneKind::Collectives) paintCollectiveLane(p, lane, top, h);
    else paintSpanLane(p, lane, top, h);
    p.restore();
  }
  // Hovered and selected instance on every rank: a vertical band from first arrival to last completion,
  // the last arrival as a line, every member outlined.
  p.setClipRect(QRect(kLabelWidth, kHeaderHeight, plot.width(), plot.height()));
  if (hovered_ != kNoInstance && hovered_ < run_->collectives.size() && hovered_ != selected_)
    paintInstanceOutline(p, run_->collectives[hovered_].instance, QColor(60, 60, 60, 160), 1);
  if (selected_ != kNoInstance) paintInstanceOutline(p, run_->collectives[selected_].instance, QColor(0, 0, 0), 2);
  if (range_a_ >= 0 && range_b_ >= 0) {
    const double xa = timeToX(std::min(range_a_, range_b_)), xb = timeToX(std::max(range_a_, range_b_));
    p.fillRect(QRectF(xa, kHeaderHeight, xb - xa, plot.height()), QColor(80, 140, 255, 50));
  }
  p.restore();

  p.fillRect(QRect(0, 0, width(), kHeaderHeight), QColor(236, 238, 242));
  paintRuler(p, QRect(kLabelWidth, 0, plot.width(), kRulerHeight));
  paintSteps(p, QRect(kLabelWidth, kRulerHeight, plot.width(), kStepBandHeight));
  p.setPen(QColor(60, 60, 60));
  p.setFont(small);
  p.drawText(QRect(6, 0, kLabelWidth - 10, kRulerHeight), Qt::AlignVCenter | Qt::AlignLeft,
             QString::fromStdString("visible " + format_duration(static_cast<std::int64_t>(t1_ - t0_))));
  p.drawText(QRect(6, kRulerHeight, kLabelWidth - 10, kStepBandHeight), Qt::AlignVCenter | Qt::AlignLeft, tr("steps"));
  p.setPen(QColor(160, 160, 170));
  p.drawLine(kLabelWidth - 1, 0, kLabelWidth - 1, height());
  last_paint_ms_ = timer.nsecsElapsed() / 1e6;
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
    p.drawText(QRectF(x + 3, r.top(), 120, r.height() - 4), Qt::AlignVCenter | Qt::AlignLeft,
               QString::fromStdString(format_duration(static_cast<std::int64_t>(std::llround(t)))));
    ++last_primitives_;
  }
}

void TimelineView::paintSteps(QPainter& p, const QRect& r) {
  const auto& steps = run_->steps;
  auto it = std::lower_bound(steps.begin(), steps.end(), t0_, [](const Step& s, double t) { return s.end_ns < t; });
  double last_x = -1;
  for (; it != steps.end() && it->start_ns <= t1_; ++it) {
    const double x0 = std::max<double>(timeToX(it->start_ns), r.left());
    const double x1 = std::min<double>(timeToX(it->end_ns), r.right());
    if (x1 < last_x + 1) continue;  // many steps per pixel: one column is enough
    last_x = x1;
    const QRectF box(x0, r.top() + 2, std::max(1.0, x1 - x0 - 1), r.height() - 4);
    p.fillRect(box, it->number % 2 ? QColor(120, 170, 120) : QColor(150, 200, 150));
    if (box.width() > 40) {
      p.setPen(QColor(20, 50, 20));
      p.drawText(box, Qt::AlignCenter, QString("step %1").arg(it->number));
    }
    ++last_primitives_;
  }
}

std::uint32_t TimelineView::aggregated_until(const Lane& lane, std::uint32_t i, double column_end_t, double ns_per_px) const {
  // Everything after event i that starts in the same pixel column joins its aggregated column, except an event
  // that reaches on past the column: a long call right after short ones must still be drawn as a box. Events
  // of one lane mostly follow each other, so the prefix maximum of end is each event's own end there and a
  // binary search finds the first long one (when an earlier, overlapping event holds the maximum, the
  // candidate is checked and the column stays whole).
  std::uint32_t next = run_->first_starting_at_from(lane, static_cast<std::int64_t>(std::ceil(column_end_t)), i + 1);
  const auto reach = static_cast<std::int64_t>(column_end_t + kMinBoxPx * ns_per_px);
  const std::uint32_t long_one = run_->first_ending_after(lane, reach, i + 1, next);
  if (long_one < next && run_->end_of(lane.kind, long_one) > reach) next = long_one;
  return next;
}

void TimelineView::paintCollectiveLane(QPainter& p, const Lane& lane, int top, int h) {
  const auto& cs = run_->collectives;
  const double ns_per_px = (t1_ - t0_) / plotWidth();
  const int box_top = top + 3, box_h = h - 6;
  ColumnRun columns(p, box_top, box_h, last_primitives_);
  static const auto op_rgb = [] {
    std::array<QRgb, store::kOpCount> colors{};
    for (int o = 0; o < store::kOpCount; ++o) colors[o] = op_color(static_cast<store::Op>(o)).rgb();
    return colors;
  }();
  std::uint32_t i = run_->first_ending_after(lane, static_cast<std::int64_t>(std::floor(t0_)));
  while (i < lane.end && cs[i].start_ns <= t1_) {
    const auto& e = cs[i];
    const double x0 = timeToX(e.start_ns), x1 = timeToX(e.end_ns);
    if (!level_of_detail_ || x1 - x0 >= kMinBoxPx) {
      columns.flush();
      const bool in_flight = e.flags & kCallInFlight;
      const QColor color = in_flight ? QColor(200, 30, 30) : op_color(e.op);
      double wait_x = x0;
      if (e.instance != kNoInstance) wait_x = std::min(x1, timeToX(std::max<double>(e.start_ns, run_->instances[e.instance].last_arrival_ns)));
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
      if (x1 - x0 > 60) {
        p.setPen(Qt::white);
        p.drawText(QRectF(std::max<double>(wait_x, kLabelWidth) + 2, box_top, x1 - std::max<double>(wait_x, kLabelWidth) - 4, box_h - 3),
                   Qt::AlignVCenter | Qt::AlignLeft,
                   QString::fromStdString(fmt::format("{}{} {}", in_flight ? "in flight: " : "", store::op_name(e.op),
                                                      format_bytes(e.bytes))));
      }
      ++last_primitives_;
      ++i;
      continue;
    }
    // Aggregate everything that starts in this pixel column into one column in the first event's colour.
    const double column = std::floor(x0);
    const double column_end_t = t0_ + (column + 1 - kLabelWidth) * ns_per_px;
    const std::uint32_t next = aggregated_until(lane, i, column_end_t, ns_per_px);
    columns.add(static_cast<int>(column), op_rgb[static_cast<int>(e.op) % store::kOpCount]);
    i = std::max(next, i + 1);
  }
}

void TimelineView::paintSpanLane(QPainter& p, const Lane& lane, int top, int h) {
  const auto& spans = run_->spans(lane.kind);
  const double ns_per_px = (t1_ - t0_) / plotWidth();
  const int box_top = top + 2, box_h = h - 4;
  ColumnRun columns(p, box_top, box_h, last_primitives_);
  std::uint32_t i = run_->first_ending_after(lane, static_cast<std::int64_t>(std::floor(t0_)));
  while (i < lane.end && spans[i].start_ns <= t1_) {
    const auto& s = spans[i];
    const double x0 = timeToX(s.start_ns), x1 = timeToX(s.end_ns);
    if (!level_of_detail_ || x1 - x0 >= kMinBoxPx) {
      columns.flush();
      const QRectF box(x0, box_top, std::max(1.0, x1 - x0), box_h);
      p.fillRect(box, QColor(name_rgb_[s.name]));
      if (x1 - x0 > 40) {
        p.setPen(QColor(20, 20, 20));
        const double left = std::max<double>(x0, kLabelWidth);
        p.drawText(QRectF(left + 2, box_top, x1 - left - 4, box_h), Qt::AlignVCenter | Qt::AlignLeft,
                   p.fontMetrics().elidedText(QString::fromStdString(run_->names[s.name]), Qt::ElideRight,
                                              static_cast<int>(x1 - left - 4)));
      }
      ++last_primitives_;
      ++i;
      continue;
    }
    const double column = std::floor(x0);
    const double column_end_t = t0_ + (column + 1 - kLabelWidth) * ns_per_px;
    const std::uint32_t next = aggregated_until(lane, i, column_end_t, ns_per_px);
    columns.add(static_cast<int>(column), name_rgb_dark_[s.name]);
    i = std::max(next, i + 1);
  }
}

void TimelineView::paintInstanceOutline(QPainter& p, std::uint32_t instance, const QColor& color, int width) {
  if (instance == kNoInstance || instance >= run_->instances.size()) return;
  const auto& inst = run_->instances[instance];
  const double xa = timeToX(inst.first_arrival_ns), xb = timeToX(inst.last_end_ns);
  if (width > 1) p.fillRect(QRectF(xa, kHeaderHeight, std::max(2.0, xb - xa), height() - kHeaderHeight), QColor(255, 200, 0, 45));
  const double x_last = timeToX(inst.last_arrival_ns);
  p.setPen(QPen(QColor(200, 30, 30, 200), 1, Qt::DashLine));
  p.drawLine(QPointF(x_last, kHeaderHeight), QPointF(x_last, height()));
  p.setPen(QPen(color, width));
  p.setBrush(Qt::NoBrush);
  for (std::uint32_t m = 0; m < inst.member_count; ++m) {
    const auto& e = run_->collectives[run_->instance_members[inst.members_begin + m]];
    const int top = kHeaderHeight - scroll_y_ + lane_top_[e.lane] + 2;
    const double x0 = timeToX(e.start_ns), x1 = std::max(timeToX(e.end_ns), x0 + 3);
    p.drawRect(QRectF(x0 - 1, top, x1 - x0 + 2, lane_height_[e.lane] - 4));
  }
}

void TimelineView::mousePressEvent(QMouseEvent* e) {
  press_pos_ = e->position();
  press_t0_ = t0_;
  press_t1_ = t1_;
  press_scroll_y_ = scroll_y_;
  dragging_ = false;
  selecting_range_ = (e->modifiers() & Qt::ShiftModifier) || e->button() == Qt::RightButton;
  if (selecting_range_) range_a_ = range_b_ = xToTime(e->position().x());
}

void TimelineView::mouseMoveEvent(QMouseEvent* e) {
  if (e->buttons() != Qt::NoButton) {
    const QPointF d = e->position() - press_pos_;
    if (std::abs(d.x()) + std::abs(d.y()) > 3) dragging_ = true;
    if (!dragging_) return;
    if (selecting_range_) {
      range_b_ = xToTime(e->position().x());
      update();
      return;
    }
    const double dt = d.x() / plotWidth() * (press_t1_ - press_t0_);
    scroll_y_ = press_scroll_y_ - static_cast<int>(d.y());
    clampVerticalScroll();
    setVisibleRange(press_t0_ - dt, press_t1_ - dt);
    return;
  }
  const auto hit = collectiveAt(e->position());
  if (hit != hovered_) {
    hovered_ = hit;
    update();
    emit collectiveHovered(hit);
  }
}

void TimelineView::mouseReleaseEvent(QMouseEvent* e) {
  if (!dragging_ && !selecting_range_) selectCollective(collectiveAt(e->position()));
  if (selecting_range_ && !dragging_) range_a_ = range_b_ = -1;
  if (range_a_ > range_b_) std::swap(range_a_, range_b_);
  dragging_ = false;
  selecting_range_ = false;
  update();
}

void TimelineView::wheelEvent(QWheelEvent* e) {
  const double notches = e->angleDelta().y() / 120.0;
  if (e->modifiers() & Qt::ShiftModifier) {
    scroll_y_ -= static_cast<int>(notches * 40);
    clampVerticalScroll();
    update();
  } else {
    zoomAround(std::pow(0.8, notches), e->position().x());
  }
  e->accept();
}

void TimelineView::keyPressEvent(QKeyEvent* e) {
  // W/S zoom around the mouse (or the centre), A/D pan by a tenth, as in Perfetto and Nsight Systems.
  const QPointF mouse = mapFromGlobal(QCursor::pos());
  const double x = rect().contains(mouse.toPoint()) ? mouse.x() : kLabelWidth + plotWidth() / 2;
  switch (e->key()) {
    case Qt::Key_W: zoomAround(0.8, x); break;
    case Qt::Key_S: zoomAround(1.25, x); break;
    case Qt::Key_A: panByPixels(-plotWidth() / 10); break;
    case Qt::Key_D: panByPixels(plotWidth() / 10); break;
    case Qt::Key_Z: zoomToSelection(); break;
    case Qt::Key_F: case Qt::Key_0: zoomToFit(); break;
    case Qt::Key_Escape: selectCollective(kNoInstance); break;
    default: QWidget::keyPressEvent(e); return;
  }
  e->accept();
}

void TimelineView::leaveEvent(QEvent*) {
  if (hovered_ != kNoInstance) {
    hovered_ = kNoInstance;
    update();
    emit collectiveHovered(kNoInstance);
  }
}

void TimelineView::resizeEvent(QResizeEvent*) { clampVerticalScroll(); }

}  // namespace collscope::gui
