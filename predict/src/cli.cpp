// `collscope predict RUN [--set KNOB=VALUE]... [--balanced] [--async] [--format text|json] [-o FILE]`.
#include <collscope/cluster/launcher_process.hpp>
#include <collscope/predict/cli.hpp>
#include <collscope/predict/knobs.hpp>
#include <collscope/predict/replay.hpp>
#include <collscope/run/job_settings.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/output_file.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>

namespace collscope::predict {
namespace {

struct PredictArgs {
  std::string run_dir;
  std::vector<std::string> sets;
  bool balanced = false, async = false;
  std::string format = "text";
  std::string output;
};

int run_predict(const PredictArgs& args) {
  if (!cluster::alone_in_process_zero("predict")) return 0;  // under a launcher, process 0 writes the one prediction
  if (args.format != "text" && args.format != "json")
    throw InputError(fmt::format("--format {}: expected text or json", args.format));
  Change change;
  std::vector<std::string> not_predicted;
  for (const auto& s : args.sets) apply_knob(s, change, not_predicted);
  change.balanced = args.balanced;
  change.async = args.async;
  Prediction p = naming_input(args.run_dir, "replaying this run", [&] {
    const ReplayModel model = model_of_run(args.run_dir);
    if (!model.usable) throw InputError(fmt::format("{}: cannot replay: {}", args.run_dir, model.why_not));
    return predict(model, change);
  });
  p.not_predicted.insert(p.not_predicted.begin(), not_predicted.begin(), not_predicted.end());
  const std::string text = args.format == "json" ? prediction_json(p, args.run_dir) : prediction_text(p, args.run_dir);
  if (args.output.empty() || args.output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    store::write_output_file(args.output, [&](std::ostream& f) { f << text; });
  }
  return 0;
}

}  // namespace

void add_cli_commands(CLI::App& app, std::function<int()>& action) {
  auto a = std::make_shared<PredictArgs>();
  auto* predict = app.add_subcommand("predict", "Replay a traced run under changed settings: predicted step time and "
                                                "samples/s with an error band");
  predict->add_option("RUN", a->run_dir, "Run directory with rank-*.sqlite")->required();
  predict->add_option("--set", a->sets, "A changed knob: HOROVOD_FUSION_THRESHOLD (bytes), HOROVOD_CYCLE_TIME (ms), "
                      "backward_passes_per_step, bucket_cap_mb, fp16_compression, batch_size; repeatable")
      ->type_name("KNOB=VALUE");
  predict->add_flag("--balanced", a->balanced, "Every rank as fast as the fastest in each phase (a straggler's true cost)");
  predict->add_flag("--async", a->async, "No rank waits for the slowest (an upper bound)");
  predict->add_option("--format", a->format, "text or json")->capture_default_str()->type_name("FORMAT");
  predict->add_option("-o,--output", a->output, "Write the prediction to FILE (default: stdout)")->type_name("FILE");
  predict->footer("Example: collscope predict run1 --set HOROVOD_CYCLE_TIME=5 --format json");
  predict->callback([&action, a] { action = [a] { return run_predict(*a); }; });
}

}  // namespace collscope::predict
