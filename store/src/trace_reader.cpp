#include <collscope/store/trace_reader.hpp>

#include <collscope/store/error.hpp>
#include <collscope/store/event_batch.hpp>

#include <fmt/format.h>
#include <sqlite3.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <unordered_map>

#include "row_codec.hpp"

namespace collscope::store {
namespace {

// What a rank file's first 100 bytes say about how to open it.
struct FileHeader {
  bool wal = false;  // left in write-ahead-log mode: being written, or its writer was killed
};

FileHeader read_header(const std::string& path) {
  FileHeader h;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return h;  // SQLite will say why
  unsigned char bytes[100] = {};
  const ssize_t n = ::read(fd, bytes, sizeof bytes);
  ::close(fd);
  // Bytes 18 and 19: the file format's write and read versions, 2 in WAL mode (1 in rollback mode).
  h.wal = n >= 20 && std::memcmp(bytes, "SQLite format 3", 16) == 0 && bytes[18] == 2 && bytes[19] == 2;
  return h;
}

bool has_bytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && st.st_size > 0;
}

// Opens `path` read-only after checking it is a regular, non-empty file: a FIFO or a device named like a rank
// file would block or stream forever. A finished file (rollback mode, as the writer leaves it when it closes)
// opens without any file beside it. A file in WAL mode whose log is empty or gone is all in its main file: it
// opens immutable (no -shm created, works on a read-only mount). A file with a log (being written, or its
// writer was killed) is opened as SQLite reads WAL files, through its -shm.
sqlite::Database open_trace(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError(fmt::format("{}: no such file", path));
  if (S_ISDIR(st.st_mode)) throw InputError(fmt::format("{}: is a directory, not a trace file", path));
  if (!S_ISREG(st.st_mode)) throw InputError(fmt::format("{}: not a regular file, not a trace file", path));
  if (st.st_size == 0) throw InputError(fmt::format("{}: empty file, not a collscope trace", path));
  if (read_header(path).wal && !has_bytes(path + "-wal") && !has_bytes(path + "-shm"))
    return sqlite::Database(path, sqlite::OpenMode::Immutable);
  return sqlite::Database(path, sqlite::OpenMode::ReadOnly);
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

TraceReader::TraceReader(std::string path) : path_(std::move(path)), db_(open_trace(path_)) {
  db_.set_busy_timeout(2000);
  try {
    if (!db_.has_table("meta")) throw InputError(fmt::format("{}: not a collscope trace (no meta table)", path_));
  } catch (const InputError&) {
    const int code = db_.error_code() & 0xff;
    if (code == SQLITE_NOTADB)
      throw InputError(fmt::format("{}: not a collscope trace (not an SQLite database)", path_));
    if (code == SQLITE_CANTOPEN || code == SQLITE_READONLY)
      throw InputError(fmt::format("{}: its writer did not finish and its last batches are in the -wal file beside "
                                   "it, which SQLite reads only with write access to the directory: copy the run "
                                   "somewhere writable", path_));
    throw;
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
  // Pages through a memory map instead of read() copies: a tenth less time loading a 1 M-row run.
  db_.exec("PRAGMA mmap_size=1073741824");
  check_world();
}

// meta.world_size and world_rank size per-rank arrays downstream: a value no machine has is a corrupt file.
void TraceReader::check_world() {
  auto integer = [&](std::string_view key, std::int64_t lo, std::int64_t hi) -> std::optional<int> {
    const auto text = meta_value(key);
    if (!text) return std::nullopt;
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
    if (ec != std::errc() || p != text->data() + text->size() || v < lo || v > hi)
      fail(fmt::format("meta.{} '{}' is not a number from {} to {} (a corrupt file)", key, *text, lo, hi));
    return static_cast<int>(v);
  };
  world_size_ = integer(meta_key::kWorldSize, 1, kMaxWorldSize);
  // Not checked against world_size: a job that sets RANK but no size variable gets a file saying rank 3 of 1.
  world_rank_ = integer(meta_key::kWorldRank, 0, kMaxWorldSize - 1);
}

TraceReader::TraceReader(TraceReader&& other) noexcept
    : path_(std::move(other.path_)), db_(std::move(other.db_)), version_(other.version_) {}

TraceReader::~TraceReader() = default;

void TraceReader::fail(std::string_view what) const { throw InputError(fmt::format("{}: {}", path_, what)); }

std::map<std::string, std::string> TraceReader::meta() const {
  std::map<std::string, std::string> out;
  for_each<MetaRow>([&](const MetaRow& r) { out.emplace(r.key, r.value); });
  return out;
}

std::optional<std::string> TraceReader::meta_value(std::string_view key) const {
  auto q = db_.prepare("SELECT value FROM meta WHERE key = ?1");
  q.bind(1, key);
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
  // Ids are dense from 0: allow some slack for hand-made files, never a vector sized by one corrupt id.
  auto range = db_.prepare("SELECT count(*), coalesce(min(id), 0), coalesce(max(id), 0) FROM strings");
  range.step();
  const std::int64_t rows = range.int64(0), lowest = range.int64(1), highest = range.int64(2);
  const std::int64_t limit = 2 * rows + 1024;
  if (lowest < 0 || highest > limit)
    fail(fmt::format("strings.id {} is far beyond the table's {} rows (a corrupt file)", lowest < 0 ? lowest : highest,
                     rows));
  std::vector<std::string> out(1);
  out.reserve(static_cast<std::size_t>(highest) + 1);
  for_each<StringRow>([&](const StringRow& r) {
    if (r.id < 0 || r.id > limit) fail(fmt::format("strings.id {} out of range", r.id));  // changed while read
    if (static_cast<std::size_t>(r.id) >= out.size()) out.resize(static_cast<std::size_t>(r.id) + 1);
    out[static_cast<std::size_t>(r.id)] = r.value;
  });
  return out;
}

std::vector<CollectiveRow> TraceReader::collectives() const {
  std::vector<CollectiveRow> out;
  out.reserve(static_cast<std::size_t>(row_count("collectives")));
  for_each<CollectiveRow>([&](const CollectiveRow& r) { out.push_back(r); });
  return out;
}

namespace {

// "SELECT a, b, c FROM table" over the columns of `cols` the file's version has; `read` gets their mask.
template <typename Row>
std::string select_columns(ColumnSet<Row> cols, SchemaVersion version, std::uint64_t& read) {
  using T = Table<Row>;
  read = 0;
  std::string sql = "SELECT ";
  for (std::size_t i = 0; i < std::size(T::columns); ++i) {
    const ColumnInfo& c = T::columns[i];
    if (!(cols.mask >> i & 1)) continue;
    if (version.major == kSchemaMajor && c.flags.since_minor > version.minor) continue;
    if (read) sql += ", ";
    sql += c.name;
    read |= std::uint64_t{1} << i;
  }
  if (!read) sql += "1";
  return sql + fmt::format(" FROM {}", T::name);
}

// copy_columns(from, to, mask): the columns in `mask` (bit i = column i).
#define COLLSCOPE_TABLE(sql, RowT, since_, order) \
  [[maybe_unused]] void copy_columns(const RowT& from, RowT& to, std::uint64_t mask) { std::uint64_t bit = 1;
#define COLLSCOPE_COLUMN(type, member, flags) if (mask & bit) to.member = from.member; bit <<= 1;
#define COLLSCOPE_TABLE_END(sql) }
#include <collscope/store/tables.def>
#undef COLLSCOPE_TABLE
#undef COLLSCOPE_COLUMN
#undef COLLSCOPE_TABLE_END

// The records of one kind of event_batches, in first_id order (the rows' ids; kinds 5 and 6: the order they were
// saved in), checked as they come: one batch at a time in memory.
template <typename Row>
class BatchRecords {
 public:
  BatchRecords(const sqlite::Database& db, std::string_view path)
      : path_(path),
        q_(db.prepare("SELECT id, thread, first_id, count, format_version, payload FROM event_batches WHERE kind = ?1 "
                      "ORDER BY first_id, id")) {
    q_.bind(1, kBatchKindOf<Row>);
  }
  // The next row, false when there is none. Throws InputError naming the file, the table and the row of a
  // batch that is not well formed.
  bool next(Row& out) {
    while (!decoder_ || !decoder_->next(out)) {
      if (!q_.step()) return false;
      sqlite3_stmt* s = q_.handle();
      const std::int64_t batch = q_.int64(0), thread = q_.int64(1), first = q_.int64(2), count = q_.int64(3);
      const std::int64_t version = q_.int64(4);
      const int type = sqlite3_column_type(s, 5);
      const auto* payload = static_cast<const std::uint8_t*>(sqlite3_column_blob(s, 5));
      const auto bytes = static_cast<std::size_t>(sqlite3_column_bytes(s, 5));
      const std::string where = fmt::format("{}: event_batches row {}", path_, batch);
      const std::string problem = type == SQLITE_BLOB || (type == SQLITE_NULL && count == 0)
                                      ? event_batch_problem(kBatchKindOf<Row>, first, count, version, bytes, last_id_)
                                      : std::string("payload is not a blob (a corrupt batch)");
      if (!problem.empty()) throw InputError(fmt::format("{}: {}", where, problem));
      last_id_ = first + count - 1;
      decoder_.emplace(payload, bytes, first, count, thread, where, version);
    }
    return true;
  }

 private:
  std::string_view path_;
  sqlite::Statement q_;
  std::optional<BatchDecoder<Row>> decoder_;
  std::int64_t last_id_ = 0;
};

}  // namespace

bool TraceReader::has_event_batches(std::int64_t kind) const {
  if (version_.major != kSchemaMajor || version_.minor < Table<EventBatchRow>::since_minor) return false;
  if (!db_.has_table(Table<EventBatchRow>::name)) return false;
  auto q = db_.prepare("SELECT EXISTS(SELECT 1 FROM event_batches WHERE kind = ?1)");
  q.bind(1, kind);
  return q.step() && q.int64(0) != 0;
}

// Whether rows of `Row` are (partly) in event batches: its own kind, and for collectives the GPU times saved apart.
template <typename Row>
bool TraceReader::reads_batches() const {
  if constexpr (kBatchKindOf<Row> == 0) {
    return false;
  } else {
    if (has_event_batches(kBatchKindOf<Row>)) return true;
    if constexpr (std::is_same_v<Row, CollectiveRow>) return has_event_batches(kBatchKindOf<CollectiveGpuTimesRecord>);
    return false;
  }
}

// The table's rows and the rows its event batches stand for, merged in id order (both come sorted by id). For
// collectives, the GPU times saved apart (kind 6) are joined on by id, the last record of a row winning.
template <typename Row>
void TraceReader::scan_with_batches(ColumnSet<Row> cols, RowSink<Row> sink) const {
  static_assert(Table<Row>::index_of(&Row::id) == 0);
  std::uint64_t read = 0;
  auto q = db_.prepare(select_columns(ColumnSet<Row>{cols.mask | 1}, version_, read) + " ORDER BY id");
  BatchRecords<Row> batches(db_, path_);
  std::unordered_map<std::int64_t, CollectiveGpuTimesRecord> gpu_times;  // collectives.id -> its last GPU span
  if constexpr (std::is_same_v<Row, CollectiveRow>) {
    constexpr std::uint64_t gpu_columns = columns<&CollectiveRow::gpu_start_ns, &CollectiveRow::gpu_end_ns>().mask;
    if (cols.mask & gpu_columns) {
      BatchRecords<CollectiveGpuTimesRecord> times(db_, path_);
      for (CollectiveGpuTimesRecord t; times.next(t);) gpu_times[t.collective] = t;
    }
  }
  auto with_gpu_times = [&](Row& r, std::int64_t id) {
    if constexpr (std::is_same_v<Row, CollectiveRow>) {
      if (gpu_times.empty()) return;
      if (auto it = gpu_times.find(id); it != gpu_times.end())
        r.gpu_start_ns = it->second.gpu_start_ns, r.gpu_end_ns = it->second.gpu_end_ns;
    }
  };
  Row row{}, batch_row{}, out{};
  bool have_row = q.step();
  if (have_row) detail::RowCodec<Row>::read(q.handle(), read, row);
  bool have_batch = batches.next(batch_row);
  while (have_row || have_batch) {
    if (have_row && have_batch && row.id == batch_row.id)
      fail(fmt::format("{}.id {} is both a row and in event_batches (a corrupt file)", Table<Row>::name, row.id));
    if (have_row && (!have_batch || row.id < batch_row.id)) {
      out = row;
      with_gpu_times(out, row.id);
      if (!(cols.mask & 1)) out.id = 0;
      sink.call(sink.fn, out);
      have_row = q.step();
      if (have_row) detail::RowCodec<Row>::read(q.handle(), read, row);
    } else {
      with_gpu_times(batch_row, batch_row.id);
      out = Row{};
      copy_columns(batch_row, out, cols.mask);
      sink.call(sink.fn, out);
      have_batch = batches.next(batch_row);
    }
  }
}

// buffers: one row per address, its totals so far. The table's rows, then every kind-5 record in the order saved,
// each replacing its address's row (as the writer's upserts did); in the table's readers' order, uses DESC, address
// (the address compared as SQLite does, as a signed integer).
void TraceReader::scan_buffers_with_batches(ColumnSet<BufferRow> cols, RowSink<BufferRow> sink) const {
  std::uint64_t read = 0;
  auto q = db_.prepare(select_columns(ColumnSet<BufferRow>::all(), version_, read));
  std::unordered_map<std::uint64_t, BufferRow> by_address;
  BufferRow row{};
  while (q.step()) {
    detail::RowCodec<BufferRow>::read(q.handle(), read, row);
    by_address[row.address] = row;
  }
  BatchRecords<BufferRow> batches(db_, path_);
  while (batches.next(row)) by_address[row.address] = row;
  std::vector<BufferRow> rows;
  rows.reserve(by_address.size());
  for (auto& [address, r] : by_address) rows.push_back(r);
  std::sort(rows.begin(), rows.end(), [](const BufferRow& a, const BufferRow& b) {
    if (a.uses != b.uses) return a.uses > b.uses;
    return static_cast<std::int64_t>(a.address) < static_cast<std::int64_t>(b.address);
  });
  for (const BufferRow& r : rows) {
    BufferRow out{};
    copy_columns(r, out, cols.mask);
    sink.call(sink.fn, out);
  }
}

template <typename Row>
void TraceReader::scan(ColumnSet<Row> cols, RowSink<Row> sink) const {
  using T = Table<Row>;
  if (version_.major == kSchemaMajor && T::since_minor > version_.minor) return;  // the file predates the table
  if (reads_batches<Row>()) {
    if constexpr (std::is_same_v<Row, BufferRow>) return scan_buffers_with_batches(cols, sink);
    else if constexpr (kBatchKindOf<Row> != 0) return scan_with_batches(cols, sink);
  }
  // Columns the file's version has; the others keep their defaults.
  std::uint64_t read = 0;
  auto q = db_.prepare(select_columns(cols, version_, read) + fmt::format(" ORDER BY {}", T::order_by));
  Row row{};
  while (q.step()) {
    detail::RowCodec<Row>::read(q.handle(), read, row);
    sink.call(sink.fn, row);
  }
}

std::optional<CollectiveRow> TraceReader::find_collective(std::int64_t comm, std::int64_t seq) const {
  if (reads_batches<CollectiveRow>()) {
    std::optional<CollectiveRow> found;  // the first in id order, as the query below
    for_each<CollectiveRow>([&](const CollectiveRow& r) {
      if (!found && r.comm == comm && r.seq == seq) found = r;
    });
    return found;
  }
  std::uint64_t read = 0;
  auto q = db_.prepare(select_columns(ColumnSet<CollectiveRow>::all(), version_, read) +
                       " WHERE comm = ?1 AND seq = ?2 ORDER BY id LIMIT 1");
  q.bind(1, comm);
  q.bind(2, seq);
  if (!q.step()) return std::nullopt;
  CollectiveRow row{};
  detail::RowCodec<CollectiveRow>::read(q.handle(), read, row);
  return row;
}

#define COLLSCOPE_TABLE(sql, Row, since_minor, order_by) \
  template void TraceReader::scan<Row>(ColumnSet<Row>, RowSink<Row>) const;
#define COLLSCOPE_COLUMN(type, member, flags)
#define COLLSCOPE_TABLE_END(sql)
#include <collscope/store/tables.def>
#undef COLLSCOPE_TABLE
#undef COLLSCOPE_COLUMN
#undef COLLSCOPE_TABLE_END

std::int64_t TraceReader::row_count(std::string_view table) const {
  bool known = false, predates = false;
  for_each_table([&](auto t) {
    if (decltype(t)::name != table) return;
    known = true;
    predates = version_.major == kSchemaMajor && decltype(t)::since_minor > version_.minor;
  });
  if (!known) fail(fmt::format("unknown table '{}'", table));
  if (predates) return 0;  // the file was written before the table existed
  // buffers in batches: one row per address however many records name it, so they are counted by reading them.
  if (table == Table<BufferRow>::name && reads_batches<BufferRow>()) {
    std::int64_t rows = 0;
    for_each<BufferRow>(columns<&BufferRow::address>(), [&](const BufferRow&) { ++rows; });
    return rows;
  }
  auto q = db_.prepare(fmt::format("SELECT count(*) FROM {}", table));
  std::int64_t rows = q.step() ? q.int64(0) : 0;
  // Rows still in event batches (not expanded by `collscope sql`): what their count column says, but
  // never more than their payloads can hold, so that a corrupt count cannot size a reservation.
  std::int64_t kind = 0;
  for_each_table([&](auto t) {
    using Row = typename decltype(t)::Row;
    if (decltype(t)::name == table) kind = kBatchKindOf<Row>;
  });
  if (kind != 0 && has_event_batches(kind)) {
    auto b = db_.prepare(fmt::format("SELECT coalesce(sum(max(0, min(count, length(payload) / {}))), 0) FROM "
                                     "event_batches WHERE kind = ?1",
                                     min_record_bytes(static_cast<BatchKind>(kind))));
    b.bind(1, kind);
    if (b.step()) rows += b.int64(0);
  }
  return rows;
}

}  // namespace collscope::store
