#pragma once
// Writer side of the NCCL profiler plugin's records (nccl_profile_record.hpp): each finished collective the
// plugin reports is matched to its collectives row, which gets the GPU times of its kernel channels and an
// nccl_profile row (algorithm, protocol, channels); each network transfer becomes an nccl_proxy_ops row.
//
// One row per collective: the row is the interposer's (or, for a communicator no interposer sees, the one the
// plugin wrote in its place through the same recorder); the profile only completes it. A record whose row cannot
// be found is counted (meta nccl_profiler.unmatched) and written nowhere: a row is right or absent.
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "nccl_profile_record.hpp"

namespace collscope::tracer::nccl_profile {

// Registers the record handler, the collective hook and the drain hook with this library's recorder (once;
// before runtime_start, like every extension).
void install_sink();

// Writer thread: the profiler set `row`'s GPU times from its kernel channels (CUPTI then leaves them: one
// definition of a collective's GPU span, the most specific one).
bool has_kernel_channel_times(std::int64_t row);

// Finds the collectives row of a record. Pure: no recorder, no file (the tests feed it directly).
class RowMatcher {
 public:
  // A collectives row of an NCCL communicator as the recorder wrote it.
  struct Row {
    std::int64_t row_id = 0;
    std::uint32_t comm_slot = 0;
    std::int64_t seq = 0;           // the call's index on its communicator
    std::uint8_t func = kNoFunc;    // NcclFunc
    std::int64_t nccl_seq = -1;     // NCCL's per-function count, -1 when NCCL gave the call no task
    std::uint64_t bytes_per_rank = 0;  // count x datatype size of the call
    std::uint64_t sendbuf = 0, recvbuf = 0;
  };

  void add_row(const Row& row);
  // The row of `record` (Identity::Call: exact; Identity::NcclSeq: the row with that NCCL sequence number whose
  // size and buffers agree, or the nearest one that does: NCCL launches the calls of a group in its own order).
  // `token_slot` is the slot the record's creation token was bound to. nullopt: not (yet) known.
  std::optional<std::int64_t> find(const CollectiveRecord& record, std::uint32_t token_slot);

  static constexpr std::size_t kKeep = 1 << 16;        // rows remembered per index
  static constexpr std::int64_t kGroupReach = 64;      // how far a group may reorder NCCL's sequence numbers

 private:
  struct Entry {
    Row row;
    bool claimed = false;
  };
  static std::uint64_t call_key(std::uint32_t slot, std::int64_t seq) {
    return (std::uint64_t{slot} << 44) ^ static_cast<std::uint64_t>(seq);
  }
  std::unordered_map<std::uint64_t, std::int64_t> by_call_;
  std::deque<std::uint64_t> call_order_;
  std::unordered_map<std::uint64_t, std::map<std::int64_t, Entry>> by_nccl_seq_;  // (slot, func) -> seq -> row
};

}  // namespace collscope::tracer::nccl_profile
