// Search space parsing (yaml-cpp) and the unit-cube <-> value <-> feature maps.
#include <collscope/autotuner/search_space.hpp>
#include <collscope/run/format.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace collscope::autotuner {

std::int64_t Knob::level_count() const {
  switch (type) {
    case KnobType::Integer: return static_cast<std::int64_t>(max) - static_cast<std::int64_t>(min) + 1;
    case KnobType::Categorical:
    case KnobType::Boolean: return static_cast<std::int64_t>(values.size());
    case KnobType::Real: return 0;
  }
  return 0;
}

int Knob::feature_count() const {
  return (type == KnobType::Categorical || type == KnobType::Boolean) ? static_cast<int>(values.size()) : 1;
}

namespace {

// Collects "origin: key: problem" messages; every parse error is one line naming the key.
struct Where {
  const std::string& origin;
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    throw InputError(fmt::format("{}: {}: {}", origin, key, problem));
  }
};

double as_number(const YAML::Node& n, const std::string& key, const Where& where) {
  if (!n.IsScalar()) where.fail(key, "must be a number");
  try {
    return n.as<double>();
  } catch (const YAML::Exception&) {
    where.fail(key, fmt::format("must be a number, not '{}'", n.Scalar()));
  }
}

std::string as_text(const YAML::Node& n, const std::string& key, const Where& where) {
  if (!n.IsScalar()) where.fail(key, "must be a single value");
  return n.Scalar();
}

bool as_bool(const YAML::Node& n, const std::string& key, const Where& where) {
  if (!n.IsScalar()) where.fail(key, "must be true or false");
  try {
    return n.as<bool>();
  } catch (const YAML::Exception&) {
    where.fail(key, fmt::format("must be true or false, not '{}'", n.Scalar()));
  }
}

void check_keys(const YAML::Node& map, const std::string& key, const std::set<std::string>& allowed,
                const Where& where) {
  if (!map.IsMap()) where.fail(key, "must be a mapping");
  for (const auto& kv : map) {
    const std::string k = kv.first.as<std::string>();
    if (!allowed.count(k)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      where.fail(key.empty() ? k : key + "." + k, fmt::format("unknown key (expected one of: {})", list));
    }
  }
}

// Integers up to 2^53 are exact in the double the range is parsed into, and their differences fit an int64.
constexpr double kMaxIntegerBound = 9007199254740992.0;

// A knob value as the job will read it: no control characters (see has_control_character), valid UTF-8 (the study
// stores values as JSON text).
std::string as_knob_value(const YAML::Node& n, const std::string& key, const Where& where) {
  if (!n.IsScalar()) where.fail(key, "must be a single value");
  const std::string v = n.Scalar();
  if (has_control_character(v))
    where.fail(key, "holds a control character (newline, tab, ...): knob values reach environments and shells");
  try {
    (void)nlohmann::json(v).dump();
  } catch (const nlohmann::json::exception&) {
    where.fail(key, "is not valid UTF-8");
  }
  return v;
}

bool valid_env_name(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool valid_knob_name(const std::string& s) { return valid_env_name(s); }

Knob parse_knob(const YAML::Node& n, const std::string& key, const Where& where) {
  check_keys(n, key, {"name", "type", "scale", "min", "max", "values", "env", "default", "unit"}, where);
  Knob k;
  if (!n["name"]) where.fail(key + ".name", "missing");
  k.name = as_text(n["name"], key + ".name", where);
  if (!valid_knob_name(k.name)) where.fail(key + ".name", fmt::format("'{}' is not a name (letters, digits, _)", k.name));
  const std::string type = n["type"] ? as_text(n["type"], key + ".type", where) : "real";
  if (type == "real" || type == "float") k.type = KnobType::Real;
  else if (type == "integer" || type == "int") k.type = KnobType::Integer;
  else if (type == "categorical") k.type = KnobType::Categorical;
  else if (type == "boolean" || type == "bool") k.type = KnobType::Boolean;
  else where.fail(key + ".type", fmt::format("'{}' is not one of real, integer, categorical, boolean", type));
  if (n["scale"]) {
    const std::string scale = as_text(n["scale"], key + ".scale", where);
    if (scale == "log") k.scale = KnobScale::Log;
    else if (scale == "linear") k.scale = KnobScale::Linear;
    else where.fail(key + ".scale", fmt::format("'{}' is not linear or log", scale));
  }
  if (k.type == KnobType::Real || k.type == KnobType::Integer) {
    if (!n["min"]) where.fail(key + ".min", "missing (a range needs min and max)");
    if (!n["max"]) where.fail(key + ".max", "missing (a range needs min and max)");
    if (n["values"]) where.fail(key + ".values", "only categorical and boolean knobs have values");
    k.min = as_number(n["min"], key + ".min", where);
    k.max = as_number(n["max"], key + ".max", where);
    if (!std::isfinite(k.min) || !std::isfinite(k.max)) where.fail(key + ".min", "range must be finite");
    if (!std::isfinite(k.max - k.min)) where.fail(key + ".max", fmt::format("range {:g}..{:g} is too wide", k.min, k.max));
    if (k.type == KnobType::Integer)
      for (const auto& [bound, v] : {std::pair{".min", k.min}, std::pair{".max", k.max}})
        if (std::abs(v) > kMaxIntegerBound)
          where.fail(key + bound, fmt::format("{:g} is out of range for an integer knob (at most 2^53 = 9007199254740992 in size)", v));
    if (!(k.max > k.min)) where.fail(key + ".max", fmt::format("must be greater than min ({:g} <= {:g})", k.max, k.min));
    if (k.scale == KnobScale::Log && k.min <= 0)
      where.fail(key + ".min", fmt::format("log scale needs min > 0 (got {:g})", k.min));
    if (k.type == KnobType::Integer && (k.min != std::floor(k.min) || k.max != std::floor(k.max)))
      where.fail(key + ".min", "an integer knob needs integer min and max");
  } else {
    if (n["min"] || n["max"]) where.fail(key + ".min", "categorical and boolean knobs take values, not min/max");
    if (k.scale == KnobScale::Log) where.fail(key + ".scale", "log scale needs a numeric knob");
    if (n["values"]) {
      if (!n["values"].IsSequence() || n["values"].size() < 1)
        where.fail(key + ".values", "must be a non-empty list");
      std::set<std::string> seen;
      for (std::size_t i = 0; i < n["values"].size(); ++i) {
        const std::string v = as_knob_value(n["values"][i], fmt::format("{}.values[{}]", key, i), where);
        if (!seen.insert(v).second) where.fail(fmt::format("{}.values[{}]", key, i), fmt::format("'{}' repeats", v));
        k.values.push_back(v);
      }
    } else if (k.type == KnobType::Boolean) {
      k.values = {"0", "1"};
    } else {
      where.fail(key + ".values", "missing (a categorical knob lists its values)");
    }
    if (k.type == KnobType::Boolean && k.values.size() != 2) where.fail(key + ".values", "a boolean knob has 2 values");
  }
  if (n["unit"]) {
    k.unit = as_text(n["unit"], key + ".unit", where);
    if (k.unit.empty() || has_control_character(k.unit)) where.fail(key + ".unit", "must be a word such as bytes or ms");
    if (k.type != KnobType::Real && k.type != KnobType::Integer) where.fail(key + ".unit", "only numeric knobs have a unit");
  }
  if (n["env"]) {
    k.env = as_text(n["env"], key + ".env", where);
    if (!valid_env_name(*k.env)) where.fail(key + ".env", fmt::format("'{}' is not an environment variable name", *k.env));
  }
  if (n["default"]) {
    k.default_value = as_knob_value(n["default"], key + ".default", where);
    if (k.type == KnobType::Real || k.type == KnobType::Integer) {
      const double d = as_number(n["default"], key + ".default", where);
      if (d < k.min || d > k.max) where.fail(key + ".default", fmt::format("{:g} is outside [{:g}, {:g}]", d, k.min, k.max));
    } else if (std::find(k.values.begin(), k.values.end(), *k.default_value) == k.values.end()) {
      where.fail(key + ".default", fmt::format("'{}' is not one of the values", *k.default_value));
    }
  }
  return k;
}

double clamp01(double u) { return std::min(1.0, std::max(0.0, std::isfinite(u) ? u : 0.0)); }

// Continuous position of unit u on a numeric knob, in the job's units.
double numeric_from_unit(const Knob& k, double u) {
  if (k.scale == KnobScale::Log) return std::exp(std::log(k.min) + u * (std::log(k.max) - std::log(k.min)));
  return k.min + u * (k.max - k.min);
}

double unit_from_numeric(const Knob& k, double v) {
  if (k.scale == KnobScale::Log) return clamp01((std::log(v) - std::log(k.min)) / (std::log(k.max) - std::log(k.min)));
  return clamp01((v - k.min) / (k.max - k.min));
}

std::int64_t integer_from_unit(const Knob& k, double u) {
  // Log integer knobs: snap in log space so that every cell has a fair share of the cube.
  const double v = std::round(numeric_from_unit(k, clamp01(u)));
  return static_cast<std::int64_t>(std::min(k.max, std::max(k.min, v)));
}

std::size_t category_from_unit(const Knob& k, double u) {
  const auto n = k.values.size();
  return std::min(n - 1, static_cast<std::size_t>(clamp01(u) * static_cast<double>(n)));
}

std::string format_real(double v) {
  // Shortest text that reads back as the same double, without exponent for ordinary magnitudes.
  std::string s = fmt::format("{:.6g}", v);
  return s;
}

}  // namespace

SearchSpace SearchSpace::parse(const std::string& yaml_text, const std::string& origin) {
  const Where where{origin};
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}: line {}: not valid YAML: {}", origin, e.mark.line + 1, e.msg));
  }
  if (!root.IsMap()) throw InputError(fmt::format("{}: not a search space (expected a mapping with 'knobs')", origin));
  check_keys(root, "", {"knobs", "objective", "trial", "config_files", "description"}, where);
  SearchSpace s;
  s.yaml_text_ = yaml_text;
  const YAML::Node knobs = root["knobs"];
  if (!knobs) where.fail("knobs", "missing (a space needs at least one knob)");
  if (!knobs.IsSequence() || knobs.size() == 0) where.fail("knobs", "must be a non-empty list");
  std::set<std::string> names;
  for (std::size_t i = 0; i < knobs.size(); ++i) {
    const std::string key = fmt::format("knobs[{}]", i);
    Knob k = parse_knob(knobs[i], key, where);
    if (!names.insert(k.name).second) where.fail(key + ".name", fmt::format("'{}' is defined twice", k.name));
    if (k.name == "trial_dir") where.fail(key + ".name", "'trial_dir' is reserved");
    s.knobs_.push_back(std::move(k));
  }
  if (const YAML::Node o = root["objective"]) {
    check_keys(o, "objective", {"kind", "direction", "step_range", "warmup_steps", "batch_size", "regex", "unit"}, where);
    const std::string kind = o["kind"] ? as_text(o["kind"], "objective.kind", where) : "throughput";
    if (kind == "throughput") s.objective_.kind = ObjectiveKind::Throughput;
    else if (kind == "step_time") s.objective_.kind = ObjectiveKind::StepTime;
    else if (kind == "regex") s.objective_.kind = ObjectiveKind::Regex;
    else where.fail("objective.kind", fmt::format("'{}' is not one of throughput, step_time, regex", kind));
    s.objective_.maximize = s.objective_.kind != ObjectiveKind::StepTime;
    s.objective_.unit = s.objective_.kind == ObjectiveKind::Throughput ? "samples/s"
                        : s.objective_.kind == ObjectiveKind::StepTime ? "ms" : "";
    if (o["direction"]) {
      const std::string d = as_text(o["direction"], "objective.direction", where);
      if (d == "maximize" || d == "maximise") s.objective_.maximize = true;
      else if (d == "minimize" || d == "minimise") s.objective_.maximize = false;
      else where.fail("objective.direction", fmt::format("'{}' is not maximize or minimize", d));
    }
    if (o["step_range"]) s.objective_.step_range = as_text(o["step_range"], "objective.step_range", where);
    if (o["warmup_steps"]) {
      const double w = as_number(o["warmup_steps"], "objective.warmup_steps", where);
      if (w < 0 || w != std::floor(w)) where.fail("objective.warmup_steps", "must be a whole number >= 0");
      s.objective_.warmup_steps = static_cast<int>(w);
    }
    if (o["batch_size"]) {
      s.objective_.batch_size = as_text(o["batch_size"], "objective.batch_size", where);
      s.objective_.batch_size_given = true;
      const bool numeric = !s.objective_.batch_size.empty() &&
                           s.objective_.batch_size.find_first_not_of("0123456789") == std::string::npos;
      if (!numeric && !names.count(s.objective_.batch_size))
        where.fail("objective.batch_size", fmt::format("'{}' is neither a number nor a knob name", s.objective_.batch_size));
    }
    if (o["regex"]) {
      s.objective_.regex = as_text(o["regex"], "objective.regex", where);
      try {
        std::regex re(s.objective_.regex);
        if (re.mark_count() < 1) where.fail("objective.regex", "needs one capture group for the value, e.g. 'took ([0-9.]+) s'");
      } catch (const std::regex_error& e) {
        where.fail("objective.regex", fmt::format("not a valid regular expression: {}", e.what()));
      }
    }
    if (s.objective_.kind == ObjectiveKind::Regex && s.objective_.regex.empty())
      where.fail("objective.regex", "missing (kind: regex needs a pattern with one capture group)");
    if (o["unit"]) s.objective_.unit = as_text(o["unit"], "objective.unit", where);
  }
  if (const YAML::Node t = root["trial"]) {
    check_keys(t, "trial", {"timeout_s", "early_stopping", "early_stop_fraction", "confirm_top", "confirm_repeats"}, where);
    if (t["timeout_s"]) {
      s.trial_.timeout_s = as_number(t["timeout_s"], "trial.timeout_s", where);
      if (!(s.trial_.timeout_s > 0)) where.fail("trial.timeout_s", "must be > 0 seconds");
    }
    if (t["early_stopping"]) s.trial_.early_stopping = as_bool(t["early_stopping"], "trial.early_stopping", where);
    if (t["early_stop_fraction"]) {
      s.trial_.early_stop_fraction = as_number(t["early_stop_fraction"], "trial.early_stop_fraction", where);
      if (!(s.trial_.early_stop_fraction > 0 && s.trial_.early_stop_fraction < 1))
        where.fail("trial.early_stop_fraction", "must be between 0 and 1");
    }
    for (const char* key : {"confirm_top", "confirm_repeats"}) {
      if (!t[key]) continue;
      const double v = as_number(t[key], fmt::format("trial.{}", key), where);
      if (v < 0 || v != std::floor(v) || v > 100) where.fail(fmt::format("trial.{}", key), "must be a whole number 0..100");
      (std::string(key) == "confirm_top" ? s.trial_.confirm_top : s.trial_.confirm_repeats) = static_cast<int>(v);
    }
  }
  if (const YAML::Node c = root["config_files"]) {
    if (!c.IsSequence()) where.fail("config_files", "must be a list of {path, contents}");
    for (std::size_t i = 0; i < c.size(); ++i) {
      const std::string key = fmt::format("config_files[{}]", i);
      check_keys(c[i], key, {"path", "contents"}, where);
      if (!c[i]["path"]) where.fail(key + ".path", "missing");
      if (!c[i]["contents"]) where.fail(key + ".contents", "missing");
      s.config_files_.push_back({as_text(c[i]["path"], key + ".path", where), as_text(c[i]["contents"], key + ".contents", where)});
    }
  }
  return s;
}

SearchSpace SearchSpace::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read the search space file", path));
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

int SearchSpace::feature_count() const {
  int n = 0;
  for (const auto& k : knobs_) n += k.feature_count();
  return n;
}

int SearchSpace::knob_index(const std::string& name) const {
  for (std::size_t i = 0; i < knobs_.size(); ++i)
    if (knobs_[i].name == name) return static_cast<int>(i);
  return -1;
}

Assignment SearchSpace::to_values(const std::vector<double>& unit) const {
  Assignment out;
  for (std::size_t i = 0; i < knobs_.size(); ++i) {
    const Knob& k = knobs_[i];
    const double u = clamp01(i < unit.size() ? unit[i] : 0.5);
    switch (k.type) {
      case KnobType::Real: out.push_back(format_real(numeric_from_unit(k, u))); break;
      case KnobType::Integer: out.push_back(std::to_string(integer_from_unit(k, u))); break;
      case KnobType::Categorical:
      case KnobType::Boolean: out.push_back(k.values[category_from_unit(k, u)]); break;
    }
  }
  return out;
}

std::vector<double> SearchSpace::to_unit(const Assignment& values) const {
  std::vector<double> u;
  for (std::size_t i = 0; i < knobs_.size(); ++i) {
    const Knob& k = knobs_[i];
    const std::string& v = values.at(i);
    if (k.type == KnobType::Real || k.type == KnobType::Integer) {
      u.push_back(unit_from_numeric(k, std::stod(v)));
    } else {
      const auto it = std::find(k.values.begin(), k.values.end(), v);
      const auto idx = static_cast<double>(it == k.values.end() ? 0 : it - k.values.begin());
      u.push_back((idx + 0.5) / static_cast<double>(k.values.size()));
    }
  }
  return u;
}

std::vector<double> SearchSpace::features(const std::vector<double>& unit) const {
  std::vector<double> f;
  f.reserve(static_cast<std::size_t>(feature_count()));
  for (std::size_t i = 0; i < knobs_.size(); ++i) {
    const Knob& k = knobs_[i];
    const double u = clamp01(i < unit.size() ? unit[i] : 0.5);
    switch (k.type) {
      case KnobType::Real: f.push_back(u); break;
      case KnobType::Integer: f.push_back(unit_from_numeric(k, static_cast<double>(integer_from_unit(k, u)))); break;
      case KnobType::Categorical:
      case KnobType::Boolean: {
        const std::size_t c = category_from_unit(k, u);
        // One-hot scaled by 1/sqrt(2): two different categories are at distance 1, as the ends of a real knob.
        for (std::size_t j = 0; j < k.values.size(); ++j) f.push_back(j == c ? M_SQRT1_2 : 0.0);
        break;
      }
    }
  }
  return f;
}

std::optional<std::string> SearchSpace::nearest_value(std::size_t knob, double v) const {
  const Knob& k = knobs_.at(knob);
  if (!std::isfinite(v)) return std::nullopt;
  const double clamped = std::clamp(v, k.min, k.max);
  switch (k.type) {
    case KnobType::Real: return format_real(clamped);
    case KnobType::Integer: return std::to_string(static_cast<std::int64_t>(std::round(clamped)));
    case KnobType::Categorical:
    case KnobType::Boolean: return std::nullopt;
  }
  return std::nullopt;
}

std::optional<Assignment> SearchSpace::defaults() const {
  Assignment a;
  for (const auto& k : knobs_) {
    if (!k.default_value) return std::nullopt;
    a.push_back(*k.default_value);
  }
  return a;
}

std::optional<std::int64_t> SearchSpace::discrete_size() const {
  constexpr std::int64_t kCap = std::int64_t{1} << 40;  // "more than anyone can run": the product stops growing here
  std::int64_t n = 1;
  for (const auto& k : knobs_) {
    if (k.type == KnobType::Real) return std::nullopt;
    const std::int64_t levels = k.level_count();
    if (levels > kCap / n) return kCap;
    n *= levels;
  }
  return n;
}

std::string Knob::shown(const std::string& value) const {
  if (unit.empty()) return value;
  if (unit != "bytes") return value + " " + unit;
  double v = 0;
  try {
    std::size_t used = 0;
    v = std::stod(value, &used);
    if (used != value.size() || !std::isfinite(v)) return value;
  } catch (const std::exception&) {
    return value;  // not a number (an edited study): shown as it is
  }
  return run::format_bytes(v);
}

std::string SearchSpace::describe(const Assignment& values, std::string_view separator) const {
  std::string out;
  for (std::size_t i = 0; i < knobs_.size() && i < values.size(); ++i)
    out += fmt::format("{}{}={}", out.empty() ? "" : separator, knobs_[i].name, knobs_[i].shown(values[i]));
  return out;
}

std::map<std::string, std::string> SearchSpace::named(const Assignment& values) const {
  std::map<std::string, std::string> m;
  for (std::size_t i = 0; i < knobs_.size() && i < values.size(); ++i) m[knobs_[i].name] = values[i];
  return m;
}

SearchSpace SearchSpace::with_knob_fixed(const std::string& name) const {
  const int k = knob_index(name);
  if (k < 0) throw InputError(fmt::format("space: no knob '{}' to fix", name));
  const Knob& knob = knobs_[static_cast<std::size_t>(k)];
  if (!knob.default_value)
    throw InputError(fmt::format("space: knob {} has no default to keep it at (add default: to the space)", name));
  SearchSpace out = *this;
  Knob& fixed = out.knobs_[static_cast<std::size_t>(k)];
  fixed.type = KnobType::Categorical;
  fixed.scale = KnobScale::Linear;
  fixed.values = {*knob.default_value};
  return out;
}

bool has_control_character(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

std::string substitute(const std::string& text, const std::map<std::string, std::string>& variables) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (text.compare(i, 2, "{{") == 0) {
      out += '{';
      i += 2;
      continue;
    }
    if (text[i] == '{') {
      const auto close = text.find('}', i + 1);
      if (close != std::string::npos) {
        const auto it = variables.find(text.substr(i + 1, close - i - 1));
        if (it != variables.end()) {
          out += it->second;
          i = close + 1;
          continue;
        }
      }
    }
    out += text[i++];
  }
  return out;
}

}  // namespace collscope::autotuner
