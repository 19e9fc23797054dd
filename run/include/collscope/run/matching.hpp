#pragma once
// Matching: the k-th call of a communicator on each member rank is one collective instance (key, seq).
#include <collscope/run/clock_alignment.hpp>
#include <collscope/run/run.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace collscope::run {

// A matched instance with per-rank detail (materialised on demand: MatchedRun keeps only summaries).
struct CollectiveInstance {
  int comm = 0;  // index into Run::communicators
  std::uint64_t comm_key = 0;
  std::int64_t seq = 0;
  store::Op op = store::Op::Unknown;
  std::int64_t bytes = 0;
  std::vector<int> ranks;                      // world ranks that made the call
  std::vector<std::int64_t> arrival_ns;        // aligned start per rank
  std::vector<std::int64_t> completion_ns;     // aligned end per rank
  std::vector<std::int64_t> wait_ns;           // last arrival − own arrival
  std::int64_t duration_ns = 0;                // transfer time: shortest per-rank call (clock independent)
  double algbw_gbps = 0;                       // bytes / duration (GB/s = bytes per ns)
  double busbw_gbps = 0;                       // algbw × nccl-tests factor
};

// Compact summary of one instance, 64 bytes.
struct InstanceSummary {
  std::int64_t first_arrival_ns = 0;   // aligned
  std::int64_t last_arrival_ns = 0;
  std::int64_t second_last_arrival_ns = 0;  // == last when only one rank
  std::int64_t last_completion_ns = 0;
  std::int64_t duration_ns = 0;  // transfer time
  std::int64_t bytes = 0;
  std::int64_t total_wait_ns = 0;  // sum over ranks of (last arrival − own arrival)
  std::int32_t comm = 0;
  std::int32_t seq = 0;
  std::int32_t last_arriver = -1;  // world rank
  std::int16_t ranks = 0;          // ranks that made the call
  store::Op op = store::Op::Unknown;
  double busbw_gbps() const;
  double algbw_gbps() const { return duration_ns > 0 ? double(bytes) / double(duration_ns) : 0.0; }
};

// Inconsistent calls at one seq, or ranks with fewer calls: what hangs jobs.
struct Mismatch {
  int comm = 0;
  std::uint64_t comm_key = 0;
  std::int64_t seq = 0;           // first diverging call
  std::vector<int> ranks;         // world ranks that diverge from the others (or lack the call)
  std::string what;               // "op allreduce vs bcast", "rank 1 has 9 calls, others 10", ...
};

// Calls one rank's file lacks at the end of a communicator while other members made them, where its trace was
// cut short (the job killed before the writer's last batch, a writer stopped by a full disk, dropped events):
// not a mismatch. One line for the report.
struct Truncation {
  int comm = 0;
  std::uint64_t comm_key = 0;
  int world_rank = 0;
  std::int64_t from_seq = 0;  // its first call not in the file
  std::int64_t missing = 0;   // calls the others made from there on
  std::string why;            // what cut it short, and the proof it made them ("the others completed allreduce #9")
};

struct MatchedRun {
  std::vector<InstanceSummary> instances;  // ordered by (comm, seq)
  std::vector<std::size_t> comm_first;     // instances of comm c are [comm_first[c], comm_first[c+1])
  std::vector<Mismatch> mismatches;
  std::vector<Truncation> truncations;
  // Per rank index, per communicator: index into RankTrace::collectives of each seq (−1 if missing).
  std::vector<std::vector<std::vector<std::int32_t>>> call_index;
  // The communicator the run's progress is measured on (steps are inferred from it, calls elsewhere are placed
  // by how many of its calls came before): most members, then most calls on one rank. -1 when none.
  int reference_comm = -1;
  // Aligned first entry to last exit over every MPI call of the run, collectives and point-to-point (ns; 0 when
  // none): the run's traced time, the one wall time of a run without steps. (From the collectives alone, a halo
  // code's 9 s read as the 109 ms between its first and last allreduce.)
  double wall_ns = 0;

  CollectiveInstance instance(const Run& run, const ClockAlignment& clocks, int comm, std::int64_t seq) const;
};

// ---- Point-to-point messages ------------------------------------------------------------------------------
// A send matched with its receive. MPI delivers the messages of one sender to one receiver on one communicator
// with one tag in the order they were sent (non-overtaking), and receives them in the order the receives were
// posted: the k-th send of (communicator, sender, receiver, tag) in the sender's posting order (its point-to-point
// seq) is the k-th receive of the same in the receiver's. A wildcard receive (MPI_ANY_SOURCE, MPI_ANY_TAG) counts
// under the source and tag its status reported, which the tracer records.
struct MatchedMessage {
  std::int32_t send_rank = 0, send_call = 0;  // rank index, index into its RankTrace::point_to_point
  std::int32_t recv_rank = 0, recv_call = 0;
};

struct MatchedMessages {
  std::vector<MatchedMessage> messages;  // ordered by (communicator, sender, receiver, tag, order)
  std::int64_t unmatched_sends = 0;      // sends whose receive is not in the run (a rank's file missing, cut short)
  std::int64_t unmatched_receives = 0;
  std::int64_t unknown_source = 0;       // receives whose source the tracer could not read (left unmatched)
};

// Receives in the sense of matching: the receive family and the receive side of sendrecv; not the probes
// (MPI_Probe/Iprobe only look; MPI_Mprobe/Improbe take the message, and its MPI_Mrecv/Imrecv is the receive).
bool is_message_receive(store::Op op);

MatchedMessages match_messages(const Run& run);

class CollectiveMatcher {
 public:
  MatchedRun match(const Run& run, const ClockAlignment& clocks) const;
};

}  // namespace collscope::run
