#include <collscope/store/trace_reader.hpp>

#include <collscope/store/error.hpp>

#include <fmt/format.h>
#include <sqlite3.h>

#include <charconv>
#include <algorithm>
#include <filesystem>

namespace collscope::store {
namespace {

// RAII statement; errors carry the file name.
class Query {
 public:
  Query(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK) throw_error();
  }
  ~Query() { sqlite3_finalize(s_); }
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw_error();
  }
  std::int64_t i(int col) const { return sqlite3_column_int64(s_, col); }
  std::uint64_t u(int col) const { return static_cast<std::uint64_t>(sqlite3_column_int64(s_, col)); }
  double d(int col) const { return sqlite3_column_double(s_, col); }
  bool null(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
  std::string text(int col) const {
    auto p = sqlite3_column_text(s_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(s_, col)) : std::string();
  }
  template <typename T>
  std::optional<T> opt(int col) const {
    if (null(col)) return std::nullopt;
    if constexpr (std::is_floating_point_v<T>) return d(col);
    else return static_cast<T>(i(col));
  }
  sqlite3_stmt* raw() { return s_; }

 private:
  [[noreturn]] void throw_error() const {
    int code = sqlite3_errcode(db_);
    std::string msg = sqlite3_errmsg(db_);
    if (code == SQLITE_NOTADB) throw InputError(fmt::format("{}: not a collscope trace (not an SQLite database)", path_));
    if (code == SQLITE_CORRUPT) throw InputError(fmt::format("{}: trace file is truncated or corrupt ({})", path_, msg));
    throw InputError(fmt::format("{}: cannot read trace: {}", path_, msg));
  }
  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* s_ = nullptr;
};

std::vector<std::int32_t> split_members(const std::string& s) {
  std::vector<std::int32_t> out;
  const char* p = s.data();
  const char* end = p + s.size();
  while (p < end) {
    std::int32_t v = 0;
    auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc()) break;
    out.push_back(v);
    p = next;
    if (p < end && *p == ',') ++p;
  }
  return out;
}

// The columns collectives and calls_in_flight share, from column `first`: comm, seq, op, count, datatype, bytes,
// reduce_op, root.
template <typename Row>
void read_call_columns(const Query& q, int first, Row& r) {
  r.comm = q.i(first);
  r.seq = q.i(first + 1);
  const auto op = q.i(first + 2);
  r.op = (op >= 0 && op < kOpCount) ? static_cast<Op>(op) : Op::Unknown;
  r.count = q.i(first + 3);
  r.datatype = q.i(first + 4);
  r.bytes = q.i(first + 5);
  r.reduce_op = q.i(first + 6);
  r.root = q.template opt<std::int32_t>(first + 7);
}

}  // namespace

std::string rank_file_name(int world_rank) { return fmt::format("rank-{:05d}.sqlite", world_rank); }

std::vector<std::string> rank_files(const std::string& run_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(run_dir, ec)) {
    if (std::filesystem::is_regular_file(run_dir, ec) && run_dir.ends_with(".json"))
      throw InputError(fmt::format("{}: a JSON file, not a run directory (a Horovod Timeline becomes a run with "
                                   "'collscope import {} -o RUN_DIR')", run_dir, run_dir));
    throw InputError(fmt::format("{}: not a run directory", run_dir));
  }
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(run_dir, ec)) {
    const auto name = entry.path().filename().string();
    if (name.starts_with("rank-") && name.ends_with(".sqlite")) paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  if (paths.empty()) throw InputError(fmt::format("{}: no rank-*.sqlite trace files: not a collscope run directory", run_dir));
  return paths;
}

TraceReader::TraceReader(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) throw InputError(fmt::format("{}: no such file", path_));
  if (std::filesystem::is_directory(path_, ec))
    throw InputError(fmt::format("{}: is a directory, not a trace file", path_));
  if (std::filesystem::file_size(path_, ec) == 0)
    throw InputError(fmt::format("{}: empty file, not a collscope trace", path_));
  if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw InputError(fmt::format("{}: cannot open trace: {}", path_, why));
  }
  sqlite3_busy_timeout(db_, 2000);
  // Read through a memory map: no copy of each page into the page cache of SQLite (a tenth of a 1 M-row load).
  sqlite3_exec(db_, "PRAGMA mmap_size=1073741824", nullptr, nullptr, nullptr);
  try {
    {
      Query q(db_, path_, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='meta'");
      if (!q.step() || q.i(0) == 0) throw InputError(fmt::format("{}: not a collscope trace (no meta table)", path_));
    }
    auto v = meta_value(meta_key::kSchemaVersion);
    if (!v) throw InputError(fmt::format("{}: not a collscope trace (no schema_version in meta)", path_));
    int major = 0, minor = 0;
    if (std::sscanf(v->c_str(), "%d.%d", &major, &minor) < 1)
      throw InputError(fmt::format("{}: unreadable schema version '{}'", path_, *v));
    version_ = {major, minor};
    if (major > kSchemaMajor)
      throw InputError(fmt::format("{}: schema version {} is newer than this collscope reads ({}.x); upgrade collscope",
                                   path_, *v, kSchemaMajor));
    if (major < 1) throw InputError(fmt::format("{}: schema version {} is not supported", path_, *v));
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

TraceReader::TraceReader(TraceReader&& other) noexcept
    : path_(std::move(other.path_)), db_(other.db_), version_(other.version_) {
  other.db_ = nullptr;
}

TraceReader::~TraceReader() {
  if (db_) sqlite3_close(db_);
}

void TraceReader::fail(std::string_view what) const { throw InputError(fmt::format("{}: {}", path_, what)); }

std::map<std::string, std::string> TraceReader::meta() const {
  std::map<std::string, std::string> out;
  Query q(db_, path_, "SELECT key, value FROM meta");
  while (q.step()) out.emplace(q.text(0), q.text(1));
  return out;
}

std::optional<std::string> TraceReader::meta_value(std::string_view key) const {
  Query q(db_, path_, "SELECT value FROM meta WHERE key = ?1");
  sqlite3_bind_text(q.raw(), 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
  if (!q.step()) return std::nullopt;
  return q.text(0);
}

std::optional<std::int64_t> TraceReader::meta_int(std::string_view key) const {
  auto v = meta_value(key);
  if (!v) return std::nullopt;
  std::int64_t out = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || p != v->data() + v->size()) return std::nullopt;
  return out;
}

std::vector<std::string> TraceReader::strings() const {
  std::vector<std::string> out(1);
  Query q(db_, path_, "SELECT id, value FROM strings ORDER BY id");
  while (q.step()) {
    auto id = q.i(0);
    if (id < 0 || id > (1 << 28)) fail(fmt::format("string id {} out of range", id));
    if (static_cast<std::size_t>(id) >= out.size()) out.resize(id + 1);
    out[id] = q.text(1);
  }
  return out;
}

std::vector<ThreadRow> TraceReader::threads() const {
  std::vector<ThreadRow> out;
  Query q(db_, path_, "SELECT id, tid, name FROM threads ORDER BY id");
  while (q.step()) out.push_back({q.i(0), q.i(1), q.text(2)});
  return out;
}

std::vector<CommunicatorRow> TraceReader::communicators() const {
  std::vector<CommunicatorRow> out;
  Query q(db_, path_,
          "SELECT id, key, backend, size, rank, parent, color, members, created_ns, destroyed_ns, name "
          "FROM communicators ORDER BY id");
  while (q.step()) {
    CommunicatorRow r;
    r.id = q.i(0);
    r.key = q.u(1);
    r.backend = q.text(2) == "nccl" ? Backend::Nccl : Backend::Mpi;
    r.size = static_cast<std::int32_t>(q.i(3));
    r.rank = static_cast<std::int32_t>(q.i(4));
    r.parent = q.opt<std::uint64_t>(5);
    r.color = q.opt<std::int64_t>(6);
    r.members = split_members(q.text(7));
    r.created_ns = q.i(8);
    r.destroyed_ns = q.opt<std::int64_t>(9);
    r.name = q.text(10);
    out.push_back(std::move(r));
  }
  return out;
}

namespace {

constexpr const char* kCollectiveSelect =
    "SELECT id, comm, seq, op, count, datatype, bytes, reduce_op, root, peer, sendbuf, recvbuf, stream, "
    "thread, start_ns, end_ns, gpu_start_ns, gpu_end_ns, correlation, grp, status FROM collectives ";

void decode_collective(const Query& q, CollectiveRow& r) {
  r.id = q.i(0);
  read_call_columns(q, 1, r);
  r.peer = q.opt<std::int32_t>(9);
  r.sendbuf = q.u(10);
  r.recvbuf = q.u(11);
  r.stream = q.opt<std::uint64_t>(12);
  r.thread = q.i(13);
  r.start_ns = q.i(14);
  r.end_ns = q.i(15);
  r.gpu_start_ns = q.opt<std::int64_t>(16);
  r.gpu_end_ns = q.opt<std::int64_t>(17);
  r.correlation = q.opt<std::uint64_t>(18);
  r.group = q.opt<std::int64_t>(19);
  r.status = static_cast<Status>(q.i(20));
}

}  // namespace

void TraceReader::for_each_collective(const std::function<void(const CollectiveRow&)>& fn) const {
  Query q(db_, path_, (std::string(kCollectiveSelect) + "ORDER BY id").c_str());
  CollectiveRow r;
  while (q.step()) {
    decode_collective(q, r);
    fn(r);
  }
}

std::optional<CollectiveRow> TraceReader::find_collective(std::int64_t comm, std::int64_t seq) const {
  Query q(db_, path_, (std::string(kCollectiveSelect) + "WHERE comm = ?1 AND seq = ?2 ORDER BY id LIMIT 1").c_str());
  sqlite3_bind_int64(q.raw(), 1, comm);
  sqlite3_bind_int64(q.raw(), 2, seq);
  if (!q.step()) return std::nullopt;
  CollectiveRow r;
  decode_collective(q, r);
  return r;
}

void TraceReader::for_each_collective_summary(const std::function<void(const CollectiveSummary&)>& fn) const {
  Query q(db_, path_,
          "SELECT comm, seq, op, count, datatype, bytes, root, peer, start_ns, end_ns, status, thread, sendbuf "
          "FROM collectives "
          "ORDER BY id");
  CollectiveSummary r;
  while (q.step()) {
    r.comm = q.i(0);
    r.seq = q.i(1);
    auto op = q.i(2);
    r.op = (op >= 0 && op < kOpCount) ? static_cast<Op>(op) : Op::Unknown;
    r.count = q.i(3);
    r.datatype = q.i(4);
    r.bytes = q.i(5);
    r.root = q.opt<std::int32_t>(6);
    r.peer = q.opt<std::int32_t>(7);
    r.start_ns = q.i(8);
    r.end_ns = q.i(9);
    r.status = static_cast<Status>(q.i(10));
    r.thread = q.i(11);
    r.sendbuf = static_cast<std::uint64_t>(q.i(12));
    fn(r);
  }
}

std::vector<CollectiveRow> TraceReader::collectives() const {
  std::vector<CollectiveRow> out;
  out.reserve(static_cast<std::size_t>(row_count("collectives")));
  for_each_collective([&](const CollectiveRow& r) { out.push_back(r); });
  return out;
}

void TraceReader::for_each_nvtx_range(const std::function<void(const NvtxRangeRow&)>& fn) const {
  Query q(db_, path_,
          "SELECT id, domain, name, kind, category, start_ns, end_ns, thread, end_thread, depth, payload_int, "
          "payload_double, color FROM nvtx_ranges ORDER BY id");
  NvtxRangeRow r;
  while (q.step()) {
    r.id = q.i(0);
    r.domain = q.i(1);
    r.name = q.i(2);
    r.kind = static_cast<NvtxKind>(q.i(3));
    r.category = q.i(4);
    r.start_ns = q.i(5);
    r.end_ns = q.opt<std::int64_t>(6);
    r.thread = q.i(7);
    r.end_thread = q.opt<std::int64_t>(8);
    r.depth = static_cast<std::int32_t>(q.i(9));
    r.payload_int = q.opt<std::int64_t>(10);
    r.payload_double = q.opt<double>(11);
    r.color = q.opt<std::uint32_t>(12);
    fn(r);
  }
}

std::vector<NvtxRangeRow> TraceReader::nvtx_ranges() const {
  std::vector<NvtxRangeRow> out;
  for_each_nvtx_range([&](const NvtxRangeRow& r) { out.push_back(r); });
  return out;
}

void TraceReader::for_each_gpu_activity(const std::function<void(const GpuActivityRow&)>& fn) const {
  Query q(db_, path_,
          "SELECT id, kind, name, device, stream, start_ns, end_ns, correlation, bytes, copy_kind "
          "FROM gpu_activities ORDER BY id");
  GpuActivityRow r;
  while (q.step()) {
    r.id = q.i(0);
    r.kind = static_cast<GpuActivityKind>(q.i(1));
    r.name = q.i(2);
    r.device = static_cast<std::int32_t>(q.i(3));
    r.stream = q.u(4);
    r.start_ns = q.i(5);
    r.end_ns = q.i(6);
    r.correlation = q.u(7);
    r.bytes = q.i(8);
    r.copy_kind = q.opt<std::int32_t>(9);
    fn(r);
  }
}

std::vector<GpuActivityRow> TraceReader::gpu_activities() const {
  std::vector<GpuActivityRow> out;
  for_each_gpu_activity([&](const GpuActivityRow& r) { out.push_back(r); });
  return out;
}

std::vector<BufferRow> TraceReader::buffers() const {
  std::vector<BufferRow> out;
  Query q(db_, path_,
          "SELECT address, bytes_max, bytes_min, bytes_total, uses, first_ns, last_ns, tensors_packed, bytes_packed "
          "FROM buffers ORDER BY uses DESC, address");
  while (q.step())
    out.push_back({q.u(0), q.i(1), q.i(2), q.i(3), q.i(4), q.i(5), q.i(6), q.i(7), q.i(8)});
  return out;
}

std::vector<CallInFlightRow> TraceReader::calls_in_flight() const {
  std::vector<CallInFlightRow> out;
  if (version_.major == 1 && version_.minor < 1) return out;
  Query q(db_, path_,
          "SELECT thread, comm, seq, op, count, datatype, bytes, reduce_op, root, start_ns, seen_ns "
          "FROM calls_in_flight ORDER BY thread");
  while (q.step()) {
    CallInFlightRow r;
    r.thread = q.i(0);
    read_call_columns(q, 1, r);
    r.start_ns = q.i(9);
    r.seen_ns = q.i(10);
    out.push_back(r);
  }
  return out;
}

std::int64_t TraceReader::row_count(std::string_view table) const {
  static constexpr std::string_view kTables[] = {"meta", "strings", "threads", "communicators", "collectives",
                                                 "buffers", "nvtx_ranges", "gpu_activities", "calls_in_flight"};
  bool known = false;
  for (auto t : kTables) known |= (t == table);
  if (!known) fail(fmt::format("unknown table '{}'", table));
  Query q(db_, path_, fmt::format("SELECT count(*) FROM {}", table).c_str());
  return q.step() ? q.i(0) : 0;
}

}  // namespace collscope::store
