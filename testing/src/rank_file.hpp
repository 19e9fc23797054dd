#pragma once
// What every synthetic rank file starts with (shared by the synthetic and the lockstep writers).
#include <collscope/store/trace_writer.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace collscope::testing::detail {

struct RankFileHeader {
  int rank = 0;
  int world_size = 1;
  std::string host;
  std::int64_t monotonic_start_ns = 0;  // meta clock anchors
  std::int64_t realtime_start_ns = 0;
  std::int64_t fusion_threshold = 0;    // env.HOROVOD_FUSION_THRESHOLD when > 0
};

// Opens dir/rank-NNNNN.sqlite, begins a transaction and writes the meta of `h`.
std::unique_ptr<store::TraceWriter> open_rank_file(const std::string& dir, const RankFileHeader& h);

// MPI_COMM_WORLD of `size` ranks as rank `rank` sees it: file id 1, members 0 .. size-1.
store::CommunicatorRow world_communicator(std::uint64_t key, int rank, int size, std::int64_t created_ns);

}  // namespace collscope::testing::detail
