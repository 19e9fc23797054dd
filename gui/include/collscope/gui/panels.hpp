#pragma once
// The panels around the timeline, each its own widget with its own model (the main window wires them):
// details of the selected collective, the analyzer's findings, per-op statistics.
#include <collscope/gui/run_data.hpp>

#include <QAbstractTableModel>
#include <QWidget>

#include <memory>

class QTableView;
class QTableWidget;
class QTreeWidget;
class QLabel;
class QSortFilterProxyModel;

namespace collscope::gui {

// All recorded fields of one collective (read back from its rank file), its wait, transfer and bus
// bandwidth, and a table of the same instance on every rank; or one point-to-point call and its messages.
class DetailsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit DetailsPanel(QWidget* parent = nullptr);
  void setRun(std::shared_ptr<const RunData> run);
  void showCollective(std::uint32_t event);  // kNoInstance clears
  // A point-to-point call (TimelineModel's id) and its messages: peer, tag, bytes, wait and the late side.
  void showPointToPoint(std::uint32_t call);  // kNoInstance clears
  // The value shown for a field ("op", "bytes", "wait", "busbw" ...), empty when absent.
  QString fieldValue(const QString& name) const;
  QTableWidget* ranksTable() const { return ranks_; }
  QTreeWidget* fieldsTree() const { return fields_; }

 private:
  std::shared_ptr<const RunData> run_;
  QLabel* title_;
  QLabel* ranks_label_;
  QTreeWidget* fields_;
  QTableWidget* ranks_;
};

class FindingsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Severity, Kind, Cost, Ranks, Summary, Suggestion, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  void setFindings(std::vector<Finding> findings);
  const Finding& finding(int row) const { return findings_.at(row); }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  std::vector<Finding> findings_;
};

class FindingsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit FindingsPanel(QWidget* parent = nullptr);
  void setRun(const RunData* run);
  FindingsModel* model() const { return model_; }
  QTableView* view() const { return view_; }

 signals:
  void findingActivated(const collscope::gui::Finding& finding);

 private:
  FindingsModel* model_;
  QTableView* view_;
  QLabel* note_;
  QLabel* suggestion_;
};

class StatisticsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Op, Size, Count, Time, BusBw, ColumnCount };
  static constexpr int kSortRole = Qt::UserRole;  // numbers, for sorting
  using QAbstractTableModel::QAbstractTableModel;
  void setRows(std::vector<StatisticsRow> rows);
  const StatisticsRow& row(int r) const { return rows_.at(r); }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  std::vector<StatisticsRow> rows_;
};

// Per op and size bucket, sortable by any column; a row selects the slowest collective of its kind.
class StatisticsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit StatisticsPanel(QWidget* parent = nullptr);
  void setRun(std::shared_ptr<const RunData> run);
  StatisticsModel* model() const { return model_; }
  QTableView* view() const { return view_; }
  // The collective (id) with the lowest bus bandwidth among those of the row; kNoInstance when none.
  std::uint32_t slowest(const StatisticsRow& row) const;

 signals:
  void collectiveActivated(std::uint32_t id);

 private:
  std::shared_ptr<const RunData> run_;
  StatisticsModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* view_;
  QLabel* note_;
};

}  // namespace collscope::gui
