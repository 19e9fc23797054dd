#include <collscope/store/trace_writer.hpp>

#include <collscope/store/error.hpp>
#include <collscope/store/sqlite.hpp>

#include <fmt/format.h>
#include <sqlite3.h>

#include <filesystem>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "row_codec.hpp"
#include "schema_sql.hpp"

namespace collscope::store {
namespace {

template <typename Row>
constexpr bool has_auto_id() {
  return (Table<Row>::columns[0].flags.bits & column_bit::kAuto) != 0;
}

// "INSERT [OR REPLACE] INTO t(a, b) VALUES(?, ?), (?, ?)" for `rows` rows, without the first `skip` columns.
template <typename Row>
std::string insert_sql(int rows, std::size_t skip = 0) {
  using T = Table<Row>;
  std::string sql = has_auto_id<Row>() ? "INSERT INTO " : "INSERT OR REPLACE INTO ";
  sql += T::name;
  sql += '(';
  std::string one = "(";
  for (std::size_t i = skip; i < std::size(T::columns); ++i) {
    if (i > skip) sql += ", ", one += ", ";
    sql += T::columns[i].name;
    one += '?';
  }
  sql += ") VALUES";
  one += ')';
  for (int r = 0; r < rows; ++r) sql += (r ? ", " : " ") + one;
  return sql;
}

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace

// Rows of one table on their way to the file. Tables with an automatic id are append-only: their rows wait in
// `pending` and go out kBatchRows at a time through one multi-row INSERT (a fraction of the per-statement cost
// of single-row inserts), or one by one at commit. A batch whose ids the writer numbered itself leaves the id
// out: SQLite then appends at max(id) + 1, which is the same number, without looking the id up first (8 % of the
// per-row cost). The others (keyed upserts, few rows) go out at once.
template <typename Row>
struct Inserter {
  static constexpr int kColumns = static_cast<int>(std::size(Table<Row>::columns));
  static constexpr int kBatchRows = has_auto_id<Row>() ? 64 : 1;
  std::optional<sqlite::Statement> one;
  std::optional<sqlite::Statement> batch;           // kBatchRows rows, ids bound
  std::optional<sqlite::Statement> numbered_batch;  // kBatchRows rows, ids left to SQLite
  std::vector<Row> pending;
  bool pending_has_given_id = false;  // a pending row came with its own id
  bool ids_outside_table = false;     // ids were given to event batches: max(id) + 1 is no longer the next id
  std::int64_t next_id = 1;
};

template <typename... Rows>
using InserterTuple = std::tuple<Inserter<Rows>...>;
template <typename... Rows>
InserterTuple<Rows...> inserter_tuple(RowList<Rows...>);

struct TraceWriter::Impl {
  Impl(const std::string& path, sqlite::OpenMode mode) : db(path, mode) {}
  sqlite::Database db;
  decltype(inserter_tuple(AllRows{})) inserters;
  std::optional<sqlite::Statement> comm_destroyed, collective_gpu, in_flight_clear, add_batch;
  std::unordered_map<std::string, std::int64_t, StringHash, std::equal_to<>> interned;
  std::int64_t next_string_id = 1;
  bool in_transaction = false;
  // The first_id of the next batch of the kinds whose records are no table's rows (buffer totals, GPU times): they
  // number the records in the order saved.
  std::int64_t next_buffer_record = 1, next_gpu_times_record = 1;

  template <typename Row>
  Inserter<Row>& inserter() {
    auto& ins = std::get<Inserter<Row>>(inserters);
    if (!ins.one) {
      ins.one.emplace(db.prepare_persistent(insert_sql<Row>(1)));
      if (ins.kBatchRows > 1) {
        ins.batch.emplace(db.prepare_persistent(insert_sql<Row>(ins.kBatchRows)));
        ins.numbered_batch.emplace(db.prepare_persistent(insert_sql<Row>(ins.kBatchRows, 1)));
      }
      ins.pending.reserve(static_cast<std::size_t>(ins.kBatchRows));
    }
    return ins;
  }

  template <typename Row>
  void flush(Inserter<Row>& ins) {
    if (ins.pending.empty()) return;
    if (static_cast<int>(ins.pending.size()) == ins.kBatchRows && ins.batch) {
      if (ins.pending_has_given_id || ins.ids_outside_table) {
        sqlite3_stmt* s = ins.batch->handle();
        for (int r = 0; r < ins.kBatchRows; ++r) detail::RowCodec<Row>::bind(s, 1 + r * ins.kColumns, ins.pending[r]);
        ins.batch->run();
      } else {
        sqlite3_stmt* s = ins.numbered_batch->handle();
        for (int r = 0; r < ins.kBatchRows; ++r)
          detail::RowCodec<Row>::bind(s, 1 + r * (ins.kColumns - 1), ins.pending[r], 1);
        ins.numbered_batch->run();
      }
    } else {
      sqlite3_stmt* s = ins.one->handle();
      for (const Row& row : ins.pending) {
        detail::RowCodec<Row>::bind(s, 1, row);
        ins.one->run();
      }
    }
    ins.pending.clear();
    ins.pending_has_given_id = false;
  }

  template <typename Row>
  void flush() {
    auto& ins = std::get<Inserter<Row>>(inserters);
    flush(ins);
  }
  void flush_all() {
    for_each_table([&](auto table) { flush<typename decltype(table)::Row>(); });
  }
};

TraceWriter::TraceWriter(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path_ + suffix, ec);
  impl_ = std::make_unique<Impl>(path_, sqlite::OpenMode::Create);
  auto& db = impl_->db;
  // WAL: readers (analyzer, tuner's early stopping) can read while we write, and a killed process
  // leaves every committed batch intact. synchronous=NORMAL: no fsync per commit, only at checkpoints.
  db.exec("PRAGMA journal_mode=WAL");
  db.exec("PRAGMA synchronous=NORMAL");
  db.exec("PRAGMA page_size=8192");
  begin();
  db.exec(detail::schema_sql());
  impl_->comm_destroyed.emplace(db.prepare_persistent("UPDATE communicators SET destroyed_ns = ?2 WHERE id = ?1"));
  impl_->in_flight_clear.emplace(db.prepare_persistent("DELETE FROM calls_in_flight WHERE thread = ?1"));
  for (int i = 0; i < kOpCount; ++i) add(OpRow{i, std::string(op_name(static_cast<Op>(i)))});
  add(StringRow{0, ""});
  set_meta(meta_key::kSchemaVersion, fmt::format("{}.{}", kSchemaMajor, kSchemaMinor));
  commit();
}

TraceWriter::TraceWriter(std::string path, Existing) : path_(std::move(path)) {
  if (!std::filesystem::is_regular_file(path_)) {
    if (std::filesystem::exists(path_)) throw Error(fmt::format("{}: not a trace file (not a regular file)", path_));
    throw Error(fmt::format("{}: no such trace file", path_));
  }
  impl_ = std::make_unique<Impl>(path_, sqlite::OpenMode::ReadWrite);
  impl_->db.set_busy_timeout(5000);
  bool is_trace = false;
  for (auto q = impl_->db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'event_batches'");
       q.step();)
    is_trace = true;
  if (!is_trace) throw Error(fmt::format("{}: not a collscope trace of schema 1.3 or later (no event_batches table)", path_));
}

TraceWriter::~TraceWriter() {
  if (!impl_) return;
  try {
    if (impl_->in_transaction) commit();
    // A finished file leaves WAL mode: everything moves into the one file, which then reads from anywhere (another
    // user, a read-only mount) without -wal/-shm files. A reader in the middle of a query (the tuner on a live
    // run) may delay this; after 250 ms at most (the job is exiting) the file stays in WAL mode, readable as such.
    impl_->db.set_busy_timeout(250);
    impl_->db.exec("PRAGMA journal_mode=DELETE");
  } catch (const std::exception&) {
    // A destructor cannot report; the file keeps its last good commit.
  }
}

void TraceWriter::begin() {
  if (impl_->in_transaction) return;
  impl_->db.exec("BEGIN");
  impl_->in_transaction = true;
}

void TraceWriter::commit() {
  if (!impl_->in_transaction) return;
  impl_->flush_all();
  impl_->in_transaction = false;
  impl_->db.exec("COMMIT");
}

void TraceWriter::rollback() {
  for_each_table([&](auto table) { std::get<Inserter<typename decltype(table)::Row>>(impl_->inserters).pending.clear(); });
  if (!impl_->in_transaction) return;
  impl_->in_transaction = false;
  impl_->db.exec("ROLLBACK");
}

std::int64_t& TraceWriter::next_batch_id(BatchKind kind) {
  auto of_table = [&](auto& ins) -> std::int64_t& {
    ins.ids_outside_table = true;
    return ins.next_id;
  };
  switch (kind) {
    case BatchKind::Collectives: return of_table(impl_->inserter<CollectiveRow>());
    case BatchKind::PointToPoint: return of_table(impl_->inserter<PointToPointRow>());
    case BatchKind::NvtxRanges: return of_table(impl_->inserter<NvtxRangeRow>());
    case BatchKind::GpuActivities: return of_table(impl_->inserter<GpuActivityRow>());
    case BatchKind::Buffers: return impl_->next_buffer_record;
    case BatchKind::CollectiveGpuTimes: return impl_->next_gpu_times_record;
  }
  throw Error(fmt::format("{}: event batch kind {} is not one this collscope writes", path_, static_cast<std::int64_t>(kind)));
}

std::int64_t TraceWriter::next_id(BatchKind kind) { return next_batch_id(kind); }

std::int64_t TraceWriter::add_event_batch(BatchKind kind, std::int64_t thread, std::int64_t count,
                                          const std::uint8_t* payload, std::size_t bytes) {
  std::int64_t& next = next_batch_id(kind);
  const std::int64_t first = next;
  next += count;
  if (!impl_->add_batch)
    impl_->add_batch.emplace(impl_->db.prepare_persistent(
        "INSERT INTO event_batches(kind, thread, first_id, count, format_version, payload) VALUES(?1, ?2, ?3, ?4, ?5, ?6)"));
  sqlite3_stmt* s = impl_->add_batch->handle();
  sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(kind));
  sqlite3_bind_int64(s, 2, thread);
  sqlite3_bind_int64(s, 3, first);
  sqlite3_bind_int64(s, 4, count);
  sqlite3_bind_int64(s, 5, kBatchFormatVersion);
  sqlite3_bind_blob64(s, 6, payload, bytes, SQLITE_STATIC);  // copied by SQLite when the statement runs
  impl_->add_batch->run();
  sqlite3_bind_null(s, 6);
  return first;
}

namespace {

// Adds the rows of one batch of kind `Record` through `add` (one call per decoded row).
template <typename Record, typename Add>
void expand_batch(const std::uint8_t* payload, std::size_t bytes, std::int64_t first, std::int64_t count,
                  std::int64_t thread, const std::string& where, std::int64_t version, Add&& add) {
  using Row = typename BatchRecordTraits<Record>::Row;
  BatchDecoder<Row> records(payload, bytes, first, count, thread, where, version);
  for (Row row; records.next(row);) add(row);
}

}  // namespace

std::int64_t TraceWriter::expand_event_batches() {
  begin();
  std::int64_t rows = 0;
  try {
    // Batch by batch, each deleted once its rows are added: the rows reuse the pages it leaves, so a finished file
    // is no bigger than one written row by row (plus the largest batch). In kind order, so that the GPU times
    // saved apart (kind 6) find their collectives rows.
    std::vector<std::int64_t> batches;
    for (auto q = impl_->db.prepare("SELECT id FROM event_batches ORDER BY kind, first_id, id"); q.step();)
      batches.push_back(q.int64(0));
    auto read = impl_->db.prepare("SELECT kind, thread, first_id, count, format_version, payload FROM event_batches "
                                  "WHERE id = ?1");
    auto erase = impl_->db.prepare("DELETE FROM event_batches WHERE id = ?1");
    std::int64_t last_kind = 0, last_id = 0;
    for (const std::int64_t batch : batches) {
      read.bind(1, batch);
      if (!read.step()) {
        read.reset();
        continue;
      }
      sqlite3_stmt* s = read.handle();
      const std::int64_t kind = read.int64(0), thread = read.int64(1), first = read.int64(2), count = read.int64(3);
      const std::int64_t version = read.int64(4);
      const auto* payload = static_cast<const std::uint8_t*>(sqlite3_column_blob(s, 5));
      const auto bytes = static_cast<std::size_t>(sqlite3_column_bytes(s, 5));
      const std::string where = fmt::format("{}: event_batches row {}", path_, batch);
      if (kind != last_kind) last_kind = kind, last_id = 0;
      const std::string problem = event_batch_problem(kind, first, count, version, bytes, last_id);
      if (!problem.empty()) throw Error(fmt::format("{}: {}", where, problem));
      last_id = first + count - 1;
      auto add_row = [&](const auto& row) { add(row); };
      switch (static_cast<BatchKind>(kind)) {
        case BatchKind::Collectives:
          expand_batch<CollectiveRecord>(payload, bytes, first, count, thread, where, version, add_row);
          break;
        case BatchKind::PointToPoint:
          expand_batch<PointToPointRecord>(payload, bytes, first, count, thread, where, version, add_row);
          break;
        case BatchKind::NvtxRanges:
          expand_batch<NvtxRangeRecord>(payload, bytes, first, count, thread, where, version, add_row);
          break;
        case BatchKind::GpuActivities:
          expand_batch<GpuActivityRecord>(payload, bytes, first, count, thread, where, version, add_row);
          break;
        case BatchKind::Buffers:  // replaces the address's row, as the writer's upserts did
          expand_batch<BufferRecord>(payload, bytes, first, count, thread, where, version, add_row);
          break;
        case BatchKind::CollectiveGpuTimes:
          expand_batch<CollectiveGpuTimesRecord>(payload, bytes, first, count, thread, where, version,
                                                 [&](const CollectiveGpuTimesRecord& t) {
                                                   set_collective_gpu_times(t.collective, t.gpu_start_ns, t.gpu_end_ns);
                                                 });
          break;
      }
      read.reset();
      erase.bind(1, batch).run();
      // Rows of tables with ids; buffer totals and GPU times change rows rather than add them.
      if (kind <= static_cast<std::int64_t>(BatchKind::GpuActivities)) rows += count;
    }
    commit();
  } catch (...) {
    rollback();
    throw;
  }
  return rows;
}

template <typename Row>
void TraceWriter::add(const Row& row) {
  auto& ins = impl_->inserter<Row>();
  if constexpr (has_auto_id<Row>()) {
    Row& r = ins.pending.emplace_back(row);
    if (r.id == 0) r.id = ins.next_id;
    else ins.pending_has_given_id = true;
    ins.next_id = std::max(ins.next_id, r.id + 1);
    last_id_ = r.id;
    if (static_cast<int>(ins.pending.size()) == ins.kBatchRows) impl_->flush(ins);
  } else {
    detail::RowCodec<Row>::bind(ins.one->handle(), 1, row);
    ins.one->run();
    last_id_ = impl_->db.last_insert_rowid();
  }
}

#define COLLSCOPE_TABLE(sql, Row, since_minor, order_by) template void TraceWriter::add<Row>(const Row&);
#define COLLSCOPE_COLUMN(type, member, flags)
#define COLLSCOPE_TABLE_END(sql)
#include <collscope/store/tables.def>
#undef COLLSCOPE_TABLE
#undef COLLSCOPE_COLUMN
#undef COLLSCOPE_TABLE_END

void TraceWriter::set_meta(std::string_view key, std::string_view value) {
  add(MetaRow{std::string(key), std::string(value)});
}

std::int64_t TraceWriter::intern(std::string_view value) {
  if (value.empty()) return 0;
  auto it = impl_->interned.find(value);
  if (it != impl_->interned.end()) return it->second;
  const std::int64_t id = impl_->next_string_id++;
  add(StringRow{id, std::string(value)});
  impl_->interned.emplace(std::string(value), id);
  return id;
}

void TraceWriter::set_communicator_destroyed(std::int64_t id, std::int64_t destroyed_ns) {
  impl_->comm_destroyed->bind(1, id).bind(2, destroyed_ns).run();
}

void TraceWriter::set_collective_gpu_times(std::int64_t id, std::int64_t gpu_start_ns, std::int64_t gpu_end_ns) {
  impl_->flush<CollectiveRow>();  // the row may still be waiting for its batch
  if (!impl_->collective_gpu)  // prepared on first use: a file opened to expand its batches has it too
    impl_->collective_gpu.emplace(
        impl_->db.prepare_persistent("UPDATE collectives SET gpu_start_ns = ?2, gpu_end_ns = ?3 WHERE id = ?1"));
  impl_->collective_gpu->bind(1, id).bind(2, gpu_start_ns).bind(3, gpu_end_ns).run();
}

void TraceWriter::clear_call_in_flight(std::int64_t thread) { impl_->in_flight_clear->bind(1, thread).run(); }

}  // namespace collscope::store
