// Study report: hand-written SVG (no plotting dependency) and one HTML page embedding it.
#include <collscope/analyzer/markup.hpp>
#include <collscope/autotuner/report.hpp>
#include <collscope/autotuner/strategy.hpp>
#include <collscope/autotuner/tuner.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

namespace collscope::autotuner {
using analyzer::xml_escape;
namespace fs = std::filesystem;

namespace {

struct Series {
  std::vector<std::pair<double, double>> points;
  std::string color;
  bool line = true;
};

// A 560×300 px line/scatter chart.
std::string svg_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                      const std::vector<Series>& series, bool log_x = false) {
  constexpr double W = 560, H = 300, L = 70, R = 20, T = 30, B = 45;
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  auto tx = [&](double x) { return log_x ? std::log10(x) : x; };
  for (const auto& s : series)
    for (const auto& [x, y] : s.points) {
      x0 = std::min(x0, tx(x));
      x1 = std::max(x1, tx(x));
      y0 = std::min(y0, y);
      y1 = std::max(y1, y);
    }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (x1 - x0 < 1e-12) x0 -= 0.5, x1 += 0.5;
  if (y1 - y0 < 1e-12) y0 -= 0.5, y1 += 0.5;
  const double pad = 0.05 * (y1 - y0);
  y0 -= pad;
  y1 += pad;
  auto px = [&](double x) { return L + (tx(x) - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double y) { return H - B - (y - y0) / (y1 - y0) * (H - T - B); };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" font-family=\"sans-serif\" "
      "font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"18\" font-size=\"13\" font-weight=\"bold\">{}</text>\n",
      W, H, W, H, L, xml_escape(title));
  svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", L, H - B, W - R, H - B);
  svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", L, T, L, H - B);
  for (int i = 0; i <= 4; ++i) {
    const double y = y0 + (y1 - y0) * i / 4, x = x0 + (x1 - x0) * i / 4;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.4g}</text>\n", L - 4, py(y) + 4, y);
    const double xv = log_x ? std::pow(10.0, x) : x;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{:.4g}</text>\n", px(xv), H - B + 14, xv);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", (L + W - R) / 2, H - 8, xml_escape(x_label));
  svg += fmt::format("<text x=\"14\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {})\">{}</text>\n",
                     (T + H - B) / 2, (T + H - B) / 2, xml_escape(y_label));
  for (const auto& s : series) {
    if (s.line && s.points.size() > 1) {
      std::string path;
      for (const auto& [x, y] : s.points) path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "M" : " L", px(x), py(y));
      svg += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", path, s.color);
    } else {
      for (const auto& [x, y] : s.points)
        svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", px(x), py(y), s.color);
    }
  }
  return svg + "</svg>\n";
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::trunc);
  out << text;
  if (!out) throw Error(fmt::format("{}: cannot write the report", p.string()));
}

double knob_value(const Knob& k, double u) {
  if (k.type == KnobType::Real || k.type == KnobType::Integer) {
    if (k.scale == KnobScale::Log) return std::exp(std::log(k.min) + u * (std::log(k.max) - std::log(k.min)));
    return k.min + u * (k.max - k.min);
  }
  return u;
}
}  // namespace

namespace {
// Partial dependence of the fitted model's mean on knob `knob` (see report.hpp).
std::vector<std::pair<double, double>> partial_dependence_of(const SearchSpace& space, const GaussianProcess& gp,
                                                             std::size_t knob, int points, int samples) {
  const double sign = space.objective().maximize ? 1.0 : -1.0;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<std::vector<double>> others(static_cast<std::size_t>(samples), std::vector<double>(space.dimensions()));
  for (auto& p : others)
    for (auto& v : p) v = unit(rng);
  std::vector<std::pair<double, double>> out;
  for (int i = 0; i < points; ++i) {
    const double u = points == 1 ? 0.5 : static_cast<double>(i) / (points - 1);
    double sum = 0;
    for (auto p : others) {
      p[knob] = u;
      const auto f = space.features(p);
      double mu = 0, sd = 0;
      gp.predict(Eigen::Map<const Eigen::VectorXd>(f.data(), static_cast<Eigen::Index>(f.size())), mu, sd);
      sum += mu;
    }
    const double mean = sign * sum / samples;
    if (std::isfinite(mean)) out.emplace_back(u, mean);
  }
  return out;
}
}  // namespace

std::vector<std::pair<double, double>> partial_dependence(const SearchSpace& space, const std::vector<TrialRecord>& trials,
                                                          std::size_t knob, int points, int samples) {
  GaussianProcess gp(feature_groups(space));
  if (!fit_model(space, observations(space, trials), 7, gp)) return {};
  return partial_dependence_of(space, gp, knob, points, samples);
}

void write_report(const SearchSpace& space, const std::vector<TrialRecord>& trials, const std::string& dir,
                  const std::string& title, const std::vector<std::string>& notes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir, ec)) throw Error(fmt::format("{}: cannot create the report directory", dir));
  const Objective& o = space.objective();
  const std::string y_label = o.unit.empty() ? "objective" : o.unit;

  Series scored{{}, "#888", false}, best_line{{}, "#1f77b4", true};
  std::optional<double> best;
  int n = 0;
  for (const auto& t : trials) {
    if (t.status == "interrupted") continue;
    ++n;
    if ((t.status == "ok" || t.status == "stopped") && t.score && std::isfinite(*t.score)) {
      scored.points.emplace_back(n, *t.score);
      if (t.status == "ok") best = !best ? *t.score : (o.maximize ? std::max(*best, *t.score) : std::min(*best, *t.score));
    }
    if (best) best_line.points.emplace_back(n, *best);
  }
  const std::string convergence = svg_chart("Best so far vs trial", "trial", y_label, {scored, best_line});
  write_text(fs::path(dir) / "convergence.svg", convergence);

  std::string effects;
  GaussianProcess gp(feature_groups(space));
  const bool modelled = fit_model(space, observations(space, trials), 7, gp);  // one fit for every knob's plot
  for (std::size_t k = 0; k < space.knobs().size(); ++k) {
    const Knob& knob = space.knobs()[k];
    const auto pd = modelled ? partial_dependence_of(space, gp, k, 25, 64) : std::vector<std::pair<double, double>>{};
    Series s{{}, "#d62728", knob.type == KnobType::Real || knob.type == KnobType::Integer};
    for (const auto& [u, v] : pd) s.points.emplace_back(knob_value(knob, u), v);
    const bool log_x = knob.scale == KnobScale::Log;
    const std::string label = knob.type == KnobType::Categorical || knob.type == KnobType::Boolean
                                  ? fmt::format("{} (cube position; {} values)", knob.name, knob.values.size())
                                  : knob.name;
    const std::string svg = svg_chart(fmt::format("Effect of {} (GP partial dependence)", knob.name), label, y_label, {s}, log_x);
    write_text(fs::path(dir) / fmt::format("effect-{}.svg", knob.name), svg);
    effects += "<div class=\"chart\">" + svg + "</div>\n";
  }

  std::string rows;
  for (const auto& t : trials) {
    std::string cells;
    for (const auto& v : t.values) cells += "<td>" + xml_escape(v) + "</td>";
    rows += fmt::format("<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}<td>{}</td></tr>\n", xml_escape(t.status), t.id,
                        xml_escape(t.kind), xml_escape(t.status), t.score && std::isfinite(*t.score) ? fmt::format("{:.6g}", *t.score) : "-",
                        cells, xml_escape(t.reason));
  }
  std::string knob_headers;
  for (const auto& k : space.knobs()) knob_headers += "<th>" + xml_escape(k.name) + "</th>";
  const auto best_settings_found = best_settings(space, trials);
  std::string best_text = "No trial succeeded.";
  if (best_settings_found) {
    best_text = fmt::format("Best: mean {:.6g} {} over {} run(s):", best_settings_found->mean_score, xml_escape(o.unit),
                            best_settings_found->runs);
    for (std::size_t i = 0; i < space.knobs().size(); ++i)
      best_text += fmt::format(" <code>{}={}</code>", xml_escape(space.knobs()[i].name), xml_escape(best_settings_found->values[i]));
  }
  for (const auto& note : notes) best_text += "</p>\n<p>" + xml_escape(note);
  const std::string html = fmt::format(
      "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>collscope tune: {0}</title>\n"
      "<style>body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;"
      "padding:2px 6px;font-size:12px}} tr.failed,tr.timeout{{background:#fee}} tr.stopped{{background:#ffe}} "
      ".chart{{display:inline-block;margin:4px}}</style></head><body>\n"
      "<h1>collscope tune: {0}</h1>\n<p>{1}</p>\n<h2>Convergence</h2>\n<div class=\"chart\">{2}</div>\n"
      "<h2>Per-knob effect</h2>\n<p>GP posterior mean along each knob, averaged over the other knobs.</p>\n{3}\n"
      "<h2>Trials</h2>\n<table><tr><th>id</th><th>kind</th><th>status</th><th>score</th>{4}<th>reason</th></tr>\n{5}</table>\n"
      "</body></html>\n",
      xml_escape(title), best_text, convergence, effects, knob_headers, rows);
  write_text(fs::path(dir) / "index.html", html);
}

}  // namespace collscope::autotuner
