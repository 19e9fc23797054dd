#pragma once
// The timeline's lanes over the one in-memory run of collscope::run. The viewer keeps no copy of the events:
// the run (loaded once, rank files read once), its clock alignment and its cross-rank matching are shared with
// the analyzer, and the model adds only what drawing needs, 20 bytes per event: each lane's events in start
// order (an index into the rank's rows), their starts and the prefix maximum of their ends (run time, side by
// side in lane order: the visible-range and pixel-column searches touch nothing else).
//
// Times the model returns are run time: ns since ClockAlignment::origin_ns on the aligned clock, the time the
// analyzer's report and the Chrome export count from too (run time = raw + offset_ns[rank] − origin_ns).
//
// Ids: a collective is numbered by its place in the run, rank by rank in RankTrace::collectives order, then the
// calls still in flight (RankTrace::calls_in_flight) after all of them. NVTX ranges, GPU activities and MPI
// point-to-point calls are numbered the same way, rank by rank. A lane position is an index into the kind's lane
// order instead.
//
// Point-to-point calls share their thread's collectives lane (its "MPI lane"): each collectives lane has a track,
// point_to_point_track(lane), a Lane of kind PointToPoint that is never a row of its own, whose positions are the
// thread's point-to-point calls in start order (the same 20 bytes per call). Their messages and wait states are
// run/'s, indexed for drawing by MessageIndex (messages.hpp).
#include <collscope/gui/huge_page_allocator.hpp>
#include <collscope/gui/messages.hpp>
#include <collscope/run/clock_alignment.hpp>
#include <collscope/run/matching.hpp>
#include <collscope/run/run.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace collscope::gui {

inline constexpr std::uint32_t kNoInstance = 0xffffffffu;  // "none", for event and instance ids

// PointToPoint: the track of a collectives lane (see above), not a row.
enum class LaneKind : std::uint8_t { Collectives = 0, Nvtx = 1, GpuStream = 2, PointToPoint = 3 };

// One horizontal row of the timeline: positions [begin, end) of its kind's lane order, sorted by start.
struct Lane {
  int rank_index = 0;  // into run::Run::ranks
  LaneKind kind = LaneKind::Collectives;
  std::int64_t key = 0;  // threads.id; NVTX thread * 64 + depth; GPU device << 40 | stream
  std::string label;     // "MPI  main (4711)", "NVTX main (4711)", "NVTX main (4711) › 2", "GPU 0 stream 7"
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
};

inline constexpr std::uint8_t kCallInFlight = 1;  // CollectiveEvent::flags: never returned (a hang)

// A collective call as the timeline shows it (computed from the run on demand).
struct CollectiveEvent {
  std::int64_t start_ns = 0;  // run time, call entry = this rank's arrival
  std::int64_t end_ns = 0;    // run time, call exit; for a call in flight the last time the tracer saw it
  std::int64_t bytes = 0;     // this rank's payload
  std::uint32_t instance = kNoInstance;  // into matched().instances
  std::uint16_t lane = 0;
  std::uint16_t rank_index = 0;
  store::Op op = store::Op::Unknown;
  // 0: no fusion buffer, or a job that has none (run::Workload::fusion_buffers); else how full it was (1..100)
  std::uint8_t fusion_fill_percent = 0;
  std::uint8_t flags = 0;                // kCallInFlight
};

// An NVTX range or a GPU activity as the timeline shows it.
struct SpanEvent {
  std::int64_t start_ns = 0;  // run time
  std::int64_t end_ns = 0;
  std::uint32_t name = 0;  // into names()
  std::uint16_t lane = 0;
};

class TimelineModel {
 public:
  // Builds the lanes (ranks in parallel). Lanes are grouped by host (clocks.hosts order), then world rank, then
  // collectives, NVTX depth and GPU stream. Throws collscope::InputError past 65535 lanes or 2^32 events.
  // What a model over a window of a longer run (windowed_run.hpp) takes from the whole run: its duration, its
  // messages in the window's calls (matching the window's calls anew would pair the k-th send of the window, not
  // of the run), and its communication matrix.
  struct WholeRun {
    std::int64_t duration_ns = 0;
    run::MatchedMessages messages;
    run::PointToPointWaits waits;
    std::vector<MatrixCell> matrix;
  };
  TimelineModel(std::shared_ptr<const run::Run> run, run::ClockAlignment clocks, run::MatchedRun matched);
  TimelineModel(std::shared_ptr<const run::Run> run, run::ClockAlignment clocks, run::MatchedRun matched,
                WholeRun whole);
  // The same, matching the collectives (run::CollectiveMatcher) on another thread while the lanes are laid out.
  TimelineModel(std::shared_ptr<const run::Run> run, run::ClockAlignment clocks);

  const run::Run& run() const { return *run_; }
  std::shared_ptr<const run::Run> shared_run() const { return run_; }
  const run::ClockAlignment& clocks() const { return clocks_; }
  const run::MatchedRun& matched() const { return matched_; }
  const std::vector<std::string>& names() const { return run_->strings; }
  const std::vector<Lane>& lanes() const { return lanes_; }
  std::int64_t duration_ns() const { return duration_ns_; }  // run time of the last event's end

  // Run time of a rank's raw CLOCK_MONOTONIC ns, and of an aligned time (InstanceSummary's).
  std::int64_t run_time(int rank_index, std::int64_t raw_ns) const { return raw_ns + shift_[rank_index]; }
  std::int64_t run_time(std::int64_t aligned_ns) const { return aligned_ns - clocks_.origin_ns; }
  int rank_index_of_world(int world_rank) const { return run_->rank_index(world_rank); }

  // Collectives by id.
  std::size_t collective_count() const { return inflight_base_ + inflight_.size(); }
  CollectiveEvent collective(std::uint32_t id) const;
  const run::CollectiveCall& call(std::uint32_t id) const;
  int rank_of_collective(std::uint32_t id) const;
  std::uint32_t lane_of_collective(std::uint32_t id) const;
  bool in_flight(std::uint32_t id) const { return id >= inflight_base_ && id < collective_count(); }
  std::uint32_t collective_id(int rank_index, std::int32_t call) const {
    return static_cast<std::uint32_t>(coll_first_[rank_index] + call);
  }
  // The matched instance of a call (comm, seq), kNoInstance when none (a call in flight nobody finished).
  std::uint32_t instance_of(std::int32_t comm, std::int32_t seq) const;
  std::uint32_t instance_of_collective(std::uint32_t id) const;
  // Every rank's call of the same collective (same communicator and seq) as `id`, calls in flight included,
  // by rank index; `id` itself among them.
  std::vector<std::uint32_t> members(std::uint32_t id) const;
  // The same for an instance (by rank index).
  std::vector<std::uint32_t> instance_members(std::uint32_t instance) const;
  std::vector<std::uint32_t> members_of(std::int32_t comm, std::int32_t seq) const;

  // NVTX ranges and GPU activities by id (per kind).
  std::size_t span_count(LaneKind kind) const { return kind == LaneKind::Nvtx ? nvtx_total_ : gpu_total_; }
  SpanEvent span(LaneKind kind, std::uint32_t id) const;
  int rank_of_span(LaneKind kind, std::uint32_t id) const;

  // Lane positions: the id at a position of the lane, its start and end (run time), the prefix maximum of ends.
  std::uint32_t id_at(LaneKind kind, std::uint32_t pos) const { return order_[index(kind)][pos]; }
  std::int64_t start_at(const Lane& lane, std::uint32_t pos) const { return start_[index(lane.kind)][pos]; }
  std::int64_t end_at(const Lane& lane, std::uint32_t pos) const;
  const EventVector<std::int64_t>& max_end(LaneKind kind) const { return max_end_[index(kind)]; }
  // The call at a position of a collectives lane; the name (into names()) at a position of a span lane.
  const run::CollectiveCall& call_at(const Lane& lane, std::uint32_t pos) const {
    return call_of(lane.rank_index, order_[0][pos]);
  }
  std::uint32_t name_at(const Lane& lane, std::uint32_t pos) const;
  // collective(id_at(pos)) without looking the rank and lane up (`lane` must be one of lanes()).
  CollectiveEvent collective_at(const Lane& lane, std::uint32_t pos) const;
  // First position of `lane` whose event ends after t (may start before it); lane.end when none.
  std::uint32_t first_ending_after(const Lane& lane, std::int64_t t) const;
  // The same among positions [from, to) of the lane; `to` when none.
  std::uint32_t first_ending_after(const Lane& lane, std::int64_t t, std::uint32_t from, std::uint32_t to) const;
  // First position of `lane` whose event starts at or after t; lane.end when none.
  std::uint32_t first_starting_at(const Lane& lane, std::int64_t t) const;
  // The same, searching forward from position `from` (galloping: O(log distance), cache-friendly when the
  // answer is near, as it is for the next pixel column).
  std::uint32_t first_starting_at_from(const Lane& lane, std::int64_t t, std::uint32_t from) const;

  // MPI point-to-point calls by id, and the track of a collectives lane that holds its thread's calls (a lane of
  // another kind has an empty one).
  std::size_t point_to_point_count() const { return p2p_total_; }
  const run::PointToPointCall& point_to_point(std::uint32_t id) const;
  int rank_of_point_to_point(std::uint32_t id) const;
  std::uint32_t point_to_point_id(int rank_index, std::size_t call) const {
    return static_cast<std::uint32_t>(p2p_first_[rank_index] + call);
  }
  std::uint32_t lane_of_point_to_point(std::uint32_t id) const;
  const Lane& point_to_point_track(std::size_t lane) const { return p2p_tracks_[lane]; }
  // Run time of a point-to-point call's entry and exit.
  std::int64_t point_to_point_start(std::uint32_t id) const;
  std::int64_t point_to_point_end(std::uint32_t id) const;
  // The call at a position of a point-to-point track.
  const run::PointToPointCall& point_to_point_at(const Lane& track, std::uint32_t pos) const {
    return run_->ranks[track.rank_index].point_to_point[order_[3][pos] - p2p_first_[track.rank_index]];
  }
  const MessageIndex& messages() const { return *messages_; }
  // Whether the job packs tensors into fusion buffers (run::Workload::fusion_buffers): only then does a
  // collective show how full its buffer was.
  bool fusion_buffers() const { return fusion_buffers_; }

  std::size_t event_count() const { return collective_count() + nvtx_total_ + gpu_total_ + p2p_total_; }
  // Bytes the run, its matching and the lanes hold (the whole in-memory cost of a loaded run).
  std::size_t memory_bytes() const;

 private:
  static int index(LaneKind kind) { return static_cast<int>(kind); }
  void build();
  // The call of collective `id`, which belongs to rank r.
  const run::CollectiveCall& call_of(int r, std::uint32_t id) const {
    return id < inflight_base_ ? run_->ranks[r].collectives[id - coll_first_[r]]
                               : run_->ranks[r].calls_in_flight[inflight_[id - inflight_base_].index].call;
  }
  std::uint16_t lane_of(int kind, int r, std::int64_t key) const;
  CollectiveEvent event_of(int r, std::uint32_t id, std::uint16_t lane) const;

  std::shared_ptr<const run::Run> run_;
  run::ClockAlignment clocks_;
  run::MatchedRun matched_;
  std::vector<std::int64_t> shift_;  // per rank: offset_ns − origin_ns
  std::vector<Lane> lanes_;
  std::int64_t duration_ns_ = 0;
  // Collective ids: rank r's calls are [coll_first_[r], coll_first_[r + 1]); in flight from inflight_base_.
  std::vector<std::size_t> coll_first_, nvtx_first_, gpu_first_, p2p_first_;
  struct InFlightRef {
    int rank_index;
    std::uint32_t index;  // into RankTrace::calls_in_flight
  };
  std::vector<InFlightRef> inflight_;
  std::size_t inflight_base_ = 0, nvtx_total_ = 0, gpu_total_ = 0, p2p_total_ = 0;
  // Per rank and kind: (key, lane) pairs, to find the lane of an event (point-to-point calls: kind 0's).
  std::vector<std::vector<std::pair<std::int64_t, std::uint16_t>>> lane_of_key_[3];
  std::vector<Lane> p2p_tracks_;             // per lane: its point-to-point track
  EventVector<std::uint32_t> order_[4];      // per kind: ids in lane order
  EventVector<std::int64_t> start_[4];       // per kind and position: start, run time
  EventVector<std::int64_t> max_end_[4];     // per kind and position: prefix maximum of end within the lane
  std::shared_ptr<const MessageIndex> messages_;
  bool fusion_buffers_ = false;
};

// Lane keys (the model's and its tests').
inline std::int64_t nvtx_lane_key(std::int64_t thread, std::int32_t depth) { return thread * 64 + depth; }
inline std::int64_t gpu_lane_key(const run::GpuActivity& g) {
  return (std::int64_t{g.device} << 40) | static_cast<std::int64_t>(g.stream & 0xffffffffffULL);
}

}  // namespace collscope::gui
