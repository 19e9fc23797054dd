// Study file: plain SQLite through store's wrapper, one row per trial, committed immediately (WAL, synchronous=NORMAL).
#include <collscope/autotuner/study.hpp>
#include <collscope/store/error.hpp>

#include <collscope/store/sqlite.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <string_view>
#include <utility>

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
  started_unix_ms INTEGER NOT NULL DEFAULT 0,
  source TEXT NOT NULL DEFAULT '',   -- where the score came from (steps, printed output)
  step_s REAL);                      -- seconds per step at that score; NULL when unknown
CREATE TABLE IF NOT EXISTS model(trial_id INTEGER PRIMARY KEY, state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trial_processes(
  trial_id INTEGER PRIMARY KEY,
  host TEXT NOT NULL,
  boot_id TEXT NOT NULL,
  pgid INTEGER NOT NULL,
  leader_start_ticks INTEGER NOT NULL,  -- clock ticks since boot (/proc/PID/stat field 22)
  marker TEXT NOT NULL);                -- COLLSCOPE_TUNE_TRIAL in every process of the trial
)sql";

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
// Whether the trials table has `column` (studies written before a column was added lack it).
bool has_column(const store::sqlite::Database& db, const char* column) {
  try {
    db.prepare(fmt::format("SELECT {} FROM trials LIMIT 0", column));
    return true;
  } catch (const Error&) {
    return false;
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

Study::Study(std::string path, store::sqlite::Database db) : path_(std::move(path)), db_(std::move(db)) {}

Study Study::create(const std::string& path, const std::map<std::string, std::string>& meta) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    Study existing = open(path, Access::ReadWrite);
    if (!existing.trials().empty())
      throw InputError(fmt::format("{}: study already has trials (use --resume to continue it, or another --study)", path));
    for (const auto& [k, v] : meta) existing.set_meta(k, v);
    return existing;
  }
  if (const auto parent = std::filesystem::path(path).parent_path(); !parent.empty()) std::filesystem::create_directories(parent, ec);
  Study s(path, store::sqlite::Database(path, store::sqlite::OpenMode::Create));
  s.db_.set_busy_timeout(5000);
  s.db_.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
  s.db_.exec(kSchema);
  s.set_meta("format", "collscope-study 1");
  for (const auto& [k, v] : meta) s.set_meta(k, v);
  s.id();
  return s;
}

Study Study::open(const std::string& path, Access access) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    if (std::filesystem::exists(path, ec))
      throw InputError(fmt::format("{}: not a study file (not a regular file)", path));
    throw InputError(fmt::format("{}: no such study file", path));
  }
  Study s(path, store::sqlite::Database(path, access == Access::ReadOnly ? store::sqlite::OpenMode::ReadOnly
                                                                          : store::sqlite::OpenMode::ReadWrite));
  s.db_.set_busy_timeout(5000);
  bool is_study = false;
  try {
    auto q = s.db_.prepare("SELECT value FROM meta WHERE key='format'");
    is_study = q.step() && q.text(0) == "collscope-study 1";
  } catch (const Error&) {
    // not SQLite, no meta table, corrupt: all say the same to the user
  }
  if (!is_study) throw InputError(fmt::format("{}: not a collscope study file", path));
  if (access == Access::ReadWrite) {
    s.db_.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    // A study from an older collscope: the columns added since (nothing is lost, old rows get the defaults).
    if (!has_column(s.db_, "source")) s.db_.exec("ALTER TABLE trials ADD COLUMN source TEXT NOT NULL DEFAULT ''");
    if (!has_column(s.db_, "step_s")) s.db_.exec("ALTER TABLE trials ADD COLUMN step_s REAL");
  }
  return s;
}

namespace {
constexpr std::pair<TrialStatus, std::string_view> kTrialStatusNames[] = {
    {TrialStatus::Running, "running"}, {TrialStatus::Ok, "ok"},           {TrialStatus::Failed, "failed"},
    {TrialStatus::Timeout, "timeout"}, {TrialStatus::Stopped, "stopped"}, {TrialStatus::Interrupted, "interrupted"},
};
}  // namespace

std::string_view trial_status_name(TrialStatus status) {
  for (const auto& [s, name] : kTrialStatusNames)
    if (s == status) return name;
  return "unknown";
}

std::optional<TrialStatus> parse_trial_status(std::string_view name) {
  for (const auto& [s, n] : kTrialStatusNames)
    if (n == name) return s;
  return std::nullopt;
}

std::optional<std::string> Study::meta(const std::string& key) const {
  auto q = db_.prepare("SELECT value FROM meta WHERE key=?1");
  q.bind(1, key);
  if (q.step()) return q.text(0);
  return std::nullopt;
}

void Study::set_meta(const std::string& key, const std::string& value) {
  db_.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)").bind(1, key).bind(2, value).run();
}

std::vector<TrialRecord> Study::trials() const {
  const bool extra = has_column(db_, "step_s");  // read-only studies from older collscope lack them
  auto q = db_.prepare(fmt::format("SELECT id, kind, status, params, unit, score, reason, exit_code, wall_s, dir, pgid, "
                                   "started_unix_ms{} FROM trials ORDER BY id",
                                   extra ? ", source, step_s" : ""));
  std::vector<TrialRecord> out;
  while (q.step()) {
    TrialRecord r;
    r.id = static_cast<int>(q.int64(0));
    r.kind = q.text(1);
    const std::string status = q.text(2);
    const auto parsed = parse_trial_status(status);
    if (!parsed)
      throw InputError(fmt::format("{}: trial {}: unknown status '{}'", path_, r.id,
                                   status.size() > 40 ? status.substr(0, 40) + "..." : status));
    r.status = *parsed;
    r.values = json_list<Assignment>(q.text(3), path_, r.id, "params");
    r.unit = json_list<std::vector<double>>(q.text(4), path_, r.id, "unit");
    if (!q.is_null(5)) r.score = q.real(5);
    r.reason = q.text(6);
    r.exit_code = static_cast<int>(q.int64(7));
    r.wall_s = q.real(8);
    r.dir = q.text(9);
    r.pgid = q.int64(10);
    r.started_unix_ms = q.int64(11);
    if (extra) {
      r.source = q.text(12);
      if (!q.is_null(13)) r.step_s = q.real(13);
    }
    out.push_back(std::move(r));
  }
  return out;
}

int Study::add_trial(TrialRecord& r) {
  db_.prepare("INSERT INTO trials(kind, status, params, unit, dir, started_unix_ms) VALUES(?1, ?2, ?3, ?4, ?5, ?6)")
      .bind(1, r.kind)
      .bind(2, trial_status_name(r.status))
      .bind(3, nlohmann::json(r.values).dump())
      .bind(4, nlohmann::json(r.unit).dump())
      .bind(5, r.dir)
      .bind(6, r.started_unix_ms)
      .run();
  r.id = static_cast<int>(db_.last_insert_rowid());
  return r.id;
}

void Study::update_trial(const TrialRecord& r) {
  db_.prepare("UPDATE trials SET kind=?2, status=?3, params=?4, unit=?5, score=?6, reason=?7, exit_code=?8, "
              "wall_s=?9, dir=?10, pgid=?11, started_unix_ms=?12, source=?13, step_s=?14 WHERE id=?1")
      .bind(1, r.id)
      .bind(2, r.kind)
      .bind(3, trial_status_name(r.status))
      .bind(4, nlohmann::json(r.values).dump())
      .bind(5, nlohmann::json(r.unit).dump())
      .bind(6, r.score)
      .bind(7, r.reason)
      .bind(8, r.exit_code)
      .bind(9, r.wall_s)
      .bind(10, r.dir)
      .bind(11, r.pgid)
      .bind(12, r.started_unix_ms)
      .bind(13, r.source)
      .bind(14, r.step_s)
      .run();
}

void Study::save_trial_processes(int trial_id, const TrialProcesses& p) {
  db_.exec(kSchema);  // a study written by an older collscope has no trial_processes table yet
  db_.prepare("INSERT OR REPLACE INTO trial_processes(trial_id, host, boot_id, pgid, leader_start_ticks, marker) "
              "VALUES(?1, ?2, ?3, ?4, ?5, ?6)")
      .bind(1, trial_id)
      .bind(2, p.host)
      .bind(3, p.boot_id)
      .bind(4, p.pgid)
      .bind(5, p.leader_start_ticks)
      .bind(6, p.marker)
      .run();
}

std::optional<TrialProcesses> Study::trial_processes(int trial_id) const {
  if (!db_.has_table("trial_processes")) return std::nullopt;  // an older study: nothing recorded, nothing provable
  auto q = db_.prepare("SELECT host, boot_id, pgid, leader_start_ticks, marker FROM trial_processes WHERE trial_id=?1");
  q.bind(1, trial_id);
  if (!q.step()) return std::nullopt;
  return TrialProcesses{q.text(0), q.text(1), q.int64(2), q.int64(3), q.text(4)};
}

void Study::close_for_readers() {
  try {
    db_.exec("PRAGMA journal_mode=DELETE");
  } catch (const Error&) {
    // another connection has it open: it stays in WAL mode, which readers handle too
  }
}

std::string Study::id() {
  if (auto existing = meta("study_id"); existing && !existing->empty()) return *existing;
  std::random_device rd;
  const std::string made = fmt::format("{:08x}{:08x}{:08x}{:08x}", rd(), rd(), rd(), rd());
  set_meta("study_id", made);
  return made;
}

void Study::save_model(int trial_id, const std::string& json) {
  db_.prepare("INSERT OR REPLACE INTO model(trial_id, state) VALUES(?1, ?2)").bind(1, trial_id).bind(2, json).run();
}

std::optional<std::string> Study::model(int trial_id) const {
  auto q = db_.prepare("SELECT state FROM model WHERE trial_id=?1");
  q.bind(1, trial_id);
  if (q.step()) return q.text(0);
  return std::nullopt;
}

}  // namespace collscope::autotuner
