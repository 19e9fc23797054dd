// Loading a run: one thread per core reads rank files; strings and communicators become run-wide ids.
#include <collscope/run/communicator_names.hpp>
#include <collscope/run/job_settings.hpp>
#include <collscope/run/parallel.hpp>
#include <collscope/run/physical_limits.hpp>
#include <collscope/run/run.hpp>
#include <collscope/run/run_share.hpp>
#include <collscope/run/steps.hpp>
#include <collscope/store/nvtx_domains.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/trace_reader.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cctype>
#include <filesystem>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>
#include <unordered_map>

namespace collscope::run {
namespace fs = std::filesystem;

std::optional<std::string> RankTrace::meta_value(const std::string& key) const {
  auto it = meta.find(key);
  if (it == meta.end()) return std::nullopt;
  return it->second;
}

std::optional<std::int64_t> RankTrace::meta_int(const std::string& key) const {
  auto v = meta_value(key);
  if (!v || v->empty()) return std::nullopt;
  try {
    std::size_t used = 0;
    auto n = std::stoll(*v, &used);
    if (used != v->size()) return std::nullopt;
    return n;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

const NonblockingTimes* RankTrace::nonblocking_times(std::size_t call) const {
  auto it = std::lower_bound(nonblocking_collectives.begin(), nonblocking_collectives.end(), call,
                             [](const NonblockingCollective& n, std::size_t c) { return static_cast<std::size_t>(n.call) < c; });
  return it != nonblocking_collectives.end() && static_cast<std::size_t>(it->call) == call ? &it->times : nullptr;
}

std::size_t Run::point_to_point_count() const {
  std::size_t n = 0;
  for (const auto& r : ranks) n += r.point_to_point.size();
  return n;
}

std::size_t Run::collective_count() const {
  std::size_t n = 0;
  for (const auto& r : ranks) n += r.collectives.size();
  return n;
}

int Run::rank_index(int world_rank) const {
  for (std::size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i].world_rank == world_rank) return static_cast<int>(i);
  return -1;
}

std::optional<std::string> Run::env(const std::string& name) const {
  for (const auto& r : ranks)
    if (auto v = r.meta_value(std::string(store::meta_key::kEnvPrefix) + name)) return v;
  return std::nullopt;
}

std::optional<std::int64_t> Run::env_int(const std::string& name) const {
  for (const auto& r : ranks)
    if (auto v = r.meta_int(std::string(store::meta_key::kEnvPrefix) + name)) return v;
  return std::nullopt;
}

int Run::string_id(const std::string& value) const {
  for (std::size_t i = 0; i < strings.size(); ++i)
    if (strings[i] == value) return static_cast<int>(i);
  return -1;
}

Reduction reduction_of(std::string_view name) {
  std::string n;
  for (char c : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view prefix : {"mpi_", "nccl"})
    if (n.starts_with(prefix)) n.erase(0, prefix.size());
  if (n.empty()) return Reduction::None;
  if (n == "sum" || n == "avg" || n == "average") return Reduction::Sum;
  if (n == "prod") return Reduction::Product;
  if (n == "max" || n == "min" || n == "maxloc" || n == "minloc") return Reduction::MinMax;
  if (n == "band" || n == "bor" || n == "bxor") return Reduction::Bitwise;
  if (n == "land" || n == "lor" || n == "lxor") return Reduction::Logical;
  return Reduction::Other;
}

namespace {

// Run-wide tables the loader threads share; small (strings, communicators), so one mutex is enough.
struct SharedTables {
  std::mutex mutex;
  std::vector<std::string> strings{""};
  std::unordered_map<std::string, int> string_ids{{"", 0}};
  std::vector<Communicator> communicators;
  std::unordered_map<std::uint64_t, int> comm_ids;

  std::vector<int> map_strings(const std::vector<std::string>& local) {
    std::lock_guard lock(mutex);
    std::vector<int> out(local.size(), 0);
    for (std::size_t i = 0; i < local.size(); ++i) {
      auto [it, added] = string_ids.emplace(local[i], static_cast<int>(strings.size()));
      if (added) strings.push_back(local[i]);
      out[i] = it->second;
    }
    return out;
  }

  std::size_t communicator_count() {
    std::lock_guard lock(mutex);
    return communicators.size();
  }

  int map_comm(const store::CommunicatorRow& row) {
    Communicator c;
    c.key = row.key;
    c.backend = row.backend;
    c.size = row.size;
    c.members.assign(row.members.begin(), row.members.end());
    c.name = row.name;
    c.parent = row.parent;
    c.color = row.color;
    return map_communicator(std::move(c));
  }

  // The first of each key stays: every member rank's file describes the communicator the same way.
  int map_communicator(Communicator c) {
    std::lock_guard lock(mutex);
    auto [it, added] = comm_ids.emplace(c.key, static_cast<int>(communicators.size()));
    if (added) communicators.push_back(std::move(c));
    return it->second;
  }
};

// A communicator row names each member once, as a possible world rank.
std::optional<std::string> impossible_members(const store::CommunicatorRow& c) {
  if (c.members.size() > static_cast<std::size_t>(store::kMaxWorldSize))
    return fmt::format("{} members, more than any job has", c.members.size());
  std::vector<std::int32_t> sorted(c.members.begin(), c.members.end());
  std::sort(sorted.begin(), sorted.end());
  if (!sorted.empty() && (sorted.front() < 0 || sorted.back() >= store::kMaxWorldSize))
    return fmt::format("member {} is not a world rank", sorted.front() < 0 ? sorted.front() : sorted.back());
  if (auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end())
    return fmt::format("member {} is listed twice", *dup);
  return std::nullopt;
}

// Calls on communicators numbered by a tag (communicators.seq_numbering, 1.7: gloo's tag, increasing with gaps where
// the group's other operations took tags), numbered again from 0 in tag order, as every other communicator's calls
// are: each member records the same tags, so the k-th is the same call on every rank. Before the screen below,
// which would take the gaps for calls no rank could have reached.
void renumber_tagged(RankTrace& t, const std::vector<int>& tagged) {
  for (const int comm : tagged) {
    std::vector<std::int32_t> tags;
    for (const auto& c : t.collectives)
      if (c.comm == comm) tags.push_back(c.seq);
    for (const auto& f : t.calls_in_flight)
      if (f.call.comm == comm) tags.push_back(f.call.seq);
    for (const auto& l : t.left_out_calls)
      if (l.comm == comm) tags.push_back(l.seq);
    std::sort(tags.begin(), tags.end());
    tags.erase(std::unique(tags.begin(), tags.end()), tags.end());
    const auto number = [&](std::int32_t& seq) {
      seq = static_cast<std::int32_t>(std::lower_bound(tags.begin(), tags.end(), seq) - tags.begin());
    };
    for (auto& c : t.collectives)
      if (c.comm == comm) number(c.seq);
    for (auto& f : t.calls_in_flight)
      if (f.call.comm == comm) number(f.call.seq);
    for (auto& l : t.left_out_calls)
      if (l.comm == comm) number(l.seq);
  }
}

// Calls on those communicators are the C++ calls of a library's worker thread (gloo's: DDP's buckets), recorded in
// torch.distributed's non-blocking form, started when the worker began the call. The worker's call is synchronous:
// it waits for the other ranks and moves the data before it returns, so its whole span is time inside the
// collective (run/wait_states.hpp), as a blocking call's is; the tracer's post_end_ns (the start) would count none
// of it. Before the screen, which keeps the non-blocking times by call index.
void worker_calls_inside_whole_span(RankTrace& t, const std::vector<int>& tagged) {
  if (tagged.empty()) return;
  for (auto& n : t.nonblocking_collectives) {
    const auto& c = t.collectives[static_cast<std::size_t>(n.call)];
    if (std::find(tagged.begin(), tagged.end(), c.comm) != tagged.end()) n.times.post_end_ns = c.end_ns;
  }
}

// Leaves out the collectives whose seq no rank could have reached (PhysicalLimits::kSeqsPerRecordedCall): per
// communicator, more calls than the file records on it plus the events it dropped. Keeps the matcher's call
// index (4 bytes per seq) proportional to the file. Rows left out for their values still count as recorded calls.
void screen_seqs(RankTrace& t, const std::vector<std::int64_t>& row_ids, std::size_t communicators, RowScreen& screen) {
  using L = PhysicalLimits;
  std::vector<std::int64_t> recorded(communicators, 0);
  for (const auto& c : t.collectives) ++recorded[static_cast<std::size_t>(c.comm)];
  for (const auto& f : t.calls_in_flight) ++recorded[static_cast<std::size_t>(f.call.comm)];
  for (const auto& l : t.left_out_calls) ++recorded[static_cast<std::size_t>(l.comm)];
  auto beyond = [&](std::int32_t comm, std::int32_t seq) {
    const std::int64_t n = recorded[static_cast<std::size_t>(comm)];
    return seq >= n + std::min(t.events_dropped, (L::kSeqsPerRecordedCall - 1) * n + L::kSeqSlack);
  };
  auto why = [&](std::int32_t comm, std::int32_t seq) {
    return fmt::format("seq {} beyond the {} calls the file records on its communicator and the {} events it dropped",
                       seq, recorded[static_cast<std::size_t>(comm)], t.events_dropped);
  };
  std::size_t kept = 0, nonblocking_kept = 0, n = 0;  // n: next of t.nonblocking_collectives (by call index)
  for (std::size_t j = 0; j < t.collectives.size(); ++j) {
    const auto& c = t.collectives[j];
    const bool has_times = n < t.nonblocking_collectives.size() && t.nonblocking_collectives[n].call == static_cast<std::int32_t>(j);
    if (beyond(c.comm, c.seq)) {
      screen.reject("collectives", row_ids[j], why(c.comm, c.seq));
      n += has_times;
      continue;
    }
    if (has_times) {
      t.nonblocking_collectives[nonblocking_kept] = t.nonblocking_collectives[n++];
      t.nonblocking_collectives[nonblocking_kept++].call = static_cast<std::int32_t>(kept);
    }
    t.collectives[kept++] = c;
  }
  t.collectives.resize(kept);
  t.nonblocking_collectives.resize(nonblocking_kept);
  std::erase_if(t.calls_in_flight, [&](const CallInFlight& f) {
    if (!beyond(f.call.comm, f.call.seq)) return false;
    screen.reject("calls_in_flight", f.thread, why(f.call.comm, f.call.seq));
    return true;
  });
  std::erase_if(t.left_out_calls, [&](const LeftOutCall& l) { return beyond(l.comm, l.seq); });
}

// The non-blocking columns of a collectives or point_to_point row (schema 1.2), checked: posted within the call's
// span, no more time in completion calls than from posting to completion (clock-conversion jitter of
// PhysicalLimits::kJitterNs is read as 0). nullopt with `why` set for impossible values; a blocking call (no
// post_end_ns) gives times with post_end_ns 0.
std::optional<NonblockingTimes> checked_nonblocking(std::int64_t start_ns, std::int64_t end_ns,
                                                    const std::optional<std::int64_t>& post_end_ns,
                                                    const std::optional<std::int64_t>& wait_ns,
                                                    const std::optional<std::int64_t>& wait_calls, std::string& why) {
  using L = PhysicalLimits;
  NonblockingTimes t;
  if (!post_end_ns) return t;
  if (*post_end_ns < start_ns - L::kJitterNs || *post_end_ns > end_ns + L::kJitterNs) {
    why = fmt::format("post_end_ns {} outside the call's span [{}, {}]", *post_end_ns, start_ns, end_ns);
    return std::nullopt;
  }
  t.post_end_ns = std::clamp(*post_end_ns, start_ns, end_ns);
  const std::int64_t wait = wait_ns.value_or(0), room = end_ns - t.post_end_ns;
  if (wait < 0 || wait > room + L::kJitterNs) {
    why = fmt::format("wait_ns {} is not within the {} ns from posting to completion", wait, room);
    return std::nullopt;
  }
  t.wait_ns = std::min(wait, room);
  t.wait_calls = static_cast<std::int32_t>(std::clamp<std::int64_t>(wait_calls.value_or(0), 0, INT32_MAX));
  if (t.post_end_ns == 0) t.post_end_ns = 1;  // 0 means "blocking"; a clock at 0 ns is never a real post
  return t;
}

// The point_to_point table (schema 1.2; older files have none): rows on a communicator the file defines, within
// physical range, with their non-blocking times checked.
void load_point_to_point(const store::TraceReader& reader, const std::unordered_map<std::int64_t, int>& comm_map,
                         RowScreen& screen, RankTrace& t) {
  using L = PhysicalLimits;
  using store::PointToPointRow;
  constexpr auto columns =
      store::columns<&PointToPointRow::id, &PointToPointRow::comm, &PointToPointRow::seq, &PointToPointRow::op,
                     &PointToPointRow::send_peer, &PointToPointRow::send_tag, &PointToPointRow::send_bytes,
                     &PointToPointRow::recv_peer, &PointToPointRow::recv_tag, &PointToPointRow::recv_bytes,
                     &PointToPointRow::thread, &PointToPointRow::start_ns, &PointToPointRow::end_ns,
                     &PointToPointRow::post_end_ns, &PointToPointRow::wait_ns, &PointToPointRow::wait_calls,
                     &PointToPointRow::status>();
  constexpr std::string_view table = "point_to_point";
  // A peer is a world rank, MPI_PROC_NULL or unknown.
  auto peer_ok = [](std::int32_t p) { return p == store::kPeerProcNull || p == store::kPeerUnknown || (p >= 0 && p < store::kMaxWorldSize); };
  reader.for_each<PointToPointRow>(columns, [&](const PointToPointRow& r) {
    auto it = comm_map.find(r.comm);
    if (it == comm_map.end()) return screen.reject(table, r.id, fmt::format("communicator {} is not defined", r.comm));
    PointToPointCall c;
    c.end_ns = r.end_ns;
    if (!screen.within(table, r.id, "seq", r.seq, std::numeric_limits<std::int32_t>::max()) ||
        !screen.span(table, r.id, r.start_ns, c.end_ns) ||
        !screen.within(table, r.id, "send_bytes", r.send_bytes.value_or(0), L::kMaxCallBytes) ||
        !screen.within(table, r.id, "recv_bytes", r.recv_bytes.value_or(0), L::kMaxCallBytes))
      return;
    if ((r.send_peer && !peer_ok(*r.send_peer)) || (r.recv_peer && !peer_ok(*r.recv_peer)))
      return screen.reject(table, r.id, fmt::format("peer {} is not a world rank", r.send_peer && !peer_ok(*r.send_peer) ? *r.send_peer : *r.recv_peer));
    std::string why;
    const auto nonblocking = checked_nonblocking(r.start_ns, c.end_ns, r.post_end_ns, r.wait_ns, r.wait_calls, why);
    if (!nonblocking) return screen.reject(table, r.id, why);
    c.start_ns = r.start_ns;
    c.nonblocking = *nonblocking;
    c.comm = it->second;
    c.seq = static_cast<std::int32_t>(r.seq);
    c.op = r.op;
    c.status = r.status;
    c.thread = static_cast<std::uint16_t>(std::clamp<std::int64_t>(r.thread, 0, 0xffff));
    if (r.send_peer) c.send_peer = *r.send_peer, c.send_tag = r.send_tag.value_or(0), c.send_bytes = r.send_bytes.value_or(0);
    if (r.recv_peer) c.recv_peer = *r.recv_peer, c.recv_tag = r.recv_tag.value_or(0), c.recv_bytes = r.recv_bytes.value_or(0);
    t.point_to_point.push_back(c);
  });
}

void load_file(const std::string& path, const LoadOptions& options, SharedTables& shared, LoadedRankFile& out) {
  using L = PhysicalLimits;
  RankTrace t;
  t.path = path;
  try {
    store::TraceReader reader(path);
    t.meta = reader.meta();
    t.schema_version = fmt::format("{}.{}", reader.schema_version().major, reader.schema_version().minor);
    auto wr = reader.meta_int(store::meta_key::kWorldRank);
    if (!wr) {
      // Fall back to the file name: rank-00003.sqlite.
      auto stem = fs::path(path).stem().string();
      try {
        wr = std::stoll(stem.substr(5));
      } catch (const std::exception&) {
        throw InputError(fmt::format("{}: no world_rank in meta and none in the file name", path));
      }
      if (*wr < 0 || *wr >= store::kMaxWorldSize)
        throw InputError(fmt::format("{}: world rank {} (from the file name) is not a possible rank", path, *wr));
    }
    t.world_rank = static_cast<int>(*wr);
    t.host = reader.meta_value(store::meta_key::kHost).value_or("");
    const RankAnchors anchors = read_anchors(reader, out.problems);
    t.monotonic_start_ns = anchors.monotonic_start_ns.value_or(0);
    t.realtime_start_ns = anchors.realtime_start_ns.value_or(0);
    t.monotonic_end_ns = anchors.monotonic_end_ns.value_or(0);
    t.realtime_end_ns = anchors.realtime_end_ns.value_or(0);
    t.events_dropped = reader.meta_int(store::meta_key::kEventsDropped).value_or(0);
    if (t.events_dropped < 0) {
      out.problems.push_back(fmt::format("{}: meta events_dropped = {} is negative; read as 0", path, t.events_dropped));
      t.events_dropped = 0;
    }
    RowScreen screen(path, anchors);
    const auto local_strings = reader.strings();
    const auto string_map = shared.map_strings(local_strings);
    // What each of the file's strings means as a reduction operator, worked out once per string, not per row.
    std::vector<Reduction> reductions(local_strings.size(), Reduction::None);
    for (std::size_t i = 1; i < local_strings.size(); ++i) reductions[i] = reduction_of(local_strings[i]);
    auto reduction = [&](std::int64_t local) {
      return (local > 0 && static_cast<std::size_t>(local) < reductions.size()) ? reductions[local] : Reduction::None;
    };
    auto global_string = [&](std::int64_t local) {
      return (local >= 0 && static_cast<std::size_t>(local) < string_map.size()) ? string_map[local] : 0;
    };
    std::unordered_map<std::int64_t, int> comm_map;  // file-local id -> run-wide index
    std::vector<int> tagged;                         // run-wide indices of communicators numbered by a tag
    for (const auto& c : reader.communicators()) {
      if (auto why = impossible_members(c)) {
        screen.reject("communicators", c.id, *why);
        continue;
      }
      comm_map[c.id] = shared.map_comm(c);
      if (!c.seq_numbering.empty()) tagged.push_back(comm_map[c.id]);
    }
    t.threads = reader.threads();
    for (const auto& b : reader.buffers()) {
      std::int64_t last = b.last_ns;
      const auto row = static_cast<std::int64_t>(b.address);
      if (screen.within("buffers", row, "bytes_max", b.bytes_max, L::kMaxCallBytes) &&
          screen.within("buffers", row, "bytes_min", b.bytes_min, L::kMaxCallBytes) &&
          screen.within("buffers", row, "bytes_total", b.bytes_total, L::kMaxBufferBytes) &&
          screen.within("buffers", row, "uses", b.uses, L::kMaxBufferBytes) && screen.span("buffers", row, b.first_ns, last))
        t.buffers.push_back(b);
    }
    // Fusion buffers: one address reused for different sizes. Capacity: the rank's HOROVOD_FUSION_THRESHOLD
    // when it set one (bytes, read only within physical range), else the largest use seen.
    std::int64_t threshold = horovod_fusion_threshold_in_environment(t).value_or(0);
    if (threshold < 0 || threshold > L::kMaxCallBytes) threshold = 0;
    std::unordered_map<std::uint64_t, std::int64_t> fusion_capacity;
    for (const auto& b : t.buffers)
      if (b.uses >= 2 && b.bytes_min < b.bytes_max)
        fusion_capacity[b.address] = threshold > 0 ? std::max(threshold, b.bytes_max) : b.bytes_max;
    const std::int64_t rows = reader.row_count("collectives");
    t.collectives.reserve(static_cast<std::size_t>(std::max<std::int64_t>(rows, 0)));
    std::vector<std::int64_t> row_ids;  // collectives.id of each kept call, to name it in a warning
    row_ids.reserve(t.collectives.capacity());
    std::int64_t unknown_comm = 0;
    // A row of collectives or calls_in_flight (they share these columns) as a call on a run-wide communicator;
    // false when the file does not define the row's communicator or a value is out of physical range. A call
    // left out for its values keeps its place in its communicator's sequence when `keeps_place`.
    std::int64_t last_comm = 0;  // consecutive calls mostly share a communicator: its lookup is kept
    int last_comm_index = -1;
    auto to_call = [&](std::string_view table, std::int64_t row, const auto& r, std::int64_t end_ns, std::int32_t root,
                       CollectiveCall& c, bool keeps_place) {
      if (last_comm_index < 0 || r.comm != last_comm) {
        auto it = comm_map.find(r.comm);
        if (it == comm_map.end()) {
          ++unknown_comm;
          return false;
        }
        last_comm = r.comm;
        last_comm_index = it->second;
      }
      if (!screen.within(table, row, "seq", r.seq, std::numeric_limits<std::int32_t>::max())) return false;
      if (!screen.span(table, row, r.start_ns, end_ns) || !screen.within(table, row, "bytes", r.bytes, L::kMaxCallBytes) ||
          !screen.within(table, row, "count", r.count, L::kMaxCallCount)) {
        if (keeps_place) t.left_out_calls.push_back({last_comm_index, static_cast<std::int32_t>(r.seq)});
        return false;
      }
      c.start_ns = r.start_ns;
      c.end_ns = end_ns;
      c.bytes = r.bytes;
      c.count = r.count;
      c.seq = static_cast<std::int32_t>(r.seq);
      c.comm = last_comm_index;
      c.datatype = global_string(r.datatype);
      c.root = root;
      c.op = r.op;
      c.reduction = reduction(r.reduce_op);
      c.thread = static_cast<std::uint16_t>(std::clamp<std::int64_t>(r.thread, 0, 0xffff));
      return true;
    };
    // kLoadedCollectiveColumns: the summary columns and the non-blocking times.
    using store::CollectiveRow;
    reader.for_each<CollectiveRow>(kLoadedCollectiveColumns, [&](const CollectiveRow& r) {
      CollectiveCall c;
      if (!to_call("collectives", r.id, r, r.end_ns, r.root ? *r.root : (r.peer ? *r.peer : -1), c, true)) return;
      std::string why;
      const auto nonblocking = checked_nonblocking(c.start_ns, c.end_ns, r.post_end_ns, r.wait_ns, r.wait_calls, why);
      if (!nonblocking) {
        screen.reject("collectives", r.id, why);
        t.left_out_calls.push_back({c.comm, c.seq});
        return;
      }
      if (nonblocking->post_end_ns != 0)
        t.nonblocking_collectives.push_back({static_cast<std::int32_t>(t.collectives.size()), *nonblocking});
      c.status = r.status;
      if (!fusion_capacity.empty()) {
        // The fusion buffer is the send buffer, or the receive buffer of an in-place allreduce (MPI_IN_PLACE in
        // sendbuf: Horovod-style trainers reduce their fusion buffer in place).
        auto it = fusion_capacity.find(r.sendbuf);
        if (it == fusion_capacity.end()) it = fusion_capacity.find(r.recvbuf);
        if (it != fusion_capacity.end() && it->second > 0)
          c.fusion_fill_pct = static_cast<std::uint8_t>(
              std::clamp<std::int64_t>((r.bytes * 100 + it->second - 1) / it->second, 1, 100));
      }
      t.collectives.push_back(c);
      row_ids.push_back(r.id);
    });
    for (const auto& r : reader.calls_in_flight()) {
      CallInFlight f;
      f.thread = r.thread;
      if (to_call("calls_in_flight", r.thread, r, r.seen_ns, r.root ? *r.root : -1, f.call, false))
        t.calls_in_flight.push_back(f);
    }
    renumber_tagged(t, tagged);
    worker_calls_inside_whole_span(t, tagged);
    screen_seqs(t, row_ids, shared.communicator_count(), screen);
    load_point_to_point(reader, comm_map, screen, t);
    if (options.nvtx_ranges) t.nvtx_ranges.reserve(static_cast<std::size_t>(std::max<std::int64_t>(reader.row_count("nvtx_ranges"), 0)));
    if (options.gpu_activities)
      t.gpu_activities.reserve(static_cast<std::size_t>(std::max<std::int64_t>(reader.row_count("gpu_activities"), 0)));
    // Only the columns the run keeps (a third of the decoding work of whole rows, at 1 M+ rows), and the row id
    // to name a row out of physical range.
    using store::columns;
    using store::GpuActivityRow;
    using store::NvtxRangeRow;
    constexpr auto nvtx_columns =
        columns<&NvtxRangeRow::id, &NvtxRangeRow::domain, &NvtxRangeRow::name, &NvtxRangeRow::start_ns,
                &NvtxRangeRow::end_ns, &NvtxRangeRow::thread, &NvtxRangeRow::depth>();
    constexpr auto gpu_columns =
        columns<&GpuActivityRow::id, &GpuActivityRow::kind, &GpuActivityRow::name, &GpuActivityRow::device,
                &GpuActivityRow::start_ns, &GpuActivityRow::end_ns, &GpuActivityRow::bytes, &GpuActivityRow::stream>();
    // collscope's Python annotation records its steps and phases in its own domain. A job that marks its steps
    // itself (a range of another domain named as a step) keeps only its own ranges: with both, every step would
    // count twice (real Horovod with its own NVTX ranges got 80 steps for 40, 2026-12-07).
    std::int64_t annotation_domain = 0;  // file-local string id; 0: none in this file
    for (std::size_t i = 1; i < local_strings.size(); ++i)
      if (local_strings[i] == store::kPythonAnnotationDomain) annotation_domain = std::int64_t(i);
    std::vector<bool> annotation_range;
    bool job_marks_steps = false;
    if (options.nvtx_ranges) reader.for_each<NvtxRangeRow>(nvtx_columns, [&](const NvtxRangeRow& r) {
      NvtxRange n;
      n.end_ns = r.end_ns.value_or(r.start_ns);
      if (!screen.span("nvtx_ranges", r.id, r.start_ns, n.end_ns)) return;
      n.name = global_string(r.name);
      n.start_ns = r.start_ns;
      n.thread = r.thread;
      n.depth = r.depth;
      t.nvtx_ranges.push_back(n);
      const bool annotation = annotation_domain > 0 && r.domain == annotation_domain;
      annotation_range.push_back(annotation);
      if (!annotation && !job_marks_steps && r.name > 0 && static_cast<std::size_t>(r.name) < local_strings.size())
        job_marks_steps = is_step_range_name(local_strings[static_cast<std::size_t>(r.name)]);
    });
    if (job_marks_steps && std::find(annotation_range.begin(), annotation_range.end(), true) != annotation_range.end()) {
      std::size_t kept = 0;
      for (std::size_t i = 0; i < t.nvtx_ranges.size(); ++i)
        if (!annotation_range[i]) t.nvtx_ranges[kept++] = t.nvtx_ranges[i];
      t.nvtx_ranges.resize(kept);
    }
    if (options.gpu_activities) reader.for_each<GpuActivityRow>(gpu_columns, [&](const GpuActivityRow& r) {
      GpuActivity g;
      g.end_ns = r.end_ns;
      if (!screen.span("gpu_activities", r.id, r.start_ns, g.end_ns) ||
          !screen.within("gpu_activities", r.id, "bytes", r.bytes, L::kMaxCallBytes))
        return;
      g.kind = r.kind;
      g.device = static_cast<std::int16_t>(std::clamp<std::int32_t>(r.device, INT16_MIN, INT16_MAX));
      g.name = global_string(r.name);
      g.start_ns = r.start_ns;
      g.bytes = r.bytes;
      g.stream = r.stream;
      t.gpu_activities.push_back(g);
    });
    reader.for_each<store::CpuSampleRow>([&](const store::CpuSampleRow& r) {
      std::int64_t end = r.t_ns;
      if (screen.span("cpu_samples", r.thread, r.t_ns, end) &&
          screen.within("cpu_samples", r.thread, "cpu_ns", r.cpu_ns, L::kMaxSpanNs) &&
          screen.within("cpu_samples", r.thread, "runq_ns", r.runq_ns, L::kMaxSpanNs))
        t.cpu_samples.push_back(r);
    });
    reader.for_each<store::TracerFlushRow>([&](const store::TracerFlushRow& r) {
      std::int64_t end = r.end_ns;
      if (screen.span("tracer_flushes", r.thread, r.start_ns, end)) t.tracer_flushes.push_back(r);
    });
    if (unknown_comm > 0)
      out.problems.push_back(fmt::format("{}: {} collectives name a communicator the file does not define (ignored)",
                                         path, unknown_comm));
    for (auto& w : screen.warnings()) out.problems.push_back(std::move(w));
    out.trace = std::move(t);
  } catch (const Error& e) {
    out.error = e.what();
  } catch (const std::bad_alloc&) {
    out.error = fmt::format("{}: out of memory while reading it", path);
  } catch (const std::exception& e) {
    out.error = fmt::format("{}: unreadable ({})", path, e.what());
  }
}

// The ranks of one run start within PhysicalLimits::kMaxLaunchSpreadNs of each other: a realtime anchor that far
// from the ranks' median is from another clock (or not a time) and would shift its host by days; it is not used.
void drop_distant_realtime_anchors(Run& run) {
  std::vector<std::int64_t> starts;
  for (const auto& r : run.ranks)
    if (r.realtime_start_ns != 0) starts.push_back(r.realtime_start_ns);
  if (starts.size() < 2) return;
  std::nth_element(starts.begin(), starts.begin() + static_cast<std::ptrdiff_t>(starts.size() / 2), starts.end());
  const std::int64_t median = starts[starts.size() / 2];
  for (auto& r : run.ranks) {
    if (r.realtime_start_ns == 0) continue;
    // Both anchors are within 0..2^62 (checked_anchors): the difference cannot overflow.
    const std::int64_t apart = r.realtime_start_ns > median ? r.realtime_start_ns - median : median - r.realtime_start_ns;
    if (apart <= PhysicalLimits::kMaxLaunchSpreadNs) continue;
    run.problems.push_back(fmt::format("{}: meta clock_realtime_start_ns = {} is {:.1f} days from the other ranks' "
                                       "start; not used", r.path, r.realtime_start_ns, double(apart) / 86'400e9));
    r.realtime_start_ns = r.realtime_end_ns = 0;
  }
}

// Every communicator and string index a trace holds, through new_comm and new_string (old index -> new).
void renumber(RankTrace& t, const std::vector<std::int32_t>& new_comm, const std::vector<std::int32_t>& new_string) {
  for (auto& c : t.collectives) c.comm = new_comm[c.comm], c.datatype = new_string[c.datatype];
  for (auto& f : t.calls_in_flight) f.call.comm = new_comm[f.call.comm], f.call.datatype = new_string[f.call.datatype];
  for (auto& l : t.left_out_calls) l.comm = new_comm[l.comm];
  for (auto& p : t.point_to_point) p.comm = new_comm[p.comm];
  for (auto& n : t.nvtx_ranges) n.name = new_string[n.name];
  for (auto& g : t.gpu_activities) g.name = new_string[g.name];
}

// The loader threads meet strings and communicators in whatever order they run; renumber both in an order that
// depends on the data only (strings sorted; communicators by size, largest first, then key), so that two loads of
// one run are the same run, down to the order of the report's lists.
void number_canonically(Run& run) {
  std::vector<int> string_order(run.strings.size());
  std::iota(string_order.begin(), string_order.end(), 0);
  std::sort(string_order.begin() + 1, string_order.end(), [&](int a, int b) { return run.strings[a] < run.strings[b]; });
  std::vector<std::int32_t> new_string(run.strings.size());
  std::vector<std::string> strings(run.strings.size());
  for (std::size_t i = 0; i < string_order.size(); ++i) {
    new_string[string_order[i]] = static_cast<std::int32_t>(i);
    strings[i] = std::move(run.strings[string_order[i]]);
  }
  run.strings = std::move(strings);
  std::vector<int> comm_order(run.communicators.size());
  std::iota(comm_order.begin(), comm_order.end(), 0);
  std::sort(comm_order.begin(), comm_order.end(), [&](int a, int b) {
    const auto &x = run.communicators[a], &y = run.communicators[b];
    return x.members.size() != y.members.size() ? x.members.size() > y.members.size() : x.key < y.key;
  });
  std::vector<std::int32_t> new_comm(run.communicators.size());
  std::vector<Communicator> comms(run.communicators.size());
  for (std::size_t i = 0; i < comm_order.size(); ++i) {
    new_comm[comm_order[i]] = static_cast<std::int32_t>(i);
    comms[i] = std::move(run.communicators[comm_order[i]]);
  }
  run.communicators = std::move(comms);
  for (auto& rank : run.ranks) renumber(rank, new_comm, new_string);
}

}  // namespace

RunShare RunLoader::load_share(const std::vector<std::string>& paths, const std::vector<std::size_t>& files) const {
  SharedTables shared;
  RunShare share;
  share.files.resize(files.size());
  std::atomic<std::size_t> files_done{0};
  parallel_for(
      files.size(),
      [&](std::size_t k) {
        auto& file = share.files[k];
        file.index = files[k];
        load_file(paths.at(files[k]), options_, shared, file);
        if (options_.on_file_loaded) options_.on_file_loaded(++files_done, files.size(), paths[files[k]]);
      },
      options_.threads);
  share.strings = std::move(shared.strings);
  share.communicators = std::move(shared.communicators);
  return share;
}

Run RunLoader::load(const std::string& run_dir) const {
  const std::vector<std::string> paths = store::rank_files(run_dir);
  std::vector<std::size_t> all(paths.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  std::vector<RunShare> shares;
  shares.push_back(load_share(paths, all));
  return assemble(run_dir, std::move(shares));
}

Run RunLoader::assemble(const std::string& run_dir, std::vector<RunShare> shares) {
  // One table of strings and communicators for the run: a single share's as it is, several merged through
  // their indices (the canonical numbering below makes the order they were met in irrelevant).
  SharedTables shared;
  std::vector<LoadedRankFile> loaded;
  if (shares.size() == 1) {
    shared.strings = std::move(shares[0].strings);
    shared.communicators = std::move(shares[0].communicators);
    loaded = std::move(shares[0].files);
  } else {
    for (auto& share : shares) {
      const auto new_string = shared.map_strings(share.strings);
      std::vector<std::int32_t> new_comm;
      for (auto& c : share.communicators) new_comm.push_back(shared.map_communicator(std::move(c)));
      const std::vector<std::int32_t> strings_to(new_string.begin(), new_string.end());
      for (auto& f : share.files) {
        if (f.trace) renumber(*f.trace, new_comm, strings_to);
        loaded.push_back(std::move(f));
      }
    }
  }
  // In the run's file order, as one process reads them: the problems come out in the same order.
  std::sort(loaded.begin(), loaded.end(), [](const auto& a, const auto& b) { return a.index < b.index; });

  Run run;
  run.dir = run_dir;
  std::map<int, std::string> seen;  // world rank -> path
  std::string first_error;
  for (auto& f : loaded) {
    if (!f.error.empty()) {
      if (first_error.empty()) first_error = f.error;
      run.problems.push_back(std::move(f.error));
    }
    for (auto& p : f.problems) run.problems.push_back(std::move(p));
    if (!f.trace) continue;
    auto& t = *f.trace;
    if (auto [it, added] = seen.emplace(t.world_rank, t.path); !added) {
      run.problems.push_back(fmt::format("{}: duplicate world rank {} (also in {}); ignored", t.path, t.world_rank,
                                         it->second));
      continue;
    }
    run.world_size = std::max<int>(run.world_size, static_cast<int>(t.meta_int("world_size").value_or(0)));
    run.ranks.push_back(std::move(t));
  }
  if (run.ranks.empty())
    throw InputError(fmt::format("{}: no readable rank file ({})", run_dir, first_error.empty() ? "none found" : first_error));
  std::sort(run.ranks.begin(), run.ranks.end(), [](const auto& a, const auto& b) { return a.world_rank < b.world_rank; });
  std::map<std::string, int> versions;
  for (const auto& r : run.ranks) ++versions[r.schema_version];
  if (versions.size() > 1) {
    std::string list;
    for (const auto& [v, n] : versions) list += fmt::format("{}{} ({} files)", list.empty() ? "" : ", ", v, n);
    run.problems.push_back(fmt::format("{}: mixed schema versions: {}", run_dir, list));
  }
  drop_distant_realtime_anchors(run);
  // One line per missing file, the first few of them: a file claiming a world of millions is one more line.
  constexpr int kMissingNamed = 8;
  int missing = 0;
  for (int r = 0; r < run.world_size; ++r) {
    if (seen.count(r)) continue;
    if (++missing <= kMissingNamed)
      run.problems.push_back(fmt::format("{}: missing (world size {})",
                                         (fs::path(run_dir) / store::rank_file_name(r)).string(), run.world_size));
  }
  if (missing > kMissingNamed)
    run.problems.push_back(fmt::format("{}: {} more rank files missing (world size {}, {} files read)", run_dir,
                                       missing - kMissingNamed, run.world_size, run.ranks.size()));
  for (const auto& r : run.ranks)
    if (r.events_dropped > 0)
      run.problems.push_back(fmt::format("{}: the tracer dropped {} events", r.path, r.events_dropped));
  run.strings = std::move(shared.strings);
  run.communicators = std::move(shared.communicators);
  number_canonically(run);
  const auto names = communicator_display_names(run);
  for (std::size_t c = 0; c < names.size(); ++c) run.communicators[c].display_name = names[c];
  return run;
}

}  // namespace collscope::run
