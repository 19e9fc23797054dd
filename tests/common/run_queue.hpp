#pragma once
// How long a traced rank's threads waited runnable for a CPU over the run (ns): the sum over its threads of the
// growth of runq_ns between their first and last cpu_samples (schema 1.4; 0 when sampling was off). Tests that
// compare the tracer's timing of a call with the program's own use it as the bound of what a busy host can put
// between the two clock reads.
#include <collscope/store/trace_reader.hpp>

#include <cstdint>
#include <map>
#include <utility>

namespace collscope::testing {

inline std::int64_t run_queue_ns(const store::TraceReader& reader) {
  std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> first_last;  // thread -> first, last runq_ns
  for (const auto& s : reader.rows<store::CpuSampleRow>()) {
    auto [it, fresh] = first_last.try_emplace(s.thread, s.runq_ns, s.runq_ns);
    if (!fresh) it->second.second = s.runq_ns;
  }
  std::int64_t total = 0;
  for (const auto& [thread, runq] : first_last) total += runq.second - runq.first;
  return total;
}

}  // namespace collscope::testing
