// libcollscope-nccl-tuner.so: an NCCL tuner plugin (NCCL_TUNER_PLUGIN=libcollscope-nccl-tuner.so) that applies
// per-operation, per-size algorithm / protocol / channel rules from COLLSCOPE_NCCL_TUNER_RULES. Like the tracer it
// must never break the job: a missing or bad rules file is reported once through NCCL's log and the plugin then
// leaves every decision to NCCL.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>

#include "nccl_tuner_api.hpp"
#include "tuning_rules.hpp"

namespace collscope::nccl_tuner {
namespace {

struct Context {
  std::shared_ptr<const std::vector<Rule>> rules;
  std::size_t ranks = 0, nodes = 0;
  Logger log = nullptr;
  bool warned_impossible = false;
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

Result init(std::size_t n_ranks, std::size_t n_nodes, Logger log, void** context) {
  try {
    auto* c = new Context;
    c->rules = load_rules(log);
    c->ranks = n_ranks;
    c->nodes = n_nodes;
    c->log = log;
    *context = c;
    return kSuccess;
  } catch (...) {
    return kInternalError;  // NCCL then runs without the plugin
  }
}

Result get_coll_info_v3(void* context, int coll_type, std::size_t n_bytes, int /*num_pipe_ops*/, float** cost_table,
                        int num_algo, int num_proto, int* n_channels) {
  auto* c = static_cast<Context*>(context);
  if (!c || !c->rules) return kSuccess;
  const Rule* rule = match(*c->rules, coll_type, n_bytes, c->ranks);
  if (!rule) return kSuccess;
  // NCCL passes a float[num_algo][num_proto] as float**.
  if (!apply(*rule, reinterpret_cast<float*>(cost_table), num_algo, num_proto) && !c->warned_impossible && c->log) {
    c->log(kLogWarn, kLogTuning, __FILE__, __LINE__,
           "collscope tuner: a rule asks for an algorithm/protocol this communicator cannot use (%zu bytes); NCCL's choice stands",
           n_bytes);
    c->warned_impossible = true;
  }
  if (rule->channels > 0 && n_channels) *n_channels = rule->channels;
  return kSuccess;
}

Result get_coll_info_v4(void* context, int coll_type, std::size_t n_bytes, int num_pipe_ops, float** cost_table,
                        int num_algo, int num_proto, int /*reg_buff*/, int* n_channels) {
  return get_coll_info_v3(context, coll_type, n_bytes, num_pipe_ops, cost_table, num_algo, num_proto, n_channels);
}

Result destroy(void* context) {
  delete static_cast<Context*>(context);
  return kSuccess;
}

}  // namespace
}  // namespace collscope::nccl_tuner

using namespace collscope::nccl_tuner;
extern "C" {
__attribute__((visibility("default"))) TunerV4 ncclTunerPlugin_v4 = {"collscope", init, get_coll_info_v4, destroy};
__attribute__((visibility("default"))) TunerV3 ncclTunerPlugin_v3 = {"collscope", init, get_coll_info_v3, destroy};
}
