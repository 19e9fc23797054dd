#pragma once
// The one SQLite wrapper of collscope: a database connection and its prepared statements, closed by their
// destructors, with errors that name the file. Everything that opens an SQLite file (trace files, the
// autotuner's study, tests) goes through it; no component outside store/ includes <sqlite3.h>.
//
// Errors throw collscope::InputError for a database opened read-only (a file the user gave us is bad) and
// collscope::Error otherwise, with one line: "<path>: <what>: <SQLite's reason>".
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace collscope::store::sqlite {

enum class OpenMode {
  ReadOnly,   // never writes; creates no file beside a database in rollback mode (a WAL one may get -shm)
  Immutable,  // read-only, and nothing changes the file while it is open: no locks, no side file ever,
              // works on a read-only file system; a write-ahead log beside the file is not read
  ReadWrite,  // the file must exist
  Create,     // created when missing
};

class Statement;

class Database {
 public:
  // Opens `path`; throws naming the file. Connections are used from one thread at a time (no SQLite mutex).
  Database(std::string path, OpenMode mode);
  ~Database();
  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& path() const { return path_; }
  bool read_only() const { return mode_ == OpenMode::ReadOnly || mode_ == OpenMode::Immutable; }

  // Runs one or more statements without results.
  void exec(std::string_view sql);
  Statement prepare(std::string_view sql) const;
  // A statement kept for the life of the connection (SQLite plans it for reuse).
  Statement prepare_persistent(std::string_view sql) const;

  bool has_table(std::string_view table) const;
  bool has_column(std::string_view table, std::string_view column) const;
  std::int64_t last_insert_rowid() const;
  std::int64_t changes() const;  // rows changed by the last statement
  // How long a statement waits for another connection's lock before failing, in ms.
  void set_busy_timeout(int ms);
  // The last error's SQLite result code (SQLITE_NOTADB, ...), for callers that word an error themselves.
  int error_code() const;

  // Throws the error of the last failed call, `what` saying what was being done.
  [[noreturn]] void fail(std::string_view what) const;
  [[noreturn]] void fail(std::string_view what, int rc) const;

  // For store/ internals only (the trace reader/writer bind hot rows directly).
  sqlite3* handle() const { return db_; }

 private:
  std::string path_;
  OpenMode mode_ = OpenMode::ReadOnly;
  sqlite3* db_ = nullptr;
};

// A prepared statement. Parameters and columns count from 1 and 0, as in SQLite.
class Statement {
 public:
  Statement(const Database& db, std::string_view sql, bool persistent);
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int param, std::int64_t value);
  Statement& bind(int param, int value) { return bind(param, std::int64_t{value}); }
  Statement& bind(int param, double value);
  Statement& bind(int param, std::string_view text);
  Statement& bind(int param, const char* text) { return bind(param, std::string_view(text)); }
  Statement& bind(int param, const std::string& text) { return bind(param, std::string_view(text)); }
  Statement& bind_null(int param);
  template <typename T>
  Statement& bind(int param, const std::optional<T>& value) {
    return value ? bind(param, *value) : bind_null(param);
  }

  // Next row: true when there is one, false when done. Throws on error.
  bool step();
  // Runs a statement that returns no rows, then resets it for the next binds.
  void run();
  void reset();

  int column_count() const;
  std::string column_name(int column) const;
  bool is_null(int column) const;
  std::int64_t int64(int column) const;
  double real(int column) const;
  std::string text(int column) const;  // "" for NULL
  std::optional<std::int64_t> optional_int64(int column) const;

  const Database& database() const { return *db_; }
  sqlite3_stmt* handle() const { return stmt_; }  // store/ internals only

 private:
  const Database* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN on construction, ROLLBACK on destruction unless commit() ran.
class Transaction {
 public:
  explicit Transaction(Database& db, bool immediate = false);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Database& db_;
  bool open_ = true;
};

// "'it''s'": a string as an SQL literal, for statements built as text (DDL, PRAGMA).
std::string quote(std::string_view text);

}  // namespace collscope::store::sqlite
