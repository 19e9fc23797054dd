#pragma once
// The viewer's in-memory run: compact, sorted event arrays built once by the loader (off the GUI thread)
// and then only read by the views. Sized for 1 M+ events: a collective costs ~40 B plus 12 B of index,
// an NVTX range or GPU activity 24 B plus 8 B of index (see RunData::memory_bytes()).
// Times are ns since RunData::origin_ns on the run's aligned clock (every rank's CLOCK_MONOTONIC
// shifted by its RankInfo::clock_offset_ns).
#include <collscope/gui/huge_page_allocator.hpp>
#include <collscope/run/format.hpp>
#include <collscope/store/schema.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace collscope::gui {

inline constexpr std::uint32_t kNoInstance = 0xffffffffu;

enum class LaneKind : std::uint8_t { Collectives = 0, Nvtx = 1, GpuStream = 2 };

// One horizontal row of the timeline. Its events are the contiguous range [begin, end) of the array
// of its kind (RunData::collectives, ::nvtx or ::gpu), sorted by start.
struct Lane {
  int rank_index = 0;  // into RunData::ranks
  LaneKind kind = LaneKind::Collectives;
  std::int64_t key = 0;  // thread id (threads.id), stream number, or NVTX thread*64+depth
  std::string label;     // "thread main", "stream 7", "NVTX main [1]"
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
};

inline constexpr std::uint8_t kCallInFlight = 1;  // CollectiveEvent::flags: never returned (a hang)

struct CollectiveEvent {
  std::int64_t start_ns = 0;  // call entry = this rank's arrival
  std::int64_t end_ns = 0;    // call exit; for a call in flight, the last time the tracer saw it
  std::int64_t bytes = 0;     // this rank's payload
  std::uint32_t instance = kNoInstance;  // into RunData::instances
  std::uint32_t row_id = 0;              // collectives.id in the rank's file (details read back on demand)
  std::uint16_t lane = 0;
  std::uint16_t rank_index = 0;
  store::Op op = store::Op::Unknown;
  std::uint8_t fusion_fill_percent = 0;  // 0: no fusion buffer; else how full the fused buffer was (1..100)
  std::uint8_t flags = 0;                // kCallInFlight: from calls_in_flight (row_id 0: no collectives row)
};

// An NVTX range or a GPU activity.
struct SpanEvent {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t name = 0;  // into RunData::names
  std::uint16_t lane = 0;
  std::uint8_t kind = 0;   // store::NvtxKind or store::GpuActivityKind
  std::uint8_t reserved = 0;
};

// One collective across its ranks: the seq-th call on one communicator (same key on every member).
struct CollectiveInstance {
  std::uint64_t comm_key = 0;
  std::int64_t seq = 0;
  std::int64_t first_arrival_ns = 0;
  std::int64_t last_arrival_ns = 0;  // wait of a member = last_arrival_ns - its start_ns
  std::int64_t last_end_ns = 0;
  std::int64_t bytes = 0;            // largest per-rank payload
  std::uint32_t members_begin = 0;   // into RunData::instance_members (indices of CollectiveEvents)
  std::uint16_t member_count = 0;
  std::uint16_t comm_size = 0;
  std::uint16_t last_rank_index = 0; // the rank that arrived last
  store::Op op = store::Op::Unknown;
};

struct RankInfo {
  int world_rank = 0;
  std::string host;
  std::string file;
  std::int64_t clock_offset_ns = 0;  // added to the rank's CLOCK_MONOTONIC to get the aligned clock
  std::int64_t events_dropped = 0;
  std::map<std::string, std::string> meta;
};

struct Step {
  int number = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

// A finding as the viewer shows it (filled from the analyzer's findings).
struct Finding {
  std::string kind;      // "straggler rank", "late arrival", ...
  std::string severity;  // "high", "medium", "low"
  std::string summary;   // one line with the evidence in numbers
  std::string suggestion;
  std::int64_t start_ns = 0;  // evidence time range (run time)
  std::int64_t end_ns = 0;
  std::int64_t cost_ns = 0;
  std::vector<int> world_ranks;  // ranks concerned
};

// Per op and size bucket.
struct StatisticsRow {
  store::Op op = store::Op::Unknown;
  std::string size_bucket;  // "≤ 4 KiB", "4 KiB – 64 KiB", ...
  std::int64_t count = 0;
  std::int64_t total_ns = 0;  // time in the call, summed over ranks
  double busbw_gbps = 0;      // mean bus bandwidth (nccl-tests definition), GB/s
};

struct RunData {
  std::string dir;
  std::int64_t origin_ns = 0;    // aligned clock at run time 0
  std::int64_t duration_ns = 0;  // last event end, run time
  std::vector<RankInfo> ranks;   // by world rank
  std::vector<Lane> lanes;       // display order: by host, rank, then collectives, NVTX, GPU streams
  EventVector<CollectiveEvent> collectives;
  EventVector<std::int64_t> collectives_max_end;  // per lane prefix maximum of end_ns (visible-range search)
  EventVector<SpanEvent> nvtx;
  EventVector<std::int64_t> nvtx_max_end;
  EventVector<SpanEvent> gpu;
  EventVector<std::int64_t> gpu_max_end;
  EventVector<CollectiveInstance> instances;
  EventVector<std::uint32_t> instance_members;
  std::vector<std::string> names;  // NVTX and kernel names; names[0] == ""
  std::vector<Step> steps;
  std::vector<Finding> findings;
  std::vector<StatisticsRow> statistics;
  std::vector<std::string> warnings;  // partial run, dropped events, analyzer not built ...
  bool analyzed = false;              // findings/statistics/clock offsets came from the analyzer

  std::size_t event_count() const { return collectives.size() + nvtx.size() + gpu.size(); }
  std::size_t memory_bytes() const;

  const EventVector<SpanEvent>& spans(LaneKind kind) const { return kind == LaneKind::Nvtx ? nvtx : gpu; }
  const EventVector<std::int64_t>& max_end(LaneKind kind) const {
    return kind == LaneKind::Collectives ? collectives_max_end : kind == LaneKind::Nvtx ? nvtx_max_end : gpu_max_end;
  }
  std::int64_t start_of(LaneKind kind, std::uint32_t i) const {
    return kind == LaneKind::Collectives ? collectives[i].start_ns : spans(kind)[i].start_ns;
  }
  std::int64_t end_of(LaneKind kind, std::uint32_t i) const {
    return kind == LaneKind::Collectives ? collectives[i].end_ns : spans(kind)[i].end_ns;
  }
  // First event of `lane` that ends after t (may start before it); lane.end when none.
  std::uint32_t first_ending_after(const Lane& lane, std::int64_t t) const;
  // The same among events [from, to) of the lane; `to` when none.
  std::uint32_t first_ending_after(const Lane& lane, std::int64_t t, std::uint32_t from, std::uint32_t to) const;
  // First event of `lane` that starts at or after t; lane.end when none.
  std::uint32_t first_starting_at(const Lane& lane, std::int64_t t) const;
  // The same, searching forward from index `from` of the lane (galloping: O(log distance), cache-friendly
  // when the answer is near, as it is for the next pixel column).
  std::uint32_t first_starting_at_from(const Lane& lane, std::int64_t t, std::uint32_t from) const;
  // Index of the collective event of the world rank in an instance; kNoInstance when not a member.
  std::uint32_t member_on_rank(const CollectiveInstance& inst, int rank_index) const;
  int rank_index_of_world(int world_rank) const;
};

using run::format_bytes;     // the one formatting home (collscope/run/format.hpp)
using run::format_duration;

}  // namespace collscope::gui
