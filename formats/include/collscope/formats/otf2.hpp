#pragma once
// OTF2 export: a run as an OTF2 archive (Score-P's format) for Vampir, Scalasca, otf2-print and the OTF2 Python
// bindings, through Debian's OTF2 library (libopen-trace-format2). One location per traced thread, one location
// group per rank; a region per call; MPI messages and collectives as OTF2's MPI records on MPI communicators; NVTX
// ranges as regions; every time on the run's aligned clock (run/clock_alignment.hpp), as the analyzer sees it.
// The mapping is in docs/formats.md.
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

}  // namespace collscope::formats
