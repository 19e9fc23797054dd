// The timeline's state: rows (counters, hosts, ranks, lanes; collapsed and pinned), the visible range and its
// history, the selection. Painting is in timeline_paint.cpp, mouse and keys in timeline_input.cpp.
#include <collscope/gui/timeline_view.hpp>
#include <collscope/run/wait_states.hpp>

#include "timeline_layout.hpp"

#include <algorithm>
#include <optional>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>

namespace collscope::gui {

using namespace timeline;

namespace {

QColor name_color(std::uint32_t name) {
  // Stable, distinct hues for kernel and NVTX names (golden-angle walk).
  const int hue = static_cast<int>((name * 137.508)) % 360;
  return QColor::fromHsv(hue, 110, 215);
}

constexpr std::size_t kMaxHistory = 100;

}  // namespace

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setMinimumSize(400, 200);
  setAttribute(Qt::WA_OpaquePaintEvent);
}

void TimelineView::setRun(std::shared_ptr<const RunData> run, bool keep_range) {
  const bool same_model = run_ && run && run_->timeline == run->timeline;
  // Another window of the same windowed run: the same ranks and hosts, other events (and ids, and lanes). The
  // selected collective is found again by its rank, communicator and seq when the new window holds it, pinned
  // lanes by their rank, kind and key.
  const bool same_run = same_model || (run_ && run && run_->windowed && run_->windowed == run->windowed);
  std::optional<std::pair<int, run::CollectiveCall>> selected_call;
  std::vector<std::tuple<int, LaneKind, std::int64_t>> pinned;
  if (!same_model && same_run && keep_range) {
    if (selected_ != kNoInstance)
      selected_call.emplace(run_->model().rank_of_collective(selected_), run_->model().call(selected_));
    for (std::size_t l = 0; l < lane_pinned_.size(); ++l)
      if (lane_pinned_[l]) {
        const auto& lane = run_->model().lanes()[l];
        pinned.emplace_back(lane.rank_index, lane.kind, lane.key);
      }
  }
  if (!same_model && same_run && keep_range) {
    selected_ = hovered_ = selected_p2p_ = kNoInstance;
    selected_messages_.clear();
  }
  run_ = std::move(run);
  if (!same_run || !keep_range) {
    selected_ = kNoInstance;
    selected_p2p_ = kNoInstance;
    selected_messages_.clear();
    hovered_ = kNoInstance;
    highlighted_ranks_.clear();
    search_.reset();
    range_a_ = range_b_ = -1;
    back_.clear();
    forward_.clear();
  }
  name_rgb_.clear();
  name_rgb_dark_.clear();
  host_ranks_.clear();
  rank_lanes_.clear();
  ops_present_.clear();
  if (run_) {
    const auto& m = run_->model();
    for (std::uint32_t n = 0; n < m.names().size(); ++n) {
      name_rgb_.push_back(name_color(n).rgb());
      name_rgb_dark_.push_back(name_color(n).darker(115).rgb());
    }
    const std::size_t ranks = m.run().ranks.size();
    const auto& host_of = m.clocks().host_of_rank;
    host_ranks_.resize(std::max<std::size_t>(1, m.clocks().hosts.size()));
    for (std::size_t r = 0; r < ranks; ++r)
      host_ranks_[r < host_of.size() ? static_cast<std::size_t>(host_of[r]) : 0].push_back(static_cast<int>(r));
    rank_lanes_.resize(ranks);
    std::vector<char> seen(store::kOpCount, 0);
    for (const auto& inst : m.matched().instances) seen[static_cast<int>(inst.op) % store::kOpCount] = 1;
    for (const auto& rank : m.run().ranks)
      for (const auto& f : rank.calls_in_flight) seen[static_cast<int>(f.call.op) % store::kOpCount] = 1;
    // Point-to-point calls by family, as they are coloured: send (every send mode), recv, sendrecv.
    for (const auto& rank : m.run().ranks)
      for (const auto& c : rank.point_to_point)
        seen[static_cast<int>(c.sends() && c.receives() ? store::Op::Sendrecv
                              : c.sends()               ? store::Op::Send
                              : run::is_message_receive(c.op) ? store::Op::Recv
                                                              : store::blocking_form(c.op))] = 1;
    ops_present_.clear();
    for (int o = 0; o < store::kOpCount; ++o)
      if (seen[o]) ops_present_.push_back(static_cast<store::Op>(o));
    for (std::size_t l = 0; l < m.lanes().size(); ++l) rank_lanes_[m.lanes()[l].rank_index].push_back(static_cast<int>(l));
    if (!same_run) {
      host_collapsed_.assign(host_ranks_.size(), 0);
      rank_collapsed_.assign(ranks, 0);
    }
    if (!same_model) lane_pinned_.assign(m.lanes().size(), 0);
    for (std::size_t l = 0; l < m.lanes().size() && !pinned.empty(); ++l)
      if (std::find(pinned.begin(), pinned.end(), std::tuple{m.lanes()[l].rank_index, m.lanes()[l].kind, m.lanes()[l].key}) !=
          pinned.end())
        lane_pinned_[l] = 1;
    if (selected_call)
      for (const auto id : m.members_of(selected_call->second.comm, selected_call->second.seq))
        if (m.rank_of_collective(id) == selected_call->first) selected_ = id;
  }
  layoutRows();
  if (!keep_range) {
    const double total = run_ ? std::max<double>(run_->model().duration_ns(), 1000) : 1000;
    setVisibleRange(-0.01 * total, total * 1.01);
  }
  emit historyChanged();
  update();
}

int TimelineView::scrolledTop() const { return kHeaderHeight + pinned_height_; }
int TimelineView::plotBottom() const { return height() - kLegendHeight; }
int TimelineView::screenTop(const Row& row) const { return row.pinned ? row.top : scrolledTop() - scroll_y_ + row.top; }

void TimelineView::layoutRows() {
  rows_.clear();
  pinned_height_ = content_height_ = 0;
  if (!run_) {
    clampVerticalScroll();
    return;
  }
  const auto& m = run_->model();
  const auto& lanes = m.lanes();
  lane_row_.assign(lanes.size(), -1);
  rank_row_.assign(m.run().ranks.size(), -1);
  host_row_.assign(host_ranks_.size(), -1);
  auto lane_height = [&](int l) { return lanes[l].kind == LaneKind::Collectives ? kCollectiveLaneHeight : kSpanLaneHeight; };

  // Pinned: the counter tracks, then pinned lanes.
  int y = kHeaderHeight;
  if (run_->summaries) {
    for (int counter : {0, 1}) {
      const auto& series = counter == 0 ? run_->summaries->step_ns : run_->summaries->busbw_gbps;
      if (series.t_ns.empty()) continue;
      rows_.push_back({RowKind::Counter, counter, y, kCounterHeight, true});
      y += kCounterHeight;
    }
  }
  for (std::size_t l = 0; l < lanes.size(); ++l)
    if (lane_pinned_[l]) {
      lane_row_[l] = static_cast<int>(rows_.size());
      rows_.push_back({RowKind::Lane, static_cast<int>(l), y, lane_height(static_cast<int>(l)), true});
      y += rows_.back().height;
    }
  pinned_height_ = y - kHeaderHeight;

  // Scrolled: hosts, each with its ranks (a summary row each) and their lanes.
  const std::size_t first_scrolled = rows_.size();
  int lane_px = 0, other_px = 0;
  for (std::size_t h = 0; h < host_ranks_.size(); ++h) {
    if (host_ranks_[h].empty()) continue;
    host_row_[h] = static_cast<int>(rows_.size());
    rows_.push_back({RowKind::Host, static_cast<int>(h), 0, kHostRowHeight, false});
    other_px += kHostRowHeight;
    if (host_collapsed_[h]) continue;
    for (const int r : host_ranks_[h]) {
      rank_row_[r] = static_cast<int>(rows_.size());
      rows_.push_back({RowKind::Rank, r, 0, kRankRowHeight, false});
      other_px += kRankRowHeight;
      if (rank_collapsed_[r]) continue;
      for (const int l : rank_lanes_[r]) {
        if (lane_pinned_[l]) continue;
        lane_row_[l] = static_cast<int>(rows_.size());
        rows_.push_back({RowKind::Lane, l, 0, lane_height(l), false});
        lane_px += rows_.back().height;
      }
    }
  }
  // A run of few ranks would leave most of the window empty: its lanes grow to fill it (up to kMaxFill).
  const int room = plotBottom() - scrolledTop();
  const double fill = lane_px > 0 && lane_px + other_px < room
                          ? std::min(kMaxFill, double(room - other_px) / double(lane_px))
                          : 1.0;
  int cy = 0;
  for (std::size_t k = first_scrolled; k < rows_.size(); ++k) {
    auto& row = rows_[k];
    if (row.kind == RowKind::Lane) row.height = static_cast<int>(std::floor(row.height * fill));
    row.top = cy;
    cy += row.height;
  }
  content_height_ = cy;
  clampVerticalScroll();
}

void TimelineView::clampVerticalScroll() {
  const int room = plotBottom() - scrolledTop();
  scroll_y_ = std::clamp(scroll_y_, 0, std::max(0, content_height_ - room));
  if (scroll_y_ != announced_scroll_y_) {
    announced_scroll_y_ = scroll_y_;
    emit rowsScrolled();
  }
}

std::pair<int, int> TimelineView::visibleRanks() const {
  if (!run_) return {0, 0};
  const int room = plotBottom() - scrolledTop();
  int first = -1, last = -1;
  auto begin = std::find_if(rows_.begin(), rows_.end(), [](const Row& r) { return !r.pinned; });
  auto it = std::upper_bound(begin, rows_.end(), scroll_y_, [](int v, const Row& r) { return v < r.top; });
  if (it != begin) --it;
  const auto& lanes = run_->model().lanes();
  for (; it != rows_.end() && it->top < scroll_y_ + room; ++it) {
    const int rank = it->kind == RowKind::Rank ? it->index
                     : it->kind == RowKind::Lane ? lanes[static_cast<std::size_t>(it->index)].rank_index
                                                 : -1;
    if (rank < 0) continue;
    first = first < 0 ? rank : std::min(first, rank);
    last = std::max(last, rank);
  }
  return first < 0 ? std::pair{0, 0} : std::pair{first, last + 1};
}

std::vector<int> TimelineView::pinnedRanks() const {
  std::vector<int> out;
  if (!run_) return out;
  for (std::size_t l = 0; l < lane_pinned_.size(); ++l)
    if (lane_pinned_[l]) out.push_back(run_->model().lanes()[l].rank_index);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool TimelineView::visibleEventsLoaded() const {
  if (!run_ || !run_->windowed) return true;
  const auto [first, last] = visibleRanks();
  return first == last || run_->window.contains({.rank_begin = first,
                                                 .rank_end = last,
                                                 .pinned_ranks = pinnedRanks(),
                                                 .start_ns = std::max<std::int64_t>(0, visibleStart()),
                                                 .end_ns = std::min(visibleEnd(), run_->model().duration_ns())});
}

int TimelineView::laneCount() const { return run_ ? static_cast<int>(run_->model().lanes().size()) : 0; }
int TimelineView::visibleLaneCount() const {
  return static_cast<int>(std::count_if(lane_row_.begin(), lane_row_.end(), [](int r) { return r >= 0; }));
}
double TimelineView::plotWidth() const { return std::max(1, width() - kLabelWidth); }
double TimelineView::timeToX(double t) const { return kLabelWidth + (t - t0_) / (t1_ - t0_) * plotWidth(); }
double TimelineView::xToTime(double x) const { return t0_ + (x - kLabelWidth) / plotWidth() * (t1_ - t0_); }

const TimelineView::Row* TimelineView::rowAt(double y) const {
  if (y < kHeaderHeight || y >= plotBottom()) return nullptr;
  for (const auto& row : rows_) {
    if (!row.pinned) break;
    if (y >= row.top && y < row.top + row.height) return &row;
  }
  if (y < scrolledTop()) return nullptr;
  const double content_y = y - scrolledTop() + scroll_y_;
  auto first = std::find_if(rows_.begin(), rows_.end(), [](const Row& r) { return !r.pinned; });
  auto it = std::upper_bound(first, rows_.end(), content_y, [](double v, const Row& r) { return v < r.top; });
  if (it == first) return nullptr;
  --it;
  return content_y < it->top + it->height ? &*it : nullptr;
}

int TimelineView::laneAt(double y) const {
  const Row* row = rowAt(y);
  return row && row->kind == RowKind::Lane ? row->index : -1;
}

int TimelineView::laneCentre(int lane) const {
  if (lane < 0 || lane >= static_cast<int>(lane_row_.size()) || lane_row_[lane] < 0) return -1;
  const auto& row = rows_[lane_row_[lane]];
  return screenTop(row) + row.height / 2;
}

int TimelineView::rankRowCentre(int rank_index) const {
  if (rank_index < 0 || rank_index >= static_cast<int>(rank_row_.size()) || rank_row_[rank_index] < 0) return -1;
  const auto& row = rows_[rank_row_[rank_index]];
  return screenTop(row) + row.height / 2;
}

int TimelineView::hostRowCentre(int host) const {
  if (host < 0 || host >= static_cast<int>(host_row_.size()) || host_row_[host] < 0) return -1;
  const auto& row = rows_[host_row_[host]];
  return screenTop(row) + row.height / 2;
}

void TimelineView::setHostCollapsed(int host, bool collapsed) {
  if (host < 0 || host >= static_cast<int>(host_collapsed_.size())) return;
  host_collapsed_[host] = collapsed;
  layoutRows();
  update();
}

void TimelineView::setRankCollapsed(int rank_index, bool collapsed) {
  if (rank_index < 0 || rank_index >= static_cast<int>(rank_collapsed_.size())) return;
  rank_collapsed_[rank_index] = collapsed;
  layoutRows();
  update();
}

bool TimelineView::rankCollapsed(int rank_index) const {
  return rank_index >= 0 && rank_index < static_cast<int>(rank_collapsed_.size()) && rank_collapsed_[rank_index];
}

void TimelineView::setLanePinned(int lane, bool pinned) {
  if (lane < 0 || lane >= static_cast<int>(lane_pinned_.size())) return;
  lane_pinned_[lane] = pinned;
  layoutRows();
  update();
}

bool TimelineView::lanePinned(int lane) const {
  return lane >= 0 && lane < static_cast<int>(lane_pinned_.size()) && lane_pinned_[lane];
}

void TimelineView::setVisibleRange(double start_ns, double end_ns) {
  const double total = run_ ? std::max<double>(run_->model().duration_ns(), 1000) : 1000;
  double span = std::clamp(end_ns - start_ns, 10.0, total * 1.2);  // 10 ns at the deepest zoom
  double mid = (start_ns + end_ns) / 2;
  mid = std::clamp(mid, -0.1 * total + span / 2 - span, total * 1.1 - span / 2 + span);
  t0_ = mid - span / 2;
  t1_ = mid + span / 2;
  update();
  emit visibleRangeChanged(visibleStart(), visibleEnd());
}

void TimelineView::rememberRange() {
  if (!back_.empty() && back_.back() == std::pair(t0_, t1_)) return;
  back_.emplace_back(t0_, t1_);
  if (back_.size() > kMaxHistory) back_.erase(back_.begin());
  forward_.clear();
  emit historyChanged();
}

void TimelineView::jumpTo(double start_ns, double end_ns) {
  rememberRange();
  setVisibleRange(start_ns, end_ns);
}

bool TimelineView::back() {
  if (back_.empty()) return false;
  forward_.emplace_back(t0_, t1_);
  const auto [a, b] = back_.back();
  back_.pop_back();
  setVisibleRange(a, b);
  emit historyChanged();
  return true;
}

bool TimelineView::forward() {
  if (forward_.empty()) return false;
  back_.emplace_back(t0_, t1_);
  const auto [a, b] = forward_.back();
  forward_.pop_back();
  setVisibleRange(a, b);
  emit historyChanged();
  return true;
}

void TimelineView::zoomToFit() {
  const double total = run_ ? std::max<double>(run_->model().duration_ns(), 1000) : 1000;
  jumpTo(-0.01 * total, total * 1.01);
}

void TimelineView::zoomAround(double factor, double x) {
  const double anchor = xToTime(std::clamp<double>(x, kLabelWidth, width()));
  setVisibleRange(anchor - (anchor - t0_) * factor, anchor + (t1_ - anchor) * factor);
}

void TimelineView::panByPixels(double dx) {
  const double dt = dx / plotWidth() * (t1_ - t0_);
  setVisibleRange(t0_ + dt, t1_ + dt);
}

std::uint32_t TimelineView::selectedInstance() const {
  return run_ && selected_ < run_->model().collective_count() ? run_->model().instance_of_collective(selected_) : kNoInstance;
}

void TimelineView::zoomToSelection() {
  if (hasRange()) {
    jumpTo(range_a_, range_b_);
    return;
  }
  if (!run_ || selected_ >= run_->model().collective_count()) return;
  // From the first arrival to the last exit of the selected call on every rank.
  std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = std::numeric_limits<std::int64_t>::min();
  for (const auto m : run_->model().members(selected_)) {
    const auto e = run_->model().collective(m);
    first = std::min(first, e.start_ns);
    last = std::max(last, e.end_ns);
  }
  const double w = std::max<double>(last - first, 100);
  jumpTo(first - 0.25 * w, last + 0.25 * w);
}

void TimelineView::selectCollective(std::uint32_t event) {
  if (!run_ || event >= run_->model().collective_count()) event = kNoInstance;
  if (event != kNoInstance && (selected_p2p_ != kNoInstance || !selected_messages_.empty())) {
    selected_p2p_ = kNoInstance;
    selected_messages_.clear();
    emit pointToPointSelected(kNoInstance);
  }
  if (event == selected_) return;
  selected_ = event;
  if (event != kNoInstance)
    revealLane(run_->model().rank_of_collective(event), static_cast<int>(run_->model().lane_of_collective(event)));
  update();
  emit collectiveSelected(event);
}

void TimelineView::selectPointToPoint(std::uint32_t call) {
  if (!run_ || call >= run_->model().point_to_point_count()) call = kNoInstance;
  if (selected_ != kNoInstance) selectCollective(kNoInstance);
  selected_p2p_ = call;
  selected_messages_ = call == kNoInstance ? std::vector<std::uint32_t>{} : run_->model().messages().messages_of_call(call);
  if (call != kNoInstance)
    revealLane(run_->model().rank_of_point_to_point(call), static_cast<int>(run_->model().lane_of_point_to_point(call)));
  update();
  emit pointToPointSelected(call);
}

void TimelineView::selectMessages(std::vector<std::uint32_t> messages) {
  if (selected_ != kNoInstance) selectCollective(kNoInstance);
  std::sort(messages.begin(), messages.end());
  selected_p2p_ = kNoInstance;
  selected_messages_ = std::move(messages);
  update();
  emit pointToPointSelected(kNoInstance);
}

void TimelineView::revealLane(int r, int lane) {
  const auto& host_of = run_->model().clocks().host_of_rank;
  const int h = r < static_cast<int>(host_of.size()) ? host_of[r] : 0;
  if (rank_collapsed_[r] || host_collapsed_[h]) {
    rank_collapsed_[r] = host_collapsed_[h] = 0;
    layoutRows();
  }
  if (lane_row_[lane] >= 0 && !rows_[lane_row_[lane]].pinned) {
    const auto& row = rows_[lane_row_[lane]];
    const int room = plotBottom() - scrolledTop();
    if (row.top < scroll_y_ || row.top + row.height > scroll_y_ + room) scroll_y_ = row.top - room / 3;
    clampVerticalScroll();
  }
}

void TimelineView::revealRank(int r) {
  if (!run_ || r < 0 || r >= static_cast<int>(rank_row_.size())) return;
  const auto& host_of = run_->model().clocks().host_of_rank;
  const int h = r < static_cast<int>(host_of.size()) ? host_of[r] : 0;
  if (host_collapsed_[h]) {
    host_collapsed_[h] = 0;
    layoutRows();
  }
  if (rank_row_[r] < 0) return;
  const int room = plotBottom() - scrolledTop();
  const auto& row = rows_[rank_row_[r]];
  if (row.top < scroll_y_ || row.top + row.height > scroll_y_ + room) scroll_y_ = row.top - room / 3;
  clampVerticalScroll();
  update();
}

void TimelineView::clearSelection() {
  const bool had_range = hasRange() || range_a_ >= 0;
  range_a_ = range_b_ = -1;
  highlighted_ranks_.clear();
  search_.reset();
  selectCollective(kNoInstance);
  if (selected_p2p_ != kNoInstance || !selected_messages_.empty()) selectPointToPoint(kNoInstance);
  if (had_range) emit rangeSelected(0, 0);
  update();
}

void TimelineView::setHighlightedRanks(std::vector<int> rank_indices) {
  highlighted_ranks_ = std::move(rank_indices);
  update();
}

void TimelineView::setSearch(std::shared_ptr<const SearchQuery> query) {
  search_ = std::move(query);
  update();
}

void TimelineView::setRange(double start_ns, double end_ns) {
  range_a_ = std::min(start_ns, end_ns);
  range_b_ = std::max(start_ns, end_ns);
  if (run_ && hasRange())
    range_totals_ = range_totals(run_->model(), static_cast<std::int64_t>(range_a_), static_cast<std::int64_t>(range_b_));
  update();
  emit rangeSelected(static_cast<std::int64_t>(range_a_), static_cast<std::int64_t>(range_b_));
}

void TimelineView::clearRange() {
  range_a_ = range_b_ = -1;
  update();
  emit rangeSelected(0, 0);
}

QPointF TimelineView::pointOfCollective(std::uint32_t event) const {
  if (!run_ || event >= run_->model().collective_count()) return {};
  const auto e = run_->model().collective(event);
  const double x = timeToX((e.start_ns + e.end_ns) / 2.0);
  const int y = laneCentre(e.lane);
  if (y < 0) return {};
  const auto& row = rows_[lane_row_[e.lane]];
  if (x < kLabelWidth || x >= width() || y >= plotBottom() || (!row.pinned && y < scrolledTop())) return {};
  return {x, double(y)};
}

std::uint32_t TimelineView::collectiveAt(QPointF pos) const {
  if (!run_ || pos.x() < kLabelWidth) return kNoInstance;
  const int l = laneAt(pos.y());
  const auto& m = run_->model();
  if (l < 0 || m.lanes()[l].kind != LaneKind::Collectives) return kNoInstance;
  const auto& lane = m.lanes()[l];
  const double t = xToTime(pos.x());
  const double tolerance = 3.0 / plotWidth() * (t1_ - t0_);  // 3 px
  std::uint32_t best = kNoInstance;
  double best_distance = tolerance;
  for (std::uint32_t i = m.first_ending_after(lane, static_cast<std::int64_t>(t - tolerance));
       i < lane.end && m.start_at(lane, i) <= t + tolerance; ++i) {
    const double start = m.start_at(lane, i), end = m.end_at(lane, i);
    const double d = t < start ? start - t : t > end ? t - end : 0;
    if (d <= best_distance) best_distance = d, best = m.id_at(LaneKind::Collectives, i);
    if (d == 0) break;
  }
  return best;
}

std::uint32_t TimelineView::pointToPointAt(QPointF pos) const {
  if (!run_ || pos.x() < kLabelWidth) return kNoInstance;
  const int l = laneAt(pos.y());
  const auto& m = run_->model();
  if (l < 0 || m.lanes()[l].kind != LaneKind::Collectives) return kNoInstance;
  const auto& track = m.point_to_point_track(static_cast<std::size_t>(l));
  const double t = xToTime(pos.x());
  const double tolerance = 3.0 / plotWidth() * (t1_ - t0_);  // 3 px
  // A non-blocking call is hit where it was inside MPI (posting, completion), not across the work it overlapped.
  // Where several are (the requests one MPI_Waitall completes), the one that waited for its peer is the answer:
  // it is what the time there was spent on.
  const auto& messages = m.messages();
  auto waited = [&](std::uint32_t id) {
    for (const auto msg : messages.messages_of_call(id))
      if (const auto* w = messages.wait_of(msg)) {
        const auto mm = messages.message(msg);
        if ((w->state == run::WaitState::LateSender ? mm.recv : mm.send) == id) return true;
      }
    return false;
  };
  std::uint32_t best = kNoInstance;
  double best_distance = tolerance;
  bool best_waited = false;
  for (std::uint32_t i = m.first_ending_after(track, static_cast<std::int64_t>(t - tolerance));
       i < track.end && m.start_at(track, i) <= t + tolerance; ++i) {
    const auto& c = m.point_to_point_at(track, i);
    const auto spans = run::spans_in_mpi(c);
    const std::uint32_t id = m.id_at(LaneKind::PointToPoint, i);
    for (const auto& span : {spans.post, spans.completion}) {
      const double start = m.run_time(track.rank_index, span.start_ns), end = m.run_time(track.rank_index, span.end_ns);
      if (span.length() == 0 && spans.nonblocking) continue;
      const double d = t < start ? start - t : t > end ? t - end : 0;
      if (d > best_distance || (d == best_distance && best_waited)) continue;
      best_distance = d, best = id, best_waited = waited(id);
    }
  }
  return best;
}

QPointF TimelineView::pointOfPointToPoint(std::uint32_t call) const {
  if (!run_ || call >= run_->model().point_to_point_count()) return {};
  const auto& m = run_->model();
  const auto& c = m.point_to_point(call);
  const int r = m.rank_of_point_to_point(call);
  const auto spans = run::spans_in_mpi(c);
  const auto& where = spans.nonblocking && spans.completion.length() > 0 ? spans.completion : spans.post;
  const double x = timeToX((m.run_time(r, where.start_ns) + m.run_time(r, where.end_ns)) / 2.0);
  const int lane = static_cast<int>(m.lane_of_point_to_point(call));
  const int y = laneCentre(lane);
  if (y < 0) return {};
  const auto& row = rows_[lane_row_[lane]];
  if (x < kLabelWidth || x >= width() || y >= plotBottom() || (!row.pinned && y < scrolledTop())) return {};
  return {x, double(y)};
}

void TimelineView::resizeEvent(QResizeEvent*) { layoutRows(); }

}  // namespace collscope::gui
