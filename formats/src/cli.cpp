#include <collscope/cluster/launcher_process.hpp>
#include <collscope/formats/chrome_trace.hpp>
#include <collscope/formats/cli.hpp>
#include <collscope/formats/horovod_timeline.hpp>
#include <collscope/formats/otf2.hpp>
#include <collscope/formats/torch_profiler.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/output_file.hpp>
#include <collscope/store/schema.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <vector>

namespace collscope::formats {
namespace {

struct ExportArgs {
  std::string run_dir;
  std::string output;
  std::string format = "chrome";
  bool no_flows = false;
  std::string ranks;
  double from_ms = 0, to_ms = -1;
};

struct ImportArgs {
  std::vector<std::string> inputs;
  std::string run_dir;
  std::string format = "auto";
  int world_size = 0;
};

// "0,2,4-7" -> {0, 2, 4, 5, 6, 7}.
std::vector<int> parse_ranks(const std::string& text) {
  std::vector<int> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string part = text.substr(at, comma - at);
    try {
      std::size_t used = 0;
      const int lo = std::stoi(part, &used);
      int hi = lo;
      if (used < part.size()) {
        if (part[used] != '-') throw std::invalid_argument(part);
        std::size_t used_hi = 0;
        hi = std::stoi(part.substr(used + 1), &used_hi);
        if (used + 1 + used_hi != part.size()) throw std::invalid_argument(part);
      }
      if (lo < 0 || hi < lo || hi - lo > 1'000'000) throw std::invalid_argument(part);
      for (int r = lo; r <= hi; ++r) out.push_back(r);
    } catch (const std::exception&) {
      throw InputError(fmt::format("--ranks {}: '{}' is not a rank or a range like 4-7", text, part));
    }
    at = comma + 1;
  }
  return out;
}

// --format otf2: an archive directory, the whole run (OTF2 readers select ranks and times themselves).
int run_otf2_export(const ExportArgs& args) {
  if (args.output.empty() || args.output == "-")
    throw InputError("--format otf2 writes a directory: give it with -o DIR");
  if (!args.ranks.empty() || args.from_ms != 0 || args.to_ms >= 0 || args.no_flows)
    throw InputError("--format otf2 exports the whole run: --ranks, --from-ms, --to-ms and --no-flows are for chrome");
  const auto counts = naming_input(args.run_dir, "exporting this run", [&] { return export_otf2(args.run_dir, args.output); });
  for (const auto& p : counts.problems) std::fprintf(stderr, "collscope export: %s\n", p.c_str());
  if (counts.cut_regions)
    std::fprintf(stderr, "collscope export: %lld regions overlapped the one they started in without nesting; cut at its end\n",
                 static_cast<long long>(counts.cut_regions));
  std::fprintf(stderr,
               "collscope export: %lld ranks, %lld locations, %lld events: %lld MpiSend, %lld MpiRecv, %lld MpiIsend, "
               "%lld MpiIrecv, %lld MPI collectives, %lld non-blocking collectives, %lld NVTX ranges -> %s/traces.otf2\n",
               static_cast<long long>(counts.ranks), static_cast<long long>(counts.locations),
               static_cast<long long>(counts.events), static_cast<long long>(counts.sends),
               static_cast<long long>(counts.receives), static_cast<long long>(counts.isends),
               static_cast<long long>(counts.irecvs), static_cast<long long>(counts.collectives),
               static_cast<long long>(counts.nonblocking_collectives), static_cast<long long>(counts.nvtx_ranges),
               args.output.c_str());
  return 0;
}

int run_export(const ExportArgs& args) {
  if (!cluster::alone_in_process_zero("export")) return 0;  // under a launcher, process 0 writes the one file
  if (args.format == "otf2") return run_otf2_export(args);
  if (args.format != "chrome" && args.format != "perfetto")
    throw InputError(fmt::format("--format {}: unknown (chrome, otf2)", args.format));
  ChromeExportOptions options;
  options.flows = !args.no_flows;
  if (!args.ranks.empty()) options.ranks = parse_ranks(args.ranks);
  if (args.from_ms < 0) throw InputError(fmt::format("--from-ms {}: must not be negative", args.from_ms));
  if (args.to_ms >= 0 && args.to_ms < args.from_ms)
    throw InputError(fmt::format("--to-ms {} is before --from-ms {}", args.to_ms, args.from_ms));
  options.from_ns = static_cast<std::int64_t>(args.from_ms * 1e6);
  if (args.to_ms >= 0) options.to_ns = static_cast<std::int64_t>(args.to_ms * 1e6);
  ChromeExportCounts counts;
  if (args.output.empty() || args.output == "-") {
    counts = naming_input(args.run_dir, "exporting this run",
                          [&] { return export_chrome_trace(args.run_dir, std::cout, options); });
  } else {
    store::write_output_file(args.output, [&](std::ostream& out) {
      try {
        counts = naming_input(args.run_dir, "exporting this run",
                              [&] { return export_chrome_trace(args.run_dir, out, options); });
      } catch (const InputError&) {
        if (!out) throw InputError(fmt::format("{}: write failed", args.output));  // the output's fault, not the run's
        throw;
      }
    });
  }
  for (const auto& p : counts.problems) std::fprintf(stderr, "collscope export: %s\n", p.c_str());
  std::fprintf(stderr,
               "collscope export: %lld ranks, %lld collectives (%lld matched across ranks), %lld point-to-point calls "
               "(%lld messages matched), %lld NVTX ranges, %lld GPU activities, %lld calls in flight -> %s (open in "
               "ui.perfetto.dev or chrome://tracing)\n",
               static_cast<long long>(counts.ranks), static_cast<long long>(counts.collectives),
               static_cast<long long>(counts.flows), static_cast<long long>(counts.point_to_point),
               static_cast<long long>(counts.messages), static_cast<long long>(counts.nvtx_ranges),
               static_cast<long long>(counts.gpu_activities), static_cast<long long>(counts.calls_in_flight),
               args.output.empty() ? "stdout" : args.output.c_str());
  return 0;
}

int run_horovod_import(const ImportArgs& args) {
  if (args.inputs.size() != 1)
    throw InputError(fmt::format("{}: a Horovod timeline is one file (rank 0 writes it for all ranks); {} were given",
                                 args.inputs[1], args.inputs.size()));
  const std::string& input = args.inputs.front();
  const auto counts = naming_input(input, "importing this timeline",
                                   [&] { return import_horovod_timeline(input, args.run_dir, args.world_size); });
  for (const auto& p : counts.problems) std::fprintf(stderr, "collscope import: %s\n", p.c_str());
  std::fprintf(stderr,
               "collscope import: %s: %lld ranks, %lld tensors, %lld tensor operations fused into %lld collectives, "
               "%lld negotiation ticks, %lld steps%s%s -> %s\n",
               input.c_str(), static_cast<long long>(counts.ranks), static_cast<long long>(counts.tensors),
               static_cast<long long>(counts.tensor_operations), static_cast<long long>(counts.collectives),
               static_cast<long long>(counts.ticks), static_cast<long long>(counts.steps),
               counts.truncated ? " (the file ended mid-event: the complete events were kept)" : "",
               counts.replaced_utf8 ? fmt::format(" ({} invalid UTF-8 sequence(s) in names read as U+FFFD)", counts.replaced_utf8).c_str() : "",
               args.run_dir.c_str());
  if (!counts.lateness_unknown.empty())
    std::fprintf(stderr, "collscope import: %s: %s\n", input.c_str(), counts.lateness_unknown.c_str());
  return 0;
}

int run_torch_import(const ImportArgs& args) {
  const auto counts = naming_input(args.inputs.front(), "importing these traces",
                                   [&] { return import_torch_profiler(args.inputs, args.run_dir, args.world_size); });
  for (const auto& p : counts.problems) std::fprintf(stderr, "collscope import: %s\n", p.c_str());
  std::fprintf(stderr,
               "collscope import: torch.profiler (%s): %lld of %lld ranks, %lld process groups, %lld collectives "
               "(%lld sized from record_param_comms%s, %lld without their work span), %lld steps, %lld phase ranges -> %s\n",
               counts.shape.c_str(), static_cast<long long>(counts.ranks), static_cast<long long>(counts.world_size),
               static_cast<long long>(counts.communicators), static_cast<long long>(counts.collectives),
               static_cast<long long>(counts.with_sizes),
               counts.with_shapes ? fmt::format(", {} from input shapes", counts.with_shapes).c_str() : "",
               static_cast<long long>(counts.without_work),
               static_cast<long long>(counts.steps), static_cast<long long>(counts.phases), args.run_dir.c_str());
  return 0;
}

int run_otf2_import(const ImportArgs& args) {
  const std::string& input = args.inputs.front();
  if (args.inputs.size() != 1)
    throw InputError(fmt::format("{}: an OTF2 archive is one anchor file (traces.otf2) for all ranks; {} were given",
                                 args.inputs[1], args.inputs.size()));
  if (args.world_size) throw InputError("--world-size: an OTF2 archive lists its ranks itself");
  const auto counts = naming_input(input, "importing this OTF2 archive", [&] { return import_otf2(input, args.run_dir); });
  for (const auto& p : counts.problems) std::fprintf(stderr, "collscope import: %s\n", p.c_str());
  std::fprintf(stderr,
               "collscope import: %s (%s): %lld of %lld ranks, %lld locations, %lld events: %lld MpiSend, %lld MpiRecv, "
               "%lld MpiIsend, %lld MpiIrecv, %lld MPI collectives, %lld non-blocking collectives, %lld other regions as "
               "ranges -> %s\n",
               input.c_str(), counts.creator.empty() ? "no creator" : counts.creator.c_str(),
               static_cast<long long>(counts.ranks), static_cast<long long>(counts.world_size),
               static_cast<long long>(counts.locations), static_cast<long long>(counts.events),
               static_cast<long long>(counts.sends), static_cast<long long>(counts.receives),
               static_cast<long long>(counts.isends), static_cast<long long>(counts.irecvs),
               static_cast<long long>(counts.collectives), static_cast<long long>(counts.nonblocking_collectives),
               static_cast<long long>(counts.ranges), args.run_dir.c_str());
  return 0;
}

int run_import(const ImportArgs& args) {
  if (!cluster::alone_in_process_zero("import")) return 0;  // under a launcher, process 0 writes the one run
  std::string format = args.format;
  if (format == "auto") {
    // An OTF2 archive by its anchor file's name (or a directory holding traces.otf2). Else by content: a Horovod
    // timeline names its negotiation; torch.profiler traces name ops and distributedInfo. A file of neither goes
    // to the Horovod reader when it is alone (as before), which says what it expected.
    bool torch = args.inputs.size() > 1;
    for (const auto& input : args.inputs) torch = torch || looks_like_torch_profiler_trace(input);
    format = args.inputs.size() == 1 && looks_like_otf2_archive(args.inputs.front()) ? "otf2"
             : torch                                                                  ? "torch-profiler"
                                                                                      : "horovod-timeline";
  }
  if (format == "horovod-timeline") return run_horovod_import(args);
  if (format == "torch-profiler" || format == "kineto") return run_torch_import(args);
  if (format == "otf2") return run_otf2_import(args);
  throw InputError(fmt::format("--format {}: unknown (auto, horovod-timeline, torch-profiler, otf2)", args.format));
}

}  // namespace

void add_cli_commands(CLI::App& app, std::function<int()>& action) {
  auto e = std::make_shared<ExportArgs>();
  auto* exp = app.add_subcommand("export", "Write a traced run as a Chrome trace (JSON) for Perfetto or chrome://tracing, or as OTF2");
  exp->add_option("RUN_DIR", e->run_dir, "Run directory with rank-*.sqlite")->required();
  exp->add_option("-o,--output", e->output, "Write the trace to FILE (default: stdout); otf2: the archive's directory")->type_name("FILE");
  exp->add_option("--format", e->format, "chrome (the Trace Event Format Perfetto also reads) or otf2 (Vampir, Scalasca, otf2-print)")
      ->capture_default_str()->type_name("FORMAT");
  exp->add_flag("--no-flows", e->no_flows, "Leave out the arrows linking each collective across its ranks and each send to its receive");
  exp->add_option("--ranks", e->ranks, "Only these world ranks, e.g. 0,3,8-15 (a browser opens ~1 GB of JSON at most)")->type_name("LIST");
  exp->add_option("--from-ms", e->from_ms, "Only events that end after this time (ms from the run's start)")->type_name("MS");
  exp->add_option("--to-ms", e->to_ms, "Only events that start before this time (ms from the run's start)")->type_name("MS");
  exp->footer("Example: collscope export run1 -o run1.json   # then open run1.json in ui.perfetto.dev\n"
              "         collscope export run1 --format otf2 -o run1-otf2   # then otf2-print run1-otf2/traces.otf2");
  exp->callback([&action, e] { action = [e] { return run_export(*e); }; });

  auto i = std::make_shared<ImportArgs>();
  auto* imp = app.add_subcommand("import", "Turn a Horovod Timeline, torch.profiler traces or an OTF2 archive into a run to analyze");
  imp->add_option("FILES", i->inputs, "Horovod: the timeline rank 0 wrote; torch.profiler: each rank's Chrome trace; OTF2: the anchor file (traces.otf2)")->required();
  imp->add_option("-o,--output", i->run_dir, "Run directory to write (rank-*.sqlite)")->required()->type_name("DIR");
  imp->add_option("--format", i->format, "auto (by content; OTF2 by its .otf2 anchor), horovod-timeline, torch-profiler or otf2")->capture_default_str()->type_name("FORMAT");
  imp->add_option("--world-size", i->world_size, "Ranks of the job (default: Horovod: highest rank in the negotiation + 1; torch: distributedInfo, else the files)")
      ->check(CLI::Range(1, store::kMaxWorldSize));
  imp->footer("Example: collscope import timeline.json -o run1 && collscope analyze run1\n"
              "         collscope import trace/rank-0.json trace/rank-1.json -o run2 && collscope analyze run2\n"
              "         collscope import scorep-20250101_1200_42/traces.otf2 -o run3 && collscope analyze run3");
  imp->callback([&action, i] { action = [i] { return run_import(*i); }; });
}

}  // namespace collscope::formats
