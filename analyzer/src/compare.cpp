// compare BASE NEW: per-step samples, Mann–Whitney U (normal approximation with tie correction) and effect size.
#include <collscope/analyzer/markup.hpp>
#include <collscope/analyzer/compare.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>


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

MetricComparison compare_samples(std::string name, std::string unit, bool higher_is_better, std::vector<double> base,
                                 std::vector<double> next, double max_regression, bool gated) {
  MetricComparison m;
  m.name = std::move(name);
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

std::set<std::string> finding_keys(const Analysis& a) {
  std::set<std::string> out;
  for (const auto& f : a.findings) {
    std::string k(finding_kind_name(f.kind));
    if (!f.ranks.empty() && f.kind == FindingKind::Straggler) k += fmt::format(" rank {}", fmt::join(f.ranks, ","));
    if (!f.comm_name.empty()) k += " on " + f.comm_name;
    out.insert(k);
  }
  return out;
}


std::string metric_line(const MetricComparison& m) {
  if (!m.no_data.empty()) return fmt::format("{}: NO DATA: {}", m.name, m.no_data);
  return fmt::format("{}: {:.3f} -> {:.3f} {} ({:+.1f} % {}), p = {:.3g}, effect size {:+.2f}, n = {}/{}{}", m.name,
                     m.base_median, m.new_median, m.unit, 100 * m.change, m.change > 0 ? "worse" : "better", m.p_value,
                     m.effect_size, m.base_samples, m.new_samples, m.regression ? (m.gated ? "  REGRESSION" : "  (worse, not gated)") : "");
}

}  // namespace

Comparison compare_analyses(const Analysis& base, const Analysis& next, double max_regression) {
  Comparison c;
  c.base_dir = base.run.dir;
  c.new_dir = next.run.dir;
  c.max_regression = max_regression;
  auto per_step = [](const Analysis& a, auto field) {
    std::vector<double> v;
    for (const auto& s : a.steps.steps) v.push_back(field(s) / 1e6);
    return v;
  };
  // A gated metric one run has no data for fails the gate: "no regression" on nothing would pass a broken run.
  auto missing = [](std::string name, std::string why) {
    MetricComparison m;
    m.name = std::move(name);
    m.unit = "ms";
    m.gated = true;
    m.no_data = std::move(why);
    return m;
  };
  const std::size_t base_steps = base.steps.steps.size(), new_steps = next.steps.steps.size();
  if (base_steps > 0 && new_steps > 0) {
    c.metrics.push_back(compare_samples("step_time", "ms", false, per_step(base, [](const Step& s) { return s.duration_ns; }),
                                        per_step(next, [](const Step& s) { return s.duration_ns; }), max_regression, true));
    c.metrics.push_back(compare_samples("comm_time", "ms", false, per_step(base, [](const Step& s) { return s.comm_ns; }),
                                        per_step(next, [](const Step& s) { return s.comm_ns; }), max_regression, false));
  } else if (base_steps > 0 || new_steps > 0) {
    c.metrics.push_back(missing("step_time", base_steps > 0 ? fmt::format("the new run has no steps (the base run has {})", base_steps)
                                                            : fmt::format("the base run has no steps (the new run has {})", new_steps)));
  } else if (!(base.wall_ns > 0) || !(next.wall_ns > 0)) {
    // Runs without steps (benchmarks) are compared on wall time, which needs collectives matched across ranks.
    c.metrics.push_back(missing("wall_time", fmt::format("the {} run has no collectives matched across ranks",
                                                         base.wall_ns > 0 ? "new" : "base")));
  } else {
    c.metrics.push_back(compare_samples("wall_time", "ms", false, {base.wall_ns / 1e6}, {next.wall_ns / 1e6}, max_regression, true));
  }
  for (const auto& bs : base.op_sizes)
    for (const auto& ns : next.op_sizes)
      if (bs.op == ns.op && bs.size_bucket_bytes == ns.size_bucket_bytes && bs.instances >= 3 && ns.instances >= 3) {
        std::string size = bs.size_bucket_bytes >= (1 << 20) ? fmt::format("{}MiB", bs.size_bucket_bytes >> 20)
                           : bs.size_bucket_bytes >= (1 << 10) ? fmt::format("{}KiB", bs.size_bucket_bytes >> 10)
                                                               : fmt::format("{}B", bs.size_bucket_bytes);
        c.metrics.push_back(compare_samples(fmt::format("busbw {} {}", store::op_name(bs.op), size), "GB/s", true,
                                            bs.busbw_samples, ns.busbw_samples, max_regression, false));
      }
  const auto before = finding_keys(base), after = finding_keys(next);
  for (const auto& k : after)
    if (!before.count(k)) c.findings_new.push_back(k);
  for (const auto& k : before)
    if (!after.count(k)) c.findings_gone.push_back(k);
  for (const auto& m : c.metrics) {
    if (m.gated && m.regression) c.regression = true;
    if (m.gated && !m.no_data.empty() && c.no_data.empty()) c.no_data = m.name + ": " + m.no_data;
  }
  return c;
}

std::string comparison_text(const Comparison& c) {
  std::string out = fmt::format("== collscope compare ==\nbase: {}\nnew:  {}\ngate: {:.1f} % (Mann–Whitney U over steps, p < {}, effect size >= {})\n\n",
                                c.base_dir, c.new_dir, 100 * c.max_regression, kAlpha, kMinEffectSize);
  for (const auto& m : c.metrics) out += metric_line(m) + "\n";
  for (const auto& f : c.findings_new) out += "new finding: " + f + "\n";
  for (const auto& f : c.findings_gone) out += "gone: " + f + "\n";
  out += c.regression ? "\nverdict: REGRESSION\n"
         : !c.no_data.empty() ? fmt::format("\nverdict: NO DATA, the gate fails ({})\n", c.no_data)
                              : "\nverdict: no regression\n";
  return out;
}

std::string comparison_markdown(const Comparison& c) {
  const char* verdict = c.regression ? "regression" : !c.no_data.empty() ? "no data, gate failed" : "no regression";
  std::string out = fmt::format("## collscope compare: {}\n\n{} → {}, gate {:.1f} %\n\n| metric | base | new | change | p | effect | verdict |\n|---|---|---|---|---|---|---|\n",
                                verdict, markdown_code(c.base_dir), markdown_code(c.new_dir), 100 * c.max_regression);
  for (const auto& m : c.metrics) {
    if (!m.no_data.empty()) {
      out += fmt::format("| {} | - | - | - | - | - | **no data**: {} |\n", markdown_text(m.name), markdown_text(m.no_data));
      continue;
    }
    out += fmt::format("| {} | {:.3f} {} | {:.3f} {} | {:+.1f} % | {:.3g} | {:+.2f} | {} |\n", markdown_text(m.name), m.base_median,
                       m.unit, m.new_median, m.unit, 100 * m.change, m.p_value, m.effect_size,
                       m.regression ? (m.gated ? "**regression**" : "worse") : "ok");
  }
  for (const auto& f : c.findings_new) out += "\n- new finding: " + markdown_text(f);
  for (const auto& f : c.findings_gone) out += "\n- gone: " + markdown_text(f);
  return out + "\n";
}

nlohmann::json comparison_json(const Comparison& c) {
  nlohmann::json j;
  j["schema"] = "collscope.comparison/1";
  j["base"] = c.base_dir;
  j["new"] = c.new_dir;
  j["max_regression"] = c.max_regression;
  j["regression"] = c.regression;
  j["no_data"] = c.no_data.empty() ? nlohmann::json() : nlohmann::json(c.no_data);
  j["gate_failed"] = c.gate_failed();
  j["metrics"] = nlohmann::json::array();
  for (const auto& m : c.metrics)
    j["metrics"].push_back({{"name", m.name}, {"unit", m.unit}, {"higher_is_better", m.higher_is_better},
                            {"base_median", m.base_median}, {"new_median", m.new_median}, {"change", m.change},
                            {"p_value", m.p_value}, {"effect_size", m.effect_size}, {"base_samples", m.base_samples},
                            {"new_samples", m.new_samples}, {"gated", m.gated}, {"regression", m.regression},
                            {"no_data", m.no_data.empty() ? nlohmann::json() : nlohmann::json(m.no_data)}});
  j["findings_new"] = c.findings_new;
  j["findings_gone"] = c.findings_gone;
  return j;
}

std::string comparison_junit(const Comparison& c) {
  int failures = 0;
  for (const auto& m : c.metrics) failures += m.gated && (m.regression || !m.no_data.empty());
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"collscope compare\" tests=\"{0}\" failures=\"{1}\">\n<testsuite name=\"collscope.compare\" tests=\"{0}\" failures=\"{1}\" errors=\"0\" skipped=\"0\">\n",
                     c.metrics.size(), failures);
  for (const auto& m : c.metrics) {
    out += fmt::format("  <testcase classname=\"collscope.compare\" name=\"{}\" time=\"0\">\n", xml_escape(m.name));
    if (m.gated && !m.no_data.empty())
      out += fmt::format("    <failure message=\"{}\" type=\"no-data\">{}</failure>\n", xml_escape(m.name + ": no data"),
                         xml_escape(metric_line(m)));
    else if (m.gated && m.regression)
      out += fmt::format("    <failure message=\"{}\" type=\"regression\">{}</failure>\n",
                         xml_escape(fmt::format("{} {:+.1f} % (gate {:.1f} %)", m.name, 100 * m.change, 100 * c.max_regression)),
                         xml_escape(metric_line(m)));
    out += fmt::format("    <system-out>{}</system-out>\n  </testcase>\n", xml_escape(metric_line(m)));
  }
  std::string notes;
  for (const auto& f : c.findings_new) notes += "new finding: " + f + "\n";
  for (const auto& f : c.findings_gone) notes += "gone: " + f + "\n";
  out += fmt::format("  <system-out>{}</system-out>\n</testsuite>\n</testsuites>\n", xml_escape("base " + c.base_dir + "\nnew " + c.new_dir + "\n" + notes));
  return out;
}

}  // namespace collscope::analyzer
