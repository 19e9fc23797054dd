// Export and import speed. Chrome trace export of a generated run against reading the same rows with the store
// (the floor: export cannot be faster than reading), both measured in this run; Horovod Timeline import of a
// timeline generated in the same form as Horovod's, against parsing that file alone with nlohmann::json.
// Usage: formats_bench [--ranks 8] [--collectives 125000] [--dir /tmp/collscope-formats-bench]
#include <collscope/testing/synthetic_run.hpp>
#include <collscope/formats/chrome_trace.hpp>
#include <collscope/formats/horovod_timeline.hpp>
#include <collscope/store/trace_reader.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <streambuf>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace collscope;

namespace {

// Counts bytes, keeps nothing: the export's own cost without the disk's.
class CountingBuffer : public std::streambuf {
 public:
  std::int64_t bytes = 0;

 protected:
  std::streamsize xsputn(const char*, std::streamsize n) override { return bytes += n, n; }
  int_type overflow(int_type c) override { return ++bytes, c; }
};

// Best of three: the first round also pays for page-cache and allocator warm-up.
template <typename F>
double seconds(F&& f) {
  double best = 1e300;
  for (int round = 0; round < 3; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// A Horovod timeline of `ranks` ranks, `steps` steps of `tensors` tensors fused in groups of 8.
void write_timeline(const std::string& path, int ranks, int steps, int tensors) {
  std::ofstream f(path);
  f << "[\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"args\": {\"start_time_since_epoch_in_micros\":1}}";
  for (int t = 1; t <= tensors; ++t)
    f << fmt::format(",\n{{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": {}, \"args\": {{\"name\": \"tensor{}\"}}}}", t, t);
  long ts = 0;
  for (int s = 0; s < steps; ++s)
    for (int g = 0; g < tensors; g += 8) {
      for (int t = g + 1; t <= std::min(tensors, g + 8); ++t) {
        f << fmt::format(",\n{{\"ph\": \"B\", \"name\": \"NEGOTIATE_ALLREDUCE\", \"ts\": {}, \"pid\": {}}}", ts, t);
        for (int r = 0; r < ranks; ++r) f << fmt::format(",\n{{\"ph\": \"X\", \"name\": \"{}\", \"ts\": {}, \"pid\": {}, \"dur\": 0}}", r, ts + r, t);
        f << fmt::format(",\n{{\"ph\": \"E\", \"ts\": {}, \"pid\": {}}}", ts + ranks, t);
      }
      ts += ranks + 1;
      for (int t = g + 1; t <= std::min(tensors, g + 8); ++t)
        f << fmt::format(",\n{{\"ph\": \"B\", \"name\": \"ALLREDUCE\", \"ts\": {0}, \"pid\": {1}}},\n{{\"ph\": \"B\", \"name\": \"MPI_ALLREDUCE\", \"ts\": {0}, \"pid\": {1}}}", ts, t);
      ts += 50;
      for (int t = g + 1; t <= std::min(tensors, g + 8); ++t)
        f << fmt::format(",\n{{\"ph\": \"E\", \"ts\": {0}, \"pid\": {1}}},\n{{\"ph\": \"E\", \"ts\": {0}, \"pid\": {1}, \"args\": {{\"dtype\": \"HOROVOD_FLOAT32\", \"shape\": \"[1024, 16]\"}}}}", ts, t);
      ts += 10;
    }
  f << "\n]\n";
}

// Runs `f` in a child process; returns the child's peak RSS (KiB) and passes back the seconds `f` stored.
// fork without exec, not the launcher (collscope/process): the child runs `f`, nothing is started.
template <typename F>
long in_child(F&& f, double& seconds_out) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    f();
    (void)!write(fds[1], &seconds_out, sizeof seconds_out);
    _exit(0);
  }
  close(fds[1]);
  (void)!read(fds[0], &seconds_out, sizeof seconds_out);
  close(fds[0]);
  int status = 0;
  struct rusage usage {};
  wait4(pid, &status, 0, &usage);
  return usage.ru_maxrss;
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 8;
  std::int64_t collectives = 125000;
  std::string dir = (fs::temp_directory_path() / "collscope-formats-bench").string();
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--ranks")) ranks = std::stoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--collectives")) collectives = std::stoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--dir")) dir = argv[i + 1];
  }
  const std::string run = fmt::format("{}/run-{}x{}", dir, ranks, collectives);
  if (!fs::exists(fs::path(run) / "rank-00000.sqlite")) {
    testing::SyntheticRunSpec spec;
    spec.ranks = ranks;
    spec.allreduces_per_step = 8;
    spec.steps = static_cast<int>(collectives / spec.allreduces_per_step);
    spec.compute_ms = 1;
    testing::write_synthetic_run(run, spec);
  }
  std::int64_t rows = 0;
  const double read_s = seconds([&] {
    rows = 0;
    for (const auto& p : store::rank_files(run)) {
      store::TraceReader r(p);
      r.for_each_collective([&](const store::CollectiveRow&) { ++rows; });
      r.for_each_nvtx_range([&](const store::NvtxRangeRow&) { ++rows; });
    }
  });
  std::int64_t json_bytes = 0;
  formats::ChromeExportCounts counts;
  const double export_s = seconds([&] {
    CountingBuffer sink;
    std::ostream out(&sink);
    counts = formats::export_chrome_trace(run, out);
    json_bytes = sink.bytes;
  });
  fmt::print("chrome export: {} ranks, {} rows ({} collectives, {} matched), {:.1f} MiB of JSON\n", counts.ranks, rows,
             counts.collectives, counts.flows, double(json_bytes) / (1 << 20));
  fmt::print("  read rows only (baseline) {:.2f} s, {:.0f} rows/s\n", read_s, rows / read_s);
  fmt::print("  export                    {:.2f} s, {:.0f} rows/s, {:.2f}x the baseline's time\n", export_s, rows / export_s,
             export_s / read_s);

  const std::string timeline = fmt::format("{}/timeline-{}.json", dir, ranks);
  write_timeline(timeline, ranks, 200, 160);
  double parse_s = 0, import_s = 0;
  long parse_kib = 0, import_kib = 0;
  formats::HorovodImportCounts imported;
  // Each in its own process: peak RSS (ru_maxrss) is per process and never goes down.
  parse_kib = in_child([&] {
    parse_s = seconds([&] {
      std::ifstream in(timeline);
      std::stringstream s;
      s << in.rdbuf();
      [[maybe_unused]] const auto document = nlohmann::json::parse(s.str());
    });
  }, parse_s);
  import_kib = in_child([&] { import_s = seconds([&] { imported = formats::import_horovod_timeline(timeline, dir + "/imported"); }); },
                        import_s);
  imported = formats::import_horovod_timeline(timeline, dir + "/imported");
  fmt::print("horovod import: {:.1f} MiB, {} tensor operations, {} ticks -> {} collectives x {} ranks\n",
             double(fs::file_size(timeline)) / (1 << 20), imported.tensor_operations, imported.ticks, imported.collectives,
             imported.ranks);
  fmt::print("  parse JSON into a document (baseline) {:.2f} s, peak RSS {} MiB\n", parse_s, parse_kib / 1024);
  fmt::print("  import (streaming)                    {:.2f} s, peak RSS {} MiB; {:.2f}x the baseline's time, {:.2f}x its memory\n",
             import_s, import_kib / 1024, import_s / parse_s, double(import_kib) / double(parse_kib));
  return 0;
}
