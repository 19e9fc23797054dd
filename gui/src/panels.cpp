#include <collscope/gui/panels.hpp>

#include <collscope/store/schema.hpp>
#include <collscope/store/trace_reader.hpp>

#include "run_analysis.hpp"

#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QTableWidget>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace collscope::gui {
namespace {

// Every column of one call as its rank file recorded it, names decoded (datatype, reduce op, communicator),
// read back on demand through the store's reader: the run in memory keeps only what analysis and drawing need.
std::vector<std::pair<std::string, std::string>> recorded_fields(const run::Run& run, int rank_index,
                                                                 const run::CollectiveCall& call, bool in_flight) {
  const auto& rank = run.ranks[rank_index];
  std::vector<std::pair<std::string, std::string>> out;
  try {
    store::TraceReader reader(rank.path);
    const auto strings = reader.strings();
    auto name = [&](std::int64_t id) {
      return id > 0 && static_cast<std::size_t>(id) < strings.size() ? strings[id] : std::string("—");
    };
    std::int64_t comm_id = -1;
    for (const auto& c : reader.communicators())
      if (c.key == run.communicators[call.comm].key) comm_id = c.id;
    auto opt = [](const auto& v) { return v ? fmt::format("{}", *v) : std::string("NULL"); };
    if (in_flight) {
      for (const auto& r : reader.calls_in_flight()) {
        if (r.comm != comm_id || r.seq != call.seq) continue;
        out = {{"thread", std::to_string(r.thread)}, {"comm", std::to_string(r.comm)},
               {"seq", std::to_string(r.seq)}, {"op", std::string(store::op_name(r.op))},
               {"count", std::to_string(r.count)}, {"datatype", name(r.datatype)},
               {"bytes", std::to_string(r.bytes)}, {"reduce_op", name(r.reduce_op)},
               {"root", opt(r.root)}, {"start_ns", std::to_string(r.start_ns)},
               {"seen_ns", std::to_string(r.seen_ns)}};
      }
      return out;
    }
    const auto r = reader.find_collective(comm_id, call.seq);
    if (!r) return {{"error", rank.path + ": the call is no longer in the file"}};
    out = {{"id", std::to_string(r->id)},
           {"comm", std::to_string(r->comm)},
           {"seq", std::to_string(r->seq)},
           {"op", std::string(store::op_name(r->op))},
           {"count", std::to_string(r->count)},
           {"datatype", name(r->datatype)},
           {"bytes", std::to_string(r->bytes)},
           {"reduce_op", name(r->reduce_op)},
           {"root", opt(r->root)},
           {"peer", opt(r->peer)},
           {"sendbuf", fmt::format("{:#x}", r->sendbuf)},
           {"recvbuf", fmt::format("{:#x}", r->recvbuf)},
           {"stream", r->stream ? fmt::format("{:#x}", *r->stream) : std::string("NULL")},
           {"thread", std::to_string(r->thread)},
           {"start_ns", std::to_string(r->start_ns)},
           {"end_ns", std::to_string(r->end_ns)},
           {"gpu_start_ns", opt(r->gpu_start_ns)},
           {"gpu_end_ns", opt(r->gpu_end_ns)},
           {"correlation", opt(r->correlation)},
           {"grp", opt(r->group)},
           {"status", r->status == 0 ? std::string("0 (success)") : std::to_string(r->status)}};
  } catch (const std::exception& e) {
    out = {{"error", e.what()}};
  }
  return out;
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
  ranks_->setHorizontalHeaderLabels({tr("Rank"), tr("Arrival"), tr("Wait"), tr("Call"), tr("Bytes"), tr("State")});
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
  if (!run_ || event >= run_->model().collective_count()) {
    title_->setText(tr("Click a collective to see its details"));
    return;
  }
  const auto& m = run_->model();
  const auto e = m.collective(event);
  const auto& call = m.call(event);
  const auto& rank = run_->run().ranks[e.rank_index];
  const auto& comm = run_->run().communicators[call.comm];
  auto add = [&](const std::string& name, const std::string& value) {
    fields_->addTopLevelItem(new QTreeWidgetItem({QString::fromStdString(name), QString::fromStdString(value)}));
  };
  title_->setText(QString::fromStdString(fmt::format("<b>{}</b> {} on rank {} ({})", store::op_name(e.op),
                                                     format_bytes(double(e.bytes)), rank.world_rank, rank.host)));
  add("op", std::string(store::op_name(e.op)));
  add("rank", std::to_string(rank.world_rank));
  add("host", rank.host);
  add("start", format_duration(double(e.start_ns)));
  add("duration", format_duration(double(e.end_ns - e.start_ns)));
  if (e.flags & kCallInFlight)
    add("state", "in flight: never returned (the job hung here); duration until the tracer last saw it");
  if (e.fusion_fill_percent) add("fusion buffer fill", fmt::format("{} %", e.fusion_fill_percent));
  add("seq", std::to_string(call.seq));
  add("communicator", fmt::format("{} ({}, {:016x})", comm.name.empty() ? std::string("unnamed") : comm.name,
                                  store::backend_name(comm.backend), comm.key));
  const auto members = m.members(event);
  std::int64_t last_arrival = std::numeric_limits<std::int64_t>::min(), first_arrival = std::numeric_limits<std::int64_t>::max();
  int last_rank = -1;
  for (const auto id : members) {
    const auto me = m.collective(id);
    first_arrival = std::min(first_arrival, me.start_ns);
    if (me.start_ns > last_arrival) last_arrival = me.start_ns, last_rank = me.rank_index;
  }
  add("ranks in call", fmt::format("{} of {}", members.size(), comm.size));
  add("wait", format_duration(double(std::max<std::int64_t>(0, last_arrival - e.start_ns))));
  add("last arrival", fmt::format("rank {}", run_->run().ranks[last_rank].world_rank));
  if (e.instance != kNoInstance) {
    const auto& inst = m.matched().instances[e.instance];
    add("transfer", fmt::format("{} (shortest call of any rank)", format_duration(double(inst.duration_ns))));
    add("busbw", inst.duration_ns > 0 && inst.bytes > 0 ? run::format_bandwidth(inst.busbw_gbps()) : std::string("—"));
  }
  ranks_->setRowCount(static_cast<int>(members.size()));
  for (std::size_t k = 0; k < members.size(); ++k) {
    const auto me = m.collective(members[k]);
    const std::string cells[] = {std::to_string(run_->run().ranks[me.rank_index].world_rank),
                                 format_duration(double(me.start_ns)),
                                 format_duration(double(std::max<std::int64_t>(0, last_arrival - me.start_ns))),
                                 format_duration(double(me.end_ns - me.start_ns)), format_bytes(double(me.bytes)),
                                 (me.flags & kCallInFlight) ? "in flight" : ""};
    for (int c = 0; c < 6; ++c) ranks_->setItem(static_cast<int>(k), c, new QTableWidgetItem(QString::fromStdString(cells[c])));
  }
  for (const auto& [name, value] : recorded_fields(run_->run(), e.rank_index, call, e.flags & kCallInFlight))
    add("recorded." + name, value);
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
    case Size:
      return QString::fromStdString(fmt::format("{} – {}", format_bytes(double(r.size_bucket_bytes)),
                                                format_bytes(double(r.size_bucket_bytes) * 2)));
    case Count: return QVariant::fromValue<qlonglong>(r.count);
    case Time: return QString::fromStdString(format_duration(double(r.total_ns)));
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
