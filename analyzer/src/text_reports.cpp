// Text (people), JSON (machines, docs/report-json.md) and Markdown (CI step summaries) reports.
#include <collscope/analyzer/markup.hpp>
#include <collscope/analyzer/report.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>

#include <algorithm>

#include <collscope/run/workload.hpp>

namespace collscope::analyzer {
namespace {



std::string key_hex(std::uint64_t k) { return fmt::format("{:#018x}", k); }

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
  if (!a.steps.basis.empty()) s += fmt::format("\nsteps: {}", a.steps.basis);
  s += "\njob: " + workload_text(run::describe_workload(a.run));
  return s;
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
  // For a terminal: every line fits kTextWidth columns; long sentences wrap under their label.
  constexpr std::size_t kTextWidth = 100;
  std::string out = fmt::format("== collscope analysis of {} ==\n{}\n", a.run.dir, wrap_text(summary_line(a), kTextWidth));
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
  const char* unit = a.steps.steps.empty() ? "run" : "step";
  if (a.lateness.measurable())
    out += fmt::format("           rank  host              late(ms/{0})  waits(ms/{0})  late in all(ms)  clock offset(us)\n", unit);
  else
    out += "           rank  host              clock offset(us)\n";
  for (std::size_t r = 0; r < a.run.ranks.size(); ++r) {
    if (a.lateness.measurable())
      out += fmt::format("           {:>4}  {:<16}  {:>12.2f}  {:>13.2f}  {:>15.2f}  {:>16.1f}\n", a.run.ranks[r].world_rank,
                         a.run.ranks[r].host.substr(0, 16), a.lateness.median_lateness_ns[r] / 1e6,
                         a.lateness.median_wait_ns[r] / 1e6, a.lateness.total_lateness_ns[r] / 1e6,
                         double(a.clocks.offset_ns[r]) / 1e3);
    else
      out += fmt::format("           {:>4}  {:<16}  {:>16.1f}\n", a.run.ranks[r].world_rank, a.run.ranks[r].host.substr(0, 16),
                         double(a.clocks.offset_ns[r]) / 1e3);
  }
  out += clock_line(a) + "\n";
  auto sizes = a.op_sizes;
  std::sort(sizes.begin(), sizes.end(), [](const auto& x, const auto& y) { return x.total_duration_ns > y.total_duration_ns; });
  if (!sizes.empty()) {
    out += "\ntop collectives by time (busbw in GB/s, best = p95):\n"
           "                          op            size                count   time(ms)  busbw median/best\n";
    for (std::size_t i = 0; i < std::min<std::size_t>(8, sizes.size()); ++i)
      out += fmt::format("                          {:<12}  {:>18}  {:>6}  {:>9.2f}  {:.2f} / {:.2f}\n",
                         store::op_name(sizes[i].op), run::format_size_range(sizes[i].min_bytes, sizes[i].max_bytes), sizes[i].instances,
                         sizes[i].total_duration_ns / 1e6, sizes[i].median_busbw_gbps, sizes[i].best_busbw_gbps);
    out += wrap_text("busbw: bus bandwidth as nccl-tests defines it (the message size over the transfer time, times "
                     "2(n-1)/n for allreduce, (n-1)/n for allgather and reduce-scatter), comparable with the link's "
                     "bandwidth; size: the smallest and largest message seen in each power-of-two size class.",
                     kTextWidth, 0) +
           "\n";
  }
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
  }
  j["ranks"] = ranks;
  json comms = json::array();
  for (std::size_t c = 0; c < a.run.communicators.size(); ++c) {
    const auto& cm = a.run.communicators[c];
    comms.push_back({{"key", key_hex(cm.key)},
                     {"name", cm.name},
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
  json findings = json::array();
  for (const auto& f : a.findings) {
    json e = json::object();
    for (const auto& [k, v] : f.evidence) e[k] = v;
    findings.push_back({{"kind", finding_kind_name(f.kind)},
                        {"severity", severity_name(f.severity)},
                        {"title", f.title},
                        {"ranks", f.ranks},
                        {"communicator", f.comm_key ? json{{"key", key_hex(*f.comm_key)}, {"name", f.comm_name}} : json()},
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
