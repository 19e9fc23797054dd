#include <collscope/gui/panels.hpp>

#include <collscope/store/schema.hpp>

#include "run_analysis.hpp"

#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QTableWidget>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>

namespace collscope::gui {
namespace {

// Every column of one collectives row, read back from the rank file (the viewer keeps only what it draws).
std::vector<std::pair<std::string, std::string>> recorded_fields(const std::string& file, std::uint32_t row_id) {
  std::vector<std::pair<std::string, std::string>> out;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return {{"error", file + ": cannot reopen the trace file"}};
  }
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT * FROM collectives WHERE id = ?", -1, &s, nullptr) == SQLITE_OK) {
    sqlite3_bind_int64(s, 1, row_id);
    if (sqlite3_step(s) == SQLITE_ROW) {
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        const char* v = reinterpret_cast<const char*>(sqlite3_column_text(s, c));
        out.emplace_back(sqlite3_column_name(s, c), v ? v : "NULL");
      }
    }
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

double busbw_gbps(const CollectiveEvent& e, const CollectiveInstance& inst) {
  // nccl-tests: algbw = bytes / transfer time (GB/s = bytes per ns); busbw = algbw × factor(op, ranks).
  const double transfer = static_cast<double>(e.end_ns - std::max(e.start_ns, inst.last_arrival_ns));
  if (transfer <= 0) return 0;
  const int ranks = inst.comm_size ? inst.comm_size : inst.member_count;
  return static_cast<double>(e.bytes) / transfer * store::bus_bandwidth_factor(e.op, ranks);
}

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

DetailsPanel::DetailsPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  title_ = new QLabel(tr("Click a collective to see its details"), this);
  title_->setWordWrap(true);
  fields_ = new QTreeWidget(this);
  fields_->setColumnCount(2);
  fields_->setHeaderLabels({tr("Field"), tr("Value")});
  fields_->setRootIsDecorated(false);
  fields_->setAlternatingRowColors(true);
  ranks_ = new QTableWidget(0, 6, this);
  ranks_->setHorizontalHeaderLabels({tr("Rank"), tr("Arrival"), tr("Wait"), tr("Call"), tr("Bytes"), tr("busbw GB/s")});
  ranks_->verticalHeader()->hide();
  ranks_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  ranks_->horizontalHeader()->setStretchLastSection(true);
  layout->addWidget(title_);
  layout->addWidget(fields_, 3);
  layout->addWidget(new QLabel(tr("Same collective on every rank:"), this));
  layout->addWidget(ranks_, 2);
}

void DetailsPanel::setRun(std::shared_ptr<const RunData> run) {
  run_ = std::move(run);
  showCollective(kNoInstance);
}

void DetailsPanel::showCollective(std::uint32_t event) {
  fields_->clear();
  ranks_->setRowCount(0);
  if (!run_ || event >= run_->collectives.size()) {
    title_->setText(tr("Click a collective to see its details"));
    return;
  }
  const auto& e = run_->collectives[event];
  const auto& rank = run_->ranks[e.rank_index];
  auto add = [&](const std::string& name, const std::string& value) {
    fields_->addTopLevelItem(new QTreeWidgetItem({QString::fromStdString(name), QString::fromStdString(value)}));
  };
  title_->setText(QString::fromStdString(fmt::format("<b>{}</b> {} on rank {} ({})", store::op_name(e.op),
                                                     format_bytes(e.bytes), rank.world_rank, rank.host)));
  add("op", std::string(store::op_name(e.op)));
  add("rank", std::to_string(rank.world_rank));
  add("host", rank.host);
  add("start", format_duration(e.start_ns));
  add("duration", format_duration(e.end_ns - e.start_ns));
  if (e.flags & kCallInFlight)
    add("state", "in flight: never returned (the job hung here); duration until the tracer last saw it");
  if (e.fusion_fill_percent) add("fusion buffer fill", fmt::format("{} %", e.fusion_fill_percent));
  if (e.instance != kNoInstance) {
    const auto& inst = run_->instances[e.instance];
    add("seq", std::to_string(inst.seq));
    add("communicator key", fmt::format("{:016x}", inst.comm_key));
    add("ranks in call", fmt::format("{} of {}", inst.member_count, inst.comm_size));
    add("wait", format_duration(std::max<std::int64_t>(0, inst.last_arrival_ns - e.start_ns)));
    add("transfer", format_duration(e.end_ns - std::max(e.start_ns, inst.last_arrival_ns)));
    add("busbw", fmt::format("{:.3f} GB/s", busbw_gbps(e, inst)));
    add("last arrival", fmt::format("rank {}", run_->ranks[inst.last_rank_index].world_rank));
    ranks_->setRowCount(inst.member_count);
    for (std::uint32_t m = 0; m < inst.member_count; ++m) {
      const auto& me = run_->collectives[run_->instance_members[inst.members_begin + m]];
      const std::string cells[] = {
          std::to_string(run_->ranks[me.rank_index].world_rank), format_duration(me.start_ns),
          format_duration(std::max<std::int64_t>(0, inst.last_arrival_ns - me.start_ns)),
          format_duration(me.end_ns - me.start_ns), format_bytes(me.bytes), fmt::format("{:.3f}", busbw_gbps(me, inst))};
      for (int c = 0; c < 6; ++c) ranks_->setItem(static_cast<int>(m), c, new QTableWidgetItem(QString::fromStdString(cells[c])));
    }
  }
  for (const auto& [name, value] : recorded_fields(rank.file, e.row_id)) add("recorded." + name, value);
  fields_->resizeColumnToContents(0);
}

QString DetailsPanel::fieldValue(const QString& name) const {
  for (int i = 0; i < fields_->topLevelItemCount(); ++i)
    if (fields_->topLevelItem(i)->text(0) == name) return fields_->topLevelItem(i)->text(1);
  return {};
}

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
    return f.severity == "critical" ? QColor(190, 20, 20) : f.severity == "warning" ? QColor(170, 100, 0) : QColor(60, 60, 60);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Severity: return QString::fromStdString(f.severity);
    case Kind: return QString::fromStdString(f.kind);
    case Cost: return QString::fromStdString(format_duration(f.cost_ns));
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
  layout->addWidget(note_);
  layout->addWidget(view_);
  connect(view_, &QTableView::clicked, this, [this](const QModelIndex& index) {
    if (index.isValid()) emit findingActivated(model_->finding(index.row()));
  });
  setRun(nullptr);
}

void FindingsPanel::setRun(const RunData* run) {
  model_->setFindings(run ? run->findings : std::vector<Finding>{});
  if (!run) note_->setText(tr("No run loaded."));
  else if (!run->analyzed) note_->setText(analysis_available() ? tr("Analyzing…") : tr("Findings need the analyzer (collscope was built without it)."));
  else if (run->findings.empty()) note_->setText(tr("The analyzer found nothing to report."));
  else note_->setText(tr("%1 findings, costliest first. Click one to zoom to its evidence.").arg(run->findings.size()));
  view_->resizeColumnsToContents();
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
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Op: return QString::fromStdString(std::string(store::op_name(r.op)));
    case Size: return QString::fromStdString(r.size_bucket);
    case Count: return QVariant::fromValue<qlonglong>(r.count);
    case Time: return QString::fromStdString(format_duration(r.total_ns));
    case BusBw: return QString::number(r.busbw_gbps, 'f', 3);
  }
  return {};
}

QVariant StatisticsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"Op", "Size", "Count", "Time", "busbw GB/s (median)"};
  return section < ColumnCount ? QString(names[section]) : QVariant();
}

StatisticsPanel::StatisticsPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  note_ = new QLabel(this);
  model_ = new StatisticsModel(this);
  view_ = make_table(this);
  view_->setModel(model_);
  layout->addWidget(note_);
  layout->addWidget(view_);
  setRun(nullptr);
}

void StatisticsPanel::setRun(const RunData* run) {
  model_->setRows(run ? run->statistics : std::vector<StatisticsRow>{});
  note_->setText(!run ? tr("No run loaded.") : run->analyzed ? tr("Per op and message size, from the analyzer.") : analysis_available() ? tr("Analyzing…") : tr("Statistics need the analyzer (collscope was built without it)."));
  view_->resizeColumnsToContents();
}

}  // namespace collscope::gui
