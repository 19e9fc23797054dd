#include <collscope/run/job_settings.hpp>
#include <collscope/store/schema.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <regex>
#include <utility>

namespace collscope::run {

namespace {

// Horovod "major.minor[.patch]" → (major, minor); (0, 21) when unknown (assume current defaults).
std::pair<int, int> horovod_release(const std::string& version) {
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &major, &minor) != 2) return {0, 21};
  return {major, minor};
}

// HOROVOD_FUSION_THRESHOLD (bytes) from the environment, else "--fusion-threshold N" on the command line (the
// sample's option); nullopt when neither says (or the number does not fit 64 bits).
std::optional<JobSetting<std::int64_t>> horovod_fusion_threshold_set(const Run& run) {
  if (auto v = run.env_int(std::string(horovod_env::kFusionThreshold)))
    return JobSetting<std::int64_t>{*v, SettingSource::Environment};
  if (auto v = command_line_int(run, "fusion-threshold")) return JobSetting<std::int64_t>{*v, SettingSource::CommandLine};
  return std::nullopt;
}

HorovodSettings horovod_settings(const Workload& workload, const std::optional<JobSetting<std::int64_t>>& threshold,
                                 const std::optional<std::string>& cycle_text) {
  HorovodSettings h;
  // Horovod 0.21 changed its defaults: fusion threshold 64 → 128 MiB, cycle time 5 → 1 ms.
  const bool old = horovod_release(workload.horovod_version) < std::pair(0, 21);
  h.fusion_threshold_bytes = {old ? std::int64_t{64} << 20 : std::int64_t{128} << 20, SettingSource::FrameworkDefault};
  h.cycle_time_ms = {old ? 5.0 : 1.0, SettingSource::FrameworkDefault};
  h.defaults_text = workload.horovod_version.empty()
                        ? "Horovod's defaults (0.21 and later; the trace does not record the version)"
                        : fmt::format("the defaults of Horovod {}", workload.horovod_version);
  if (threshold) h.fusion_threshold_bytes = *threshold;
  if (cycle_text) {
    try {
      h.cycle_time_ms = {std::stod(*cycle_text), SettingSource::Environment};  // milliseconds (Horovod's unit)
    } catch (const std::exception&) {  // not a number: the default stays in effect
    }
  }
  return h;
}

}  // namespace

std::string_view to_string(SettingSource source) {
  switch (source) {
    case SettingSource::Environment: return "environment";
    case SettingSource::CommandLine: return "command line";
    case SettingSource::Annotation: return "recorded by the Python annotation";
    case SettingSource::FrameworkDefault: return "framework default";
  }
  return "unknown";
}

std::optional<std::int64_t> command_line_int(const Run& run, const std::string& name) {
  std::string pattern = "--";
  for (char c : name) pattern += (c == '-' || c == '_') ? std::string("[-_]") : std::string(1, c);
  const std::regex option(pattern + "[= ]+([0-9]+)");
  for (const auto& r : run.ranks) {
    const auto cmd = r.meta_value(std::string(store::meta_key::kCommandLine));
    std::smatch match;
    if (!cmd || !std::regex_search(*cmd, match, option)) continue;
    std::int64_t v = 0;
    const std::string digits = match[1].str();
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    return ec == std::errc() && end == digits.data() + digits.size() ? std::optional(v) : std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::int64_t> horovod_fusion_threshold_in_environment(const RankTrace& rank) {
  return rank.meta_int(std::string(store::meta_key::kEnvPrefix) + std::string(horovod_env::kFusionThreshold));
}

JobSettings job_settings(const Run& run, const Workload& workload) {
  JobSettings s;
  const auto threshold = horovod_fusion_threshold_set(run);
  const auto cycle_text = run.env(std::string(horovod_env::kCycleTime));
  // A cycle time that is set but not a number still marks the job as one that sets Horovod's knobs.
  s.horovod_applies = workload.horovod || threshold.has_value() || cycle_text.has_value();
  s.horovod = horovod_settings(workload, threshold, cycle_text);
  s.ddp = ddp_settings(run);
  return s;
}

std::optional<DdpSettings> ddp_settings(const Run& run) {
  if (run.ranks.empty()) return std::nullopt;
  const RankTrace& first = run.ranks[0];
  const auto cap = first.meta_value("ddp.bucket_cap_mb");
  if (!cap) return std::nullopt;
  DdpSettings d;
  const double mb = std::strtod(cap->c_str(), nullptr);
  if (!(mb > 0)) return std::nullopt;  // not a number, or no buckets
  d.bucket_cap_mb = {mb, SettingSource::Annotation};
  const auto flag = [&](const char* key) -> std::optional<JobSetting<bool>> {
    const auto v = first.meta_value(key);
    if (!v || (*v != "true" && *v != "false")) return std::nullopt;
    return JobSetting<bool>{*v == "true", SettingSource::Annotation};
  };
  d.find_unused_parameters = flag("ddp.find_unused_parameters");
  d.gradient_as_bucket_view = flag("ddp.gradient_as_bucket_view");
  d.static_graph = flag("ddp.static_graph");
  if (const auto n = first.meta_int("torch.num_threads"); n && *n > 0)
    d.num_threads = JobSetting<int>{int(*n), SettingSource::Annotation};
  for (const auto& r : run.ranks) {
    const auto n = r.meta_int("torch.num_threads");
    if (!n || *n <= 0) continue;
    auto host = std::find_if(d.hosts.begin(), d.hosts.end(), [&](const auto& h) { return h.host == r.host; });
    if (host == d.hosts.end()) host = d.hosts.insert(d.hosts.end(), TorchThreadsOnHost{.host = r.host});
    ++host->ranks;
    host->threads += int(*n);
    host->cpus = std::max(host->cpus, int(r.meta_int("torch.cpus").value_or(0)));
  }
  if (const auto sizes = first.meta_value("ddp.bucket_sizes")) {
    for (std::size_t at = 0; at < sizes->size();) {  // "528384,1048576": bytes per bucket
      std::int64_t v = 0;
      const auto [end, ec] = std::from_chars(sizes->data() + at, sizes->data() + sizes->size(), v);
      if (ec != std::errc() || v <= 0) {
        d.bucket_bytes.clear();  // not DDP's list: none rather than part of one
        break;
      }
      d.bucket_bytes.push_back(v);
      at = std::size_t(end - sizes->data()) + 1;
    }
  }
  if (const auto v = first.meta_int("ddp.unused_parameter_bytes"); v && *v >= 0) d.unused_parameter_bytes = *v;
  d.sampled_iterations = int(std::max<std::int64_t>(0, first.meta_int("ddp.sampled_iterations").value_or(0)));
  const auto ns = [&](const char* key) -> std::optional<double> {
    const auto v = first.meta_int(key);
    return v && *v >= 0 ? std::optional<double>(double(*v)) : std::nullopt;
  };
  d.backward_compute_ns = ns("ddp.backward_compute_ns");
  d.backward_comm_ns = ns("ddp.backward_comm_ns");
  d.backward_overlap_ns = ns("ddp.backward_overlap_ns");
  for (const auto& r : run.ranks) {
    const auto comm = r.meta_int("ddp.backward_comm_ns"), overlap = r.meta_int("ddp.backward_overlap_ns");
    if (!comm || !overlap || *comm < 0 || *overlap < 0) continue;
    const double exposed = double(std::max<std::int64_t>(0, *comm - *overlap));
    d.least_exposed_comm_ns = std::min(d.least_exposed_comm_ns.value_or(exposed), exposed);
  }
  return d;
}

JobSettings job_settings(const Run& run) { return job_settings(run, describe_workload(run)); }

}  // namespace collscope::run
