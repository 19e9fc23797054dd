#include <collscope/gui/panels.hpp>

#include <collscope/run/palette.hpp>
#include <collscope/store/schema.hpp>

#include "run_analysis.hpp"

#include <QHeaderView>
#include <QSortFilterProxyModel>
#include <QLabel>
#include <QTableView>
#include <QVBoxLayout>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace collscope::gui {
namespace {

QTableView* make_table(QWidget* parent) {
  auto* view = new QTableView(parent);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  view->setSelectionMode(QAbstractItemView::SingleSelection);
  view->setAlternatingRowColors(true);
  view->verticalHeader()->hide();
  view->horizontalHeader()->setStretchLastSection(true);
  view->setWordWrap(false);
  return view;
}

}  // namespace

void FindingsModel::setFindings(std::vector<Finding> findings) {
  beginResetModel();
  findings_ = std::move(findings);
  endResetModel();
}
int FindingsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(findings_.size()); }
int FindingsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant FindingsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const auto& f = findings_[index.row()];
  if (role == Qt::ToolTipRole) return QString::fromStdString(f.summary + "\n" + f.suggestion);
  if (role == Qt::ForegroundRole && index.column() == Severity)
    return QColor(QRgb(f.severity == "critical" ? run::palette::kCritical : f.severity == "warning" ? run::palette::kWarning : run::palette::kInfo));
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Severity: return QString::fromStdString(f.severity);
    case Kind: return QString::fromStdString(f.kind);
    case Cost: return QString::fromStdString(format_duration(double(f.cost_ns)));
    case Ranks: {
      std::string s;
      for (int r : f.world_ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
      return QString::fromStdString(s);
    }
    case Summary: return QString::fromStdString(f.summary);
    case Suggestion: return QString::fromStdString(f.suggestion);
  }
  return {};
}

QVariant FindingsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"Severity", "Finding", "Cost", "Ranks", "Evidence", "Suggestion"};
  return section < ColumnCount ? QString(names[section]) : QVariant();
}

FindingsPanel::FindingsPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  note_ = new QLabel(this);
  note_->setWordWrap(true);
  model_ = new FindingsModel(this);
  view_ = make_table(this);
  view_->setModel(model_);
  // Severity, kind, cost and ranks stay visible; the evidence takes the rest and wraps; the suggestion of the
  // current finding is shown in full under the table instead of a column off the right edge.
  view_->setWordWrap(true);
  view_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  view_->horizontalHeader()->setStretchLastSection(false);
  for (int c : {FindingsModel::Severity, FindingsModel::Kind, FindingsModel::Cost, FindingsModel::Ranks})
    view_->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  view_->horizontalHeader()->setSectionResizeMode(FindingsModel::Summary, QHeaderView::Stretch);
  view_->setColumnHidden(FindingsModel::Suggestion, true);
  view_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  suggestion_ = new QLabel(this);
  suggestion_->setWordWrap(true);
  suggestion_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  suggestion_->setStyleSheet("QLabel { background: #eef5ee; padding: 4px; }");
  suggestion_->hide();
  layout->addWidget(note_);
  layout->addWidget(view_, 1);
  layout->addWidget(suggestion_);
  connect(view_, &QTableView::clicked, this, [this](const QModelIndex& index) {
    if (index.isValid()) emit findingActivated(model_->finding(index.row()));
  });
  connect(view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& index) {
    if (!index.isValid()) return suggestion_->hide();
    suggestion_->setText(tr("<b>Suggestion:</b> %1").arg(QString::fromStdString(model_->finding(index.row()).suggestion).toHtmlEscaped()));
    suggestion_->show();
  });
  setRun(nullptr);
}

void FindingsPanel::setRun(const RunData* run) {
  model_->setFindings(run ? run->findings : std::vector<Finding>{});
  suggestion_->hide();
  if (!run) note_->setText(tr("No run loaded."));
  else if (!run->analyzed) note_->setText(analysis_available() ? tr("Analyzing…") : tr("Findings need the analyzer (collscope was built without it)."));
  else if (run->findings.empty()) note_->setText(tr("The analyzer found nothing to report."));
  else note_->setText(tr("%1 findings, costliest first. Click one: the timeline zooms to its evidence and selects it.").arg(run->findings.size()));
}

void StatisticsModel::setRows(std::vector<StatisticsRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}
int StatisticsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }
int StatisticsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant StatisticsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const auto& r = rows_[index.row()];
  if (role == Qt::TextAlignmentRole && index.column() >= Count) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole) return tr("Click: select the slowest of these collectives on the timeline");
  if (role == kSortRole) {
    switch (index.column()) {
      case Op: return QString::fromStdString(std::string(store::op_name(r.op)));
      case Size: return QVariant::fromValue<qlonglong>(r.size_bucket_bytes);
      case Count: return QVariant::fromValue<qlonglong>(r.count);
      case Time: return QVariant::fromValue<qlonglong>(r.total_ns);
      case BusBw: return r.busbw_gbps;
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Op: return QString::fromStdString(std::string(store::op_name(r.op)));
    case Size:
      return QString::fromStdString(r.max_bytes > 0 ? run::format_size_range(r.min_bytes, r.max_bytes)
                                                    : fmt::format("{} – {}", format_bytes(double(r.size_bucket_bytes)),
                                                                  format_bytes(double(r.size_bucket_bytes) * 2)));
    case Count: return QVariant::fromValue<qlonglong>(r.count);
    case Time: return QString::fromStdString(format_duration(double(r.total_ns)));
    case BusBw: return QString::fromStdString(run::format_bandwidth(r.busbw_gbps));
  }
  return {};
}

QVariant StatisticsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole && section == BusBw)
    return tr("Median bus bandwidth: bytes / transfer time × the nccl-tests factor of the op (allreduce 2(n−1)/n)");
  if (role != Qt::DisplayRole) return {};
  static const char* names[] = {"Op", "Size", "Count", "Time", "busbw (median)"};
  return section < ColumnCount ? QString(names[section]) : QVariant();
}

StatisticsPanel::StatisticsPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  note_ = new QLabel(this);
  model_ = new StatisticsModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(StatisticsModel::kSortRole);
  view_ = make_table(this);
  view_->setModel(proxy_);
  view_->setSortingEnabled(true);
  view_->sortByColumn(StatisticsModel::Time, Qt::DescendingOrder);
  view_->horizontalHeader()->setStretchLastSection(false);
  view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  layout->addWidget(note_);
  layout->addWidget(view_);
  connect(view_, &QTableView::clicked, this, [this](const QModelIndex& index) {
    if (!index.isValid() || !run_) return;
    const auto id = slowest(model_->row(proxy_->mapToSource(index).row()));
    if (id != kNoInstance) emit collectiveActivated(id);
  });
  setRun(nullptr);
}

void StatisticsPanel::setRun(std::shared_ptr<const RunData> run) {
  run_ = std::move(run);
  model_->setRows(run_ ? run_->statistics : std::vector<StatisticsRow>{});
  note_->setText(!run_ ? tr("No run loaded.")
                 : run_->analyzed ? tr("Per op and message size, from the analyzer. Click a header to sort, a row to see "
                                       "its slowest collective.")
                 : analysis_available() ? tr("Analyzing…")
                                        : tr("Statistics need the analyzer (collscope was built without it)."));
}

std::uint32_t StatisticsPanel::slowest(const StatisticsRow& row) const {
  // The instance of this op and size bucket with the lowest bus bandwidth; its last arriver's call.
  const auto& m = run_->model();
  const auto& instances = m.matched().instances;
  std::uint32_t best = kNoInstance;
  double lowest = 0;
  for (std::uint32_t i = 0; i < instances.size(); ++i) {
    const auto& inst = instances[i];
    if (inst.op != row.op || inst.ranks < 2 || inst.bytes <= 0 || inst.duration_ns <= 0) continue;
    if ((std::int64_t{1} << static_cast<int>(std::log2(double(inst.bytes)))) != row.size_bucket_bytes) continue;
    if (best == kNoInstance || inst.busbw_gbps() < lowest) best = i, lowest = inst.busbw_gbps();
  }
  if (best == kNoInstance) return kNoInstance;
  const int last = m.rank_index_of_world(instances[best].last_arriver);
  const auto members = m.instance_members(best);
  for (const auto id : members)
    if (m.rank_of_collective(id) == last) return id;
  return members.empty() ? kNoInstance : members.front();
}

}  // namespace collscope::gui
