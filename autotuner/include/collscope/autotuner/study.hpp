#pragma once
// The study file (SQLite): the space, the command, every trial (values, score, failure reason, run
// directory) and the model state that chose each trial. Written after every state change, so a
// tuner killed at any moment resumes from it (`collscope tune --resume`).
#include <collscope/autotuner/search_space.hpp>
#include <collscope/autotuner/trial_runner.hpp>
#include <collscope/store/sqlite.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collscope::autotuner {

// Where a trial stands. The study file keeps the names trial_status_name() gives (its format is unchanged).
enum class TrialStatus {
  Running,      // "running": in flight, or the tuner died
  Ok,           // "ok": scored
  Failed,       // "failed": non-zero exit, or no score
  Timeout,      // "timeout": killed at the wall-clock limit
  Stopped,      // "stopped": early-stopped; its partial score is kept
  Interrupted,  // "interrupted": the tuner was killed or stopped mid-trial; re-run on resume, never scored
};
// The status's name in the study file and in tables for people.
std::string_view trial_status_name(TrialStatus status);
// The status a study file names; nullopt for a name no collscope wrote.
std::optional<TrialStatus> parse_trial_status(std::string_view name);
// Whether the trial ran to an end the tuner counts (not running, not interrupted).
inline bool is_finished(TrialStatus s) { return s != TrialStatus::Running && s != TrialStatus::Interrupted; }
// Whether the trial's score (when it has one) is a measurement: ok, or early-stopped with its partial score.
inline bool keeps_score(TrialStatus s) { return s == TrialStatus::Ok || s == TrialStatus::Stopped; }

struct TrialRecord {
  int id = 0;                 // 1-based, in launch order
  std::string kind;           // "design", "expected-improvement", "random", "grid", "confirm"
  TrialStatus status = TrialStatus::Running;
  Assignment values;          // knob values, in knob order
  std::vector<double> unit;   // the point on the unit cube
  std::optional<double> score;  // the objective in its own units and direction (not oriented)
  std::string reason;         // why it failed / stopped; empty when ok
  int exit_code = 0;
  double wall_s = 0;
  std::string dir;            // the trial's directory (output.log, trace/)
  std::int64_t pgid = 0;      // process group of the running trial (0 once it ended; see Study::trial_processes)
  std::int64_t started_unix_ms = 0;
  std::string source;         // where the score came from, for people ("NVTX steps", "printed 'Total img/sec ...'")
  std::optional<double> step_s;  // seconds per step at this score, when known (the --job-steps stop rule)
};

// Held by the one tuner that runs a study: an exclusive flock on STUDY.lock (not on the SQLite file: SQLite's own
// POSIX locks live there, and NFS maps flock onto them). Released when the tuner exits, however it exits; the file
// itself stays (removing it would let two tuners lock two different files).
class StudyLock {
 public:
  // Throws InputError naming the study when another process holds it.
  explicit StudyLock(const std::string& study_path);
  ~StudyLock();
  StudyLock(const StudyLock&) = delete;
  StudyLock& operator=(const StudyLock&) = delete;

 private:
  int fd_ = -1;
};

class Study {
 public:
  // Creates a new study file; throws InputError when it already holds trials (use --resume).
  static Study create(const std::string& path, const std::map<std::string, std::string>& meta);
  enum class Access { ReadOnly, ReadWrite };
  // Opens an existing study; throws InputError naming the file when it is missing or not a study. Read-only (`tune
  // show`, reports, tests) never writes it; the tuner opens it for writing.
  static Study open(const std::string& path, Access access = Access::ReadOnly);

  const std::string& path() const { return path_; }
  std::optional<std::string> meta(const std::string& key) const;
  void set_meta(const std::string& key, const std::string& value);

  std::vector<TrialRecord> trials() const;
  int add_trial(TrialRecord& record);       // assigns record.id; status Running
  void update_trial(const TrialRecord& record);
  // Who runs trial `trial_id` (host, boot, process group, marker): what --resume checks before it kills anything.
  void save_trial_processes(int trial_id, const TrialProcesses& processes);
  std::optional<TrialProcesses> trial_processes(int trial_id) const;
  // Called by the tuner when it is done: the file goes back to a rollback journal, so readers (tune show, the viewer,
  // another user, a read-only mount) open it read-only and leave no -wal/-shm files behind. While a tuner writes it
  // is in WAL mode (readers never block the writer). Best effort: a reader holding it keeps WAL until next time.
  void close_for_readers();
  // A random id of the study, made once (trial markers start with it).
  std::string id();
  // Model state (JSON) that chose trial `trial_id`.
  void save_model(int trial_id, const std::string& json);
  std::optional<std::string> model(int trial_id) const;

 private:
  Study(std::string path, store::sqlite::Database db);

  std::string path_;
  store::sqlite::Database db_;
};

}  // namespace collscope::autotuner
