#pragma once
// The communication matrix: one row per sending rank, one column per receiving rank, each cell the messages
// between the two (bytes, messages, time or wait, MessageIndex::matrix: run/'s matched messages), white to dark blue as
// a share of the largest cell. A click selects the cell's messages on the timeline. Ranks beyond one per pixel
// share a pixel (the cell shows the sum of the pairs it holds), so a frame costs the run's non-empty pairs, not
// ranks².
#include <collscope/gui/run_data.hpp>

#include <QWidget>

#include <memory>
#include <optional>
#include <utility>

class QComboBox;
class QLabel;

namespace collscope::gui {

// Time: the messages' durations (MatrixCell::time_ns); Wait: their late-sender and late-receiver waits.
enum class MatrixMetric { Bytes = 0, Messages = 1, Time = 2, Wait = 3 };

class CommunicationMatrix : public QWidget {
  Q_OBJECT
 public:
  explicit CommunicationMatrix(QWidget* parent = nullptr);
  void setRun(std::shared_ptr<const RunData> run);
  void setMetric(MatrixMetric metric);
  MatrixMetric metric() const { return metric_; }
  // The rectangle of the cell (sender, receiver) (world ranks), widget pixels; empty when not shown.
  QRectF cellRect(int sender, int receiver) const;
  // The (sender, receiver) world-rank pair under a point; nullopt outside the grid.
  std::optional<std::pair<int, int>> pairAt(QPointF pos) const;
  QString toolTipAt(QPointF pos) const;
  QSize sizeHint() const override { return {420, 320}; }

 signals:
  void cellActivated(int sender, int receiver);  // world ranks

 protected:
  void paintEvent(QPaintEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  bool event(QEvent*) override;

 private:
  QRectF grid() const;  // the square of the cells
  double value(const MatrixCell& c) const;
  std::string formatted(double v) const;

  std::shared_ptr<const RunData> run_;
  std::vector<int> world_ranks_;  // the run's world ranks in order: row and column k
  MatrixMetric metric_ = MatrixMetric::Bytes;
};

// The matrix with its metric chooser and a line on what was matched.
class CommunicationPanel : public QWidget {
  Q_OBJECT
 public:
  explicit CommunicationPanel(QWidget* parent = nullptr);
  void setRun(std::shared_ptr<const RunData> run);
  CommunicationMatrix* matrix() const { return matrix_; }
  QComboBox* metricChooser() const { return metric_; }

 signals:
  void cellActivated(int sender, int receiver);

 private:
  CommunicationMatrix* matrix_;
  QComboBox* metric_;
  QLabel* note_;
};

}  // namespace collscope::gui
