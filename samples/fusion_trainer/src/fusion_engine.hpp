// Horovod's background thread: every cycle it negotiates which gradients are ready on all ranks,
// packs them into one reused fusion buffer and allreduces it in place.
#pragma once

#include "collective_stats.hpp"
#include "horovod_timeline.hpp"

#include <mpi.h>

#include <condition_variable>
#include <memory>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace collscope::sample {

struct FusionConfig {
  std::uint64_t threshold_bytes;  // fusion buffer size; a larger tensor is reduced alone
  double cycle_time_ms;           // time between two negotiations
  double op_overhead_us;          // fixed CPU work per gradient allreduce (Horovod's response)
  double cycle_overhead_us;       // fixed CPU work per negotiation (Horovod's coordinator)
};

// A Horovod Timeline: every rank negotiates by allgather (each rank's ready tensors reach rank 0, as in
// Horovod's coordinator) and rank 0, which has the writer, records negotiation ticks and activities.
struct TimelineConfig {
  bool gather_readiness = false;
  HorovodTimeline* writer = nullptr;      // rank 0 only
  std::vector<std::string> tensor_names;  // per gradient, for the writer
};

// What the background thread did, for the report.
struct FusionCounters {
  std::uint64_t cycles = 0;               // negotiations (one bitmask allreduce each)
  std::uint64_t fused_allreduces = 0;     // allreduces of the fusion buffer
  std::uint64_t unfused_allreduces = 0;   // tensors above the threshold, reduced alone
  std::uint64_t gradient_bytes = 0;       // gradient payload reduced (fused + unfused)
  std::uint64_t max_fusion_fill_bytes = 0;
};

class FusionEngine {
 public:
  // `gradients` are the model's gradient tensors in forward order; they must outlive the engine.
  // `horovod_comm` is this engine's own communicator (MPI_Comm_dup of the world).
  FusionEngine(std::vector<std::span<float>> gradients, FusionConfig config, MPI_Comm horovod_comm,
               CollectiveCaller& caller, TimelineConfig timeline = {});
  ~FusionEngine();
  FusionEngine(const FusionEngine&) = delete;
  FusionEngine& operator=(const FusionEngine&) = delete;

  // Main thread, once all gradients of the previous step are reduced: forget the previous step.
  void begin_step();
  // Main thread: tensor `index`'s gradient for this step is computed.
  void mark_ready(std::size_t index);
  // Main thread: blocks until every gradient of this step is reduced (averaged over ranks).
  void wait_all_reduced();
  // Main thread: stop once every rank asked to (agreed in a negotiation), then join the thread.
  void stop();

  FusionCounters counters() const;

 private:
  void run();
  void reduce_agreed(const std::vector<std::size_t>& agreed);
  void flush_fusion_buffer(std::vector<std::size_t>& packed, std::size_t fill_bytes);
  // Rank 0 with a timeline: ticks for ranks newly ready for a tensor, negotiation ends for agreed ones.
  void record_negotiation(const std::vector<std::uint64_t>& all, const std::vector<std::uint64_t>& agreed,
                          std::size_t words);
  std::string shape_of(std::size_t index) const;

  std::vector<std::span<float>> gradients_;
  FusionConfig config_;
  MPI_Comm comm_;
  CollectiveCaller& caller_;
  TimelineConfig timeline_;
  int world_size_ = 1;
  float world_size_inverse_ = 1.0f;
  std::vector<std::vector<bool>> ticked_;  // [tensor][rank]: reported ready in this negotiation (rank 0)
  std::vector<bool> negotiating_;          // [tensor]: NEGOTIATE_ALLREDUCE begun, not ended (rank 0)
  // Allocated once (threshold bytes, rounded up to whole floats) and reused by every cycle, so the
  // tracer sees one address with many sizes. Left uninitialised: pages are touched only as filled.
  std::unique_ptr<float[]> fusion_buffer_;

  mutable std::mutex mutex_;
  std::condition_variable reduced_changed_;
  std::vector<bool> ready_;    // computed on this rank, this step
  std::vector<bool> reduced_;  // allreduced, this step
  std::size_t reduced_count_ = 0;
  bool stop_requested_ = false;
  FusionCounters counters_;
  std::thread thread_;
};

}  // namespace collscope::sample
