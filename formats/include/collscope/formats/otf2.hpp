#pragma once
// OTF2 export and import.
//
// Export: a run as an OTF2 archive (Score-P's format) for Vampir, Scalasca, otf2-print and the OTF2 Python
// bindings, through Debian's OTF2 library (libopen-trace-format2). One location per traced thread, one location
// group per rank; a region per call; MPI messages and collectives as OTF2's MPI records on MPI communicators; NVTX
// ranges as regions; every time on the run's aligned clock (run/clock_alignment.hpp), as the analyzer sees it.
//
// Import: an OTF2 archive (Score-P's, or collscope's own export) becomes a run directory, one rank file per MPI
// rank written with the store's TraceWriter, so `analyze`, `compare` and `view` work on it: MPI messages as
// point_to_point rows (peer, tag, bytes), MPI collectives as collectives rows (op from the region name, root,
// bytes), other regions as NVTX ranges. Both mappings are in docs/formats.md.
#include <cstdint>
#include <string>
#include <vector>

namespace collscope::formats {

struct Otf2ExportCounts {
  std::int64_t ranks = 0;
  std::int64_t locations = 0;  // threads that recorded something
  std::int64_t regions = 0;    // distinct region definitions
  std::int64_t events = 0;     // every event record written
  // Message records: MpiSend, MpiRecv, MpiIsend (each with its MpiIsendComplete), MpiIrecv (each after its
  // MpiIrecvRequest).
  std::int64_t sends = 0, receives = 0, isends = 0, irecvs = 0;
  std::int64_t collectives = 0;              // MpiCollectiveBegin/End pairs (blocking MPI collectives)
  std::int64_t nonblocking_collectives = 0;  // NonBlockingCollectiveRequest/Complete pairs
  std::int64_t nvtx_ranges = 0;
  // Regions that overlapped an enclosing one without nesting in it (an NVTX start/end range across an MPI call,
  // a request's completion span placed across another call): OTF2 needs strict nesting per location, so each was
  // cut at the end of the region it started in.
  std::int64_t cut_regions = 0;
  std::vector<std::string> problems;  // one line each, naming the file: what the run loader left out
};

// False when this collscope was built without the OTF2 library; export_otf2 then throws InputError saying so.
bool otf2_available();

// Writes the run in `run_dir` as the OTF2 archive `out_dir`/traces.otf2 (with traces.def and traces/). `out_dir`
// must not exist or be empty; it is written as `out_dir`.partial and renamed at the end, so a failed export leaves
// nothing under the name asked for. Throws InputError naming the run, the file or the directory on bad input.
Otf2ExportCounts export_otf2(const std::string& run_dir, const std::string& out_dir);

struct Otf2ImportCounts {
  std::string creator;          // the archive's creator ("Score-P 8.4", "collscope export --format otf2")
  std::int64_t ranks = 0;       // rank files written
  std::int64_t world_size = 0;
  std::int64_t locations = 0;   // locations read (threads of the ranks)
  std::int64_t events = 0;      // event records read
  // Point-to-point calls, by their records: MpiSend, MpiRecv (blocking), MpiIsend, MpiIrecv (completed requests).
  std::int64_t sends = 0, receives = 0, isends = 0, irecvs = 0;
  std::int64_t collectives = 0;              // MpiCollectiveBegin/End pairs
  std::int64_t nonblocking_collectives = 0;  // NonBlockingCollectiveRequest/Complete pairs
  std::int64_t ranges = 0;                   // other regions, as NVTX ranges
  // One line each, naming the file: what was left out (locations of no MPI rank, requests never completed,
  // records naming a communicator the definitions lack).
  std::vector<std::string> problems;
};

// Reads the archive whose anchor file is `anchor` (`traces.otf2`; a directory holding one is taken too) and writes
// `run_dir` (created; existing rank files in it are replaced). Throws InputError naming the file on a missing anchor,
// a file OTF2 cannot read (truncated, corrupt), events that do not nest, or an archive with no MPI rank.
Otf2ImportCounts import_otf2(const std::string& anchor, const std::string& run_dir);

// For `collscope import --format auto`: a file named *.otf2, or a directory (an archive's, holding traces.otf2).
bool looks_like_otf2_archive(const std::string& path);

}  // namespace collscope::formats
