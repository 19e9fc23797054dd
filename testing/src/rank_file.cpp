#include "rank_file.hpp"

#include <collscope/store/trace_reader.hpp>

#include <filesystem>

namespace collscope::testing::detail {

std::unique_ptr<store::TraceWriter> open_rank_file(const std::string& dir, const RankFileHeader& h) {
  auto w = std::make_unique<store::TraceWriter>((std::filesystem::path(dir) / store::rank_file_name(h.rank)).string());
  w->begin();
  w->set_meta(store::meta_key::kWorldRank, std::to_string(h.rank));
  w->set_meta(store::meta_key::kWorldSize, std::to_string(h.world_size));
  w->set_meta(store::meta_key::kHost, h.host);
  w->set_meta(store::meta_key::kMonotonicStart, std::to_string(h.monotonic_start_ns));
  w->set_meta(store::meta_key::kRealtimeStart, std::to_string(h.realtime_start_ns));
  if (h.fusion_threshold > 0) w->set_meta("env.HOROVOD_FUSION_THRESHOLD", std::to_string(h.fusion_threshold));
  return w;
}

store::CommunicatorRow world_communicator(std::uint64_t key, int rank, int size, std::int64_t created_ns) {
  store::CommunicatorRow c;
  c.id = 1;
  c.key = key;
  c.size = size;
  c.rank = rank;
  for (int m = 0; m < size; ++m) c.members.push_back(m);
  c.name = "MPI_COMM_WORLD";
  c.created_ns = created_ns;
  return c;
}

}  // namespace collscope::testing::detail
