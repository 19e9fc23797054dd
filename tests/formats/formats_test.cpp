// Ground truth for the converters: the fusion trainer writes a Horovod Timeline with a known straggler, and a traced
// run of it is exported to a Chrome trace whose events are counted against the trace's rows.
#include <collscope/analyzer/analysis.hpp>
#include <collscope/analyzer/report.hpp>
#include <collscope/formats/chrome_trace.hpp>
#include <collscope/formats/horovod_timeline.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/trace_reader.hpp>
#include <collscope/store/trace_writer.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "test_support.hpp"
#include "finding_lookup.hpp"

namespace fs = std::filesystem;
using namespace collscope;
using nlohmann::json;

namespace {

using collscope::test::find_finding;

using collscope::test::bin_dir;
using collscope::test::shell;

fs::path test_root() { return collscope::test::temp_root("collscope-formats"); }

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The COLLSCOPE_SAMPLE_REPORT line of `rank` in a job's output.
json sample_report(const fs::path& log, int rank) {
  std::istringstream lines(read_text(log));
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find("COLLSCOPE_SAMPLE_REPORT ");
    if (at == std::string::npos) continue;
    json r = json::parse(line.substr(at + 24));
    if (r.value("rank", -1) == rank) return r;
  }
  return {};
}

class FormatsOnSample : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(fs::path(bin_dir()) / "fusion_trainer") || !fs::exists(fs::path(bin_dir()) / "collscope"))
      GTEST_SKIP() << "fusion_trainer or collscope not built in " << bin_dir();
    collscope::test::set_mpi_test_env();
  }
  // Runs the trainer on `ranks` ranks with a Horovod Timeline; returns the job's exit code.
  int run_with_timeline(const fs::path& timeline, int ranks, const std::string& args) {
    return shell(fmt::format("timeout 60 mpirun -np {} {}/fusion_trainer {} --timeline {} > {}.log 2>&1", ranks,
                             bin_dir(), args, timeline.string(), timeline.string()));
  }
};

}  // namespace

TEST_F(FormatsOnSample, HorovodTimelineAloneNamesTheInjectedStraggler) {
  const auto timeline = test_root() / "slow-timeline.json";
  // 100 ms: at load 6 on 2 cores a 40 ms delay's own lag swung by 21-86 ms from step to step (6 of 8 runs), and
  // the ticks could not show it.
  const double slow_ms = 100;
  ASSERT_EQ(run_with_timeline(timeline, 3, fmt::format("--steps 12 --model-scale 0.02 --slow-rank 1 --slow-ms {}", slow_ms)), 0);
  const auto run = test_root() / "slow-imported";
  const auto counts = formats::import_horovod_timeline(timeline.string(), run.string());
  // What the trainer says it did (rank 0's report): 161 tensors, each reduced once per step, on 3 ranks.
  const json report = sample_report(timeline.string() + ".log", 0);
  ASSERT_FALSE(report.is_null());
  const std::int64_t tensors = report["tensors"], steps = report["steps"];
  EXPECT_EQ(counts.ranks, 3);
  EXPECT_EQ(counts.tensors, tensors);
  EXPECT_EQ(counts.tensor_operations, tensors * steps);
  EXPECT_EQ(counts.ticks, tensors * steps * 3);
  EXPECT_EQ(counts.steps, steps);
  EXPECT_EQ(counts.collectives, report["fusion"]["fused_allreduces"].get<std::int64_t>() +
                                    report["fusion"]["unfused_allreduces"].get<std::int64_t>());
  EXPECT_FALSE(counts.truncated);
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ(store::TraceReader((run / store::rank_file_name(r)).string()).row_count("collectives"), counts.collectives);

  const auto a = analyzer::analyze_run(run.string());
  EXPECT_EQ(a.steps.steps.size(), static_cast<std::size_t>(steps));
  const auto* f = find_finding(a, analyzer::FindingKind::Straggler);
  // On a loaded host the coordinator's negotiation can set the ticks more than the injected delay does: then the
  // import says so (one line) and no straggler is named, never a wrong figure.
  if (!counts.lateness_unknown.empty()) {
    EXPECT_EQ(f, nullptr) << analyzer::text_report(a);
    EXPECT_NE(a.lateness.basis.find("readiness ticks"), std::string::npos) << a.lateness.basis;
    EXPECT_EQ(find_finding(a, analyzer::FindingKind::ExposedCommunication), nullptr) << analyzer::text_report(a);
    GTEST_SKIP() << "ticks not usable in this run: " << counts.lateness_unknown;
  }
  ASSERT_NE(f, nullptr) << analyzer::text_report(a);
  EXPECT_EQ(f->ranks, std::vector<int>{1});
  // The timeline sees a rank only when it reports gradients ready: the others' backward pass hides part of the
  // delay, so the figure is a lower bound of what the tracer measures (about the injected delay).
  const double per_step = f->evidence.at("delay_per_step_ns");
  EXPECT_GE(per_step, 0.5 * slow_ms * 1e6) << analyzer::text_report(a);
  EXPECT_LE(per_step, 1.2 * slow_ms * 1e6) << analyzer::text_report(a);
  // The timeline holds no compute: nothing can be said about overlap.
  EXPECT_EQ(find_finding(a, analyzer::FindingKind::ExposedCommunication), nullptr) << analyzer::text_report(a);
}

TEST_F(FormatsOnSample, HorovodTimelineOfAPlainRunHasNoStragglerOfNote) {
  // Nothing injected: every rank does the same work. But this host is shared and its virtual CPUs differ in speed
  // (a fixed loop ran up to 35 % slower on one), so one rank can really be late for a whole short run, in both
  // runs here (rank 0 also writes the timeline on its background thread); "at most one of two runs" assumed equal
  // CPUs. What must hold whatever the machine: a straggler named from a timeline is consistently late (the sign
  // test: the latest rank in enough of the 12 steps that ranks equally likely to be latest would be so with chance
  // <= 1 %) and by more than the steps' own noise, and never "more work", which only a range one rank alone runs
  // can show (a timeline holds none).
  for (int i = 0; i < 2; ++i) {
    const auto timeline = test_root() / fmt::format("plain-timeline-{}.json", i);
    ASSERT_EQ(run_with_timeline(timeline, 3, "--steps 12 --model-scale 0.02"), 0);
    const auto run = test_root() / fmt::format("plain-imported-{}", i);
    formats::import_horovod_timeline(timeline.string(), run.string());
    const auto a = analyzer::analyze_run(run.string());
    if (const auto* f = find_finding(a, analyzer::FindingKind::Straggler)) {
      std::cout << "run " << i << " names a straggler:\n" << analyzer::text_report(a);
      EXPECT_NE(f->evidence.at("cause_code"), 1.0) << analyzer::text_report(a);
      EXPECT_LE(f->evidence.at("sign_test_p"), 0.01) << analyzer::text_report(a);
      EXPECT_GT(f->evidence.at("lateness_per_step_ns"), f->evidence.at("step_noise_ns")) << analyzer::text_report(a);
    }
  }
}

TEST_F(FormatsOnSample, TruncatedTimelineKeepsItsCompleteEvents) {
  const auto timeline = test_root() / "full-timeline.json";
  ASSERT_EQ(run_with_timeline(timeline, 2, "--steps 6 --model-scale 0.02"), 0);
  const auto full = formats::import_horovod_timeline(timeline.string(), (test_root() / "full-imported").string());
  // A job killed while rank 0 wrote: the file stops inside an event, without the closing bracket.
  std::string text = read_text(timeline);
  const auto cut = text.find("\"args\": {\"dtype\"", text.size() / 2);
  ASSERT_NE(cut, std::string::npos);
  const auto truncated = test_root() / "truncated-timeline.json";
  std::ofstream(truncated, std::ios::binary) << text.substr(0, cut + 12);
  const auto part = formats::import_horovod_timeline(truncated.string(), (test_root() / "truncated-imported").string());
  EXPECT_TRUE(part.truncated);
  EXPECT_GT(part.tensor_operations, 0);
  EXPECT_LT(part.tensor_operations, full.tensor_operations);
  EXPECT_GT(part.collectives, 0);
  EXPECT_NO_THROW(analyzer::analyze_run((test_root() / "truncated-imported").string()));
}

TEST(HorovodTimelineImport, BadFilesGiveOneLineNamingTheFile) {
  const auto dir = test_root() / "bad";
  fs::create_directories(dir);
  const std::map<std::string, std::string> files = {
      {"empty.json", ""},
      {"not-json.json", "this is not json"},
      {"object.json", "{\"a\": 1}"},
      {"no-operations.json", "[{\"ph\": \"i\", \"name\": \"CYCLE_START\", \"ts\": 5, \"s\": \"g\"}]"},
      {"bad-ts.json", "[{\"ph\": \"B\", \"name\": \"ALLREDUCE\", \"ts\": \"soon\", \"pid\": 1}]"},
  };
  for (const auto& [name, content] : files) {
    const auto path = dir / name;
    std::ofstream(path, std::ios::binary) << content;
    try {
      formats::import_horovod_timeline(path.string(), (dir / (name + ".run")).string());
      ADD_FAILURE() << name << " was accepted";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path.string()), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  EXPECT_THROW(formats::import_horovod_timeline((dir / "missing.json").string(), (dir / "m.run").string()), InputError);
}

TEST_F(FormatsOnSample, ChromeTraceHoldsEveryRowAndLinksEveryMatchedCollective) {
  const auto run = test_root() / "traced";
  ASSERT_EQ(shell(fmt::format("timeout 60 {0}/collscope trace -o {1} -- mpirun -np 3 {0}/fusion_trainer --steps 4 "
                              "--model-scale 0.02 > {1}.log 2>&1",
                              bin_dir(), run.string())),
            0);
  const auto out = test_root() / "traced.json";
  ASSERT_EQ(shell(fmt::format("{}/collscope export {} -o {} 2> {}.err", bin_dir(), run.string(), out.string(), out.string())), 0);
  const json trace = json::parse(read_text(out));  // throws (fails the test) if not valid JSON
  ASSERT_TRUE(trace.contains("traceEvents"));

  std::int64_t rows = 0, nvtx_rows = 0;
  for (const auto& p : store::rank_files(run.string())) {
    store::TraceReader r(p);
    rows += r.row_count("collectives");
    nvtx_rows += r.row_count("nvtx_ranges");
  }
  std::int64_t collectives = 0, nvtx = 0, processes = 0, flow_starts = 0, flow_ends = 0;
  double first_collective_us = 1e300, last_collective_us = 0;  // run time of the first and last collective's start
  std::set<std::tuple<int, std::int64_t, std::string>> slice_starts;  // pid, tid, ts of each collective slice
  std::map<std::int64_t, int> chain_length;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"], cat = e.value("cat", "");
    if (ph == "M" && e["name"] == "process_name") ++processes;
    if (ph != "M") {
      EXPECT_GE(e["ts"].get<double>(), 0.0);
    }
    if (ph == "X" && cat == "collective") {
      ++collectives;
      first_collective_us = std::min(first_collective_us, e["ts"].get<double>());
      last_collective_us = std::max(last_collective_us, e["ts"].get<double>());
      slice_starts.insert({e["pid"].get<int>(), e["tid"].get<std::int64_t>(), fmt::format("{:.3f}", e["ts"].get<double>())});
    }
    if (cat == "nvtx") ++nvtx;
    if (cat == "match") {
      ++chain_length[e["id"].get<std::int64_t>()];
      flow_starts += ph == "s";
      flow_ends += ph == "f";
    }
  }
  EXPECT_EQ(processes, 3);
  EXPECT_EQ(collectives, rows);
  EXPECT_EQ(nvtx, nvtx_rows);
  // Every collective the analyzer matches on 2+ ranks is one arrow chain through all its ranks.
  const auto a = analyzer::analyze_run(run.string());
  std::int64_t matched = 0;
  std::map<int, std::int64_t> by_length;
  for (const auto& i : a.matched.instances)
    if (i.ranks >= 2) ++matched, ++by_length[i.ranks];
  EXPECT_EQ(flow_starts, matched);
  EXPECT_EQ(flow_ends, matched);
  std::map<int, std::int64_t> chains_by_length;
  for (const auto& [id, n] : chain_length) ++chains_by_length[n];
  EXPECT_EQ(chains_by_length, by_length);
  // Each arrow point sits at the start of a collective slice on its rank and thread (what binds it).
  for (const auto& e : trace["traceEvents"])
    if (e.value("cat", "") == "match") {
      EXPECT_TRUE(slice_starts.count({e["pid"].get<int>(), e["tid"].get<std::int64_t>(), fmt::format("{:.3f}", e["ts"].get<double>())}))
          << e.dump();
    }
  EXPECT_NE(read_text(out.string() + ".err").find(fmt::format("{} collectives", rows)), std::string::npos);

  // A slice: ranks 0 and 2, events overlapping the second quarter of the collectives' time (taken from the export
  // itself: how long the job takes to reach its first collective depends on the machine's load, and a fixed
  // 20-60 ms held none of them in one clean-clone run under load). Every collective of those ranks that overlaps
  // is there, nothing else; flows only join what was exported.
  const std::string from_ms = fmt::format("{:.3f}", (first_collective_us + 0.25 * (last_collective_us - first_collective_us)) / 1e3);
  const std::string to_ms = fmt::format("{:.3f}", (first_collective_us + 0.5 * (last_collective_us - first_collective_us)) / 1e3);
  // The bounds in ns as the command converts them.
  const auto from_ns = static_cast<std::int64_t>(std::stod(from_ms) * 1e6), to_ns = static_cast<std::int64_t>(std::stod(to_ms) * 1e6);
  const auto slice = test_root() / "slice.json";
  ASSERT_EQ(shell(fmt::format("{}/collscope export {} -o {} --ranks 0,2 --from-ms {} --to-ms {} 2> /dev/null",
                              bin_dir(), run.string(), slice.string(), from_ms, to_ms)),
            0);
  const json part = json::parse(read_text(slice));
  std::int64_t expected = 0;
  for (int rank : {0, 2}) {
    store::TraceReader r((run / store::rank_file_name(rank)).string());
    // Run time as the export places it: the run's clock alignment (one offset per host), not this rank's own
    // realtime/monotonic pair, which differs from the host's by its read's jitter (3 boundary collectives of 112
    // flipped at load 4, 2026-12-06).
    std::size_t index = 0;
    while (index < a.run.ranks.size() && a.run.ranks[index].world_rank != rank) ++index;
    ASSERT_LT(index, a.run.ranks.size());
    const auto origin = a.clocks.offset_ns[index] - a.clocks.origin_ns;
    r.for_each_collective([&](const store::CollectiveRow& c) {
      expected += c.end_ns + origin >= from_ns && c.start_ns + origin <= to_ns;
    });
  }
  std::int64_t sliced = 0;
  std::set<int> pids;
  for (const auto& e : part["traceEvents"]) {
    pids.insert(e["pid"].get<int>());
    if (e.value("cat", "") == "collective") {
      ++sliced;
      EXPECT_GE(e["ts"].get<double>() + e["dur"].get<double>(), double(from_ns) / 1e3 - 0.001);
      EXPECT_LE(e["ts"].get<double>(), double(to_ns) / 1e3 + 0.001);
    }
  }
  EXPECT_GT(sliced, 0);
  EXPECT_LT(sliced, rows);
  EXPECT_EQ(sliced, expected);
  EXPECT_EQ(pids, (std::set<int>{0, 2}));
  // A rank the run does not have: one line, exit 2, and no file left behind (not even the partial one).
  const auto missing = test_root() / "missing-rank.json";
  EXPECT_EQ(shell(fmt::format("{}/collscope export {} -o {} --ranks 9 2> /dev/null", bin_dir(), run.string(), missing.string())), 2);
  EXPECT_FALSE(fs::exists(missing));
  EXPECT_FALSE(fs::exists(missing.string() + ".partial"));
  // A device is written in place, never replaced by a renamed file (`-o /dev/stdout` once replaced the device link
  // with the whole trace as a regular file); a full one is one line naming it, exit 2.
  const auto err = test_root() / "device.err";
  EXPECT_EQ(shell(fmt::format("{}/collscope export {} -o /dev/stdout > /dev/null 2> {}", bin_dir(), run.string(),
                              err.string())),
            0)
      << read_text(err);
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status("/dev/stdout")) || fs::is_character_file(fs::status("/dev/stdout")));
  if (fs::is_character_file(fs::status("/dev/full"))) {
    EXPECT_EQ(shell(fmt::format("{}/collscope export {} -o /dev/full 2> {}", bin_dir(), run.string(), err.string())),
              2);
    EXPECT_EQ(read_text(err), "collscope: /dev/full: write failed\n");
    EXPECT_TRUE(fs::is_character_file(fs::status("/dev/full")));
  }
}

TEST_F(FormatsOnSample, CommandLineErrorsAreOneLineAndExitTwo) {
  const auto err = test_root() / "cli.err";
  for (const std::string& args : {std::string("export /nonexistent/run -o x.json"), std::string("import /nonexistent.json -o r"),
                                  std::string("export")}) {
    EXPECT_EQ(shell(fmt::format("{}/collscope {} 2> {}", bin_dir(), args, err.string())), 2) << args;
    const std::string text = read_text(err);
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << args << ": " << text;
  }
  // A timeline given where a run is expected: the line says how to make it a run.
  const auto timeline = test_root() / "given-as-run.json";
  std::ofstream(timeline) << "[]";
  EXPECT_EQ(shell(fmt::format("{}/collscope analyze {} 2> {}", bin_dir(), timeline.string(), err.string())), 2);
  const std::string text = read_text(err);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_NE(text.find("collscope import " + timeline.string()), std::string::npos) << text;
}

// The parts a CPU run does not have: a GPU kernel and copy on a stream, an NCCL collective with its GPU span, an
// NVTX mark and a call still in flight, written with the tracer's own writer.
TEST(ChromeExport, GpuActivitiesMarksAndCallsInFlightBecomeTheirOwnEvents) {
  const auto run = test_root() / "gpu-run";
  fs::create_directories(run);
  {
    store::TraceWriter w((run / store::rank_file_name(0)).string());
    w.begin();
    w.set_meta(store::meta_key::kWorldRank, "0");
    w.set_meta(store::meta_key::kWorldSize, "1");
    w.set_meta(store::meta_key::kHost, "gpu-host");
    w.set_meta(store::meta_key::kMonotonicStart, "1000000");
    w.set_meta(store::meta_key::kRealtimeStart, "5001000000");
    w.add_thread({1, 4242, "train \"main\""});
    store::CommunicatorRow c;
    c.id = 1, c.key = 77, c.backend = store::Backend::Nccl, c.size = 1, c.rank = 0, c.members = {0}, c.name = "nccl#0";
    w.add_communicator(c);
    store::CollectiveRow call;
    call.comm = 1, call.op = store::Op::Allreduce, call.bytes = 4096, call.thread = 1, call.stream = 0xabc;
    call.start_ns = 2000000, call.end_ns = 2000500, call.gpu_start_ns = 2001000, call.gpu_end_ns = 2003000;
    w.add_collective(call);
    store::GpuActivityRow k;
    k.kind = store::GpuActivityKind::Kernel, k.name = w.intern("ncclDevKernel_AllReduce"), k.device = 0, k.stream = 0xabc;
    k.start_ns = 2001000, k.end_ns = 2003000, k.correlation = 9;
    w.add_gpu_activity(k);
    store::GpuActivityRow m = k;
    m.kind = store::GpuActivityKind::Memcpy, m.name = w.intern("HtoD"), m.stream = 0xdef, m.bytes = 1 << 20;
    w.add_gpu_activity(m);
    store::NvtxRangeRow mark;
    mark.kind = store::NvtxKind::Mark, mark.name = w.intern("checkpoint"), mark.start_ns = 2500000, mark.thread = 1;
    w.add_nvtx_range(mark);
    store::CallInFlightRow hung;
    hung.thread = 1, hung.comm = 1, hung.seq = 1, hung.op = store::Op::Allreduce, hung.bytes = 4096;
    hung.start_ns = 3000000, hung.seen_ns = 5000000;
    w.set_call_in_flight(hung);
    w.commit();
  }
  std::ostringstream out;
  const auto counts = formats::export_chrome_trace(run.string(), out);
  EXPECT_EQ(counts.collectives, 1);
  EXPECT_EQ(counts.gpu_activities, 2);
  EXPECT_EQ(counts.calls_in_flight, 1);
  EXPECT_EQ(counts.flows, 0);  // a one-rank communicator links nothing
  const json trace = json::parse(out.str());
  std::map<std::string, json> by_cat;
  std::set<std::string> thread_names;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") thread_names.insert(e["args"]["name"].get<std::string>());
    if (e.contains("cat")) by_cat[e["cat"].get<std::string>() + (e.contains("name") ? "/" + e["name"].get<std::string>() : "")] = e;
  }
  EXPECT_TRUE(thread_names.count("train \"main\""));  // escaped in the file, intact after parsing
  EXPECT_TRUE(thread_names.count("GPU 0 stream 0xabc"));
  EXPECT_TRUE(thread_names.count("GPU 0 stream 0xdef"));
  // Times: microseconds from the start (monotonic 1 ms), so the call at 2 ms is at 1000 us.
  EXPECT_DOUBLE_EQ(by_cat.at("collective/allreduce")["ts"].get<double>(), 1000.0);
  EXPECT_DOUBLE_EQ(by_cat.at("collective/allreduce")["dur"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(by_cat.at("collective_gpu/allreduce")["ts"].get<double>(), 1001.0);
  EXPECT_EQ(by_cat.at("collective_gpu/allreduce")["tid"], by_cat.at("kernel/ncclDevKernel_AllReduce")["tid"]);
  EXPECT_EQ(by_cat.at("memcpy/HtoD")["args"]["bytes"], 1 << 20);
  EXPECT_EQ(by_cat.at("nvtx/checkpoint")["ph"], "i");
  EXPECT_DOUBLE_EQ(by_cat.at("in_flight/allreduce (in flight)")["dur"].get<double>(), 2000.0);
  EXPECT_EQ(trace["otherData"]["clock_realtime_origin_ns"], 5001000000LL);
}

// What the sample does not produce: NCCL activities, a broadcast, a tensor answered from Horovod's response
// cache (no negotiation), dtype/shape sizes, and the {"traceEvents": [...]} wrapping. A small timeline in
// Horovod's exact form with known answers.
TEST(HorovodTimelineImport, FusionCacheHitsBroadcastAndNcclFromAHandWrittenTimeline) {
  const auto dir = test_root() / "handwritten";
  fs::create_directories(dir);
  const auto path = dir / "timeline.json";
  std::ofstream(path) << R"({"traceEvents": [
{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros":1700000000000000}},
{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "grad/a"}},
{"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "grad/b"}},
{"name": "process_name", "ph": "M", "pid": 3, "args": {"name": "params/c"}},
{"name": "process_name", "ph": "M", "pid": 4, "args": {"name": "grad/d"}},
{"ph": "B", "name": "NEGOTIATE_ALLREDUCE", "ts": 100, "pid": 1},
{"ph": "X", "name": "0", "ts": 100, "pid": 1, "dur": 0},
{"ph": "X", "name": "1", "ts": 400, "pid": 1, "dur": 0},
{"ph": "X", "name": "0", "ts": 450, "pid": 1, "dur": 0},
{"ph": "B", "name": "NEGOTIATE_ALLREDUCE", "ts": 110, "pid": 2},
{"ph": "X", "name": "0", "ts": 110, "pid": 2, "dur": 0},
{"ph": "X", "name": "1", "ts": 500, "pid": 2, "dur": 0},
{"ph": "E", "ts": 500, "pid": 1},
{"ph": "E", "ts": 500, "pid": 2},
{"ph": "B", "name": "ALLREDUCE", "ts": 510, "pid": 1},
{"ph": "B", "name": "ALLREDUCE", "ts": 510, "pid": 2},
{"ph": "B", "name": "QUEUE", "ts": 510, "pid": 1},
{"ph": "E", "ts": 520, "pid": 1},
{"ph": "B", "name": "NCCL_ALLREDUCE", "ts": 520, "pid": 1},
{"ph": "B", "name": "NCCL_ALLREDUCE", "ts": 521, "pid": 2},
{"ph": "E", "ts": 700, "pid": 1},
{"ph": "E", "ts": 701, "pid": 2},
{"ph": "E", "ts": 710, "pid": 1, "args": {"dtype": "HOROVOD_FLOAT32", "shape": "[1000, 4]"}},
{"ph": "E", "ts": 710, "pid": 2, "args": {"dtype": "HOROVOD_FLOAT16", "shape": "[8]"}},
{"ph": "i", "name": "CYCLE_START", "ts": 800, "s": "g"},
{"ph": "B", "name": "BROADCAST", "ts": 900, "pid": 3},
{"ph": "B", "name": "NCCL_BCAST", "ts": 905, "pid": 3},
{"ph": "E", "ts": 950, "pid": 3},
{"ph": "E", "ts": 960, "pid": 3, "args": {"dtype": "HOROVOD_INT64", "shape": "[]"}},
{"ph": "B", "name": "ALLREDUCE", "ts": 1000, "pid": 4},
{"ph": "B", "name": "NCCL_ALLREDUCE", "ts": 1010, "pid": 4},
{"ph": "E", "ts": 1100, "pid": 4},
{"ph": "E", "ts": 1110, "pid": 4, "args": {"dtype": "HOROVOD_FLOAT64", "shape": "[2, 3]"}}
], "displayTimeUnit": "ms"})";
  const auto run = dir / "run";
  const auto counts = formats::import_horovod_timeline(path.string(), run.string());
  EXPECT_EQ(counts.ranks, 2);
  EXPECT_EQ(counts.tensors, 4);
  EXPECT_EQ(counts.tensor_operations, 4);
  EXPECT_EQ(counts.ticks, 5);       // the repeated report of rank 0 for grad/a counts, the first one is used
  EXPECT_EQ(counts.collectives, 3); // a+b fused (their NCCL_ALLREDUCE overlap), the broadcast, d alone
  EXPECT_EQ(counts.steps, 0);       // tensors reduced once each: no repeating rounds
  for (int rank : {0, 1}) {
    store::TraceReader r((run / store::rank_file_name(rank)).string());
    const auto strings = r.strings();
    const auto rows = r.collectives();
    ASSERT_EQ(rows.size(), 3u);
    const auto comms = r.communicators();
    ASSERT_EQ(comms.size(), 1u);
    EXPECT_EQ(comms[0].backend, store::Backend::Nccl);
    EXPECT_EQ(comms[0].members, (std::vector<std::int32_t>{0, 1}));
    // Fused a (1000 x 4 float32) + b (8 float16): from the rank's last tick to the end of the NCCL activity.
    EXPECT_EQ(rows[0].op, store::Op::Allreduce);
    EXPECT_EQ(rows[0].bytes, 16000 + 16);
    EXPECT_EQ(rows[0].start_ns, rank == 0 ? 110'000 : 500'000);
    EXPECT_EQ(rows[0].end_ns, 701'000);
    // Broadcast of a scalar int64 answered without negotiation: every rank arrives when it starts, but not
    // before the previous operation ended (one operation at a time).
    EXPECT_EQ(rows[1].op, store::Op::Bcast);
    EXPECT_EQ(rows[1].bytes, 8);
    EXPECT_EQ(rows[1].start_ns, 900'000);
    EXPECT_EQ(rows[1].end_ns, 950'000);
    EXPECT_EQ(rows[2].bytes, 2 * 3 * 8);
    EXPECT_EQ(strings.at(static_cast<std::size_t>(rows[2].datatype)), "HOROVOD_FLOAT64");
    EXPECT_EQ(r.meta_value(store::meta_key::kRealtimeStart), "1700000000000000000");
    EXPECT_EQ(r.meta_value("import_format"), "horovod-timeline");
    // Rank 0 alone carries Horovod's activities and cycle marks.
    const auto nvtx = r.nvtx_ranges();
    std::set<std::string> names;
    for (const auto& x : nvtx) names.insert(strings.at(static_cast<std::size_t>(x.name)));
    if (rank == 0) {
      EXPECT_EQ(names, (std::set<std::string>{"QUEUE", "NCCL_ALLREDUCE", "NCCL_BCAST", "CYCLE_START"}));
    } else {
      EXPECT_TRUE(nvtx.empty());
    }
  }
}

// A timeline as a real Horovod job writes it: parameters broadcast once at the start, then 6 steps of 3 gradients
// fused into one MPI allreduce, on 4 ranks; rank 2 reports its gradients 5 ms after the others every step.
TEST(HorovodTimelineImport, StepsFromTheGradientsDespiteOneOffBroadcasts) {
  const auto dir = test_root() / "generated";
  fs::create_directories(dir);
  const auto path = dir / "timeline.json";
  {
    std::ofstream f(path);
    f << "[\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"args\": {\"start_time_since_epoch_in_micros\":1}}";
    int pid = 0;
    auto event = [&](const std::string& text) { f << ",\n" << text; };
    // Broadcast of 2 parameter tensors (pids 1, 2), answered without negotiation.
    for (int p = 1; p <= 2; ++p) {
      event(fmt::format(R"({{"name": "process_name", "ph": "M", "pid": {}, "args": {{"name": "broadcast.param{}"}}}})", p, p));
      event(fmt::format(R"({{"ph": "B", "name": "BROADCAST", "ts": {}, "pid": {}}})", 100 * p, p));
      event(fmt::format(R"({{"ph": "B", "name": "MPI_BCAST", "ts": {}, "pid": {}}})", 100 * p + 10, p));
      event(fmt::format(R"({{"ph": "E", "ts": {}, "pid": {}}})", 100 * p + 50, p));
      event(fmt::format(R"({{"ph": "E", "ts": {}, "pid": {}, "args": {{"dtype": "HOROVOD_FLOAT32", "shape": "[64]"}}}})", 100 * p + 60, p));
    }
    pid = 2;
    for (int g = 1; g <= 3; ++g)
      event(fmt::format(R"({{"name": "process_name", "ph": "M", "pid": {}, "args": {{"name": "allreduce.grad{}"}}}})", pid + g, g));
    for (int step = 0; step < 6; ++step) {
      const long t0 = 10'000 + step * 20'000;  // us
      for (int g = 1; g <= 3; ++g) {
        event(fmt::format(R"({{"ph": "B", "name": "NEGOTIATE_ALLREDUCE", "ts": {}, "pid": {}}})", t0 + g, pid + g));
        for (int r = 0; r < 4; ++r)
          event(fmt::format(R"({{"ph": "X", "name": "{}", "ts": {}, "pid": {}, "dur": 0}})", r, t0 + g + (r == 2 ? 5000 : 0), pid + g));
        event(fmt::format(R"({{"ph": "E", "ts": {}, "pid": {}}})", t0 + 5010, pid + g));
      }
      for (int g = 1; g <= 3; ++g) event(fmt::format(R"({{"ph": "B", "name": "ALLREDUCE", "ts": {}, "pid": {}}})", t0 + 5020, pid + g));
      for (int g = 1; g <= 3; ++g) event(fmt::format(R"({{"ph": "B", "name": "MPI_ALLREDUCE", "ts": {}, "pid": {}}})", t0 + 5030, pid + g));
      for (int g = 1; g <= 3; ++g) event(fmt::format(R"({{"ph": "E", "ts": {}, "pid": {}}})", t0 + 6030, pid + g));
      for (int g = 1; g <= 3; ++g)
        event(fmt::format(R"({{"ph": "E", "ts": {}, "pid": {}, "args": {{"dtype": "HOROVOD_FLOAT32", "shape": "[1024, 256]"}}}})", t0 + 6040, pid + g));
    }
    f << "\n]\n";
  }
  const auto run = dir / "run";
  const auto counts = formats::import_horovod_timeline(path.string(), run.string());
  EXPECT_EQ(counts.ranks, 4);
  EXPECT_EQ(counts.steps, 6);
  EXPECT_EQ(counts.collectives, 2 + 6);  // two broadcasts, one fused allreduce per step
  const auto a = analyzer::analyze_run(run.string());
  ASSERT_EQ(a.steps.steps.size(), 6u);
  // A step runs from its first negotiation to the next step's (compute included): 20 ms; the last one to the end
  // of its last allreduce.
  EXPECT_NEAR(a.steps.median_step_ns, 20e6, 0.01e6);
  EXPECT_NEAR(a.steps.steps.back().end_ns - a.steps.steps.back().start_ns, 6.039e6, 0.01e6);
  const auto* f = find_finding(a, analyzer::FindingKind::Straggler);
  ASSERT_NE(f, nullptr) << analyzer::text_report(a);
  EXPECT_EQ(f->ranks, std::vector<int>{2});
  EXPECT_NEAR(f->evidence.at("delay_per_step_ns"), 5e6, 0.05e6) << analyzer::text_report(a);
}
