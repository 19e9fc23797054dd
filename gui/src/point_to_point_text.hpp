#pragma once
// A point-to-point call and its messages in words: the timeline's tooltip and the Details panel say the same.
#include <collscope/gui/timeline_model.hpp>

#include <string>
#include <utility>
#include <vector>

namespace collscope::gui {

// "isend 8 KiB to rank 1 (tag 0) on MPI_COMM_WORLD", then how long the rank was in MPI and who waited for whom.
std::string point_to_point_summary(const TimelineModel& m, std::uint32_t call);

// (field, value, meaning) rows for the Details panel: the call, then per message its peer, tag, bytes, duration,
// wait and the side that was late. A sendrecv's two messages are prefixed "sent " and "received ".
struct DetailField {
  std::string name, value, meaning;
};
std::vector<DetailField> point_to_point_fields(const TimelineModel& m, std::uint32_t call);

}  // namespace collscope::gui
