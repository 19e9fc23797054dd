#include <collscope/store/trace_writer.hpp>

#include <collscope/store/error.hpp>

#include <fmt/format.h>
#include <sqlite3.h>

#include <cstdio>
#include <filesystem>

#include "schema_sql.hpp"

namespace collscope::store {
namespace {

template <typename T>
void bind_opt(sqlite3_stmt* s, int i, const std::optional<T>& v) {
  if (!v) {
    sqlite3_bind_null(s, i);
  } else if constexpr (std::is_floating_point_v<T>) {
    sqlite3_bind_double(s, i, *v);
  } else {
    sqlite3_bind_int64(s, i, static_cast<sqlite3_int64>(*v));
  }
}

void bind_i(sqlite3_stmt* s, int i, std::int64_t v) { sqlite3_bind_int64(s, i, v); }
void bind_u(sqlite3_stmt* s, int i, std::uint64_t v) {
  sqlite3_bind_int64(s, i, static_cast<sqlite3_int64>(v));  // stored as the same 64 bits
}
void bind_id(sqlite3_stmt* s, int i, std::int64_t id) {
  if (id == 0) sqlite3_bind_null(s, i); else sqlite3_bind_int64(s, i, id);
}
void bind_text(sqlite3_stmt* s, int i, std::string_view v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}

// The columns collectives and calls_in_flight share, from parameter `first`: comm, seq, op, count, datatype,
// bytes, reduce_op, root.
template <typename Row>
void bind_call_columns(sqlite3_stmt* s, int first, const Row& r) {
  bind_i(s, first, r.comm);
  bind_i(s, first + 1, r.seq);
  bind_i(s, first + 2, static_cast<int>(r.op));
  bind_i(s, first + 3, r.count);
  bind_i(s, first + 4, r.datatype);
  bind_i(s, first + 5, r.bytes);
  bind_i(s, first + 6, r.reduce_op);
  bind_opt(s, first + 7, r.root);
}

std::string join_members(const std::vector<std::int32_t>& members) {
  std::string out;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(members[i]);
  }
  return out;
}

}  // namespace

TraceWriter::TraceWriter(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path_ + suffix, ec);
  if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error(fmt::format("{}: cannot create trace file: {}", path_, why));
  }
  // WAL: readers (analyzer, tuner's early stopping) can read while we write, and a killed process
  // leaves every committed batch intact. synchronous=NORMAL: no fsync per commit, only at checkpoints.
  exec("PRAGMA journal_mode=WAL");
  exec("PRAGMA synchronous=NORMAL");
  exec("PRAGMA page_size=8192");
  begin();
  exec(detail::kSchemaSql);
  meta_ = prepare("INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)");
  string_ = prepare("INSERT INTO strings(id, value) VALUES(?1, ?2)");
  thread_ = prepare("INSERT OR REPLACE INTO threads(id, tid, name) VALUES(?1, ?2, ?3)");
  comm_ = prepare(
      "INSERT OR REPLACE INTO communicators(id, key, backend, size, rank, parent, color, members, created_ns, "
      "destroyed_ns, name) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  comm_destroyed_ = prepare("UPDATE communicators SET destroyed_ns = ?2 WHERE id = ?1");
  collective_ = prepare(
      "INSERT INTO collectives(id, comm, seq, op, count, datatype, bytes, reduce_op, root, peer, sendbuf, "
      "recvbuf, stream, thread, start_ns, end_ns, gpu_start_ns, gpu_end_ns, correlation, grp, status) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)");
  collective_gpu_ = prepare("UPDATE collectives SET gpu_start_ns = ?2, gpu_end_ns = ?3 WHERE id = ?1");
  nvtx_ = prepare(
      "INSERT INTO nvtx_ranges(id, domain, name, kind, category, start_ns, end_ns, thread, end_thread, depth, "
      "payload_int, payload_double, color) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
  gpu_ = prepare(
      "INSERT INTO gpu_activities(id, kind, name, device, stream, start_ns, end_ns, correlation, bytes, "
      "copy_kind) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
  buffer_ = prepare(
      "INSERT OR REPLACE INTO buffers(address, bytes_max, bytes_min, bytes_total, uses, first_ns, last_ns, "
      "tensors_packed, bytes_packed) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  in_flight_ = prepare(
      "INSERT OR REPLACE INTO calls_in_flight(thread, comm, seq, op, count, datatype, bytes, reduce_op, root, "
      "start_ns, seen_ns) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  in_flight_clear_ = prepare("DELETE FROM calls_in_flight WHERE thread = ?1");
  nccl_profile_ = prepare(
      "INSERT OR REPLACE INTO nccl_profile(collective, algorithm, protocol, channels, warps, kernel_channels, "
      "nccl_seq, proxy_ops, api_version) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  nccl_proxy_op_ = prepare(
      "INSERT INTO nccl_proxy_ops(id, collective, channel, peer, is_send, steps, steps_done, chunk_bytes, bytes, "
      "start_ns, end_ns) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  gpu_work_ = prepare("INSERT OR IGNORE INTO collective_gpu_work(collective, activity) VALUES(?1, ?2)");
  {
    sqlite3_stmt* op = prepare("INSERT INTO ops(code, name) VALUES(?1, ?2)");
    for (int i = 0; i < kOpCount; ++i) {
      bind_i(op, 1, i);
      bind_text(op, 2, op_name(static_cast<Op>(i)));
      sqlite3_step(op);
      sqlite3_reset(op);
    }
    sqlite3_finalize(op);
  }
  bind_i(string_, 1, 0);
  bind_text(string_, 2, "");
  sqlite3_step(string_);
  sqlite3_reset(string_);
  set_meta(meta_key::kSchemaVersion, fmt::format("{}.{}", kSchemaMajor, kSchemaMinor));
  commit();
}

TraceWriter::~TraceWriter() {
  if (!db_) return;
  if (in_transaction_) sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
  for (sqlite3_stmt* s : {meta_, string_, thread_, comm_, comm_destroyed_, collective_, collective_gpu_, nvtx_,
                          gpu_, buffer_, in_flight_, in_flight_clear_, nccl_profile_, nccl_proxy_op_, gpu_work_})
    sqlite3_finalize(s);
  sqlite3_close(db_);
}

void TraceWriter::fail(std::string_view what) const {
  throw Error(fmt::format("{}: {}: {}", path_, what, db_ ? sqlite3_errmsg(db_) : "closed"));
}

sqlite3_stmt* TraceWriter::prepare(const char* sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK) fail("prepare");
  return s;
}

void TraceWriter::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string why = err ? err : "unknown error";
    sqlite3_free(err);
    throw Error(fmt::format("{}: {}", path_, why));
  }
}

void TraceWriter::begin() {
  if (in_transaction_) return;
  exec("BEGIN");
  in_transaction_ = true;
}

void TraceWriter::commit() {
  if (!in_transaction_) return;
  in_transaction_ = false;
  exec("COMMIT");
}

static void step_reset(sqlite3_stmt* s, const TraceWriter& w, int expect = SQLITE_DONE) {
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  if (rc != expect)
    throw Error(fmt::format("{}: write failed: {}", w.path(), sqlite3_errstr(rc)));
}

void TraceWriter::set_meta(std::string_view key, std::string_view value) {
  bind_text(meta_, 1, key);
  bind_text(meta_, 2, value);
  step_reset(meta_, *this);
}

std::int64_t TraceWriter::intern(std::string_view value) {
  if (value.empty()) return 0;
  auto it = interned_.find(std::string(value));
  if (it != interned_.end()) return it->second;
  const std::int64_t id = next_string_id_++;
  bind_i(string_, 1, id);
  bind_text(string_, 2, value);
  step_reset(string_, *this);
  interned_.emplace(std::string(value), id);
  return id;
}

void TraceWriter::add_thread(const ThreadRow& r) {
  bind_i(thread_, 1, r.id);
  bind_i(thread_, 2, r.tid);
  bind_text(thread_, 3, r.name);
  step_reset(thread_, *this);
}

void TraceWriter::add_communicator(const CommunicatorRow& r) {
  bind_i(comm_, 1, r.id);
  bind_u(comm_, 2, r.key);
  bind_text(comm_, 3, backend_name(r.backend));
  bind_i(comm_, 4, r.size);
  bind_i(comm_, 5, r.rank);
  bind_opt(comm_, 6, r.parent);
  bind_opt(comm_, 7, r.color);
  bind_text(comm_, 8, join_members(r.members));
  bind_i(comm_, 9, r.created_ns);
  bind_opt(comm_, 10, r.destroyed_ns);
  bind_text(comm_, 11, r.name);
  step_reset(comm_, *this);
}

void TraceWriter::set_communicator_destroyed(std::int64_t id, std::int64_t destroyed_ns) {
  bind_i(comm_destroyed_, 1, id);
  bind_i(comm_destroyed_, 2, destroyed_ns);
  step_reset(comm_destroyed_, *this);
}

void TraceWriter::add_collective(const CollectiveRow& r) {
  sqlite3_stmt* s = collective_;
  bind_id(s, 1, r.id);
  bind_call_columns(s, 2, r);
  bind_opt(s, 10, r.peer);
  bind_u(s, 11, r.sendbuf);
  bind_u(s, 12, r.recvbuf);
  bind_opt(s, 13, r.stream);
  bind_i(s, 14, r.thread);
  bind_i(s, 15, r.start_ns);
  bind_i(s, 16, r.end_ns);
  bind_opt(s, 17, r.gpu_start_ns);
  bind_opt(s, 18, r.gpu_end_ns);
  bind_opt(s, 19, r.correlation);
  bind_opt(s, 20, r.group);
  bind_i(s, 21, r.status);
  step_reset(s, *this);
}

void TraceWriter::set_collective_gpu_times(std::int64_t id, std::int64_t gpu_start_ns, std::int64_t gpu_end_ns) {
  bind_i(collective_gpu_, 1, id);
  bind_i(collective_gpu_, 2, gpu_start_ns);
  bind_i(collective_gpu_, 3, gpu_end_ns);
  step_reset(collective_gpu_, *this);
}

void TraceWriter::add_nvtx_range(const NvtxRangeRow& r) {
  sqlite3_stmt* s = nvtx_;
  bind_id(s, 1, r.id);
  bind_i(s, 2, r.domain);
  bind_i(s, 3, r.name);
  bind_i(s, 4, static_cast<int>(r.kind));
  bind_i(s, 5, r.category);
  bind_i(s, 6, r.start_ns);
  bind_opt(s, 7, r.end_ns);
  bind_i(s, 8, r.thread);
  bind_opt(s, 9, r.end_thread);
  bind_i(s, 10, r.depth);
  bind_opt(s, 11, r.payload_int);
  bind_opt(s, 12, r.payload_double);
  bind_opt(s, 13, r.color);
  step_reset(s, *this);
}

void TraceWriter::add_gpu_activity(const GpuActivityRow& r) {
  sqlite3_stmt* s = gpu_;
  bind_id(s, 1, r.id);
  bind_i(s, 2, static_cast<int>(r.kind));
  bind_i(s, 3, r.name);
  bind_i(s, 4, r.device);
  bind_u(s, 5, r.stream);
  bind_i(s, 6, r.start_ns);
  bind_i(s, 7, r.end_ns);
  bind_u(s, 8, r.correlation);
  bind_i(s, 9, r.bytes);
  bind_opt(s, 10, r.copy_kind);
  step_reset(s, *this);
}

void TraceWriter::upsert_buffer(const BufferRow& r) {
  sqlite3_stmt* s = buffer_;
  bind_u(s, 1, r.address);
  bind_i(s, 2, r.bytes_max);
  bind_i(s, 3, r.bytes_min);
  bind_i(s, 4, r.bytes_total);
  bind_i(s, 5, r.uses);
  bind_i(s, 6, r.first_ns);
  bind_i(s, 7, r.last_ns);
  bind_i(s, 8, r.tensors_packed);
  bind_i(s, 9, r.bytes_packed);
  step_reset(s, *this);
}

void TraceWriter::set_call_in_flight(const CallInFlightRow& r) {
  sqlite3_stmt* s = in_flight_;
  bind_i(s, 1, r.thread);
  bind_call_columns(s, 2, r);
  bind_i(s, 10, r.start_ns);
  bind_i(s, 11, r.seen_ns);
  step_reset(s, *this);
}

void TraceWriter::clear_call_in_flight(std::int64_t thread) {
  bind_i(in_flight_clear_, 1, thread);
  step_reset(in_flight_clear_, *this);
}

// ---- schema 1.2: NCCL profiler and CUPTI links (nccl_profile.hpp) ----

void TraceWriter::add_nccl_profile(const NcclProfileRow& r) {
  sqlite3_stmt* s = nccl_profile_;
  bind_i(s, 1, r.collective);
  bind_i(s, 2, r.algorithm);
  bind_i(s, 3, r.protocol);
  bind_i(s, 4, r.channels);
  bind_i(s, 5, r.warps);
  bind_i(s, 6, r.kernel_channels);
  bind_i(s, 7, r.nccl_seq);
  bind_i(s, 8, r.proxy_ops);
  bind_i(s, 9, r.api_version);
  step_reset(s, *this);
}

void TraceWriter::add_nccl_proxy_op(const NcclProxyOpRow& r) {
  sqlite3_stmt* s = nccl_proxy_op_;
  bind_id(s, 1, r.id);
  bind_i(s, 2, r.collective);
  bind_i(s, 3, r.channel);
  bind_i(s, 4, r.peer);
  bind_i(s, 5, r.is_send ? 1 : 0);
  bind_i(s, 6, r.steps);
  bind_i(s, 7, r.steps_done);
  bind_i(s, 8, r.chunk_bytes);
  bind_i(s, 9, r.bytes);
  bind_i(s, 10, r.start_ns);
  bind_i(s, 11, r.end_ns);
  step_reset(s, *this);
}

void TraceWriter::add_collective_gpu_work(const CollectiveGpuWorkRow& r) {
  bind_i(gpu_work_, 1, r.collective);
  bind_i(gpu_work_, 2, r.activity);
  step_reset(gpu_work_, *this);
}

std::int64_t TraceWriter::last_id() const { return sqlite3_last_insert_rowid(db_); }

}  // namespace collscope::store
