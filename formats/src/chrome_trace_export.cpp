// Chrome trace export. Streams each rank's rows straight to the output; only the flow points (24 B per collective)
// are kept until the end, to chain each collective across ranks. The run is loaded for its clock alignment, which
// reads every collective; they are freed before the rows stream, so the peak is the larger of the two, not their
// sum. Point-to-point calls come from the loaded run instead (88 B each), because their arrows need
// run::match_messages, which pairs sends and receives across all ranks.
#include <collscope/formats/chrome_trace.hpp>
#include <collscope/run/clock_alignment.hpp>
#include <collscope/run/matching.hpp>
#include <collscope/run/physical_limits.hpp>
#include <collscope/run/run.hpp>
#include <collscope/run/wait_states.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/trace_reader.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include "completions.hpp"
#include "export_run.hpp"
#include "json_text.hpp"

namespace collscope::formats {
namespace {

using detail::json_quote;

// GPU streams get thread ids far above any kernel thread id, so the two never share a track.
constexpr std::int64_t kGpuLaneBase = 1'000'000'000;

struct FlowPoint {
  std::int64_t ts_ns = 0;
  std::int32_t comm = 0;  // the communicator's place in key order (CommunicatorOrder): the same on every member rank
  std::int32_t seq = 0;
  std::int32_t pid = 0;
  std::int32_t tid = 0;  // a Linux thread id (at most 2^22) or the tracer's thread number
  bool operator<(const FlowPoint& o) const {
    return std::tie(comm, seq, ts_ns, pid) < std::tie(o.comm, o.seq, o.ts_ns, o.pid);
  }
};
static_assert(sizeof(FlowPoint) == 24, "a flow point per collective of the run is held until the end");

// Each communicator key's place among the run's keys in ascending order: flow points sort by it as by the key.
using CommunicatorOrder = std::map<std::uint64_t, std::int32_t>;
CommunicatorOrder communicator_order(const run::Run& run) {
  CommunicatorOrder order;
  for (const auto& c : run.communicators) order.emplace(c.key, 0);
  std::int32_t place = 0;
  for (auto& [key, p] : order) p = place++;
  return order;
}

// Buffers formatted events and writes them in 1 MiB pieces.
class EventStream {
 public:
  explicit EventStream(std::ostream& out) : out_(out) {}
  ~EventStream() { flush(); }
  template <typename... Args>
  void event(fmt::format_string<Args...> format, Args&&... args) {
    if (!first_) buf_.push_back(',');
    first_ = false;
    buf_.push_back('\n');
    fmt::format_to(std::back_inserter(buf_), format, std::forward<Args>(args)...);
    if (buf_.size() > (1u << 20)) flush();
  }
  void raw(std::string_view text) {
    buf_.append(text.data(), text.data() + text.size());
  }
  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

 private:
  std::ostream& out_;
  fmt::memory_buffer buf_;
  bool first_ = true;
};

// Microseconds with nanosecond digits, as the format wants.
std::string micros(std::int64_t ns) { return fmt::format("{:.3f}", double(ns) / 1e3); }

class RankExporter {
 public:
  // offset_ns: what turns this file's CLOCK_MONOTONIC into run time (run::ClockAlignment's offset − origin).
  RankExporter(const run::RankTrace& rank, const run::Run& run, const std::vector<detail::Completion>& completions,
               std::int64_t offset_ns, const ChromeExportOptions& options, EventStream& out,
               std::vector<FlowPoint>* flows, const CommunicatorOrder& comm_order, ChromeExportCounts& counts)
      : rank_(rank),
        run_(run),
        completions_(completions),
        reader_(rank.path),
        screen_(rank.path, run::read_anchors(reader_, anchor_warnings_)),
        out_(out),
        flows_(flows),
        comm_order_(comm_order),
        counts_(counts),
        from_(options.from_ns),
        to_(options.to_ns) {
    offset_ = offset_ns;
    pid_ = static_cast<std::int32_t>(reader_.meta_int(store::meta_key::kWorldRank).value_or(counts.ranks));
    strings_ = reader_.strings();
    for (const auto& c : reader_.communicators()) comms_[c.id] = c;
    for (const auto& t : reader_.threads()) tids_[t.id] = t.tid;
  }

  void run() {
    const std::string host = reader_.meta_value(store::meta_key::kHost).value_or("");
    out_.event(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":{}}}}})", pid_,
               json_quote(host.empty() ? fmt::format("rank {}", pid_) : fmt::format("rank {} ({})", pid_, host)));
    out_.event(R"({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}})", pid_, pid_);
    for (const auto& t : reader_.threads())
      out_.event(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", pid_, t.tid,
                 json_quote(t.name.empty() ? fmt::format("thread {}", t.tid) : t.name));
    // GPU activities first: they carry the device, so each stream's track is named with it before an NCCL
    // collective's GPU span (which knows only the stream) uses the track.
    reader_.for_each_gpu_activity([&](const store::GpuActivityRow& r) { gpu(r); });
    reader_.for_each_collective([&](const store::CollectiveRow& r) { collective(r); });
    for (const auto& c : rank_.point_to_point) point_to_point(c);
    for (const auto& done : completions_) completion(done);
    reader_.for_each_nvtx_range([&](const store::NvtxRangeRow& r) { nvtx(r); });
    for (const auto& r : reader_.calls_in_flight()) in_flight(r);
    ++counts_.ranks;
  }

  // One line per table with rows out of physical range (left out, as the run loader leaves them out).
  std::vector<std::string> warnings() const { return screen_.warnings(); }

 private:
  std::string str(std::int64_t id) const {
    return id > 0 && static_cast<std::size_t>(id) < strings_.size() ? strings_[static_cast<std::size_t>(id)] : "";
  }
  std::int64_t tid(std::int64_t thread) const {
    auto it = tids_.find(thread);
    return it == tids_.end() ? thread : it->second;
  }
  std::string ts(std::int64_t ns) const { return micros(ns + offset_); }
  // Overlaps the window asked for (times on this file's clock).
  bool visible(std::int64_t start_ns, std::int64_t end_ns) const {
    return end_ns + offset_ >= from_ && start_ns + offset_ <= to_;
  }
  std::string comm_name(std::int64_t id) const {
    auto it = comms_.find(id);
    return it == comms_.end() ? fmt::format("comm {}", id) : it->second.name;
  }

  // The track of a GPU stream, named once when first used.
  std::int64_t gpu_lane(std::optional<std::int32_t> device, std::uint64_t stream) {
    auto [it, added] = gpu_lanes_.try_emplace(stream, kGpuLaneBase + static_cast<std::int64_t>(gpu_lanes_.size()));
    if (added)
      out_.event(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", pid_, it->second,
                 json_quote(device ? fmt::format("GPU {} stream {:#x}", *device, stream)
                                   : fmt::format("GPU stream {:#x}", stream)));
    return it->second;
  }

  void collective(const store::CollectiveRow& r) {
    using L = run::PhysicalLimits;
    std::int64_t end_ns = r.end_ns;
    if (!screen_.within("collectives", r.id, "seq", r.seq, std::numeric_limits<std::int32_t>::max()) ||
        !screen_.span("collectives", r.id, r.start_ns, end_ns) ||
        !screen_.within("collectives", r.id, "bytes", r.bytes, L::kMaxCallBytes) ||
        !screen_.within("collectives", r.id, "count", r.count, L::kMaxCallCount))
      return;
    if (!visible(r.start_ns, end_ns)) return;
    const std::string op(store::op_name(r.op));
    std::string args = fmt::format(R"("communicator":{},"seq":{},"bytes":{},"count":{},"datatype":{},"status":{})",
                                   json_quote(comm_name(r.comm)), r.seq, r.bytes, r.count, json_quote(str(r.datatype)),
                                   r.status);
    if (r.reduce_op) args += fmt::format(R"(,"reduce_op":{})", json_quote(str(r.reduce_op)));
    if (r.root) args += fmt::format(R"(,"root":{})", *r.root);
    if (r.peer) args += fmt::format(R"(,"peer":{})", *r.peer);
    if (r.sendbuf) args += fmt::format(R"(,"sendbuf":"{:#x}")", r.sendbuf);
    if (r.recvbuf) args += fmt::format(R"(,"recvbuf":"{:#x}")", r.recvbuf);
    const std::int64_t thread_tid = tid(r.thread);
    out_.event(R"({{"ph":"X","cat":"collective","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}}}})",
               json_quote(op), pid_, thread_tid, ts(r.start_ns), micros(end_ns - r.start_ns), args);
    std::int64_t gpu_end_ns = r.gpu_end_ns.value_or(0);
    if (r.gpu_start_ns && r.gpu_end_ns && r.stream && screen_.span("collectives (gpu_start_ns)", r.id, *r.gpu_start_ns, gpu_end_ns))
      out_.event(R"({{"ph":"X","cat":"collective_gpu","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"seq":{}}}}})",
                 json_quote(op), pid_, gpu_lane(std::nullopt, *r.stream), ts(*r.gpu_start_ns),
                 micros(gpu_end_ns - *r.gpu_start_ns), r.seq);
    if (flows_) {
      auto c = comms_.find(r.comm);
      const auto place = c != comms_.end() ? comm_order_.find(c->second.key) : comm_order_.end();
      // A seq no rank could reach (beyond 2^31 calls: a corrupt row) links nothing.
      if (c != comms_.end() && c->second.size > 1 && place != comm_order_.end() && r.seq >= 0 && r.seq <= INT32_MAX)
        flows_->push_back({r.start_ns + offset_, place->second, static_cast<std::int32_t>(r.seq), pid_,
                           static_cast<std::int32_t>(thread_tid)});
    }
    ++counts_.collectives;
  }

  // Peer, tag and bytes of a point-to-point call as slice args. One side: peer, tag, bytes; both (sendrecv): each
  // side prefixed. Peers are world ranks (-1 MPI_PROC_NULL, -2 a wildcard source the tracer could not read).
  static std::string message_args(const run::PointToPointCall& c) {
    if (c.sends() && c.receives())
      return fmt::format(R"("send_peer":{},"send_tag":{},"send_bytes":{},"recv_peer":{},"recv_tag":{},"recv_bytes":{})",
                         c.send_peer, c.send_tag, c.send_bytes, c.recv_peer, c.recv_tag, c.recv_bytes);
    if (c.sends()) return fmt::format(R"("peer":{},"tag":{},"bytes":{})", c.send_peer, c.send_tag, c.send_bytes);
    if (c.receives()) return fmt::format(R"("peer":{},"tag":{},"bytes":{})", c.recv_peer, c.recv_tag, c.recv_bytes);
    return "";
  }

  // One slice per MPI point-to-point call where it was inside MPI (run/wait_states.hpp): a blocking call's span,
  // a non-blocking or persistent one's posting call. Their completions are completion() slices.
  void point_to_point(const run::PointToPointCall& c) {
    if (!visible(c.start_ns, c.end_ns)) return;
    const run::MpiSpans spans = run::spans_in_mpi(c);
    const auto& comm = run_.communicators[static_cast<std::size_t>(c.comm)];
    std::string args = fmt::format(R"("communicator":{},"seq":{},"status":{})", json_quote(comm.shown_name()), c.seq, c.status);
    if (const std::string m = message_args(c); !m.empty()) args += "," + m;
    if (spans.nonblocking) args += fmt::format(R"(,"request_us":{})", micros(c.end_ns - c.start_ns));
    out_.event(R"({{"ph":"X","cat":"point_to_point","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}}}})",
               json_quote(store::op_name(c.op)), pid_, tid(c.thread), ts(spans.post.start_ns), micros(spans.post.length()), args);
    ++counts_.point_to_point;
  }

  // The completion of non-blocking point-to-point requests (detail::completions: one slice per completion call,
  // whatever number of requests it completed, so that an arrow to a receive binds to one slice): named by the one
  // request, "completion (2 irecv, 2 isend)" for several; args.requests lists them.
  void completion(const detail::Completion& done) {
    if (!visible(done.start_ns, done.end_ns)) return;
    std::map<std::string, int> ops;
    std::string requests;
    for (const auto& r : done.requests) {
      const auto& c = rank_.point_to_point[static_cast<std::size_t>(r.call)];
      ++ops[std::string(store::op_name(c.op))];
      requests += fmt::format(R"({}{{"op":{},"seq":{},{}}})", requests.empty() ? "" : ",", json_quote(store::op_name(c.op)),
                              c.seq, message_args(c));
    }
    std::string name = fmt::format("{} (completion)", ops.begin()->first);
    if (done.requests.size() > 1) {
      name = "completion (";
      for (const auto& [op, n] : ops) name += fmt::format("{}{} {}", name.back() == '(' ? "" : ", ", n, op);
      name += ")";
    }
    out_.event(
        R"({{"ph":"X","cat":"point_to_point","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"wait_calls":{},"requests":[{}]}}}})",
        json_quote(name), pid_, tid(done.thread), ts(done.start_ns), micros(done.end_ns - done.start_ns), done.wait_calls, requests);
  }

  void nvtx(const store::NvtxRangeRow& r) {
    std::int64_t end_ns = r.end_ns.value_or(r.start_ns);
    if (!screen_.span("nvtx_ranges", r.id, r.start_ns, end_ns) || !visible(r.start_ns, end_ns)) return;
    const std::string name = json_quote(str(r.name));
    const std::string domain = json_quote(str(r.domain));
    if (r.kind == store::NvtxKind::Mark || !r.end_ns) {
      out_.event(R"({{"ph":"i","s":"t","cat":"nvtx","name":{},"pid":{},"tid":{},"ts":{},"args":{{"domain":{}}}}})", name,
                 pid_, tid(r.thread), ts(r.start_ns), domain);
    } else {
      out_.event(R"({{"ph":"X","cat":"nvtx","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"domain":{}}}}})", name,
                 pid_, tid(r.thread), ts(r.start_ns), micros(end_ns - r.start_ns), domain);
    }
    ++counts_.nvtx_ranges;
  }

  void gpu(const store::GpuActivityRow& r) {
    std::int64_t end_ns = r.end_ns;
    if (!screen_.span("gpu_activities", r.id, r.start_ns, end_ns) ||
        !screen_.within("gpu_activities", r.id, "bytes", r.bytes, run::PhysicalLimits::kMaxCallBytes) ||
        !visible(r.start_ns, end_ns))
      return;
    out_.event(
        R"({{"ph":"X","cat":{},"name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"bytes":{},"correlation":{}}}}})",
        json_quote(store::gpu_activity_kind_name(r.kind)), json_quote(str(r.name)), pid_, gpu_lane(r.device, r.stream),
        ts(r.start_ns), micros(end_ns - r.start_ns), r.bytes, r.correlation);
    ++counts_.gpu_activities;
  }

  void in_flight(const store::CallInFlightRow& r) {
    std::int64_t seen_ns = r.seen_ns;
    if (!screen_.span("calls_in_flight", r.thread, r.start_ns, seen_ns) || !visible(r.start_ns, seen_ns)) return;
    out_.event(
        R"({{"ph":"X","cat":"in_flight","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"communicator":{},"seq":{},"bytes":{},"state":"still inside the call when last written"}}}})",
        json_quote(fmt::format("{} (in flight)", store::op_name(r.op))), pid_, tid(r.thread), ts(r.start_ns),
        micros(seen_ns - r.start_ns), json_quote(comm_name(r.comm)), r.seq, r.bytes);
    ++counts_.calls_in_flight;
  }

  const run::RankTrace& rank_;
  const run::Run& run_;
  const std::vector<detail::Completion>& completions_;
  store::TraceReader reader_;
  std::vector<std::string> anchor_warnings_;  // the run loader reports these
  run::RowScreen screen_;
  EventStream& out_;
  std::vector<FlowPoint>* flows_;
  const CommunicatorOrder& comm_order_;
  ChromeExportCounts& counts_;
  std::int64_t offset_ = 0;
  std::int32_t pid_ = 0;
  std::vector<std::string> strings_;
  std::map<std::int64_t, store::CommunicatorRow> comms_;
  std::map<std::int64_t, std::int64_t> tids_;
  std::map<std::uint64_t, std::int64_t> gpu_lanes_;
  std::int64_t from_, to_;
};

// One arrow chain per collective seen on two or more ranks: s on the first to arrive, t on the middle ones,
// f on the last, each bound to the collective's slice on that rank.
std::uint64_t write_flows(std::vector<FlowPoint>& points, EventStream& out, ChromeExportCounts& counts) {
  std::sort(points.begin(), points.end());
  std::uint64_t id = 0;
  for (std::size_t i = 0; i < points.size();) {
    std::size_t j = i;
    while (j < points.size() && points[j].comm == points[i].comm && points[j].seq == points[i].seq) ++j;
    if (j - i >= 2) {
      ++id;
      for (std::size_t k = i; k < j; ++k) {
        const char* ph = k == i ? "s" : k + 1 == j ? "f" : "t";
        out.event(R"({{"ph":"{}","cat":"match","name":"collective","id":{},"pid":{},"tid":{},"ts":{}{}}})", ph, id,
                  points[k].pid, points[k].tid, micros(points[k].ts_ns), k == i ? "" : R"(,"bp":"e")");
      }
      ++counts.flows;
    }
    i = j;
  }
  return id;
}

// One arrow per matched message (run::match_messages, MPI's non-overtaking order), from the send's posting call
// to the receive's blocking span (the completion slice of its completion call when non-blocking), where the data
// arrived. Both ends must have been exported (--ranks, --from-ms/--to-ms). Ids continue after the collectives'
// (`id`), so that no two arrows share one.
void write_message_flows(const run::Run& run, const run::ClockAlignment& clocks,
                         const std::vector<std::vector<detail::Completion>>& completions, const ChromeExportOptions& options,
                         std::uint64_t id, EventStream& out, ChromeExportCounts& counts) {
  const run::MatchedMessages matched = run::match_messages(run);
  // Where each non-blocking call's completion slice starts (raw clock), per rank and call; kNone for blocking calls.
  constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min();
  std::vector<std::vector<std::int64_t>> completed_at(run.ranks.size());
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    completed_at[r].assign(run.ranks[r].point_to_point.size(), kNone);
    for (const auto& done : completions[r])
      for (const auto& request : done.requests) completed_at[r][static_cast<std::size_t>(request.call)] = done.start_ns;
  }
  auto exported = [&](int r, const run::PointToPointCall& c) {
    const auto& rank = run.ranks[static_cast<std::size_t>(r)];
    const std::int64_t offset = clocks.offset_ns[static_cast<std::size_t>(r)] - clocks.origin_ns;
    return (options.ranks.empty() || std::find(options.ranks.begin(), options.ranks.end(), rank.world_rank) != options.ranks.end()) &&
           c.end_ns + offset >= options.from_ns && c.start_ns + offset <= options.to_ns;
  };
  auto tid = [&](const run::RankTrace& rank, std::int64_t thread) {
    for (const auto& t : rank.threads)
      if (t.id == thread) return t.tid;
    return thread;
  };
  for (const auto& m : matched.messages) {
    const auto& send = run.ranks[static_cast<std::size_t>(m.send_rank)].point_to_point[static_cast<std::size_t>(m.send_call)];
    const auto& recv = run.ranks[static_cast<std::size_t>(m.recv_rank)].point_to_point[static_cast<std::size_t>(m.recv_call)];
    if (!exported(m.send_rank, send) || !exported(m.recv_rank, recv)) continue;
    const std::int64_t completed = completed_at[static_cast<std::size_t>(m.recv_rank)][static_cast<std::size_t>(m.recv_call)];
    const std::int64_t recv_at = completed != kNone ? completed : recv.start_ns;
    // A window that ends inside the request's life, before its completion: the receive's end of the arrow is not there.
    if (clocks.aligned(m.recv_rank, recv_at) - clocks.origin_ns > options.to_ns) continue;
    const auto& sender = run.ranks[static_cast<std::size_t>(m.send_rank)];
    const auto& receiver = run.ranks[static_cast<std::size_t>(m.recv_rank)];
    ++id;
    out.event(R"({{"ph":"s","cat":"message","name":"message","id":{},"pid":{},"tid":{},"ts":{}}})", id, sender.world_rank,
              tid(sender, send.thread), micros(clocks.aligned(m.send_rank, send.start_ns) - clocks.origin_ns));
    out.event(R"({{"ph":"f","bp":"e","cat":"message","name":"message","id":{},"pid":{},"tid":{},"ts":{}}})", id,
              receiver.world_rank, tid(receiver, recv.thread), micros(clocks.aligned(m.recv_rank, recv_at) - clocks.origin_ns));
    ++counts.messages;
  }
}

}  // namespace

ChromeExportCounts export_chrome_trace(const std::string& run_dir, std::ostream& out,
                                       const ChromeExportOptions& options) {
  // Times on the run's one aligned clock (collscope::run: per host, refined from the collectives), from the run's
  // origin: the report, the viewer and this export agree to the nanosecond. Only the collectives are held for
  // that (the rest streams from the files below).
  run::Run run = detail::load_run_for_export(run_dir, {.nvtx_ranges = false, .gpu_activities = false});
  const run::ClockAlignment clocks = run::ClockAligner().align(run);
  // The rows stream from the files below: the loaded collectives are done with. A flow point per collective at
  // most, reserved at once (growing by doubling would hold up to twice that).
  std::size_t collectives = 0;
  for (auto& rank : run.ranks) {
    collectives += rank.collectives.size();
    std::vector<run::CollectiveCall>().swap(rank.collectives);
    std::vector<run::NonblockingCollective>().swap(rank.nonblocking_collectives);
    std::vector<store::CpuSampleRow>().swap(rank.cpu_samples);
  }
  const CommunicatorOrder comm_order = communicator_order(run);
  for (int r : options.ranks)
    if (run.rank_index(r) < 0)
      throw InputError(fmt::format("{}: no rank {} (the run has {} rank files)", run_dir, r, run.ranks.size()));

  ChromeExportCounts counts;
  counts.problems = run.problems;
  std::vector<FlowPoint> flows;
  if (options.flows) flows.reserve(collectives);
  std::vector<std::vector<detail::Completion>> completions;
  for (const auto& rank : run.ranks) completions.push_back(detail::completions(rank, false));
  {
    EventStream events(out);
    events.raw(fmt::format(R"({{"displayTimeUnit":"ns","otherData":{{"producer":"collscope","run":{},"clock_realtime_origin_ns":{}}},"traceEvents":[)",
                           json_quote(std::filesystem::absolute(run_dir).string()), clocks.realtime_origin_ns));
    for (std::size_t i = 0; i < run.ranks.size(); ++i) {
      const auto& rank = run.ranks[i];
      if (!options.ranks.empty() && std::find(options.ranks.begin(), options.ranks.end(), rank.world_rank) == options.ranks.end())
        continue;
      RankExporter exporter(rank, run, completions[i], clocks.offset_ns[i] - clocks.origin_ns, options, events,
                            options.flows ? &flows : nullptr, comm_order, counts);
      exporter.run();
      for (auto& w : exporter.warnings())
        if (std::find(counts.problems.begin(), counts.problems.end(), w) == counts.problems.end())
          counts.problems.push_back(std::move(w));
    }
    const std::uint64_t last_id = write_flows(flows, events, counts);
    if (options.flows) write_message_flows(run, clocks, completions, options, last_id, events, counts);
    events.raw("\n]}\n");
  }
  if (!out) throw InputError(fmt::format("{}: writing the Chrome trace failed", run_dir));
  return counts;
}

}  // namespace collscope::formats
