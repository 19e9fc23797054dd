#pragma once
// Writes one rank's trace file (schema v1). Not thread-safe: the preload's single writer thread owns it.
// Rows are buffered inside begin()/commit() batches; a crash loses at most the open batch. While the file is
// open it is in WAL mode, so readers may read it at any time; closing it (the destructor) turns it into a single
// self-contained file that any user can read from a read-only location, leaving nothing beside it.
#include <collscope/store/event_batch.hpp>
#include <collscope/store/schema.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace collscope::store {

class TraceWriter {
 public:
  // Creates `path` (replacing an old file) with the v1 schema. Throws collscope::Error naming the file.
  explicit TraceWriter(std::string path);
  // Opens an existing, finished trace file to add to it (expand_event_batches). Throws collscope::Error naming the
  // file when it cannot be opened for writing or is not a trace.
  struct Existing {};
  TraceWriter(std::string path, Existing);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  const std::string& path() const { return path_; }

  void begin();
  void commit();
  // Undoes the open transaction (rows added since begin() that were not yet written are discarded too).
  void rollback();

  void set_meta(std::string_view key, std::string_view value);
  // Interned string id (>= 1; 0 means "none"). Cached: a string is written once.
  std::int64_t intern(std::string_view value);

  // Any table's row. Tables with an automatic id (collectives, nvtx_ranges, gpu_activities) append (row.id == 0:
  // the next id; last_id() says which); the others replace the row with the same key.
  template <typename Row>
  void add(const Row& row);

  void add_thread(const ThreadRow& row) { add(row); }
  void add_communicator(const CommunicatorRow& row) { add(row); }  // replaces the row with the same id
  void set_communicator_destroyed(std::int64_t id, std::int64_t destroyed_ns);
  void add_collective(const CollectiveRow& row) { add(row); }       // row.id == 0: the next id
  void set_collective_gpu_times(std::int64_t id, std::int64_t gpu_start_ns, std::int64_t gpu_end_ns);
  void add_nvtx_range(const NvtxRangeRow& row) { add(row); }
  void add_gpu_activity(const GpuActivityRow& row) { add(row); }
  void upsert_buffer(const BufferRow& row) { add(row); }            // one row per address
  void set_call_in_flight(const CallInFlightRow& row) { add(row); }  // replaces the thread's row
  void clear_call_in_flight(std::int64_t thread);

  // Last id assigned by an add call.
  std::int64_t last_id() const { return last_id_; }

  // One event_batches row of `count` records of `kind` (event_batch.hpp) recorded by `thread` (kinds 3-6: 0, their
  // records say their thread), `bytes` bytes at `payload`: their rows take the next `count` ids of the kind's table,
  // in order (kinds 5 and 6, which are no table's rows: the next record numbers). Returns the first.
  std::int64_t add_event_batch(BatchKind kind, std::int64_t thread, std::int64_t count, const std::uint8_t* payload,
                               std::size_t bytes);
  // The id the next row or batch record of `kind`'s table will get (kinds 5 and 6: the next record number): what a
  // caller holding records for the next batch adds their count to, to know a record's row id before it is saved.
  std::int64_t next_id(BatchKind kind);
  // Turns every event_batches row into the rows it stands for and deletes it, in one transaction of its own
  // (call outside begin()/commit()): a file that was finished looks as if every event had been a row. Returns the
  // rows added. On failure nothing changes (the batches stay, readers decode them) and it throws.
  std::int64_t expand_event_batches();

  struct Impl;

 private:
  std::string path_;
  std::unique_ptr<Impl> impl_;
  std::int64_t last_id_ = 0;
  std::int64_t& next_batch_id(BatchKind kind);
};

}  // namespace collscope::store
