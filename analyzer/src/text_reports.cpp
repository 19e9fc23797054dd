// Text (people), JSON (machines, docs/report-json.md) and Markdown (CI step summaries) reports.
#include <collscope/analyzer/markup.hpp>
#include <collscope/analyzer/report.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>

#include <collscope/run/workload.hpp>

#include <algorithm>
#include <cstdlib>
#include <functional>

namespace collscope::analyzer {
namespace {



// For a terminal: every line of a text report fits this many columns; long sentences wrap under their label.
constexpr std::size_t kTextWidth = 100;

std::string key_hex(std::uint64_t k) { return fmt::format("{:#018x}", k); }

// A finding's communicator for people, by its key (run/communicator_names.hpp); `fallback` when the run lacks it.
std::string display_name_of(const Run& run, std::uint64_t key, const std::string& fallback) {
  for (const auto& c : run.communicators)
    if (c.key == key) return c.shown_name();
  return fallback;
}

// Per rank index, the lateness in step k (empty when not measured).
std::vector<double> step_column(const Lateness& l, int k) {
  std::vector<double> v;
  if (!l.measurable()) return v;
  for (const auto& per_rank : l.lateness_ns)
    if (static_cast<std::size_t>(k) < per_rank.size()) v.push_back(per_rank[k]);
  return v;
}

// "clocks: one host, one clock (offsets 0)" or "clocks: 3 hosts, aligned from 812 collectives, residual 1.2 µs".
std::string clock_line(const Analysis& a) {
  if (a.clocks.hosts.size() <= 1)
    return fmt::format("clocks: one host, one clock: {} ranks read the same CLOCK_MONOTONIC (no offset, no residual)",
                       a.run.ranks.size());
  return fmt::format("clocks: {} hosts ({} ranks), one offset per host, refined from {} synchronising collectives; "
                     "residual {} (median over ranks of |end − instance median end|)",
                     a.clocks.hosts.size(), a.run.ranks.size(), a.clocks.instances_used,
                     format_duration(a.clocks.residual_p50_ns));
}

// "Horovod (version not recorded) over MPI (Open MPI v4.1.4)", "benchmark osu_allreduce over MPI".
std::string workload_text(const run::Workload& w) {
  std::string s = !w.benchmark.empty() ? "benchmark " + w.benchmark
                  : w.horovod          ? "Horovod " + (w.horovod_version.empty() ? std::string("(version not recorded)") : w.horovod_version)
                                       : std::string("collectives");
  std::string lib = w.mpi_library.substr(0, w.mpi_library.find(','));
  if (w.mpi) s += " over MPI" + (lib.empty() ? std::string() : " (" + lib + ")");
  if (w.nccl) s += std::string(w.mpi ? " and" : " over") + " NCCL";
  if (w.torch_distributed) s += std::string(w.mpi || w.nccl ? " and" : " over") + " torch.distributed";
  return s;
}

std::string summary_line(const Analysis& a) {
  std::string s = fmt::format("{} ranks, {} collectives, {} communicators; ", a.run.ranks.size(), a.run.collective_count(),
                              a.run.communicators.size());
  if (!a.steps.steps.empty()) {
    s += fmt::format("{} steps ({}), step {} mean / {} median, {} in collectives ({:.0f} %), {}",
                     a.steps.steps.size(),
                     a.steps.method == run::StepMethod::Nvtx
                         ? std::string("nvtx")
                         : fmt::format("inferred, confidence {} {:.2f}", a.steps.confidence_label(), a.steps.confidence),
                     format_ms(a.steps.mean_step_ns), format_ms(a.steps.median_step_ns),
                     format_ms(a.steps.mean_comm_ns), 100 * a.steps.mean_comm_ns / std::max(1.0, a.steps.mean_step_ns),
                     a.lateness.measurable() ? format_ms(a.steps.mean_wait_ns) + " waiting for other ranks"
                                             : std::string("waiting not measurable"));
    if (a.steps.throughput_samples_per_s > 0) s += fmt::format(", {:.1f} samples/s", a.steps.throughput_samples_per_s);
  } else {
    s += fmt::format("no steps found; {} traced, {} per rank in collectives", format_ms(a.wall_ns), format_ms(a.comm_ns));
  }
  if (const auto& p = a.point_to_point; !p.empty())
    s += fmt::format("; point-to-point: {} per rank over the run ({} of it waiting), {} messages, {}", format_ms(p.mean_time_ns),
                     format_ms(p.mean_wait_ns), p.messages, format_bytes(double(p.bytes)));
  if (!a.steps.basis.empty()) s += fmt::format("\nsteps: {}", a.steps.basis);
  s += "\njob: " + workload_text(run::describe_workload(a.run));
  return s;
}

// The per-rank table: a column's name over its unit, right-aligned over its numbers (host left-aligned), within
// 97 columns with every column present.
std::string rank_table(const Analysis& a) {
  struct Column {
    std::string name, unit;
    int width;
    std::function<std::string(std::size_t rank, int width)> cell;
  };
  auto ms = [](double ns, int width) { return fmt::format("{:>{}.2f}", ns / 1e6, width); };
  const std::string per = a.steps.steps.empty() ? "(ms/run)" : "(ms/step)";
  std::vector<Column> columns{
      {"rank", "", 4, [&](std::size_t r, int w) { return fmt::format("{:>{}}", a.run.ranks[r].world_rank, w); }},
      {"host", "", -16, [&](std::size_t r, int w) { return fmt::format("{:<{}}", a.run.ranks[r].host.substr(0, 16), w); }}};
  if (a.lateness.measurable()) {
    columns.push_back({"late", per, 9, [&](std::size_t r, int w) { return ms(a.lateness.median_lateness_ns[r], w); }});
    columns.push_back({"waits", per, 9, [&](std::size_t r, int w) { return ms(a.lateness.median_wait_ns[r], w); }});
    columns.push_back({"late in all", "(ms)", 11, [&](std::size_t r, int w) { return ms(a.lateness.total_lateness_ns[r], w); }});
  }
  const auto& p2p = a.point_to_point;
  if (!p2p.empty()) {
    columns.push_back({"p2p", "(ms)", 10, [&](std::size_t r, int w) { return ms(double(p2p.ranks[r].time_ns), w); }});
    columns.push_back({"p2p wait", "(ms)", 10, [&](std::size_t r, int w) { return ms(double(p2p.ranks[r].wait_ns), w); }});
  }
  columns.push_back({"clock offset", "(us)", 12, [&](std::size_t r, int w) {
                       return fmt::format("{:>{}.1f}", double(a.clocks.offset_ns[r]) / 1e3, w);
                     }});
  std::string names = "  ", units = "  ";
  for (const auto& c : columns) {
    const int w = std::abs(c.width);
    const char* sep = &c == &columns.back() ? "" : "  ";
    names += (c.width < 0 ? fmt::format("{:<{}}", c.name, w) : fmt::format("{:>{}}", c.name, w)) + sep;
    units += (c.width < 0 ? fmt::format("{:<{}}", c.unit, w) : fmt::format("{:>{}}", c.unit, w)) + sep;
  }
  auto trim = [](std::string line) {
    line.erase(line.find_last_not_of(' ') + 1);
    return line + "\n";
  };
  std::string out = trim(names) + trim(units);
  for (std::size_t r = 0; r < a.run.ranks.size(); ++r) {
    std::string row = "  ";
    for (const auto& c : columns) row += c.cell(r, std::abs(c.width)) + (&c == &columns.back() ? "" : "  ");
    out += trim(row);
  }
  if (!p2p.empty())
    out += wrap_text("  p2p: time in point-to-point calls over the run; p2p wait: of it waiting for another rank (late "
                     "sender, late receiver)",
                     kTextWidth, 7) +
           "\n";
  return out;
}

// Where each rank's step time goes (run::RankTimeBreakdown): HTA's temporal breakdown and overlap, per rank, ms per
// measured step. "" without measured steps.
std::string time_breakdown_table(const Analysis& a) {
  const auto& breakdown = a.steps.rank_breakdown;
  if (breakdown.empty() || a.steps.measured_steps() == 0) return "";
  const bool any_compute =
      std::any_of(breakdown.begin(), breakdown.end(), [](const auto& b) { return b.compute_recorded; });
  std::string out =
      "\n" +
      wrap_text(fmt::format("time per step by rank, ms (mean over {} measured steps): {}in collectives{}; other: "
                            "{} (who waits for whom: the table above)",
                            a.steps.measured_steps(), any_compute ? "compute (GPU kernels but NCCL's); " : "",
                            any_compute ? ", of it hidden by kernels" : "",
                            any_compute ? "idle or work on a CPU" : "the rest of the step (compute on CPUs, idle)"),
                kTextWidth, 2) +
      "\n";
  // Without kernels the compute and hidden columns would only say "-": left out.
  const std::string row = any_compute ? "  {:>4}  {:>9}  {:>9}  {:>11}  {:>12}  {:>9}\n"
                                      : "  {:>4}  {:>9}  {:>11}  {:>9}\n";
  const auto ms = [](double ns) { return fmt::format("{:.2f}", ns / 1e6); };
  if (any_compute)
    out += fmt::format(fmt::runtime(row), "rank", "step", "compute", "collectives", "hidden (%)", "other");
  else
    out += fmt::format(fmt::runtime(row), "rank", "step", "collectives", "other");
  for (std::size_t r = 0; r < breakdown.size() && r < a.run.ranks.size(); ++r) {
    const auto& b = breakdown[r];
    const int rank = a.run.ranks[r].world_rank;
    if (!any_compute) {
      out += fmt::format(fmt::runtime(row), rank, ms(b.step_ns), ms(b.comm_ns), ms(b.other_ns));
      continue;
    }
    const std::string compute = b.compute_recorded ? ms(b.compute_ns) : "-";
    const std::string hidden =
        b.comm_ns > 0 ? fmt::format("{:.2f} ({:>3.0f})", b.overlap_ns / 1e6, 100 * b.overlap_ns / b.comm_ns) : "-";
    out += fmt::format(fmt::runtime(row), rank, ms(b.step_ns), compute, ms(b.comm_ns), hidden, ms(b.other_ns));
  }
  return out;
}

// Messages by size and the busiest pairs, as sent (run/point_to_point.hpp).
std::string point_to_point_tables(const run::PointToPointSummary& p) {
  if (p.empty()) return "";
  std::string out = "\n" + wrap_text(fmt::format("point-to-point: {} calls, {} messages sent ({}); {} matched with their "
                                                 "receive, {} sends and {} receives unmatched",
                                                 p.calls, p.messages, format_bytes(double(p.bytes)), p.matched_messages,
                                                 p.unmatched_sends, p.unmatched_receives),
                                     kTextWidth, 4) +
                    "\n";
  if (p.sizes.empty()) return out;
  out += "  message size         messages         bytes\n";
  for (const auto& b : p.sizes)
    out += fmt::format("  {:<18}  {:>9}  {:>12}\n", run::format_size_range(b.min_bytes, b.max_bytes), b.messages,
                       format_bytes(double(b.bytes)));
  auto pairs = p.pairs;
  std::stable_sort(pairs.begin(), pairs.end(), [](const auto& x, const auto& y) { return x.bytes > y.bytes; });
  out += fmt::format("  from → to            messages         bytes   ({} of {} pairs, most bytes first)\n",
                     std::min<std::size_t>(8, pairs.size()), pairs.size());
  for (std::size_t k = 0; k < std::min<std::size_t>(8, pairs.size()); ++k)
    out += fmt::format("  {:<18}  {:>9}  {:>12}\n", fmt::format("{} → {}", pairs[k].sender, pairs[k].receiver),
                       pairs[k].messages, format_bytes(double(pairs[k].bytes)));
  return out;
}

}  // namespace

ReportFormat report_format_from_name(const std::string& name) {
  if (name == "text") return ReportFormat::Text;
  if (name == "json") return ReportFormat::Json;
  if (name == "markdown" || name == "md") return ReportFormat::Markdown;
  if (name == "html") return ReportFormat::Html;
  throw InputError(fmt::format("--format {}: unknown report format (text, json, markdown, html)", name));
}

std::string text_report(const Analysis& a) {
  std::string out = wrap_text(fmt::format("== collscope analysis of {} ==", a.run.dir), kTextWidth, 3) + "\n" +
                    wrap_text(summary_line(a), kTextWidth) + "\n";
  for (const auto& p : a.run.problems) out += wrap_text("problem: " + p, kTextWidth, 4) + "\n";
  for (const auto& n : a.notes) out += wrap_text("note: " + n, kTextWidth, 6) + "\n";
  if (a.findings.empty()) {
    out += "\nNo findings: nothing here slows the job measurably.\n";
  } else {
    out += fmt::format("\n{} finding(s), most costly first:\n", a.findings.size());
    int k = 0;
    for (const auto& f : a.findings) {
      out += "\n" + wrap_text(fmt::format("{}. [{}] {}", ++k, severity_name(f.severity), f.title), kTextWidth, 3) + "\n";
      if (f.cost_ns > 0) out += fmt::format("   cost: {} of job time\n", format_ms(f.cost_ns));
      out += wrap_text("   evidence: " + f.evidence_text, kTextWidth, 13) + "\n";
      out += wrap_text("   do: " + f.suggestion, kTextWidth, 7) + "\n";
    }
  }
  out += "\n" + wrap_text("per rank: lateness and wait " + a.lateness.basis, kTextWidth, 10) + "\n";
  out += rank_table(a);
  out += clock_line(a) + "\n";
  out += time_breakdown_table(a);
  auto sizes = a.op_sizes;
  std::sort(sizes.begin(), sizes.end(), [](const auto& x, const auto& y) { return x.total_duration_ns > y.total_duration_ns; });
  if (!sizes.empty()) {
    out += "\ntop collectives by time (busbw in GB/s, best = p95):\n"
           "  op                                  size   count   time(ms)  busbw median/best\n";
    for (std::size_t i = 0; i < std::min<std::size_t>(8, sizes.size()); ++i)
      out += fmt::format("  {:<20}  {:>18}  {:>6}  {:>9.2f}  {:.2f} / {:.2f}\n",
                         store::op_name(sizes[i].op), run::format_size_range(sizes[i].min_bytes, sizes[i].max_bytes), sizes[i].instances,
                         sizes[i].total_duration_ns / 1e6, sizes[i].median_busbw_gbps, sizes[i].best_busbw_gbps);
    out += wrap_text("busbw: bus bandwidth as nccl-tests defines it (the message size over the transfer time, times "
                     "2(n-1)/n for allreduce, (n-1)/n for allgather and reduce-scatter), comparable with the link's "
                     "bandwidth; size: the smallest and largest message seen in each power-of-two size class.",
                     kTextWidth, 0) +
           "\n";
  }
  out += point_to_point_tables(a.point_to_point);
  return out;
}

nlohmann::json json_report(const Analysis& a) {
  using nlohmann::json;
  json j;
  j["schema"] = "collscope.analysis/1";
  j["run_dir"] = a.run.dir;
  j["world_size"] = a.run.world_size;
  j["problems"] = a.run.problems;
  j["notes"] = a.notes;
  const auto w = run::describe_workload(a.run);
  j["workload"] = {{"benchmark", w.benchmark}, {"horovod", w.horovod}, {"horovod_version", w.horovod_version},
                   {"mpi", w.mpi}, {"nccl", w.nccl}, {"torch_distributed", w.torch_distributed}, {"mpi_library", w.mpi_library}, {"text", workload_text(w)}};
  json ranks = json::array();
  for (std::size_t r = 0; r < a.run.ranks.size(); ++r) {
    const auto& t = a.run.ranks[r];
    ranks.push_back({{"world_rank", t.world_rank},
                     {"host", t.host},
                     {"file", t.path},
                     {"collectives", t.collectives.size()},
                     {"clock_offset_ns", a.clocks.offset_ns[r]},
                     {"clock_anchor_offset_ns", a.clocks.anchor_offset_ns[r]},
                     {"clock_residual_ns", a.clocks.residual_ns[r]},
                     {"clock_host", a.clocks.hosts.empty() ? std::string() : a.clocks.hosts[a.clocks.host_of_rank[r]]},
                     {"lateness_per_step_ns", a.lateness.median_lateness_ns[r]},
                     {"wait_per_step_ns", a.lateness.median_wait_ns[r]},
                     {"lateness_ns", a.lateness.total_lateness_ns[r]},
                     {"wait_ns", a.lateness.total_wait_ns[r]}});
    const run::PointToPointRank none{};
    const auto& p = r < a.point_to_point.ranks.size() ? a.point_to_point.ranks[r] : none;
    if (r < a.steps.rank_breakdown.size() && a.steps.measured_steps() > 0) {
      const auto& b = a.steps.rank_breakdown[r];
      ranks.back()["time_per_step"] = {{"step_ns", b.step_ns},
                                       {"compute_ns", b.compute_recorded ? json(b.compute_ns) : json(nullptr)},
                                       {"collectives_ns", b.comm_ns},
                                       {"hidden_by_compute_ns", b.overlap_ns},
                                       {"other_ns", b.other_ns}};
    }
    if (r < a.lateness.step_thread_wait.size()) {  // with CPU samples and steps (run/lateness.hpp)
      ranks.back()["run_queue_per_step_ns"] = a.lateness.step_thread_wait[r].per_step_ns;
      ranks.back()["run_queue_share_pct"] = 100 * a.lateness.step_thread_wait[r].share;
      if (r < a.lateness.comm_thread_wait.size() && a.lateness.comm_thread_wait[r].share > 0) {
        ranks.back()["comm_run_queue_per_step_ns"] = a.lateness.comm_thread_wait[r].per_step_ns;
        ranks.back()["comm_run_queue_share_pct"] = 100 * a.lateness.comm_thread_wait[r].share;
      }
    }
    ranks.back().update({{"p2p_calls", p.calls},
                         {"p2p_ns", p.time_ns},
                         {"p2p_wait_ns", p.wait_ns},
                         {"messages_sent", p.messages_sent},
                         {"bytes_sent", p.bytes_sent},
                         {"messages_received", p.messages_received},
                         {"bytes_received", p.bytes_received}});
  }
  j["ranks"] = ranks;
  json comms = json::array();
  for (std::size_t c = 0; c < a.run.communicators.size(); ++c) {
    const auto& cm = a.run.communicators[c];
    comms.push_back({{"key", key_hex(cm.key)},
                     {"name", cm.name},
                     {"display_name", cm.shown_name()},
                     {"backend", store::backend_name(cm.backend)},
                     {"size", cm.size},
                     {"members", cm.members},
                     {"instances", a.matched.comm_first[c + 1] - a.matched.comm_first[c]}});
  }
  j["communicators"] = comms;
  j["clock"] = {{"hosts", a.clocks.hosts.size()},
                {"residual_p50_ns", a.clocks.residual_p50_ns},
                {"instances_used", a.clocks.instances_used},
                {"origin_ns", a.clocks.origin_ns},
                {"text", clock_line(a)}};
  json segments = json::array();
  for (const auto& seg : a.lateness.segments) segments.push_back({{"label", seg.label}, {"lag_gain_ns", seg.lag_gain_ns}});
  j["lateness"] = {{"source", run::lateness_source_name(a.lateness.source)},
                   {"basis", a.lateness.basis},
                   {"segments", segments}};
  j["summary"] = {{"collectives", a.run.collective_count()},
                  {"instances", a.matched.instances.size()},
                  {"wall_ns", a.wall_ns},
                  {"comm_ns_per_rank", a.comm_ns},
                  {"p2p_ns_per_rank", a.point_to_point.mean_time_ns},
                  {"p2p_wait_ns_per_rank", a.point_to_point.mean_wait_ns},
                  {"step_source", a.steps.source},
                  {"step_method", run::step_method_name(a.steps.method)},
                  {"step_confidence", a.steps.confidence},
                  {"step_basis", a.steps.basis},
                  {"step_bytes_per_step", a.steps.bytes_per_step},
                  {"steps", a.steps.steps.size()},
                  {"warmup_steps", a.steps.warmup_steps},
                  {"mean_step_ns", a.steps.mean_step_ns},
                  {"median_step_ns", a.steps.median_step_ns},
                  {"mean_comm_ns", a.steps.mean_comm_ns},
                  {"mean_wait_ns", a.steps.mean_wait_ns},
                  {"mean_exposed_comm_ns", a.steps.mean_exposed_ns},
                  {"throughput_samples_per_s", a.steps.throughput_samples_per_s},
                  {"analysis_seconds", a.analysis_seconds}};
  json steps = json::array();
  for (const auto& s : a.steps.steps)
    steps.push_back({{"index", s.index},
                     {"start_ns", s.start_ns},
                     {"duration_ns", s.duration_ns},
                     {"comm_ns", s.comm_ns},
                     {"wait_ns", s.wait_ns},
                     {"exposed_comm_ns", s.exposed_comm_ns},
                     {"rank_wait_ns", s.rank_wait_ns},
                     {"rank_lateness_ns", step_column(a.lateness, s.index)}});
  j["steps"] = steps;
  json sizes = json::array();
  for (const auto& s : a.op_sizes)
    sizes.push_back({{"op", store::op_name(s.op)},
                     {"size_bucket_bytes", s.size_bucket_bytes},
                     {"min_bytes", s.min_bytes},
                     {"max_bytes", s.max_bytes},
                     {"instances", s.instances},
                     {"total_duration_ns", s.total_duration_ns},
                     {"median_busbw_gbps", s.median_busbw_gbps},
                     {"best_busbw_gbps", s.best_busbw_gbps}});
  j["op_sizes"] = sizes;
  const auto& p2p = a.point_to_point;
  json pairs = json::array(), message_sizes = json::array();
  for (const auto& p : p2p.pairs)
    pairs.push_back({{"sender", p.sender}, {"receiver", p.receiver}, {"messages", p.messages}, {"bytes", p.bytes}});
  for (const auto& b : p2p.sizes)
    message_sizes.push_back({{"size_bucket_bytes", b.size_bucket_bytes},
                             {"min_bytes", b.min_bytes},
                             {"max_bytes", b.max_bytes},
                             {"messages", b.messages},
                             {"bytes", b.bytes}});
  j["point_to_point"] = {{"calls", p2p.calls},
                         {"messages", p2p.messages},
                         {"bytes", p2p.bytes},
                         {"matched_messages", p2p.matched_messages},
                         {"unmatched_sends", p2p.unmatched_sends},
                         {"unmatched_receives", p2p.unmatched_receives},
                         {"pairs", pairs},
                         {"message_sizes", message_sizes}};
  json findings = json::array();
  for (const auto& f : a.findings) {
    json e = json::object();
    for (const auto& [k, v] : f.evidence) e[k] = v;
    findings.push_back({{"kind", finding_kind_name(f.kind)},
                        {"severity", severity_name(f.severity)},
                        {"title", f.title},
                        {"ranks", f.ranks},
                        {"communicator", f.comm_key ? json{{"key", key_hex(*f.comm_key)},
                                                            {"name", f.comm_name},
                                                            {"display_name", display_name_of(a.run, *f.comm_key, f.comm_name)}}
                                                      : json()},
                        {"seq", f.seq ? json(*f.seq) : json()},
                        {"evidence", e},
                        {"evidence_text", f.evidence_text},
                        {"cost_ns", f.cost_ns},
                        {"suggestion", f.suggestion}});
  }
  j["findings"] = findings;
  return j;
}

std::string markdown_report(const Analysis& a) {
  // Every name from the trace (directory, communicators in titles, problems) goes through markdown_text: a CI step
  // summary renders HTML, so a communicator named <img src=x onerror=...> must arrive as text.
  std::string out = fmt::format("## collscope analysis: {}\n\n{}\n\n", markdown_code(a.run.dir), markdown_text(summary_line(a)));
  for (const auto& p : a.run.problems) out += fmt::format("> problem: {}\n", markdown_text(p));
  for (const auto& n : a.notes) out += fmt::format("> note: {}\n", markdown_text(n));
  if (!a.run.problems.empty() || !a.notes.empty()) out += "\n";
  if (a.findings.empty()) {
    out += "No findings.\n";
  } else {
    out += "| # | severity | finding | cost | do |\n|---|---|---|---|---|\n";
    int k = 0;
    for (const auto& f : a.findings)
      out += fmt::format("| {} | {} | {} | {} | {} |\n", ++k, severity_name(f.severity), markdown_text(f.title),
                         f.cost_ns > 0 ? format_ms(f.cost_ns) : "-", markdown_text(f.suggestion));
    out += "\n<details><summary>evidence</summary>\n\n";
    k = 0;
    for (const auto& f : a.findings) out += fmt::format("{}. {}\n", ++k, markdown_text(f.evidence_text));
    out += "\n</details>\n";
  }
  return out;
}

std::string render_report(const Analysis& a, ReportFormat format) {
  switch (format) {
    case ReportFormat::Text: return text_report(a);
    case ReportFormat::Json: return json_text(json_report(a)) + "\n";
    case ReportFormat::Markdown: return markdown_report(a);
    case ReportFormat::Html: return html_report(a);
  }
  return text_report(a);
}

}  // namespace collscope::analyzer
