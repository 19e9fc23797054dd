#pragma once
// Writes one rank's trace file (schema v1). Not thread-safe: the preload's single writer thread owns it.
// Rows are buffered by SQLite inside begin()/commit() batches; a crash loses at most the open batch.
#include <collscope/store/nccl_profile.hpp>
#include <collscope/store/schema.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

struct sqlite3;
struct sqlite3_stmt;

namespace collscope::store {

class TraceWriter {
 public:
  // Creates `path` (replacing an old file) with the v1 schema. Throws collscope::Error naming the file.
  explicit TraceWriter(std::string path);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  const std::string& path() const { return path_; }

  void begin();
  void commit();

  void set_meta(std::string_view key, std::string_view value);
  // Interned string id (>= 1; 0 means "none"). Cached: a string is written once.
  std::int64_t intern(std::string_view value);

  void add_thread(const ThreadRow& row);
  void add_communicator(const CommunicatorRow& row);  // replaces the row with the same id
  void set_communicator_destroyed(std::int64_t id, std::int64_t destroyed_ns);
  void add_collective(const CollectiveRow& row);       // row.id == 0: assigned by SQLite
  void set_collective_gpu_times(std::int64_t id, std::int64_t gpu_start_ns, std::int64_t gpu_end_ns);
  void add_nvtx_range(const NvtxRangeRow& row);
  void add_gpu_activity(const GpuActivityRow& row);
  void upsert_buffer(const BufferRow& row);            // one row per address
  void set_call_in_flight(const CallInFlightRow& row);  // replaces the thread's row
  void clear_call_in_flight(std::int64_t thread);
  // NCCL profiler and CUPTI links (schema 1.2, nccl_profile.hpp; written in nccl_profile_writer.cpp).
  void add_nccl_profile(const NcclProfileRow& row);  // replaces the collective's row
  void add_nccl_proxy_op(const NcclProxyOpRow& row);
  void add_collective_gpu_work(const CollectiveGpuWorkRow& row);  // a repeated pair is ignored

  // Last rowid assigned by an add_* call.
  std::int64_t last_id() const;

 private:
  sqlite3_stmt* prepare(const char* sql);
  void exec(const char* sql);
  [[noreturn]] void fail(std::string_view what) const;

  std::string path_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* meta_ = nullptr;
  sqlite3_stmt* string_ = nullptr;
  sqlite3_stmt* thread_ = nullptr;
  sqlite3_stmt* comm_ = nullptr;
  sqlite3_stmt* comm_destroyed_ = nullptr;
  sqlite3_stmt* collective_ = nullptr;
  sqlite3_stmt* collective_gpu_ = nullptr;
  sqlite3_stmt* nvtx_ = nullptr;
  sqlite3_stmt* gpu_ = nullptr;
  sqlite3_stmt* buffer_ = nullptr;
  sqlite3_stmt* in_flight_ = nullptr;
  sqlite3_stmt* in_flight_clear_ = nullptr;
  sqlite3_stmt* nccl_profile_ = nullptr;
  sqlite3_stmt* nccl_proxy_op_ = nullptr;
  sqlite3_stmt* gpu_work_ = nullptr;
  std::unordered_map<std::string, std::int64_t> interned_;
  std::int64_t next_string_id_ = 1;
  bool in_transaction_ = false;
};

}  // namespace collscope::store
