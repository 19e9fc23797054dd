// Horovod Timeline (HOROVOD_TIMELINE=file): the Chrome-trace JSON Horovod's rank 0 writes, in the same form
// (horovod/common/timeline.cc): one "process" per tensor; NEGOTIATE_<OP> with one tick per rank as it reports the
// tensor ready; the operation (ALLREDUCE) with its activities (MEMCPY_IN_FUSION_BUFFER, MPI_ALLREDUCE, ...);
// CYCLE_START markers. collscope imports such files (`collscope import horovod-timeline`); the sample writes one
// so that importer is tested against a producer with a known straggler.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>

namespace collscope::sample {

class HorovodTimeline {
 public:
  // Opens `path` for writing; prints one line on stderr and stays inactive when it cannot.
  explicit HorovodTimeline(const std::string& path);
  ~HorovodTimeline();
  HorovodTimeline(const HorovodTimeline&) = delete;
  HorovodTimeline& operator=(const HorovodTimeline&) = delete;

  void negotiate_start(const std::string& tensor, const char* op);  // op: "ALLREDUCE"
  void negotiate_rank_ready(const std::string& tensor, int rank);
  void negotiate_end(const std::string& tensor);
  void start(const std::string& tensor, const char* op);
  void activity_start(const std::string& tensor, const char* activity);
  void activity_end(const std::string& tensor);
  // dtype as Horovod names it ("HOROVOD_FLOAT32"), shape as TensorShape::DebugString ("[2048, 1000]").
  void end(const std::string& tensor, const char* dtype, const std::string& shape);
  void cycle_start();

 private:
  void event(const std::string& tensor, char phase, const std::string& name, const std::string& args);
  long micros() const;

  std::FILE* file_ = nullptr;
  std::chrono::steady_clock::time_point start_;
  std::map<std::string, int> pids_;  // tensor name -> "process" id, from 1
};

}  // namespace collscope::sample
