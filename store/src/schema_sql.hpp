#pragma once
// The v1 DDL. Changing a table means a schema version bump (minor for added columns/tables, major otherwise)
// and an update of docs/trace-format.md.
namespace collscope::store::detail {

inline constexpr const char* kSchemaSql = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE strings(id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ops(code INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE threads(id INTEGER PRIMARY KEY, tid INTEGER NOT NULL, name TEXT);
CREATE TABLE communicators(
  id INTEGER PRIMARY KEY, key INTEGER NOT NULL, backend TEXT NOT NULL, size INTEGER NOT NULL,
  rank INTEGER NOT NULL, parent INTEGER, color INTEGER, members TEXT NOT NULL,
  created_ns INTEGER NOT NULL, destroyed_ns INTEGER, name TEXT);
CREATE TABLE collectives(
  id INTEGER PRIMARY KEY, comm INTEGER NOT NULL, seq INTEGER NOT NULL, op INTEGER NOT NULL,
  count INTEGER NOT NULL, datatype INTEGER NOT NULL, bytes INTEGER NOT NULL, reduce_op INTEGER NOT NULL,
  root INTEGER, peer INTEGER, sendbuf INTEGER NOT NULL, recvbuf INTEGER NOT NULL, stream INTEGER,
  thread INTEGER NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
  gpu_start_ns INTEGER, gpu_end_ns INTEGER, correlation INTEGER, grp INTEGER, status INTEGER NOT NULL);
CREATE TABLE buffers(
  address INTEGER PRIMARY KEY, bytes_max INTEGER NOT NULL, bytes_min INTEGER NOT NULL,
  bytes_total INTEGER NOT NULL, uses INTEGER NOT NULL, first_ns INTEGER NOT NULL, last_ns INTEGER NOT NULL,
  tensors_packed INTEGER NOT NULL DEFAULT 0, bytes_packed INTEGER NOT NULL DEFAULT 0);
CREATE TABLE nvtx_ranges(
  id INTEGER PRIMARY KEY, domain INTEGER NOT NULL, name INTEGER NOT NULL, kind INTEGER NOT NULL,
  category INTEGER NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER, thread INTEGER NOT NULL,
  end_thread INTEGER, depth INTEGER NOT NULL, payload_int INTEGER, payload_double REAL, color INTEGER);
CREATE TABLE calls_in_flight(
  thread INTEGER PRIMARY KEY, comm INTEGER NOT NULL, seq INTEGER NOT NULL, op INTEGER NOT NULL,
  count INTEGER NOT NULL, datatype INTEGER NOT NULL, bytes INTEGER NOT NULL, reduce_op INTEGER NOT NULL,
  root INTEGER, start_ns INTEGER NOT NULL, seen_ns INTEGER NOT NULL);
CREATE TABLE gpu_activities(
  id INTEGER PRIMARY KEY, kind INTEGER NOT NULL, name INTEGER NOT NULL, device INTEGER NOT NULL,
  stream INTEGER NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, correlation INTEGER NOT NULL,
  bytes INTEGER NOT NULL, copy_kind INTEGER);
CREATE TABLE nccl_profile(
  collective INTEGER PRIMARY KEY, algorithm INTEGER NOT NULL, protocol INTEGER NOT NULL, channels INTEGER NOT NULL,
  warps INTEGER NOT NULL, kernel_channels INTEGER NOT NULL, nccl_seq INTEGER NOT NULL, proxy_ops INTEGER NOT NULL,
  api_version INTEGER NOT NULL);
CREATE TABLE nccl_proxy_ops(
  id INTEGER PRIMARY KEY, collective INTEGER NOT NULL, channel INTEGER NOT NULL, peer INTEGER NOT NULL,
  is_send INTEGER NOT NULL, steps INTEGER NOT NULL, steps_done INTEGER NOT NULL, chunk_bytes INTEGER NOT NULL,
  bytes INTEGER NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL);
CREATE TABLE collective_gpu_work(
  collective INTEGER NOT NULL, activity INTEGER NOT NULL, PRIMARY KEY(collective, activity)) WITHOUT ROWID;
)sql";

}  // namespace collscope::store::detail
