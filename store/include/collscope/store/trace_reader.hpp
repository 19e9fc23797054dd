#pragma once
// Reads one rank's trace file. Opens read-only (works while the tracer is still writing: WAL mode),
// checks the schema version and refuses an unknown major version with a one-line collscope::InputError.
#include <collscope/store/schema.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;

namespace collscope::store {

struct SchemaVersion {
  int major = 0;
  int minor = 0;
};

// What analysis keeps of a collectives row.
struct CollectiveSummary {
  std::int64_t comm = 0;
  std::int64_t seq = 0;
  Op op = Op::Unknown;
  std::int64_t count = 0;
  std::int64_t datatype = 0;
  std::int64_t bytes = 0;
  std::optional<std::int32_t> root;
  std::optional<std::int32_t> peer;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  Status status = 0;
  std::int64_t thread = 0;  // threads.id
  std::uint64_t sendbuf = 0;  // the send buffer's address (fusion buffers: one address reused for many sizes)
};

class TraceReader {
 public:
  explicit TraceReader(std::string path);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;
  TraceReader(TraceReader&& other) noexcept;

  const std::string& path() const { return path_; }
  SchemaVersion schema_version() const { return version_; }

  std::map<std::string, std::string> meta() const;
  std::optional<std::string> meta_value(std::string_view key) const;
  // meta_value as an integer; nullopt when absent or not a number.
  std::optional<std::int64_t> meta_int(std::string_view key) const;

  // strings()[id] is the string with that id; strings()[0] == "".
  std::vector<std::string> strings() const;
  std::vector<ThreadRow> threads() const;
  std::vector<CommunicatorRow> communicators() const;

  // Streams rows in id order without materialising the table (10 M rows fit in any memory budget).
  void for_each_collective(const std::function<void(const CollectiveRow&)>& fn) const;
  std::vector<CollectiveRow> collectives() const;
  // One rank's call number `seq` on file communicator `comm` (communicators.id), every column; nullopt when the
  // file has none. For a viewer showing one call's details on demand (scans the table: ~10 ms per 100 k rows).
  std::optional<CollectiveRow> find_collective(std::int64_t comm, std::int64_t seq) const;
  // The same rows, only the columns analysis needs (half the decoding work of for_each_collective).
  void for_each_collective_summary(const std::function<void(const CollectiveSummary&)>& fn) const;
  void for_each_nvtx_range(const std::function<void(const NvtxRangeRow&)>& fn) const;
  std::vector<NvtxRangeRow> nvtx_ranges() const;
  void for_each_gpu_activity(const std::function<void(const GpuActivityRow&)>& fn) const;
  std::vector<GpuActivityRow> gpu_activities() const;
  std::vector<BufferRow> buffers() const;
  // Calls still in flight when the file was last written (empty for schema 1.0 files, which lack the table).
  std::vector<CallInFlightRow> calls_in_flight() const;

  std::int64_t row_count(std::string_view table) const;

 private:
  [[noreturn]] void fail(std::string_view what) const;
  std::string path_;
  sqlite3* db_ = nullptr;
  SchemaVersion version_;
};

// "rank-00003.sqlite" for world rank 3.
std::string rank_file_name(int world_rank);
// The rank-*.sqlite files of a run directory, sorted. Throws InputError when `run_dir` is not a directory or
// holds none.
std::vector<std::string> rank_files(const std::string& run_dir);

}  // namespace collscope::store
