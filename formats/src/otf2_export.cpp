// OTF2 export through Debian's OTF2 library. The run is loaded whole (run::load_run) because OTF2 wants each
// location's events in time order with strictly nested regions, and a rank file's rows are in completion order:
// the calls of one thread are sorted and nested here, one location at a time. The mapping is in docs/formats.md.
#include <collscope/formats/otf2.hpp>
#include <collscope/run/clock_alignment.hpp>
#include <collscope/run/matching.hpp>
#include <collscope/run/run.hpp>
#include <collscope/run/wait_states.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>
#include <otf2/otf2.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "completions.hpp"
#include "export_run.hpp"
#include "otf2_errors.hpp"

namespace collscope::formats {
namespace {

namespace fs = std::filesystem;

// Events are written straight to the files: no buffer flush needs to be timed (nothing is measured while writing).
OTF2_FlushType pre_flush(void*, OTF2_FileType, OTF2_LocationRef, void*, bool) { return OTF2_FLUSH; }
OTF2_TimeStamp post_flush(void*, OTF2_FileType, OTF2_LocationRef) { return 0; }

// The MPI name of the call a row is: "isend" -> "MPI_Isend"; a persistent call's row is one MPI_Start of it.
std::string mpi_function(store::Op op) {
  const std::string_view name = store::op_name(op);
  if (name.ends_with("_init")) return "MPI_Start";
  std::string out = "MPI_" + std::string(name);
  out[4] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[4])));
  return out;
}

// NCCL's name for its calls, torch.distributed's for the Python annotation's.
std::string call_name(store::Backend backend, store::Op op) {
  const std::string_view name = store::op_name(op);
  if (backend == store::Backend::Mpi) return mpi_function(op);
  if (backend == store::Backend::Nccl) {
    static const std::map<std::string_view, std::string_view> nccl = {
        {"allreduce", "ncclAllReduce"}, {"bcast", "ncclBroadcast"},          {"reduce", "ncclReduce"},
        {"allgather", "ncclAllGather"}, {"reduce_scatter", "ncclReduceScatter"}, {"send", "ncclSend"},
        {"recv", "ncclRecv"}};
    auto it = nccl.find(name);
    return it != nccl.end() ? std::string(it->second) : "nccl " + std::string(name);
  }
  return fmt::format("{} {}", store::backend_name(backend), name);
}

// OTF2's collective operation for an MPI collective (any form); nullopt for those OTF2 3.0 has none for
// (neighbourhood collectives), which are regions only.
std::optional<OTF2_CollectiveOp> collective_op(store::Op op) {
  using O = store::Op;
  switch (store::blocking_form(op)) {
    case O::Barrier: return OTF2_COLLECTIVE_OP_BARRIER;
    case O::Bcast: return OTF2_COLLECTIVE_OP_BCAST;
    case O::Gather: return OTF2_COLLECTIVE_OP_GATHER;
    case O::Gatherv: return OTF2_COLLECTIVE_OP_GATHERV;
    case O::Scatter: return OTF2_COLLECTIVE_OP_SCATTER;
    case O::Scatterv: return OTF2_COLLECTIVE_OP_SCATTERV;
    case O::Allgather: return OTF2_COLLECTIVE_OP_ALLGATHER;
    case O::Allgatherv: return OTF2_COLLECTIVE_OP_ALLGATHERV;
    case O::Alltoall: return OTF2_COLLECTIVE_OP_ALLTOALL;
    case O::Alltoallv: return OTF2_COLLECTIVE_OP_ALLTOALLV;
    case O::Alltoallw: return OTF2_COLLECTIVE_OP_ALLTOALLW;
    case O::Allreduce: return OTF2_COLLECTIVE_OP_ALLREDUCE;
    case O::Reduce: return OTF2_COLLECTIVE_OP_REDUCE;
    case O::ReduceScatter: return OTF2_COLLECTIVE_OP_REDUCE_SCATTER;
    case O::ReduceScatterBlock: return OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK;
    case O::Scan: return OTF2_COLLECTIVE_OP_SCAN;
    case O::Exscan: return OTF2_COLLECTIVE_OP_EXSCAN;
    default: return std::nullopt;
  }
}

OTF2_RegionRole collective_role(store::Op op) {
  using O = store::Op;
  switch (store::blocking_form(op)) {
    case O::Barrier: return OTF2_REGION_ROLE_BARRIER;
    case O::Bcast: case O::Scatter: case O::Scatterv: return OTF2_REGION_ROLE_COLL_ONE2ALL;
    case O::Reduce: case O::Gather: case O::Gatherv: return OTF2_REGION_ROLE_COLL_ALL2ONE;
    case O::Scan: case O::Exscan: return OTF2_REGION_ROLE_COLL_OTHER;
    default: return OTF2_REGION_ROLE_COLL_ALL2ALL;
  }
}

// What an interval on a location is, and so which records it carries at its start and end.
enum class Part : std::uint8_t {
  P2pCall,         // a blocking point-to-point call: MpiSend at entry, MpiRecv at exit
  P2pPost,         // a non-blocking one's posting call: MpiIsend, MpiIrecvRequest
  CollCall,        // a blocking collective: MpiCollectiveBegin, MpiCollectiveEnd
  CollPost,        // NonBlockingCollectiveRequest
  Completion,      // one completion call's requests (detail::completions): MpiIsendComplete, MpiIrecv,
                   // NonBlockingCollectiveComplete
  Nvtx,
};

struct Interval {
  std::int64_t start = 0, end = 0;  // aligned ns
  std::uint32_t region = 0;
  std::int32_t call = 0;  // index into the rank's point_to_point, collectives, nvtx_ranges or completions
  Part part = Part::Nvtx;
};

class Otf2Writer {
 public:
  Otf2Writer(const run::Run& run, const run::ClockAlignment& clocks, const std::string& out_dir, Otf2ExportCounts& counts)
      : run_(run), clocks_(clocks), out_dir_(out_dir), counts_(counts) {}

  void write(const std::string& archive_dir) {
    OTF2_Error_RegisterCallback(detail::keep_otf2_error, nullptr);
    archive_ = OTF2_Archive_Open(archive_dir.c_str(), "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024,
                                 OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!archive_) fail(OTF2_ERROR_INVALID);
    OTF2_FlushCallbacks flush = {pre_flush, post_flush};
    check(OTF2_Archive_SetFlushCallbacks(archive_, &flush, nullptr));
    check(OTF2_Archive_SetSerialCollectiveCallbacks(archive_));
    check(OTF2_Archive_SetCreator(archive_, "collscope export --format otf2"));
    check(OTF2_Archive_SetDescription(archive_, fmt::format("collscope run {}", run_.dir).c_str()));
    check(OTF2_Archive_OpenEvtFiles(archive_));
    plan();
    for (std::size_t r = 0; r < run_.ranks.size(); ++r) write_rank(r);
    check(OTF2_Archive_CloseEvtFiles(archive_));
    check(OTF2_Archive_OpenDefFiles(archive_));
    for (const auto& loc : locations_) {
      OTF2_DefWriter* d = OTF2_Archive_GetDefWriter(archive_, loc.id);
      if (!d) fail(OTF2_ERROR_INVALID);
      check(OTF2_Archive_CloseDefWriter(archive_, d));
    }
    check(OTF2_Archive_CloseDefFiles(archive_));
    write_definitions();
    check(OTF2_Archive_Close(archive_));
    archive_ = nullptr;
  }

  ~Otf2Writer() {
    if (archive_) OTF2_Archive_Close(archive_);
  }

 private:
  struct Location {
    OTF2_LocationRef id = 0;
    int rank_index = 0;
    std::string name;
    std::uint64_t events = 0;
  };

  [[noreturn]] void fail(OTF2_ErrorCode code) const {
    throw InputError(fmt::format("{}: writing the OTF2 archive failed: {}", out_dir_, detail::otf2_error_text(code)));
  }
  void check(OTF2_ErrorCode code) const {
    if (code != OTF2_SUCCESS) fail(code);
  }

  OTF2_StringRef string(const std::string& s) {
    auto [it, added] = strings_.try_emplace(s, static_cast<OTF2_StringRef>(strings_.size()));
    if (added) string_order_.push_back(s);
    return it->second;
  }
  std::uint32_t region(const std::string& name, OTF2_RegionRole role, OTF2_Paradigm paradigm, const std::string& description) {
    auto [it, added] = regions_.try_emplace(name, static_cast<std::uint32_t>(regions_.size()));
    if (added) region_defs_.push_back({name, role, paradigm, description});
    return it->second;
  }

  // OTF2 time: ns from the earliest aligned event or the run's origin, whichever is first (no negative stamps).
  OTF2_TimeStamp stamp(int rank_index, std::int64_t raw_ns) const {
    return static_cast<OTF2_TimeStamp>(clocks_.aligned(rank_index, raw_ns) - base_ns_);
  }

  // The communicator's rank of a world rank; nullopt when it is no member (an intercommunicator peer).
  std::optional<std::uint32_t> comm_rank(std::int32_t comm, std::int32_t world_rank) const {
    const auto& members = run_.communicators[static_cast<std::size_t>(comm)].members;
    auto it = std::find(members.begin(), members.end(), world_rank);
    if (it == members.end()) return std::nullopt;
    return static_cast<std::uint32_t>(it - members.begin());
  }

  bool mpi_comm(std::int32_t comm) const {
    return run_.communicators[static_cast<std::size_t>(comm)].backend == store::Backend::Mpi;
  }

  // The earliest aligned time of any event, and every rank's threads as locations.
  void plan() {
    base_ns_ = clocks_.origin_ns;
    for (std::size_t r = 0; r < run_.ranks.size(); ++r) {
      const auto& rank = run_.ranks[r];
      const int ri = static_cast<int>(r);
      for (const auto& c : rank.point_to_point) base_ns_ = std::min(base_ns_, clocks_.aligned(ri, c.start_ns));
      for (const auto& c : rank.collectives) base_ns_ = std::min(base_ns_, clocks_.aligned(ri, c.start_ns));
      for (const auto& n : rank.nvtx_ranges) base_ns_ = std::min(base_ns_, clocks_.aligned(ri, n.start_ns));
    }
  }

  void add(std::map<std::int64_t, std::vector<Interval>>& by_thread, std::int64_t thread, Interval i) {
    by_thread[thread].push_back(i);
  }

  void write_rank(std::size_t r) {
    const auto& rank = run_.ranks[r];
    const int ri = static_cast<int>(r);
    std::map<std::int64_t, std::vector<Interval>> by_thread;
    const std::uint32_t completion = region("MPI_Wait/MPI_Test (completion)", OTF2_REGION_ROLE_WRAPPER, OTF2_PARADIGM_MPI,
                                            "the MPI_Wait*/MPI_Test* calls that completed the request(s): their total "
                                            "time as one span ending at the completion (collscope records the sum, "
                                            "not each call)");
    // The thread of the rank's first MPI call is its location in MPI_COMM_WORLD's location list.
    std::optional<std::int64_t> mpi_thread;
    std::int64_t first_mpi_ns = 0;
    auto mpi_call = [&](std::int64_t thread, std::int64_t start_ns) {
      if (!mpi_thread || start_ns < first_mpi_ns) mpi_thread = thread, first_mpi_ns = start_ns;
    };
    for (std::size_t j = 0; j < rank.point_to_point.size(); ++j) {
      const auto& c = rank.point_to_point[j];
      const std::uint32_t reg = region(mpi_function(c.op), OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI, "");
      const run::MpiSpans spans = run::spans_in_mpi(c);
      add(by_thread, c.thread, {spans.post.start_ns, spans.post.end_ns, reg, static_cast<std::int32_t>(j), spans.nonblocking ? Part::P2pPost : Part::P2pCall});
      mpi_call(c.thread, c.start_ns);
    }
    for (std::size_t j = 0; j < rank.collectives.size(); ++j) {
      const auto& c = rank.collectives[j];
      const auto& comm = run_.communicators[static_cast<std::size_t>(c.comm)];
      const bool mpi = comm.backend == store::Backend::Mpi;
      const std::uint32_t reg = region(call_name(comm.backend, c.op), mpi ? collective_role(c.op) : OTF2_RegionRole{OTF2_REGION_ROLE_COLL_OTHER},
                                       OTF2_Paradigm{mpi ? OTF2_PARADIGM_MPI : comm.backend == store::Backend::Nccl ? OTF2_PARADIGM_CUDA : OTF2_PARADIGM_USER},
                                       "");
      const auto spans = run::spans_in_mpi(rank, j);
      const bool nonblocking = spans && spans->nonblocking;
      add(by_thread, c.thread, {c.start_ns, nonblocking ? spans->post.end_ns : c.end_ns, reg, static_cast<std::int32_t>(j), nonblocking ? Part::CollPost : Part::CollCall});
      if (mpi) mpi_call(c.thread, c.start_ns);
    }
    completions_ = detail::completions(rank, true);
    for (std::size_t j = 0; j < completions_.size(); ++j)
      add(by_thread, completions_[j].thread, {completions_[j].start_ns, completions_[j].end_ns, completion, static_cast<std::int32_t>(j), Part::Completion});
    for (std::size_t j = 0; j < rank.nvtx_ranges.size(); ++j) {
      const auto& n = rank.nvtx_ranges[j];
      const std::string& name = run_.strings[static_cast<std::size_t>(n.name)];
      add(by_thread, n.thread,
          {n.start_ns, n.end_ns, region(name.empty() ? "NVTX range" : name, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER, "NVTX range"),
           static_cast<std::int32_t>(j), Part::Nvtx});
      ++counts_.nvtx_ranges;
    }

    // Location ids: world rank in the high 32 bits, the thread's place on its rank in the low ones.
    std::uint32_t index = 0;
    for (auto& [thread, intervals] : by_thread) {
      Location loc;
      loc.id = (static_cast<std::uint64_t>(rank.world_rank) << 32) | index++;
      loc.rank_index = ri;
      loc.name = fmt::format("thread {}", thread);
      for (const auto& t : rank.threads)
        if (t.id == thread) loc.name = t.name.empty() ? fmt::format("thread {}", t.tid) : fmt::format("{} ({})", t.name, t.tid);
      if (mpi_thread && *mpi_thread == thread) mpi_location_[rank.world_rank] = loc.id;
      write_location(rank, ri, loc, intervals);
      locations_.push_back(std::move(loc));
    }
    if (!mpi_location_.count(rank.world_rank) && !by_thread.empty())
      mpi_location_[rank.world_rank] = static_cast<std::uint64_t>(rank.world_rank) << 32;
    ++counts_.ranks;
  }

  void write_location(const run::RankTrace& rank, int ri, Location& loc, std::vector<Interval>& intervals) {
    // Enclosing first: by start, the longer first, an NVTX range around a call with the same span.
    std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
      return std::tuple(a.start, -a.end, a.part != Part::Nvtx, a.call) < std::tuple(b.start, -b.end, b.part != Part::Nvtx, b.call);
    });
    OTF2_EvtWriter* w = OTF2_Archive_GetEvtWriter(archive_, loc.id);
    if (!w) fail(OTF2_ERROR_INVALID);
    struct Open {
      std::int64_t end;
      std::uint32_t region;
      Part part;
      std::int32_t call;
    };
    std::vector<Open> stack;
    auto close = [&] {
      const Open& o = stack.back();
      end_records(w, rank, ri, o.part, o.call, o.end, loc);
      check(OTF2_EvtWriter_Leave(w, nullptr, stamp(ri, o.end), o.region));
      ++loc.events;
      stack.pop_back();
    };
    for (auto i : intervals) {
      while (!stack.empty() && stack.back().end <= i.start) close();
      if (!stack.empty() && i.end > stack.back().end) {
        i.end = stack.back().end;
        ++counts_.cut_regions;
      }
      check(OTF2_EvtWriter_Enter(w, nullptr, stamp(ri, i.start), i.region));
      ++loc.events;
      start_records(w, rank, ri, i.part, i.call, i.start, loc);
      stack.push_back({i.end, i.region, i.part, i.call});
    }
    while (!stack.empty()) close();
    counts_.events += static_cast<std::int64_t>(loc.events);
    check(OTF2_Archive_CloseEvtWriter(archive_, w));
  }

  // Request ids, unique on the rank: each side of a point-to-point call, then each non-blocking collective.
  static std::uint64_t send_request(std::int32_t call) { return 2 * static_cast<std::uint64_t>(call) + 1; }
  static std::uint64_t recv_request(std::int32_t call) { return 2 * static_cast<std::uint64_t>(call) + 2; }
  static std::uint64_t collective_request(std::int32_t call) { return (std::uint64_t{1} << 40) + static_cast<std::uint64_t>(call); }

  // The message a call sends and the one it receives, as OTF2 names them (communicator ranks); nullopt for
  // MPI_PROC_NULL, a source the tracer could not read, a probe, or a peer outside the communicator.
  struct Message {
    std::uint32_t peer, tag;
    std::uint64_t bytes;
  };
  std::optional<Message> sent(const run::PointToPointCall& c) const {
    if (!c.sends() || c.send_peer < 0) return std::nullopt;
    auto peer = comm_rank(c.comm, c.send_peer);
    if (!peer) return std::nullopt;
    return Message{*peer, static_cast<std::uint32_t>(c.send_tag), static_cast<std::uint64_t>(c.send_bytes)};
  }
  std::optional<Message> received(const run::PointToPointCall& c) const {
    if (!c.receives() || c.recv_peer < 0 || !run::is_message_receive(c.op)) return std::nullopt;
    auto peer = comm_rank(c.comm, c.recv_peer);
    if (!peer) return std::nullopt;
    return Message{*peer, static_cast<std::uint32_t>(c.recv_tag), static_cast<std::uint64_t>(c.recv_bytes)};
  }

  void start_records(OTF2_EvtWriter* w, const run::RankTrace& rank, int ri, Part part, std::int32_t call, std::int64_t at, Location& loc) {
    const OTF2_TimeStamp t = stamp(ri, at);
    if (part == Part::P2pCall || part == Part::P2pPost) {
      const auto& c = rank.point_to_point[static_cast<std::size_t>(call)];
      if (auto m = sent(c)) {
        if (part == Part::P2pCall) {
          check(OTF2_EvtWriter_MpiSend(w, nullptr, t, m->peer, c.comm, m->tag, m->bytes));
          ++counts_.sends;
        } else {
          check(OTF2_EvtWriter_MpiIsend(w, nullptr, t, m->peer, c.comm, m->tag, m->bytes, send_request(call)));
          ++counts_.isends;
        }
        ++loc.events;
      }
      if (part == Part::P2pPost && received(c)) {
        check(OTF2_EvtWriter_MpiIrecvRequest(w, nullptr, t, recv_request(call)));
        ++loc.events;
      }
    } else if (part == Part::CollCall || part == Part::CollPost) {
      const auto& c = rank.collectives[static_cast<std::size_t>(call)];
      if (!mpi_comm(c.comm) || !collective_op(c.op)) return;
      if (part == Part::CollCall) check(OTF2_EvtWriter_MpiCollectiveBegin(w, nullptr, t));
      else check(OTF2_EvtWriter_NonBlockingCollectiveRequest(w, nullptr, t, collective_request(call)));
      ++loc.events;
    }
  }

  void end_records(OTF2_EvtWriter* w, const run::RankTrace& rank, int ri, Part part, std::int32_t call, std::int64_t at, Location& loc) {
    const OTF2_TimeStamp t = stamp(ri, at);
    if (part == Part::P2pCall) {
      const auto& c = rank.point_to_point[static_cast<std::size_t>(call)];
      if (auto m = received(c)) {
        check(OTF2_EvtWriter_MpiRecv(w, nullptr, t, m->peer, c.comm, m->tag, m->bytes));
        ++counts_.receives;
        ++loc.events;
      }
    } else if (part == Part::CollCall) {
      collective_end(w, rank.collectives[static_cast<std::size_t>(call)], std::nullopt, t, loc);
    } else if (part == Part::Completion) {
      for (const auto& request : completions_[static_cast<std::size_t>(call)].requests) {
        if (request.collective) {
          collective_end(w, rank.collectives[static_cast<std::size_t>(request.call)], collective_request(request.call), t, loc);
          continue;
        }
        const auto& c = rank.point_to_point[static_cast<std::size_t>(request.call)];
        if (sent(c)) {
          check(OTF2_EvtWriter_MpiIsendComplete(w, nullptr, t, send_request(request.call)));
          ++loc.events;
        }
        if (auto m = received(c)) {
          check(OTF2_EvtWriter_MpiIrecv(w, nullptr, t, m->peer, c.comm, m->tag, m->bytes, recv_request(request.call)));
          ++counts_.irecvs;
          ++loc.events;
        }
      }
    }
  }

  // MpiCollectiveEnd of a blocking MPI collective, NonBlockingCollectiveComplete of a non-blocking one's request.
  void collective_end(OTF2_EvtWriter* w, const run::CollectiveCall& c, std::optional<std::uint64_t> request, OTF2_TimeStamp t, Location& loc) {
    const auto op = collective_op(c.op);
    if (!mpi_comm(c.comm) || !op) return;
    // The root is the call's argument, a rank of the communicator. Sent and received: the call's bytes
    // (docs/trace-format.md sizes each collective as nccl-tests does), on both sides.
    const std::uint32_t root = c.root >= 0 ? static_cast<std::uint32_t>(c.root) : OTF2_UNDEFINED_UINT32;
    const auto bytes = static_cast<std::uint64_t>(c.bytes);
    if (request) {
      check(OTF2_EvtWriter_NonBlockingCollectiveComplete(w, nullptr, t, *op, c.comm, root, bytes, bytes, *request));
      ++counts_.nonblocking_collectives;
    } else {
      check(OTF2_EvtWriter_MpiCollectiveEnd(w, nullptr, t, *op, c.comm, root, bytes, bytes));
      ++counts_.collectives;
    }
    ++loc.events;
  }

  void write_definitions() {
    OTF2_GlobalDefWriter* g = OTF2_Archive_GetGlobalDefWriter(archive_);
    if (!g) fail(OTF2_ERROR_INVALID);
    // Hosts, ranks and threads first, so that their names are in the string table before it is written.
    std::map<std::string, OTF2_SystemTreeNodeRef> hosts;
    struct Node { OTF2_StringRef name, cls; OTF2_SystemTreeNodeRef parent; };
    std::vector<Node> nodes = {{string("collscope run"), string("machine"), OTF2_UNDEFINED_SYSTEM_TREE_NODE}};
    std::vector<std::tuple<OTF2_LocationGroupRef, OTF2_StringRef, OTF2_SystemTreeNodeRef>> groups;
    for (const auto& rank : run_.ranks) {
      auto [it, added] = hosts.try_emplace(rank.host.empty() ? "unknown host" : rank.host, static_cast<OTF2_SystemTreeNodeRef>(nodes.size()));
      if (added) nodes.push_back({string(it->first), string("node"), 0});
      groups.emplace_back(static_cast<OTF2_LocationGroupRef>(rank.world_rank), string(fmt::format("rank {}", rank.world_rank)), it->second);
    }
    std::vector<OTF2_StringRef> location_names;
    for (const auto& loc : locations_) location_names.push_back(string(loc.name));
    const OTF2_StringRef world_locations = string("MPI_COMM_WORLD locations");
    std::vector<OTF2_StringRef> comm_names;
    for (const auto& c : run_.communicators) comm_names.push_back(string(c.name));
    std::vector<std::tuple<OTF2_StringRef, OTF2_StringRef>> region_names;
    for (const auto& r : region_defs_) region_names.emplace_back(string(r.name), string(r.description));

    check(OTF2_GlobalDefWriter_WriteClockProperties(g, 1'000'000'000, 0, trace_length(),
                                                    static_cast<std::uint64_t>(std::max<std::int64_t>(0, clocks_.realtime_origin_ns - (clocks_.origin_ns - base_ns_)))));
    for (std::size_t i = 0; i < string_order_.size(); ++i)
      check(OTF2_GlobalDefWriter_WriteString(g, static_cast<OTF2_StringRef>(i), string_order_[i].c_str()));
    for (std::size_t i = 0; i < nodes.size(); ++i)
      check(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, static_cast<OTF2_SystemTreeNodeRef>(i), nodes[i].name, nodes[i].cls, nodes[i].parent));
    for (const auto& [id, name, node] : groups)
      check(OTF2_GlobalDefWriter_WriteLocationGroup(g, id, name, OTF2_LOCATION_GROUP_TYPE_PROCESS, node, OTF2_UNDEFINED_LOCATION_GROUP));
    for (std::size_t i = 0; i < locations_.size(); ++i) {
      const auto& loc = locations_[i];
      check(OTF2_GlobalDefWriter_WriteLocation(g, loc.id, location_names[i], OTF2_LOCATION_TYPE_CPU_THREAD, loc.events,
                                               static_cast<OTF2_LocationGroupRef>(run_.ranks[static_cast<std::size_t>(loc.rank_index)].world_rank)));
    }
    for (std::size_t i = 0; i < region_defs_.size(); ++i) {
      const auto& r = region_defs_[i];
      const auto [name, description] = region_names[i];
      check(OTF2_GlobalDefWriter_WriteRegion(g, static_cast<OTF2_RegionRef>(i), name, name, description, r.role, r.paradigm,
                                             OTF2_REGION_FLAG_NONE, OTF2_UNDEFINED_STRING, 0, 0));
    }
    // MPI: group 0 lists each world rank's location (rank i at place i); a communicator's group lists its members
    // as world ranks, in its rank order, and its id is its place in the run's communicators.
    int world_size = run_.world_size;
    for (const auto& rank : run_.ranks) world_size = std::max(world_size, rank.world_rank + 1);
    std::vector<std::uint64_t> world(static_cast<std::size_t>(world_size));
    for (int r = 0; r < world_size; ++r) {
      auto it = mpi_location_.find(r);
      world[static_cast<std::size_t>(r)] = it != mpi_location_.end() ? it->second : static_cast<std::uint64_t>(r) << 32;
    }
    check(OTF2_GlobalDefWriter_WriteGroup(g, 0, world_locations, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                          OTF2_GROUP_FLAG_NONE, static_cast<std::uint32_t>(world.size()), world.data()));
    std::map<std::uint64_t, std::size_t> by_key;
    for (std::size_t c = 0; c < run_.communicators.size(); ++c) by_key[run_.communicators[c].key] = c;
    for (std::size_t c = 0; c < run_.communicators.size(); ++c) {
      const auto& comm = run_.communicators[c];
      if (comm.backend != store::Backend::Mpi) continue;
      std::vector<std::uint64_t> members(comm.members.begin(), comm.members.end());
      const auto group = static_cast<OTF2_GroupRef>(c + 1);
      check(OTF2_GlobalDefWriter_WriteGroup(g, group, comm_names[c], OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                            OTF2_GROUP_FLAG_NONE, static_cast<std::uint32_t>(members.size()), members.data()));
      OTF2_CommRef parent = OTF2_UNDEFINED_COMM;
      if (comm.parent) {
        auto it = by_key.find(*comm.parent);
        if (it != by_key.end() && run_.communicators[it->second].backend == store::Backend::Mpi) parent = static_cast<OTF2_CommRef>(it->second);
      }
      check(OTF2_GlobalDefWriter_WriteComm(g, static_cast<OTF2_CommRef>(c), comm_names[c], group, parent, OTF2_COMM_FLAG_NONE));
    }
    counts_.regions = static_cast<std::int64_t>(region_defs_.size());
    counts_.locations = static_cast<std::int64_t>(locations_.size());
  }

  std::uint64_t trace_length() const {
    std::int64_t last = base_ns_;
    for (std::size_t r = 0; r < run_.ranks.size(); ++r) {
      const int ri = static_cast<int>(r);
      for (const auto& c : run_.ranks[r].point_to_point) last = std::max(last, clocks_.aligned(ri, c.end_ns));
      for (const auto& c : run_.ranks[r].collectives) last = std::max(last, clocks_.aligned(ri, c.end_ns));
      for (const auto& n : run_.ranks[r].nvtx_ranges) last = std::max(last, clocks_.aligned(ri, n.end_ns));
    }
    return static_cast<std::uint64_t>(last - base_ns_ + 1);
  }

  struct RegionDef {
    std::string name;
    OTF2_RegionRole role;
    OTF2_Paradigm paradigm;
    std::string description;
  };

  const run::Run& run_;
  const run::ClockAlignment& clocks_;
  std::string out_dir_;
  Otf2ExportCounts& counts_;
  OTF2_Archive* archive_ = nullptr;
  std::int64_t base_ns_ = 0;
  std::unordered_map<std::string, OTF2_StringRef> strings_;
  std::vector<std::string> string_order_;
  std::unordered_map<std::string, std::uint32_t> regions_;
  std::vector<RegionDef> region_defs_;
  std::vector<Location> locations_;
  std::vector<detail::Completion> completions_;  // of the rank being written
  std::map<int, std::uint64_t> mpi_location_;  // world rank -> its MPI location
};

}  // namespace

bool otf2_available() { return true; }

Otf2ExportCounts export_otf2(const std::string& run_dir, const std::string& out_dir) {
  std::error_code ec;
  if (fs::exists(out_dir, ec) && !(fs::is_directory(out_dir, ec) && fs::is_empty(out_dir, ec)))
    throw InputError(fmt::format("{}: exists and is not an empty directory; the OTF2 archive needs a new one", out_dir));
  const run::Run run = detail::load_run_for_export(run_dir, {});
  const run::ClockAlignment clocks = run::ClockAligner().align(run);
  Otf2ExportCounts counts;
  counts.problems = run.problems;
  // Written beside the target and renamed: a failed export leaves nothing under the name asked for.
  const std::string partial = out_dir + ".partial";
  fs::remove_all(partial, ec);
  try {
    Otf2Writer(run, clocks, out_dir, counts).write(partial);
    fs::remove(out_dir, ec);  // the empty directory, if one was given
    fs::rename(partial, out_dir);
  } catch (...) {
    fs::remove_all(partial, ec);
    throw;
  }
  return counts;
}

}  // namespace collscope::formats
