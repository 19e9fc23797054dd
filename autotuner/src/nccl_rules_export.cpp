// `collscope tune --export-nccl-rules FILE` (and `tune show STUDY --export-nccl-rules FILE`): the best settings
// of a study over NCCL's per-size choices, as the rules file collscope's NCCL tuner plugin applies. The space
// writes each trial's rules from a template (a config file named *.rules, knob placeholders in it), so every
// trial ran with exactly the rules this file holds; the export renders that template with the best values,
// checks it with the plugin's own parser and writes it normalised, with where it came from.
#include <collscope/autotuner/tuner.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/output_file.hpp>
#include <collscope/tracer/nccl_tuning_rules.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

namespace collscope::autotuner {

void write_nccl_rules(const SearchSpace& space, const BestSettings& best, const std::string& study_path,
                      const std::string& path) {
  const ConfigFile* tmpl = nullptr;
  std::size_t index = 0;
  for (std::size_t i = 0; i < space.config_files().size(); ++i)
    if (space.config_files()[i].path.ends_with(".rules")) {
      tmpl = &space.config_files()[i];
      index = i;
      break;
    }
  if (!tmpl)
    throw InputError(fmt::format(
        "{}: --export-nccl-rules: the space writes no rules file (a config_files entry whose path ends in .rules; "
        "see samples/spaces/nccl_rules.yaml)", path));
  auto variables = space.named(best.values);
  variables.insert_or_assign("trial_dir", std::string("."));
  const std::string text = substitute(tmpl->contents, variables);
  std::string error;
  const auto rules = nccl_tuner::parse_rules(text, fmt::format("config_files[{}] ({})", index, tmpl->path), error);
  if (!rules) throw InputError(fmt::format("{}: --export-nccl-rules: the best settings give no valid rules: {}", path, error));

  std::string out = fmt::format("# collscope tune: NCCL tuning rules, the best of study {}\n", study_path);
  std::string settings;
  for (const auto& [name, value] : space.named(best.values)) settings += fmt::format(" {}={}", name, value);
  const std::string& unit = space.objective().unit;
  out += fmt::format("# mean {:.6g}{} over {} run(s) (trials {}); settings:{}\n", best.mean_score,
                     unit.empty() ? "" : " " + unit, best.runs, fmt::join(best.trial_ids, ","), settings);
  out += "# apply: NCCL_TUNER_PLUGIN=libcollscope-nccl-tuner.so COLLSCOPE_NCCL_TUNER_RULES=<this file>\n";
  out += "# op min_bytes max_bytes algo proto channels [ranks=N] [chunk=BYTES]\n";
  for (const auto& r : *rules) out += nccl_tuner::format_rule(r) + "\n";
  // Written whole or not at all: a tuned table half written would apply half the choices.
  store::write_output_file(path, [&](std::ostream& f) { f << out; });
}

}  // namespace collscope::autotuner
