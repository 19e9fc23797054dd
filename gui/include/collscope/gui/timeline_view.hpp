#pragma once
// The timeline: a time ruler, a band of steps and one lane per rank thread / NVTX depth / GPU stream,
// grouped by host. Collectives are boxes coloured by op, their wait (own arrival → last arrival) lighter
// than their transfer; the selected instance is outlined on every rank under a vertical band.
// Level of detail: events narrower than 2 px are aggregated into one column per pixel, found by binary
// search, so a frame costs O(lanes × width × log events) whatever the zoom.
#include <collscope/gui/run_data.hpp>

#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

namespace collscope::gui {

QColor op_color(store::Op op);

class TimelineView : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineView(QWidget* parent = nullptr);

  // keep_range: keep the visible range (the analyzed run replacing the first timeline).
  void setRun(std::shared_ptr<const RunData> run, bool keep_range = false);
  const RunData* run() const { return run_.get(); }

  // Visible time range, ns of run time.
  std::int64_t visibleStart() const { return static_cast<std::int64_t>(t0_); }
  std::int64_t visibleEnd() const { return static_cast<std::int64_t>(t1_); }
  void setVisibleRange(double start_ns, double end_ns);
  void zoomToFit();
  void zoomAround(double factor, double x);  // factor < 1 zooms in; x in widget pixels
  void panByPixels(double dx);
  void zoomToSelection();  // the range dragged with Shift, else the selected instance

  // Selection: a collective id (TimelineModel), kNoInstance for none.
  void selectCollective(std::uint32_t event);
  std::uint32_t selectedCollective() const { return selected_; }
  std::uint32_t selectedInstance() const;
  // Ranks (indices into RunData::ranks) to tint, e.g. those a finding concerns.
  void setHighlightedRanks(std::vector<int> rank_indices);
  const std::vector<int>& highlightedRanks() const { return highlighted_ranks_; }

  void setLevelOfDetail(bool on) { level_of_detail_ = on; update(); }

  int laneCount() const;
  // Screen position of a collective's centre (for tests and "reveal"); null when not visible.
  QPointF pointOfCollective(std::uint32_t event) const;
  std::uint32_t collectiveAt(QPointF pos) const;
  double lastPaintMs() const { return last_paint_ms_; }
  std::int64_t lastPaintedPrimitives() const { return last_primitives_; }

  static constexpr int kLabelWidth = 215;  // px, lane labels at the left

 signals:
  void collectiveSelected(std::uint32_t event);
  void collectiveHovered(std::uint32_t event);
  void visibleRangeChanged(std::int64_t start_ns, std::int64_t end_ns);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void keyPressEvent(QKeyEvent*) override;
  void leaveEvent(QEvent*) override;
  void resizeEvent(QResizeEvent*) override;

 private:
  double timeToX(double t) const;
  double xToTime(double x) const;
  double plotWidth() const;
  int laneAt(double y) const;
  void layoutLanes();
  void clampVerticalScroll();
  void paintRuler(QPainter& p, const QRect& r);
  void paintSteps(QPainter& p, const QRect& r);
  void paintCollectiveLane(QPainter& p, const Lane& lane, int top, int height);
  void paintSpanLane(QPainter& p, const Lane& lane, int top, int height);
  // End (exclusive) of the events aggregated into the pixel column of event i (see timeline_view.cpp).
  std::uint32_t aggregated_until(const Lane& lane, std::uint32_t i, double column_end_t, double ns_per_px) const;
  void paintInstanceOutline(QPainter& p, std::uint32_t event, const QColor& color, int width);

  std::shared_ptr<const RunData> run_;
  double t0_ = 0, t1_ = 1;           // visible range, ns run time
  std::vector<QRgb> name_rgb_, name_rgb_dark_;  // per RunData::names: box and aggregated-column colours
  std::vector<int> lane_top_;        // px below the header, per lane
  std::vector<int> lane_height_;
  std::vector<int> host_header_top_; // px, one per host change (drawn with the host name)
  std::vector<std::string> host_header_name_;
  int content_height_ = 0;
  int scroll_y_ = 0;
  std::uint32_t selected_ = kNoInstance;
  std::uint32_t hovered_ = kNoInstance;
  std::vector<int> highlighted_ranks_;
  bool level_of_detail_ = true;
  // Mouse interaction.
  QPointF press_pos_;
  double press_t0_ = 0, press_t1_ = 0;
  int press_scroll_y_ = 0;
  bool dragging_ = false;
  bool selecting_range_ = false;
  double range_a_ = -1, range_b_ = -1;  // Shift-drag selection, ns
  double last_paint_ms_ = 0;
  std::int64_t last_primitives_ = 0;
};

}  // namespace collscope::gui
