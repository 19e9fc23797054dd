#include "collective_stats.hpp"

#include <fmt/core.h>

namespace collscope::sample {
namespace {

const char* role_name(CommunicatorRole role) {
  switch (role) {
    case CommunicatorRole::world: return "world";
    case CommunicatorRole::horovod: return "horovod";
    case CommunicatorRole::process_set: return "process_set";
  }
  return "world";
}

std::uint64_t payload_bytes(int count, MPI_Datatype type) {
  int type_size = 0;
  MPI_Type_size(type, &type_size);
  return static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(type_size);
}

void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  fmt::print(stderr, "fusion_trainer: {} failed with MPI error {}\n", call, rc);
  MPI_Abort(MPI_COMM_WORLD, 3);
}

}  // namespace

void CollectiveStats::record(const char* op, CommunicatorRole role, std::uint64_t bytes,
                             Clock::duration elapsed) {
  std::lock_guard lock(mutex_);
  OpTotals& totals = by_op_[op];
  ++totals.calls;
  totals.bytes += bytes;
  totals.milliseconds += std::chrono::duration<double, std::milli>(elapsed).count();
  ++calls_by_communicator_[role_name(role)];
}

void CollectiveStats::write_json(nlohmann::json& report) const {
  std::lock_guard lock(mutex_);
  auto& calls = report["collectives"] = nlohmann::json::object();
  auto& bytes = report["collective_bytes"] = nlohmann::json::object();
  auto& milliseconds = report["collective_ms"] = nlohmann::json::object();
  for (const auto& [op, totals] : by_op_) {
    calls[op] = totals.calls;
    bytes[op] = totals.bytes;
    milliseconds[op] = totals.milliseconds;
  }
  report["comm_calls_by_communicator"] = calls_by_communicator_;
}

void CollectiveCaller::allreduce(const void* send, void* recv, int count, MPI_Datatype type,
                                 MPI_Op op, MPI_Comm comm, CommunicatorRole role) {
  const auto start = CollectiveStats::Clock::now();
  check(MPI_Allreduce(send, recv, count, type, op, comm), "MPI_Allreduce");
  stats_.record("allreduce", role, payload_bytes(count, type),
                CollectiveStats::Clock::now() - start);
}

void CollectiveCaller::iallreduce_wait(const void* send, void* recv, int count, MPI_Datatype type,
                                       MPI_Op op, MPI_Comm comm, CommunicatorRole role) {
  const auto start = CollectiveStats::Clock::now();
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Iallreduce(send, recv, count, type, op, comm, &request), "MPI_Iallreduce");
  check(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait");
  stats_.record("iallreduce", role, payload_bytes(count, type),
                CollectiveStats::Clock::now() - start);
}

void CollectiveCaller::bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm,
                             CommunicatorRole role) {
  const auto start = CollectiveStats::Clock::now();
  check(MPI_Bcast(buffer, count, type, root, comm), "MPI_Bcast");
  stats_.record("bcast", role, payload_bytes(count, type), CollectiveStats::Clock::now() - start);
}

void CollectiveCaller::allgather(const void* send, int count, MPI_Datatype type, void* recv,
                                 MPI_Comm comm, CommunicatorRole role) {
  const auto start = CollectiveStats::Clock::now();
  check(MPI_Allgather(send, count, type, recv, count, type, comm), "MPI_Allgather");
  stats_.record("allgather", role, payload_bytes(count, type), CollectiveStats::Clock::now() - start);
}

void CollectiveCaller::barrier(MPI_Comm comm, CommunicatorRole role) {
  const auto start = CollectiveStats::Clock::now();
  check(MPI_Barrier(comm), "MPI_Barrier");
  stats_.record("barrier", role, 0, CollectiveStats::Clock::now() - start);
}

}  // namespace collscope::sample
