// Matching calls across ranks by (communicator, seq), per-instance metrics, and mismatch detection.
#include <collscope/run/matching.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

#include <collscope/run/call_index.hpp>

namespace collscope::run {

double InstanceSummary::busbw_gbps() const { return algbw_gbps() * store::bus_bandwidth_factor(op, ranks); }

namespace {

struct Signature {
  store::Op op;
  std::int64_t count;
  std::int32_t datatype;
  std::int32_t root;
  bool operator==(const Signature&) const = default;
  bool operator<(const Signature& o) const {
    return std::tie(op, count, datatype, root) < std::tie(o.op, o.count, o.datatype, o.root);
  }
};

Signature signature_of(const CollectiveCall& c) {
  // v-collectives legitimately differ in count per rank; compare only op and type there.
  const bool varies = c.op == store::Op::Allgatherv || c.op == store::Op::Gatherv || c.op == store::Op::Scatterv ||
                      c.op == store::Op::Alltoallv || c.op == store::Op::Send || c.op == store::Op::Recv;
  const bool rooted = c.op == store::Op::Bcast || c.op == store::Op::Reduce || c.op == store::Op::Gather ||
                      c.op == store::Op::Gatherv || c.op == store::Op::Scatter || c.op == store::Op::Scatterv;
  return {c.op, varies ? 0 : c.count, c.datatype, rooted ? c.root : -1};
}

std::string describe(const Run& run, const Signature& s) {
  std::string out(store::op_name(s.op));
  out += fmt::format(" count {}", s.count);
  if (s.datatype > 0 && static_cast<std::size_t>(s.datatype) < run.strings.size()) out += " " + run.strings[s.datatype];
  if (s.root >= 0) out += fmt::format(" root {}", s.root);
  return out;
}

// Whether every member makes all its calls on `comm` and on `ref` from one and the same thread.
bool one_thread_with(const Run& run, const CallIndex& index, const std::vector<int>& members, int comm, int ref) {
  for (int m : members) {
    if (m < 0) continue;
    int thread = -1;
    for (int c : {comm, ref})
      for (auto j : index[m][c]) {
        if (j < 0) continue;
        const int t = run.ranks[m].collectives[j].thread;
        if (thread >= 0 && t != thread) return false;
        thread = t;
      }
  }
  return true;
}

}  // namespace

MatchedRun CollectiveMatcher::match(const Run& run, const ClockAlignment& clocks) const {
  MatchedRun out;
  out.call_index = build_call_index(run);
  const auto& index = out.call_index;
  const std::size_t nranks = run.ranks.size();
  out.comm_first.assign(run.communicators.size() + 1, 0);

  // Progress on the reference communicator before each call, per rank: how many reference calls the rank had
  // made when it made this call. Equal across ranks for the same (comm, seq) in a consistent program.
  const int ref = reference_communicator(run, index);
  out.reference_comm = ref;
  std::vector<std::vector<std::int32_t>> progress(nranks);
  for (std::size_t r = 0; r < nranks; ++r) {
    progress[r].resize(run.ranks[r].collectives.size());
    std::int32_t made = 0;
    for (std::size_t j = 0; j < run.ranks[r].collectives.size(); ++j) {
      progress[r][j] = made;
      if (run.ranks[r].collectives[j].comm == ref) ++made;
    }
  }

  std::vector<int> present;
  std::vector<std::int64_t> arrivals;
  for (std::size_t c = 0; c < run.communicators.size(); ++c) {
    out.comm_first[c] = out.instances.size();
    const auto& comm = run.communicators[c];
    const auto members = member_indices(run, comm);
    std::size_t max_calls = 0, min_calls = SIZE_MAX;
    for (int m : members) {
      if (m < 0) continue;
      max_calls = std::max(max_calls, index[m][c].size());
      min_calls = std::min(min_calls, index[m][c].size());
    }
    if (min_calls == SIZE_MAX) min_calls = 0;
    bool mismatch_reported = false;

    for (std::size_t s = 0; s < max_calls; ++s) {
      present.clear();
      for (int m : members)
        if (m >= 0 && s < index[m][c].size() && index[m][c][s] >= 0) present.push_back(m);
      if (present.empty()) continue;

      // Consistency of the call shape at this seq: the minority signature is the divergent one. The groups are
      // only built when some call differs from the first (nearly never: they cost a map per instance).
      const auto shape = [&](int m) { return signature_of(run.ranks[m].collectives[index[m][c][s]]); };
      const auto differs = [&] {
        const Signature first = shape(present.front());
        return std::any_of(present.begin() + 1, present.end(), [&](int m) { return !(shape(m) == first); });
      };
      if (!mismatch_reported && present.size() > 1 && differs()) {
        std::map<Signature, std::vector<int>> groups;
        for (int m : present) groups[shape(m)].push_back(m);
        if (groups.size() > 1) {
          auto majority = std::max_element(groups.begin(), groups.end(),
                                           [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
          Mismatch mm;
          mm.comm = static_cast<int>(c);
          mm.comm_key = comm.key;
          mm.seq = static_cast<std::int64_t>(s);
          const bool tie = std::all_of(groups.begin(), groups.end(),
                                       [&](const auto& g) { return g.second.size() == majority->second.size(); });
          std::string what;
          for (const auto& [sig, ranks] : groups) {
            std::string list;
            for (int m : ranks) list += fmt::format("{}{}", list.empty() ? "" : ",", run.ranks[m].world_rank);
            what += fmt::format("{}rank {}: {}", what.empty() ? "" : " vs ", list, describe(run, sig));
            if (tie || &ranks != &majority->second)
              for (int m : ranks) mm.ranks.push_back(run.ranks[m].world_rank);
          }
          if (tie) {
            // No majority (e.g. 2 ranks): the rank that got here later in the program (more reference calls
            // made) skipped something; name it alone when that is unambiguous.
            std::int32_t most = -1;
            int who = -1, at_most = 0;
            for (int m : present) {
              const auto p = progress[m][index[m][c][s]];
              if (p > most) most = p, who = m, at_most = 1;
              else if (p == most) ++at_most;
            }
            if (at_most == 1 && c != static_cast<std::size_t>(ref)) mm.ranks = {run.ranks[who].world_rank};
          }
          std::sort(mm.ranks.begin(), mm.ranks.end());
          mm.what = "call shapes differ: " + what;
          out.mismatches.push_back(std::move(mm));
          mismatch_reported = true;
        }
      }

      InstanceSummary inst;
      inst.comm = static_cast<std::int32_t>(c);
      inst.seq = static_cast<std::int32_t>(s);
      inst.ranks = static_cast<std::int16_t>(present.size());
      std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = std::numeric_limits<std::int64_t>::min();
      std::int64_t second = last, completion = last, duration = std::numeric_limits<std::int64_t>::max();
      int last_rank = -1;
      arrivals.clear();
      for (int m : present) {
        const auto& call = run.ranks[m].collectives[index[m][c][s]];
        const std::int64_t a = clocks.aligned(m, call.start_ns);
        arrivals.push_back(a);
        first = std::min(first, a);
        if (a > last) {
          second = last;
          last = a;
          last_rank = m;
        } else if (a > second) {
          second = a;
        }
        completion = std::max(completion, clocks.aligned(m, call.end_ns));
        duration = std::min(duration, call.end_ns - call.start_ns);
        inst.bytes = std::max(inst.bytes, call.bytes);
        inst.op = call.op;
      }
      if (present.size() == 1) second = last;
      inst.first_arrival_ns = first;
      inst.last_arrival_ns = last;
      inst.second_last_arrival_ns = second;
      inst.last_completion_ns = completion;
      inst.duration_ns = std::max<std::int64_t>(duration, 0);
      inst.last_arriver = run.ranks[last_rank].world_rank;
      for (std::size_t k = 0; k < present.size(); ++k) inst.total_wait_ns += last - arrivals[k];
      out.instances.push_back(inst);
    }

    // Ranks with fewer calls at the end. When another member completed one of the missing calls successfully and
    // it synchronises (an allreduce cannot return on one rank before all have entered it), the short rank made it
    // too: its file lost the record (a job killed before the writer's last batch, a rank whose writer stopped on a
    // full disk, dropped events). Otherwise, when its file is not whole either (never closed, events dropped) it
    // may be the same; only a whole file that lacks calls the others made is a mismatch: they wait in a call it
    // never makes.
    if (!mismatch_reported && max_calls != min_calls) {
      std::vector<int> short_ranks, mismatched;
      for (int m : members)
        if (m >= 0 && index[m][c].size() < max_calls) short_ranks.push_back(m);
      for (int m : short_ranks) {
        const std::size_t have = index[m][c].size();
        const CollectiveCall* proof = nullptr;  // a missing call another member completed that needed rank m
        for (std::size_t s = have; s < max_calls && !proof; ++s)
          for (int o : members) {
            if (o < 0 || o == m || s >= index[o][c].size() || index[o][c][s] < 0) continue;
            const auto& call = run.ranks[o].collectives[index[o][c][s]];
            if (call.status == 0 && store::is_synchronising(call.op)) {
              proof = &call;
              break;
            }
          }
        const auto& rank = run.ranks[m];
        const bool whole = rank.monotonic_end_ns != 0 && rank.events_dropped == 0;
        if (!proof && whole) {
          mismatched.push_back(m);
          continue;
        }
        Truncation t;
        t.comm = static_cast<int>(c);
        t.comm_key = comm.key;
        t.world_rank = rank.world_rank;
        t.from_seq = static_cast<std::int64_t>(have);
        t.missing = static_cast<std::int64_t>(max_calls - have);
        t.why = rank.events_dropped > 0    ? fmt::format("the tracer dropped {} of its events", rank.events_dropped)
                : rank.monotonic_end_ns == 0 ? std::string("its file was never closed: the job was killed, or its writer stopped")
                                            : std::string("its file ends early");
        if (proof) t.why += fmt::format("; the others completed {} #{}, which cannot finish without it", store::op_name(proof->op), proof->seq);
        out.truncations.push_back(std::move(t));
      }
      if (!mismatched.empty()) {
        Mismatch mm;
        mm.comm = static_cast<int>(c);
        mm.comm_key = comm.key;
        std::size_t fewest = max_calls;
        for (int m : mismatched) {
          mm.ranks.push_back(run.ranks[m].world_rank);
          fewest = std::min(fewest, index[m][c].size());
        }
        mm.seq = static_cast<std::int64_t>(fewest);
        mm.what = fmt::format("rank(s) {} made {} calls, others {}, and their trace is whole (closed normally, nothing "
                              "dropped): the others wait in a call never made",
                              fmt::join(mm.ranks, ","), fewest, max_calls);
        out.mismatches.push_back(std::move(mm));
        mismatch_reported = true;
      }
    }

    // A skipped call with the same shape as the next one: the skipping rank makes every later call of this
    // communicator at a later point of its program (persistently more reference calls made before it).
    // Only where a rank's calls on this communicator and on the reference one come from the same thread: across
    // threads (MPI_THREAD_MULTIPLE, one communicator per thread) the interleaving differs from rank to rank and
    // says nothing about skipped calls.
    if (!mismatch_reported && static_cast<int>(c) != ref && ref >= 0 && min_calls >= 1 &&
        one_thread_with(run, index, members, static_cast<int>(c), ref)) {
      std::vector<int> live;
      for (int m : members)
        if (m >= 0) live.push_back(m);
      if (live.size() >= 2) {
        // Walk back from the last common seq while some rank stays ahead of the minimum progress.
        auto ahead_at = [&](std::size_t s) {
          std::int32_t lo = std::numeric_limits<std::int32_t>::max();
          for (int m : live)
            if (index[m][c][s] >= 0) lo = std::min(lo, progress[m][index[m][c][s]]);
          std::vector<int> ahead;
          for (int m : live)
            if (index[m][c][s] >= 0 && progress[m][index[m][c][s]] > lo) ahead.push_back(m);
          return ahead;
        };
        auto ahead = ahead_at(min_calls - 1);
        if (!ahead.empty() && ahead.size() < live.size()) {
          std::size_t first_seq = min_calls - 1;
          while (first_seq > 0 && ahead_at(first_seq - 1) == ahead) --first_seq;
          const std::size_t span = min_calls - first_seq;
          // Calls from two threads (a Horovod background thread and the main thread) race near each other, so
          // one or two calls may land on either side; a skip shifts every later call.
          if (span >= 3) {
            Mismatch mm;
            mm.comm = static_cast<int>(c);
            mm.comm_key = comm.key;
            mm.seq = static_cast<std::int64_t>(first_seq);
            for (int m : ahead) mm.ranks.push_back(run.ranks[m].world_rank);
            mm.what = fmt::format(
                "from seq {} on, rank(s) {} make each call of this communicator later in their program than the "
                "others (after more calls on {}): they skipped call {}",
                first_seq, fmt::join(mm.ranks, ","), run.communicators[ref].shown_name().empty() ? "the world communicator"
                                                                                              : run.communicators[ref].shown_name(),
                first_seq);
            out.mismatches.push_back(std::move(mm));
          }
        }
      }
    }
  }
  out.comm_first[run.communicators.size()] = out.instances.size();
  std::int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (std::size_t r = 0; r < nranks; ++r) {
    const auto see = [&](std::int64_t start, std::int64_t end) {
      lo = std::min(lo, clocks.aligned(static_cast<int>(r), start));
      hi = std::max(hi, clocks.aligned(static_cast<int>(r), end));
    };
    for (const auto& c : run.ranks[r].collectives) see(c.start_ns, c.end_ns);
    for (const auto& c : run.ranks[r].point_to_point) see(c.start_ns, c.end_ns);
  }
  out.wall_ns = hi > lo ? double(hi - lo) : 0.0;
  return out;
}

CollectiveInstance MatchedRun::instance(const Run& run, const ClockAlignment& clocks, int comm, std::int64_t seq) const {
  CollectiveInstance out;
  out.comm = comm;
  out.comm_key = run.communicators.at(comm).key;
  out.seq = seq;
  std::int64_t last = std::numeric_limits<std::int64_t>::min();
  std::int64_t duration = std::numeric_limits<std::int64_t>::max();
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    const auto& v = call_index[r][comm];
    if (seq < 0 || static_cast<std::size_t>(seq) >= v.size() || v[seq] < 0) continue;
    const auto& call = run.ranks[r].collectives[v[seq]];
    out.op = call.op;
    out.bytes = std::max(out.bytes, call.bytes);
    out.ranks.push_back(run.ranks[r].world_rank);
    out.arrival_ns.push_back(clocks.aligned(static_cast<int>(r), call.start_ns));
    out.completion_ns.push_back(clocks.aligned(static_cast<int>(r), call.end_ns));
    last = std::max(last, out.arrival_ns.back());
    duration = std::min(duration, call.end_ns - call.start_ns);
  }
  for (auto a : out.arrival_ns) out.wait_ns.push_back(last - a);
  if (out.ranks.empty()) return out;
  out.duration_ns = std::max<std::int64_t>(duration, 0);
  out.algbw_gbps = out.duration_ns > 0 ? double(out.bytes) / double(out.duration_ns) : 0;
  out.busbw_gbps = out.algbw_gbps * store::bus_bandwidth_factor(out.op, static_cast<int>(out.ranks.size()));
  return out;
}

}  // namespace collscope::run
