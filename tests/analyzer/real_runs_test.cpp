// Ground truth on real runs: the fusion trainer under the preload tracer, 2–4 MPI ranks on this machine.
// Skipped (not failed) when the sample or the preload is not built in this tree.
#include <algorithm>
#include <cmath>
#include <collscope/analyzer/analysis.hpp>
#include <collscope/analyzer/compare.hpp>
#include <collscope/analyzer/report.hpp>
#include <collscope/run/statistics.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "../common/hung_job.hpp"
#include "test_support.hpp"
#include <iostream>
#include "finding_lookup.hpp"

namespace fs = std::filesystem;
using namespace collscope::analyzer;

namespace {

using collscope::test::find_finding;

using collscope::test::bin_dir;
using collscope::test::read_file;
using collscope::test::shell;

fs::path run_root() { return collscope::test::temp_root("collscope-analyzer-real"); }

// Traces `ranks` ranks of the fusion trainer with `args`; returns the exit code of `collscope trace`.
int trace_trainer(const fs::path& run_dir, int ranks, const std::string& args, const std::string& env = "",
                  int timeout_s = 60) {
  fs::create_directories(run_dir);
  const std::string cmd = fmt::format(
      "{} timeout -s TERM {} {}/collscope trace -o {} -- mpirun -np {} --oversubscribe --mca btl self,vader "
      "{}/fusion_trainer {} > {}/job.log 2>&1",
      env, timeout_s, bin_dir(), run_dir.string(), ranks, bin_dir(), args, run_dir.string());
  return shell(cmd);
}

class RealRuns : public ::testing::Test {
 protected:
  void SetUp() override {
    if (bin_dir().empty() || !fs::exists(fs::path(bin_dir()) / "fusion_trainer") ||
        !fs::exists(fs::path(bin_dir()) / "collscope"))
      GTEST_SKIP() << "fusion_trainer / collscope not built";
    const char* preload = std::getenv("COLLSCOPE_PRELOAD");
    if (!fs::exists(preload ? std::string(preload) : std::string(COLLSCOPE_TEST_PRELOAD)))
      GTEST_SKIP() << "preload tracer not built";
    collscope::test::set_mpi_test_env();
  }
};

constexpr const char* kShort = "--steps 12 --model-scale 0.02";

}  // namespace

TEST_F(RealRuns, StragglerNamedWithInjectedDelay) {
  const auto dir = run_root() / "slow";
  const double slow_ms = 30;
  ASSERT_EQ(trace_trainer(dir, 2, fmt::format("{} --slow-rank 1 --slow-ms {}", kShort, slow_ms)), 0);
  const Analysis a = analyze_run(dir.string());
  const Finding* f = find_finding(a, FindingKind::Straggler);
  if (f == nullptr) {
    // At heavy load (load 11 on 2 cores, 2026-12-07: steps of 230 ms against 20 ms quiet) the other rank's own
    // delays exceed the injected 30 ms in a few steps, so rank 1 was the latest in 9 of 12, too few for the sign
    // test (chance 0.073 > 0.01): the product then names no straggler and says so in its within-noise note on
    // rank 1, with its lateness. That is the right answer at that noise; the note must name rank 1 at >= 0.8 x the
    // injected delay.
    const bool noted = std::any_of(a.notes.begin(), a.notes.end(), [](const std::string& n) {
      return n.find("within noise") != std::string::npos && n.find("rank 1 is") != std::string::npos;
    });
    // Or the machine delayed the other rank too (the timing loop at load 5, 2026-12-07: rank 0's step thread waited
    // for a CPU 49 % of its steps, so it was 11.61 ms late per step against rank 1's 18.46, below the straggler's
    // 3x dominance): then the report must say so, with CPU contention naming rank 0, and rank 1 must still be the
    // latest.
    const Finding* contention = find_finding(a, FindingKind::CpuContention);
    const bool other_rank_contended =
        contention != nullptr && std::find(contention->ranks.begin(), contention->ranks.end(), 0) != contention->ranks.end();
    ASSERT_TRUE(noted || other_rank_contended) << text_report(a);
    if (noted) {
      // 0.8 x the injected delay, or 3.3 standard errors of the median below it (1.253 x the rank's step-to-step
      // noise, 1.4826 x MAD, over the square root of the steps; one-sided 1 in 2 000), whichever is lower: at
      // load 7.5 (the timing loop beside a full build, 2026-12-07) the note read 23.50 ms with 6.61 ms of noise
      // over 12 steps, 0.78 x.
      std::vector<double> lateness(a.lateness.lateness_ns.at(1).begin() + a.lateness.first_measured,
                                   a.lateness.lateness_ns.at(1).end());
      const double median = a.lateness.median_lateness_ns.at(1);
      std::vector<double> deviations;
      for (double x : lateness) deviations.push_back(std::abs(x - median));
      const double noise = 1.4826 * collscope::run::median_of(deviations);
      const double margin =
          std::max(0.2 * slow_ms * 1e6, 3.3 * 1.253 * noise / std::sqrt(double(std::max<std::size_t>(1, lateness.size()))));
      EXPECT_GE(median, slow_ms * 1e6 - margin) << text_report(a);
    } else {
      EXPECT_GT(a.lateness.median_lateness_ns.at(1), a.lateness.median_lateness_ns.at(0)) << text_report(a);
    }
    return;
  }
  EXPECT_EQ(f->ranks, std::vector<int>{1});
  const double per_step = f->evidence.at("delay_per_step_ns");
  // The injected delay is a spin in a range only rank 1 runs, until a wall-clock deadline: its time is on a CPU
  // or, on a busy machine, waiting for one (measured: 22-30 ms on a CPU and 1-8 ms waiting at load 3 on 2 cores).
  // The cause is more work unless the machine took most of the spin's CPU.
  const double on_cpu = f->evidence.at("on_cpu_excess_per_step_ns"), waiting = f->evidence.at("run_queue_excess_per_step_ns");
  // On an oversubscribed machine the rank that spun is also behind the others in the scheduler afterwards, and is
  // really later than the injected delay (measured at load 13 on 2 cores: 38-47 ms late for a 30 ms spin, of which
  // 32-44 ms waiting for a CPU): the finding's cost may exceed the injection by the run-queue time it reports.
  EXPECT_GE(per_step, 0.8 * slow_ms * 1e6);
  EXPECT_LE(per_step, 1.2 * slow_ms * 1e6 + std::max(0.0, waiting)) << text_report(a);
  EXPECT_GE(on_cpu + waiting, 0.8 * slow_ms * 1e6) << text_report(a);
  EXPECT_EQ(f->evidence.at("cause_code"), on_cpu >= waiting ? 1.0 : 3.0) << text_report(a);
  if (on_cpu >= waiting) {
    EXPECT_NE(f->evidence_text.find("straggler_compute"), std::string::npos) << f->evidence_text;
  }
}

// Rank 1 computes 1 s more in steps 10, 20 and 30 only, as a checkpoint would take it: the slow steps name it, with
// their period and what they cost (the injected 3 s of CPU work, which is what the job would save without them:
// ±25 %, stretched by the CPU share rank 1 waited for); no "more work" straggler (its median step is not late). At
// load 9 on 2 cores plain steps came 3.6x the median and 240 ms longer at random: the pause is 4x that, so those
// steps are not of its kind (slow_steps_min_share_of_largest).
TEST_F(RealRuns, PeriodicPauseIsSlowStepsWithItsCost) {
  const auto dir = run_root() / "periodic-pause";
  ASSERT_EQ(trace_trainer(dir, 2, "--steps 40 --model-scale 0.02 --slow-rank 1 --slow-ms 1000 --slow-every 10"), 0);
  const Analysis a = analyze_run(dir.string());
  // A busy host may stall every rank in some other step (2.1 s once at load 9): that is a finding of its own, with
  // no rank named; this one is rank 1's.
  const Finding* f = nullptr;
  for (const auto& x : a.findings)
    if (x.kind == FindingKind::SlowSteps && x.ranks == std::vector<int>{1}) f = &x;
  ASSERT_NE(f, nullptr) << text_report(a);
  // Steps 10, 20 and 30; on a busy host rank 1 may also start the job late, by a quarter of a pause or more (step 0
  // at 6x the median, rank 1 256 ms late, once in 31 runs beside the timing loop at load 5.6): then step 0 is one
  // of them, in the same period.
  const bool late_start = f->evidence.at("first_slow_step") == 0;
  EXPECT_EQ(f->evidence.at("slow_steps"), late_start ? 4 : 3) << text_report(a);
  EXPECT_EQ(f->evidence.at("first_slow_step"), late_start ? 0 : 10) << text_report(a);
  EXPECT_EQ(f->evidence.at("period_steps"), 10) << text_report(a);
  // The pauses are CPU work on rank 1 (its scheduler counters): on a CPU, or on a busy host also waiting for one
  // (beside the timing loop at load 8: 0.89 s on a CPU, 2.11 s waiting), but as its usual steps wait, not the
  // machine's: the advice is the job's, never "the job itself needs no change".
  ASSERT_TRUE(f->evidence.contains("cause_code")) << text_report(a);
  EXPECT_EQ(f->evidence.at("cause_code"), 1.0) << text_report(a);
  EXPECT_GE(f->evidence.at("on_cpu_excess_ns") + f->evidence.at("run_queue_excess_ns"),
            0.5 * f->evidence.at("excess_ns"))
      << text_report(a);
  EXPECT_EQ(f->suggestion.find("needs no change"), std::string::npos) << f->suggestion;
  EXPECT_GE(f->cost_ns, 0.75 * 3000e6) << text_report(a);
  // The pause is CPU work: where rank 1's step thread shares its core (waiting for a CPU a share w of its steps,
  // its scheduler counters), 1 s of it takes 1 s / (1 - w) of wall time. Beside the timing loop at load 11.6 rank 1
  // waited 33 % and the pauses cost 3 842 ms, over a bound that held only for a core of its own.
  const double waited = a.lateness.step_thread_wait.size() > 1 ? a.lateness.step_thread_wait[1].share : 0.0;
  // A late start no longer than a pause adds at most that.
  EXPECT_LE(f->cost_ns, 1.25 * 3000e6 / (1 - std::min(waited, 0.9)) + (late_start ? 1000e6 : 0.0)) << text_report(a);
  // The pauses are not a straggler's. On a busy host rank 1 may really wait for a CPU in its plain steps too (3.2-3.6
  // ms a step, 10-13 % of it, in 2 of 31 runs at load 4-6, the latest rank in 30 of 40 steps): a straggler of that
  // cause may be named, costing its median lateness per step, not the pauses again.
  if (const Finding* s = find_finding(a, FindingKind::Straggler)) {
    EXPECT_NE(s->evidence.at("cause_code"), 1.0) << text_report(a);
    EXPECT_LE(s->cost_ns, 0.1 * f->cost_ns) << text_report(a);
    EXPECT_LE(s->evidence.at("lateness_per_step_ns"), 0.05 * 1000e6) << text_report(a);
  }
}

TEST_F(RealRuns, NoStragglerWithoutInjectionTenRuns) {
  // Nothing injected: every rank does the same work. This host is shared and its virtual CPUs differ in speed
  // (a fixed loop ran up to 35 % slower on one), so a rank can really be late for a whole short run; what must
  // never happen is a "more work" straggler, which only a range one rank alone runs can prove. A straggler named
  // at all must pass the sign test (chance <= 1 % per run if the ranks were exchangeable) and exceed the step
  // noise; a run whose lateness is inconsistent gets the "within noise" note instead.
  int named = 0;
  for (int i = 0; i < 10; ++i) {
    const auto dir = run_root() / fmt::format("plain-{}", i);
    ASSERT_EQ(trace_trainer(dir, 2, "--steps 8 --model-scale 0.02"), 0);
    const Analysis a = analyze_run(dir.string());
    if (const Finding* f = find_finding(a, FindingKind::Straggler)) {
      ++named;
      std::cout << "run " << i << " has a straggler:\n" << text_report(a);
      EXPECT_NE(f->evidence.at("cause_code"), 1.0) << "a 'more work' straggler in a plain run:\n" << text_report(a);
      EXPECT_LE(f->evidence.at("sign_test_p"), 0.01);
      EXPECT_GT(f->evidence.at("lateness_per_step_ns"), f->evidence.at("step_noise_ns"));
    }
  }
  std::cout << named << " of 10 plain runs named a straggler (not more work)\n";
}

// Processes spinning on one CPU for as long as the object lives (killed and reaped when it goes).
class PinnedSpinners {
 public:
  PinnedSpinners(int cpu, int count) {
    for (int i = 0; i < count; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        sched_setaffinity(0, sizeof set, &set);
        volatile unsigned long spins = 0;
        while (true) spins = spins + 1;
      }
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~PinnedSpinners() {
    for (pid_t pid : pids_) kill(pid, SIGKILL);
    for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
  }
  PinnedSpinners(const PinnedSpinners&) = delete;
  PinnedSpinners& operator=(const PinnedSpinners&) = delete;

 private:
  std::vector<pid_t> pids_;
};

// Ranks bound one to a core, and 3 processes spinning on rank 1's core (as samples/fusion_trainer/bench/
// contention_cost.sh does): the report names CPU contention, and tells no rank to balance its work. The finding
// named rank 1 in 78 of 78 such runs (1 or 3 spinners) on this project's 2-core VMs; its step thread waited 21-51 %
// of its steps where read (the finding from 15 %); alone, bound the same way, the step threads waited at most 6.4 %
// (docs/performance.md, "Straggler causes on a shared 2-core machine"). Once in 31 runs beside the timing loop
// (load 5) both step threads waited under 15 %, blocked on their fusion threads (collectives 91 % of the step), and
// nothing was named: the fusion thread's own wait counts too (72-76 % in 5 runs beside a spinner; alone 0-0.8 %).
TEST_F(RealRuns, SharedCoreIsCpuContention) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || !CPU_ISSET(0, &allowed) || !CPU_ISSET(1, &allowed))
    GTEST_SKIP() << "needs CPUs 0 and 1";
  const auto dir = run_root() / "shared-core";
  fs::create_directories(dir);
  {
    const PinnedSpinners spinners(1, 3);
    const std::string cmd = fmt::format(
        "timeout -s TERM 60 {}/collscope trace -o {} -- mpirun -np 2 --bind-to core --map-by core --mca btl "
        "self,vader {}/fusion_trainer {} > {}/job.log 2>&1",
        bin_dir(), dir.string(), bin_dir(), kShort, dir.string());
    ASSERT_EQ(shell(cmd), 0) << read_file(dir / "job.log");
  }
  const Analysis a = analyze_run(dir.string());
  const Finding* f = find_finding(a, FindingKind::CpuContention);
  ASSERT_NE(f, nullptr) << text_report(a);
  ASSERT_FALSE(f->ranks.empty());
  // Which ranks it names depends on the rest of the machine: beside the test loop at load 11 (2026-12-07) every
  // core was contended, both step threads were mostly blocked on their fusion threads (collectives 93 % of the
  // step), and rank 0 (22 %) was named while rank 1 stayed at 15 %. The recorded pair
  // (RecordedRuns.SharedCoreIsCpuContentionWithItsCost) checks that rank 1 is named when the spinners are what
  // contends.
  const auto comm = f->evidence.find("rank_1_comm_run_queue_pct");
  std::cout << "ranks named: " << fmt::format("{}", fmt::join(f->ranks, ",")) << "; rank 1's step thread waited "
            << f->evidence.at("rank_1_run_queue_pct") << " % of its steps, its communication thread "
            << (comm != f->evidence.end() ? comm->second : 0.0) << " % beyond its step thread's CPU time\n";
  if (const Finding* s = find_finding(a, FindingKind::Straggler)) {
    EXPECT_NE(s->evidence.at("cause_code"), 1.0) << text_report(a);
  }
}

TEST_F(RealRuns, LatencyBoundOnlyWithTinyFusionThreshold) {
  const auto tiny = run_root() / "tiny-threshold";
  ASSERT_EQ(trace_trainer(tiny, 2, fmt::format("{} --fusion-threshold 4096", kShort)), 0);
  const Analysis a = analyze_run(tiny.string());
  const Finding* f = find_finding(a, FindingKind::LatencyBound);
  ASSERT_NE(f, nullptr) << text_report(a);
  EXPECT_GT(f->evidence.at("suggested_fusion_threshold_bytes"), 4096);
  const auto sensible = run_root() / "sensible-threshold";
  ASSERT_EQ(trace_trainer(sensible, 2, fmt::format("{} --fusion-threshold 67108864", kShort)), 0);
  const Analysis b = analyze_run(sensible.string());
  EXPECT_EQ(find_finding(b, FindingKind::LatencyBound), nullptr) << text_report(b);
}

TEST_F(RealRuns, MismatchNamesSkippingRank) {
  const auto dir = run_root() / "mismatch";
  // Rank 1 skips its process-set allreduce at step 3; rank 3 (same set) hangs; the timeout ends the job.
  trace_trainer(dir, 4, "--steps 8 --model-scale 0.01 --mismatch-rank 1 --mismatch-step 3", "", 20);
  const Analysis a = analyze_run(dir.string());
  ASSERT_FALSE(a.findings.empty());
  const Finding& f = a.findings.front();
  EXPECT_EQ(f.kind, FindingKind::Mismatch) << text_report(a);
  EXPECT_EQ(f.ranks, std::vector<int>{1}) << text_report(a);
  ASSERT_TRUE(f.seq.has_value());
  EXPECT_EQ(*f.seq, 3);
}

TEST_F(RealRuns, DeadlockFromCallsInFlightNamesTheOddRank) {
  // mpi_probe: at iteration 3 rank 1 waits in a barrier on a dup of the world communicator that nobody else
  // calls, while ranks 0 and 2 wait in the world allreduce; SIGTERM ends the job once each rank's file shows where it
  // hangs (tests/common/hung_job.hpp). No NVTX: only the calls in flight at the kill can tell who waits where.
  if (!fs::exists(fs::path(bin_dir()) / "mpi_probe")) GTEST_SKIP() << "mpi_probe not built";
  const auto dir = run_root() / "deadlock";
  fs::create_directories(dir);
  const auto job = collscope::testing::run_until_every_rank_hangs(
      {bin_dir() + "/collscope", "trace", "-o", dir.string(), "--", "mpirun", "-np", "3", "--oversubscribe", "--mca",
       "btl", "self,vader", bin_dir() + "/mpi_probe", "--iterations", "6", "--hang-rank", "1", "--hang-iteration", "3"},
      {{"COLLSCOPE_HANG_MS", "200"}}, dir, 3, collscope::testing::at_mpi_probe_hang);
  ASSERT_FALSE(job.timed_out) << job.out << job.err;
  const Analysis a = analyze_run(dir.string());
  ASSERT_FALSE(a.findings.empty());
  const Finding& f = a.findings.front();
  EXPECT_EQ(f.kind, FindingKind::Mismatch) << text_report(a);
  EXPECT_EQ(f.ranks, std::vector<int>{1}) << text_report(a);
  EXPECT_EQ(f.comm_name, "MPI_COMM_WORLD");
  ASSERT_TRUE(f.seq.has_value());
  EXPECT_EQ(*f.seq, 12);
  EXPECT_NE(f.title.find("deadlock"), std::string::npos) << f.title;
  EXPECT_NE(f.evidence_text.find("rank(s) 1 inside barrier #0 on dup of MPI_COMM_WORLD"), std::string::npos)
      << f.evidence_text;
  EXPECT_GE(f.evidence.at("waited_ns"), 200e6);
}

TEST_F(RealRuns, CompareSameSettingsAndSlowdown) {
  const auto base = run_root() / "cmp-base", again = run_root() / "cmp-again", slow = run_root() / "cmp-slow";
  ASSERT_EQ(trace_trainer(base, 2, "--steps 20 --model-scale 0.02"), 0);
  ASSERT_EQ(trace_trainer(again, 2, "--steps 20 --model-scale 0.02"), 0);
  ASSERT_EQ(trace_trainer(slow, 2, "--steps 20 --model-scale 0.02 --slow-rank 0 --slow-ms 300"), 0);
  const std::string collscope = bin_dir() + "/collscope";
  const auto junit = run_root() / "compare.xml";
  auto run = [&](const fs::path& a, const fs::path& b, const std::string& extra) {
    // 250 %: on this shared 2-core machine two runs with the same settings differed by up to +70 % in step time at
    // load 3-7 and by +174 % at load 15 (seven builds beside the test: 16 -> 45 ms, 26 -> 71 ms); the injected
    // slowdown is +300 ms of compute on a 16-100 ms step (+300 % at the very least, +580 % measured at load 15).
    fs::remove(run_root() / "cmp.log");
    return shell(fmt::format("{} compare {} {} --max-regression 250% {} >> {}/cmp.log 2>&1", collscope, a.string(),
                             b.string(), extra, run_root().string()));
  };
  // Same settings: the step time must not regress. A finding can come and go between two runs on this shared
  // host (a descheduled rank), so new findings are listed but not gated here; report_test gates them. Two runs'
  // step times are the machine's as much as the job's: at load 15 the pair was beyond +100 % in 2 of 12 tries, so
  // a pair that regresses is traced once more (both runs afresh) and the test fails only if that pair does too.
  // No pair of the 12 reached +180 %, which bounds one pair's rate past the 250 % gate only below 22 % (95 %), so
  // about 5 % for two in a row: the false-failure rate is not shown below 1 in 1 000 (about 100 pairs without one
  // past the gate would show it).
  int same = run(base, again, "--allow-new-findings");
  if (same != 0) {
    std::cout << "same settings regressed (the machine's noise?), traced once more:\n" << read_file(run_root() / "cmp.log");
    fs::remove_all(base);
    fs::remove_all(again);
    ASSERT_EQ(trace_trainer(base, 2, "--steps 20 --model-scale 0.02"), 0);
    ASSERT_EQ(trace_trainer(again, 2, "--steps 20 --model-scale 0.02"), 0);
    same = run(base, again, "--allow-new-findings");
  }
  EXPECT_EQ(same, 0) << read_file(run_root() / "cmp.log");
  EXPECT_EQ(run(base, slow, "--junit " + junit.string()), 1) << read_file(run_root() / "cmp.log");
  // A real XML parser must accept the JUnit file and see the failure.
  const int rc = shell(fmt::format(
      "python3 -c \"import xml.etree.ElementTree as E,sys; r=E.parse(sys.argv[1]).getroot(); "
      "sys.exit(0 if r.tag=='testsuites' and len(r.iter('failure').__next__().attrib['message'])>0 else 1)\" {}",
      junit.string()));
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(run(base, run_root() / "does-not-exist", ""), 2);
}

// Collscope installed under a path with a space (ld.so splits LD_PRELOAD at spaces and colons, with no
// escape): the job is still traced, with no ld.so error, and the private link to the preload is gone afterwards.
TEST_F(RealRuns, TracesFromAnInstallPathWithASpace) {
  const fs::path install = run_root() / "my tools: collscope";
  fs::remove_all(install);
  fs::create_directories(install / "bin");
  fs::create_directories(install / "lib");
  const char* preload = std::getenv("COLLSCOPE_PRELOAD");
  fs::copy_file(fs::path(bin_dir()) / "collscope", install / "bin" / "collscope");
  fs::copy_file(preload ? std::string(preload) : std::string(COLLSCOPE_TEST_PRELOAD), install / "lib" / "libcollscope-preload.so");
  const fs::path run = run_root() / "space-run";
  fs::remove_all(run);
  const fs::path tmp = run_root() / "tmp";
  fs::create_directories(tmp);
  // COLLSCOPE_PRELOAD unset: collscope finds the preload next to itself, as an installed copy does.
  const std::string cmd = fmt::format(
      "env -u COLLSCOPE_PRELOAD TMPDIR='{}' timeout 60 '{}' trace -o '{}' -- mpirun -np 2 --oversubscribe --mca btl self,vader "
      "{}/fusion_trainer {} > '{}.log' 2>&1",
      tmp.string(), (install / "bin" / "collscope").string(), run.string(), bin_dir(), kShort, run.string());
  ASSERT_EQ(shell(cmd), 0);
  std::ifstream log(run.string() + ".log");
  const std::string output((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_EQ(output.find("cannot be preloaded"), std::string::npos) << output;
  const Analysis a = analyze_run(run.string());
  EXPECT_EQ(a.run.ranks.size(), 2u);
  EXPECT_EQ(a.steps.steps.size(), 12u) << text_report(a);
  EXPECT_TRUE(fs::is_empty(tmp)) << "the preload's private link was left behind";
}

TEST_F(RealRuns, PerThreadCommunicatorsUnderThreadMultipleAreNoMismatch) {
  // 3 ranks x 3 threads (MPI_THREAD_MULTIPLE), each thread on its own dup of the world making 300 Iallreduce: a
  // correct program whose calls interleave across communicators differently on every rank. Not a mismatch, and
  // the dups are the same ranks, so no process set is slower than another.
  if (!fs::exists(fs::path(bin_dir()) / "mpi_probe")) GTEST_SKIP() << "mpi_probe not built";
  const auto dir = run_root() / "thread-multiple";
  fs::create_directories(dir);
  ASSERT_EQ(shell(fmt::format("timeout -s TERM 60 {0}/collscope trace -o {1} -- mpirun -np 3 --oversubscribe --mca btl "
                              "self,vader {0}/mpi_probe --polling-threads 3 --iterations 300 > {1}/job.log 2>&1",
                              bin_dir(), dir.string())),
            0);
  const Analysis a = analyze_run(dir.string());
  EXPECT_GE(a.run.collective_count(), 3u * 3 * 300) << text_report(a);  // every Iallreduce of every thread
  EXPECT_EQ(find_finding(a, FindingKind::Mismatch), nullptr) << text_report(a);
  EXPECT_EQ(find_finding(a, FindingKind::ProcessSetImbalance), nullptr) << text_report(a);
  EXPECT_TRUE(a.notes.empty()) << text_report(a);
}
