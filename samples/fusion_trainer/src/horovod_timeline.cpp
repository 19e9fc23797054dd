#include "horovod_timeline.hpp"

#include <fmt/format.h>

namespace collscope::sample {

HorovodTimeline::HorovodTimeline(const std::string& path) : start_(std::chrono::steady_clock::now()) {
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) {
    std::fprintf(stderr, "fusion_trainer: cannot write the Horovod timeline %s; going on without it\n", path.c_str());
    return;
  }
  const long long epoch_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
  fmt::print(file_,
             "[\n{{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"args\": "
             "{{\"start_time_since_epoch_in_micros\":{}}}}},\n"
             "{{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": 0, \"args\": {{\"sort_index\": 0}}}}",
             epoch_us);
}

// A file whose writer was killed lacks the closing bracket (as older Horovod files do); readers accept that.
HorovodTimeline::~HorovodTimeline() {
  if (!file_) return;
  std::fputs("\n]\n", file_);
  std::fclose(file_);
}

long HorovodTimeline::micros() const {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start_).count());
}

void HorovodTimeline::event(const std::string& tensor, char phase, const std::string& name, const std::string& args) {
  if (!file_) return;
  auto [it, added] = pids_.try_emplace(tensor, static_cast<int>(pids_.size()) + 1);
  if (added)
    fmt::print(file_,
               ",\n{{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": {0}, \"args\": {{\"name\": \"{1}\"}}}}"
               ",\n{{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": {0}, \"args\": {{\"sort_index\": {0}}}}}",
               it->second, tensor);
  fmt::print(file_, ",\n{{\"ph\": \"{}\"", phase);
  if (phase != 'E') fmt::print(file_, ", \"name\": \"{}\"", name);
  fmt::print(file_, ", \"ts\": {}, \"pid\": {}", micros(), it->second);
  if (phase == 'X') std::fputs(", \"dur\": 0", file_);
  if (!args.empty()) fmt::print(file_, ", \"args\": {{{}}}", args);
  std::fputs("}", file_);
}

void HorovodTimeline::negotiate_start(const std::string& tensor, const char* op) {
  event(tensor, 'B', fmt::format("NEGOTIATE_{}", op), "");
}
void HorovodTimeline::negotiate_rank_ready(const std::string& tensor, int rank) {
  event(tensor, 'X', std::to_string(rank), "");
}
void HorovodTimeline::negotiate_end(const std::string& tensor) { event(tensor, 'E', "", ""); }
void HorovodTimeline::start(const std::string& tensor, const char* op) { event(tensor, 'B', op, ""); }
void HorovodTimeline::activity_start(const std::string& tensor, const char* activity) {
  event(tensor, 'B', activity, "");
}
void HorovodTimeline::activity_end(const std::string& tensor) { event(tensor, 'E', "", ""); }
void HorovodTimeline::end(const std::string& tensor, const char* dtype, const std::string& shape) {
  event(tensor, 'E', "", fmt::format("\"dtype\": \"{}\", \"shape\": \"{}\"", dtype, shape));
}
void HorovodTimeline::cycle_start() {
  if (!file_) return;
  fmt::print(file_, ",\n{{\"ph\": \"i\", \"name\": \"CYCLE_START\", \"ts\": {}, \"s\": \"g\"}}", micros());
}

}  // namespace collscope::sample
