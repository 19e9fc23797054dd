// SVG charts for the reports (see svg_chart.hpp). Text sizes are estimated (6.3 px per character of the 11 px
// sans-serif font) to size the margins, so tick labels are never clipped.
#include <collscope/analyzer/markup.hpp>
#include <collscope/analyzer/svg_chart.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace collscope::analyzer::chart {
namespace {

using run::palette::hex;

constexpr double kCharWidth = 6.3;  // px per character at font-size 11
constexpr double kTitleHeight = 24, kLegendRowHeight = 16;

double text_width(const std::string& s) {
  // UTF-8: count code points, not bytes ("µs", "→").
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return double(n) * kCharWidth;
}

double nice_step(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * magnitude * (1 + 1e-9)) return m * magnitude;
  return 10 * magnitude;
}

double transform(Scale s, double v) {
  switch (s) {
    case Scale::Log2: return v > 0 ? std::log2(v) : -1e9;
    case Scale::Log10: return v > 0 ? std::log10(v) : -1e9;
    default: return v;
  }
}

double inverse(Scale s, double t) {
  switch (s) {
    case Scale::Log2: return std::exp2(t);
    case Scale::Log10: return std::pow(10.0, t);
    default: return t;
  }
}

// An axis laid onto pixels: the domain (in transformed units), its ticks (data values) and their text.
struct Mapped {
  Scale scale = Scale::Linear;
  double lo = 0, hi = 1;   // transformed
  double p0 = 0, p1 = 1;   // pixels of lo and hi
  std::vector<double> ticks;
  std::vector<std::string> labels;
  double operator()(double v) const {
    const double t = std::clamp(transform(scale, v), lo, hi);
    return p0 + (t - lo) / (hi - lo) * (p1 - p0);
  }
};

Mapped map_axis(const Axis& axis, std::vector<double> values, int target) {
  Mapped m;
  m.scale = axis.scale;
  if (axis.scale != Scale::Linear)
    values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !(v > 0); }), values.end());
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }), values.end());
  double lo = values.empty() ? (axis.scale == Scale::Linear ? 0 : 1) : *std::min_element(values.begin(), values.end());
  double hi = values.empty() ? (axis.scale == Scale::Linear ? 1 : 10) : *std::max_element(values.begin(), values.end());
  if (axis.from_zero && axis.scale == Scale::Linear) lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);
  if (axis.min) lo = *axis.min;
  if (axis.max) hi = *axis.max;
  double step = 1;
  if (axis.scale == Scale::Linear) {
    if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) {
      const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
      lo -= axis.from_zero && lo >= 0 ? 0 : pad;
      hi += pad;
    }
    m.ticks = linear_ticks(lo, hi, target, axis.integer);
    step = m.ticks.size() > 1 ? m.ticks[1] - m.ticks[0] : 1;
    m.lo = axis.min ? lo : std::min(lo, m.ticks.front());
    m.hi = axis.max ? hi : std::max(hi, m.ticks.back());
    std::erase_if(m.ticks, [&](double t) { return t < m.lo - 1e-9 * step || t > m.hi + 1e-9 * step; });
  } else {
    // Powers of the base inside the data's range plus a little room, so marks at the ends do not sit on the axis
    // and no decade is empty; within one decade, 2× and 5× too.
    const double tlo = transform(axis.scale, lo), thi = transform(axis.scale, hi);
    const double pad = std::max(0.15, 0.04 * (thi - tlo));
    m.lo = axis.min ? tlo : tlo - pad;
    m.hi = axis.max ? thi : thi + pad;
    const double every = std::max(1.0, std::ceil((m.hi - m.lo) / std::max(1, target)));
    for (double t = std::ceil(m.lo / every - 1e-9) * every; t <= m.hi + 1e-9; t += every) m.ticks.push_back(inverse(axis.scale, t));
    if (axis.scale == Scale::Log10 && m.ticks.size() < 3)
      for (double t = std::floor(m.lo); t <= m.hi; ++t)
        for (double f : {2.0, 5.0})
          if (const double v = f * inverse(axis.scale, t); transform(axis.scale, v) >= m.lo && transform(axis.scale, v) <= m.hi)
            m.ticks.push_back(v);
    std::sort(m.ticks.begin(), m.ticks.end());
  }
  for (double t : m.ticks)
    m.labels.push_back(axis.format ? axis.format(t)
                                   : plain_number(t, axis.scale == Scale::Linear ? step : t));
  return m;
}

struct LegendEntry {
  std::string name;
  Rgb colour;
  Mark mark;
  bool dashed;
};

// Legend rows under the title, wrapped to the chart's width. Returns the SVG and the height it takes.
std::pair<std::string, double> legend(const std::vector<LegendEntry>& entries, double left, double right, double top) {
  std::string svg;
  double x = left, y = top;
  bool any = false;
  for (const auto& e : entries) {
    if (e.name.empty()) continue;
    const double w = 22 + text_width(e.name) + 14;
    if (any && x + w > right) x = left, y += kLegendRowHeight;
    any = true;
    const double cy = y + 8;
    const std::string c = hex(e.colour);
    switch (e.mark) {
      case Mark::Points:
        svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3.5" fill="{}"/>)", x + 8, cy, c);
        break;
      case Mark::Rings:
        svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="4.5" fill="none" stroke="{}" stroke-width="1.5"/>)", x + 8, cy, c);
        break;
      case Mark::Band:
        svg += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="16" height="9" fill="{}" fill-opacity="0.25"/>)", x, cy - 4.5, c);
        break;
      case Mark::Bars:
        svg += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="16" height="9" fill="{}"/>)", x, cy - 4.5, c);
        break;
      default:
        svg += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="2"{}/>)", x, cy,
                           x + 16, cy, c, e.dashed ? R"( stroke-dasharray="5,3")" : "");
        if (e.mark == Mark::LinePoints || e.mark == Mark::ErrorBars)
          svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"/>)", x + 8, cy, c);
    }
    svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}">{}</text>)", x + 22, cy + 4, xml_escape(e.name));
    x += w;
  }
  return {svg.empty() ? svg : "<g class=\"legend\">" + svg + "</g>\n", any ? y + kLegendRowHeight - top : 0};
}

std::string svg_open(double w, double h, const std::string& title) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"11\" role=\"img\"><title>{2}</title>\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"8\" y=\"17\" font-size=\"13\" font-weight=\"bold\">{2}</text>\n",
      w, h, xml_escape(title));
}

std::string tip(const std::string& text) { return text.empty() ? "" : "<title>" + xml_escape(text) + "</title>"; }

}  // namespace

std::vector<double> linear_ticks(double lo, double hi, int target, bool integer) {
  if (!(hi > lo)) hi = lo + 1;
  double step = nice_step((hi - lo) / std::max(1, target));
  if (integer) step = std::max(1.0, std::round(step));
  const double first = std::floor(lo / step + 1e-9) * step, last = std::ceil(hi / step - 1e-9) * step;
  std::vector<double> out;
  for (int k = 0; first + k * step <= last + step * 1e-6 && k < 1000; ++k) {
    double t = first + k * step;
    if (std::fabs(t) < step * 1e-9) t = 0;  // no "-0"
    out.push_back(t);
  }
  return out;
}

std::string plain_number(double value, double step) {
  if (!std::isfinite(value)) return "–";
  step = std::fabs(step);
  if (!(step > 0)) step = std::max(1e-9, std::fabs(value));
  if (std::fabs(value) < step * 1e-9) value = 0;
  // Steps of 10 000 and more: whole multiples of the largest unit the step holds ("20k", "500M", "1G"); the
  // rule depends on the step only, so every tick of an axis has the same form.
  static constexpr std::pair<double, const char*> kSuffixes[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  if (step >= 1e4)
    for (const auto& [unit, suffix] : kSuffixes)
      if (step >= unit) return value == 0 ? "0" : fmt::format("{:.0f}{}", value / unit, suffix);
  const int decimals = std::clamp(static_cast<int>(-std::floor(std::log10(step) + 1e-9)), 0, 9);
  return fmt::format("{:.{}f}", value, decimals);
}

std::string render(const XYChart& c) {
  const double W = c.width, H = c.height;
  std::vector<double> xs, ys;
  for (const auto& s : c.series)
    for (const auto& p : s.points) {
      xs.push_back(p.x);
      ys.push_back(p.y);
      if (s.mark == Mark::Band || s.mark == Mark::ErrorBars) ys.push_back(p.low), ys.push_back(p.high);
      if (s.mark == Mark::Bars && std::isfinite(p.low) && std::isfinite(p.high)) xs.push_back(p.low), xs.push_back(p.high);
    }
  for (const auto& r : c.references) ys.push_back(r.y);
  std::vector<LegendEntry> entries;
  for (const auto& s : c.series) entries.push_back({s.name, s.colour, s.mark, s.dashed});
  for (const auto& r : c.references) entries.push_back({r.name, r.colour, Mark::Line, true});

  // Layout: the legend's height and the widest y tick decide the margins.
  const auto [legend_svg_probe, legend_h] = legend(entries, 8, W - 8, kTitleHeight);
  (void)legend_svg_probe;
  const double top = kTitleHeight + legend_h + 10, bottom = 44;
  Mapped y = map_axis(c.y, ys, std::max(3, static_cast<int>((H - top - bottom) / 45)));
  double widest = 0;
  for (const auto& l : y.labels) widest = std::max(widest, text_width(l));
  const double left = 22 + widest + 8;
  y.p0 = H - bottom;
  y.p1 = top;
  Mapped x = map_axis(c.x, xs, std::max(2, static_cast<int>((W - left - 18) / 90)));
  // The last tick's text is centred on its tick: room for its right half.
  const double right = std::max(18.0, x.labels.empty() ? 0.0 : text_width(x.labels.back()) / 2 + 6);
  x.p0 = left;
  x.p1 = W - right;

  std::string svg = svg_open(W, H, c.title);
  svg += legend(entries, 8, W - 8, kTitleHeight).first;
  // Grid and ticks.
  svg += "<g class=\"axes\" stroke=\"#e4e4e4\">";
  for (double t : y.ticks) svg += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)", left, y(t), W - right, y(t));
  for (double t : x.ticks) svg += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)", x(t), top, x(t), H - bottom);
  svg += fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{2:.1f}" y2="{1:.1f}" stroke="#333"/><line x1="{0:.1f}" y1="{3:.1f}" x2="{0:.1f}" y2="{1:.1f}" stroke="#333"/></g>)",
                     left, H - bottom, W - right, top);
  svg += "\n<g class=\"ticks\" fill=\"#333\">";
  for (std::size_t i = 0; i < y.ticks.size(); ++i)
    svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end">{}</text>)", left - 5, y(y.ticks[i]) + 4, xml_escape(y.labels[i]));
  for (std::size_t i = 0; i < x.ticks.size(); ++i)
    svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)", x(x.ticks[i]), H - bottom + 15, xml_escape(x.labels[i]));
  svg += "</g>\n";
  svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)", (left + W - right) / 2, H - 8, xml_escape(c.x.label));
  svg += fmt::format(R"svg(<text x="12" y="{0:.1f}" text-anchor="middle" transform="rotate(-90 12 {0:.1f})">{1}</text>)svg" "\n",
                     (top + H - bottom) / 2, xml_escape(c.y.label));

  // Bands first (under everything), then references, lines and marks.
  for (const auto& s : c.series) {
    if (s.mark != Mark::Band || s.points.empty()) continue;
    std::string pts;
    for (const auto& p : s.points) pts += fmt::format("{:.1f},{:.1f} ", x(p.x), y(p.high));
    for (auto it = s.points.rbegin(); it != s.points.rend(); ++it) pts += fmt::format("{:.1f},{:.1f} ", x(it->x), y(it->low));
    svg += fmt::format(R"(<polygon points="{}" fill="{}" fill-opacity="0.2" stroke="none">{}</polygon>)" "\n", pts, hex(s.colour),
                       tip(s.name));
  }
  // Bars next, so that lines and references stay visible over them.
  for (const auto& s : c.series) {
    if (s.mark != Mark::Bars || s.points.empty()) continue;
    std::vector<double> px;
    for (const auto& p : s.points) px.push_back(x(p.x));
    std::sort(px.begin(), px.end());
    double gap = 0;
    for (std::size_t k = 1; k < px.size(); ++k)
      if (px[k] - px[k - 1] > 0.5) gap = gap == 0 ? px[k] - px[k - 1] : std::min(gap, px[k] - px[k - 1]);
    const double width = gap > 0 ? std::clamp(0.8 * gap, 1.0, 60.0) : 24.0;
    // Bars rise from the axis' zero when the axis holds it, else from its bottom.
    const double base = c.y.scale == Scale::Linear && y.lo <= 0 && y.hi >= 0 ? y(0) : y.p0;
    svg += "<g>";
    for (const auto& p : s.points) {
      const double top = y(p.y);
      // A bin's bar leaves a pixel on each side, so neighbouring bins stay apart.
      const bool bin = std::isfinite(p.low) && std::isfinite(p.high);
      const double left_px = bin ? std::min(x(p.low), x(p.high)) + 1 : x(p.x) - width / 2;
      const double width_px = bin ? std::max(1.0, std::fabs(x(p.high) - x(p.low)) - 2) : width;
      svg += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}">{}</rect>)", left_px,
                         std::min(top, base), width_px, std::fabs(base - top), hex(s.colour), tip(p.tip));
    }
    svg += "</g>\n";
  }
  for (const auto& r : c.references) {
    svg += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="1.5" stroke-dasharray="6,4">{}</line>)",
                       left, y(r.y), W - right, y(r.y), hex(r.colour), tip(r.name));
    svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end" fill="{}">{}</text>)" "\n", W - right - 4, y(r.y) - 4,
                       hex(r.colour), xml_escape(r.name));
  }
  for (const auto& s : c.series) {
    const std::string colour = hex(s.colour);
    if ((s.mark == Mark::Line || s.mark == Mark::LinePoints) && s.points.size() > 1) {
      std::string d;
      for (const auto& p : s.points) d += fmt::format("{}{:.1f},{:.1f}", d.empty() ? "M" : " L", x(p.x), y(p.y));
      svg += fmt::format(R"(<path d="{}" fill="none" stroke="{}" stroke-width="2"{}>{}</path>)" "\n", d, colour,
                         s.dashed ? R"( stroke-dasharray="5,3")" : "", tip(s.name));
    }
    if (s.mark == Mark::Line && s.points.size() > 1) continue;
    if (s.mark == Mark::Band || s.mark == Mark::Bars) continue;
    svg += "<g>";
    for (const auto& p : s.points) {
      if (s.mark == Mark::ErrorBars && std::isfinite(p.low) && std::isfinite(p.high))
        svg += fmt::format(R"(<path d="M{0:.1f},{1:.1f} L{0:.1f},{2:.1f} M{3:.1f},{1:.1f} L{4:.1f},{1:.1f} M{3:.1f},{2:.1f} L{4:.1f},{2:.1f}" stroke="{5}" stroke-width="1.5"/>)",
                           x(p.x), y(p.low), y(p.high), x(p.x) - 4, x(p.x) + 4, colour);
      if (s.mark == Mark::Rings)
        svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="5" fill="none" stroke="{}" stroke-width="1.5">{}</circle>)", x(p.x),
                           y(p.y), colour, tip(p.tip));
      else
        svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3.5" fill="{}">{}</circle>)", x(p.x), y(p.y), colour, tip(p.tip));
    }
    svg += "</g>\n";
  }
  return svg + "</svg>\n";
}

namespace {

// Merged groups of consecutive indices so that at most `limit` remain: [first, last] per group.
std::vector<std::pair<std::size_t, std::size_t>> groups(std::size_t n, std::size_t limit) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const std::size_t per = std::max<std::size_t>(1, (n + std::max<std::size_t>(1, limit) - 1) / std::max<std::size_t>(1, limit));
  for (std::size_t a = 0; a < n; a += per) out.emplace_back(a, std::min(n, a + per) - 1);
  return out;
}

}  // namespace

std::string render(const HeatMap& m) {
  const std::size_t nrows = m.cells.size(), ncols = nrows ? m.cells[0].size() : 0;
  const auto row_groups = groups(nrows, m.max_rows), col_groups = groups(ncols, m.max_columns);
  auto row_name = [&](const std::pair<std::size_t, std::size_t>& g) {
    auto label = [&](std::size_t r) { return r < m.row_labels.size() ? m.row_labels[r] : std::to_string(r); };
    return g.first == g.second ? label(g.first) : label(g.first) + "–" + label(g.second);
  };
  auto fmt_value = [&](double v) { return m.format_value ? m.format_value(v) : plain_number(v, std::fabs(v) / 100); };
  auto fmt_col = [&](double v) { return m.x.format ? m.x.format(v) : plain_number(v, 1); };
  // Cell values: the maximum over each merged block.
  std::vector<std::vector<double>> v(row_groups.size(), std::vector<double>(col_groups.size(), 0));
  double vmax = 0;
  for (std::size_t i = 0; i < row_groups.size(); ++i)
    for (std::size_t j = 0; j < col_groups.size(); ++j) {
      double x = 0;
      for (std::size_t r = row_groups[i].first; r <= row_groups[i].second; ++r)
        for (std::size_t c = col_groups[j].first; c <= col_groups[j].second && c < m.cells[r].size(); ++c)
          x = std::max(x, m.cells[r][c]);
      v[i][j] = x;
      vmax = std::max(vmax, x);
    }
  double widest = 0;
  for (const auto& g : row_groups) widest = std::max(widest, text_width(row_name(g)));
  // top leaves room for the colour bar's label between the title and the bar's top tick (which sits at the top when
  // the maximum is a round value): neither touches the other.
  const double W = m.width, top = kTitleHeight + 16, left = 10 + widest + 6, bar_w = 14;
  std::vector<double> bar_ticks = linear_ticks(0, vmax > 0 ? vmax : 1, 4);
  std::erase_if(bar_ticks, [&](double t) { return t > (vmax > 0 ? vmax : 1) * (1 + 1e-9); });
  double bar_label_w = 0;
  for (double t : bar_ticks) bar_label_w = std::max(bar_label_w, text_width(fmt_value(t)));
  const double right = 16 + bar_w + 6 + bar_label_w + 8;
  const double plot_w = W - left - right;
  const double row_h = std::clamp(360.0 / double(std::max<std::size_t>(1, row_groups.size())), 3.0, 22.0);
  const double plot_h = row_h * double(row_groups.size());
  const double bar_h = std::max(plot_h, 70.0);
  const double H = top + std::max(plot_h + 42, bar_h + 10);
  const double col_w = plot_w / double(std::max<std::size_t>(1, col_groups.size()));

  std::string svg = svg_open(W, H, m.title);
  svg += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}" stroke="#ccc"/>)" "\n", left, top, plot_w,
                     plot_h, hex(m.ramp(0)));
  // Row labels: every k-th when rows are thin.
  const std::size_t label_every = static_cast<std::size_t>(std::ceil(11.0 / row_h));
  svg += "<g class=\"rows\" fill=\"#333\">";
  for (std::size_t i = 0; i < row_groups.size(); i += label_every)
    svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end">{}</text>)", left - 5, top + row_h * (double(i) + 0.5) + 4,
                       xml_escape(row_name(row_groups[i])));
  svg += "</g>\n<g class=\"cells\">";
  for (std::size_t i = 0; i < row_groups.size(); ++i)
    for (std::size_t j = 0; j < col_groups.size(); ++j) {
      if (!(v[i][j] > 0)) continue;  // the background is the ramp's zero
      const auto& cg = col_groups[j];
      const std::string col = cg.first == cg.second ? fmt_col(double(cg.first)) : fmt_col(double(cg.first)) + "–" + fmt_col(double(cg.second));
      const std::string text = m.tip ? m.tip(row_name(row_groups[i]), col, v[i][j])
                                     : fmt::format("{}, {}: {}", row_name(row_groups[i]), col, fmt_value(v[i][j]));
      svg += fmt::format(R"(<rect x="{:.2f}" y="{:.2f}" width="{:.2f}" height="{:.2f}" fill="{}">{}</rect>)", left + col_w * double(j),
                         top + row_h * double(i), col_w + 0.05, row_h + 0.05, hex(m.ramp(v[i][j] / vmax)), tip(text));
    }
  svg += "</g>\n";
  // Column ticks at whole column indices.
  const auto xt = linear_ticks(0, double(std::max<std::size_t>(1, ncols - 1)), std::max(2, static_cast<int>(plot_w / 70)), true);
  svg += "<g class=\"ticks\" fill=\"#333\">";
  const double per_group = double(ncols) / double(std::max<std::size_t>(1, col_groups.size()));
  for (double t : xt) {
    if (t > double(ncols) - 1 + 1e-9) continue;
    const double px = left + (t + 0.5) / per_group * col_w;
    svg += fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="#333"/><text x="{0:.1f}" y="{3:.1f}" text-anchor="middle">{4}</text>)",
                       px, top + plot_h, top + plot_h + 4, top + plot_h + 16, xml_escape(fmt_col(t)));
  }
  svg += "</g>\n";
  svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)" "\n", left + plot_w / 2, top + plot_h + 34,
                     xml_escape(m.x.label));
  // Colour bar: 24 bands from 0 (bottom) to the maximum (top), ticks in the value's unit.
  const double bx = W - right + 16;
  svg += "<g class=\"colour-bar\">";
  for (int k = 0; k < 24; ++k)
    svg += fmt::format(R"(<rect x="{:.1f}" y="{:.2f}" width="{:.1f}" height="{:.2f}" fill="{}"/>)", bx, top + bar_h * (1 - (k + 1) / 24.0),
                       bar_w, bar_h / 24 + 0.05, hex(m.ramp((k + 0.5) / 24)));
  svg += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="none" stroke="#999"/>)", bx, top, bar_w, bar_h);
  const double span = vmax > 0 ? vmax : 1;
  for (double t : bar_ticks)
    svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}">{}</text>)", bx + bar_w + 5, top + bar_h * (1 - t / span) + 4, xml_escape(fmt_value(t)));
  svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end">{}</text></g>)" "\n", W - 8, top - 10, xml_escape(m.value_label));
  return svg + "</svg>\n";
}

}  // namespace collscope::analyzer::chart
