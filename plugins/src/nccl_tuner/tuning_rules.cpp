#include "tuning_rules.hpp"

#include "nccl_tuner_api.hpp"

#include <cctype>
#include <limits>
#include <map>
#include <sstream>

namespace collscope::nccl_tuner {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::optional<std::uint64_t> parse_bytes(const std::string& word) {
  if (word == "inf") return std::numeric_limits<std::uint64_t>::max();
  std::size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(word, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const std::string suffix = word.substr(used);
  if (suffix.empty()) return v;
  if (suffix == "k" || suffix == "K") return v << 10;
  if (suffix == "m" || suffix == "M") return v << 20;
  if (suffix == "g" || suffix == "G") return v << 30;
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<Rule>> parse_rules(const std::string& text, const std::string& file, std::string& error) {
  static const std::map<std::string, int> funcs = {{"allreduce", AllReduce}, {"allgather", AllGather},
                                                   {"reducescatter", ReduceScatter}, {"broadcast", Broadcast},
                                                   {"reduce", Reduce}};
  static const std::map<std::string, int> algos = {{"tree", kAlgoTree}, {"ring", kAlgoRing},
                                                   {"collnet_direct", kAlgoCollnetDirect}, {"collnet_chain", kAlgoCollnetChain},
                                                   {"nvls", kAlgoNvls}, {"nvls_tree", kAlgoNvlsTree}, {"pat", kAlgoPat},
                                                   {"-", -1}};
  static const std::map<std::string, int> protos = {{"ll", kProtoLL}, {"ll128", kProtoLL128}, {"simple", kProtoSimple}, {"-", -1}};
  std::vector<Rule> rules;
  std::istringstream lines(text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(lower(word));
    if (w.empty()) continue;
    auto fail = [&](const std::string& what) {
      error = file + ":" + std::to_string(number) + ": " + what;
      return std::nullopt;
    };
    if (w.size() != 6 && w.size() != 7)
      return fail("expected 'op min_bytes max_bytes algo proto channels [ranks]', got " + std::to_string(w.size()) + " fields");
    Rule r;
    auto f = funcs.find(w[0]);
    if (f == funcs.end()) return fail("unknown op '" + w[0] + "' (allreduce, allgather, reducescatter, broadcast, reduce)");
    r.func = f->second;
    auto lo = parse_bytes(w[1]), hi = parse_bytes(w[2]);
    if (!lo || !hi) return fail("byte counts must be integers with an optional K/M/G, or inf");
    if (*lo > *hi) return fail("min_bytes is above max_bytes");
    r.min_bytes = *lo;
    r.max_bytes = *hi;
    auto a = algos.find(w[3]);
    if (a == algos.end()) return fail("unknown algo '" + w[3] + "' (tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat, -)");
    r.algo = a->second;
    auto p = protos.find(w[4]);
    if (p == protos.end()) return fail("unknown proto '" + w[4] + "' (ll, ll128, simple, -)");
    r.proto = p->second;
    if (w[5] != "-") {
      try {
        r.channels = std::stoi(w[5]);
      } catch (const std::exception&) {
        return fail("channels must be a number or -");
      }
      if (r.channels < 1) return fail("channels must be at least 1");
    }
    if (w.size() == 7) {
      try {
        r.ranks = std::stoll(w[6]);
      } catch (const std::exception&) {
        return fail("ranks must be a number");
      }
    }
    rules.push_back(r);
  }
  return rules;
}

const Rule* match(const std::vector<Rule>& rules, int func, std::uint64_t bytes, std::size_t ranks) {
  for (const auto& r : rules)
    if (r.func == func && bytes >= r.min_bytes && bytes <= r.max_bytes &&
        (r.ranks < 0 || static_cast<std::size_t>(r.ranks) == ranks))
      return &r;
  return nullptr;
}

bool apply(const Rule& rule, float* table, int num_algo, int num_proto) {
  if (rule.algo < 0 && rule.proto < 0) return true;  // channels only
  // The possible entries the rule allows; of those, the one NCCL itself rates cheapest.
  int best_a = -1, best_p = -1;
  for (int a = 0; a < num_algo; ++a) {
    if (rule.algo >= 0 && a != rule.algo) continue;
    for (int p = 0; p < num_proto; ++p) {
      if (rule.proto >= 0 && p != rule.proto) continue;
      const float cost = table[a * num_proto + p];
      if (cost == kIgnore || cost < 0) continue;
      if (best_a < 0 || cost < table[best_a * num_proto + best_p]) best_a = a, best_p = p;
    }
  }
  if (best_a < 0) return false;
  table[best_a * num_proto + best_p] = 0.0f;
  return true;
}

}  // namespace collscope::nccl_tuner
