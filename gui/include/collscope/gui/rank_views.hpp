#pragma once
// Views that scale to thousands of ranks, where one lane per rank stops working: the rank heat map (one row per
// rank, one column per step, coloured by how late the rank came to the step's collectives) and the collective
// lens (one row per collective of the reference communicator, showing where in [first, last arrival] its ranks
// arrived and who came last). Both draw from RunSummaries (precomputed once) with level of detail: a frame
// touches a bounded number of cells whatever the zoom (rank_heatmap.cpp, collective_lens.cpp).
#include <collscope/gui/run_data.hpp>

#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

class QLabel;
class QTabWidget;

namespace collscope::gui {

class RankHeatMap : public QWidget {
  Q_OBJECT
 public:
  explicit RankHeatMap(QWidget* parent = nullptr);
  void setRun(std::shared_ptr<const RunData> run);
  // Visible rows (ranks, by display order = rank index) and columns (steps): [first, last).
  void setVisibleCells(double rank0, double rank1, double step0, double step1);
  double rank0() const { return r0_; }
  double rank1() const { return r1_; }
  double step0() const { return s0_; }
  double step1() const { return s1_; }
  // The cell under a point; {-1, -1} outside.
  std::pair<int, int> cellAt(QPointF pos) const;
  QRect plotRect() const;
  QString toolTipAt(QPointF pos) const;
  double lastPaintMs() const { return last_paint_ms_; }
  std::int64_t lastCellsRead() const { return last_cells_read_; }
  // Off: every frame reads every cell under each pixel (the benchmark's baseline).
  void setLevelOfDetail(bool on) { level_of_detail_ = on, update(); }

 signals:
  void cellActivated(int rank_index, int step);

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void mouseDoubleClickEvent(QMouseEvent*) override;
  bool event(QEvent*) override;

 private:
  // Lateness quantised to 0..255 of the colour scale, max-pooled by 2^ly rows and 2^lx columns.
  struct Level {
    int rows = 0, cols = 0;
    std::vector<std::uint8_t> cells;
  };
  const Level& level(int ly, int lx);

  std::shared_ptr<const RunData> run_;
  std::vector<std::vector<Level>> levels_;  // [ly][lx], built on first use
  double r0_ = 0, r1_ = 1, s0_ = 0, s1_ = 1;
  QPointF press_;
  double press_r0_ = 0, press_s0_ = 0;
  bool dragged_ = false;
  bool level_of_detail_ = true;
  double last_paint_ms_ = 0;
  std::int64_t last_cells_read_ = 0;
};

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

// The two side by side in the "Ranks" panel, with a line saying what they show.
class RankViews : public QWidget {
  Q_OBJECT
 public:
  explicit RankViews(QWidget* parent = nullptr);
  void setRun(std::shared_ptr<const RunData> run);
  RankHeatMap* heatMap() const { return heat_; }
  CollectiveLens* lens() const { return lens_; }

 signals:
  void stepActivated(int rank_index, std::int64_t start_ns, std::int64_t end_ns);
  void collectiveActivated(std::uint32_t id);

 private:
  std::shared_ptr<const RunData> run_;
  QLabel* note_;
  RankHeatMap* heat_;
  CollectiveLens* lens_;
};

}  // namespace collscope::gui
