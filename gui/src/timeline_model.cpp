// The timeline's lanes over a collscope::run::Run: per rank one lane per thread with collectives, one per NVTX
// nesting depth and thread, one per GPU stream; each lane's events in start order. Ranks are laid out in
// parallel: a rank's lanes are contiguous, so its events of each kind are one block of the kind's lane order.
#include <collscope/gui/timeline_model.hpp>

#include <collscope/run/parallel.hpp>
#include <collscope/run/workload.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <future>
#include <limits>
#include <numeric>
#include <unordered_map>

namespace collscope::gui {
namespace {

// "main (4711)", "tid 4711", "thread 3" for a thread without a row.
std::string thread_label(const run::RankTrace& rank, std::int64_t id) {
  for (const auto& t : rank.threads)
    if (t.id == id) return t.name.empty() ? fmt::format("tid {}", t.tid) : fmt::format("{} ({})", t.name, t.tid);
  return fmt::format("thread {}", id);
}

// A rank's lanes of one kind: sorted keys, a label each, and per event its lane (index into the keys).
struct KindLanes {
  std::vector<std::int64_t> keys;
  std::vector<std::string> labels;
  std::vector<std::uint32_t> count;  // events per key
};

// Distinct keys of n events (key_of(i)), sorted; the last key is remembered, since neighbours mostly share it.
template <typename KeyOf>
KindLanes lanes_of(std::size_t n, KeyOf&& key_of) {
  KindLanes out;
  std::int64_t last = 0;
  bool have_last = false;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t k = key_of(i);
    if (have_last && k == last) continue;
    if (std::find(out.keys.begin(), out.keys.end(), k) == out.keys.end()) out.keys.push_back(k);
    last = k;
    have_last = true;
  }
  std::sort(out.keys.begin(), out.keys.end());
  out.count.assign(out.keys.size(), 0);
  return out;
}

std::size_t key_index(const std::vector<std::int64_t>& keys, std::int64_t k) {
  return static_cast<std::size_t>(std::lower_bound(keys.begin(), keys.end(), k) - keys.begin());
}

}  // namespace

TimelineModel::TimelineModel(std::shared_ptr<const run::Run> run, run::ClockAlignment clocks, run::MatchedRun matched)
    : run_(std::move(run)), clocks_(std::move(clocks)), matched_(std::move(matched)) {
  build();
  messages_ = std::make_shared<const MessageIndex>(run_, clocks_, p2p_first_);
}

TimelineModel::TimelineModel(std::shared_ptr<const run::Run> run, run::ClockAlignment clocks, run::MatchedRun matched,
                             WholeRun whole)
    : run_(std::move(run)), clocks_(std::move(clocks)), matched_(std::move(matched)) {
  build();
  duration_ns_ = std::max(duration_ns_, whole.duration_ns);
  messages_ = std::make_shared<const MessageIndex>(run_, clocks_, p2p_first_, std::move(whole.messages),
                                                   std::move(whole.waits), std::move(whole.matrix));
}

TimelineModel::TimelineModel(std::shared_ptr<const run::Run> run, run::ClockAlignment clocks)
    : run_(std::move(run)), clocks_(std::move(clocks)) {
  // Matching (one thread, ~0.1 s per million calls) and the lanes (ranks in parallel) need only the run and its
  // clocks: side by side they take the longer of the two, not the sum.
  // Messages (run/'s matching and wait states) likewise, once the point-to-point ids are numbered.
  auto matching = std::async(std::launch::async, [this] { return run::CollectiveMatcher().match(*run_, clocks_); });
  std::vector<std::size_t> p2p_first(run_->ranks.size() + 1, 0);
  for (std::size_t r = 0; r < run_->ranks.size(); ++r) p2p_first[r + 1] = p2p_first[r] + run_->ranks[r].point_to_point.size();
  auto messages = std::async(std::launch::async, [this, p2p_first] {
    return std::make_shared<const MessageIndex>(run_, clocks_, p2p_first);
  });
  try {
    build();
  } catch (...) {
    matching.wait();
    messages.wait();
    throw;
  }
  matched_ = matching.get();
  messages_ = messages.get();
}

void TimelineModel::build() {
  const auto& ranks = run_->ranks;
  const std::size_t n = ranks.size();
  shift_.resize(n);
  for (std::size_t r = 0; r < n; ++r) shift_[r] = clocks_.offset_ns[r] - clocks_.origin_ns;
  fusion_buffers_ = run::describe_workload(*run_).fusion_buffers;
  coll_first_.assign(n + 1, 0);
  nvtx_first_.assign(n + 1, 0);
  gpu_first_.assign(n + 1, 0);
  p2p_first_.assign(n + 1, 0);
  for (std::size_t r = 0; r < n; ++r) {
    p2p_first_[r + 1] = p2p_first_[r] + ranks[r].point_to_point.size();
    coll_first_[r + 1] = coll_first_[r] + ranks[r].collectives.size();
    nvtx_first_[r + 1] = nvtx_first_[r] + ranks[r].nvtx_ranges.size();
    gpu_first_[r + 1] = gpu_first_[r] + ranks[r].gpu_activities.size();
  }
  inflight_base_ = coll_first_[n];
  nvtx_total_ = nvtx_first_[n];
  gpu_total_ = gpu_first_[n];
  p2p_total_ = p2p_first_[n];
  std::vector<std::size_t> inflight_first(n + 1, 0);
  for (std::size_t r = 0; r < n; ++r) {
    inflight_first[r] = inflight_.size();
    for (std::uint32_t k = 0; k < ranks[r].calls_in_flight.size(); ++k) inflight_.push_back({static_cast<int>(r), k});
  }
  inflight_first[n] = inflight_.size();
  if (collective_count() >= kNoInstance || nvtx_total_ >= kNoInstance || gpu_total_ >= kNoInstance ||
      p2p_total_ >= kNoInstance)
    throw InputError(fmt::format("{}: more than 2^32 events of one kind: too many for the viewer", run_->dir));

  // Each rank's lanes, ranks in parallel. Kind 3 (point-to-point) has kind 0's keys: a thread's calls of both
  // share its lane.
  std::vector<std::array<KindLanes, 4>> kinds(n);
  run::parallel_for(n, [&](std::size_t r) {
    const auto& rank = ranks[r];
    auto& coll = kinds[r][0];
    const auto nc = rank.collectives.size(), nf = rank.calls_in_flight.size(), np = rank.point_to_point.size();
    auto call_at = [&](std::size_t i) -> const run::CollectiveCall& {
      return i < nc ? rank.collectives[i] : rank.calls_in_flight[i - nc].call;
    };
    coll = lanes_of(nc + nf + np, [&](std::size_t i) {
      return std::int64_t{i < nc + nf ? call_at(i).thread : rank.point_to_point[i - nc - nf].thread};
    });
    std::vector<unsigned> backends(coll.keys.size(), 0);  // bit per store::Backend used on the thread
    for (std::size_t i = 0, last = 0; i < nc + nf; ++i) {
      const auto& c = call_at(i);
      if (coll.keys[last] != c.thread) last = key_index(coll.keys, c.thread);
      ++coll.count[last];
      backends[last] |= 1u << static_cast<unsigned>(run_->communicators[c.comm].backend);
    }
    auto& p2p = kinds[r][3];
    p2p.keys = coll.keys;
    p2p.count.assign(coll.keys.size(), 0);
    for (std::size_t i = 0, last = 0; i < np; ++i) {
      const auto thread = rank.point_to_point[i].thread;
      if (coll.keys[last] != thread) last = key_index(coll.keys, thread);
      ++p2p.count[last];
      backends[last] |= 1u << static_cast<unsigned>(store::Backend::Mpi);  // the MPI interposer's calls
    }
    for (std::size_t k = 0; k < coll.keys.size(); ++k) {
      // The backends the thread's calls went through, as their users write them: "MPI", "NCCL", "gloo" (a
      // torch.distributed group on gloo, or gloo's worker running a DDP bucket), "torch" (a custom backend).
      static constexpr const char* kShown[] = {"MPI", "NCCL", "gloo", "torch"};
      std::string what;
      for (unsigned b = 0; b < std::size(kShown); ++b)
        if (backends[k] & (1u << b)) what += (what.empty() ? "" : "+") + std::string(kShown[b]);
      coll.labels.push_back(fmt::format("{} {}", what, thread_label(rank, coll.keys[k])));
    }
    auto& nvtx = kinds[r][1];
    auto nvtx_key = [&](std::size_t i) {
      const auto& s = rank.nvtx_ranges[i];
      return nvtx_lane_key(s.thread, std::clamp(s.depth, 0, 63));
    };
    nvtx = lanes_of(rank.nvtx_ranges.size(), nvtx_key);
    for (std::size_t i = 0, last = 0; i < rank.nvtx_ranges.size(); ++i) {
      if (nvtx.keys[last] != nvtx_key(i)) last = key_index(nvtx.keys, nvtx_key(i));
      ++nvtx.count[last];
    }
    for (const auto k : nvtx.keys) {
      const auto thread = k / 64;
      const auto depth = k % 64;
      nvtx.labels.push_back(depth == 0 ? fmt::format("NVTX {}", thread_label(rank, thread))
                                       : fmt::format("NVTX {} › {}", thread_label(rank, thread), depth + 1));
    }
    auto& gpu = kinds[r][2];
    gpu = lanes_of(rank.gpu_activities.size(), [&](std::size_t i) { return gpu_lane_key(rank.gpu_activities[i]); });
    for (std::size_t i = 0, last = 0; i < rank.gpu_activities.size(); ++i) {
      const auto k = gpu_lane_key(rank.gpu_activities[i]);
      if (gpu.keys[last] != k) last = key_index(gpu.keys, k);
      ++gpu.count[last];
    }
    for (const auto k : gpu.keys) gpu.labels.push_back(fmt::format("GPU {} stream {}", k >> 40, k & 0xffffffffffLL));
  });

  // Display order: by host (first appearance), then world rank (Run::ranks is sorted by world rank).
  std::vector<std::size_t> rank_order(n);
  std::iota(rank_order.begin(), rank_order.end(), 0);
  if (clocks_.host_of_rank.size() == n)
    std::stable_sort(rank_order.begin(), rank_order.end(),
                     [&](std::size_t a, std::size_t b) { return clocks_.host_of_rank[a] < clocks_.host_of_rank[b]; });
  for (auto& per_kind : lane_of_key_) per_kind.assign(n, {});
  std::vector<std::array<std::size_t, 4>> block(n);  // first position of the rank's events, per kind
  std::array<std::size_t, 4> position{0, 0, 0, 0};
  for (const std::size_t r : rank_order) {
    block[r][3] = position[3];
    for (int k = 0; k < 3; ++k) {
      block[r][k] = position[k];
      auto& kl = kinds[r][k];
      for (std::size_t l = 0; l < kl.keys.size(); ++l) {
        if (lanes_.size() >= 0xffff) throw InputError(fmt::format("{}: more than 65535 timeline lanes", run_->dir));
        Lane lane;
        lane.rank_index = static_cast<int>(r);
        lane.kind = static_cast<LaneKind>(k);
        lane.key = kl.keys[l];
        lane.label = std::move(kl.labels[l]);
        lane.begin = static_cast<std::uint32_t>(position[k]);
        position[k] += kl.count[l];
        lane.end = static_cast<std::uint32_t>(position[k]);
        Lane track;
        track.rank_index = lane.rank_index;
        track.kind = LaneKind::PointToPoint;
        track.key = lane.key;
        track.begin = track.end = static_cast<std::uint32_t>(position[3]);
        if (k == 0) {
          position[3] += kinds[r][3].count[l];
          track.end = static_cast<std::uint32_t>(position[3]);
        }
        lane_of_key_[k][r].emplace_back(lane.key, static_cast<std::uint16_t>(lanes_.size()));
        lanes_.push_back(std::move(lane));
        p2p_tracks_.push_back(std::move(track));
      }
    }
  }
  for (int k = 0; k < 4; ++k) {
    order_[k].resize(position[k]);
    start_[k].resize(position[k]);
    max_end_[k].resize(position[k]);
  }

  // Each rank fills its blocks: ids bucketed by lane, sorted by start where a lane is not already.
  std::vector<std::int64_t> rank_end(n, std::numeric_limits<std::int64_t>::min());
  run::parallel_for(n, [&](std::size_t r) {
    const auto& rank = ranks[r];
    const auto shift = shift_[r];
    auto fill = [&](int k, std::size_t count, auto&& key_of, auto&& id_of, auto&& start_of, auto&& end_of) {
      const auto& kl = kinds[r][k];
      std::vector<std::size_t> next(kl.keys.size());
      std::size_t at = block[r][k];
      for (std::size_t l = 0; l < kl.keys.size(); ++l) next[l] = at, at += kl.count[l];
      auto& order = order_[k];
      for (std::size_t i = 0, last = 0; i < count; ++i) {
        const auto key = key_of(i);
        if (kl.keys[last] != key) last = key_index(kl.keys, key);
        order[next[last]++] = id_of(i);
      }
      auto& max_end = max_end_[k];
      auto& start = start_[k];
      std::size_t begin = block[r][k];
      for (std::size_t l = 0; l < kl.keys.size(); ++l) {
        const std::size_t end = begin + kl.count[l];
        auto by_start = [&](std::uint32_t a, std::uint32_t b) { return start_of(a) < start_of(b); };
        if (!std::is_sorted(order.begin() + begin, order.begin() + end, by_start))
          std::stable_sort(order.begin() + begin, order.begin() + end, by_start);
        std::int64_t m = std::numeric_limits<std::int64_t>::min();
        for (std::size_t p = begin; p < end; ++p) {
          start[p] = start_of(order[p]) + shift;
          max_end[p] = m = std::max(m, end_of(order[p]) + shift);
        }
        rank_end[r] = std::max(rank_end[r], m);
        begin = end;
      }
    };
    const auto nc = rank.collectives.size();
    const auto base = coll_first_[r];
    fill(
        0, nc + rank.calls_in_flight.size(),
        [&](std::size_t i) { return std::int64_t{(i < nc ? rank.collectives[i] : rank.calls_in_flight[i - nc].call).thread}; },
        [&](std::size_t i) {
          return static_cast<std::uint32_t>(i < nc ? base + i : inflight_base_ + inflight_first[r] + (i - nc));
        },
        [&](std::uint32_t id) { return call_of(static_cast<int>(r), id).start_ns; },
        [&](std::uint32_t id) { return call_of(static_cast<int>(r), id).end_ns; });
    const auto& nv = rank.nvtx_ranges;
    fill(
        1, nv.size(), [&](std::size_t i) { return nvtx_lane_key(nv[i].thread, std::clamp(nv[i].depth, 0, 63)); },
        [&](std::size_t i) { return static_cast<std::uint32_t>(nvtx_first_[r] + i); },
        [&](std::uint32_t id) { return nv[id - nvtx_first_[r]].start_ns; },
        [&](std::uint32_t id) { return std::max(nv[id - nvtx_first_[r]].end_ns, nv[id - nvtx_first_[r]].start_ns); });
    const auto& pp = rank.point_to_point;
    fill(
        3, pp.size(), [&](std::size_t i) { return std::int64_t{pp[i].thread}; },
        [&](std::size_t i) { return static_cast<std::uint32_t>(p2p_first_[r] + i); },
        [&](std::uint32_t id) { return pp[id - p2p_first_[r]].start_ns; },
        [&](std::uint32_t id) { return std::max(pp[id - p2p_first_[r]].end_ns, pp[id - p2p_first_[r]].start_ns); });
    const auto& g = rank.gpu_activities;
    fill(
        2, g.size(), [&](std::size_t i) { return gpu_lane_key(g[i]); },
        [&](std::size_t i) { return static_cast<std::uint32_t>(gpu_first_[r] + i); },
        [&](std::uint32_t id) { return g[id - gpu_first_[r]].start_ns; },
        [&](std::uint32_t id) { return std::max(g[id - gpu_first_[r]].end_ns, g[id - gpu_first_[r]].start_ns); });
  });
  duration_ns_ = 0;
  for (const auto e : rank_end) duration_ns_ = std::max(duration_ns_, e);
}

std::uint16_t TimelineModel::lane_of(int kind, int r, std::int64_t key) const {
  for (const auto& [k, lane] : lane_of_key_[kind][r])
    if (k == key) return lane;
  return 0;
}

int TimelineModel::rank_of_collective(std::uint32_t id) const {
  if (id >= inflight_base_) return inflight_[id - inflight_base_].rank_index;
  return static_cast<int>(std::upper_bound(coll_first_.begin(), coll_first_.end(), std::size_t{id}) - coll_first_.begin()) - 1;
}

const run::CollectiveCall& TimelineModel::call(std::uint32_t id) const { return call_of(rank_of_collective(id), id); }

std::uint32_t TimelineModel::lane_of_collective(std::uint32_t id) const {
  const int r = rank_of_collective(id);
  return lane_of(0, r, call_of(r, id).thread);
}

CollectiveEvent TimelineModel::collective(std::uint32_t id) const {
  const int r = rank_of_collective(id);
  return event_of(r, id, lane_of(0, r, call_of(r, id).thread));
}

CollectiveEvent TimelineModel::collective_at(const Lane& lane, std::uint32_t pos) const {
  return event_of(lane.rank_index, order_[0][pos], static_cast<std::uint16_t>(&lane - lanes_.data()));
}

CollectiveEvent TimelineModel::event_of(int r, std::uint32_t id, std::uint16_t lane) const {
  const auto& c = call_of(r, id);
  CollectiveEvent e;
  e.start_ns = c.start_ns + shift_[r];
  e.end_ns = c.end_ns + shift_[r];
  e.bytes = c.bytes;
  e.instance = instance_of(c.comm, c.seq);
  e.lane = lane;
  e.rank_index = static_cast<std::uint16_t>(r);
  e.op = c.op;
  e.fusion_fill_percent = fusion_buffers_ ? c.fusion_fill_pct : 0;
  e.flags = in_flight(id) ? kCallInFlight : 0;
  return e;
}

std::uint32_t TimelineModel::instance_of(std::int32_t comm, std::int32_t seq) const {
  if (comm < 0 || static_cast<std::size_t>(comm) + 1 >= matched_.comm_first.size()) return kNoInstance;
  const auto first = matched_.instances.begin() + static_cast<std::ptrdiff_t>(matched_.comm_first[comm]);
  const auto last = matched_.instances.begin() + static_cast<std::ptrdiff_t>(matched_.comm_first[comm + 1]);
  auto it = std::lower_bound(first, last, seq, [](const run::InstanceSummary& i, std::int32_t s) { return i.seq < s; });
  return it != last && it->seq == seq ? static_cast<std::uint32_t>(it - matched_.instances.begin()) : kNoInstance;
}

std::uint32_t TimelineModel::instance_of_collective(std::uint32_t id) const {
  const auto& c = call(id);
  return instance_of(c.comm, c.seq);
}

std::vector<std::uint32_t> TimelineModel::members_of(std::int32_t comm, std::int32_t seq) const {
  std::vector<std::uint32_t> out;
  for (std::size_t r = 0; r < run_->ranks.size(); ++r) {
    const auto& v = matched_.call_index[r][comm];
    if (seq >= 0 && static_cast<std::size_t>(seq) < v.size() && v[seq] >= 0)
      out.push_back(collective_id(static_cast<int>(r), v[seq]));
  }
  for (std::size_t k = 0; k < inflight_.size(); ++k) {
    const auto& c = run_->ranks[inflight_[k].rank_index].calls_in_flight[inflight_[k].index].call;
    if (c.comm == comm && c.seq == seq) out.push_back(static_cast<std::uint32_t>(inflight_base_ + k));
  }
  std::stable_sort(out.begin(), out.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return rank_of_collective(a) < rank_of_collective(b); });
  return out;
}

std::vector<std::uint32_t> TimelineModel::members(std::uint32_t id) const {
  const auto& c = call(id);
  return members_of(c.comm, c.seq);
}

std::vector<std::uint32_t> TimelineModel::instance_members(std::uint32_t instance) const {
  if (instance >= matched_.instances.size()) return {};
  const auto& i = matched_.instances[instance];
  return members_of(i.comm, i.seq);
}

int TimelineModel::rank_of_span(LaneKind kind, std::uint32_t id) const {
  const auto& first = kind == LaneKind::Nvtx ? nvtx_first_ : gpu_first_;
  return static_cast<int>(std::upper_bound(first.begin(), first.end(), std::size_t{id}) - first.begin()) - 1;
}

SpanEvent TimelineModel::span(LaneKind kind, std::uint32_t id) const {
  const int r = rank_of_span(kind, id);
  SpanEvent s;
  if (kind == LaneKind::Nvtx) {
    const auto& n = run_->ranks[r].nvtx_ranges[id - nvtx_first_[r]];
    s.start_ns = n.start_ns + shift_[r];
    s.end_ns = std::max(n.end_ns, n.start_ns) + shift_[r];
    s.name = static_cast<std::uint32_t>(n.name);
    s.lane = lane_of(1, r, nvtx_lane_key(n.thread, std::clamp(n.depth, 0, 63)));
  } else {
    const auto& g = run_->ranks[r].gpu_activities[id - gpu_first_[r]];
    s.start_ns = g.start_ns + shift_[r];
    s.end_ns = std::max(g.end_ns, g.start_ns) + shift_[r];
    s.name = static_cast<std::uint32_t>(g.name);
    s.lane = lane_of(2, r, gpu_lane_key(g));
  }
  return s;
}

std::int64_t TimelineModel::end_at(const Lane& lane, std::uint32_t pos) const {
  const int r = lane.rank_index;
  const std::uint32_t id = order_[index(lane.kind)][pos];
  switch (lane.kind) {
    case LaneKind::Collectives: return call_of(r, id).end_ns + shift_[r];
    case LaneKind::Nvtx: {
      const auto& n = run_->ranks[r].nvtx_ranges[id - nvtx_first_[r]];
      return std::max(n.end_ns, n.start_ns) + shift_[r];
    }
    case LaneKind::PointToPoint: {
      const auto& c = run_->ranks[r].point_to_point[id - p2p_first_[r]];
      return std::max(c.end_ns, c.start_ns) + shift_[r];
    }
    default: {
      const auto& g = run_->ranks[r].gpu_activities[id - gpu_first_[r]];
      return std::max(g.end_ns, g.start_ns) + shift_[r];
    }
  }
}

int TimelineModel::rank_of_point_to_point(std::uint32_t id) const {
  return static_cast<int>(std::upper_bound(p2p_first_.begin(), p2p_first_.end(), std::size_t{id}) - p2p_first_.begin()) - 1;
}

const run::PointToPointCall& TimelineModel::point_to_point(std::uint32_t id) const {
  const int r = rank_of_point_to_point(id);
  return run_->ranks[r].point_to_point[id - p2p_first_[r]];
}

std::uint32_t TimelineModel::lane_of_point_to_point(std::uint32_t id) const {
  const int r = rank_of_point_to_point(id);
  return lane_of(0, r, run_->ranks[r].point_to_point[id - p2p_first_[r]].thread);
}

std::int64_t TimelineModel::point_to_point_start(std::uint32_t id) const {
  const int r = rank_of_point_to_point(id);
  return run_->ranks[r].point_to_point[id - p2p_first_[r]].start_ns + shift_[r];
}

std::int64_t TimelineModel::point_to_point_end(std::uint32_t id) const {
  const int r = rank_of_point_to_point(id);
  const auto& c = run_->ranks[r].point_to_point[id - p2p_first_[r]];
  return std::max(c.end_ns, c.start_ns) + shift_[r];
}

std::uint32_t TimelineModel::name_at(const Lane& lane, std::uint32_t pos) const {
  const int r = lane.rank_index;
  const std::uint32_t id = order_[index(lane.kind)][pos];
  if (lane.kind == LaneKind::Nvtx) return static_cast<std::uint32_t>(run_->ranks[r].nvtx_ranges[id - nvtx_first_[r]].name);
  if (lane.kind == LaneKind::GpuStream) return static_cast<std::uint32_t>(run_->ranks[r].gpu_activities[id - gpu_first_[r]].name);
  return 0;
}

std::uint32_t TimelineModel::first_ending_after(const Lane& lane, std::int64_t t) const {
  return first_ending_after(lane, t, lane.begin, lane.end);
}

std::uint32_t TimelineModel::first_ending_after(const Lane& lane, std::int64_t t, std::uint32_t from,
                                                std::uint32_t to) const {
  const auto& ends = max_end(lane.kind);
  from = std::max(from, lane.begin);
  to = std::min(to, lane.end);
  if (from >= to) return to;
  return static_cast<std::uint32_t>(std::upper_bound(ends.begin() + from, ends.begin() + to, t) - ends.begin());
}

std::uint32_t TimelineModel::first_starting_at(const Lane& lane, std::int64_t t) const {
  std::uint32_t lo = lane.begin, hi = lane.end;
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (start_at(lane, mid) < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

std::uint32_t TimelineModel::first_starting_at_from(const Lane& lane, std::int64_t t, std::uint32_t from) const {
  std::uint32_t lo = std::max(from, lane.begin);
  if (lo >= lane.end || start_at(lane, lo) >= t) return lo;
  std::uint32_t step = 1, hi = lo + 1;  // invariant: start(lo) < t
  while (hi < lane.end && start_at(lane, hi) < t) {
    lo = hi;
    step *= 2;
    hi = lo + step > lane.end ? lane.end : lo + step;
  }
  ++lo;  // first candidate
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (start_at(lane, mid) < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

std::size_t TimelineModel::memory_bytes() const {
  std::size_t bytes = sizeof(*this);
  for (const auto& r : run_->ranks) {
    bytes += r.collectives.capacity() * sizeof(run::CollectiveCall) + r.nvtx_ranges.capacity() * sizeof(run::NvtxRange) +
             r.gpu_activities.capacity() * sizeof(run::GpuActivity) + r.calls_in_flight.capacity() * sizeof(run::CallInFlight) +
             r.point_to_point.capacity() * sizeof(run::PointToPointCall);
    bytes += r.threads.capacity() * sizeof(store::ThreadRow) + r.buffers.capacity() * sizeof(store::BufferRow);
  }
  for (const auto& s : run_->strings) bytes += sizeof(s) + s.capacity();
  bytes += matched_.instances.capacity() * sizeof(run::InstanceSummary);
  for (const auto& per_rank : matched_.call_index)
    for (const auto& v : per_rank) bytes += sizeof(v) + v.capacity() * sizeof(std::int32_t);
  if (messages_) bytes += messages_->memory_bytes();
  bytes += p2p_tracks_.capacity() * sizeof(Lane);
  for (int k = 0; k < 4; ++k)
    bytes += order_[k].capacity() * sizeof(std::uint32_t) +
             (start_[k].capacity() + max_end_[k].capacity()) * sizeof(std::int64_t);
  for (const auto& l : lanes_) bytes += sizeof(l) + l.label.capacity();
  return bytes;
}

}  // namespace collscope::gui
