#pragma once
// What a rank file's values can physically be, and the screen that leaves out rows beyond it. A row outside these
// limits (an end before its start, 2^63 bytes, a one-day call in a 9 s run, an anchor at INT64_MIN) was not
// measured: it is left out of every figure, and each file gets one warning per table naming the first such row.
// Inside the limits, sums and differences of a few times or byte counts cannot overflow 64 bits.
#include <collscope/store/trace_reader.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collscope::run {

struct PhysicalLimits {
  // ns; CLOCK_MONOTONIC counts from boot: 2^60 ns is 36 years of uptime.
  static constexpr std::int64_t kMaxMonotonicNs = std::int64_t{1} << 60;
  // ns since 1970; CLOCK_REALTIME: 2^62 ns is the year 2116.
  static constexpr std::int64_t kMaxRealtimeNs = std::int64_t{1} << 62;
  // ns; one rank's trace, and so any one call in it, lasts at most 2^52 ns (52 days).
  static constexpr std::int64_t kMaxSpanNs = std::int64_t{1} << 52;
  // ns; rows may lie this far outside their file's start and end anchors (the tracer converts TSC ticks to
  // CLOCK_MONOTONIC by interpolation; CUPTI's GPU clock is converted the same way).
  static constexpr std::int64_t kAnchorSlackNs = 1'000'000'000;
  // ns; an end this far before its start is clock-conversion jitter on a call of ~0 ns, read as 0 ns long.
  static constexpr std::int64_t kJitterNs = 1'000;
  // ns; the ranks of one run start within a day of each other (CLOCK_REALTIME at the tracer's start).
  static constexpr std::int64_t kMaxLaunchSpreadNs = 86'400'000'000'000;
  // bytes; one call's payload on one rank: 16 TiB, more than any host or device holds.
  static constexpr std::int64_t kMaxCallBytes = std::int64_t{1} << 44;
  // elements of one call.
  static constexpr std::int64_t kMaxCallCount = std::int64_t{1} << 48;
  // bytes; a buffer's total traffic over a run.
  static constexpr std::int64_t kMaxBufferBytes = std::int64_t{1} << 62;
  // A communicator's call numbers: a rank cannot have made more calls on it than its file records plus the
  // events it says it dropped, and the call index the matcher builds (4 bytes per seq) stays within
  // kSeqsPerRecordedCall per recorded call (plus kSeqSlack), whatever a file claims it dropped.
  static constexpr std::int64_t kSeqsPerRecordedCall = 16;
  static constexpr std::int64_t kSeqSlack = 64;
};

// The clock anchors of one rank file (meta clock_*_ns), each checked against PhysicalLimits; nullopt when the
// file has none or an impossible one.
struct RankAnchors {
  std::optional<std::int64_t> monotonic_start_ns, monotonic_end_ns, realtime_start_ns, realtime_end_ns;
};

// Screens the rows of one rank file. Each check returns true for a possible row; for an impossible one it
// counts it and keeps the first reason per table, for one warning per table at the end.
class RowScreen {
 public:
  RowScreen(std::string path, const RankAnchors& anchors);

  // A row spanning [start_ns, end_ns] (CLOCK_MONOTONIC of the file's host). An end less than kJitterNs before
  // the start is read as the start: `end_ns` is set to it.
  bool span(std::string_view table, std::int64_t row, std::int64_t start_ns, std::int64_t& end_ns);
  // 0 <= value <= max.
  bool within(std::string_view table, std::int64_t row, std::string_view column, std::int64_t value, std::int64_t max);
  // Leaves the row out for a reason found elsewhere (`why` is the whole reason: "seq 2147483647 beyond ...").
  void reject(std::string_view table, std::int64_t row, std::string why);

  std::int64_t rejected() const;
  // "PATH: collectives row 17: end_ns 5 is before start_ns 100; 3 rows of collectives out of range left out"
  std::vector<std::string> warnings() const;

 private:
  struct TableRejects {
    std::int64_t count = 0;
    std::string first;  // "row 17: end_ns 5 is before start_ns 100"
  };
  std::string path_;
  std::int64_t lo_ns_ = 0, hi_ns_ = PhysicalLimits::kMaxMonotonicNs;
  std::map<std::string, TableRejects, std::less<>> rejects_;
};

// The clock anchors of the file `reader` has open, checked; appends one warning naming the file and the anchor
// for each impossible one, which is then dropped.
RankAnchors read_anchors(const store::TraceReader& reader, std::vector<std::string>& warnings);

}  // namespace collscope::run
