#include <collscope/store/sqlite.hpp>

#include <collscope/store/error.hpp>

#include <fmt/format.h>
#include <sqlite3.h>

#include <utility>

namespace collscope::store::sqlite {
namespace {

int open_flags(OpenMode mode) {
  // NOMUTEX: a connection is used by one thread at a time, so SQLite's per-call mutex is pure cost.
  const int base = SQLITE_OPEN_NOMUTEX;
  switch (mode) {
    case OpenMode::ReadOnly: return base | SQLITE_OPEN_READONLY;
    case OpenMode::Immutable: return base | SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
    case OpenMode::ReadWrite: return base | SQLITE_OPEN_READWRITE;
    case OpenMode::Create: return base | SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  }
  return base;
}

// SQLite's reasons are one line already; keep ours one line whatever it says.
std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

// "file:/a%20b.sqlite?immutable=1": the path percent-encoded where a URI needs it.
std::string immutable_uri(const std::string& path) {
  std::string uri = "file:";
  for (unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c <= ' ' || c >= 0x7f) uri += fmt::format("%{:02X}", c);
    else uri += static_cast<char>(c);
  }
  return uri + "?immutable=1";
}

}  // namespace

Database::Database(std::string path, OpenMode mode) : path_(std::move(path)), mode_(mode) {
  const std::string name = mode == OpenMode::Immutable ? immutable_uri(path_) : path_;
  const int rc = sqlite3_open_v2(name.c_str(), &db_, open_flags(mode), nullptr);
  if (rc != SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    const std::string line = fmt::format("{}: cannot open: {}", path_, one_line(why));
    if (read_only()) throw InputError(line);
    throw Error(line);
  }
  sqlite3_extended_result_codes(db_, 1);
}

Database::~Database() {
  if (db_) sqlite3_close_v2(db_);
}

Database::Database(Database&& other) noexcept
    : path_(std::move(other.path_)), mode_(other.mode_), db_(std::exchange(other.db_, nullptr)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    if (db_) sqlite3_close_v2(db_);
    path_ = std::move(other.path_);
    mode_ = other.mode_;
    db_ = std::exchange(other.db_, nullptr);
  }
  return *this;
}

void Database::fail(std::string_view what) const { fail(what, db_ ? sqlite3_errcode(db_) : SQLITE_MISUSE); }

void Database::fail(std::string_view what, int rc) const {
  const int primary = rc & 0xff;
  std::string line;
  if (primary == SQLITE_NOTADB) {
    line = fmt::format("{}: not an SQLite database", path_);
  } else if (primary == SQLITE_CORRUPT) {
    line = fmt::format("{}: file is truncated or corrupt ({})", path_, one_line(db_ ? sqlite3_errmsg(db_) : ""));
  } else {
    const std::string why = db_ && sqlite3_errcode(db_) == rc ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    line = fmt::format("{}: {}: {}", path_, what, one_line(why));
  }
  if (read_only()) throw InputError(line);
  throw Error(line);
}

int Database::error_code() const { return db_ ? sqlite3_extended_errcode(db_) : SQLITE_MISUSE; }

void Database::exec(std::string_view sql) {
  const std::string text(sql);
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    sqlite3_free(err);
    fail("cannot run SQL", rc);
  }
}

Statement Database::prepare(std::string_view sql) const { return Statement(*this, sql, false); }
Statement Database::prepare_persistent(std::string_view sql) const { return Statement(*this, sql, true); }

bool Database::has_table(std::string_view table) const {
  Statement q = prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1");
  q.bind(1, table);
  return q.step();
}

bool Database::has_column(std::string_view table, std::string_view column) const {
  Statement q = prepare("SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2");
  q.bind(1, table).bind(2, column);
  return q.step();
}

std::int64_t Database::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
std::int64_t Database::changes() const { return sqlite3_changes64(db_); }
void Database::set_busy_timeout(int ms) { sqlite3_busy_timeout(db_, ms); }

Statement::Statement(const Database& db, std::string_view sql, bool persistent) : db_(&db) {
  const int rc = sqlite3_prepare_v3(db.handle(), sql.data(), static_cast<int>(sql.size()),
                                    persistent ? SQLITE_PREPARE_PERSISTENT : 0, &stmt_, nullptr);
  if (rc != SQLITE_OK) db.fail("cannot prepare SQL", rc);
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement::Statement(Statement&& other) noexcept : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
  }
  return *this;
}

Statement& Statement::bind(int param, std::int64_t value) {
  sqlite3_bind_int64(stmt_, param, value);
  return *this;
}
Statement& Statement::bind(int param, double value) {
  sqlite3_bind_double(stmt_, param, value);
  return *this;
}
Statement& Statement::bind(int param, std::string_view text) {
  sqlite3_bind_text64(stmt_, param, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  return *this;
}
Statement& Statement::bind_null(int param) {
  sqlite3_bind_null(stmt_, param);
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3_reset(stmt_);
  db_->fail(db_->read_only() ? "cannot read" : "cannot write", rc);
}

void Statement::run() {
  const int rc = sqlite3_step(stmt_);
  sqlite3_reset(stmt_);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) db_->fail(db_->read_only() ? "cannot read" : "cannot write", rc);
}

void Statement::reset() { sqlite3_reset(stmt_); }

int Statement::column_count() const { return sqlite3_column_count(stmt_); }
std::string Statement::column_name(int column) const {
  const char* name = sqlite3_column_name(stmt_, column);
  return name ? name : "";
}
bool Statement::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
std::int64_t Statement::int64(int column) const { return sqlite3_column_int64(stmt_, column); }
double Statement::real(int column) const { return sqlite3_column_double(stmt_, column); }
std::string Statement::text(int column) const {
  const auto* p = sqlite3_column_text(stmt_, column);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)))
           : std::string();
}
std::optional<std::int64_t> Statement::optional_int64(int column) const {
  if (is_null(column)) return std::nullopt;
  return int64(column);
}

Transaction::Transaction(Database& db, bool immediate) : db_(db) { db_.exec(immediate ? "BEGIN IMMEDIATE" : "BEGIN"); }

Transaction::~Transaction() {
  if (open_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT");
  open_ = false;
}

std::string quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

}  // namespace collscope::store::sqlite
