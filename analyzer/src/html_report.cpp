// Self-contained HTML report: inline CSS and SVG plots, no scripts, no network.
#include <collscope/analyzer/markup.hpp>
#include <collscope/analyzer/report.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace collscope::analyzer {
namespace {


// Per-rank wait heat map: one row per rank, one column per step; darker = longer waiting.
std::string wait_heat_map(const Analysis& a) {
  const auto& steps = a.steps.steps;
  const std::size_t nranks = a.run.ranks.size();
  if (steps.empty() || nranks == 0) return "<p>No steps: no heat map.</p>";
  const double cell_w = std::max(2.0, std::min(24.0, 800.0 / double(steps.size())));
  const double cell_h = std::max(4.0, std::min(20.0, 400.0 / double(nranks)));
  double max_wait = 1;
  for (const auto& s : steps)
    for (double w : s.rank_wait_ns) max_wait = std::max(max_wait, w);
  const double w = 60 + cell_w * double(steps.size()), h = 30 + cell_h * double(nranks);
  std::string svg = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}">)", w, h + 20);
  for (std::size_t r = 0; r < nranks; ++r) {
    svg += fmt::format(R"(<text x="2" y="{:.1f}" font-size="10">rank {}</text>)", 20 + cell_h * (double(r) + 0.8),
                       a.run.ranks[r].world_rank);
    for (std::size_t k = 0; k < steps.size(); ++k) {
      const double v = steps[k].rank_wait_ns[r] / max_wait;
      const int shade = static_cast<int>(255 - 200 * v);
      svg += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="#ff{:02x}{:02x}"><title>rank {} step {}: {:.2f} ms waiting</title></rect>)",
                         60 + cell_w * double(k), 20 + cell_h * double(r), cell_w, cell_h, shade, shade,
                         a.run.ranks[r].world_rank, k, steps[k].rank_wait_ns[r] / 1e6);
    }
  }
  svg += fmt::format(R"(<text x="60" y="12" font-size="10">wait per step (max {:.2f} ms)</text><text x="60" y="{:.0f}" font-size="10">step →</text></svg>)",
                     max_wait / 1e6, h + 12);
  return svg;
}

// busbw against message size, log-scaled x: medians (dots) and best (rings) per op and size.
std::string busbw_plot(const Analysis& a) {
  if (a.op_sizes.empty()) return "<p>No collectives with payload.</p>";
  double max_bw = 0.001;
  int lo = 60, hi = 0;
  for (const auto& s : a.op_sizes) {
    max_bw = std::max(max_bw, s.best_busbw_gbps);
    const int l = static_cast<int>(std::log2(double(s.size_bucket_bytes)));
    lo = std::min(lo, l), hi = std::max(hi, l);
  }
  const double W = 640, H = 300, left = 50, bottom = 30;
  auto x = [&](std::int64_t bytes) { return left + (std::log2(double(bytes)) - lo) / std::max(1, hi - lo) * (W - left - 20); };
  auto y = [&](double bw) { return H - bottom - bw / max_bw * (H - bottom - 20); };
  std::string svg = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}">)", W, H);
  svg += fmt::format(R"(<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="black"/><line x1="{0}" y1="20" x2="{0}" y2="{1}" stroke="black"/>)",
                     left, H - bottom, W - 10);
  svg += fmt::format(R"(<text x="2" y="14" font-size="10">busbw GB/s (max {:.2f})</text><text x="{}" y="{}" font-size="10">message size (log2), {} B .. {} B</text>)",
                     max_bw, left, H - 8, std::int64_t{1} << lo, std::int64_t{1} << hi);
  const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
  for (const auto& s : a.op_sizes) {
    const char* c = colours[static_cast<int>(s.op) % 6];
    svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="4" fill="{}"><title>{} {} B: median {:.3f} GB/s, {} instances</title></circle>)",
                       x(s.size_bucket_bytes), y(s.median_busbw_gbps), c, store::op_name(s.op), s.size_bucket_bytes,
                       s.median_busbw_gbps, s.instances);
    svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="6" fill="none" stroke="{}"/>)", x(s.size_bucket_bytes),
                       y(s.best_busbw_gbps), c);
  }
  return svg + "</svg>";
}

std::string step_time_plot(const Analysis& a) {
  const auto& steps = a.steps.steps;
  if (steps.size() < 2) return "<p>Fewer than 2 steps: no plot.</p>";
  double max_t = 1;
  for (const auto& s : steps) max_t = std::max(max_t, s.duration_ns);
  const double W = 640, H = 240, left = 50, bottom = 25;
  auto x = [&](std::size_t k) { return left + double(k) / double(steps.size() - 1) * (W - left - 20); };
  auto y = [&](double v) { return H - bottom - v / max_t * (H - bottom - 20); };
  std::string step_line, comm_line;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    step_line += fmt::format("{:.1f},{:.1f} ", x(k), y(steps[k].duration_ns));
    comm_line += fmt::format("{:.1f},{:.1f} ", x(k), y(steps[k].comm_ns));
  }
  return fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0:.0f}" height="{1:.0f}"><line x1="{2}" y1="{3}" x2="{4}" y2="{3}" stroke="black"/><line x1="{2}" y1="20" x2="{2}" y2="{3}" stroke="black"/><polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{5}"/><polyline fill="none" stroke="#d62728" points="{6}"/><text x="2" y="14" font-size="10">ms (max {7:.2f}); blue: step time, red: in collectives</text><text x="{2}" y="{8}" font-size="10">step →</text></svg>)",
      W, H, left, H - bottom, W - 10, step_line, comm_line, max_t / 1e6, H - 6);
}

}  // namespace

std::string html_report(const Analysis& a) {
  std::string out = R"(<!DOCTYPE html><html><head><meta charset="utf-8"><title>collscope analysis</title><style>
body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}
.f{border-left:4px solid #888;padding:.3em .8em;margin:.8em 0}.critical{border-color:#d62728}.warning{border-color:#ff7f0e}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%}</style></head><body>)";
  out += fmt::format("<h1>collscope analysis</h1><p><code>{}</code></p><p>{} ranks, {} collectives, {} steps ({}), mean step {:.2f} ms, {:.2f} ms in collectives, {:.2f} ms waiting</p>",
                     xml_escape(a.run.dir), a.run.ranks.size(), a.run.collective_count(), a.steps.steps.size(), a.steps.source,
                     a.steps.mean_step_ns / 1e6, a.steps.mean_comm_ns / 1e6, a.steps.mean_wait_ns / 1e6);
  if (!a.steps.basis.empty())
    out += fmt::format("<p>Steps ({}, confidence {:.2f}): {}</p>", a.steps.source, a.steps.confidence, xml_escape(a.steps.basis));
  for (const auto& p : a.run.problems) out += fmt::format("<p><b>problem:</b> {}</p>", xml_escape(p));
  for (const auto& n : a.notes) out += fmt::format("<p><b>note:</b> {}</p>", xml_escape(n));
  out += fmt::format("<h2>Findings ({})</h2>", a.findings.size());
  if (a.findings.empty()) out += "<p>No findings.</p>";
  for (const auto& f : a.findings)
    out += fmt::format(R"(<div class="f {}"><b>[{}] {}</b>{}<br>{}<br><i>do:</i> {}</div>)", severity_name(f.severity),
                       severity_name(f.severity), xml_escape(f.title),
                       f.cost_ns > 0 ? fmt::format(" — cost {:.2f} ms", f.cost_ns / 1e6) : "", xml_escape(f.evidence_text),
                       xml_escape(f.suggestion));
  out += "<h2>Waiting per rank and step</h2>" + wait_heat_map(a);
  out += "<h2>Bus bandwidth vs message size</h2>" + busbw_plot(a);
  out += "<h2>Step time</h2>" + step_time_plot(a);
  out += fmt::format("<h2>Ranks</h2><p>Lateness and wait {}.</p>", xml_escape(a.lateness.basis));
  out += "<table><tr><th>rank</th><th>host</th><th>collectives</th><th>late ms (median step)</th><th>waits ms (median step)</th><th>late in all ms</th><th>clock offset µs</th><th>residual µs</th></tr>";
  for (std::size_t r = 0; r < a.run.ranks.size(); ++r)
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.2f}</td><td>{:.2f}</td><td>{:.2f}</td><td>{:.1f}</td><td>{:.1f}</td></tr>",
                       a.run.ranks[r].world_rank, xml_escape(a.run.ranks[r].host), a.run.ranks[r].collectives.size(),
                       a.lateness.median_lateness_ns[r] / 1e6, a.lateness.median_wait_ns[r] / 1e6,
                       a.lateness.total_lateness_ns[r] / 1e6, double(a.clocks.offset_ns[r]) / 1e3, a.clocks.residual_ns[r] / 1e3);
  out += "</table></body></html>\n";
  return out;
}

}  // namespace collscope::analyzer
