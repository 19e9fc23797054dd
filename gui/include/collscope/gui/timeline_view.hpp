#pragma once
// The timeline: a time ruler, a band of steps, counter tracks (step time, bus bandwidth), then per host (a header
// that collapses) per rank a summary row (how late the rank was, red, and how long it waited, blue, over time)
// and its lanes: one per thread with collectives, NVTX depth, GPU stream. Lanes can be pinned under the
// counters. Collectives are boxes coloured by op, their wait (own arrival → last arrival) lighter than the rest;
// the selected instance is outlined on every rank with arrows from each rank that waited to the last one.
// MPI point-to-point calls share their thread's lane with its collectives (a non-blocking one as its posting
// and its completion, joined by a thin line), their late-sender or late-receiver wait lighter like a
// collective's; a line runs from each send to its matched receive (run/'s matching), for the messages of the
// visible range only, and none past kMaxMessageLines of them (the legend says so).
// Level of detail: events narrower than 2 px are aggregated into one column per pixel, found by binary
// search, so a frame costs O(lanes × width × log events) whatever the zoom (timeline_paint.cpp).
// Files: timeline_view.cpp (state, layout, navigation), timeline_paint.cpp, timeline_input.cpp.
#include <collscope/gui/run_data.hpp>
#include <collscope/gui/search.hpp>

#include <QWidget>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

class QMenu;

namespace collscope::gui {

QColor op_color(store::Op op);

class TimelineView : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineView(QWidget* parent = nullptr);

  // keep_range: keep the visible range, selection and layout (the analyzed run replacing the first timeline).
  void setRun(std::shared_ptr<const RunData> run, bool keep_range = false);
  const RunData* run() const { return run_.get(); }

  // Visible time range, ns of run time.
  std::int64_t visibleStart() const { return static_cast<std::int64_t>(t0_); }
  std::int64_t visibleEnd() const { return static_cast<std::int64_t>(t1_); }
  void setVisibleRange(double start_ns, double end_ns);
  // The same, remembered in the view history first (Back returns here): for jumps, not for wheel or drag steps.
  void jumpTo(double start_ns, double end_ns);
  void zoomToFit();
  void zoomAround(double factor, double x);  // factor < 1 zooms in; x in widget pixels
  void panByPixels(double dx);
  void zoomToSelection();  // the selected range, else the selected instance
  bool back();             // the range before the last jump; false when none
  bool forward();
  bool canGoBack() const { return !back_.empty(); }
  bool canGoForward() const { return !forward_.empty(); }

  // Selection: a collective id (TimelineModel), kNoInstance for none.
  void selectCollective(std::uint32_t event);
  std::uint32_t selectedCollective() const { return selected_; }
  std::uint32_t selectedInstance() const;
  // Point-to-point: a call (TimelineModel's point-to-point id) selects it and its messages; a set of messages
  // (MessageIndex's, as the matrix's cells give them) selects those alone. Either clears the collective.
  void selectPointToPoint(std::uint32_t call);
  std::uint32_t selectedPointToPoint() const { return selected_p2p_; }
  void selectMessages(std::vector<std::uint32_t> messages);
  const std::vector<std::uint32_t>& selectedMessages() const { return selected_messages_; }
  // Esc: the selection, the range, the tint and the search highlight.
  void clearSelection();
  // Ranks (indices into Run::ranks) to tint, e.g. those a finding concerns.
  void setHighlightedRanks(std::vector<int> rank_indices);
  const std::vector<int>& highlightedRanks() const { return highlighted_ranks_; }
  // Outlines the collectives and spans a search matches (null: none).
  void setSearch(std::shared_ptr<const SearchQuery> query);
  const SearchQuery* search() const { return search_.get(); }

  // A selected time range (Shift+drag or right-drag), run time; empty when none.
  bool hasRange() const { return range_a_ >= 0 && range_b_ > range_a_; }
  std::pair<std::int64_t, std::int64_t> range() const {
    return {static_cast<std::int64_t>(range_a_), static_cast<std::int64_t>(range_b_)};
  }
  void setRange(double start_ns, double end_ns);
  void clearRange();

  // Collapsing and pinning (what the headers' clicks and the context menu do).
  void setHostCollapsed(int host, bool collapsed);
  void setRankCollapsed(int rank_index, bool collapsed);
  bool rankCollapsed(int rank_index) const;
  void setLanePinned(int lane, bool pinned);
  bool lanePinned(int lane) const;

  void setLevelOfDetail(bool on) { level_of_detail_ = on; update(); }
  // What a key does (W/S/A/D, Z, F, 0, Esc, Backspace, Alt+←/→, ↑/↓, PgUp/PgDn, ?/F1); false for other keys. The
  // main window calls it for the keys it takes for the whole window.
  bool handleKey(int key, Qt::KeyboardModifiers modifiers);

  // Rank indices [first, last) with a row (summary strip or lane) in the scrolled area on screen; {0, 0} when none.
  std::pair<int, int> visibleRanks() const;
  // Rank indices with a pinned lane, ascending.
  std::vector<int> pinnedRanks() const;
  // A windowed run (RunData::windowed): whether the events on screen are all loaded (the visible ranks and range
  // inside RunData::window); the legend says when they are not.
  bool visibleEventsLoaded() const;
  // What the legend says meanwhile ("loading events…", "zoom in to load events").
  void setUnloadedNote(const QString& note) { unloaded_note_ = note, update(); }

  // Scrolls a rank's row into view (its host expanded).
  void revealRank(int rank_index);

  int laneCount() const;
  int visibleLaneCount() const;  // lanes not hidden by a collapsed host or rank
  // Screen position of a collective's centre (for tests and "reveal"); null when not visible.
  QPointF pointOfCollective(std::uint32_t event) const;
  std::uint32_t collectiveAt(QPointF pos) const;
  // The point-to-point call (id) under a point, kNoInstance when none; the screen centre of one (null when not
  // visible; a non-blocking call's completion, where it waited).
  std::uint32_t pointToPointAt(QPointF pos) const;
  QPointF pointOfPointToPoint(std::uint32_t call) const;
  // The vertical middle of a rank's summary row and of a lane, widget pixels; -1 when hidden.
  int rankRowCentre(int rank_index) const;
  int laneCentre(int lane) const;
  int hostRowCentre(int host) const;
  // The hover text at a point (what the tooltip shows); empty over nothing.
  QString toolTipAt(QPointF pos) const;
  // The context menu for a point (the caller owns it).
  QMenu* contextMenuAt(QPointF pos);
  double lastPaintMs() const { return last_paint_ms_; }
  // Of the last frame: point-to-point calls in view on shown lanes (each a box or part of a pixel column), and
  // message lines drawn (lines that fall on the same pixels as the one before count, though drawn once).
  std::int64_t lastPointToPointCalls() const { return last_p2p_calls_; }
  std::int64_t lastMessageLines() const { return last_message_lines_; }
  std::int64_t lastPaintedPrimitives() const { return last_primitives_; }
  // Every text label of the last frame (ruler, steps, rows, boxes) when recording is on (tests): what was drawn,
  // the whole text it stands for, the rectangle it was given and the width it takes, px.
  struct DrawnLabel {
    QString shown, full;
    QRectF rect;
    double text_width = 0;
  };
  void setRecordLabels(bool on) { record_labels_ = on; }
  const std::vector<DrawnLabel>& lastLabels() const { return last_labels_; }

  static constexpr int kLabelWidth = 215;  // px, lane labels at the left

 signals:
  void collectiveSelected(std::uint32_t event);
  void collectiveHovered(std::uint32_t event);
  void pointToPointSelected(std::uint32_t call);  // kNoInstance when a selection was cleared
  void visibleRangeChanged(std::int64_t start_ns, std::int64_t end_ns);
  void rowsScrolled();  // the scrolled rows moved (wheel, drag, keys, a reveal)
  void rangeSelected(std::int64_t start_ns, std::int64_t end_ns);  // also (0, 0) when cleared
  void historyChanged();
  void helpRequested();

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void keyPressEvent(QKeyEvent*) override;
  void contextMenuEvent(QContextMenuEvent*) override;
  void leaveEvent(QEvent*) override;
  void resizeEvent(QResizeEvent*) override;
  bool event(QEvent*) override;

 private:
  enum class RowKind : std::uint8_t { Counter, Host, Rank, Lane };
  struct Row {
    RowKind kind = RowKind::Lane;
    int index = 0;   // counter 0 (step time) / 1 (busbw), host, rank index or lane
    int top = 0;     // px: pinned rows from the widget's top, the others from the top of the scrolled area
    int height = 0;
    bool pinned = false;
  };

  double timeToX(double t) const;
  double xToTime(double x) const;
  double plotWidth() const;
  int scrolledTop() const;     // px: where the scrolled rows start
  int plotBottom() const;      // px: above the legend
  int screenTop(const Row& row) const;
  const Row* rowAt(double y) const;
  int laneAt(double y) const;
  void layoutRows();
  void clampVerticalScroll();
  void rememberRange();
  void revealLane(int rank_index, int lane);  // expands its rank and host, scrolls it into view

  // timeline_paint.cpp
  void paintRow(QPainter& p, const Row& row, int top);
  void paintRuler(QPainter& p, const QRect& r);
  void paintSteps(QPainter& p, const QRect& r);
  void paintCounter(QPainter& p, int counter, int top, int height);
  void paintRankActivity(QPainter& p, int rank_index, int top, int height);
  void paintCollectiveLane(QPainter& p, const Lane& lane, int top, int height);
  void paintSpanLane(QPainter& p, const Lane& lane, int top, int height);
  void paintPointToPoint(QPainter& p, const Lane& track, int top, int height);
  void paintMessageLines(QPainter& p);
  // End (exclusive) of the events aggregated into the pixel column of event i (see timeline_paint.cpp).
  std::uint32_t aggregated_until(const Lane& lane, std::uint32_t i, double column_end_t, double ns_per_px) const;
  void paintInstanceOutline(QPainter& p, std::uint32_t event, const QColor& color, int width, bool arrows);
  void paintRangeTotals(QPainter& p);
  void paintLegend(QPainter& p);
  // Draws `shown` (a label for `full`, whole or cut at a word) left-aligned or centred in `rect`, and records it.
  void drawLabel(QPainter& p, const QRectF& rect, int flags, const QString& shown, const QString& full);

  std::shared_ptr<const RunData> run_;
  double t0_ = 0, t1_ = 1;           // visible range, ns run time
  std::vector<std::pair<double, double>> back_, forward_;  // view history
  std::vector<QRgb> name_rgb_, name_rgb_dark_;  // per name: box and aggregated-column colours
  std::vector<Row> rows_;            // pinned first, then the scrolled ones in display order
  std::vector<int> lane_row_;        // per lane: index into rows_, -1 when hidden
  std::vector<int> rank_row_;        // per rank: index into rows_, -1 when hidden
  std::vector<int> host_row_;        // per host: index into rows_
  std::vector<char> host_collapsed_, rank_collapsed_, lane_pinned_;
  std::vector<std::vector<int>> host_ranks_;  // per host (ClockAlignment::hosts): its ranks in display order
  std::vector<std::vector<int>> rank_lanes_;  // per rank: its lanes
  std::vector<store::Op> ops_present_;        // for the legend
  int pinned_height_ = 0;            // px below the header
  int content_height_ = 0;           // px of the scrolled rows
  int scroll_y_ = 0;
  int announced_scroll_y_ = 0;
  QString unloaded_note_;       // the scroll rowsScrolled() last announced
  std::uint32_t selected_ = kNoInstance;
  std::uint32_t hovered_ = kNoInstance;
  std::uint32_t selected_p2p_ = kNoInstance;
  std::vector<std::uint32_t> selected_messages_;  // sorted
  std::int64_t last_p2p_calls_ = 0, last_message_lines_ = 0, last_messages_in_view_ = 0;
  std::vector<int> highlighted_ranks_;
  std::shared_ptr<const SearchQuery> search_;
  bool level_of_detail_ = true;
  // Mouse interaction.
  QPointF press_pos_;
  Qt::MouseButton press_button_ = Qt::NoButton;
  double press_t0_ = 0, press_t1_ = 0;
  int press_scroll_y_ = 0;
  bool dragging_ = false;
  bool selecting_range_ = false;
  double range_a_ = -1, range_b_ = -1;  // selected range, ns (a < b once released)
  RangeTotals range_totals_;            // of the selected range
  double last_paint_ms_ = 0;
  std::int64_t last_primitives_ = 0;
  bool record_labels_ = false;
  std::vector<DrawnLabel> last_labels_;
};

}  // namespace collscope::gui
