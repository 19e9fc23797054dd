#pragma once
// Where non-blocking requests completed, for exports that draw each call of a thread as a region: requests
// completed by one MPI_Wait*/MPI_Test* call end at the same instant on the same thread (the completion call's
// exit), so they get one completion span, from the earliest of their completion spans (run/wait_states.hpp: their
// wait_ns placed before the end) to that end. Their wait_ns agree but for the tracer's rounding (1 ns), so the
// spans are grouped by their end, not compared whole. Shared by the Chrome and OTF2 exports.
#include <collscope/run/run.hpp>
#include <collscope/run/wait_states.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

namespace collscope::formats::detail {

struct CompletedRequest {
  bool collective = false;  // index into RankTrace::collectives, else into RankTrace::point_to_point
  std::int32_t call = 0;
};

struct Completion {
  std::int64_t start_ns = 0, end_ns = 0;  // the rank's raw clock; start == end when the requests never waited
  std::int64_t thread = 0;                // threads.id
  std::int32_t wait_calls = 0;            // completion calls the first request was in (a Test loop: many)
  std::vector<CompletedRequest> requests;
};

// Every non-blocking point-to-point call of the rank (and, with `collectives`, every non-blocking collective whose
// file records its times), by thread then end.
inline std::vector<Completion> completions(const run::RankTrace& rank, bool collectives) {
  std::map<std::pair<std::int64_t, std::int64_t>, Completion> by_end;  // (thread, end)
  auto add = [&](std::int64_t thread, const run::MpiSpans& spans, std::int32_t wait_calls, CompletedRequest request) {
    auto [it, added] = by_end.try_emplace({thread, spans.completion.end_ns});
    Completion& c = it->second;
    if (added) c = {spans.completion.start_ns, spans.completion.end_ns, thread, wait_calls, {}};
    c.start_ns = std::min(c.start_ns, spans.completion.start_ns);
    c.requests.push_back(request);
  };
  for (std::size_t j = 0; j < rank.point_to_point.size(); ++j) {
    const auto& c = rank.point_to_point[j];
    if (c.nonblocking_call()) add(c.thread, run::spans_in_mpi(c), c.nonblocking.wait_calls, {false, static_cast<std::int32_t>(j)});
  }
  if (collectives)
    for (std::size_t j = 0; j < rank.collectives.size(); ++j) {
      const auto spans = run::spans_in_mpi(rank, j);
      if (spans && spans->nonblocking)
        add(rank.collectives[j].thread, *spans, rank.nonblocking_times(j)->wait_calls, {true, static_cast<std::int32_t>(j)});
    }
  std::vector<Completion> out;
  out.reserve(by_end.size());
  for (auto& [key, c] : by_end) out.push_back(std::move(c));
  return out;
}

}  // namespace collscope::formats::detail
