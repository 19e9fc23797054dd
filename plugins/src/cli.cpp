#include <collscope/plugins/chrome_trace.hpp>
#include <collscope/plugins/cli.hpp>
#include <collscope/plugins/horovod_timeline.hpp>
#include <collscope/tracer/error.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

namespace collscope::plugins {
namespace {

struct ExportArgs {
  std::string run_dir;
  std::string output;
  std::string format = "chrome";
  bool no_flows = false;
};

struct ImportArgs {
  std::string input;
  std::string run_dir;
  std::string format = "horovod-timeline";
  int world_size = 0;
};

int run_export(const ExportArgs& args) {
  if (args.format != "chrome" && args.format != "perfetto")
    throw InputError(fmt::format("--format {}: unknown (chrome)", args.format));
  ChromeExportOptions options;
  options.flows = !args.no_flows;
  ChromeExportCounts counts;
  if (args.output.empty() || args.output == "-") {
    counts = export_chrome_trace(args.run_dir, std::cout, options);
  } else {
    // Written next to the target and renamed: a failed export never leaves half a file under the name asked for.
    const std::string partial = args.output + ".partial";
    {
      std::ofstream out(partial, std::ios::binary);
      if (!out) throw InputError(fmt::format("{}: cannot write", args.output));
      counts = export_chrome_trace(args.run_dir, out, options);
      out.close();
      if (!out) throw InputError(fmt::format("{}: write failed", args.output));
    }
    std::filesystem::rename(partial, args.output);
  }
  std::fprintf(stderr,
               "collscope export: %lld ranks, %lld collectives (%lld matched across ranks), %lld NVTX ranges, %lld GPU "
               "activities, %lld calls in flight -> %s (open in ui.perfetto.dev or chrome://tracing)\n",
               static_cast<long long>(counts.ranks), static_cast<long long>(counts.collectives),
               static_cast<long long>(counts.flows), static_cast<long long>(counts.nvtx_ranges),
               static_cast<long long>(counts.gpu_activities), static_cast<long long>(counts.calls_in_flight),
               args.output.empty() ? "stdout" : args.output.c_str());
  return 0;
}

int run_import(const ImportArgs& args) {
  if (args.format != "horovod-timeline")
    throw InputError(fmt::format("--format {}: unknown (horovod-timeline)", args.format));
  const auto counts = import_horovod_timeline(args.input, args.run_dir, args.world_size);
  std::fprintf(stderr,
               "collscope import: %s: %lld ranks, %lld tensors, %lld tensor operations fused into %lld collectives, "
               "%lld negotiation ticks, %lld steps%s -> %s\n",
               args.input.c_str(), static_cast<long long>(counts.ranks), static_cast<long long>(counts.tensors),
               static_cast<long long>(counts.tensor_operations), static_cast<long long>(counts.collectives),
               static_cast<long long>(counts.ticks), static_cast<long long>(counts.steps),
               counts.truncated ? " (the file ended mid-event: the complete events were kept)" : "",
               args.run_dir.c_str());
  return 0;
}

}  // namespace

void add_cli_commands(CLI::App& app, std::function<int()>& action) {
  auto e = std::make_shared<ExportArgs>();
  auto* exp = app.add_subcommand("export", "Write a traced run as a Chrome trace (JSON) for Perfetto or chrome://tracing");
  exp->add_option("run_dir", e->run_dir, "Run directory with rank-*.sqlite")->required();
  exp->add_option("-o,--output", e->output, "Write the trace to FILE (default: stdout)");
  exp->add_option("--format", e->format, "chrome (the Trace Event Format Perfetto also reads)")->capture_default_str();
  exp->add_flag("--no-flows", e->no_flows, "Leave out the arrows linking each collective across its ranks");
  exp->footer("Example: collscope export run1 -o run1.json   # then open run1.json in ui.perfetto.dev");
  exp->callback([&action, e] { action = [e] { return run_export(*e); }; });

  auto i = std::make_shared<ImportArgs>();
  auto* imp = app.add_subcommand("import", "Turn a Horovod Timeline (HOROVOD_TIMELINE) into a run directory to analyze");
  imp->add_option("input", i->input, "Timeline file written by Horovod's rank 0")->required();
  imp->add_option("-o,--output", i->run_dir, "Run directory to write (rank-*.sqlite)")->required();
  imp->add_option("--format", i->format, "horovod-timeline")->capture_default_str();
  imp->add_option("--world-size", i->world_size, "Ranks of the job (default: highest rank in the negotiation + 1)")
      ->check(CLI::PositiveNumber);
  imp->footer("Example: collscope import timeline.json -o run1 && collscope analyze run1");
  imp->callback([&action, i] { action = [i] { return run_import(*i); }; });
}

}  // namespace collscope::plugins
