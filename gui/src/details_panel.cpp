// The Details panel: one collective, how long it waited and for whom, its instance on every rank, and every
// column its rank file recorded (read back on demand through the store's reader).
#include <collscope/gui/panels.hpp>

#include <collscope/store/schema.hpp>
#include <collscope/store/trace_reader.hpp>

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "point_to_point_text.hpp"

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

}  // namespace

DetailsPanel::DetailsPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  title_ = new QLabel(tr("Click a collective or a point-to-point call to see its details"), this);
  title_->setWordWrap(true);
  fields_ = new QTreeWidget(this);
  fields_->setColumnCount(2);
  fields_->setHeaderLabels({tr("Field"), tr("Value")});
  fields_->setRootIsDecorated(false);
  fields_->setAlternatingRowColors(true);
  ranks_ = new QTableWidget(0, 6, this);
  ranks_->setHorizontalHeaderLabels({tr("Rank"), tr("Arrival"), tr("Wait"), tr("Call"), tr("Bytes"), tr("")});
  ranks_->horizontalHeaderItem(1)->setToolTip(tr("after the first rank's arrival"));
  ranks_->verticalHeader()->hide();
  ranks_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  ranks_->horizontalHeader()->setStretchLastSection(true);
  ranks_->verticalHeader()->setDefaultSectionSize(ranks_->fontMetrics().height() + 6);  // one text line per rank
  ranks_->resizeColumnsToContents();  // the headers' width until a collective fills it
  layout->addWidget(title_);
  layout->addWidget(fields_, 3);
  ranks_label_ = new QLabel(tr("Same collective on every rank:"), this);
  layout->addWidget(ranks_label_);
  layout->addWidget(ranks_, 2);
}

void DetailsPanel::setRun(std::shared_ptr<const RunData> run) {
  run_ = std::move(run);
  showCollective(kNoInstance);
}

void DetailsPanel::showCollective(std::uint32_t event) {
  title_->setProperty("point_to_point", false);
  ranks_->show();
  ranks_label_->show();
  fields_->clear();
  ranks_->setRowCount(0);
  if (!run_ || event >= run_->model().collective_count()) {
    title_->setText(tr("Click a collective or a point-to-point call to see its details"));
    return;
  }
  const auto& m = run_->model();
  const auto e = m.collective(event);
  const auto& call = m.call(event);
  const auto& rank = run_->run().ranks[e.rank_index];
  const auto& comm = run_->run().communicators[call.comm];
  // A field: its value short, what it means in the tooltip.
  auto add = [&](const std::string& name, const std::string& value, const std::string& meaning = {}) {
    auto* item = new QTreeWidgetItem({QString::fromStdString(name), QString::fromStdString(value)});
    if (!meaning.empty()) {
      item->setToolTip(0, QString::fromStdString(meaning));
      item->setToolTip(1, QString::fromStdString(meaning));
    }
    fields_->addTopLevelItem(item);
  };
  title_->setText(QString::fromStdString(fmt::format("<b>{}</b> {} on rank {} ({})", store::op_name(e.op),
                                                     format_bytes(double(e.bytes)), rank.world_rank, rank.host)));
  add("op", std::string(store::op_name(e.op)));
  add("rank", std::to_string(rank.world_rank));
  add("host", rank.host);
  add("start", format_duration(double(e.start_ns)), fmt::format("{} ns of run time (since the earliest tracer start)", e.start_ns));
  add("duration", format_duration(double(e.end_ns - e.start_ns)));
  if (e.flags & kCallInFlight)
    add("state", "in flight: never returned", "the job hung in this call; its duration runs to the last time the tracer saw it");
  if (e.fusion_fill_percent) add("fusion buffer fill", fmt::format("{} %", e.fusion_fill_percent));
  add("seq", std::to_string(call.seq));
  add("communicator", comm.shown_name().empty() ? std::string("unnamed") : comm.shown_name(),
      fmt::format("{} communicator of {} ranks, key {:016x}, recorded as {}", store::backend_name(comm.backend),
                  comm.size, comm.key, comm.name.empty() ? "(no name)" : comm.name));
  const auto members = m.members(event);
  std::int64_t last_arrival = std::numeric_limits<std::int64_t>::min(), first_arrival = std::numeric_limits<std::int64_t>::max();
  int last_rank = -1;
  for (const auto id : members) {
    const auto me = m.collective(id);
    first_arrival = std::min(first_arrival, me.start_ns);
    if (me.start_ns > last_arrival) last_arrival = me.start_ns, last_rank = me.rank_index;
  }
  std::string ranks_in_call = fmt::format("{} of {}", members.size(), comm.size);
  if (run_->windowed && e.instance != kNoInstance) {
    // A window holds the calls of its ranks only: the arrivals are the instance's, over the whole run.
    const auto& inst = m.matched().instances[e.instance];
    first_arrival = m.run_time(inst.first_arrival_ns);
    last_arrival = m.run_time(inst.last_arrival_ns);
    last_rank = run_->run().rank_index(inst.last_arriver);
    ranks_in_call = fmt::format("{} of {} ({} loaded, listed below)", inst.ranks, comm.size, members.size());
  }
  add("ranks in call", ranks_in_call);
  // Wait: from this rank's arrival to the last rank's. After it: the rest of this rank's call once every rank had
  // arrived (the transfer, its completion, and any time the rank was descheduled), never a negative time.
  add("wait", format_duration(double(std::max<std::int64_t>(0, last_arrival - e.start_ns))),
      "from this rank's arrival to the last rank's arrival");
  add("last arrival", fmt::format("rank {}", run_->run().ranks[last_rank].world_rank));
  add("arrival spread", format_duration(double(last_arrival - first_arrival)), "the last arrival minus the first");
  const std::int64_t after_last = e.end_ns - std::max(e.start_ns, last_arrival);
  if (after_last >= 0)
    add("after last arrival", format_duration(double(after_last)),
        "the rest of this rank's call once every rank had arrived: the transfer, its completion, and any time the "
        "rank was descheduled (not the transfer alone)");
  else
    add("after last arrival", fmt::format("none (left {} before)", format_duration(double(-after_last))),
        "this rank left the call before the last rank arrived: the op does not wait for every rank (a bcast root, "
        "a non-blocking call)");
  if (e.instance != kNoInstance) {
    const auto& inst = m.matched().instances[e.instance];
    add("transfer time", format_duration(double(inst.duration_ns)),
        "the shortest call of any rank: what no rank could avoid (it does not depend on clock alignment)");
    add("busbw", inst.duration_ns > 0 && inst.bytes > 0 && inst.ranks > 1 ? run::format_bandwidth(inst.busbw_gbps()) : "—",
        "bus bandwidth (nccl-tests definition): bytes / transfer time × the op's factor (allreduce 2(n−1)/n); GB/s "
        "is 10^9 bytes per second");
  }
  ranks_->setRowCount(static_cast<int>(members.size()));
  for (std::size_t k = 0; k < members.size(); ++k) {
    const auto me = m.collective(members[k]);
    const std::string cells[] = {std::to_string(run_->run().ranks[me.rank_index].world_rank),
                                 "+" + format_duration(double(me.start_ns - first_arrival)),
                                 format_duration(double(std::max<std::int64_t>(0, last_arrival - me.start_ns))),
                                 format_duration(double(me.end_ns - me.start_ns)), format_bytes(double(me.bytes)),
                                 (me.flags & kCallInFlight) ? "in flight" : me.start_ns == last_arrival ? "last" : ""};
    for (int c = 0; c < 6; ++c) {
      auto* item = new QTableWidgetItem(QString::fromStdString(cells[c]));
      if (c == 1) item->setToolTip(QString::fromStdString(fmt::format("arrived at {} ns of run time", me.start_ns)));
      ranks_->setItem(static_cast<int>(k), c, item);
    }
  }
  // Columns as wide as their text, so that all six fit the dock without scrolling sideways.
  ranks_->resizeColumnsToContents();
  for (const auto& [name, value] : recorded_fields(run_->run(), e.rank_index, call, e.flags & kCallInFlight))
    add("recorded." + name, value);
  fields_->resizeColumnToContents(0);
}

void DetailsPanel::showPointToPoint(std::uint32_t call) {
  if (!run_ || call >= run_->model().point_to_point_count()) {
    // A cleared point-to-point selection leaves a collective's details alone.
    if (title_->property("point_to_point").toBool()) showCollective(kNoInstance);
    title_->setProperty("point_to_point", false);
    return;
  }
  fields_->clear();
  ranks_->setRowCount(0);
  ranks_->hide();  // a point-to-point call has no instance on other ranks: its peer is in the fields
  ranks_label_->hide();
  const auto& m = run_->model();
  title_->setProperty("point_to_point", true);
  title_->setText(QString::fromStdString(point_to_point_summary(m, call)).toHtmlEscaped().replace('\n', "<br>"));
  for (const auto& f : point_to_point_fields(m, call)) {
    auto* item = new QTreeWidgetItem({QString::fromStdString(f.name), QString::fromStdString(f.value)});
    if (!f.meaning.empty()) {
      item->setToolTip(0, QString::fromStdString(f.meaning));
      item->setToolTip(1, QString::fromStdString(f.meaning));
    }
    fields_->addTopLevelItem(item);
  }
  fields_->resizeColumnToContents(0);
}

QString DetailsPanel::fieldValue(const QString& name) const {
  for (int i = 0; i < fields_->topLevelItemCount(); ++i)
    if (fields_->topLevelItem(i)->text(0) == name) return fields_->topLevelItem(i)->text(1);
  return {};
}

}  // namespace collscope::gui
