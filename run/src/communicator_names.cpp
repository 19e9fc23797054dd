// Communicator names for people (rules in run/communicator_names.hpp).
#include <collscope/run/communicator_names.hpp>
#include <collscope/run/workload.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

namespace collscope::run {
namespace {

// A recorded name "how(parent#k)" or "how(parent#k,color=c)" taken apart; nullopt for a root's name.
struct Derivation {
  std::string how;     // "dup", "split", "split_type", "cart_create", ...
  std::string parent;  // the parent's recorded name
  std::int64_t index = 0;  // the k-th communicator made from that parent
  std::optional<std::int64_t> color;
};

std::optional<Derivation> parse_derivation(const std::string& name) {
  const auto open = name.find('(');
  if (open == std::string::npos || open == 0 || name.back() != ')') return std::nullopt;
  Derivation d;
  d.how = name.substr(0, open);
  if (!std::all_of(d.how.begin(), d.how.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; })) return std::nullopt;
  const std::string inner = name.substr(open + 1, name.size() - open - 2);
  // The '#' that ends the parent's name is the last one outside the parent's own parentheses.
  std::size_t hash = std::string::npos;
  int depth = 0;
  for (std::size_t i = 0; i < inner.size(); ++i) {
    if (inner[i] == '(') ++depth;
    else if (inner[i] == ')') --depth;
    else if (inner[i] == '#' && depth == 0) hash = i;
  }
  if (hash == std::string::npos || hash == 0) return std::nullopt;
  d.parent = inner.substr(0, hash);
  const char* p = inner.data() + hash + 1;
  const char* end = inner.data() + inner.size();
  const auto [after_index, ec] = std::from_chars(p, end, d.index);
  if (ec != std::errc()) return std::nullopt;
  constexpr std::string_view kColor = ",color=";
  if (std::string_view(after_index, end - after_index).starts_with(kColor)) {
    std::int64_t c = 0;
    if (std::from_chars(after_index + kColor.size(), end, c).ec == std::errc()) d.color = c;
  }
  return d;
}

bool is_dup(const std::string& how) { return how == "dup" || how == "dup_with_info" || how == "idup"; }

std::string ranks_text(int n) { return n == 1 ? "1 rank" : fmt::format("{} ranks", n); }

}  // namespace

std::vector<std::string> communicator_display_names(const Run& run) {
  const std::size_t n = run.communicators.size();
  std::unordered_map<std::uint64_t, std::size_t> by_key;
  std::unordered_map<std::string, std::size_t> by_recorded_name;
  for (std::size_t c = 0; c < n; ++c) {
    by_key.emplace(run.communicators[c].key, c);
    by_recorded_name.emplace(run.communicators[c].name, c);
  }
  std::vector<std::optional<Derivation>> derived(n);
  std::vector<std::optional<std::size_t>> parent(n);  // index of the parent when the run holds it
  for (std::size_t c = 0; c < n; ++c) {
    const auto& comm = run.communicators[c];
    derived[c] = parse_derivation(comm.name);
    if (!derived[c]) continue;
    if (comm.parent) {
      if (auto it = by_key.find(*comm.parent); it != by_key.end() && it->second != c) parent[c] = it->second;
    } else if (auto it = by_recorded_name.find(derived[c]->parent); it != by_recorded_name.end() && it->second != c) {
      parent[c] = it->second;
    }
  }
  // What a name refers to: a dup to its nearest ancestor that is not a dup (a chain of dups reads as one dup),
  // anything else derived to its parent. Bounded walk: recorded parents cannot form a cycle, broken data might.
  std::vector<std::optional<std::size_t>> refers_to(n);
  for (std::size_t c = 0; c < n; ++c) {
    if (!derived[c]) continue;
    std::optional<std::size_t> r = parent[c];
    for (std::size_t hops = 0; is_dup(derived[c]->how) && r && derived[*r] && is_dup(derived[*r]->how) && hops < n; ++hops)
      r = parent[*r];
    refers_to[c] = r;
  }
  // Creation path from the root (recorded creation indices): numbers names that collide in creation order.
  std::vector<std::vector<std::int64_t>> path(n);
  for (std::size_t c = 0; c < n; ++c) {
    std::vector<std::int64_t> p;
    std::optional<std::size_t> at = c;
    for (std::size_t hops = 0; at && derived[*at] && hops <= n; ++hops) p.push_back(derived[*at]->index), at = parent[*at];
    std::reverse(p.begin(), p.end());
    path[c] = std::move(p);
  }
  const bool horovod = describe_workload(run).horovod;
  std::vector<std::string> names(n);
  std::vector<bool> done(n, false);
  // Level by level: a name needs the final name of what it refers to first; names that collide refer to the same
  // communicator, so they are named (and numbered) together.
  for (std::size_t pass = 0; pass <= n; ++pass) {
    std::map<std::string, std::vector<std::size_t>> named;  // base name → communicators named it in this pass
    for (std::size_t c = 0; c < n; ++c) {
      if (done[c]) continue;
      const auto& comm = run.communicators[c];
      const auto& d = derived[c];
      if (d && refers_to[c] && !done[*refers_to[c]] && pass < n) continue;
      std::string base;
      if (!d) {
        base = comm.name == "comm" || comm.name.empty() ? "communicator of " + ranks_text(comm.size) : comm.name;
      } else {
        const std::string of = refers_to[c] ? names[*refers_to[c]] : d->parent;
        const std::optional<std::int64_t> colour = comm.color ? comm.color : d->color;
        if (is_dup(d->how))
          base = "dup of " + of + (horovod && of == "MPI_COMM_WORLD" ? " (Horovod)" : "");
        else if (d->how == "split")
          base = fmt::format("split of {}, {}{}", of, colour ? fmt::format("colour {}, ", *colour) : "", ranks_text(comm.size));
        else if (d->how == "split_type")
          base = fmt::format("split_type of {}, {}{}", of, colour ? fmt::format("type {}, ", *colour) : "", ranks_text(comm.size));
        else
          base = fmt::format("{} of {}, {}", d->how, of, ranks_text(comm.size));
      }
      named[base].push_back(c);
    }
    for (auto& [base, list] : named) {
      std::sort(list.begin(), list.end(), [&](std::size_t a, std::size_t b) {
        return path[a] != path[b] ? path[a] < path[b] : run.communicators[a].key < run.communicators[b].key;
      });
      // One-rank communicators of different ranks (each rank's MPI_COMM_SELF) are told apart by their rank.
      std::set<int> ranks;
      for (std::size_t c : list)
        if (run.communicators[c].members.size() == 1) ranks.insert(run.communicators[c].members[0]);
      const bool by_rank = list.size() > 1 && ranks.size() == list.size();
      for (std::size_t k = 0; k < list.size(); ++k) {
        names[list[k]] = list.size() == 1 ? base
                         : by_rank        ? fmt::format("{} of rank {}", base, run.communicators[list[k]].members[0])
                                          : fmt::format("{} #{}", base, k + 1);
        done[list[k]] = true;
      }
    }
    if (std::all_of(done.begin(), done.end(), [](bool b) { return b; })) break;
  }
  return names;
}

}  // namespace collscope::run
