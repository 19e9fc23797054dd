// Self-contained HTML report: inline CSS and SVG charts (svg_chart.hpp), no scripts, no network. What a reader
// acts on first (findings), then who is late, where step time goes, how fast the collectives move data.
#include <collscope/analyzer/markup.hpp>
#include <collscope/analyzer/report.hpp>
#include <collscope/analyzer/svg_chart.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace collscope::analyzer {
namespace {

namespace palette = run::palette;

// One unit for a whole axis of durations, picked by its largest value, so ticks read "0 5 10 15" with "(ms)" in
// the label instead of a unit per tick.
struct DurationUnit {
  double ns = 1;
  const char* name = "ns";
};
// The largest unit the maximum reaches at least 1 of: a 7 ms step reads 0-8 ms, not 0-8000 µs.
DurationUnit duration_unit(double max_ns) {
  if (max_ns >= 1e9) return {1e9, "s"};
  if (max_ns >= 1e6) return {1e6, "ms"};
  if (max_ns >= 1e3) return {1e3, "µs"};
  return {};
}

// One binary unit for a whole colour bar of bytes, picked by its largest value like DurationUnit.
struct ByteUnit {
  double bytes = 1;
  const char* name = "B";
};
ByteUnit byte_unit(double max_bytes) {
  if (max_bytes >= 1ull << 40) return {double(1ull << 40), "TiB"};
  if (max_bytes >= 1 << 30) return {double(1 << 30), "GiB"};
  if (max_bytes >= 1 << 20) return {double(1 << 20), "MiB"};
  if (max_bytes >= 1 << 10) return {double(1 << 10), "KiB"};
  return {};
}

std::string step_label(double k) { return fmt::format("{:.0f}", k); }

// A rank × step heat map of one per rank, per step matrix of run::Lateness (its one definition): a straggler is a
// dark row in lateness, its victims dark rows in wait.
std::string rank_step_map(const Analysis& a, const std::string& title, const std::vector<std::vector<double>>& per_rank,
                          const std::string& value_label, const std::string& what) {
  chart::HeatMap m;
  m.title = title;
  m.x.label = "step";
  m.x.format = step_label;
  m.value_label = value_label;
  m.format_value = [](double ns) { return format_duration(ns); };
  m.tip = [what](const std::string& row, const std::string& col, double v) {
    return fmt::format("{}, step {}: {} {}", row, col, format_duration(v), what);
  };
  for (std::size_t r = 0; r < a.run.ranks.size(); ++r) {
    m.row_labels.push_back(fmt::format("rank {}", a.run.ranks[r].world_rank));
    std::vector<double> row;
    for (const auto& s : a.steps.steps) {
      const auto k = static_cast<std::size_t>(s.index);
      row.push_back(r < per_rank.size() && k < per_rank[r].size() ? per_rank[r][k] : 0);
    }
    m.cells.push_back(std::move(row));
  }
  return chart::render(m);
}

std::string lateness_section(const Analysis& a) {
  if (a.steps.steps.empty() || a.run.ranks.empty())
    return "<p>No steps found (no NVTX step ranges, no repeating pattern): no heat map.</p>";
  if (!a.lateness.measurable())
    return fmt::format("<p>Lateness and wait {}.</p>\n", xml_escape(a.lateness.basis));
  const bool phases = a.lateness.source == run::LatenessSource::Phases;
  std::string out = rank_step_map(a, phases ? "Lateness at the step's phases (NVTX), per rank and step"
                                            : "Lateness at the synchronising collectives, per rank and step",
                                  a.lateness.lateness_ns, "late per step", "late");
  out += fmt::format(
      "<p class=\"note\"><b>Lateness</b> {}. {} A rank late step after step (a dark row) holds all the others up: "
      "a straggler. More rows or steps than fit are merged (their maximum).</p>\n",
      xml_escape(a.lateness.basis),
      phases ? "From phases: how much later than the other ranks (their median) a rank reaches the point of the "
               "step where it is furthest behind (NVTX ranges such as forward and backward). A job that negotiates "
               "in a background thread (Horovod) starts its collectives together on every rank, so its straggler "
               "shows here and not in the collectives."
             : "From collectives: at each synchronising collective a rank arrives at last, how much after the "
               "second-last it arrived, summed over the step.");
  out += rank_step_map(a, "Wait for other ranks, per rank and step", a.lateness.wait_ns, "wait per step", "waiting");
  return out;
}

std::string step_time_per_rank_section(const Analysis& a) {
  const auto& steps = a.steps.steps;
  const std::size_t nranks = a.run.ranks.size();
  if (steps.size() < 2 || nranks == 0) return "<p>Fewer than 2 steps: no plot.</p>";
  double max_ns = 0;
  for (const auto& s : steps)
    for (double d : s.rank_duration_ns) max_ns = std::max(max_ns, d);
  const DurationUnit u = duration_unit(max_ns);
  chart::XYChart c;
  c.title = "Step time per rank";
  c.x = {.label = "step", .format = step_label, .integer = true};
  c.y = {.label = fmt::format("step time ({})", u.name), .from_zero = true};
  auto point = [&](const Step& s, double ns, const std::string& who) {
    return chart::Point{.x = double(s.index), .y = ns / u.ns, .tip = fmt::format("{}, step {}: {}", who, s.index, format_duration(ns))};
  };
  if (nranks <= 8) {
    for (std::size_t r = 0; r < nranks; ++r) {
      const std::string who = fmt::format("rank {}", a.run.ranks[r].world_rank);
      chart::Series s{.name = who, .colour = palette::series_colour(r), .mark = chart::Mark::LinePoints};
      for (const auto& st : steps) s.points.push_back(point(st, st.rank_duration_ns[r], who));
      c.series.push_back(std::move(s));
    }
  } else {
    // Too many ranks for a line each: their range, their median and the slowest rank.
    chart::Series band{.name = "range over ranks", .colour = palette::kStepTime, .mark = chart::Mark::Band};
    chart::Series median{.name = "median over ranks", .colour = palette::kStepTime, .mark = chart::Mark::Line};
    std::size_t slowest = 0;
    double slowest_ns = -1;
    for (std::size_t r = 0; r < nranks; ++r) {
      std::vector<double> d;
      for (const auto& st : steps) d.push_back(st.rank_duration_ns[r]);
      if (const double m = median_of(d); m > slowest_ns) slowest_ns = m, slowest = r;
    }
    for (const auto& st : steps) {
      const auto [lo, hi] = std::minmax_element(st.rank_duration_ns.begin(), st.rank_duration_ns.end());
      band.points.push_back({.x = double(st.index), .y = 0, .low = *lo / u.ns, .high = *hi / u.ns});
      median.points.push_back(point(st, median_of(st.rank_duration_ns), "median"));
    }
    const std::string who = fmt::format("rank {}", a.run.ranks[slowest].world_rank);
    chart::Series top{.name = who + " (slowest median)", .colour = palette::kCommTime, .mark = chart::Mark::Line};
    for (const auto& st : steps) top.points.push_back(point(st, st.rank_duration_ns[slowest], who));
    c.series = {band, median, top};
  }
  return chart::render(c) +
         "<p class=\"note\">Each rank's step: from its step range's start to its end (NVTX), or between the starts of "
         "consecutive step patterns of collectives (inferred). Ranks of one job are kept in step by their collectives, "
         "so a slow rank lengthens every rank's step: look at the lateness above to see who.</p>\n";
}

std::string step_breakdown_section(const Analysis& a) {
  const auto& steps = a.steps.steps;
  if (steps.size() < 2) return "";
  double max_ns = 0;
  for (const auto& s : steps) max_ns = std::max(max_ns, s.duration_ns);
  const DurationUnit u = duration_unit(max_ns);
  chart::XYChart c;
  c.title = "Where the step time goes (mean over ranks)";
  c.x = {.label = "step", .format = step_label, .integer = true};
  c.y = {.label = fmt::format("time ({})", u.name), .from_zero = true};
  chart::Series step{.name = "step time", .colour = palette::kStepTime, .mark = chart::Mark::Line};
  chart::Series comm{.name = "in collectives", .colour = palette::kCommTime, .mark = chart::Mark::Line};
  chart::Series wait{.name = "of it waiting for the last rank", .colour = palette::kCommTime, .mark = chart::Mark::Line, .dashed = true};
  for (const auto& s : steps) {
    const double k = double(s.index);
    step.points.push_back({.x = k, .y = s.duration_ns / u.ns, .tip = fmt::format("step {}: {}", s.index, format_duration(s.duration_ns))});
    comm.points.push_back({.x = k, .y = s.comm_ns / u.ns, .tip = fmt::format("step {}: {} in collectives", s.index, format_duration(s.comm_ns))});
    wait.points.push_back({.x = k, .y = s.wait_ns / u.ns, .tip = fmt::format("step {}: {} waiting", s.index, format_duration(s.wait_ns))});
  }
  c.series = {step, comm, wait};
  return chart::render(c);
}

std::string busbw_section(const Analysis& a) {
  if (a.op_sizes.empty()) return "<p>No collectives with payload.</p>";
  chart::XYChart c;
  c.title = "Bus bandwidth vs message size";
  c.x = {.label = "message size (as nccl-tests counts it; log scale)", .scale = chart::Scale::Log2,
         .format = [](double b) { return format_bytes(b); }};
  c.y = {.label = "bus bandwidth (GB/s)", .from_zero = true};
  std::set<int> ops;
  for (const auto& s : a.op_sizes) ops.insert(static_cast<int>(s.op));
  for (int op_value : ops) {
    const auto op = static_cast<store::Op>(op_value);
    const std::string name(store::op_name(op));
    chart::Series median{.name = name + " median", .colour = palette::op_colour(op), .mark = chart::Mark::LinePoints};
    chart::Series best{.name = name + " best", .colour = palette::op_colour(op), .mark = chart::Mark::Rings};
    for (const auto& s : a.op_sizes) {
      if (s.op != op) continue;
      const double x = double(s.size_bucket_bytes);
      const std::string where = fmt::format("{} of {}", name, run::format_size_range(s.min_bytes, s.max_bytes));
      median.points.push_back({.x = x, .y = s.median_busbw_gbps,
                               .tip = fmt::format("{}: median {} over {} calls, {} in total", where,
                                                  format_bandwidth(s.median_busbw_gbps), s.instances,
                                                  format_duration(s.total_duration_ns))});
      best.points.push_back({.x = x, .y = s.best_busbw_gbps, .tip = fmt::format("{}: best {}", where, format_bandwidth(s.best_busbw_gbps))});
    }
    c.series.push_back(std::move(median));
    c.series.push_back(std::move(best));
  }
  if (a.options.link_gbps > 0)
    c.references.push_back({.y = a.options.link_gbps, .name = fmt::format("link {} (--link-gbps)", format_bandwidth(a.options.link_gbps))});
  std::string note =
      "<p class=\"note\"><b>Bus bandwidth (busbw)</b>, as nccl-tests defines it: the message size "
      "divided by the transfer time (from the last rank's arrival, so waiting is not counted), times a factor for the "
      "collective's traffic: 2(n−1)/n for allreduce, (n−1)/n for allgather, reduce-scatter and all-to-all, 1 for "
      "broadcast and reduce (n ranks). It is what each link carries, so it compares with the link's bandwidth for any "
      "collective and rank count. Small messages are bound by latency, not bandwidth: their busbw is low whatever "
      "the link.";
  note += a.options.link_gbps > 0 ? "</p>\n" : " Pass <code>--link-gbps</code> to draw the link's bandwidth for comparison.</p>\n";
  return chart::render(c) + note;
}

// Point-to-point (run/point_to_point.hpp): time per rank with its waiting part, messages by size, and who sends
// how much to whom.
std::string point_to_point_section(const Analysis& a) {
  const auto& p = a.point_to_point;
  if (p.empty()) return "<p>No point-to-point calls.</p>\n";
  std::string out;
  double max_ns = 0;
  int lo_rank = INT32_MAX, hi_rank = INT32_MIN;
  for (const auto& r : p.ranks) {
    max_ns = std::max(max_ns, double(r.time_ns));
    lo_rank = std::min(lo_rank, r.world_rank), hi_rank = std::max(hi_rank, r.world_rank);
  }
  const DurationUnit u = duration_unit(max_ns);
  chart::XYChart per_rank;
  per_rank.title = "Time in point-to-point calls per rank";
  per_rank.x = {.label = "rank", .format = step_label, .integer = true, .min = lo_rank - 0.5, .max = hi_rank + 0.5};
  per_rank.y = {.label = fmt::format("time over the run ({})", u.name), .from_zero = true};
  chart::Series time{.name = "in point-to-point calls", .colour = palette::kPointToPoint, .mark = chart::Mark::Bars};
  chart::Series wait{.name = "of it waiting for another rank", .colour = palette::kPointToPointWait, .mark = chart::Mark::Bars};
  for (const auto& r : p.ranks) {
    time.points.push_back({.x = double(r.world_rank), .y = double(r.time_ns) / u.ns,
                           .tip = fmt::format("rank {}: {} in {} point-to-point calls", r.world_rank,
                                              format_duration(double(r.time_ns)), r.calls)});
    wait.points.push_back({.x = double(r.world_rank), .y = double(r.wait_ns) / u.ns,
                           .tip = fmt::format("rank {}: {} of it waiting for another rank", r.world_rank,
                                              format_duration(double(r.wait_ns)))});
  }
  per_rank.series = {time, wait};
  out += chart::render(per_rank) +
         "<p class=\"note\"><b>Time in point-to-point calls</b>: inside blocking calls, and inside the posting and "
         "completion calls (MPI_Wait*, MPI_Test*) of non-blocking ones; one MPI_Waitall that completes several "
         "requests counts once. <b>Waiting</b>: of it, the time a rank's receive waited for a send not yet posted "
         "(late sender) or its synchronous or rendezvous send for a receive not yet posted (late receiver).</p>\n";

  chart::XYChart sizes;
  sizes.title = "Point-to-point messages by size";
  std::int64_t empty_messages = 0;
  double lo = 0, hi = 0;
  chart::Series bins{.name = "messages sent", .colour = palette::kPointToPoint, .mark = chart::Mark::Bars};
  for (const auto& b : p.sizes) {
    if (b.size_bucket_bytes == 0) {
      empty_messages = b.messages;
      continue;
    }
    const double bin_lo = double(b.size_bucket_bytes);
    lo = lo == 0 ? bin_lo : std::min(lo, bin_lo), hi = std::max(hi, 2 * bin_lo);
    bins.points.push_back({.x = bin_lo * std::sqrt(2.0), .y = double(b.messages), .low = bin_lo, .high = 2 * bin_lo,
                           .tip = fmt::format("{}: {} messages, {}", run::format_size_range(b.min_bytes, b.max_bytes),
                                              b.messages, format_bytes(double(b.bytes)))});
  }
  if (!bins.points.empty()) {
    sizes.x = {.label = "message size (bins of a power of two; log scale)", .scale = chart::Scale::Log2,
               .format = [](double v) { return format_bytes(v); }, .min = lo / 2, .max = 2 * hi};  // a bin of room each side
    sizes.y = {.label = "messages", .integer = true, .from_zero = true};
    sizes.series = {bins};
    out += chart::render(sizes);
  }
  out += fmt::format("<p class=\"note\">{} messages sent, {} in all, as the senders counted them; {} matched with "
                     "their receive{}.</p>\n",
                     p.messages, format_bytes(double(p.bytes)), p.matched_messages,
                     empty_messages > 0 ? fmt::format("; {} of them empty (0 bytes, not drawn)", empty_messages) : "");
  out += "<table><tr><th>rank</th><th>point-to-point calls</th><th>messages sent</th><th>bytes sent</th>"
         "<th>messages received</th><th>bytes received</th></tr>\n";
  for (const auto& r : p.ranks)
    out += fmt::format("<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                       "<td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
                       r.world_rank, r.calls, r.messages_sent, format_bytes(double(r.bytes_sent)), r.messages_received,
                       format_bytes(double(r.bytes_received)));
  out += "</table>\n";

  // The communication matrix: bytes from each sender (row) to each receiver (column).
  chart::HeatMap matrix;
  matrix.title = "Bytes sent point-to-point, sender × receiver";
  matrix.x.label = "receiver rank";
  std::vector<int> world;
  for (const auto& r : a.run.ranks) world.push_back(r.world_rank);
  matrix.x.format = [world](double column) {
    const auto k = static_cast<std::size_t>(std::llround(column));
    return k < world.size() ? std::to_string(world[k]) : std::string();
  };
  // Cells in one binary unit, so that the colour bar's ticks are round numbers of it (0, 50, 100, 150 KiB).
  double max_bytes = 0;
  for (const auto& m : p.pairs) max_bytes = std::max(max_bytes, double(m.bytes));
  const ByteUnit bu = byte_unit(max_bytes);
  matrix.value_label = fmt::format("bytes sent ({})", bu.name);
  matrix.format_value = [](double v) {  // "0", "50", "48.8", "2.5": whole ticks without decimals
    return v == std::floor(v) || v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.3}", v);
  };
  matrix.ramp = palette::amount_colour;
  std::map<std::pair<int, int>, std::int64_t> bytes_of;
  for (const auto& m : p.pairs) bytes_of[{m.sender, m.receiver}] = m.bytes;
  for (int sender : world) {
    matrix.row_labels.push_back(fmt::format("rank {}", sender));
    std::vector<double> row;
    for (int receiver : world) {
      const auto it = bytes_of.find({sender, receiver});
      row.push_back(it == bytes_of.end() ? 0 : double(it->second) / bu.bytes);
    }
    matrix.cells.push_back(std::move(row));
  }
  // Hover text by the labels the heat map passes: a single cell also says its message count (a merged block, labelled
  // "rank 0–rank 7", shows its largest cell's bytes only).
  std::map<std::pair<std::string, std::string>, std::int64_t> messages;
  for (const auto& m : p.pairs) messages[{fmt::format("rank {}", m.sender), std::to_string(m.receiver)}] = m.messages;
  matrix.tip = [messages, bu](const std::string& row, const std::string& column, double value) {
    const double bytes = value * bu.bytes;
    if (const auto it = messages.find({row, column}); it != messages.end())
      return fmt::format("{} → rank {}: {} in {} messages", row, column, format_bytes(bytes), it->second);
    return fmt::format("{} → rank {}: {}", row, column, format_bytes(bytes));
  };
  out += chart::render(matrix) +
         "<p class=\"note\">Each row is a sender, each column a receiver: a halo exchange is a band along the "
         "diagonal, a rank that everyone talks to a dark column. More ranks than fit are merged (their largest "
         "cell).</p>\n";
  return out;
}

std::string findings_section(const Analysis& a) {
  std::string out = fmt::format("<h2>Findings ({})</h2>\n", a.findings.size());
  if (a.findings.empty()) return out + "<p>No findings: nothing here slows the job measurably.</p>\n";
  for (const auto& f : a.findings) {
    const auto colour = f.severity == Severity::Critical  ? palette::kCritical
                        : f.severity == Severity::Warning ? palette::kWarning
                                                          : palette::kInfo;
    out += fmt::format(
        "<div class=\"finding\" style=\"border-color:{0}\"><span class=\"severity\" style=\"background:{0}\">{1}</span> "
        "<b>{2}</b>{3}<br>{4}<br><i>Do:</i> {5}</div>\n",
        palette::hex(colour), severity_name(f.severity), xml_escape(f.title),
        f.cost_ns > 0 ? fmt::format(" <span class=\"cost\">costs {}</span>", format_duration(f.cost_ns)) : "",
        xml_escape(f.evidence_text), xml_escape(f.suggestion));
  }
  return out;
}

std::string tables_section(const Analysis& a) {
  std::string out;
  auto sizes = a.op_sizes;
  std::sort(sizes.begin(), sizes.end(), [](const auto& x, const auto& y) { return x.total_duration_ns > y.total_duration_ns; });
  if (!sizes.empty()) {
    out += "<h2>Collectives by time</h2>\n<table><tr><th>operation</th><th>message size</th><th>calls</th><th>time</th>"
           "<th>busbw median</th><th>busbw best</th></tr>\n";
    for (const auto& s : sizes)
      out += fmt::format("<tr><td><span class=\"swatch\" style=\"background:{}\"></span>{}</td><td>{}</td><td class=\"n\">{}</td>"
                         "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
                         palette::hex(palette::op_colour(s.op)), store::op_name(s.op),
                         run::format_size_range(s.min_bytes, s.max_bytes), s.instances, format_duration(s.total_duration_ns),
                         format_bandwidth(s.median_busbw_gbps), format_bandwidth(s.best_busbw_gbps));
    out += "</table>\n";
  }
  const auto& p2p = a.point_to_point;
  out += fmt::format("<h2>Ranks</h2>\n<table><tr><th>rank</th><th>host</th><th>collectives</th><th>late (median step)</th>"
                     "<th>waits (median step)</th><th>late in all</th>{}<th>clock offset</th><th>clock residual</th></tr>\n",
                     p2p.empty() ? "" : "<th>point-to-point</th><th>of it waiting</th>");
  const bool measured = a.lateness.measurable();
  for (std::size_t r = 0; r < a.run.ranks.size(); ++r) {
    std::string p2p_cells;
    if (!p2p.empty()) {
      const auto& pr = p2p.ranks[r];
      p2p_cells = fmt::format("<td class=\"n\">{}</td><td class=\"n\">{}</td>", format_duration(double(pr.time_ns)),
                              format_duration(double(pr.wait_ns)));
    }
    out += fmt::format("<tr><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                       "<td class=\"n\">{}</td>{}<td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
                       a.run.ranks[r].world_rank, xml_escape(a.run.ranks[r].host), a.run.ranks[r].collectives.size(),
                       measured ? format_duration(a.lateness.median_lateness_ns[r]) : "–",
                       measured ? format_duration(a.lateness.median_wait_ns[r]) : "–",
                       measured ? format_duration(a.lateness.total_lateness_ns[r]) : "–", p2p_cells,
                       format_duration(double(a.clocks.offset_ns[r])), format_duration(a.clocks.residual_ns[r]));
  }
  out += fmt::format("</table>\n<p class=\"note\"><b>Late</b> and <b>waits</b>: {}.{} <b>Clock offset</b>: added to the "
                     "rank's clock to put it on the run's time line; <b>residual</b>: how well the collectives' ends "
                     "agree after that.</p>\n",
                     xml_escape(a.lateness.basis),
                     p2p.empty() ? "" : " <b>Point-to-point</b>: time in point-to-point calls over the run, and of it "
                                        "waiting for another rank (messages per rank: under Point-to-point).");
  return out;
}

std::string summary_html(const Analysis& a) {
  std::set<std::string> hosts;
  for (const auto& r : a.run.ranks) hosts.insert(r.host);
  std::string s = fmt::format("{} ranks on {} host{}, {} collectives", a.run.ranks.size(), hosts.size(), hosts.size() == 1 ? "" : "s",
                              a.run.collective_count());
  if (a.steps.steps.empty()) {
    s += fmt::format(", no steps found; {} traced, {} per rank in collectives", format_duration(a.wall_ns), format_duration(a.comm_ns));
  } else {
    s += fmt::format(", {} steps ({}). Step time {} mean, {} median; {} of it in collectives ({:.0f} %), {} of that waiting",
                     a.steps.steps.size(), a.steps.source == "nvtx" ? "NVTX ranges" : a.steps.source, format_duration(a.steps.mean_step_ns),
                     format_duration(a.steps.median_step_ns), format_duration(a.steps.mean_comm_ns),
                     100 * a.steps.mean_comm_ns / std::max(1.0, a.steps.mean_step_ns), format_duration(a.steps.mean_wait_ns));
    if (a.steps.throughput_samples_per_s > 0) s += fmt::format("; {:.1f} samples/s", a.steps.throughput_samples_per_s);
  }
  if (const auto& p = a.point_to_point; !p.empty())
    s += fmt::format(". Point-to-point: {} per rank over the run, {} of it waiting; {} messages, {}", format_duration(p.mean_time_ns),
                     format_duration(p.mean_wait_ns), p.messages, format_bytes(double(p.bytes)));
  return s + ".";
}

}  // namespace

std::string html_report(const Analysis& a) {
  std::string out = R"(<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>collscope analysis</title><style>
body{font-family:sans-serif;max-width:980px;margin:2em auto;padding:0 1em;color:#222;line-height:1.4}
h2{margin-top:1.6em;border-bottom:1px solid #ddd}
.finding{border-left:5px solid #888;padding:.3em .8em;margin:.8em 0;background:#fafafa}
.severity{color:#fff;border-radius:3px;padding:0 .4em;font-size:85%;text-transform:uppercase}
.cost{color:#555}.note{color:#444;font-size:90%;max-width:760px}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;font-size:90%}td.n{text-align:right}
.swatch{display:inline-block;width:10px;height:10px;margin-right:6px;border-radius:2px}
svg{display:block;margin:.5em 0;max-width:100%;height:auto}</style></head><body>
)";
  out += fmt::format("<h1>collscope analysis</h1>\n<p><code>{}</code></p>\n<p>{}</p>\n", xml_escape(a.run.dir), xml_escape(summary_html(a)));
  if (!a.steps.basis.empty())
    out += fmt::format("<p>Steps ({}, confidence {:.2f}): {}</p>\n", a.steps.source, a.steps.confidence, xml_escape(a.steps.basis));
  for (const auto& p : a.run.problems) out += fmt::format("<p><b>Problem:</b> {}</p>\n", xml_escape(p));
  for (const auto& n : a.notes) out += fmt::format("<p><b>Note:</b> {}</p>\n", xml_escape(n));
  out += findings_section(a);
  out += "<h2>Who is late</h2>\n" + lateness_section(a);
  out += "<h2>Step time</h2>\n" + step_time_per_rank_section(a) + step_breakdown_section(a);
  out += "<h2>Bandwidth</h2>\n" + busbw_section(a);
  if (!a.point_to_point.empty()) out += "<h2>Point-to-point</h2>\n" + point_to_point_section(a);
  out += tables_section(a);
  out += "</body></html>\n";
  return out;
}

}  // namespace collscope::analyzer
