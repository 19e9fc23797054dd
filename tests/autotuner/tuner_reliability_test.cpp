// What `collscope tune` must never do, through the built binary as a user runs it: signal a process it cannot prove
// is its trial, run two tuners on one study, score inf/nan, let a knob value reach a shell, accept an integer bound
// it cannot represent, crash or name no file on a corrupt study, or hold a job's whole output or an O(n^2) model of
// a huge study in memory.
#include <collscope/autotuner/study.hpp>
#include <collscope/autotuner/tuner.hpp>
#include <collscope/process/process.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace collscope::autotuner;
using collscope::test::bin_dir;
using collscope::test::read_file;
using collscope::test::shell;
using collscope::test::shell_quote;

namespace {

fs::path fresh_dir(const std::string& name) { return collscope::test::fresh_dir("collscope-tune-reliability", name); }

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

std::string collscope_exe() { return shell_quote(bin_dir() + "/collscope"); }

// Runs `sql` on the SQLite file with the sqlite3 shell (scripts/install-deps.sh installs it).
void sql(const fs::path& db, const std::string& statements) {
  ASSERT_EQ(shell("sqlite3 " + shell_quote(db.string()) + " " + shell_quote(statements)), 0) << statements;
}

// `cmd` run by /bin/sh in `cwd`, in the test's process group (a SIGKILL to it hits that process alone).
collscope::process::Process spawn_shell(const std::string& cmd, const fs::path& cwd) {
  collscope::process::Command command({"/bin/sh", "-c", cmd});
  command.working_dir = cwd.string();
  command.own_process_group = false;
  return collscope::process::Process::start(command);
}

// An unrelated process in its own session (process group == its pid), as any user may have running.
collscope::process::Process start_unrelated_sleeper() {
  collscope::process::Command command({"/bin/sleep", "1000"});
  command.new_session = true;
  return collscope::process::Process::start(command);
}

bool alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && line.substr(close + 2, 1) != "Z";
}

std::int64_t start_ticks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
  }
  return std::stoll(field);
}

std::string host() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

std::string boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

// The quick study's space: one categorical knob, scored by a regex on the job's output.
void write_quick_space(const fs::path& dir) {
  write(dir / "space.yaml", R"Y(knobs:
  - {name: v, type: categorical, values: ["3", "5"]}
objective: {kind: regex, regex: 'score ([0-9]+)'}
trial: {timeout_s: 20, confirm_top: 0}
)Y");
}

// A quick regex-scored study: one knob, `printf` as the job. Returns the study path.
fs::path quick_study(const fs::path& dir, int trials = 1) {
  write_quick_space(dir);
  const std::string cmd = "cd " + shell_quote(dir.string()) + " && " + collscope_exe() + " tune space.yaml --study s.sqlite --strategy grid --trials " +
                          std::to_string(trials) + " --no-progress -- /usr/bin/printf 'score %s\\n' '{v}' > first.log 2>&1";
  EXPECT_EQ(shell(cmd), 0) << read_file(dir / "first.log");
  return dir / "s.sqlite";
}

// Marks trial 1 of the study as left running by a dead tuner, with the given process record.
void mark_running(const fs::path& study, std::int64_t pgid, std::int64_t leader_start, const std::string& marker) {
  sql(study, "UPDATE trials SET status='running', score=NULL, pgid=" + std::to_string(pgid) + " WHERE id=1;"
             "CREATE TABLE IF NOT EXISTS trial_processes(trial_id INTEGER PRIMARY KEY, host TEXT NOT NULL, boot_id TEXT NOT NULL, "
             "pgid INTEGER NOT NULL, leader_start_ticks INTEGER NOT NULL, marker TEXT NOT NULL);"
             "INSERT OR REPLACE INTO trial_processes VALUES(1, '" + host() + "', '" + boot_id() + "', " + std::to_string(pgid) + ", " +
             std::to_string(leader_start) + ", '" + marker + "');");
}

std::string resume_command(const fs::path& dir, const std::string& extra = "") {
  return "cd " + shell_quote(dir.string()) + " && " + collscope_exe() + " tune space.yaml --study s.sqlite --resume --no-progress " + extra +
         " > resume.log 2>&1";
}

}  // namespace

// A recorded process group now used by an unrelated process (its pid was reused: another start time)
// must survive `--resume`.
TEST(TuneResume, NeverSignalsAProcessGroupItCannotProveIsItsTrial) {
  const fs::path dir = fresh_dir("unrelated");
  const fs::path study = quick_study(dir);
  auto sleeper = start_unrelated_sleeper();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(alive(sleeper.pid()));
  // Same host, same boot, the sleeper's group; the trial's leader started earlier than the sleeper (pid reuse).
  mark_running(study, sleeper.pid(), start_ticks(sleeper.pid()) - 100, "someone-else-1");
  const int rc = shell(resume_command(dir));
  const bool survived = alive(sleeper.pid());
  sleeper.signal(SIGKILL);
  sleeper.wait();
  EXPECT_EQ(rc, 0) << read_file(dir / "resume.log");
  EXPECT_TRUE(survived) << "the tuner killed an unrelated process group";
  const auto trials = Study::open(study.string()).trials();
  ASSERT_GE(trials.size(), 2u);
  EXPECT_EQ(trials[0].status, TrialStatus::Interrupted);
  EXPECT_EQ(trials[1].status, TrialStatus::Ok);
}

// A pgid of 1 in the record would be kill(-1, SIGKILL): every process the user may signal. Run inside a
// PID namespace so that a failure of this test cannot take the machine's processes with it.
TEST(TuneResume, ProcessGroupOneSignalsNothing) {
  std::string unshare;
  for (const char* candidate : {"unshare --pid --fork --mount-proc", "unshare --user --map-root-user --pid --fork --mount-proc"})
    if (shell(std::string(candidate) + " true > /dev/null 2>&1") == 0) {
      unshare = candidate;
      break;
    }
  if (unshare.empty()) GTEST_SKIP() << "no PID namespace here (unshare refused)";
  const fs::path dir = fresh_dir("pgid1");
  const fs::path study = quick_study(dir);
  mark_running(study, 1, 1, "x-1");
  // Inside the namespace: a bystander sleeps; the tuner resumes; the bystander must still be there after it.
  const std::string script = "sleep 1000 & s=$!; " + collscope_exe() +
                             " tune space.yaml --study s.sqlite --resume --no-progress > resume.log 2>&1; rc=$?; "
                             "if kill -0 $s 2>/dev/null; then echo ALIVE; fi; kill -9 $s; echo rc=$rc";
  const std::string cmd = "cd " + shell_quote(dir.string()) + " && " + unshare + " sh -c " + shell_quote(script) + " > ns.log 2>&1";
  shell(cmd);
  const std::string out = read_file(dir / "ns.log");
  EXPECT_NE(out.find("ALIVE"), std::string::npos) << out << read_file(dir / "resume.log");
  EXPECT_NE(out.find("rc=0"), std::string::npos) << out << read_file(dir / "resume.log");
}

// The processes a killed tuner left behind are its own trial's, proven by their marker: --resume stops them.
TEST(TuneResume, StopsWhatIsLeftOfItsOwnTrial) {
  const fs::path dir = fresh_dir("leftover");
  write(dir / "space.yaml", R"Y(knobs:
  - {name: v, type: categorical, values: ["3"]}
objective: {kind: regex, regex: 'score ([0-9]+)'}
trial: {timeout_s: 60, confirm_top: 0}
)Y");
  // The job records its pid, then sleeps: the tuner is SIGKILLed meanwhile, the job lives on as an orphan.
  auto tuner = spawn_shell("exec " + collscope_exe() + " tune space.yaml --study s.sqlite --trials 1 --no-progress -- "
                           "/bin/sh -c 'echo $$ > {trial_dir}/job.pid; exec sleep 1000' > tune.log 2>&1", dir);
  const fs::path pid_file = dir / "s.sqlite.trials" / "trial-0001" / "job.pid";
  for (int i = 0; i < 100 && read_file(pid_file).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::string pid_text = read_file(pid_file);
  ASSERT_FALSE(pid_text.empty()) << read_file(dir / "tune.log");
  const pid_t job = static_cast<pid_t>(std::stol(pid_text));
  tuner.signal(SIGKILL);
  tuner.wait();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(alive(job)) << "the job died with the tuner: nothing left to test";
  // The re-run of the interrupted point hits its 1 s limit; what matters is the orphan.
  shell(resume_command(dir, "--trial-timeout 1"));
  // The resume signals the orphan's group; how soon the orphan is gone after that depends on when it and its
  // reaper get a CPU: a fixed 200 ms had no measured margin on a loaded machine. Polling up to 10 s costs nothing
  // when it works.
  bool left = alive(job);
  for (int i = 0; i < 200 && left; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    left = alive(job);
  }
  if (left) ::kill(job, SIGKILL);
  EXPECT_FALSE(left) << read_file(dir / "resume.log");
  const auto trials = Study::open((dir / "s.sqlite").string()).trials();
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].status, TrialStatus::Interrupted);
}

// Two tuners on one study: the second is refused with one line; the first one's trial is untouched.
TEST(TuneResume, SecondTunerOnOneStudyIsRefused) {
  const fs::path dir = fresh_dir("two");
  write(dir / "space.yaml", R"Y(knobs:
  - {name: v, type: categorical, values: ["5"]}
objective: {kind: regex, regex: 'score ([0-9]+)'}
trial: {timeout_s: 30, confirm_top: 0}
)Y");
  auto first = spawn_shell("exec " + collscope_exe() + " tune space.yaml --study s.sqlite --trials 1 --no-progress -- "
                           "/bin/sh -c 'sleep 2; echo score {v}' > first.log 2>&1", dir);
  bool running = false;
  for (int i = 0; i < 100 && !running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!fs::exists(dir / "s.sqlite")) continue;
    try {
      const auto t = Study::open((dir / "s.sqlite").string()).trials();
      running = !t.empty() && t[0].status == TrialStatus::Running && t[0].pgid > 0;
    } catch (const std::exception&) {
    }
  }
  ASSERT_TRUE(running) << read_file(dir / "first.log");
  const int second = shell(resume_command(dir));
  const std::string second_log = read_file(dir / "resume.log");
  EXPECT_EQ(first.wait().status(), 0) << read_file(dir / "first.log");
  EXPECT_EQ(second, 2) << second_log;
  EXPECT_EQ(std::count(second_log.begin(), second_log.end(), '\n'), 1) << second_log;
  EXPECT_NE(second_log.find("s.sqlite: another collscope tune"), std::string::npos) << second_log;
  const auto trials = Study::open((dir / "s.sqlite").string()).trials();
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0].status, TrialStatus::Ok) << trials[0].reason;
  EXPECT_EQ(trials[0].score, 5.0);
}

// A knob value with a newline is refused before any trial; every value in --export-env is quoted, in
// comments too, and sourcing the file runs nothing.
TEST(TuneExportEnv, ControlCharactersRefusedAndEveryValueQuoted) {
  const fs::path dir = fresh_dir("env");
  write(dir / "newline.yaml", R"Y(knobs:
  - {name: v, type: categorical, values: ["ok", "x\ntouch PWNED\n#"]}
objective: {kind: regex, regex: 'score ([0-9]+)'}
trial: {timeout_s: 20, confirm_top: 0}
)Y");
  const std::string run_newline = "cd " + shell_quote(dir.string()) + " && " + collscope_exe() +
                                  " tune newline.yaml --study n.sqlite --strategy grid --trials 2 --no-progress --export-env best.env -- "
                                  "/bin/sh -c 'echo score 1; [ \"$1\" = ok ] || echo score 2' sh '{v}' > newline.log 2>&1";
  const int rc = shell(run_newline);
  if (fs::exists(dir / "best.env")) shell("cd " + shell_quote(dir.string()) + " && sh -c '. ./best.env' > /dev/null 2>&1");
  EXPECT_FALSE(fs::exists(dir / "PWNED")) << read_file(dir / "best.env");
  EXPECT_EQ(rc, 2) << read_file(dir / "newline.log");
  const std::string log = read_file(dir / "newline.log");
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  EXPECT_NE(log.find("newline.yaml: knobs[0].values[1]"), std::string::npos) << log;

  // Quotes, dollars and backquotes: the export sets exactly the value; the comment line quotes its value too.
  write(dir / "quotes.yaml", R"Y(knobs:
  - {name: e, env: COLLSCOPE_TEST_E, type: categorical, values: ["it's $(touch PWNED2) `touch PWNED3`"]}
  - {name: c, type: categorical, values: ["a'b;touch PWNED4"]}
objective: {kind: regex, regex: 'score ([0-9]+)'}
trial: {timeout_s: 20, confirm_top: 0}
)Y");
  ASSERT_EQ(shell("cd " + shell_quote(dir.string()) + " && " + collscope_exe() +
                  " tune quotes.yaml --study q.sqlite --strategy grid --trials 1 --no-progress --export-env q.env -- "
                  "/usr/bin/printf 'score 1\\n' > quotes.log 2>&1"),
            0)
      << read_file(dir / "quotes.log");
  ASSERT_EQ(shell("cd " + shell_quote(dir.string()) + " && sh -c '. ./q.env; printf %s \"$COLLSCOPE_TEST_E\"' > value.txt"), 0);
  EXPECT_EQ(read_file(dir / "value.txt"), "it's $(touch PWNED2) `touch PWNED3`");
  for (const char* f : {"PWNED2", "PWNED3", "PWNED4"}) EXPECT_FALSE(fs::exists(dir / f)) << f << "\n" << read_file(dir / "q.env");
  EXPECT_NE(read_file(dir / "q.env").find("# c='a'\\''b;touch PWNED4'"), std::string::npos) << read_file(dir / "q.env");
}

// An integer bound a double holds but an int64 does not: one line naming the file and the knob.
TEST(TuneSpace, IntegerBoundOutOfRangeIsOneLineNamingTheKnob) {
  const fs::path dir = fresh_dir("bounds");
  write(dir / "space.yaml", R"Y(knobs:
  - {name: ok, type: categorical, values: ["1"]}
  - {name: big, type: integer, min: 1, max: 1e300}
objective: {kind: regex, regex: 'score ([0-9]+)'}
)Y");
  const int rc = shell("cd " + shell_quote(dir.string()) + " && " + collscope_exe() +
                       " tune space.yaml --study s.sqlite --trials 2 --no-progress -- /usr/bin/printf 'score {big}\\n' > tune.log 2>&1");
  const std::string log = read_file(dir / "tune.log");
  EXPECT_EQ(rc, 2) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  EXPECT_NE(log.find("space.yaml: knobs[1].max"), std::string::npos) << log;
  EXPECT_EQ(log.find("-9223372036854775808"), std::string::npos) << log;
}

// Inf and nan from the job are failed trials with a reason: never the best, never an ok trial, never in
// the model (its log likelihood stays a number) or in the report's plots.
TEST(TuneScores, InfAndNanFailTheirTrials) {
  const fs::path dir = fresh_dir("inf");
  write(dir / "space.yaml", R"Y(knobs:
  - {name: x, type: real, min: 0, max: 1}
  - {name: mode, type: categorical, values: ["num", "inf", "nan"]}
objective: {kind: regex, regex: 'score (\S+)'}
trial: {timeout_s: 20, confirm_top: 0, early_stopping: false}
)Y");
  const int rc = shell("cd " + shell_quote(dir.string()) + " && " + collscope_exe() +
                       " tune space.yaml --study s.sqlite --trials 9 --seed 3 --no-progress --report report -- /bin/sh -c "
                       "'if [ \"$1\" = num ]; then echo score $2; else echo score $1; fi' sh '{mode}' '{x}' > tune.log 2>&1");
  ASSERT_EQ(rc, 0) << read_file(dir / "tune.log");
  const Study study = Study::open((dir / "s.sqlite").string());
  int non_finite = 0, ok = 0;
  for (const auto& t : study.trials()) {
    if (t.values[1] == "num") {
      EXPECT_EQ(t.status, TrialStatus::Ok) << t.id;
      ++ok;
      continue;
    }
    ++non_finite;
    EXPECT_EQ(t.status, TrialStatus::Failed) << t.id;
    EXPECT_FALSE(t.score.has_value()) << t.id;
    EXPECT_NE(t.reason.find("not a finite number"), std::string::npos) << t.reason;
    // The model that chose this trial or any later one saw no inf/nan: its log likelihood is a number.
  }
  EXPECT_GT(non_finite, 0);
  EXPECT_GE(ok, 2);
  int models = 0;
  for (const auto& t : study.trials())
    if (const auto m = study.model(t.id)) {
      ++models;
      const auto j = nlohmann::json::parse(*m);
      EXPECT_TRUE(j["log_likelihood"].is_number()) << *m;
    }
  EXPECT_GT(models, 0);
  EXPECT_NE(read_file(dir / "tune.log").find("best: x="), std::string::npos) << read_file(dir / "tune.log");
  EXPECT_EQ(read_file(dir / "tune.log").find("inf)"), std::string::npos) << read_file(dir / "tune.log");
  const std::regex not_a_number(R"((^|[^a-z])(nan|inf)([^a-z]|$))", std::regex::icase);
  for (const auto& entry : fs::directory_iterator(dir / "report")) {
    if (entry.path().extension() == ".svg") {
      // Numbers (coordinates, ticks, labels) only: a failed trial's hover text quotes its reason ("objective: inf is
      // not a finite number").
      std::string svg = std::regex_replace(read_file(entry.path()), std::regex("<title>[^<]*</title>"), "");
      // The categorical knob's own values ("inf", "nan") label its axis.
      if (entry.path().filename() == "effect-mode.svg")
        svg = std::regex_replace(svg, std::regex(R"(<text[^>]*>(num|inf|nan)</text>)"), "");
      EXPECT_FALSE(std::regex_search(svg, not_a_number)) << entry.path();
    }
  }
}

// A corrupt trial row is one line naming the study and the trial, exit 2: no segfault on
// params `[]`, no bare parse_error.101 / type_error.302; a corrupt meta value likewise on --resume.
TEST(TuneStudy, CorruptRowsAreOneLineNamingTheStudy) {
  const fs::path dir = fresh_dir("corrupt");
  const fs::path study = quick_study(dir, 2);
  // The study file keeps status words: one no collscope wrote is corrupt too.
  for (const auto& [corruption, expect] : {std::pair<std::string, std::string>{"params='[]'", "trial 1: 0 knob value(s)"},
                                       {"params='not json'", "trial 1: params is not a JSON list"},
                                       {"params='[1, 2]'", "trial 1: params is not a JSON list"},
                                       {"status='okay'", "trial 1: unknown status 'okay'"}}) {
    fs::copy_file(study, dir / "c.sqlite", fs::copy_options::overwrite_existing);
    sql(dir / "c.sqlite", "UPDATE trials SET " + corruption + " WHERE id=1;");
    const int rc = shell("cd " + shell_quote(dir.string()) + " && " + collscope_exe() + " tune show c.sqlite --report rep > show.log 2>&1");
    const std::string log = read_file(dir / "show.log");
    EXPECT_EQ(rc, 2) << corruption << ": " << log;
    EXPECT_NE(log.find("collscope: c.sqlite: " + expect), std::string::npos) << corruption << ": " << log;
    EXPECT_EQ(log.find("internal error"), std::string::npos) << log;
  }
  sql(study, "UPDATE meta SET value='abc' WHERE key='seed';");
  const int rc = shell(resume_command(dir));
  const std::string log = read_file(dir / "resume.log");
  EXPECT_EQ(rc, 2) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  EXPECT_NE(log.find("s.sqlite: meta.seed"), std::string::npos) << log;
}

// A job that writes 100 MB costs the tuner no more than a few MB: its output is read line by line.
TEST(TuneMemory, TrialOutputIsStreamed) {
  const fs::path dir = fresh_dir("output");
  write(dir / "space.yaml", R"Y(knobs:
  - {name: v, type: categorical, values: ["7"]}
objective: {kind: regex, regex: 'score ([0-9]+)'}
trial: {timeout_s: 60, confirm_top: 0}
)Y");
  auto tuner = spawn_shell("exec " + collscope_exe() + " tune space.yaml --study s.sqlite --trials 1 --no-progress -- /bin/sh -c "
                           "'yes 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz | head -c 100000000; "
                           "echo; echo score {v}' > tune.log 2>&1", dir);
  const auto result = tuner.wait();
  const int rc = result.status();
  const auto trials = Study::open((dir / "s.sqlite").string()).trials();
  fs::remove_all(dir / "s.sqlite.trials");
  ASSERT_EQ(rc, 0) << read_file(dir / "tune.log");
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0].score, 7.0);
  const double peak_mb = static_cast<double>(result.max_rss_bytes) / (1024 * 1024);  // of the tuner and its waited-for children
  EXPECT_LT(peak_mb, 60.0) << "peak RSS " << peak_mb << " MB";
  RecordProperty("tuner_peak_rss_mb", std::to_string(peak_mb));
}

// A report over 75 000 trials fits its model on a bounded subset: it finishes under a 2 GB address
// space limit instead of asking for 45 GB.
TEST(TuneMemory, ReportOverManyTrialsIsBounded) {
  const fs::path dir = fresh_dir("many");
  write(dir / "space.yaml", R"Y(knobs:
  - {name: x, type: real, min: 0, max: 1}
  - {name: y, type: integer, min: 1, max: 100}
objective: {kind: regex, regex: 'score ([0-9.]+)'}
trial: {timeout_s: 20, confirm_top: 0}
)Y");
  ASSERT_EQ(shell("cd " + shell_quote(dir.string()) + " && " + collscope_exe() +
                  " tune space.yaml --study s.sqlite --strategy random --trials 2 --no-progress -- /usr/bin/printf 'score {x}\\n' > tune.log 2>&1"),
            0)
      << read_file(dir / "tune.log");
  sql(dir / "s.sqlite",
      "WITH RECURSIVE n(i) AS (SELECT 3 UNION ALL SELECT i + 1 FROM n WHERE i < 75002) "
      "INSERT INTO trials(id, kind, status, params, unit, score, reason, exit_code, wall_s, dir) "
      "SELECT i, 'random', 'ok', json_array(printf('%.6g', (i % 997) / 997.0), printf('%d', 1 + i % 100)), "
      "json_array((i % 997) / 997.0, (i % 100) / 99.0), (i % 997) / 997.0 + (i % 7) * 0.01, '', 0, 0.1, '' FROM n;");
  const auto start = std::chrono::steady_clock::now();
  const int rc = shell("cd " + shell_quote(dir.string()) + " && ulimit -v 2000000 && " + collscope_exe() +
                       " tune show s.sqlite --report report > show.txt 2> show.log");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(rc, 0) << read_file(dir / "show.log");
  EXPECT_TRUE(fs::exists(dir / "report" / "effect-x.svg"));
  EXPECT_LT(seconds, 60.0);
  EXPECT_NE(read_file(dir / "show.txt").find("75002 trials"), std::string::npos);
}

// A finished study is a plain rollback-journal file: `tune show` opens it read-only and leaves nothing beside it.
TEST(TuneStudy, ShowReadsAFinishedStudyWithoutWritingIt) {
  const fs::path dir = fresh_dir("readonly");
  const fs::path study = quick_study(dir, 2);
  const auto before = fs::last_write_time(study);
  ASSERT_EQ(shell("cd " + shell_quote(dir.string()) + " && " + collscope_exe() + " tune show s.sqlite --report rep > show.log 2>&1"), 0)
      << read_file(dir / "show.log");
  EXPECT_NE(read_file(dir / "show.log").find("best: v=5"), std::string::npos) << read_file(dir / "show.log");
  EXPECT_FALSE(fs::exists(dir / "s.sqlite-wal"));
  EXPECT_FALSE(fs::exists(dir / "s.sqlite-shm"));
  EXPECT_EQ(fs::last_write_time(study), before);
}

// tune() is a library call that stops on its flag (the CLI sets it from SIGINT/SIGTERM): a stop asked for before the
// first trial runs none and says Interrupted (the CLI exits 130 on it).
TEST(TuneStudy, StopBeforeTheFirstTrialRunsNothing) {
  const fs::path dir = fresh_dir("stop");
  write_quick_space(dir);
  TuneOptions options;
  options.space_path = (dir / "space.yaml").string();
  options.study_path = (dir / "s.sqlite").string();
  options.strategy = StrategyKind::Grid;
  options.trials = 2;
  options.command = {"/usr/bin/printf", "score {v}\\n"};
  options.collscope_exe = bin_dir() + "/collscope";
  const std::atomic<bool> stop{true};
  const TuneResult result = tune(options, stop);
  EXPECT_EQ(result.outcome, TuneOutcome::Interrupted);
  EXPECT_FALSE(result.best);
  EXPECT_EQ(result.study_path, options.study_path);
  EXPECT_TRUE(Study::open(options.study_path).trials().empty());
}
