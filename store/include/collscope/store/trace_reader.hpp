#pragma once
// Reads one rank's trace file. Opens read-only, writes nothing anywhere (a finished run reads from a read-only
// file system or another user's directory; a file still being written reads too), checks the schema version
// and refuses an unknown major version with a one-line collscope::InputError.
#include <collscope/store/schema.hpp>
#include <collscope/store/sqlite.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace collscope::store {

struct SchemaVersion {
  int major = 0;
  int minor = 0;
};

// What analysis keeps of a collectives row: id (to name it in warnings), comm, seq, op, count, datatype, bytes,
// reduce_op, root, peer, start_ns, end_ns, status, thread, sendbuf (fusion buffers: one address reused for many
// sizes); the other members stay at their defaults.
using CollectiveSummary = CollectiveRow;
inline constexpr ColumnSet<CollectiveRow> kCollectiveSummaryColumns =
    columns<&CollectiveRow::id, &CollectiveRow::comm, &CollectiveRow::seq, &CollectiveRow::op, &CollectiveRow::count,
            &CollectiveRow::datatype, &CollectiveRow::bytes, &CollectiveRow::reduce_op, &CollectiveRow::root,
            &CollectiveRow::peer, &CollectiveRow::start_ns, &CollectiveRow::end_ns, &CollectiveRow::status,
            &CollectiveRow::thread, &CollectiveRow::sendbuf>();

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
  // meta.world_rank and meta.world_size, checked when the file was opened: 1 <= size <= kMaxWorldSize and
  // 0 <= rank < kMaxWorldSize (a file that says otherwise is refused with an InputError naming the value);
  // nullopt when the file does not say. The rank is not checked against the size: a job that sets only RANK
  // gets files that say "rank 3 of 1".
  std::optional<int> world_rank() const { return world_rank_; }
  std::optional<int> world_size() const { return world_size_; }

  // strings()[id] is the string with that id; strings()[0] == "". Ids are dense from 0 in every file collscope
  // writes: one far beyond the table's row count is refused (it would size the vector), not allocated.
  std::vector<std::string> strings() const;
  std::vector<ThreadRow> threads() const { return rows<ThreadRow>(); }
  std::vector<CommunicatorRow> communicators() const { return rows<CommunicatorRow>(); }

  // Any table, in its readers' order (tables.def), reading only the columns in `cols` (the other members keep
  // their defaults): for_each<CollectiveRow>(columns<&CollectiveRow::comm, &CollectiveRow::seq>(), fn).
  // Streams rows without materialising the table (10 M rows fit in any memory budget). A table newer than the
  // file's schema version has no rows; a column newer than it reads as its default.
  template <typename Row, typename Fn>
  void for_each(ColumnSet<Row> cols, Fn&& fn) const {
    using F = std::remove_reference_t<Fn>;
    scan<Row>(cols, RowSink<Row>{const_cast<void*>(static_cast<const void*>(&fn)),
                                 [](void* f, const Row& row) { (*static_cast<F*>(f))(row); }});
  }
  template <typename Row, typename Fn>
  void for_each(Fn&& fn) const {
    for_each<Row>(ColumnSet<Row>::all(), std::forward<Fn>(fn));
  }
  template <typename Row>
  std::vector<Row> rows(ColumnSet<Row> cols = ColumnSet<Row>::all()) const {
    std::vector<Row> out;
    for_each<Row>(cols, [&](const Row& row) { out.push_back(row); });
    return out;
  }

  void for_each_collective(const std::function<void(const CollectiveRow&)>& fn) const { for_each<CollectiveRow>(fn); }
  std::vector<CollectiveRow> collectives() const;
  // One rank's call number `seq` on file communicator `comm` (communicators.id), every column; nullopt when the
  // file has none. For a viewer showing one call's details on demand (a table scan: ~10 ms per 100 k rows).
  std::optional<CollectiveRow> find_collective(std::int64_t comm, std::int64_t seq) const;
  // The same rows, only the columns analysis needs (kCollectiveSummaryColumns).
  void for_each_collective_summary(const std::function<void(const CollectiveSummary&)>& fn) const {
    for_each<CollectiveRow>(kCollectiveSummaryColumns, fn);
  }
  void for_each_nvtx_range(const std::function<void(const NvtxRangeRow&)>& fn) const { for_each<NvtxRangeRow>(fn); }
  std::vector<NvtxRangeRow> nvtx_ranges() const { return rows<NvtxRangeRow>(); }
  void for_each_gpu_activity(const std::function<void(const GpuActivityRow&)>& fn) const {
    for_each<GpuActivityRow>(fn);
  }
  std::vector<GpuActivityRow> gpu_activities() const { return rows<GpuActivityRow>(); }
  std::vector<BufferRow> buffers() const { return rows<BufferRow>(); }
  // Calls still in flight when the file was last written (empty for schema 1.0 files, which lack the table).
  std::vector<CallInFlightRow> calls_in_flight() const { return rows<CallInFlightRow>(); }

  std::int64_t row_count(std::string_view table) const;

  // The open connection, for queries of one's own (read-only).
  const sqlite::Database& database() const { return db_; }

 private:
  template <typename Row>
  struct RowSink {
    void* fn;
    void (*call)(void*, const Row&);
  };
  template <typename Row>
  void scan(ColumnSet<Row> cols, RowSink<Row> sink) const;
  template <typename Row>
  void scan_with_batches(ColumnSet<Row> cols, RowSink<Row> sink) const;
  void scan_buffers_with_batches(ColumnSet<BufferRow> cols, RowSink<BufferRow> sink) const;
  // Whether some rows of `Row` are in event batches (its own kind; for collectives, also GPU times saved apart).
  template <typename Row>
  bool reads_batches() const;
  // Whether the file holds event_batches rows of `kind` (BatchKind): rows not yet expanded by `collscope sql`.
  bool has_event_batches(std::int64_t kind) const;
  [[noreturn]] void fail(std::string_view what) const;
  void check_world();

  std::string path_;
  sqlite::Database db_;
  SchemaVersion version_;
  std::optional<int> world_rank_, world_size_;
};

// "rank-00003.sqlite" for world rank 3.
std::string rank_file_name(int world_rank);
// The rank-*.sqlite files of a run directory, sorted. Throws InputError when `run_dir` is not a directory or
// holds none.
std::vector<std::string> rank_files(const std::string& run_dir);

}  // namespace collscope::store
