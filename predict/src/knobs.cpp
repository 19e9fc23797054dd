// `--set KNOB=VALUE` into a Change, and a prediction as text and JSON.
#include <collscope/predict/knobs.hpp>
#include <collscope/run/format.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

namespace collscope::predict {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

double number(const std::string& setting, const std::string& value, double min) {
  double v = 0;
  try {
    std::size_t used = 0;
    v = std::stod(value, &used);
    if (used != value.size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw InputError(fmt::format("--set {}: '{}' is not a number", setting, value));
  }
  if (!(v >= min)) throw InputError(fmt::format("--set {}: must be at least {:g}", setting, min));
  return v;
}

bool truth(const std::string& setting, const std::string& value) {
  const std::string v = lower(value);
  if (v == "1" || v == "true" || v == "yes" || v == "on" || v == "fp16") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off" || v == "none") return false;
  throw InputError(fmt::format("--set {}: '{}' is neither 1 nor 0", setting, value));
}

}  // namespace

void apply_knob(const std::string& setting, Change& change, std::vector<std::string>& not_predicted) {
  const auto eq = setting.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError(fmt::format("--set {}: expected KNOB=VALUE (e.g. HOROVOD_CYCLE_TIME=5)", setting));
  const std::string knob = lower(setting.substr(0, eq)), value = setting.substr(eq + 1);
  if (knob == "horovod_fusion_threshold" || knob == "fusion_threshold") {
    change.fusion_threshold_bytes = std::int64_t(number(setting, value, 0));
  } else if (knob == "horovod_cycle_time" || knob == "cycle_time_ms") {
    change.cycle_time_ms = number(setting, value, 0);
  } else if (knob == "backward_passes_per_step" || knob == "gradient_accumulation" || knob == "accumulation_steps") {
    change.backward_passes_per_step = int(number(setting, value, 1));
  } else if (knob == "bucket_cap_mb") {
    change.bucket_cap_mb = number(setting, value, 0.001);
  } else if (knob == "fp16_compression" || knob == "horovod_fp16_compression") {
    change.fp16_compression = truth(setting, value);
  } else if (knob == "compression") {
    change.fp16_compression = lower(value) == "fp16";
    if (!change.fp16_compression && lower(value) != "none")
      not_predicted.push_back(fmt::format("{}: only fp16 compression (bytes halved) is modelled, not '{}'", setting, value));
  } else if (knob == "batch_size") {
    change.batch_size = std::int64_t(number(setting, value, 1));
  } else {
    not_predicted.push_back(fmt::format("{}: the model cannot predict this knob (it replays compute, readiness, "
                                        "negotiation cycles, fusion and collectives by size; nothing else)",
                                        setting.substr(0, eq)));
  }
}

namespace {

std::string settings_line(const EffectiveSettings& s) {
  // A DDP job's settings in DDP's knob alone: its fusion threshold is the cap, and it has no cycle.
  std::string out = s.bucket_cap_mb ? fmt::format("bucket_cap_mb={:g}", *s.bucket_cap_mb)
                                    : fmt::format("HOROVOD_FUSION_THRESHOLD={} HOROVOD_CYCLE_TIME={:g}",
                                                  s.fusion_threshold_bytes, s.cycle_time_ms);
  if (s.backward_passes_per_step != 1) out += fmt::format(" backward_passes_per_step={}", s.backward_passes_per_step);
  if (s.fp16_compression) out += " fp16_compression=1";
  if (s.batch_size > 0) out += fmt::format(" batch_size={}", s.batch_size);
  if (s.balanced) out += " balanced";
  if (s.async) out += " async";
  return out;
}

nlohmann::json settings_json(const EffectiveSettings& s) {
  nlohmann::json j = {{"fusion_threshold_bytes", s.fusion_threshold_bytes},
                      {"cycle_time_ms", s.cycle_time_ms},
                      {"backward_passes_per_step", s.backward_passes_per_step},
                      {"fp16_compression", s.fp16_compression},
                      {"balanced", s.balanced},
                      {"async", s.async}};
  j["bucket_cap_mb"] = s.bucket_cap_mb ? nlohmann::json(*s.bucket_cap_mb) : nlohmann::json(nullptr);
  j["batch_size"] = s.batch_size > 0 ? nlohmann::json(s.batch_size) : nlohmann::json(nullptr);
  return j;
}

}  // namespace

std::string prediction_text(const Prediction& p, const std::string& run_dir) {
  const std::string replayed =
      p.steps_replayed > 0 ? fmt::format("{} steps replayed; ", p.steps_replayed) : std::string();
  std::string out = fmt::format("{}: measured median step {} ({}the model gives {} on the run's own settings)\n",
                                run_dir, run::format_ms(p.baseline_step_ms * 1e6), replayed,
                                run::format_ms(p.baseline_replay_step_ms * 1e6));
  out += fmt::format("  settings: {}\n", settings_line(p.settings));
  if (p.steps_replayed > 0) {
    const double change = p.baseline_step_ms > 0 ? 100 * (p.step_ms / p.baseline_step_ms - 1) : 0;
    out += fmt::format("  predicted median step: {} ({}–{}), {:+.1f} % against the measured\n",
                       run::format_ms(p.step_ms * 1e6), run::format_ms(p.step_low_ms * 1e6),
                       run::format_ms(p.step_high_ms * 1e6), change);
    if (p.samples_per_s > 0)
      out += fmt::format("  predicted throughput: {:.0f} samples/s ({:.0f}–{:.0f}; measured {:.0f})\n", p.samples_per_s,
                         p.samples_per_s_low, p.samples_per_s_high, p.baseline_samples_per_s);
  }
  for (const auto& line : p.not_predicted) out += "  not predicted: " + line + "\n";
  for (const auto& line : p.assumptions) out += "  assumed: " + line + "\n";
  return out;
}

std::string prediction_json(const Prediction& p, const std::string& run_dir) {
  nlohmann::json j;
  j["schema"] = "collscope.prediction/1";
  j["run"] = run_dir;
  j["steps_replayed"] = p.steps_replayed;
  if (p.steps_replayed > 0) {
    j["predicted"] = {{"step_ms", p.step_ms}, {"step_ms_low", p.step_low_ms}, {"step_ms_high", p.step_high_ms}};
    j["predicted"]["samples_per_s"] = p.samples_per_s > 0 ? nlohmann::json(p.samples_per_s) : nlohmann::json(nullptr);
    j["predicted"]["samples_per_s_low"] = p.samples_per_s > 0 ? nlohmann::json(p.samples_per_s_low) : nlohmann::json(nullptr);
    j["predicted"]["samples_per_s_high"] = p.samples_per_s > 0 ? nlohmann::json(p.samples_per_s_high) : nlohmann::json(nullptr);
  } else {
    j["predicted"] = nullptr;
  }
  j["baseline"] = {{"step_ms", p.baseline_step_ms}, {"replayed_step_ms", p.baseline_replay_step_ms}};
  j["baseline"]["samples_per_s"] = p.baseline_samples_per_s > 0 ? nlohmann::json(p.baseline_samples_per_s) : nlohmann::json(nullptr);
  j["baseline"]["settings"] = settings_json(p.baseline);
  j["settings"] = settings_json(p.settings);
  j["not_predicted"] = p.not_predicted;
  j["assumptions"] = p.assumptions;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace collscope::predict
