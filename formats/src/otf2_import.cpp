// OTF2 import through Debian's OTF2 library. The global definitions are read whole (they are small: strings,
// regions, the system tree, locations, groups, communicators); then each rank's locations are read one at a time,
// their events turned into rows as they come, and the rank's file written before the next rank is read. So memory
// holds one rank's rows, not the archive. The mapping is in docs/formats.md.
#include <collscope/formats/otf2.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/trace_reader.hpp>
#include <collscope/store/trace_writer.hpp>

#include <fmt/format.h>
#include <otf2/otf2.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "import_run_dir.hpp"
#include "otf2_errors.hpp"

namespace collscope::formats {
namespace {

namespace fs = std::filesystem;

// ---- Global definitions ----------------------------------------------------------------------------------------

struct Definitions {
  // Clock: ticks per second, the tick of time 0, and that tick's wall-clock time (ns since 1970) when known.
  std::uint64_t resolution = 1'000'000'000, offset = 0;
  std::optional<std::uint64_t> realtime_ns;
  std::unordered_map<OTF2_StringRef, std::string> strings;
  struct Region {
    OTF2_StringRef name;
    OTF2_RegionRole role;
    OTF2_Paradigm paradigm;
  };
  std::unordered_map<OTF2_RegionRef, Region> regions;
  struct Node {
    OTF2_StringRef name, cls;
    OTF2_SystemTreeNodeRef parent;
  };
  std::map<OTF2_SystemTreeNodeRef, Node> nodes;
  struct LocationGroup {
    OTF2_StringRef name;
    OTF2_LocationGroupType type;
    OTF2_SystemTreeNodeRef node;
  };
  std::map<OTF2_LocationGroupRef, LocationGroup> location_groups;
  struct Location {
    OTF2_StringRef name;
    OTF2_LocationType type;
    OTF2_LocationGroupRef group;
  };
  std::map<OTF2_LocationRef, Location> locations;
  struct Group {
    OTF2_GroupType type;
    OTF2_Paradigm paradigm;
    std::vector<std::uint64_t> members;
  };
  std::map<OTF2_GroupRef, Group> groups;
  struct Comm {
    OTF2_StringRef name;
    OTF2_GroupRef group;
  };
  std::map<OTF2_CommRef, Comm> comms;

  const std::string& text(OTF2_StringRef ref) const {
    static const std::string none;
    auto it = strings.find(ref);
    return it == strings.end() ? none : it->second;
  }
};

OTF2_CallbackCode on_clock(void* d, uint64_t resolution, uint64_t offset, uint64_t, uint64_t realtime) {
  auto& defs = *static_cast<Definitions*>(d);
  defs.resolution = resolution ? resolution : 1;
  defs.offset = offset;
  if (realtime != OTF2_UNDEFINED_TIMESTAMP) defs.realtime_ns = realtime;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_string(void* d, OTF2_StringRef self, const char* text) {
  static_cast<Definitions*>(d)->strings[self] = text ? text : "";
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_region(void* d, OTF2_RegionRef self, OTF2_StringRef name, OTF2_StringRef, OTF2_StringRef,
                            OTF2_RegionRole role, OTF2_Paradigm paradigm, OTF2_RegionFlag, OTF2_StringRef, uint32_t,
                            uint32_t) {
  static_cast<Definitions*>(d)->regions[self] = {name, role, paradigm};
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_node(void* d, OTF2_SystemTreeNodeRef self, OTF2_StringRef name, OTF2_StringRef cls,
                          OTF2_SystemTreeNodeRef parent) {
  static_cast<Definitions*>(d)->nodes[self] = {name, cls, parent};
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_location_group(void* d, OTF2_LocationGroupRef self, OTF2_StringRef name,
                                    OTF2_LocationGroupType type, OTF2_SystemTreeNodeRef node, OTF2_LocationGroupRef) {
  static_cast<Definitions*>(d)->location_groups[self] = {name, type, node};
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_location(void* d, OTF2_LocationRef self, OTF2_StringRef name, OTF2_LocationType type, uint64_t,
                              OTF2_LocationGroupRef group) {
  static_cast<Definitions*>(d)->locations[self] = {name, type, group};
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_group(void* d, OTF2_GroupRef self, OTF2_StringRef, OTF2_GroupType type, OTF2_Paradigm paradigm,
                           OTF2_GroupFlag, uint32_t n, const uint64_t* members) {
  static_cast<Definitions*>(d)->groups[self] = {type, paradigm, std::vector<std::uint64_t>(members, members + n)};
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_comm(void* d, OTF2_CommRef self, OTF2_StringRef name, OTF2_GroupRef group, OTF2_CommRef,
                          OTF2_CommFlag) {
  static_cast<Definitions*>(d)->comms[self] = {name, group};
  return OTF2_CALLBACK_SUCCESS;
}

// ---- What the definitions say about the job --------------------------------------------------------------------

// A communicator as collscope sees it: its members as world ranks, in communicator rank order.
struct Communicator {
  std::string name;
  std::vector<std::int32_t> members;
  bool self = false;  // MPI_COMM_SELF's kind: each rank alone, a different communicator on each
};

struct Job {
  int world_size = 0;
  std::map<OTF2_LocationGroupRef, int> rank_of_group;  // MPI processes only
  std::map<int, std::vector<OTF2_LocationRef>> locations_of_rank;
  std::map<OTF2_CommRef, Communicator> comms;
  std::int64_t other_locations = 0;  // locations of no MPI rank, or no CPU thread (GPU streams, metrics): left out
};

// MPI world ranks: Score-P (and collscope's export) lists each rank's location in an MPI group of type
// COMM_LOCATIONS, rank r at place r; a COMM_GROUP's members are places in that list. Without one, the PROCESS
// location groups in the order of their ids are the ranks.
Job job_of(const Definitions& defs, const std::string& anchor) {
  Job job;
  const Definitions::Group* world = nullptr;
  for (const auto& [ref, g] : defs.groups)
    if (g.type == OTF2_GROUP_TYPE_COMM_LOCATIONS && g.paradigm == OTF2_PARADIGM_MPI) {
      world = &g;
      break;
    }
  if (world) {
    job.world_size = static_cast<int>(world->members.size());
    for (std::size_t r = 0; r < world->members.size(); ++r) {
      auto loc = defs.locations.find(world->members[r]);
      if (loc != defs.locations.end()) job.rank_of_group.emplace(loc->second.group, static_cast<int>(r));
    }
  } else {
    for (const auto& [ref, g] : defs.location_groups)
      if (g.type == OTF2_LOCATION_GROUP_TYPE_PROCESS) job.rank_of_group.emplace(ref, job.world_size++);
  }
  if (job.world_size == 0 || job.rank_of_group.empty())
    throw InputError(
        fmt::format("{}: no MPI rank in this OTF2 archive (no MPI locations group and no process)", anchor));
  if (job.world_size > store::kMaxWorldSize)
    throw InputError(
        fmt::format("{}: {} ranks; collscope reads at most {}", anchor, job.world_size, store::kMaxWorldSize));
  for (const auto& [ref, loc] : defs.locations) {
    auto rank = job.rank_of_group.find(loc.group);
    if (rank == job.rank_of_group.end() || loc.type != OTF2_LOCATION_TYPE_CPU_THREAD) {
      ++job.other_locations;
      continue;
    }
    job.locations_of_rank[rank->second].push_back(ref);
  }
  for (const auto& [ref, c] : defs.comms) {
    Communicator comm;
    comm.name = defs.text(c.name);
    auto g = defs.groups.find(c.group);
    if (g != defs.groups.end() && g->second.type == OTF2_GROUP_TYPE_COMM_SELF) {
      comm.self = true;
    } else if (g != defs.groups.end()) {
      for (std::uint64_t m : g->second.members) {
        if (m >= static_cast<std::uint64_t>(job.world_size))
          throw InputError(
              fmt::format("{}: communicator {} lists rank {} of a job of {}", anchor, comm.name, m, job.world_size));
        comm.members.push_back(static_cast<std::int32_t>(m));
      }
    }
    job.comms.emplace(ref, std::move(comm));
  }
  return job;
}

// The host a rank ran on: the nearest system tree node of class "node" above its location group (Score-P's
// class for a machine's node; collscope's export writes the same), else the nearest node's name.
std::string host_of(const Definitions& defs, OTF2_LocationGroupRef group) {
  auto g = defs.location_groups.find(group);
  if (g == defs.location_groups.end()) return "OTF2 clock";
  std::string nearest;
  OTF2_SystemTreeNodeRef at = g->second.node;
  for (int hops = 0; hops < 64 && at != OTF2_UNDEFINED_SYSTEM_TREE_NODE; ++hops) {
    auto n = defs.nodes.find(at);
    if (n == defs.nodes.end()) break;
    if (nearest.empty()) nearest = defs.text(n->second.name);
    if (defs.text(n->second.cls) == "node") return defs.text(n->second.name);
    at = n->second.parent;
  }
  return nearest.empty() ? "OTF2 clock" : nearest;
}

// ---- Events of one rank --------------------------------------------------------------------------------------

// "MPI_Sendrecv_replace" -> sendrecv_replace; nullopt for names that are no collscope op.
std::optional<store::Op> op_of_region(const std::string& name) {
  if (name.size() < 5 || !name.starts_with("MPI_")) return std::nullopt;
  std::string lower;
  for (char c : name.substr(4)) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return store::op_from_name(lower);
}

bool is_point_to_point_op(store::Op op) {
  using O = store::Op;
  return op == O::Send || op == O::Recv || (op >= O::Isend && op <= O::Imrecv);
}

// OTF2's collective operation as collscope's op, for regions not named after the MPI call.
store::Op op_of_collective(OTF2_CollectiveOp op) {
  using O = store::Op;
  switch (op) {
    case OTF2_COLLECTIVE_OP_BARRIER:
      return O::Barrier;
    case OTF2_COLLECTIVE_OP_BCAST:
      return O::Bcast;
    case OTF2_COLLECTIVE_OP_GATHER:
      return O::Gather;
    case OTF2_COLLECTIVE_OP_GATHERV:
      return O::Gatherv;
    case OTF2_COLLECTIVE_OP_SCATTER:
      return O::Scatter;
    case OTF2_COLLECTIVE_OP_SCATTERV:
      return O::Scatterv;
    case OTF2_COLLECTIVE_OP_ALLGATHER:
      return O::Allgather;
    case OTF2_COLLECTIVE_OP_ALLGATHERV:
      return O::Allgatherv;
    case OTF2_COLLECTIVE_OP_ALLTOALL:
      return O::Alltoall;
    case OTF2_COLLECTIVE_OP_ALLTOALLV:
      return O::Alltoallv;
    case OTF2_COLLECTIVE_OP_ALLTOALLW:
      return O::Alltoallw;
    case OTF2_COLLECTIVE_OP_ALLREDUCE:
      return O::Allreduce;
    case OTF2_COLLECTIVE_OP_REDUCE:
      return O::Reduce;
    case OTF2_COLLECTIVE_OP_REDUCE_SCATTER:
      return O::ReduceScatter;
    case OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK:
      return O::ReduceScatterBlock;
    case OTF2_COLLECTIVE_OP_SCAN:
      return O::Scan;
    case OTF2_COLLECTIVE_OP_EXSCAN:
      return O::Exscan;
    default:
      return O::Unknown;
  }
}

// collscope's `bytes` of a collective (docs/trace-format.md: nccl-tests' sizes) from the sent and received sizes of
// an OTF2 record. collscope's export writes its `bytes` on both sides. Score-P counts what each rank would move if
// it exchanged its buffer with every other (an allreduce of B bytes on N ranks: N×B sent and N×B received; a
// broadcast's root N×B sent, the others B received): the operations collscope sizes by one buffer are divided
// back, the others keep the larger side (the whole buffer).
std::int64_t collective_bytes(bool collscope_archive, store::Op op, int my_rank, std::uint32_t root, int size,
                              std::uint64_t sent, std::uint64_t received) {
  if (collscope_archive) return static_cast<std::int64_t>(sent);
  const std::uint64_t n = static_cast<std::uint64_t>(std::max(size, 1));
  const bool at_root = root != OTF2_UNDEFINED_UINT32 && static_cast<int>(root) == my_rank;
  using O = store::Op;
  switch (store::blocking_form(op)) {
    case O::Barrier:
      return 0;
    case O::Allreduce:
      return static_cast<std::int64_t>(received / n);
    case O::Bcast:
      return static_cast<std::int64_t>(at_root ? sent / n : received);
    case O::Reduce:
      return static_cast<std::int64_t>(at_root ? received / n : sent);
    case O::Scan:
      return static_cast<std::int64_t>(received / static_cast<std::uint64_t>(my_rank + 1));
    default:
      return static_cast<std::int64_t>(std::max(sent, received));
  }
}

struct RankRows {
  std::vector<store::PointToPointRow> p2p;
  std::vector<store::CollectiveRow> collectives;
  std::vector<store::NvtxRangeRow> ranges;          // name: a number of range_names until the rank is written
  std::map<std::string, std::int64_t> range_names;  // numbered from 1
  std::vector<std::pair<OTF2_CommRef, std::int32_t>> comms_used;  // (communicator, this rank's place in it)
  std::set<OTF2_CommRef> comm_seen;
  std::int64_t first_ns = std::numeric_limits<std::int64_t>::max(), last_ns = std::numeric_limits<std::int64_t>::min();
};

// One location's events, turned into the rank's rows. OTF2 callbacks must not throw: the first problem is kept in
// `error` and reading stops (OTF2_CALLBACK_INTERRUPT).
class LocationReader {
 public:
  LocationReader(const Definitions& defs, const Job& job, Otf2ImportCounts& counts, RankRows& rows, int rank,
                 std::int64_t thread, bool collscope_archive, std::string location_name)
      : defs_(defs),
        job_(job),
        counts_(counts),
        rows_(rows),
        rank_(rank),
        thread_(thread),
        collscope_archive_(collscope_archive),
        location_name_(std::move(location_name)) {}

  std::string error;

  static void register_callbacks(OTF2_EvtReaderCallbacks* cb) {
    OTF2_EvtReaderCallbacks_SetEnterCallback(
        cb, [](OTF2_LocationRef, OTF2_TimeStamp t, uint64_t, void* self, OTF2_AttributeList*, OTF2_RegionRef region) {
          return static_cast<LocationReader*>(self)->enter(t, region);
        });
    OTF2_EvtReaderCallbacks_SetLeaveCallback(
        cb, [](OTF2_LocationRef, OTF2_TimeStamp t, uint64_t, void* self, OTF2_AttributeList*, OTF2_RegionRef region) {
          return static_cast<LocationReader*>(self)->leave(t, region);
        });
    OTF2_EvtReaderCallbacks_SetMpiSendCallback(
        cb, [](OTF2_LocationRef, OTF2_TimeStamp t, uint64_t, void* self, OTF2_AttributeList*, uint32_t peer,
               OTF2_CommRef comm, uint32_t tag, uint64_t bytes) {
          return static_cast<LocationReader*>(self)->message(t, true, false, peer, comm, tag, bytes, 0);
        });
    OTF2_EvtReaderCallbacks_SetMpiRecvCallback(
        cb, [](OTF2_LocationRef, OTF2_TimeStamp t, uint64_t, void* self, OTF2_AttributeList*, uint32_t peer,
               OTF2_CommRef comm, uint32_t tag, uint64_t bytes) {
          return static_cast<LocationReader*>(self)->message(t, false, false, peer, comm, tag, bytes, 0);
        });
    OTF2_EvtReaderCallbacks_SetMpiIsendCallback(
        cb, [](OTF2_LocationRef, OTF2_TimeStamp t, uint64_t, void* self, OTF2_AttributeList*, uint32_t peer,
               OTF2_CommRef comm, uint32_t tag, uint64_t bytes, uint64_t request) {
          return static_cast<LocationReader*>(self)->message(t, true, true, peer, comm, tag, bytes, request);
        });
    OTF2_EvtReaderCallbacks_SetMpiIrecvCallback(
        cb, [](OTF2_LocationRef, OTF2_TimeStamp t, uint64_t, void* self, OTF2_AttributeList*, uint32_t peer,
               OTF2_CommRef comm, uint32_t tag, uint64_t bytes, uint64_t request) {
          return static_cast<LocationReader*>(self)->message(t, false, true, peer, comm, tag, bytes, request);
        });
    OTF2_EvtReaderCallbacks_SetMpiIsendCompleteCallback(
        cb, [](OTF2_LocationRef, OTF2_TimeStamp t, uint64_t, void* self, OTF2_AttributeList*, uint64_t request) {
          return static_cast<LocationReader*>(self)->complete(t, request);
        });
    OTF2_EvtReaderCallbacks_SetMpiIrecvRequestCallback(
        cb, [](OTF2_LocationRef, OTF2_TimeStamp t, uint64_t, void* self, OTF2_AttributeList*, uint64_t request) {
          return static_cast<LocationReader*>(self)->post_receive(t, request);
        });
    OTF2_EvtReaderCallbacks_SetMpiRequestTestCallback(
        cb, [](OTF2_LocationRef, OTF2_TimeStamp, uint64_t, void* self, OTF2_AttributeList*, uint64_t request) {
          return static_cast<LocationReader*>(self)->test(request);
        });
    OTF2_EvtReaderCallbacks_SetMpiRequestCancelledCallback(
        cb, [](OTF2_LocationRef, OTF2_TimeStamp, uint64_t, void* self, OTF2_AttributeList*, uint64_t request) {
          static_cast<LocationReader*>(self)->pending_.erase(request);
          return OTF2_CALLBACK_SUCCESS;
        });
    OTF2_EvtReaderCallbacks_SetMpiCollectiveBeginCallback(
        cb, [](OTF2_LocationRef, OTF2_TimeStamp, uint64_t, void*, OTF2_AttributeList*) {
          return OTF2_CALLBACK_SUCCESS;  // the call's region gives its start
        });
    OTF2_EvtReaderCallbacks_SetMpiCollectiveEndCallback(
        cb, [](OTF2_LocationRef, OTF2_TimeStamp t, uint64_t, void* self, OTF2_AttributeList*, OTF2_CollectiveOp op,
               OTF2_CommRef comm, uint32_t root, uint64_t sent, uint64_t received) {
          return static_cast<LocationReader*>(self)->collective(t, op, comm, root, sent, received, std::nullopt);
        });
    OTF2_EvtReaderCallbacks_SetNonBlockingCollectiveRequestCallback(
        cb, [](OTF2_LocationRef, OTF2_TimeStamp t, uint64_t, void* self, OTF2_AttributeList*, uint64_t request) {
          return static_cast<LocationReader*>(self)->post_collective(t, request);
        });
    OTF2_EvtReaderCallbacks_SetNonBlockingCollectiveCompleteCallback(
        cb, [](OTF2_LocationRef, OTF2_TimeStamp t, uint64_t, void* self, OTF2_AttributeList*, OTF2_CollectiveOp op,
               OTF2_CommRef comm, uint32_t root, uint64_t sent, uint64_t received, uint64_t request) {
          return static_cast<LocationReader*>(self)->collective(t, op, comm, root, sent, received, request);
        });
  }

  // After the last event: regions left open end at the location's last event; requests never completed are left
  // out (they moved nothing the trace shows).
  void finish() {
    while (!stack_.empty()) close_frame(last_ns_);
    if (pending_.empty()) return;
    counts_.problems.push_back(
        fmt::format("{}: {} request(s) never completed; left out", location_name_, pending_.size()));
    for (const auto& [request, p] : pending_)
      (p.collective ? rows_.collectives[static_cast<std::size_t>(p.row)].comm
                    : rows_.p2p[static_cast<std::size_t>(p.row)].comm) = 0;
  }

 private:
  // An open region and what happened inside it.
  struct Frame {
    OTF2_RegionRef region = 0;
    std::int64_t enter_ns = 0;
    std::int64_t p2p = -1;                                     // its blocking point-to-point call (rows_.p2p)
    std::int64_t collective = -1;                              // its blocking collective (rows_.collectives)
    bool mpi_record = false;                                   // it carried an MPI record (so it is no plain region)
    std::vector<std::int64_t> posted_p2p, posted_collectives;  // non-blocking calls it posted
    std::vector<std::int64_t> done_p2p, done_collectives;      // requests it completed
    std::vector<std::int64_t> tested_p2p, tested_collectives;  // requests it tested without completing
  };
  struct Pending {
    bool collective = false;
    std::int64_t row = 0;
  };

  std::int64_t ns(OTF2_TimeStamp t) {
    // (t - offset) × 10^9 / resolution, in 128 bits: a 3 GHz cycle counter overflows 64 bits within a few seconds.
    const __int128 ticks = static_cast<__int128>(t) - static_cast<__int128>(defs_.offset);
    const auto v = static_cast<std::int64_t>(ticks * 1'000'000'000 / static_cast<__int128>(defs_.resolution));
    rows_.first_ns = std::min(rows_.first_ns, v);
    rows_.last_ns = std::max(rows_.last_ns, v);
    last_ns_ = v;
    return v;
  }

  OTF2_CallbackCode fail(std::string what) {
    if (error.empty()) error = fmt::format("{}: {}", location_name_, what);
    return OTF2_CALLBACK_INTERRUPT;
  }

  const std::string& region_name(OTF2_RegionRef region) const {
    static const std::string none;
    auto it = defs_.regions.find(region);
    return it == defs_.regions.end() ? none : defs_.text(it->second.name);
  }

  OTF2_CallbackCode enter(OTF2_TimeStamp t, OTF2_RegionRef region) {
    Frame f;
    f.region = region;
    f.enter_ns = ns(t);
    stack_.push_back(std::move(f));
    return OTF2_CALLBACK_SUCCESS;
  }

  OTF2_CallbackCode leave(OTF2_TimeStamp t, OTF2_RegionRef region) {
    const std::int64_t at = ns(t);
    if (stack_.empty()) return fail(fmt::format("leaves region {} it never entered", region_name(region)));
    if (stack_.back().region != region)
      return fail(fmt::format("leaves region {} inside region {}: its regions do not nest", region_name(region),
                              region_name(stack_.back().region)));
    close_frame(at);
    return OTF2_CALLBACK_SUCCESS;
  }

  void close_frame(std::int64_t at) {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    const std::string& name = region_name(f.region);
    const auto named_op = op_of_region(name);
    if (f.p2p >= 0) {
      auto& row = rows_.p2p[static_cast<std::size_t>(f.p2p)];
      row.start_ns = f.enter_ns;
      row.end_ns = at;
      const bool sends = row.send_peer.has_value(), receives = row.recv_peer.has_value();
      row.op = named_op && is_point_to_point_op(*named_op) ? *named_op
               : sends && receives                         ? store::Op::Sendrecv
               : sends                                     ? store::Op::Send
                                                           : store::Op::Recv;
    }
    if (f.collective >= 0) {
      auto& row = rows_.collectives[static_cast<std::size_t>(f.collective)];
      row.start_ns = f.enter_ns;
      row.end_ns = at;
      if (named_op && !is_point_to_point_op(*named_op)) row.op = *named_op;
    }
    for (std::int64_t i : f.posted_p2p) {
      auto& row = rows_.p2p[static_cast<std::size_t>(i)];
      row.start_ns = f.enter_ns;
      row.post_end_ns = at;
      // A persistent request's start is its MPI_Start: the op says which kind of request it was.
      if (name == "MPI_Start" || name == "MPI_Startall")
        row.op = row.send_peer ? store::Op::SendInit : store::Op::RecvInit;
      else if (named_op && is_point_to_point_op(*named_op)) row.op = *named_op;
      else row.op = row.send_peer ? store::Op::Isend : store::Op::Irecv;
    }
    for (std::int64_t i : f.posted_collectives) {
      auto& row = rows_.collectives[static_cast<std::size_t>(i)];
      row.start_ns = f.enter_ns;
      row.post_end_ns = at;
      if (named_op && !is_point_to_point_op(*named_op)) row.op = *named_op;
    }
    // A completion call (MPI_Wait*, MPI_Test*): the requests it completed end when it returns, and its time counts
    // as their waiting, as the tracer counts it.
    auto waited = [&](auto& row, bool completed) {
      row.wait_ns = row.wait_ns.value_or(0) + (at - f.enter_ns);
      row.wait_calls = row.wait_calls.value_or(0) + 1;
      if (completed) row.end_ns = at;
    };
    for (std::int64_t i : f.done_p2p) waited(rows_.p2p[static_cast<std::size_t>(i)], true);
    for (std::int64_t i : f.done_collectives) waited(rows_.collectives[static_cast<std::size_t>(i)], true);
    for (std::int64_t i : f.tested_p2p) waited(rows_.p2p[static_cast<std::size_t>(i)], false);
    for (std::int64_t i : f.tested_collectives) waited(rows_.collectives[static_cast<std::size_t>(i)], false);
    // Any other region is a range, but not MPI calls that carried no record (MPI_Comm_rank, a Wait with nothing
    // left to complete): collscope records no such call either.
    auto def = defs_.regions.find(f.region);
    const bool mpi = def != defs_.regions.end() && def->second.paradigm == OTF2_PARADIGM_MPI;
    if (!f.mpi_record && !mpi) {
      store::NvtxRangeRow range;
      range.name = intern(name.empty() ? fmt::format("region {}", f.region) : name);
      range.kind = store::NvtxKind::PushPop;
      range.start_ns = f.enter_ns;
      range.end_ns = at;
      range.thread = thread_;
      range.depth = static_cast<std::int32_t>(stack_.size());
      rows_.ranges.push_back(range);
      ++counts_.ranges;
    }
  }

  // The world rank of `peer`, a rank of `comm`; nullopt (with `error` set) when the definitions do not have it.
  std::optional<std::int32_t> world_rank(OTF2_CommRef comm, std::uint32_t peer) {
    auto it = job_.comms.find(comm);
    if (it == job_.comms.end()) {
      fail(fmt::format("a record names communicator {}, which the definitions lack", comm));
      return std::nullopt;
    }
    use_comm(comm);
    if (it->second.self) return rank_;
    if (peer >= it->second.members.size()) {
      fail(fmt::format("a record names rank {} of communicator {}, which has {}", peer, it->second.name,
                       it->second.members.size()));
      return std::nullopt;
    }
    return it->second.members[peer];
  }

  // The communicator is written in this rank's file with this rank's place in it.
  bool use_comm(OTF2_CommRef comm) {
    if (rows_.comm_seen.count(comm)) return true;
    const auto& c = job_.comms.at(comm);
    std::int32_t me = 0;
    if (!c.self) {
      auto it = std::find(c.members.begin(), c.members.end(), rank_);
      if (it == c.members.end()) {
        fail(fmt::format("records a call on communicator {}, which does not list rank {}", c.name, rank_));
        return false;
      }
      me = static_cast<std::int32_t>(it - c.members.begin());
    }
    rows_.comm_seen.insert(comm);
    rows_.comms_used.emplace_back(comm, me);
    return true;
  }

  std::int32_t my_place(OTF2_CommRef comm) const {
    for (const auto& [c, me] : rows_.comms_used)
      if (c == comm) return me;
    return 0;
  }

  OTF2_CallbackCode message(OTF2_TimeStamp t, bool send, bool nonblocking, std::uint32_t peer, OTF2_CommRef comm,
                            std::uint32_t tag, std::uint64_t bytes, std::uint64_t request) {
    const std::int64_t at = ns(t);
    const auto world = world_rank(comm, peer);
    if (!world) return OTF2_CALLBACK_INTERRUPT;
    Frame* f = stack_.empty() ? nullptr : &stack_.back();
    if (f) f->mpi_record = true;
    std::int64_t index = -1;
    if (nonblocking && !send) {
      // MpiIrecv: the completion of a receive its MpiIrecvRequest posted.
      auto it = pending_.find(request);
      if (it == pending_.end() || it->second.collective)
        return fail(fmt::format("MpiIrecv completes request {}, which no MpiIrecvRequest posted", request));
      index = it->second.row;
      pending_.erase(it);
      if (f) f->done_p2p.push_back(index);
      else rows_.p2p[static_cast<std::size_t>(index)].end_ns = at;
      ++counts_.irecvs;
    } else if (!nonblocking && f && f->p2p >= 0 &&
               !(send ? rows_.p2p[static_cast<std::size_t>(f->p2p)].send_peer
                      : rows_.p2p[static_cast<std::size_t>(f->p2p)].recv_peer)) {
      index = f->p2p;  // MPI_Sendrecv: both sides in one call
    } else {
      store::PointToPointRow row;
      row.comm = static_cast<std::int64_t>(comm) + 1;
      row.thread = thread_;
      row.start_ns = row.end_ns = at;
      row.op = send ? (nonblocking ? store::Op::Isend : store::Op::Send) : store::Op::Recv;
      rows_.p2p.push_back(row);
      index = static_cast<std::int64_t>(rows_.p2p.size()) - 1;
      if (nonblocking) {
        pending_[request] = {false, index};
        if (f) f->posted_p2p.push_back(index);
        ++counts_.isends;
      } else if (f) {
        f->p2p = index;
      }
    }
    auto& row = rows_.p2p[static_cast<std::size_t>(index)];
    if (send) {
      row.send_peer = *world, row.send_tag = static_cast<std::int32_t>(tag),
      row.send_bytes = static_cast<std::int64_t>(bytes);
      if (!nonblocking) ++counts_.sends;
    } else {
      row.recv_peer = *world, row.recv_tag = static_cast<std::int32_t>(tag),
      row.recv_bytes = static_cast<std::int64_t>(bytes);
      if (!nonblocking) ++counts_.receives;
    }
    row.comm = static_cast<std::int64_t>(comm) + 1;
    return OTF2_CALLBACK_SUCCESS;
  }

  OTF2_CallbackCode post_receive(OTF2_TimeStamp t, std::uint64_t request) {
    const std::int64_t at = ns(t);
    store::PointToPointRow row;
    row.thread = thread_;
    row.start_ns = row.end_ns = at;
    row.op = store::Op::Irecv;
    rows_.p2p.push_back(row);
    const auto index = static_cast<std::int64_t>(rows_.p2p.size()) - 1;
    pending_[request] = {false, index};
    if (!stack_.empty()) stack_.back().posted_p2p.push_back(index), stack_.back().mpi_record = true;
    return OTF2_CALLBACK_SUCCESS;
  }

  OTF2_CallbackCode post_collective(OTF2_TimeStamp t, std::uint64_t request) {
    const std::int64_t at = ns(t);
    store::CollectiveRow row;
    row.thread = thread_;
    row.start_ns = row.end_ns = at;
    rows_.collectives.push_back(row);
    const auto index = static_cast<std::int64_t>(rows_.collectives.size()) - 1;
    pending_[request] = {true, index};
    if (!stack_.empty()) stack_.back().posted_collectives.push_back(index), stack_.back().mpi_record = true;
    return OTF2_CALLBACK_SUCCESS;
  }

  OTF2_CallbackCode complete(OTF2_TimeStamp t, std::uint64_t request) {
    const std::int64_t at = ns(t);
    auto it = pending_.find(request);
    if (it == pending_.end() || it->second.collective)
      return fail(fmt::format("MpiIsendComplete completes request {}, which no MpiIsend posted", request));
    const std::int64_t index = it->second.row;
    pending_.erase(it);
    if (!stack_.empty()) stack_.back().done_p2p.push_back(index), stack_.back().mpi_record = true;
    else rows_.p2p[static_cast<std::size_t>(index)].end_ns = at;
    return OTF2_CALLBACK_SUCCESS;
  }

  OTF2_CallbackCode test(std::uint64_t request) {
    auto it = pending_.find(request);
    if (it == pending_.end() || stack_.empty()) return OTF2_CALLBACK_SUCCESS;
    (it->second.collective ? stack_.back().tested_collectives : stack_.back().tested_p2p).push_back(it->second.row);
    stack_.back().mpi_record = true;
    return OTF2_CALLBACK_SUCCESS;
  }

  OTF2_CallbackCode collective(OTF2_TimeStamp t, OTF2_CollectiveOp op, OTF2_CommRef comm, std::uint32_t root,
                               std::uint64_t sent, std::uint64_t received, std::optional<std::uint64_t> request) {
    const std::int64_t at = ns(t);
    auto c = job_.comms.find(comm);
    if (c == job_.comms.end())
      return fail(fmt::format("a collective names communicator {}, which the definitions lack", comm));
    if (!use_comm(comm)) return OTF2_CALLBACK_INTERRUPT;
    Frame* f = stack_.empty() ? nullptr : &stack_.back();
    if (f) f->mpi_record = true;
    std::int64_t index = -1;
    if (request) {
      auto it = pending_.find(*request);
      if (it == pending_.end() || !it->second.collective)
        return fail(fmt::format(
            "NonBlockingCollectiveComplete completes request {}, which no NonBlockingCollectiveRequest posted",
            *request));
      index = it->second.row;
      pending_.erase(it);
      if (f) f->done_collectives.push_back(index);
      else rows_.collectives[static_cast<std::size_t>(index)].end_ns = at;
      ++counts_.nonblocking_collectives;
    } else {
      store::CollectiveRow row;
      row.thread = thread_;
      row.start_ns = row.end_ns = at;
      rows_.collectives.push_back(row);
      index = static_cast<std::int64_t>(rows_.collectives.size()) - 1;
      if (f) f->collective = index;
      ++counts_.collectives;
    }
    auto& row = rows_.collectives[static_cast<std::size_t>(index)];
    row.comm = static_cast<std::int64_t>(comm) + 1;
    if (row.op == store::Op::Unknown) row.op = op_of_collective(op);
    if (root != OTF2_UNDEFINED_UINT32) row.root = static_cast<std::int32_t>(root);
    const int size = c->second.self ? 1 : static_cast<int>(c->second.members.size());
    row.bytes = collective_bytes(collscope_archive_, row.op, my_place(comm), root, size, sent, received);
    return OTF2_CALLBACK_SUCCESS;
  }

  std::int64_t intern(const std::string& name) {
    auto [it, added] = rows_.range_names.try_emplace(name, 0);
    if (added) it->second = static_cast<std::int64_t>(rows_.range_names.size());
    return it->second;
  }

  const Definitions& defs_;
  const Job& job_;
  Otf2ImportCounts& counts_;
  RankRows& rows_;
  int rank_;
  std::int64_t thread_;
  bool collscope_archive_;
  std::string location_name_;
  std::vector<Frame> stack_;
  std::unordered_map<std::uint64_t, Pending> pending_;
  std::int64_t last_ns_ = 0;
};

// ---- The archive ----------------------------------------------------------------------------------------------

// libotf2 trusts the counts and lengths in an anchor file: one with bytes overwritten made OTF2_Reader_Open run
// for 75 s and take 0.9 GB before it failed (otf2-print alike). So the anchor is first opened in a child process
// bounded in time and address space; the archive is opened here only when that open returned. What the child
// could not open comes back as OTF2's own message on a pipe.
constexpr unsigned kAnchorOpenSeconds = 10;
constexpr std::uint64_t kAnchorOpenBytes = 512ull << 20;  // beyond what the process maps already

std::uint64_t mapped_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t pages = 0;
  statm >> pages;
  return pages * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

void open_anchor_in_bounds(const std::string& anchor) {
  int out[2];
  if (pipe(out) != 0) return;  // cannot check: open it here as before
  const pid_t pid = fork();
  if (pid < 0) {
    close(out[0]), close(out[1]);
    return;
  }
  if (pid == 0) {
    close(out[0]);
    const rlim_t limit = mapped_bytes() + kAnchorOpenBytes;
    const rlimit room{limit, limit};
    setrlimit(RLIMIT_AS, &room);
    alarm(kAnchorOpenSeconds);
    OTF2_Error_RegisterCallback(detail::keep_otf2_error, nullptr);
    OTF2_Reader* reader = OTF2_Reader_Open(anchor.c_str());
    if (!reader) {
      const std::string why = detail::otf2_error_text(OTF2_ERROR_INVALID);
      [[maybe_unused]] const auto written = write(out[1], why.data(), why.size());
    }
    _exit(reader ? 0 : 3);
  }
  close(out[1]);
  std::string why;
  char buffer[512];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) != 0;)
    if (n > 0) why.append(buffer, static_cast<std::size_t>(n));
    else if (errno != EINTR) break;
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3 && !why.empty())
    throw InputError(fmt::format("{}: not a readable OTF2 archive ({})", anchor, why));
  throw InputError(fmt::format("{}: not a readable OTF2 archive (opening its anchor file did not end within {} s and "
                               "{} MiB: a damaged file)",
                               anchor, kAnchorOpenSeconds, kAnchorOpenBytes >> 20));
}

class Otf2Archive {
 public:
  explicit Otf2Archive(std::string anchor) : anchor_(std::move(anchor)) {
    open_anchor_in_bounds(anchor_);
    OTF2_Error_RegisterCallback(detail::keep_otf2_error, nullptr);
    detail::otf2_last_error.clear();
    reader_ = OTF2_Reader_Open(anchor_.c_str());
    if (!reader_) unreadable(OTF2_ERROR_INVALID);
    check(OTF2_Reader_SetSerialCollectiveCallbacks(reader_));
  }
  ~Otf2Archive() {
    if (reader_) OTF2_Reader_Close(reader_);
  }
  Otf2Archive(const Otf2Archive&) = delete;
  Otf2Archive& operator=(const Otf2Archive&) = delete;

  [[noreturn]] void unreadable(OTF2_ErrorCode code, const std::string& where = "") const {
    throw InputError(
        fmt::format("{}: not a readable OTF2 archive ({}{})", anchor_, where, detail::otf2_error_text(code)));
  }
  void check(OTF2_ErrorCode code) const {
    if (code != OTF2_SUCCESS) unreadable(code);
  }

  std::string creator() {
    char* text = nullptr;
    check(OTF2_Reader_GetCreator(reader_, &text));
    std::string out = text ? text : "";
    std::free(text);
    return out;
  }

  Definitions definitions() {
    Definitions defs;
    OTF2_GlobalDefReader* g = OTF2_Reader_GetGlobalDefReader(reader_);
    if (!g) unreadable(OTF2_ERROR_INVALID);
    OTF2_GlobalDefReaderCallbacks* cb = OTF2_GlobalDefReaderCallbacks_New();
    OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(cb, on_clock);
    OTF2_GlobalDefReaderCallbacks_SetStringCallback(cb, on_string);
    OTF2_GlobalDefReaderCallbacks_SetRegionCallback(cb, on_region);
    OTF2_GlobalDefReaderCallbacks_SetSystemTreeNodeCallback(cb, on_node);
    OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback(cb, on_location_group);
    OTF2_GlobalDefReaderCallbacks_SetLocationCallback(cb, on_location);
    OTF2_GlobalDefReaderCallbacks_SetGroupCallback(cb, on_group);
    OTF2_GlobalDefReaderCallbacks_SetCommCallback(cb, on_comm);
    const OTF2_ErrorCode registered = OTF2_Reader_RegisterGlobalDefCallbacks(reader_, g, cb, &defs);
    OTF2_GlobalDefReaderCallbacks_Delete(cb);
    check(registered);
    uint64_t read = 0;
    check(OTF2_Reader_ReadAllGlobalDefinitions(reader_, g, &read));
    check(OTF2_Reader_CloseGlobalDefReader(reader_, g));
    return defs;
  }

  // Selects the locations to read and applies their local definitions (Score-P's id mappings).
  void open_locations(const std::vector<OTF2_LocationRef>& locations) {
    for (auto loc : locations) check(OTF2_Reader_SelectLocation(reader_, loc));
    const bool local_defs = OTF2_Reader_OpenDefFiles(reader_) == OTF2_SUCCESS;
    detail::otf2_last_error.clear();
    check(OTF2_Reader_OpenEvtFiles(reader_));
    for (auto loc : locations) {
      if (local_defs) {
        if (OTF2_DefReader* d = OTF2_Reader_GetDefReader(reader_, loc)) {
          uint64_t read = 0;
          check(OTF2_Reader_ReadAllLocalDefinitions(reader_, d, &read));
          check(OTF2_Reader_CloseDefReader(reader_, d));
        }
        detail::otf2_last_error.clear();
      }
      OTF2_EvtReader* e = OTF2_Reader_GetEvtReader(reader_, loc);
      if (!e) unreadable(OTF2_ERROR_INVALID);
      evt_readers_[loc] = e;
    }
    if (local_defs) check(OTF2_Reader_CloseDefFiles(reader_));
  }

  // `where`: the location, for the message when its events cannot be read (a cut or corrupt traces/N.evt).
  void read_events(OTF2_LocationRef loc, LocationReader& state, const std::string& where) {
    OTF2_EvtReader* e = evt_readers_.at(loc);
    OTF2_EvtReaderCallbacks* cb = OTF2_EvtReaderCallbacks_New();
    LocationReader::register_callbacks(cb);
    const OTF2_ErrorCode registered = OTF2_Reader_RegisterEvtCallbacks(reader_, e, cb, &state);
    OTF2_EvtReaderCallbacks_Delete(cb);
    check(registered);
    uint64_t read = 0;
    const OTF2_ErrorCode code = OTF2_Reader_ReadAllLocalEvents(reader_, e, &read);
    events_ += static_cast<std::int64_t>(read);
    if (!state.error.empty()) throw InputError(fmt::format("{}: {}", anchor_, state.error));
    if (code != OTF2_SUCCESS) unreadable(code, where + ": ");
    check(OTF2_Reader_CloseEvtReader(reader_, e));
    evt_readers_.erase(loc);
  }

  std::int64_t events() const { return events_; }

  void close_locations() {
    if (!evt_readers_.empty()) return;
    check(OTF2_Reader_CloseEvtFiles(reader_));
  }

 private:
  std::string anchor_;
  OTF2_Reader* reader_ = nullptr;
  std::map<OTF2_LocationRef, OTF2_EvtReader*> evt_readers_;
  std::int64_t events_ = 0;
};

std::string anchor_of(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const fs::path inside = fs::path(path) / "traces.otf2";
    if (fs::is_regular_file(inside, ec)) return inside.string();
    throw InputError(
        fmt::format("{}: a directory without traces.otf2; give the archive's anchor file (NAME.otf2)", path));
  }
  if (!fs::exists(path, ec)) throw InputError(fmt::format("{}: no such file", path));
  if (!fs::is_regular_file(path, ec)) throw InputError(fmt::format("{}: not a regular file", path));
  return path;
}

}  // namespace

bool looks_like_otf2_archive(const std::string& path) {
  // A directory is no timeline or trace file: the OTF2 reader says what it lacks when it holds no traces.otf2.
  std::error_code ec;
  return fs::is_directory(path, ec) || fs::path(path).extension() == ".otf2";
}

Otf2ImportCounts import_otf2(const std::string& path, const std::string& run_dir) {
  const std::string anchor = anchor_of(path);
  Otf2Archive archive(anchor);
  Otf2ImportCounts counts;
  counts.creator = archive.creator();
  const bool collscope_archive = counts.creator.starts_with("collscope");
  const Definitions defs = archive.definitions();
  const Job job = job_of(defs, anchor);
  counts.world_size = job.world_size;
  if (job.other_locations)
    counts.problems.push_back(fmt::format("{}: {} location(s) of no MPI rank (GPU streams, other processes) left out",
                                          anchor, job.other_locations));
  if (job.locations_of_rank.empty()) throw InputError(fmt::format("{}: no location belongs to an MPI rank", anchor));

  std::vector<OTF2_LocationRef> all;
  for (const auto& [rank, locs] : job.locations_of_rank) all.insert(all.end(), locs.begin(), locs.end());
  archive.open_locations(all);
  detail::prepare_run_dir(run_dir);

  const std::int64_t realtime_base = defs.realtime_ns ? static_cast<std::int64_t>(*defs.realtime_ns) : 0;
  // A failure part way leaves no rank files: a run of the ranks read so far would look like a smaller job.
  std::vector<fs::path> written;
  try {
    for (const auto& [rank, locs] : job.locations_of_rank) {
      RankRows rows;
      std::vector<store::ThreadRow> threads;
      for (std::size_t i = 0; i < locs.size(); ++i) {
        const auto& loc = defs.locations.at(locs[i]);
        const auto thread = static_cast<std::int64_t>(i) + 1;
        std::string name = defs.text(loc.name);
        // tid: the OTF2 location id (an archive has no kernel thread ids).
        threads.push_back({thread, static_cast<std::int64_t>(locs[i]), name});
        const std::string where =
            fmt::format("location {} ({}, rank {})", locs[i], name.empty() ? "unnamed" : name, rank);
        LocationReader reader(defs, job, counts, rows, rank, thread, collscope_archive, where);
        archive.read_events(locs[i], reader, where);
        reader.finish();
        ++counts.locations;
      }

      written.push_back(fs::path(run_dir) / store::rank_file_name(rank));
      store::TraceWriter w(written.back().string());
      w.begin();
      const auto group = defs.locations.at(locs.front()).group;
      w.set_meta(store::meta_key::kWorldRank, std::to_string(rank));
      w.set_meta(store::meta_key::kWorldSize, std::to_string(job.world_size));
      // OTF2 times are on one clock per archive (Score-P corrects each process's clock when it writes the trace):
      // the host is the system tree's node, so ranks of one node share an offset and the clock alignment refines
      // only between nodes.
      w.set_meta(store::meta_key::kHost, host_of(defs, group));
      w.set_meta(store::meta_key::kLauncher, "otf2");
      w.set_meta(store::meta_key::kCommandLine, fmt::format("collscope import otf2 {}", anchor));
      if (rows.first_ns > rows.last_ns) rows.first_ns = rows.last_ns = 0;
      w.set_meta(store::meta_key::kMonotonicStart, std::to_string(rows.first_ns));
      w.set_meta(store::meta_key::kMonotonicEnd, std::to_string(rows.last_ns));
      if (defs.realtime_ns) {
        w.set_meta(store::meta_key::kRealtimeStart, std::to_string(realtime_base + rows.first_ns));
        w.set_meta(store::meta_key::kRealtimeEnd, std::to_string(realtime_base + rows.last_ns));
      }
      w.set_meta(store::meta_key::kImportedFrom, fs::absolute(anchor).string());
      w.set_meta(store::meta_key::kImportFormat, "otf2");
      w.set_meta("otf2_creator", counts.creator);
      for (const auto& t : threads) w.add_thread(t);
      for (const auto& [comm, me] : rows.comms_used) {
        const auto& c = job.comms.at(comm);
        store::CommunicatorRow row;
        row.id = static_cast<std::int64_t>(comm) + 1;
        // The same key on every member; MPI_COMM_SELF's kind is a different communicator on each rank.
        row.key = (std::uint64_t{0x07f2} << 48) ^ (static_cast<std::uint64_t>(comm) << 20) ^
                  (c.self ? static_cast<std::uint64_t>(rank) + 1 : 0);
        row.backend = store::Backend::Mpi;
        row.members = c.self ? std::vector<std::int32_t>{rank} : c.members;
        row.size = static_cast<std::int32_t>(row.members.size());
        row.rank = me;
        row.name = c.name;
        row.created_ns = rows.first_ns;
        w.add_communicator(row);
      }
      // Range names were numbered while reading; now they become the file's strings.
      std::vector<std::int64_t> string_of(rows.range_names.size() + 1, 0);
      for (const auto& [name, n] : rows.range_names) string_of[static_cast<std::size_t>(n)] = w.intern(name);
      for (auto& r : rows.ranges) r.name = string_of[static_cast<std::size_t>(r.name)];
      // Calls in the order they were made; seq is their place on the communicator, as the tracer numbers them.
      auto by_start = [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; };
      std::stable_sort(rows.p2p.begin(), rows.p2p.end(), by_start);
      std::stable_sort(rows.collectives.begin(), rows.collectives.end(), by_start);
      std::map<std::int64_t, std::int64_t> next_p2p, next_collective;
      std::int64_t written = 0;
      auto batch = [&] {
        if (++written % 20000 == 0) w.commit(), w.begin();
      };
      for (auto& r : rows.p2p) {
        if (r.comm == 0) continue;  // an MpiIrecvRequest whose receive never completed
        r.seq = next_p2p[r.comm]++;
        w.add(r);
        batch();
      }
      for (auto& r : rows.collectives) {
        if (r.comm == 0) continue;  // a non-blocking collective never completed
        r.seq = next_collective[r.comm]++;
        w.add_collective(r);
        batch();
      }
      for (const auto& r : rows.ranges) {
        w.add_nvtx_range(r);
        batch();
      }
      w.commit();
      ++counts.ranks;
    }
  } catch (...) {
    std::error_code ec;
    for (const auto& file : written) fs::remove(file, ec);
    throw;
  }
  archive.close_locations();
  counts.events = archive.events();
  return counts;
}

}  // namespace collscope::formats
