#pragma once
// Per rank, per communicator, the index of each seq's call in RankTrace::collectives (−1 missing, or left out of
// the figures: RankTrace::left_out_calls).
#include <collscope/run/run.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace collscope::run {

using CallIndex = std::vector<std::vector<std::vector<std::int32_t>>>;

inline CallIndex build_call_index(const Run& run) {
  CallIndex index(run.ranks.size(), std::vector<std::vector<std::int32_t>>(run.communicators.size()));
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    const auto& calls = run.ranks[r].collectives;
    for (std::size_t j = 0; j < calls.size(); ++j) {
      const auto& c = calls[j];
      if (c.seq < 0) continue;
      auto& v = index[r][c.comm];
      if (static_cast<std::size_t>(c.seq) >= v.size()) v.resize(static_cast<std::size_t>(c.seq) + 1, -1);
      v[c.seq] = static_cast<std::int32_t>(j);
    }
    // Calls made but left out of the figures: the rank got that far on the communicator.
    for (const auto& l : run.ranks[r].left_out_calls) {
      auto& v = index[r][l.comm];
      if (static_cast<std::size_t>(l.seq) >= v.size()) v.resize(static_cast<std::size_t>(l.seq) + 1, -1);
    }
  }
  return index;
}

// The reference communicator (see MatchedRun::reference_comm): most members, then most calls made on one rank.
inline int reference_communicator(const Run& run, const CallIndex& index) {
  int best = -1;
  std::size_t best_members = 0, best_calls = 0;
  for (std::size_t c = 0; c < run.communicators.size(); ++c) {
    std::size_t calls = 0;
    for (const auto& per_rank : index) calls = std::max(calls, per_rank[c].size());
    if (calls == 0) continue;
    const std::size_t members = run.communicators[c].members.size();
    if (best < 0 || members > best_members || (members == best_members && calls > best_calls)) {
      best = static_cast<int>(c);
      best_members = members;
      best_calls = calls;
    }
  }
  return best;
}

// Rank indices (into Run::ranks) of the communicator's members; −1 for members whose file is missing.
inline std::vector<int> member_indices(const Run& run, const Communicator& comm) {
  std::vector<int> out;
  out.reserve(comm.members.size());
  for (int m : comm.members) out.push_back(run.rank_index(m));
  return out;
}


}  // namespace collscope::run
