// Study report: convergence and per-knob effect charts (the analyzer's SVG chart library) and one HTML page.
#include <collscope/analyzer/markup.hpp>
#include <collscope/analyzer/svg_chart.hpp>
#include <collscope/autotuner/report.hpp>
#include <collscope/autotuner/strategy.hpp>
#include <collscope/autotuner/tuner.hpp>
#include <collscope/run/format.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <regex>

namespace collscope::autotuner {
using analyzer::xml_escape;
namespace fs = std::filesystem;
namespace chart = analyzer::chart;

namespace {

namespace palette = run::palette;

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::trunc);
  out << text;
  if (!out) throw Error(fmt::format("{}: cannot write the report", p.string()));
}

bool numeric(const Knob& k) { return k.type == KnobType::Real || k.type == KnobType::Integer; }

std::string score_text(double v, const Objective& o) {
  return fmt::format("{}{}{}", chart::plain_number(v, std::fabs(v) / 1000), o.unit.empty() ? "" : " ", o.unit);
}

// Best so far against the trial number, every trial's score, and the trials that gave none.
std::string convergence_chart(const SearchSpace& space, const std::vector<TrialRecord>& trials) {
  const Objective& o = space.objective();
  chart::XYChart c;
  c.title = "Convergence: best score so far";
  int last = 1;
  for (const auto& t : trials) last = std::max(last, t.id);
  c.x = {.label = "trial", .integer = true, .min = 0.5, .max = last + 0.5};
  c.y = {.label = o.unit.empty() ? "objective" : fmt::format("objective ({})", o.unit)};
  chart::Series scored{.name = "trial score", .colour = palette::kTrial, .mark = chart::Mark::Points};
  chart::Series confirm{.name = "confirmation run", .colour = palette::kBest, .mark = chart::Mark::Rings};
  chart::Series best_line{.name = o.maximize ? "best setting so far (highest mean)" : "best setting so far (lowest mean)",
                          .colour = palette::kBest,
                          .mark = chart::Mark::Line};
  chart::Series failed{.name = "failed (no score; drawn at the worst)", .colour = palette::kCritical, .mark = chart::Mark::Points};
  // The curve is the best setting's mean, the figure the header and `tune show` give, not the best single run
  // (a lucky confirmation run would put the curve above the best the study reports).
  const auto best_after = best_mean_after_each(space, trials);
  std::optional<double> worst;
  for (const auto& t : trials)
    if (t.score) worst = !worst ? *t.score : (o.maximize ? std::min(*worst, *t.score) : std::max(*worst, *t.score));
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const TrialRecord& t = trials[i];
    const std::optional<double>& best = best_after[i];
    if (!is_finished(t.status)) continue;
    const double x = t.id;
    if (keeps_score(t.status) && t.score) {
      chart::Point p{.x = x, .y = *t.score,
                     .tip = fmt::format("trial {} ({}{}): {}; {}", t.id, t.kind, t.status == TrialStatus::Stopped ? ", stopped early" : "",
                                        score_text(*t.score, o), space.describe(t.values, ", "))};
      (t.kind == "confirm" ? confirm : scored).points.push_back(p);
    } else if (worst) {
      failed.points.push_back({.x = x, .y = *worst,
                               .tip = fmt::format("trial {} {}: {}; {}", t.id, trial_status_name(t.status), t.reason.empty() ? "no score" : t.reason,
                                                  space.describe(t.values, ", "))});
    }
    if (best) best_line.points.push_back({.x = x, .y = *best, .tip = fmt::format("after trial {}: {}", t.id, score_text(*best, o))});
  }
  for (auto* s : {&best_line, &scored, &confirm, &failed})
    if (!s->points.empty()) c.series.push_back(*s);
  return chart::render(c);
}

}  // namespace

KnobEffect knob_effect(const SearchSpace& space, const std::vector<TrialRecord>& trials, std::size_t knob, int points) {
  KnobEffect out;
  GaussianProcess gp(feature_groups(space));
  const auto best = best_settings(space, trials);
  if (!best || knob >= space.dimensions() || !fit_model(space, observations(space, trials), 7, gp)) return out;
  const double sign = space.objective().maximize ? 1.0 : -1.0;  // the GP models the oriented objective
  const Knob& k = space.knobs()[knob];
  std::vector<double> base = space.to_unit(best->values);
  std::vector<double> us;
  if (numeric(k) && (k.type == KnobType::Real || k.level_count() > points)) {
    for (int i = 0; i < points; ++i) us.push_back(points == 1 ? 0.5 : double(i) / (points - 1));
  } else {  // every level: each category, or each value of a small integer range
    for (std::int64_t j = 0; j < k.level_count(); ++j) us.push_back((double(j) + 0.5) / double(k.level_count()));
  }
  for (double u : us) {
    base[knob] = u;
    const auto f = space.features(base);
    double mu = 0, sd = 0;
    gp.predict(Eigen::Map<const Eigen::VectorXd>(f.data(), static_cast<Eigen::Index>(f.size())), mu, sd);
    const std::string value = space.to_values(base)[knob];
    if (!out.values.empty() && out.values.back() == value) continue;  // integers snap: one point per value
    out.values.push_back(value);
    out.mean.push_back(sign * mu);
    out.sd.push_back(sd);
  }
  out.best_value = best->values[knob];
  return out;
}

namespace {

// The GP's view of one knob: its mean and a 95 % band (±2 sd) with the other knobs at the best settings, and the
// trials' scores at their own settings of that knob.
std::string effect_chart(const SearchSpace& space, const std::vector<TrialRecord>& trials, std::size_t knob) {
  const Knob& k = space.knobs()[knob];
  const Objective& o = space.objective();
  const KnobEffect e = knob_effect(space, trials, knob);
  chart::XYChart c;
  c.title = fmt::format("Effect of {}", k.name);
  c.y = {.label = o.unit.empty() ? "objective" : fmt::format("objective ({})", o.unit)};
  const bool categories = !numeric(k);
  auto x_of = [&](const std::string& v) -> double {
    if (!categories) return std::stod(v);
    const auto it = std::find(k.values.begin(), k.values.end(), v);
    return double(it - k.values.begin());
  };
  if (categories) {
    c.x = {.label = k.name, .format = [&k](double i) {
             const auto j = static_cast<std::size_t>(std::llround(i));
             return j < k.values.size() ? k.values[j] : std::string();
           },
           .integer = true, .min = -0.5, .max = double(k.values.size()) - 0.5};
  } else {
    const std::string named = k.unit.empty() || k.unit == "bytes" ? k.name : fmt::format("{} ({})", k.name, k.unit);
    c.x = {.label = k.env ? fmt::format("{} ({})", named, *k.env) : named,
           .scale = k.scale == KnobScale::Log ? chart::Scale::Log10 : chart::Scale::Linear, .integer = k.type == KnobType::Integer};
    if (k.unit == "bytes") c.x.format = [](double v) { return run::format_bytes(v); };  // ticks "1 MiB", not "1M"
  }
  if (e.values.empty()) return chart::render(c) + "<p class=\"note\">Fewer than two scored trials: no model yet.</p>\n";
  chart::Series band{.name = "model: 95 % band (±2 sd)", .colour = palette::kModel, .mark = chart::Mark::Band};
  chart::Series mean{.name = categories ? "model: mean ± 2 sd" : "model: mean", .colour = palette::kModel, .mark = categories ? chart::Mark::ErrorBars : chart::Mark::Line};
  for (std::size_t i = 0; i < e.values.size(); ++i) {
    const double x = x_of(e.values[i]);
    const auto tip = fmt::format("{}={}: {} ± {} (2 sd)", k.name, e.values[i], score_text(e.mean[i], o), score_text(2 * e.sd[i], o));
    band.points.push_back({.x = x, .y = e.mean[i], .low = e.mean[i] - 2 * e.sd[i], .high = e.mean[i] + 2 * e.sd[i], .tip = tip});
    mean.points.push_back({.x = x, .y = e.mean[i], .low = e.mean[i] - 2 * e.sd[i], .high = e.mean[i] + 2 * e.sd[i], .tip = tip});
  }
  chart::Series seen{.name = "trials (other knobs as they ran)", .colour = palette::kTrial, .mark = chart::Mark::Points};
  for (const auto& t : trials)
    if (keeps_score(t.status) && t.score && knob < t.values.size())
      seen.points.push_back({.x = x_of(t.values[knob]), .y = *t.score,
                             .tip = fmt::format("trial {}: {}; {}", t.id, score_text(*t.score, o), space.describe(t.values, ", "))});
  if (!categories) c.series.push_back(band);
  c.series.push_back(mean);
  c.series.push_back(seen);
  return chart::render(c);
}

}  // namespace

void write_report(const SearchSpace& space, const std::vector<TrialRecord>& recorded, const std::string& dir,
                  const std::string& title, const std::vector<std::string>& notes) {
  // A study file may hold an inf/nan score (written by an older tuner, or edited): no score, as the tuner reads it.
  std::vector<TrialRecord> trials = recorded;
  for (auto& t : trials)
    if (t.score && !std::isfinite(*t.score)) t.score.reset();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir, ec)) throw Error(fmt::format("{}: cannot create the report directory", dir));
  const Objective& o = space.objective();
  const std::string convergence = convergence_chart(space, trials);
  write_text(fs::path(dir) / "convergence.svg", convergence);
  std::string effects;
  for (std::size_t k = 0; k < space.knobs().size(); ++k) {
    const std::string svg = effect_chart(space, trials, k);
    write_text(fs::path(dir) / fmt::format("effect-{}.svg", space.knobs()[k].name), svg);
    effects += "<div class=\"chart\">" + svg + "</div>\n";
  }

  std::string rows;
  for (const auto& t : trials) {
    std::string cells;
    for (std::size_t i = 0; i < t.values.size() && i < space.knobs().size(); ++i)
      cells += "<td>" + xml_escape(space.knobs()[i].shown(t.values[i])) + "</td>";
    const std::string_view status = trial_status_name(t.status);  // a fixed word: nothing to escape
    rows += fmt::format("<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}<td>{}</td></tr>\n", status, t.id,
                        xml_escape(t.kind), status, t.score ? xml_escape(score_text(*t.score, o)) : "–", cells, xml_escape(t.reason));
  }
  std::string knob_headers;
  for (const auto& k : space.knobs()) knob_headers += "<th>" + xml_escape(k.name) + "</th>";
  const auto best_settings_found = best_settings(space, trials);
  std::string best_text = "No trial succeeded.";
  if (best_settings_found) {
    best_text = fmt::format("Best: {} (mean over {} run{}):", xml_escape(score_text(best_settings_found->mean_score, o)),
                            best_settings_found->runs, best_settings_found->runs == 1 ? "" : "s");
    for (std::size_t i = 0; i < space.knobs().size(); ++i)
      best_text += fmt::format(" <code>{}={}</code>", xml_escape(space.knobs()[i].name),
                               xml_escape(space.knobs()[i].shown(best_settings_found->values[i])));
  }
  // Option names as code that never wraps: a browser breaks "--fixed-batch" after its first hyphen.
  static const std::regex option_name(R"((^|[\s(])(--[a-z][a-z0-9-]*))");
  for (const auto& note : notes)
    best_text += "</p>\n<p>" + std::regex_replace(xml_escape(note), option_name, "$1<code>$2</code>");
  const std::string html = fmt::format(
      "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>collscope tune: {0}</title>\n"
      "<style>body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;"
      "padding:2px 6px;font-size:12px}} tr.failed,tr.timeout{{background:#fee}} tr.stopped{{background:#ffe}} "
      ".chart{{display:inline-block;margin:4px;vertical-align:top;max-width:100%}} .chart svg{{max-width:100%;height:auto}} "
      ".trials{{overflow-x:auto}} code{{white-space:nowrap}} .note{{color:#444;font-size:90%;max-width:900px}}</style></head><body>\n"
      "<h1>collscope tune: {0}</h1>\n<p>{1}</p>\n<h2>Convergence</h2>\n<div class=\"chart\">{2}</div>\n"
      "<h2>Per-knob effect</h2>\n<p class=\"note\">What the tuner's model (a Gaussian process fitted to every trial; "
      "failed trials count as the worst score) expects when one knob changes and the others stay at the best settings: "
      "its mean and a 95 % band (±2 standard deviations; wide where no trial ran). Grey dots are the trials' scores at "
      "their own settings of the other knobs.</p>\n{3}\n"
      "<h2>Trials</h2>\n<div class=\"trials\"><table><tr><th>id</th><th>kind</th><th>status</th><th>score</th>{4}<th>reason</th></tr>\n{5}</table></div>\n"
      "</body></html>\n",
      xml_escape(title), best_text, convergence, effects, knob_headers, rows);
  write_text(fs::path(dir) / "index.html", html);
}

}  // namespace collscope::autotuner
