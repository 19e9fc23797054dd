// The launcher on real programs: exit codes and signals, captured output on both pipes at once, timeouts that take
// the whole process group (grandchildren included), exec failure reported as one line naming the program,
// environment, working directory, redirections, limits, and a background Process waited for and terminated.
#include <collscope/process/process.hpp>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace fs = std::filesystem;
using namespace collscope::process;
using namespace std::chrono_literals;

namespace {

Command sh(const std::string& script) {
  Command c({"/bin/sh", "-c", script});
  c.out = Redirect::capture();
  c.err = Redirect::capture();
  return c;
}

fs::path fresh_dir(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("collscope-process-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// True while `pid` exists and is not a zombie.
bool alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && line.substr(close + 2, 1) != "Z";
}

bool dies_within(pid_t pid, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (alive(pid)) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

}  // namespace

TEST(Process, ExitCodeAndOutput) {
  const auto r = run(sh("echo out; echo err >&2; exit 3"));
  EXPECT_TRUE(r.exited());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.status(), 3);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_GT(r.wall_s, 0);
}

TEST(Process, FindsTheProgramInPath) {
  Command c({"echo", "hello", "world"});
  c.out = Redirect::capture();
  const auto r = run(c);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "hello world\n");
}

TEST(Process, ExitBySignal) {
  const auto r = run(sh("kill -TERM $$"));
  EXPECT_FALSE(r.exited());
  EXPECT_EQ(r.signal, SIGTERM);
  EXPECT_EQ(r.status(), 128 + SIGTERM);
}

TEST(Process, ExecFailureIsOneLineNamingTheProgram) {
  try {
    run(Command({"collscope-no-such-program", "x"}));
    FAIL() << "no LaunchError";
  } catch (const LaunchError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot start 'collscope-no-such-program': No such file or directory");
    EXPECT_EQ(e.error_number(), ENOENT);
  }
  const auto dir = fresh_dir("noexec");
  std::ofstream(dir / "data.txt") << "not a program\n";
  try {
    run(Command({(dir / "data.txt").string()}));
    FAIL() << "no LaunchError";
  } catch (const LaunchError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot start '" + (dir / "data.txt").string() + "': Permission denied");
  }
}

TEST(Process, MissingWorkingDirectoryIsALaunchError) {
  Command c({"/bin/true"});
  c.working_dir = "/collscope-no-such-dir";
  try {
    run(c);
    FAIL() << "no LaunchError";
  } catch (const LaunchError& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot start '/bin/true': working directory '/collscope-no-such-dir': No such file or directory");
  }
}

TEST(Process, WorkingDirectory) {
  const auto dir = fresh_dir("cwd");
  Command c = sh("pwd");
  c.working_dir = dir.string();
  EXPECT_EQ(run(c).out, fs::canonical(dir).string() + "\n");
}

TEST(Process, EnvironmentAddedOverriddenAndRemoved) {
  ::setenv("COLLSCOPE_PROCESS_TEST_KEEP", "kept", 1);
  ::setenv("COLLSCOPE_PROCESS_TEST_OVERRIDE", "old", 1);
  ::setenv("COLLSCOPE_PROCESS_TEST_REMOVE", "there", 1);
  Command c = sh("echo \"$COLLSCOPE_PROCESS_TEST_KEEP|$COLLSCOPE_PROCESS_TEST_OVERRIDE|"
                 "${COLLSCOPE_PROCESS_TEST_REMOVE-unset}|$COLLSCOPE_PROCESS_TEST_ADD\"");
  c.set_env("COLLSCOPE_PROCESS_TEST_OVERRIDE", "new").unset_env("COLLSCOPE_PROCESS_TEST_REMOVE");
  c.set_env("COLLSCOPE_PROCESS_TEST_ADD", "a b;c");
  EXPECT_EQ(run(c).out, "kept|new|unset|a b;c\n");
  // The parent's own environment is untouched.
  EXPECT_STREQ(std::getenv("COLLSCOPE_PROCESS_TEST_OVERRIDE"), "old");
  EXPECT_STREQ(std::getenv("COLLSCOPE_PROCESS_TEST_REMOVE"), "there");
}

TEST(Process, PathOfTheChildsEnvironmentFindsTheProgram) {
  const auto dir = fresh_dir("path");
  std::ofstream(dir / "collscope-test-tool") << "#!/bin/sh\necho tool ran\n";
  fs::permissions(dir / "collscope-test-tool", fs::perms::owner_all);
  Command c({"collscope-test-tool"});
  c.set_env("PATH", dir.string() + ":/usr/bin:/bin");
  c.out = Redirect::capture();
  EXPECT_EQ(run(c).out, "tool ran\n");
}

TEST(Process, LargeOutputOnBothPipesAtOnce) {
  // 4 MiB on each stream, interleaved: a reader of one pipe only would block the child on the other.
  const auto r = run(sh("i=0; while [ $i -lt 64 ]; do head -c 65536 /dev/zero | tr '\\0' o; "
                        "head -c 65536 /dev/zero | tr '\\0' e >&2; i=$((i+1)); done"),
                     30s);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.size(), 4u << 20);
  EXPECT_EQ(r.err.size(), 4u << 20);
  EXPECT_EQ(r.out.find_first_not_of('o'), std::string::npos);
  EXPECT_EQ(r.err.find_first_not_of('e'), std::string::npos);
}

TEST(Process, TimeoutKillsTheWholeProcessGroup) {
  // The child starts a grandchild, prints its pid and waits: the timeout must take both.
  const auto started = std::chrono::steady_clock::now();
  const auto r = run(sh("sleep 1000 & echo $!; wait"), 500ms);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_LT(took, 10.0);
  const pid_t grandchild = static_cast<pid_t>(std::atol(r.out.c_str()));
  ASSERT_GT(grandchild, 0) << r.out;
  EXPECT_TRUE(dies_within(grandchild, 5000ms)) << "the grandchild outlived the timeout";
}

TEST(Process, TimeoutWithGraceSendsTermFirst) {
  const auto r = run(sh("trap 'echo got TERM; exit 7' TERM; echo ready; while :; do sleep 0.05; done"), 500ms, 5s);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_NE(r.out.find("got TERM"), std::string::npos) << r.out;
}

TEST(Process, NoTimeoutWhenItEndsInTime) {
  const auto r = run(sh("sleep 0.1; echo done"), 20s);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.out, "done\n");
}

TEST(Process, RedirectsToFilesAndNull) {
  const auto dir = fresh_dir("files");
  std::ofstream(dir / "in.txt") << "from a file\n";
  Command c({"/bin/sh", "-c", "cat; echo to-err >&2"});
  c.in = Redirect::file((dir / "in.txt").string());
  c.out = Redirect::file((dir / "out.txt").string());
  c.err = Redirect::to_stdout();
  EXPECT_EQ(run(c).exit_code, 0);
  EXPECT_EQ(read_file(dir / "out.txt"), "from a file\nto-err\n");
  c.out = Redirect::file((dir / "out.txt").string(), true);
  run(c);
  EXPECT_EQ(read_file(dir / "out.txt"), "from a file\nto-err\nfrom a file\nto-err\n");
  Command quiet({"/bin/sh", "-c", "cat; echo x; echo y >&2"});
  quiet.in = Redirect::null();
  quiet.out = Redirect::null();
  quiet.err = Redirect::null();
  EXPECT_EQ(run(quiet).exit_code, 0);
  Command bad({"/bin/true"});
  bad.out = Redirect::file((dir / "no-such-dir" / "out.txt").string());
  EXPECT_THROW(run(bad), LaunchError);
}

TEST(Process, ResourceLimitIsSetInTheChild) {
  Command c = sh("ulimit -v");
  c.limits.push_back({RLIMIT_AS, 512ull << 20, 512ull << 20});
  EXPECT_EQ(run(c).out, std::to_string(512 * 1024) + "\n");
}

TEST(Process, OwnProcessGroupOrNot) {
  Command own = sh("cut -d' ' -f5 /proc/$$/stat");
  const auto pgid_own = std::atol(run(own).out.c_str());
  Command shared = own;
  shared.own_process_group = false;
  const auto pgid_shared = std::atol(run(shared).out.c_str());
  EXPECT_EQ(pgid_shared, static_cast<long>(::getpgrp()));
  EXPECT_NE(pgid_own, static_cast<long>(::getpgrp()));
}

TEST(Process, BackgroundProcessWaitedForAndTerminated) {
  Command c = sh("echo started; exec sleep 1000");
  Process p = Process::start(c);
  EXPECT_GT(p.pid(), 0);
  EXPECT_FALSE(p.wait_for(200ms));
  EXPECT_FALSE(p.try_wait());
  const auto r = p.terminate(2s);
  EXPECT_EQ(r.signal, SIGTERM);
  EXPECT_EQ(r.out, "started\n");
  EXPECT_TRUE(p.finished());
}

TEST(Process, TerminateEscalatesToKill) {
  Process p = Process::start(sh("trap '' TERM; echo ready; while :; do sleep 0.05; done"));
  // Wait until the trap is set.
  std::this_thread::sleep_for(300ms);
  const auto started = std::chrono::steady_clock::now();
  const auto r = p.terminate(300ms);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 5.0);
}

TEST(Process, PipeForTheCallerToRead) {
  Command c({"/bin/sh", "-c", "echo line one; echo line two"});
  c.out = Redirect::pipe();
  Process p = Process::start(c);
  const int fd = p.take_stdout();
  ASSERT_GE(fd, 0);
  FILE* in = ::fdopen(fd, "r");
  char line[64];
  std::string got;
  while (std::fgets(line, sizeof line, in)) got += line;
  std::fclose(in);
  EXPECT_EQ(got, "line one\nline two\n");
  EXPECT_EQ(p.wait().exit_code, 0);
}

TEST(Process, DestroyingARunningProcessKillsItsGroup) {
  pid_t grandchild = 0;
  {
    Command c({"/bin/sh", "-c", "sleep 1000 & echo $!; wait"});
    c.out = Redirect::pipe();
    Process p = Process::start(c);
    FILE* in = ::fdopen(p.take_stdout(), "r");
    char line[64] = {};
    ASSERT_TRUE(std::fgets(line, sizeof line, in));
    std::fclose(in);
    grandchild = static_cast<pid_t>(std::atol(line));
  }
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(dies_within(grandchild, 5000ms));
}

TEST(Process, RusageOfTheChild) {
  const auto r = run(sh("i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"));
  EXPECT_GT(r.max_rss_bytes, 0);
  EXPECT_GE(r.user_cpu_s + r.system_cpu_s, 0.0);
}

TEST(Process, EmptyCommandIsRefused) { EXPECT_THROW(run(Command{}), std::invalid_argument); }

TEST(Process, WhatHoldsThePipesAfterTheChildExitsIsKilledAtTheTimeout) {
  // The child exits at once; a process it left in its group keeps stdout open.
  const auto r = run(sh("sleep 1000 & echo $!"), 500ms);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0);
  const pid_t left = static_cast<pid_t>(std::atol(r.out.c_str()));
  ASSERT_GT(left, 0) << r.out;
  EXPECT_TRUE(dies_within(left, 5000ms));
}

TEST(Process, NewSession) {
  Command c = sh("echo $$ $(cut -d' ' -f6 /proc/$$/stat)");
  c.new_session = true;
  const auto out = run(c).out;
  const auto space = out.find(' ');
  ASSERT_NE(space, std::string::npos) << out;
  EXPECT_EQ(out.substr(0, space), out.substr(space + 1, out.size() - space - 2)) << "session id != pid: " << out;
}
