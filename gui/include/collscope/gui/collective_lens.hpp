#pragma once
// The collective lens: one row per collective of the reference communicator, showing where in [first, last
// arrival] its ranks arrived and who came last. Draws from RunSummaries::lens (precomputed once), so a frame
// reads each visible row's histogram once whatever the zoom. Shown in the "Ranks" panel (rank_views.hpp).
#include <collscope/gui/run_data.hpp>

#include <QWidget>

#include <cstdint>
#include <memory>

namespace collscope::gui {

class CollectiveLens : public QWidget {
  Q_OBJECT
 public:
  explicit CollectiveLens(QWidget* parent = nullptr);
  void setRun(std::shared_ptr<const RunData> run);
  // Visible rows [first, last) of RunSummaries::lens, and the arrival-offset range shown, ns (0: the largest
  // spread of the visible rows).
  void setVisibleRows(double row0, double row1);
  void setOffsetScale(double ns) { scale_ns_ = ns, update(); }
  double row0() const { return row0_; }
  double row1() const { return row1_; }
  int rowAt(QPointF pos) const;  // -1 outside
  QRect plotRect() const;
  QString toolTipAt(QPointF pos) const;
  double lastPaintMs() const { return last_paint_ms_; }
  std::int64_t lastRowsRead() const { return last_rows_read_; }
  // Off: every frame reads every rank's arrival from the run instead of the rows' histograms (the baseline).
  void setLevelOfDetail(bool on) { level_of_detail_ = on, update(); }

 signals:
  void collectiveActivated(std::uint32_t id);  // the last arriver's call of the clicked row
  // The same where that call is not loaded (a windowed run, windowed_run.hpp): the instance and the last
  // arriver's rank index.
  void instanceActivated(std::uint32_t instance, int rank_index);

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void mouseDoubleClickEvent(QMouseEvent*) override;
  bool event(QEvent*) override;

 private:
  std::shared_ptr<const RunData> run_;
  double row0_ = 0, row1_ = 1;
  double scale_ns_ = 0;
  QPointF press_;
  double press_row0_ = 0;
  bool dragged_ = false;
  bool level_of_detail_ = true;
  double last_paint_ms_ = 0;
  std::int64_t last_rows_read_ = 0;
};

}  // namespace collscope::gui
