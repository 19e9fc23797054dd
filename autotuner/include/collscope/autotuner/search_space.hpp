#pragma once
// A search space file (YAML): the knobs of a job, how each reaches it, their ranges and scales,
// the objective and the trial settings. Knob values live on the unit cube for the optimiser;
// SearchSpace maps between the cube, the model's features and the job's values.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collscope::autotuner {

enum class KnobType { Real, Integer, Categorical, Boolean };
enum class KnobScale { Linear, Log };

struct Knob {
  std::string name;                 // used as {name} in the command's arguments and config templates
  KnobType type = KnobType::Real;
  KnobScale scale = KnobScale::Linear;
  double min = 0, max = 1;          // real / integer: inclusive range in the job's units (integer: |v| <= 2^53)
  std::vector<std::string> values;  // categorical / boolean: the choices, as the job reads them
  std::optional<std::string> env;   // environment variable that carries the value
  std::optional<std::string> default_value;  // the job's own default (reports compare against it)
  // What the value measures, for people (`unit:` in the space): "bytes" is shown humanised ("128 MiB"), any other
  // unit follows the value ("5 ms"); empty: the value as the job receives it. The job always gets the raw value.
  std::string unit;

  // The value as reports and the viewer show it: "140 MiB" for 146292434 with unit bytes (three significant
  // digits, as every size).
  std::string shown(const std::string& value) const;

  // Number of discrete levels (integer range size, category count); 0 for real knobs.
  std::int64_t level_count() const;
  // Model features of this knob: 1 for real/integer, one per category (one-hot).
  int feature_count() const;
};

enum class ObjectiveKind { Throughput, StepTime, Regex };

struct Objective {
  ObjectiveKind kind = ObjectiveKind::Throughput;
  bool maximize = true;
  std::string step_range = "step";   // NVTX range name of one training step
  int warmup_steps = 1;              // steps skipped at the start of every rank
  std::string batch_size = "1";      // samples per rank per step: a number or a knob name
  bool batch_size_given = false;     // the space names it: steps give samples/s (else steps/s, see scoring.hpp)
  std::string regex;                 // Regex: first capture group of the last match in the job's output
  std::string unit;                  // for people: "samples/s", "ms", ...
};

struct ConfigFile {
  std::string path;      // may use {trial_dir} and knob placeholders
  std::string contents;  // template: {name} replaced by the knob's value
};

struct TrialSettings {
  double timeout_s = 300;           // wall-clock limit of one trial
  bool early_stopping = true;       // stop a trial whose live trace shows it cannot beat the best
  double early_stop_fraction = 0.5; // stop when the running estimate is below this fraction of the best
  int confirm_top = 2;              // candidates re-run at the end to confirm them against noise
  int confirm_repeats = 1;          // extra runs of each of those
};

// A point in the space: one value (as text, as the job reads it) per knob, in knob order.
using Assignment = std::vector<std::string>;

class SearchSpace {
 public:
  // Parses YAML text; `origin` (the file name) starts every error message. Throws InputError:
  //   "space.yaml: knobs[1].max: must be greater than min (4 <= 8)"
  static SearchSpace parse(const std::string& yaml_text, const std::string& origin);
  static SearchSpace load(const std::string& path);

  const std::vector<Knob>& knobs() const { return knobs_; }
  const Objective& objective() const { return objective_; }
  const TrialSettings& trial() const { return trial_; }
  const std::vector<ConfigFile>& config_files() const { return config_files_; }
  const std::string& yaml_text() const { return yaml_text_; }
  std::size_t dimensions() const { return knobs_.size(); }
  int feature_count() const;
  int knob_index(const std::string& name) const;  // -1 when absent

  // Unit-cube coordinate (one per knob, in [0,1]) to the job's values; integers and categories are snapped here.
  Assignment to_values(const std::vector<double>& unit) const;
  // The canonical cube point of an assignment (centre of an integer's / category's cell).
  std::vector<double> to_unit(const Assignment& values) const;
  // Model features: what the GP sees. Real: unit coordinate; integer: the snapped value mapped back to
  // the cube (so the kernel is constant inside a cell); categorical: one-hot, one feature per category.
  std::vector<double> features(const std::vector<double>& unit) const;
  // The knobs' defaults when every knob has one.
  std::optional<Assignment> defaults() const;
  // Total number of distinct points when every knob is discrete, else nullopt.
  std::optional<std::int64_t> discrete_size() const;

  std::map<std::string, std::string> named(const Assignment& values) const;
  // One setting for people: "fusion_threshold=128 MiB cycle_time_ms=5" (values as Knob::shown gives them);
  // `separator` between knobs.
  std::string describe(const Assignment& values, std::string_view separator = " ") const;

  // Knob `knob`'s value nearest `v` (in the job's units) that the space can take: clamped into [min, max], an
  // integer rounded, as the job reads it; nullopt for a categorical or boolean knob, or a `v` that is not finite.
  std::optional<std::string> nearest_value(std::size_t knob, double v) const;

  // This space with knob `name` fixed at its default (a one-value categorical the model ignores): --fixed-batch.
  // Throws InputError naming the knob when it has no default.
  SearchSpace with_knob_fixed(const std::string& name) const;

 private:
  std::vector<Knob> knobs_;
  Objective objective_;
  TrialSettings trial_;
  std::vector<ConfigFile> config_files_;
  std::string yaml_text_;
};

// True when `s` holds a byte below 0x20 or 0x7f (newline, tab, escape...): such a knob value is refused, because the
// values reach environments, command lines and the `--export-env` file a shell reads.
bool has_control_character(std::string_view s);

// Replaces {name} placeholders (knobs and extra variables such as trial_dir); "{{" is a literal "{".
// Unknown placeholders are left as they are. Values are inserted literally: no shell ever sees them.
std::string substitute(const std::string& text, const std::map<std::string, std::string>& variables);

}  // namespace collscope::autotuner
