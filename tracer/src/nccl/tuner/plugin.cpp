// libcollscope-nccl-tuner.so: an NCCL tuner plugin (NCCL_TUNER_PLUGIN=libcollscope-nccl-tuner.so) that applies
// per-operation, per-size algorithm / protocol / channel / chunk-size rules from COLLSCOPE_NCCL_TUNER_RULES. It
// exports the tuner interfaces v6, v5, v4 and v3; NCCL takes the newest it knows. Like the tracer it must never
// break the job: a missing or bad rules file is reported once through NCCL's log and the plugin then leaves every
// decision to NCCL. The first time a rule decides for a communicator it says so at INFO (NCCL_DEBUG=INFO).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>

#include "nccl/tuner.hpp"
#include <collscope/tracer/nccl_tuning_rules.hpp>

namespace collscope::nccl_tuner {
namespace {

struct Context {
  std::shared_ptr<const std::vector<Rule>> rules;
  std::size_t ranks = 0, nodes = 0;
  std::uint64_t comm_id = 0;  // v5+: NCCL's communicator id (in the log lines)
  Logger log = nullptr;
  bool warned_impossible = false;
  std::vector<bool> announced;  // per rule: its first application was logged
};

// The rules, read once per rules file (every communicator initialises its own tuner).
std::shared_ptr<const std::vector<Rule>> load_rules(Logger log) {
  static std::mutex mutex;
  static std::shared_ptr<const std::vector<Rule>> cached;
  static std::string cached_path;
  const char* path = std::getenv("COLLSCOPE_NCCL_TUNER_RULES");
  std::lock_guard lock(mutex);
  if (cached && cached_path == (path ? path : "")) return cached;
  cached_path = path ? path : "";
  if (!path || !*path) {
    if (log) log(kLogWarn, kLogTuning, __FILE__, __LINE__, "collscope tuner: COLLSCOPE_NCCL_TUNER_RULES is not set; NCCL tunes alone");
    return cached = std::make_shared<const std::vector<Rule>>();
  }
  std::ifstream in(path);
  if (!in) {
    if (log) log(kLogWarn, kLogTuning, __FILE__, __LINE__, "collscope tuner: %s: cannot open; NCCL tunes alone", path);
    return cached = std::make_shared<const std::vector<Rule>>();
  }
  std::stringstream text;
  text << in.rdbuf();
  std::string error;
  auto rules = parse_rules(text.str(), path, error);
  if (!rules) {
    if (log) log(kLogWarn, kLogTuning, __FILE__, __LINE__, "collscope tuner: %s; NCCL tunes alone", error.c_str());
    return cached = std::make_shared<const std::vector<Rule>>();
  }
  if (log) log(kLogInfo, kLogTuning, __FILE__, __LINE__, "collscope tuner: %zu rules from %s", rules->size(), path);
  return cached = std::make_shared<const std::vector<Rule>>(std::move(*rules));
}

Context* make_context(std::size_t n_ranks, std::size_t n_nodes, std::uint64_t comm_id, Logger log) {
  auto* c = new Context;
  c->rules = load_rules(log);
  c->ranks = n_ranks;
  c->nodes = n_nodes;
  c->comm_id = comm_id;
  c->log = log;
  c->announced.assign(c->rules->size(), false);
  return c;
}

Result init(std::size_t n_ranks, std::size_t n_nodes, Logger log, void** context) {
  try {
    *context = make_context(n_ranks, n_nodes, 0, log);
    return kSuccess;
  } catch (...) {
    return kInternalError;  // NCCL then runs without the plugin
  }
}

Result init_v5(void** context, std::uint64_t comm_id, std::size_t n_ranks, std::size_t n_nodes, Logger log,
               NvlDomainInfoV5*, TunerConstantsV5*) {
  // The cost-model constants stay NCCL's: a rule decides by choosing among NCCL's own costs.
  try {
    *context = make_context(n_ranks, n_nodes, comm_id, log);
    return kSuccess;
  } catch (...) {
    return kInternalError;
  }
}

const char* func_name(int f) {
  static const char* names[] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
  return f >= 0 && f < 5 ? names[f] : "?";
}

Result get_coll_info_v3(void* context, int coll_type, std::size_t n_bytes, int /*num_pipe_ops*/, float** cost_table,
                        int num_algo, int num_proto, int* n_channels) {
  auto* c = static_cast<Context*>(context);
  if (!c || !c->rules) return kSuccess;
  const Rule* rule = match(*c->rules, coll_type, n_bytes, c->ranks);
  if (!rule) return kSuccess;
  // NCCL passes a float[num_algo][num_proto] as float**.
  const bool possible = apply(*rule, reinterpret_cast<float*>(cost_table), num_algo, num_proto);
  if (!possible && !c->warned_impossible && c->log) {
    c->log(kLogWarn, kLogTuning, __FILE__, __LINE__,
           "collscope tuner: a rule asks for an algorithm/protocol this communicator cannot use (%zu bytes); NCCL's choice stands",
           n_bytes);
    c->warned_impossible = true;
  }
  if (rule->channels > 0 && n_channels) *n_channels = rule->channels;
  const auto index = static_cast<std::size_t>(rule - c->rules->data());
  if (possible && c->log && index < c->announced.size() && !c->announced[index]) {
    c->announced[index] = true;
    c->log(kLogInfo, kLogTuning, __FILE__, __LINE__, "collscope tuner: rule %zu (%s) decides %s of %zu bytes on %zu ranks",
           index + 1, format_rule(*rule).c_str(), func_name(coll_type), n_bytes, c->ranks);
  }
  return kSuccess;
}

Result get_coll_info_v4(void* context, int coll_type, std::size_t n_bytes, int num_pipe_ops, float** cost_table,
                        int num_algo, int num_proto, int /*reg_buff*/, int* n_channels) {
  return get_coll_info_v3(context, coll_type, n_bytes, num_pipe_ops, cost_table, num_algo, num_proto, n_channels);
}

Result get_chunk_size(void* context, int coll_type, std::size_t n_bytes, int algo, int proto, int /*n_channels*/,
                      std::size_t* chunk_size) {
  auto* c = static_cast<Context*>(context);
  if (!c || !c->rules || !chunk_size) return kSuccess;
  const Rule* rule = match(*c->rules, coll_type, n_bytes, c->ranks);
  if (!rule) return kSuccess;
  if (const std::uint64_t chunk = chunk_for(*rule, algo, proto)) *chunk_size = chunk;
  return kSuccess;
}

Result destroy(void* context) {
  delete static_cast<Context*>(context);
  return kSuccess;
}

}  // namespace
}  // namespace collscope::nccl_tuner

using namespace collscope::nccl_tuner;
extern "C" {
__attribute__((visibility("default"))) TunerV6 ncclTunerPlugin_v6 = {"collscope", init_v5, get_coll_info_v4, destroy,
                                                                     get_chunk_size};
__attribute__((visibility("default"))) TunerV5 ncclTunerPlugin_v5 = {"collscope", init_v5, get_coll_info_v4, destroy};
__attribute__((visibility("default"))) TunerV4 ncclTunerPlugin_v4 = {"collscope", init, get_coll_info_v4, destroy};
__attribute__((visibility("default"))) TunerV3 ncclTunerPlugin_v3 = {"collscope", init, get_coll_info_v3, destroy};
}
