#include <collscope/tracer/nccl_tuning_rules.hpp>

#include "nccl/tuner.hpp"

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
    if (w.size() < 6 || w.size() > 8)
      return fail("expected 'op min_bytes max_bytes algo proto channels [ranks=N] [chunk=BYTES]', got " +
                  std::to_string(w.size()) + " fields");
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
    for (std::size_t i = 6; i < w.size(); ++i) {
      const auto eq = w[i].find('=');
      const std::string key = eq == std::string::npos ? (i == 6 ? "ranks" : "") : w[i].substr(0, eq);
      const std::string value = eq == std::string::npos ? w[i] : w[i].substr(eq + 1);
      if (key == "ranks") {
        try {
          r.ranks = std::stoll(value);
        } catch (const std::exception&) {
          return fail("ranks must be a number");
        }
      } else if (key == "chunk") {
        auto c = parse_bytes(value);
        if (!c || *c == 0 || value == "inf") return fail("chunk must be a byte count above 0 (integer with K/M/G)");
        r.chunk_bytes = *c;
      } else {
        return fail("unknown field '" + w[i] + "' (ranks=N, chunk=BYTES)");
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

std::uint64_t chunk_for(const Rule& rule, int algo, int proto) {
  if (rule.chunk_bytes == 0) return 0;
  if ((rule.algo >= 0 && rule.algo != algo) || (rule.proto >= 0 && rule.proto != proto)) return 0;
  return rule.chunk_bytes;
}

namespace {
std::string bytes_text(std::uint64_t b) {
  if (b == std::numeric_limits<std::uint64_t>::max()) return "inf";
  if (b != 0 && b % (1ull << 30) == 0) return std::to_string(b >> 30) + "G";
  if (b != 0 && b % (1ull << 20) == 0) return std::to_string(b >> 20) + "M";
  if (b != 0 && b % (1ull << 10) == 0) return std::to_string(b >> 10) + "K";
  return std::to_string(b);
}
}  // namespace

std::string format_rule(const Rule& r) {
  static const char* funcs[] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
  static const char* algos[] = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
  static const char* protos[] = {"ll", "ll128", "simple"};
  std::string line = r.func >= 0 && r.func < 5 ? funcs[r.func] : "?";
  line += " " + bytes_text(r.min_bytes) + " " + bytes_text(r.max_bytes);
  line += " " + std::string(r.algo >= 0 && r.algo < 7 ? algos[r.algo] : "-");
  line += " " + std::string(r.proto >= 0 && r.proto < 3 ? protos[r.proto] : "-");
  line += " " + (r.channels > 0 ? std::to_string(r.channels) : std::string("-"));
  if (r.ranks >= 0) line += " ranks=" + std::to_string(r.ranks);
  if (r.chunk_bytes) line += " chunk=" + bytes_text(r.chunk_bytes);
  return line;
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
