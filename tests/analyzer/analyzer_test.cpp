// Analyzer on synthetic runs written with the real TraceWriter: the injected ground truth must come back.
#include <collscope/analyzer/analysis.hpp>
#include <collscope/analyzer/compare.hpp>
#include <collscope/analyzer/report.hpp>
#include <collscope/testing/lockstep_run.hpp>
#include <collscope/testing/synthetic_run.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/trace_reader.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "finding_lookup.hpp"

namespace fs = std::filesystem;
using namespace collscope::analyzer;
using namespace collscope::testing;

namespace {

using collscope::test::find_finding;

fs::path temp_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("collscope-analyzer-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST(Analyzer, LoadsEveryRankAndMatchesEveryInstance) {
  auto dir = temp_dir("plain");
  SyntheticRunSpec spec;
  spec.ranks = 4;
  spec.steps = 12;
  spec.process_sets = true;
  const auto rows = write_synthetic_run(dir.string(), spec);
  EXPECT_EQ(rows, 4 * 12 * 4 + 4 * 12);
  const Analysis a = analyze_run(dir.string());
  ASSERT_EQ(a.run.ranks.size(), 4u);
  EXPECT_EQ(a.run.collective_count(), static_cast<std::size_t>(rows));
  EXPECT_EQ(a.run.communicators.size(), 3u);
  EXPECT_EQ(a.matched.instances.size(), 12u * 4 + 2 * 12);
  EXPECT_TRUE(a.run.problems.empty());
  EXPECT_TRUE(a.matched.mismatches.empty());
  EXPECT_EQ(a.steps.source, "nvtx");
  EXPECT_EQ(a.steps.steps.size(), 12u);
  // compute 10 ms + 4 × (20 us + 4 MiB × 1.5 / 10 GB/s) + process set ≈ 12.7 ms
  EXPECT_NEAR(a.steps.mean_step_ns / 1e6, 12.7, 0.4);
  EXPECT_EQ(a.steps.throughput_samples_per_s > 0, true);  // --batch-size 32 from the command line
  EXPECT_EQ(find_finding(a, FindingKind::Straggler), nullptr);
  EXPECT_EQ(find_finding(a, FindingKind::LatencyBound), nullptr);
  // busbw of the 4 MiB allreduce: the simulated link (10 GB/s) minus latency
  const CollectiveInstance inst = a.matched.instance(a.run, a.clocks, 0, 5);
  EXPECT_EQ(inst.ranks.size(), 4u);
  EXPECT_EQ(inst.bytes, 4 << 20);
  EXPECT_NEAR(inst.busbw_gbps, 10 * (1 - 20e3 / (20e3 + (4 << 20) * 1.5 / 10)), 0.3);
}

TEST(Analyzer, StepsInferredFromTheRepeatingCallsWithoutNvtx) {
  auto dir = temp_dir("inferred");
  SyntheticRunSpec spec;
  spec.ranks = 4;
  spec.steps = 20;
  spec.nvtx_steps = false;
  write_synthetic_run(dir.string(), spec);
  const Analysis a = analyze_run(dir.string());
  EXPECT_EQ(a.steps.source, "inferred");
  EXPECT_EQ(a.steps.method, collscope::run::StepMethod::CallPattern);
  EXPECT_EQ(a.steps.steps.size(), 20u);
  EXPECT_EQ(a.steps.period_calls, 4);
  EXPECT_GE(a.steps.confidence, 0.8) << a.steps.basis;
  // From the first allreduce of a step to the next step's: the same ~12.7 ms period as the NVTX steps.
  EXPECT_NEAR(a.steps.median_step_ns / 1e6, 12.7, 0.4);
}

TEST(Analyzer, NoStepsOnLoopsThatOnlyCommunicate) {
  // The same allreduces back to back, nothing between them (what a benchmark does): repetitions, not steps.
  auto dir = temp_dir("back-to-back");
  SyntheticRunSpec spec;
  spec.ranks = 2;
  spec.steps = 50;
  spec.nvtx_steps = false;
  spec.compute_ms = 0;
  write_synthetic_run(dir.string(), spec);
  const Analysis a = analyze_run(dir.string());
  EXPECT_EQ(a.steps.source, "none");
  EXPECT_TRUE(a.steps.steps.empty());
  EXPECT_NE(a.steps.basis.find("back to back"), std::string::npos) << a.steps.basis;
  // A known benchmark is recognised by its name, whatever its loop looks like.
  auto named = temp_dir("osu");
  spec.compute_ms = 10;
  spec.program = "/opt/osu/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce";
  write_synthetic_run(named.string(), spec);
  const Analysis b = analyze_run(named.string());
  EXPECT_TRUE(b.steps.steps.empty());
  EXPECT_NE(b.steps.basis.find("osu_allreduce is a benchmark"), std::string::npos) << b.steps.basis;
}

TEST(Analyzer, OneLongStallIsNotAStraggler) {
  // Rank 1 stalls 60 ms once in 20 steps of about 12 ms: more than 5 % of the run in total, as a busy host's
  // descheduled process can be, but a straggler is late step after step.
  auto dir = temp_dir("stall");
  SyntheticRunSpec spec;
  spec.ranks = 2;
  spec.steps = 20;
  spec.slow_rank = 1;
  spec.slow_ms = 60;
  spec.slow_only_step = 7;
  write_synthetic_run(dir.string(), spec);
  const Analysis a = analyze_run(dir.string());
  EXPECT_GT(a.lateness.total_lateness_ns.at(1), 50e6);  // the stall is there, held up the other rank
  EXPECT_EQ(find_finding(a, FindingKind::Straggler), nullptr) << text_report(a);
  // It is one slow step, rank 1's, and costs what it took.
  const Finding* g = find_finding(a, FindingKind::SlowSteps);
  ASSERT_NE(g, nullptr) << text_report(a);
  EXPECT_EQ(g->ranks, std::vector<int>{1});
  EXPECT_EQ(g->evidence.at("slow_steps"), 1);
  EXPECT_EQ(g->evidence.at("first_slow_step"), 7);
  EXPECT_EQ(g->evidence.count("period_steps"), 0u);
  EXPECT_NEAR(g->cost_ns, 60e6, 0.1 * 60e6);
  // The same delay spread over every step is one.
  auto spread = temp_dir("spread");
  spec.slow_ms = 3;
  spec.slow_only_step = -1;
  write_synthetic_run(spread.string(), spec);
  const Analysis b = analyze_run(spread.string());
  const Finding* f = find_finding(b, FindingKind::Straggler);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ranks, std::vector<int>{1});
  EXPECT_EQ(find_finding(b, FindingKind::SlowSteps), nullptr) << text_report(b);  // no step stands out
}

// A rank that pauses every 10 steps (a checkpoint) while the others wait: the slow steps, their period, the rank
// and the time they cost (the injected 150 ms, 3 times); the straggler detector, which reads the median step, stays
// silent. (The one-off 60 ms stall above is one slow step; spread over every step, none.)
TEST(Analyzer, PeriodicPauseOfOneRankIsSlowStepsNotAStraggler) {
  auto dir = temp_dir("checkpoint");
  SyntheticRunSpec spec;
  spec.ranks = 4;
  spec.steps = 40;
  spec.slow_rank = 2;
  spec.slow_ms = 150;
  spec.slow_every_steps = 10;
  write_synthetic_run(dir.string(), spec);
  const Analysis a = analyze_run(dir.string());
  EXPECT_EQ(find_finding(a, FindingKind::Straggler), nullptr) << text_report(a);
  const Finding* f = find_finding(a, FindingKind::SlowSteps);
  ASSERT_NE(f, nullptr) << text_report(a);
  EXPECT_EQ(f->ranks, std::vector<int>{2});
  EXPECT_EQ(f->evidence.at("slow_steps"), 3);  // steps 10, 20, 30
  EXPECT_EQ(f->evidence.at("first_slow_step"), 10);
  EXPECT_EQ(f->evidence.at("period_steps"), 10);
  EXPECT_NEAR(f->cost_ns, 3 * 150e6, 0.1 * 3 * 150e6);
  EXPECT_NE(f->title.find("every 10 steps"), std::string::npos) << f->title;
  EXPECT_NE(f->suggestion.find("Rank 2"), std::string::npos) << f->suggestion;
}

TEST(Analyzer, StragglerNamedWithInjectedDelay) {
  auto dir = temp_dir("slow");
  SyntheticRunSpec spec;
  spec.ranks = 4;
  spec.steps = 20;
  spec.slow_rank = 2;
  spec.slow_ms = 5;
  write_synthetic_run(dir.string(), spec);
  const Analysis a = analyze_run(dir.string());
  const Finding* f = find_finding(a, FindingKind::Straggler);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ranks, std::vector<int>{2});
  // attributed delay within 80–120 % of the injected 5 ms per step
  EXPECT_GT(f->evidence.at("delay_per_step_ns"), 0.8 * 5e6);
  EXPECT_LT(f->evidence.at("delay_per_step_ns"), 1.2 * 5e6);
  EXPECT_NEAR(f->cost_ns, 20 * 5e6, 0.2 * 20 * 5e6);
  EXPECT_NEAR(f->evidence.at("step_time_without_straggler_ns") / 1e6, 12.7, 0.6);
}

// Where perf events count instructions retired (schema 1.8), they tell a straggler's two on-CPU causes apart: 5 ms
// more compute per step on rank 2 with as many more instructions is more work (balance the data); with the same
// instructions, its CPU is slower (placement, not balancing). Without them, neither can be told: "more CPU time
// for the same phases" with both remedies.
TEST(Analyzer, InstructionsRetiredTellMoreWorkFromASlowerCpu) {
  SyntheticRunSpec spec;
  spec.ranks = 4;
  spec.steps = 20;
  spec.slow_rank = 2;
  spec.slow_ms = 5;
  const auto cause_of = [&](int cpu_samples, bool same_instructions, const char* name) {
    spec.cpu_samples = cpu_samples;
    spec.slow_rank_same_instructions = same_instructions;
    auto dir = temp_dir(name);
    write_synthetic_run(dir.string(), spec);
    const Analysis a = analyze_run(dir.string());
    const Finding* f = find_finding(a, FindingKind::Straggler);
    EXPECT_NE(f, nullptr) << text_report(a);
    return f ? std::make_pair(*f, a.lateness.causes.at(2)) : std::make_pair(Finding{}, collscope::run::LatenessCauses{});
  };
  const auto [more_work, more_work_causes] = cause_of(2, false, "more-instructions");
  EXPECT_EQ(more_work.evidence.at("cause_code"), 1.0) << more_work.evidence_text;
  ASSERT_TRUE(more_work_causes.extra_instructions);
  EXPECT_NEAR(*more_work_causes.extra_instructions, 0.5, 0.05);  // 15 ms of compute for the others' 10
  EXPECT_NE(more_work.suggestion.find("balance the data"), std::string::npos) << more_work.suggestion;
  EXPECT_NE(more_work.evidence_text.find("instructions against the median other rank"), std::string::npos);

  const auto [slower, slower_causes] = cause_of(2, true, "same-instructions");
  EXPECT_EQ(slower.evidence.at("cause_code"), 5.0) << slower.evidence_text;
  ASSERT_TRUE(slower_causes.extra_instructions);
  EXPECT_NEAR(*slower_causes.extra_instructions, 0.0, 0.03);
  EXPECT_NE(slower.suggestion.find("its CPU is slower or shared"), std::string::npos) << slower.suggestion;
  EXPECT_EQ(slower.suggestion.find("balance the data"), std::string::npos) << slower.suggestion;
  EXPECT_NEAR(slower.evidence.at("delay_per_step_ns"), 5e6, 0.2 * 5e6);

  const auto [unknown, unknown_causes] = cause_of(1, true, "no-instructions");
  EXPECT_EQ(unknown.evidence.at("cause_code"), 2.0) << unknown.evidence_text;
  EXPECT_FALSE(unknown_causes.extra_instructions);
  EXPECT_FALSE(unknown.evidence.contains("extra_instructions_pct"));
}

TEST(Analyzer, TracerFlushesAreNotLateness) {
  // The same 5 ms per step on rank 2, but spent by the tracer writing its full buffers out (tracer_flushes): the
  // job did not make it late, so no straggler, and the flush time is what was taken off.
  auto dir = temp_dir("flushes");
  SyntheticRunSpec spec;
  spec.ranks = 4;
  spec.steps = 20;
  spec.slow_rank = 2;
  spec.slow_ms = 5;
  spec.slow_is_tracer_flush = true;
  write_synthetic_run(dir.string(), spec);
  const Analysis a = analyze_run(dir.string());
  EXPECT_EQ(find_finding(a, FindingKind::Straggler), nullptr) << text_report(a);
  EXPECT_NEAR(a.lateness.tracer_flush_ns.at(2), 20 * 5e6, 0.05 * 20 * 5e6);
  EXPECT_LT(a.lateness.median_lateness_ns.at(2), 0.5e6);
}

TEST(Analyzer, ClockShiftRecoveredWithin20us) {
  auto plain = temp_dir("clock-plain");
  auto shifted = temp_dir("clock-shifted");
  SyntheticRunSpec spec;
  spec.ranks = 4;
  spec.steps = 10;
  write_synthetic_run(plain.string(), spec);
  spec.ranks_per_host = 1;  // one clock per host: shifted clocks are different hosts
  spec.clock_shift_ns = {0, 3'000'000'000LL, -750'000'123LL, 12'345'678LL};  // the anchors do not reveal it
  write_synthetic_run(shifted.string(), spec);
  const Analysis a = analyze_run(plain.string());
  const Analysis b = analyze_run(shifted.string());
  for (int r = 1; r < 4; ++r) {
    const double recovered = double(a.clocks.offset_ns[r] - b.clocks.offset_ns[r]);
    EXPECT_NEAR(recovered, double(spec.clock_shift_ns[r]), 20e3) << "rank " << r;
  }
  EXPECT_LT(b.clocks.residual_p50_ns, 2e3);
  // Aligned, the analysis is the same: same waits within microseconds.
  EXPECT_NEAR(a.steps.mean_wait_ns, b.steps.mean_wait_ns, 20e3);
}

TEST(Analyzer, LatencyBoundWithTinyFusionThreshold) {
  auto small = temp_dir("latency-small");
  SyntheticRunSpec spec;
  spec.ranks = 2;
  spec.steps = 20;
  spec.allreduces_per_step = 64;  // a few KiB each: what a 4 KiB threshold produces
  spec.allreduce_bytes = 4096;
  spec.compute_ms = 2;
  spec.latency_us = 30;
  spec.fusion_threshold = 4096;
  write_synthetic_run(small.string(), spec);
  const Analysis a = analyze_run(small.string());
  const Finding* f = find_finding(a, FindingKind::LatencyBound);
  ASSERT_NE(f, nullptr);
  EXPECT_GT(f->evidence.at("suggested_fusion_threshold_bytes"), 4096);
  EXPECT_NE(f->suggestion.find("HOROVOD_FUSION_THRESHOLD="), std::string::npos);

  auto fused = temp_dir("latency-fused");
  spec.allreduces_per_step = 1;  // the same bytes fused into one collective per step
  spec.allreduce_bytes = 64 * 4096;
  spec.fusion_threshold = 64 << 20;
  write_synthetic_run(fused.string(), spec);
  EXPECT_EQ(find_finding(analyze_run(fused.string()), FindingKind::LatencyBound), nullptr);
}

TEST(Analyzer, LatencyBoundInAPlainMpiProgramNamesNoFrameworkAndOnlyWhenItMatters) {
  // The same 64 small allreduces per step in a program with no Horovod or DDP knobs: the advice is the program's
  // own (fewer, larger or non-blocking collectives), never a framework's knob; with 200 ms of compute per step
  // their 2 ms are 1 % of the step, below the 2 % that makes a finding.
  auto small = temp_dir("latency-plain");
  SyntheticRunSpec spec;
  spec.ranks = 2;
  spec.steps = 20;
  spec.allreduces_per_step = 64;
  spec.allreduce_bytes = 4096;
  spec.compute_ms = 2;
  spec.latency_us = 30;
  spec.horovod_env = false;
  spec.program = "lattice_solver";
  write_synthetic_run(small.string(), spec);
  const Analysis a = analyze_run(small.string());
  const Finding* f = find_finding(a, FindingKind::LatencyBound);
  ASSERT_NE(f, nullptr) << text_report(a);
  EXPECT_NE(f->suggestion.find("MPI derived datatype"), std::string::npos) << f->suggestion;
  for (const char* knob : {"HOROVOD_", "bucket_cap_mb", "DDP"})
    EXPECT_EQ(f->suggestion.find(knob), std::string::npos) << f->suggestion;
  EXPECT_NE(f->title.find("64 small collectives per step"), std::string::npos) << f->title;

  auto long_steps = temp_dir("latency-plain-long");
  spec.compute_ms = 200;
  write_synthetic_run(long_steps.string(), spec);
  const Analysis b = analyze_run(long_steps.string());
  EXPECT_EQ(find_finding(b, FindingKind::LatencyBound), nullptr) << text_report(b);
}

// busbw of a 4 MiB allreduce on `ranks` ranks with the synthetic transfer model (latency + bytes×2(n-1)/n / link).
double synthetic_busbw(int ranks, double link_gbps, double bytes = 4 << 20, double latency_us = 20) {
  const double factor = 2.0 * (ranks - 1) / ranks;
  return bytes / (latency_us * 1e3 + bytes * factor / link_gbps) * factor;
}

TEST(Analyzer, LowBandwidthWhenTheLinkDegradesMidRun) {
  // 4 ranks, 4 MiB allreduces at 10 GB/s; from step 10 of 40 the link falls to 2 GB/s.
  SyntheticRunSpec spec;
  spec.steps = 40;
  spec.degraded_from_step = 10;
  spec.degraded_link_gbps = 2;
  auto dir = temp_dir("low-bandwidth");
  write_synthetic_run(dir.string(), spec);
  const Analysis a = analyze_run(dir.string());
  const Finding* f = find_finding(a, FindingKind::LowBandwidth);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->comm_name, "MPI_COMM_WORLD");
  EXPECT_EQ(f->evidence.at("instances"), 160);
  EXPECT_NEAR(f->evidence.at("median_busbw_gbps"), synthetic_busbw(4, 2), 0.05);  // 1.98
  EXPECT_NEAR(f->evidence.at("best_busbw_gbps"), synthetic_busbw(4, 10), 0.2);    // 9.69
  EXPECT_NE(f->title.find("best seen"), std::string::npos);
  // The cost: the 120 degraded allreduces' time above the best bandwidth, about (1 - 2/9.7) of 3.17 ms each.
  const double slow_ns = 4e3 * 1e3 / 2 * 1.5 * (1 << 20) / 1e6 + 20e3;
  EXPECT_NEAR(f->cost_ns, 120 * slow_ns * (1 - synthetic_busbw(4, 2) / synthetic_busbw(4, 10)), 0.1 * f->cost_ns);

  // The same run at full speed has nothing to report about bandwidth.
  spec.degraded_from_step = -1;
  auto healthy = temp_dir("full-bandwidth");
  write_synthetic_run(healthy.string(), spec);
  EXPECT_EQ(find_finding(analyze_run(healthy.string()), FindingKind::LowBandwidth), nullptr);
}

TEST(Analyzer, LowBandwidthAgainstTheLinkTheUserNames) {
  // Every allreduce runs at 4 GB/s: no spread to compare, but the user says the link does 10.
  SyntheticRunSpec spec;
  spec.steps = 20;
  spec.link_gbps = 4;
  auto dir = temp_dir("below-link");
  write_synthetic_run(dir.string(), spec);
  EXPECT_EQ(find_finding(analyze_run(dir.string()), FindingKind::LowBandwidth), nullptr);
  AnalysisOptions options;
  options.link_gbps = 10;
  const Analysis a = analyze_run(dir.string(), options);
  const Finding* f = find_finding(a, FindingKind::LowBandwidth);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("link"), std::string::npos);
  EXPECT_NEAR(f->evidence.at("median_busbw_gbps"), synthetic_busbw(4, 4), 0.1);
  EXPECT_EQ(f->evidence.at("link_gbps"), 10);
  // At the link's own speed the named link is reached: no finding.
  options.link_gbps = 4.5;
  EXPECT_EQ(find_finding(analyze_run(dir.string(), options), FindingKind::LowBandwidth), nullptr);
}

TEST(Analyzer, CycleTimeStallAndUnderfilledFusion) {
  // Horovod's cycle: every rank idles 5 ms (the cycle time) before each of 4 fused allreduces of a step, and the
  // 4 MiB they carry are 6 % of the 64 MiB threshold: a stall; a shorter cycle is the fix.
  SyntheticRunSpec spec;
  spec.steps = 20;
  spec.cycle_time_ms = 5;
  spec.idle_before_allreduce_ms = 5;
  auto dir = temp_dir("cycle-stall");
  write_synthetic_run(dir.string(), spec);
  const Analysis a = analyze_run(dir.string());
  const Finding* f = find_finding(a, FindingKind::CycleTimeStall);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Critical);  // 15 of a ~33 ms step
  EXPECT_EQ(f->evidence.at("gaps_matching_cycle"), 3 * 20 * 4);  // 3 gaps a step inside it, on each of 4 ranks
  EXPECT_NEAR(f->evidence.at("mean_fill_pct"), 6.25, 0.01);
  EXPECT_EQ(f->evidence.at("suggested_cycle_time_ms"), 1.0);
  EXPECT_NE(f->suggestion.find("HOROVOD_CYCLE_TIME=1.0"), std::string::npos);
  EXPECT_EQ(find_finding(a, FindingKind::UnderfilledFusion), nullptr);

  // No cycle wait, 1 MiB in a 64 MiB buffer: under-filled, not a stall.
  spec.idle_before_allreduce_ms = 0;
  spec.cycle_time_ms = 1;
  spec.allreduce_bytes = 1 << 20;
  auto underfilled = temp_dir("underfilled");
  write_synthetic_run(underfilled.string(), spec);
  const Analysis b = analyze_run(underfilled.string());
  EXPECT_EQ(find_finding(b, FindingKind::CycleTimeStall), nullptr);
  const Finding* u = find_finding(b, FindingKind::UnderfilledFusion);
  ASSERT_NE(u, nullptr);
  EXPECT_NEAR(u->evidence.at("mean_fill_pct"), 100.0 / 64, 0.01);
  EXPECT_EQ(u->evidence.at("fused_collectives"), 20 * 4);

  // Buffers filled to a quarter of the threshold and no wait: neither.
  spec.allreduce_bytes = 16 << 20;
  auto filled = temp_dir("filled");
  write_synthetic_run(filled.string(), spec);
  const Analysis c = analyze_run(filled.string());
  EXPECT_EQ(find_finding(c, FindingKind::CycleTimeStall), nullptr);
  EXPECT_EQ(find_finding(c, FindingKind::UnderfilledFusion), nullptr);
}

TEST(Analyzer, ExposedCommunicationCountsComputeOnOtherThreads) {
  // 2 ms of compute and 4 allreduces of 4 MiB (~0.65 ms each) a step: communication is most of the step.
  SyntheticRunSpec spec;
  spec.steps = 20;
  spec.compute_ms = 2;
  auto exposed_share = [&](int compute_thread_ranges, const std::string& name) {
    spec.compute_thread_ranges = compute_thread_ranges;
    auto dir = temp_dir(name);
    write_synthetic_run(dir.string(), spec);
    const Analysis a = analyze_run(dir.string());
    return std::pair(a.steps.mean_exposed_ns / a.steps.mean_step_ns, find_finding(a, FindingKind::ExposedCommunication) != nullptr);
  };
  // No compute recorded: all of it counts as exposed in the step table, but no finding claims it is not
  // overlapped: nothing recorded says whether compute hid it (no overlap claims without compute data).
  const auto [none, none_found] = exposed_share(0, "exposed-none");
  EXPECT_GT(none, 0.5);
  EXPECT_FALSE(none_found);
  // Backward on another thread, ending before the allreduces: still exposed, the same share.
  const auto [after, after_found] = exposed_share(1, "exposed-after");
  EXPECT_NEAR(after, none, 0.01);
  EXPECT_TRUE(after_found);
  // Backward still running while the allreduces go (Horovod's overlap): hidden, no finding.
  const auto [overlapped, overlapped_found] = exposed_share(2, "exposed-overlapped");
  EXPECT_LT(overlapped, 0.01);
  EXPECT_FALSE(overlapped_found);
  // The same long range on the thread that makes the (blocking) allreduces hides nothing.
  const auto [same_thread, same_thread_found] = exposed_share(3, "exposed-same-thread");
  EXPECT_NEAR(same_thread, none, 0.01);
  EXPECT_TRUE(same_thread_found);
}

TEST(Analyzer, ProcessSetImbalanceNamesTheSlowSet) {
  // Two process sets {0,2} and {1,3} make the same calls; set 1 moves its data 8x slower.
  SyntheticRunSpec spec;
  spec.steps = 20;
  spec.compute_ms = 2;
  spec.process_sets = true;
  spec.slow_set_parity = 1;
  spec.slow_set_factor = 8;
  auto dir = temp_dir("set-imbalance");
  write_synthetic_run(dir.string(), spec);
  const Analysis a = analyze_run(dir.string());
  const Finding* f = find_finding(a, FindingKind::ProcessSetImbalance);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->comm_name, "process_set_1");
  EXPECT_EQ(f->ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(f->evidence.at("calls"), 20);
  // Per call: 20 us latency + 1 MiB × 1 (2 ranks) / bandwidth: 10 GB/s for set 0, 1.25 GB/s for set 1.
  const double fast = 20e3 + (1 << 20) / 10.0, slow = 20e3 + (1 << 20) / 1.25;
  EXPECT_NEAR(f->evidence.at("slow_set_time_ns") / f->evidence.at("fast_set_time_ns"), slow / fast, 0.15 * slow / fast);
  EXPECT_NEAR(f->cost_ns, 20 * (slow - fast), 0.1 * 20 * (slow - fast));

  // Balanced sets: no finding.
  spec.slow_set_parity = -1;
  auto balanced = temp_dir("set-balanced");
  write_synthetic_run(balanced.string(), spec);
  EXPECT_EQ(find_finding(analyze_run(balanced.string()), FindingKind::ProcessSetImbalance), nullptr);
}

TEST(Analyzer, MismatchNamesSkippingRankAndSeq) {
  auto dir = temp_dir("mismatch");
  SyntheticRunSpec spec;
  spec.ranks = 4;
  spec.steps = 10;
  spec.process_sets = true;
  spec.skip_rank = 3;
  spec.skip_step = 6;
  write_synthetic_run(dir.string(), spec);
  const Analysis a = analyze_run(dir.string());
  ASSERT_FALSE(a.findings.empty());
  const Finding& f = a.findings.front();  // mismatches come first
  EXPECT_EQ(f.kind, FindingKind::Mismatch);
  EXPECT_EQ(f.ranks, std::vector<int>{3});
  ASSERT_TRUE(f.seq.has_value());
  EXPECT_EQ(*f.seq, 6);
  EXPECT_EQ(f.comm_name, "process_set_1");
}

// Adds the call a rank hung in (as the tracer writes it when a job is killed) to a synthetic rank file. A killed
// rank never wrote its end anchors (the tracer writes them at exit): they go, or the call in flight, after them,
// would be out of the file's trace (run/physical_limits.hpp).
void add_call_in_flight(const fs::path& dir, int rank, const std::string& op, std::int64_t seq, std::int64_t count,
                        const std::string& root = "NULL") {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir / collscope::store::rank_file_name(rank)).c_str(), &db), SQLITE_OK);
  const auto sql = "INSERT INTO calls_in_flight(thread, comm, seq, op, count, datatype, bytes, reduce_op, root, start_ns, "
                   "seen_ns) SELECT 1, 1, " + std::to_string(seq) + ", code, " + std::to_string(count) +
                   ", (SELECT id FROM strings WHERE value = 'MPI_FLOAT'), " + std::to_string(4 * count) + ", 0, " + root +
                   ", 2000000000000, 2009000000000 FROM ops WHERE name = '" + op + "'; DELETE FROM meta WHERE key IN "
                   "('clock_monotonic_end_ns', 'clock_realtime_end_ns')";
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

TEST(Analyzer, HangWhereOneRankNeverCameNamesIt) {
  // 4 ranks made 80 world allreduces; ranks 0-2 then hung 9 s in the 81st; rank 3 is in no call.
  auto dir = temp_dir("hang-missing");
  SyntheticRunSpec spec;
  spec.steps = 20;
  write_synthetic_run(dir.string(), spec);
  for (int r : {0, 1, 2}) add_call_in_flight(dir, r, "allreduce", 80, 1 << 20);
  const Analysis a = analyze_run(dir.string());
  ASSERT_FALSE(a.findings.empty());
  const Finding& f = a.findings.front();
  EXPECT_EQ(f.kind, FindingKind::Mismatch);
  EXPECT_EQ(f.ranks, std::vector<int>{3});
  EXPECT_EQ(f.seq, 80);
  EXPECT_EQ(f.comm_name, "MPI_COMM_WORLD");
  EXPECT_EQ(f.evidence.at("ranks_waiting"), 3);
  EXPECT_DOUBLE_EQ(f.evidence.at("waited_ns"), 9e9);
  EXPECT_NE(f.title.find("rank(s) 3 never made allreduce #80 on MPI_COMM_WORLD"), std::string::npos) << f.title;
  EXPECT_NE(f.evidence_text.find("its last to return was allreduce #79 on MPI_COMM_WORLD"), std::string::npos)
      << f.evidence_text;
  // Without calls in flight the same run has no hang to report.
  auto clean = temp_dir("hang-none");
  write_synthetic_run(clean.string(), spec);
  EXPECT_EQ(find_finding(analyze_run(clean.string()), FindingKind::Mismatch), nullptr);
  // All four inside the same call when the job was killed (a long collective, not a mismatch): nothing either.
  auto together = temp_dir("hang-together");
  write_synthetic_run(together.string(), spec);
  for (int r : {0, 1, 2, 3}) add_call_in_flight(together, r, "allreduce", 80, 1 << 20);
  EXPECT_EQ(find_finding(analyze_run(together.string()), FindingKind::Mismatch), nullptr);
}

TEST(Analyzer, HangInDifferentCollectivesNamesTheMinority) {
  // At call #80 ranks 0, 1 and 3 are inside an allreduce, rank 2 inside a bcast: different calls at one position.
  auto dir = temp_dir("hang-shape");
  SyntheticRunSpec spec;
  spec.steps = 20;
  write_synthetic_run(dir.string(), spec);
  for (int r : {0, 1, 3}) add_call_in_flight(dir, r, "allreduce", 80, 1 << 20);
  add_call_in_flight(dir, 2, "bcast", 80, 256, "0");
  const Analysis a = analyze_run(dir.string());
  ASSERT_FALSE(a.findings.empty());
  const Finding& f = a.findings.front();
  EXPECT_EQ(f.kind, FindingKind::Mismatch);
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_EQ(f.seq, 80);
  EXPECT_NE(f.title.find("different collectives at call #80"), std::string::npos) << f.title;
  EXPECT_NE(f.evidence_text.find("rank(s) 2 inside bcast #80 on MPI_COMM_WORLD (256 x MPI_FLOAT, root 0)"),
            std::string::npos) << f.evidence_text;
}

TEST(Analyzer, ShapeMismatchMinorityRank) {
  auto dir = temp_dir("shape");
  SyntheticRunSpec spec;
  spec.ranks = 3;
  spec.steps = 5;
  write_synthetic_run(dir.string(), spec);
  // Rank 2 calls a different count at seq 7 of the world communicator.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir / "rank-00002.sqlite").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE collectives SET count = count + 1 WHERE seq = 7", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  const Analysis a = analyze_run(dir.string());
  ASSERT_EQ(a.matched.mismatches.size(), 1u);
  EXPECT_EQ(a.matched.mismatches[0].seq, 7);
  EXPECT_EQ(a.matched.mismatches[0].ranks, std::vector<int>{2});
}

TEST(Analyzer, BrokenRunsGiveOneLineEach) {
  auto dir = temp_dir("broken");
  SyntheticRunSpec spec;
  spec.ranks = 4;
  spec.steps = 5;
  write_synthetic_run(dir.string(), spec);
  fs::remove(dir / "rank-00001.sqlite");
  fs::copy_file(dir / "rank-00002.sqlite", dir / "rank-00002-copy.sqlite");  // duplicate world rank 2
  {
    std::ofstream f(dir / "rank-00003.sqlite", std::ios::binary | std::ios::trunc);
    f << "SQLite format 3";  // truncated
  }
  const Analysis a = analyze_run(dir.string());
  EXPECT_EQ(a.run.ranks.size(), 2u);  // ranks 0 and 2
  std::string all;
  for (const auto& p : a.run.problems) {
    EXPECT_EQ(p.find('\n'), std::string::npos);
    all += p + "\n";
  }
  EXPECT_NE(all.find("rank-00001.sqlite: missing"), std::string::npos) << all;
  EXPECT_NE(all.find("duplicate world rank 2"), std::string::npos) << all;
  EXPECT_NE(all.find("rank-00003.sqlite"), std::string::npos) << all;
  EXPECT_THROW(analyze_run((dir / "nothing-here").string()), collscope::InputError);
  auto empty = temp_dir("empty");
  EXPECT_THROW(analyze_run(empty.string()), collscope::InputError);
}

TEST(Analyzer, ReportsInEveryFormat) {
  auto dir = temp_dir("reports");
  SyntheticRunSpec spec;
  spec.ranks = 4;
  spec.steps = 10;
  spec.slow_rank = 1;
  spec.slow_ms = 4;
  write_synthetic_run(dir.string(), spec);
  const Analysis a = analyze_run(dir.string());
  const auto text = text_report(a);
  EXPECT_NE(text.find("rank 1 is a straggler"), std::string::npos) << text;
  const auto j = nlohmann::json::parse(render_report(a, ReportFormat::Json));
  EXPECT_EQ(j["schema"], "collscope.analysis/1");
  EXPECT_EQ(j["ranks"].size(), 4u);
  EXPECT_EQ(j["steps"].size(), 10u);
  EXPECT_EQ(j["findings"][0]["kind"], "straggler");
  EXPECT_EQ(j["findings"][0]["ranks"][0], 1);
  const auto md = markdown_report(a);
  EXPECT_NE(md.find("| 1 | "), std::string::npos);
  const auto html = html_report(a);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // no links but the SVG namespace
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_THROW(report_format_from_name("pdf"), collscope::InputError);
}

TEST(Compare, MannWhitneyKnownValues) {
  // b entirely above a: U = n1 n2, effect size 1, small p.
  const auto r = mann_whitney_u({1, 2, 3, 4, 5, 6, 7, 8}, {11, 12, 13, 14, 15, 16, 17, 18});
  EXPECT_DOUBLE_EQ(r.u, 64);
  EXPECT_DOUBLE_EQ(r.effect_size, 1);
  EXPECT_LT(r.p_greater, 0.001);
  const auto same = mann_whitney_u({1, 2, 3, 4}, {1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(same.u, 8);
  EXPECT_GT(same.p_greater, 0.4);
}

TEST(Compare, SameSettingsNoRegressionSlowdownRegression) {
  SyntheticRunSpec spec;
  spec.ranks = 2;
  spec.steps = 20;
  auto base = temp_dir("cmp-base"), again = temp_dir("cmp-again"), slow = temp_dir("cmp-slow");
  write_synthetic_run(base.string(), spec);
  spec.seed = 2;
  write_synthetic_run(again.string(), spec);
  spec.slow_rank = 1;
  spec.slow_ms = 2;  // +2 ms on a ~12.7 ms step: ~16 %
  write_synthetic_run(slow.string(), spec);
  const Analysis a = analyze_run(base.string()), b = analyze_run(again.string()), c = analyze_run(slow.string());
  EXPECT_FALSE(compare_analyses(a, b, 0.05).regression);
  const Comparison reg = compare_analyses(a, c, 0.05);
  EXPECT_TRUE(reg.regression);
  EXPECT_GT(reg.metrics.at(0).change, 0.1);
  const auto xml = comparison_junit(reg);
  EXPECT_NE(xml.find("<failure"), std::string::npos);
}

TEST(Analyzer, TimePerStepByRankOnALockstepRunWithKernels) {
  // The lockstep run's exact times: each step 2 ms of compute holding 4 kernels of 0.45 ms (one NCCL's, which is
  // communication, not compute), then 4 collectives; rank 2 arrives 1 ms late at the first, so the others spend
  // 1 ms + 0.2 ms in it and 0.2 ms in each other one, rank 2 0.2 ms in each. No kernel runs beside a collective.
  auto dir = temp_dir("breakdown");
  collscope::testing::LockstepSpec spec;
  spec.steps = 12;
  collscope::testing::write_lockstep_run(dir.string(), spec);
  const Analysis a = analyze_run(dir.string());
  ASSERT_EQ(a.steps.rank_breakdown.size(), 3u);
  const double step = double(collscope::testing::step_ns(spec)), kernels = 3 * 450'000.0;
  for (int r = 0; r < 3; ++r) {
    const auto& b = a.steps.rank_breakdown[r];
    const double comm = r == spec.late_rank ? 4 * 200'000.0 : 1'000'000.0 + 4 * 200'000.0;
    EXPECT_TRUE(b.compute_recorded);
    EXPECT_NEAR(b.step_ns, step, 1) << r;
    EXPECT_NEAR(b.compute_ns, kernels, 1) << r;
    EXPECT_NEAR(b.comm_ns, comm, 1) << r;
    EXPECT_NEAR(b.overlap_ns, 0, 1) << r;
    EXPECT_NEAR(b.other_ns, step - kernels - comm, 1) << r;
  }
  const std::string text = text_report(a);
  EXPECT_NE(text.find("time per step by rank"), std::string::npos) << text;
  EXPECT_NE(text.find(fmt::format("     2       {:.2f}       {:.2f}         0.80", step / 1e6, kernels / 1e6)),
            std::string::npos)
      << text;
  const auto j = json_report(a);
  EXPECT_NEAR(j["ranks"][0]["time_per_step"]["collectives_ns"].get<double>(), 1'800'000.0, 1);
  EXPECT_NEAR(j["ranks"][0]["time_per_step"]["compute_ns"].get<double>(), kernels, 1);
}

TEST(Analyzer, TimePerStepWithoutKernelsHasNoComputeColumn) {
  // A CPU job: its NVTX phases hold waits too, so no compute is claimed; other is the rest of the step.
  auto dir = temp_dir("breakdown-cpu");
  collscope::testing::LockstepSpec spec;
  spec.steps = 12;
  spec.kernels_per_step = 0;
  collscope::testing::write_lockstep_run(dir.string(), spec);
  const Analysis a = analyze_run(dir.string());
  ASSERT_EQ(a.steps.rank_breakdown.size(), 3u);
  EXPECT_FALSE(a.steps.rank_breakdown[0].compute_recorded);
  EXPECT_NEAR(a.steps.rank_breakdown[0].other_ns, double(collscope::testing::step_ns(spec)) - 1'800'000.0, 1);
  const std::string text = text_report(a);
  EXPECT_NE(text.find("  rank       step  collectives      other"), std::string::npos) << text;
  EXPECT_TRUE(json_report(a)["ranks"][0]["time_per_step"]["compute_ns"].is_null());
}
