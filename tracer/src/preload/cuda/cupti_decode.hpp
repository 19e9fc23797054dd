#pragma once
// Pure decoding of CUPTI activity records into trace rows, and the matching of NCCL collectives to the kernels
// they launched. No CUPTI library is needed (only its headers): the tests build records by hand.
#include <cupti_activity.h>

#include <collscope/store/event_batch.hpp>
#include <collscope/store/schema.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace collscope::tracer::gpu {

// One GPU activity, times as CUPTI reported them (CLOCK_MONOTONIC ns when the collector's timestamp callback is
// registered, else CUPTI's clock: the caller adds the offset).
struct DecodedActivity {
  store::GpuActivityKind kind = store::GpuActivityKind::Kernel;
  std::string name;  // demangled kernel name, "memcpy DtoD", "memset", "sync stream" ...
  std::int32_t device = -1;  // -1: CUPTI does not say (synchronisation records)
  std::uint64_t stream = 0;  // CUPTI stream id
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  std::uint32_t correlation = 0;  // CUPTI correlation id of the API call that issued it
  std::int64_t bytes = 0;
  std::optional<std::int32_t> copy_kind;  // CUpti_ActivityMemcpyKind
};

// CUPTI's link between our external correlation id (pushed around each NCCL call) and its own correlation id.
struct ExternalCorrelation {
  std::uint64_t external_id = 0;
  std::uint32_t correlation = 0;
};

struct DecodedRecord {
  std::optional<DecodedActivity> activity;
  std::optional<ExternalCorrelation> external;
};

// Decodes one record (CUPTI 13 layouts: Kernel10, Memcpy6, Memset4, Synchronization2, ExternalCorrelation with
// kind CUSTOM0). Other kinds decode to an empty record.
DecodedRecord decode_cupti_record(const CUpti_Activity* record);

// The gpu_activities record of an activity (event_batch.hpp): `name` its strings.id, `clock_offset_ns` added to
// CUPTI's timestamps (0 when they are CLOCK_MONOTONIC already).
store::GpuActivityRecord gpu_activity_record(const DecodedActivity& a, std::int64_t name, std::int64_t clock_offset_ns);

// "memcpy HtoD" etc. for a CUpti_ActivityMemcpyKind.
std::string memcpy_kind_name(std::uint32_t copy_kind);

// Matches collectives (by external correlation id) to the GPU work they launched: kernels, copies and memsets
// whose CUPTI correlation id belongs to an API call made inside the NCCL call. The tie is the correlation id,
// never the name: NCCL's kernels are `ncclKernel_*` before 2.19, `ncclDevKernel_*` after, and a one-rank
// communicator's collective is a plain copy or `oneRankReduce`. Feed it in any order; take_updates() returns the
// rows whose GPU span is new or grew since the last call, take_links() the (collective row, activity row) pairs
// found since the last call.
class GpuTimeMatcher {
 public:
  struct Update {
    std::int64_t row_id;
    std::int64_t gpu_start_ns;
    std::int64_t gpu_end_ns;
  };
  struct Link {
    std::int64_t collective_row;
    std::int64_t activity_row;
  };

  void add_collective(std::uint64_t external_id, std::int64_t row_id);
  void add_external(std::uint64_t external_id, std::uint32_t correlation);
  // A kernel, copy or memset; activity_row is its gpu_activities.id (0: not written, no link).
  void add_kernel(std::uint32_t correlation, std::int64_t start_ns, std::int64_t end_ns, std::int64_t activity_row = 0);
  std::vector<Update> take_updates();
  std::vector<Link> take_links();

  // Forgets external ids older than `keep` behind the newest (bounded memory over long runs).
  static constexpr std::uint64_t kKeep = 1 << 16;

 private:
  struct Span {
    std::int64_t start = 0;
    std::int64_t end = 0;
    bool known = false;
    bool dirty = false;
  };
  struct Work {
    std::int64_t start = 0, end = 0, activity_row = 0;
  };
  void extend(std::uint64_t external_id, const Work& work);
  void evict();

  std::unordered_map<std::uint64_t, std::vector<std::int64_t>> rows_;  // external id -> collectives rows
  std::unordered_map<std::uint64_t, Span> spans_;                      // external id -> GPU span
  std::unordered_map<std::uint32_t, std::uint64_t> external_of_;       // CUPTI correlation -> external id
  std::unordered_map<std::uint64_t, std::vector<std::int64_t>> activities_;  // external id -> activity rows
  std::unordered_map<std::uint32_t, Work> early_kernels_;                     // before their link record
  std::vector<Link> links_;
  std::uint64_t newest_ = 0;
};

}  // namespace collscope::tracer::gpu
