#pragma once
// The rank heat map: one row per rank, one column per step, coloured by how late the rank came to the step's
// collectives. Draws from RunSummaries::heat (precomputed once) through max-pooled levels of detail, so a frame
// touches a bounded number of cells whatever the zoom. Shown in the "Ranks" panel (rank_views.hpp).
#include <collscope/gui/run_data.hpp>

#include <QWidget>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

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

}  // namespace collscope::gui
