// Study file: plain SQLite, one row per trial, committed immediately (WAL, synchronous=NORMAL).
#include <collscope/autotuner/study.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

namespace collscope::autotuner {

namespace {
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trials(
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL,
  status TEXT NOT NULL,
  params TEXT NOT NULL,      -- JSON array of the knob values (text), knob order
  unit TEXT NOT NULL,        -- JSON array, the point on the unit cube
  score REAL,                -- objective in its own units; NULL when none
  reason TEXT NOT NULL DEFAULT '',
  exit_code INTEGER NOT NULL DEFAULT 0,
  wall_s REAL NOT NULL DEFAULT 0,
  dir TEXT NOT NULL DEFAULT '',
  pgid INTEGER NOT NULL DEFAULT 0,
  started_unix_ms INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS model(trial_id INTEGER PRIMARY KEY, state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trial_processes(
  trial_id INTEGER PRIMARY KEY,
  host TEXT NOT NULL,
  boot_id TEXT NOT NULL,
  pgid INTEGER NOT NULL,
  leader_start_ticks INTEGER NOT NULL,  -- clock ticks since boot (/proc/PID/stat field 22)
  marker TEXT NOT NULL);                -- COLLSCOPE_TUNE_TRIAL in every process of the trial
)sql";

struct Statement {
  sqlite3_stmt* s = nullptr;
  Statement(sqlite3* db, const char* sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) s = nullptr;
  }
  ~Statement() { sqlite3_finalize(s); }
  void text(int i, const std::string& v) { sqlite3_bind_text(s, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT); }
  std::string column_text(int i) const {
    const auto* p = sqlite3_column_text(s, i);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
};
// A JSON list column of a trial row; a row that is not one (a corrupt or hand-edited study) is one line naming it.
template <typename T>
T json_list(const std::string& text, const std::string& path, int trial_id, const char* column) {
  try {
    return nlohmann::json::parse(text).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(fmt::format("{}: trial {}: {} is not a JSON list of {} ('{}')", path, trial_id, column,
                                 column == std::string("params") ? "knob values (text)" : "numbers",
                                 text.size() > 40 ? text.substr(0, 40) + "..." : text));
  }
}
}  // namespace

StudyLock::StudyLock(const std::string& study_path) {
  const std::string path = study_path + ".lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw InputError(fmt::format("{}: cannot create the study's lock file: {}", path, std::strerror(errno)));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char holder[32] = {};
    [[maybe_unused]] auto n = ::pread(fd_, holder, sizeof holder - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw InputError(fmt::format("{}: another collscope tune (pid {}) is running this study; wait for it or stop it first",
                                   study_path, std::strtol(holder, nullptr, 10)));
    throw InputError(fmt::format("{}: cannot lock the study: {}", path, std::strerror(err)));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  // The pid only makes the refusal's message more useful: failing to write it changes nothing.
  [[maybe_unused]] const bool written =
      ::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) == static_cast<ssize_t>(pid.size());
}

StudyLock::~StudyLock() {
  if (fd_ >= 0) ::close(fd_);
}

Study::Study(std::string path) : path_(std::move(path)) {}

Study::Study(Study&& other) noexcept : path_(std::move(other.path_)), db_(other.db_) { other.db_ = nullptr; }

Study::~Study() {
  if (db_) sqlite3_close(db_);
}

void Study::fail(const std::string& what) const {
  throw Error(fmt::format("{}: {}: {}", path_, what, db_ ? sqlite3_errmsg(db_) : "cannot open"));
}

void Study::exec(const char* sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string msg = err ? err : "error";
    sqlite3_free(err);
    throw Error(fmt::format("{}: {}", path_, msg));
  }
}

Study Study::create(const std::string& path, const std::map<std::string, std::string>& meta) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    Study existing = open(path);
    if (!existing.trials().empty())
      throw InputError(fmt::format("{}: study already has trials (use --resume to continue it, or another --study)", path));
    for (const auto& [k, v] : meta) existing.set_meta(k, v);
    return existing;
  }
  if (const auto parent = std::filesystem::path(path).parent_path(); !parent.empty()) std::filesystem::create_directories(parent, ec);
  Study s(path);
  if (sqlite3_open_v2(path.c_str(), &s.db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK)
    throw InputError(fmt::format("{}: cannot create the study file: {}", path, s.db_ ? sqlite3_errmsg(s.db_) : "?"));
  sqlite3_busy_timeout(s.db_, 5000);
  s.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
  s.exec(kSchema);
  s.set_meta("format", "collscope-study 1");
  for (const auto& [k, v] : meta) s.set_meta(k, v);
  s.id();
  return s;
}

Study Study::open(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(fmt::format("{}: no such study file", path));
  Study s(path);
  if (sqlite3_open_v2(path.c_str(), &s.db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK)
    throw InputError(fmt::format("{}: cannot open the study file: {}", path, s.db_ ? sqlite3_errmsg(s.db_) : "?"));
  sqlite3_busy_timeout(s.db_, 5000);
  Statement q(s.db_, "SELECT value FROM meta WHERE key='format'");
  if (!q.s || sqlite3_step(q.s) != SQLITE_ROW || q.column_text(0) != "collscope-study 1")
    throw InputError(fmt::format("{}: not a collscope study file", path));
  return s;
}

std::optional<std::string> Study::meta(const std::string& key) const {
  Statement q(db_, "SELECT value FROM meta WHERE key=?1");
  q.text(1, key);
  if (q.s && sqlite3_step(q.s) == SQLITE_ROW) return q.column_text(0);
  return std::nullopt;
}

void Study::set_meta(const std::string& key, const std::string& value) {
  Statement q(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)");
  q.text(1, key);
  q.text(2, value);
  if (!q.s || sqlite3_step(q.s) != SQLITE_DONE) fail("writing meta");
}

std::vector<TrialRecord> Study::trials() const {
  Statement q(db_, "SELECT id, kind, status, params, unit, score, reason, exit_code, wall_s, dir, pgid, started_unix_ms "
                   "FROM trials ORDER BY id");
  if (!q.s) fail("reading trials");
  std::vector<TrialRecord> out;
  while (sqlite3_step(q.s) == SQLITE_ROW) {
    TrialRecord r;
    r.id = sqlite3_column_int(q.s, 0);
    r.kind = q.column_text(1);
    r.status = q.column_text(2);
    r.values = json_list<Assignment>(q.column_text(3), path_, r.id, "params");
    r.unit = json_list<std::vector<double>>(q.column_text(4), path_, r.id, "unit");
    if (sqlite3_column_type(q.s, 5) != SQLITE_NULL) r.score = sqlite3_column_double(q.s, 5);
    r.reason = q.column_text(6);
    r.exit_code = sqlite3_column_int(q.s, 7);
    r.wall_s = sqlite3_column_double(q.s, 8);
    r.dir = q.column_text(9);
    r.pgid = sqlite3_column_int64(q.s, 10);
    r.started_unix_ms = sqlite3_column_int64(q.s, 11);
    out.push_back(std::move(r));
  }
  return out;
}

int Study::add_trial(TrialRecord& r) {
  Statement q(db_, "INSERT INTO trials(kind, status, params, unit, dir, started_unix_ms) VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
  q.text(1, r.kind);
  q.text(2, r.status);
  q.text(3, nlohmann::json(r.values).dump());
  q.text(4, nlohmann::json(r.unit).dump());
  q.text(5, r.dir);
  sqlite3_bind_int64(q.s, 6, r.started_unix_ms);
  if (!q.s || sqlite3_step(q.s) != SQLITE_DONE) fail("adding a trial");
  r.id = static_cast<int>(sqlite3_last_insert_rowid(db_));
  return r.id;
}

void Study::update_trial(const TrialRecord& r) {
  Statement q(db_, "UPDATE trials SET kind=?2, status=?3, params=?4, unit=?5, score=?6, reason=?7, exit_code=?8, "
                   "wall_s=?9, dir=?10, pgid=?11, started_unix_ms=?12 WHERE id=?1");
  sqlite3_bind_int(q.s, 1, r.id);
  q.text(2, r.kind);
  q.text(3, r.status);
  q.text(4, nlohmann::json(r.values).dump());
  q.text(5, nlohmann::json(r.unit).dump());
  if (r.score) sqlite3_bind_double(q.s, 6, *r.score);
  else sqlite3_bind_null(q.s, 6);
  q.text(7, r.reason);
  sqlite3_bind_int(q.s, 8, r.exit_code);
  sqlite3_bind_double(q.s, 9, r.wall_s);
  q.text(10, r.dir);
  sqlite3_bind_int64(q.s, 11, r.pgid);
  sqlite3_bind_int64(q.s, 12, r.started_unix_ms);
  if (!q.s || sqlite3_step(q.s) != SQLITE_DONE) fail("updating a trial");
}

void Study::save_trial_processes(int trial_id, const TrialProcesses& p) {
  exec(kSchema);  // a study written by an older collscope has no trial_processes table yet
  Statement q(db_, "INSERT OR REPLACE INTO trial_processes(trial_id, host, boot_id, pgid, leader_start_ticks, marker) "
                   "VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
  sqlite3_bind_int(q.s, 1, trial_id);
  q.text(2, p.host);
  q.text(3, p.boot_id);
  sqlite3_bind_int64(q.s, 4, p.pgid);
  sqlite3_bind_int64(q.s, 5, p.leader_start_ticks);
  q.text(6, p.marker);
  if (!q.s || sqlite3_step(q.s) != SQLITE_DONE) fail("recording a trial's processes");
}

std::optional<TrialProcesses> Study::trial_processes(int trial_id) const {
  Statement q(db_, "SELECT host, boot_id, pgid, leader_start_ticks, marker FROM trial_processes WHERE trial_id=?1");
  if (!q.s) return std::nullopt;  // an older study: nothing recorded, nothing provable
  sqlite3_bind_int(q.s, 1, trial_id);
  if (sqlite3_step(q.s) != SQLITE_ROW) return std::nullopt;
  return TrialProcesses{q.column_text(0), q.column_text(1), sqlite3_column_int64(q.s, 2), sqlite3_column_int64(q.s, 3),
                        q.column_text(4)};
}

std::string Study::id() {
  if (auto existing = meta("study_id"); existing && !existing->empty()) return *existing;
  std::random_device rd;
  const std::string made = fmt::format("{:08x}{:08x}{:08x}{:08x}", rd(), rd(), rd(), rd());
  set_meta("study_id", made);
  return made;
}

void Study::save_model(int trial_id, const std::string& json) {
  Statement q(db_, "INSERT OR REPLACE INTO model(trial_id, state) VALUES(?1, ?2)");
  sqlite3_bind_int(q.s, 1, trial_id);
  q.text(2, json);
  if (!q.s || sqlite3_step(q.s) != SQLITE_DONE) fail("saving the model state");
}

std::optional<std::string> Study::model(int trial_id) const {
  Statement q(db_, "SELECT state FROM model WHERE trial_id=?1");
  sqlite3_bind_int(q.s, 1, trial_id);
  if (q.s && sqlite3_step(q.s) == SQLITE_ROW) return q.column_text(0);
  return std::nullopt;
}

}  // namespace collscope::autotuner
