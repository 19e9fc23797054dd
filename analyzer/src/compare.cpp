// compare BASE NEW: per-step samples, Mann–Whitney U (normal approximation with tie correction) and effect size.
#include <collscope/analyzer/markup.hpp>
#include <collscope/analyzer/compare.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <map>


namespace collscope::analyzer {

MannWhitneyResult mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  MannWhitneyResult r;
  const double n1 = double(a.size()), n2 = double(b.size());
  if (a.empty() || b.empty()) return r;
  // Ranks over the pooled sample; ties share the mean rank.
  std::vector<std::pair<double, int>> pooled;
  for (double v : a) pooled.emplace_back(v, 0);
  for (double v : b) pooled.emplace_back(v, 1);
  std::sort(pooled.begin(), pooled.end());
  double rank_sum_b = 0, tie_term = 0;
  for (std::size_t i = 0; i < pooled.size();) {
    std::size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    const double mean_rank = (double(i) + double(j) + 1) / 2;  // ranks are 1-based
    const double t = double(j - i);
    tie_term += t * t * t - t;
    for (std::size_t k = i; k < j; ++k)
      if (pooled[k].second == 1) rank_sum_b += mean_rank;
    i = j;
  }
  r.u = rank_sum_b - n2 * (n2 + 1) / 2;  // pairs where b beats a (ties count half)
  const double n = n1 + n2;
  const double sigma = std::sqrt(n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))));
  const double mean = n1 * n2 / 2;
  if (sigma > 0) {
    const double z = (r.u - mean - 0.5) / sigma;  // continuity correction
    r.p_greater = 0.5 * std::erfc(z / std::sqrt(2.0));
  } else {
    r.p_greater = r.u > mean ? 0.0 : 1.0;
  }
  r.effect_size = 2 * r.u / (n1 * n2) - 1;
  return r;
}

namespace {

constexpr double kAlpha = 0.01;          // significance for a regression
constexpr double kMinEffectSize = 0.3;   // rank-biserial: at least a moderate shift, not a tail

MetricComparison compare_samples(std::string name, std::string label, std::string unit, bool higher_is_better, std::vector<double> base,
                                 std::vector<double> next, double max_regression, bool gated) {
  MetricComparison m;
  m.name = std::move(name);
  m.label = std::move(label);
  m.unit = std::move(unit);
  m.higher_is_better = higher_is_better;
  m.base_samples = static_cast<int>(base.size());
  m.new_samples = static_cast<int>(next.size());
  m.base_median = median_of(base);
  m.new_median = median_of(next);
  m.gated = gated;
  if (base.empty() || next.empty() || m.base_median == 0) return m;
  m.change = higher_is_better ? m.base_median / std::max(1e-12, m.new_median) - 1 : m.new_median / m.base_median - 1;
  if (higher_is_better) {
    // "worse" = lower: compare negated samples.
    for (auto& v : base) v = -v;
    for (auto& v : next) v = -v;
  }
  const auto mw = mann_whitney_u(base, next);
  m.p_value = mw.p_greater;
  m.effect_size = mw.effect_size;
  if (base.size() >= 3 && next.size() >= 3)
    m.regression = m.p_value < kAlpha && m.effect_size >= kMinEffectSize && m.change > max_regression;
  else
    m.regression = m.change > max_regression;  // too few samples for statistics: the medians decide
  return m;
}

std::map<std::string, FindingChange> finding_keys(const RunResults& a) {
  std::map<std::string, FindingChange> out;
  for (const auto& f : a.findings) {
    std::string k(finding_kind_name(f.kind));
    if (!f.ranks.empty() && (f.kind == FindingKind::Straggler || f.kind == FindingKind::SlowSteps))
      k += fmt::format(" rank {}", fmt::join(f.ranks, ","));
    if (!f.comm_name.empty()) k += " on " + f.comm_name;
    auto [it, added] = out.try_emplace(k, FindingChange{k, f.kind, f.severity, f.title});
    if (!added && f.severity > it->second.severity) it->second = {k, f.kind, f.severity, f.title};
  }
  return out;
}

// Values for people: durations and bandwidths as everywhere else, other units with 3 significant digits.
std::string value_text(double v, const std::string& unit) {
  if (unit == "ms") return format_duration(v * 1e6);
  if (unit == "GB/s") return format_bandwidth(v);
  return fmt::format("{:.3g} {}", v, unit);
}

// "+16.2 % worse", "-92.1 % worse" for a bandwidth that fell, "no change" below 0.05 %.
std::string change_text(const MetricComparison& m) {
  const double r = m.relative_change();
  if (std::fabs(r) < 5e-4 || m.base_samples == 0 || m.new_samples == 0) return "no change";
  return fmt::format("{:+.1f} % {}", 100 * r, m.change > 0 ? "worse" : "better");
}

std::string p_text(double p) { return p < 0.001 ? "p < 0.001" : fmt::format("p = {:.3f}", p); }

std::string metric_verdict(const MetricComparison& m) {
  if (!m.regression) return "ok";
  return m.gated ? "REGRESSION" : "worse (not gated)";
}

std::string metric_line(const MetricComparison& m) {
  if (!m.no_data.empty()) return fmt::format("{}: NO DATA: {}", m.label, m.no_data);
  return fmt::format("{}: {} -> {} {}, {}, effect size {:+.2f}, n = {}/{}{}", m.label, value_text(m.base_median, m.unit),
                     value_text(m.new_median, m.unit), change_text(m), p_text(m.p_value), m.effect_size, m.base_samples,
                     m.new_samples, m.regression ? "  " + metric_verdict(m) : "");
}

// The sentence a reader needs first: what decided the verdict.
std::string verdict_text(const Comparison& c, bool markdown) {
  const char* strong = markdown ? "**" : "";
  const char* arrow = markdown ? "→" : "->";
  if (!c.regression && !c.no_data.empty())
    return fmt::format("{}No data{}: {}; the gate fails.", strong, strong, markdown ? markdown_text(c.no_data) : c.no_data);
  std::string out;
  const MetricComparison* gated = nullptr;
  for (const auto& m : c.metrics)
    if (m.gated && (!gated || (m.regression && !gated->regression))) gated = &m;
  const auto failing = c.failing_findings();
  out += c.regression ? fmt::format("{}Regression{}", strong, strong) : fmt::format("{}No regression{}", strong, strong);
  if (gated)
    out += fmt::format(": {} {} {} {} ({}, {}), {} the {:.1f} % gate", gated->label, value_text(gated->base_median, gated->unit), arrow,
                       value_text(gated->new_median, gated->unit), change_text(*gated), p_text(gated->p_value),
                       gated->regression ? "beyond" : "within", 100 * c.max_regression);
  if (!failing.empty()) {
    std::vector<std::string> keys;
    for (const auto* f : failing) keys.push_back(markdown ? markdown_text(f->key) : f->key);
    out += fmt::format("; new finding{}: {}", failing.size() == 1 ? "" : "s", fmt::join(keys, ", "));
  }
  return out + ".";
}

}  // namespace

std::vector<const FindingChange*> Comparison::failing_findings() const {
  std::vector<const FindingChange*> out;
  if (!gate_new_findings) return out;
  // CPU contention is the machine's state while the run ran (other processes, a shared core), not something the
  // change under test did: a busy CI runner would fail any comparison. Listed, never gated.
  for (const auto& f : findings_new)
    if (f.severity >= Severity::Warning && f.kind != FindingKind::CpuContention) out.push_back(&f);
  return out;
}

Comparison compare_analyses(const Analysis& base, const Analysis& next, double max_regression, bool gate_new_findings) {
  return compare_results(base, base.run.dir, next, next.run.dir, max_regression, gate_new_findings);
}

Comparison compare_results(const RunResults& base, const std::string& base_dir, const RunResults& next,
                           const std::string& new_dir, double max_regression, bool gate_new_findings) {
  Comparison c;
  c.base_dir = base_dir;
  c.new_dir = new_dir;
  c.max_regression = max_regression;
  c.gate_new_findings = gate_new_findings;
  auto per_step = [](const RunResults& a, auto field) {
    std::vector<double> v;
    for (const auto& s : a.steps.steps) v.push_back(field(s) / 1e6);
    return v;
  };
  // A gated metric one run has no data for fails the gate: "no regression" on nothing would pass a broken run.
  auto missing = [](std::string name, std::string label, std::string why) {
    MetricComparison m;
    m.name = std::move(name);
    m.label = std::move(label);
    m.unit = "ms";
    m.gated = true;
    m.no_data = std::move(why);
    return m;
  };
  const std::size_t base_steps = base.steps.steps.size(), new_steps = next.steps.steps.size();
  if (base_steps > 0 && new_steps > 0) {
    c.metrics.push_back(compare_samples("step_time", "step time", "ms", false, per_step(base, [](const Step& s) { return s.duration_ns; }),
                                        per_step(next, [](const Step& s) { return s.duration_ns; }), max_regression, true));
    c.metrics.push_back(compare_samples("comm_time", "time in collectives", "ms", false, per_step(base, [](const Step& s) { return s.comm_ns; }),
                                        per_step(next, [](const Step& s) { return s.comm_ns; }), max_regression, false));
  } else if (base_steps > 0 || new_steps > 0) {
    c.metrics.push_back(missing("step_time", "step time", base_steps > 0 ? fmt::format("the new run has no steps (the base run has {})", base_steps)
                                                            : fmt::format("the base run has no steps (the new run has {})", new_steps)));
  } else if (!(base.wall_ns > 0) || !(next.wall_ns > 0)) {
    // Runs without steps (benchmarks) are compared on wall time, which needs collectives matched across ranks.
    c.metrics.push_back(missing("wall_time", "wall time", fmt::format("the {} run has no collectives matched across ranks",
                                                         base.wall_ns > 0 ? "new" : "base")));
  } else {
    c.metrics.push_back(compare_samples("wall_time", "wall time", "ms", false, {base.wall_ns / 1e6}, {next.wall_ns / 1e6}, max_regression, true));
  }
  // Bandwidth means something only where the transfer, not the latency, takes the time: the same lower bound as
  // the low-bandwidth finding's.
  const std::int64_t min_bytes = base.options.thresholds.bandwidth_min_bytes;
  for (const auto& bs : base.op_sizes)
    for (const auto& ns : next.op_sizes)
      if (bs.op == ns.op && bs.size_bucket_bytes == ns.size_bucket_bytes && bs.instances >= 3 && ns.instances >= 3 &&
          bs.size_bucket_bytes >= min_bytes) {
        const double b = double(bs.size_bucket_bytes);
        c.metrics.push_back(compare_samples(fmt::format("busbw:{}:{}", store::op_name(bs.op), bs.size_bucket_bytes),
                                            fmt::format("busbw {} {}..{}", store::op_name(bs.op), format_bytes(b), format_bytes(2 * b)),
                                            "GB/s", true, bs.busbw_samples, ns.busbw_samples, max_regression, false));
      }
  const auto before = finding_keys(base), after = finding_keys(next);
  for (const auto& [k, f] : after)
    if (!before.count(k)) c.findings_new.push_back(f);
  for (const auto& [k, f] : before)
    if (!after.count(k)) c.findings_gone.push_back(f);
  for (const auto& m : c.metrics) {
    if (m.gated && m.regression) c.regression = true;
    if (m.gated && !m.no_data.empty() && c.no_data.empty()) c.no_data = m.label + ": " + m.no_data;
  }
  if (!c.failing_findings().empty()) c.regression = true;
  return c;
}

std::string comparison_text(const Comparison& c) {
  std::string out = fmt::format("== collscope compare ==\n{}\nbase: {}\nnew:  {}\n", wrap_text(verdict_text(c, false), 100, 0),
                                c.base_dir, c.new_dir);
  out += wrap_text(fmt::format("gate: median step time slower by more than {:.1f} %, significant (one-sided Mann-Whitney U "
                               "over steps, p < {}, effect size >= {}){}",
                               100 * c.max_regression, kAlpha, kMinEffectSize,
                               c.gate_new_findings ? "; or a new finding (warning or critical)" : ""),
                   100, 6) +
         "\n\n";
  for (const auto& m : c.metrics) out += wrap_text(metric_line(m), 100, 4) + "\n";
  for (const auto& f : c.findings_new)
    out += wrap_text(fmt::format("new finding ({}): {}: {}", severity_name(f.severity), f.key, f.title), 100, 4) + "\n";
  for (const auto& f : c.findings_gone) out += wrap_text(fmt::format("gone: {}: {}", f.key, f.title), 100, 4) + "\n";
  out += c.regression ? "\nverdict: REGRESSION\n"
         : !c.no_data.empty() ? fmt::format("\nverdict: NO DATA, the gate fails ({})\n", c.no_data)
                              : "\nverdict: no regression\n";
  return out;
}

std::string comparison_markdown(const Comparison& c) {
  std::string out = fmt::format("### collscope compare: {}\n\n{}\n\n{} → {}\n\n", c.regression ? "regression" : !c.no_data.empty() ? "no data, gate failed" : "no regression",
                                verdict_text(c, true), markdown_code(c.base_dir), markdown_code(c.new_dir));
  out += fmt::format("<details><summary>Metrics ({})</summary>\n\n| metric | base | new | change | significance | effect size | verdict |\n"
                     "|---|---:|---:|---|---|---:|---|\n",
                     c.metrics.size());
  for (const auto& m : c.metrics)
    if (!m.no_data.empty())
      out += fmt::format("| {} | - | - | - | - | - | **no data**: {} |\n", markdown_text(m.label), markdown_text(m.no_data));
    else
      out += fmt::format("| {} | {} | {} | {} | {} | {:+.2f} | {} |\n", markdown_text(m.label), value_text(m.base_median, m.unit),
                       value_text(m.new_median, m.unit), change_text(m), p_text(m.p_value), m.effect_size,
                       m.regression && m.gated ? "**regression**" : metric_verdict(m));
  out += fmt::format("\nGate: the median step time slower by more than {:.1f} % with p < {} and effect size ≥ {} (one-sided "
                     "Mann–Whitney U over steps){}. Busbw (bus bandwidth, as nccl-tests defines it) is compared for "
                     "messages of {} and more, reported but not gated.\n\n</details>\n",
                     100 * c.max_regression, kAlpha, kMinEffectSize,
                     c.gate_new_findings ? ", or a new finding of severity warning or critical" : "",
                     format_bytes(double(DetectorThresholds{}.bandwidth_min_bytes)));
  if (!c.findings_new.empty() || !c.findings_gone.empty()) {
    out += fmt::format("\n<details><summary>Findings: {} new, {} gone</summary>\n\n", c.findings_new.size(), c.findings_gone.size());
    for (const auto& f : c.findings_new) out += fmt::format("- new ({}): {}: {}\n", severity_name(f.severity), markdown_text(f.key), markdown_text(f.title));
    for (const auto& f : c.findings_gone) out += fmt::format("- gone: {}: {}\n", markdown_text(f.key), markdown_text(f.title));
    out += "\n</details>\n";
  }
  return out;
}

nlohmann::json comparison_json(const Comparison& c) {
  nlohmann::json j;
  j["schema"] = "collscope.comparison/1";
  j["base"] = c.base_dir;
  j["new"] = c.new_dir;
  j["max_regression"] = c.max_regression;
  j["gate_new_findings"] = c.gate_new_findings;
  j["regression"] = c.regression;
  j["no_data"] = c.no_data.empty() ? nlohmann::json() : nlohmann::json(c.no_data);
  j["gate_failed"] = c.gate_failed();
  j["metrics"] = nlohmann::json::array();
  for (const auto& m : c.metrics)
    j["metrics"].push_back({{"name", m.name}, {"label", m.label}, {"unit", m.unit}, {"higher_is_better", m.higher_is_better},
                            {"base_median", m.base_median}, {"new_median", m.new_median}, {"change", m.change},
                            {"relative_change", m.relative_change()}, {"p_value", m.p_value}, {"effect_size", m.effect_size},
                            {"base_samples", m.base_samples}, {"new_samples", m.new_samples}, {"gated", m.gated},
                            {"regression", m.regression},
                            {"no_data", m.no_data.empty() ? nlohmann::json() : nlohmann::json(m.no_data)}});
  auto findings = [](const std::vector<FindingChange>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& f : v) a.push_back(f.key);
    return a;
  };
  j["findings_new"] = findings(c.findings_new);
  j["findings_gone"] = findings(c.findings_gone);
  return j;
}

std::string comparison_junit(const Comparison& c) {
  struct Case {
    std::string name, failure, out;
    std::string type = "regression";  // the failure's type: "regression", or "no-data" for a gated metric without data
  };
  std::vector<Case> cases;
  std::string busbw;
  for (const auto& m : c.metrics) {
    if (m.name.starts_with("busbw:")) {  // one case for every size: which sizes exist varies from run to run
      busbw += metric_line(m) + "\n";
      continue;
    }
    cases.push_back({m.label,
                     m.gated && !m.no_data.empty() ? fmt::format("{}: no data: {}", m.label, m.no_data)
                     : m.gated && m.regression ? fmt::format("{} {} (gate {:.1f} %)", m.label, change_text(m), 100 * c.max_regression) : "",
                     metric_line(m), m.gated && !m.no_data.empty() ? "no-data" : "regression"});
  }
  cases.push_back({"busbw", "", busbw.empty() ? "no message size of both runs large enough to compare" : busbw});
  const auto failing = c.failing_findings();
  for (int k = 0;; ++k) {  // FindingKind is contiguous from 0; finding_kind_name says "unknown" past the last
    const auto kind = static_cast<FindingKind>(k);
    const std::string name(finding_kind_name(kind));
    if (name == "unknown") break;
    Case t{"finding " + name, "", ""};
    for (const auto& f : c.findings_new) {
      if (f.kind != kind) continue;
      const bool fails = std::find(failing.begin(), failing.end(), &f) != failing.end();
      if (fails && t.failure.empty()) t.failure = fmt::format("new finding: {} ({}): {}", f.key, severity_name(f.severity), f.title);
      t.out += fmt::format("new{}: {}: {}\n", fails ? "" : " (not gated)", f.key, f.title);
    }
    for (const auto& f : c.findings_gone)
      if (f.kind == kind) t.out += fmt::format("gone: {}: {}\n", f.key, f.title);
    cases.push_back(std::move(t));
  }
  int failures = 0;
  for (const auto& t : cases) failures += !t.failure.empty();
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"collscope compare\" tests=\"{0}\" failures=\"{1}\">\n<testsuite name=\"collscope.compare\" "
                     "tests=\"{0}\" failures=\"{1}\" errors=\"0\" skipped=\"0\">\n",
                     cases.size(), failures);
  for (const auto& t : cases) {
    out += fmt::format("  <testcase classname=\"collscope.compare\" name=\"{}\" time=\"0\">\n", xml_escape(t.name));
    if (!t.failure.empty())
      out += fmt::format("    <failure message=\"{}\" type=\"{}\">{}</failure>\n", xml_escape(t.failure), t.type, xml_escape(t.out));
    if (!t.out.empty()) out += fmt::format("    <system-out>{}</system-out>\n", xml_escape(t.out));
    out += "  </testcase>\n";
  }
  out += fmt::format("  <system-out>{}</system-out>\n</testsuite>\n</testsuites>\n",
                     xml_escape(fmt::format("base {}\nnew {}\n{}\n", c.base_dir, c.new_dir, verdict_text(c, false))));
  return out;
}

}  // namespace collscope::analyzer
