#pragma once
// The toolbar's search: by op ("allreduce"), by size as the viewer shows it ("1 MiB", "64KiB", "4096" bytes
// exactly, ">1MiB", "<=64KiB", "64KiB..1MiB"), both ("bcast 1MiB"), else by NVTX range or GPU kernel name
// (substring, any case). Matches are listed in time order for "k of N", next and previous.
#include <collscope/gui/timeline_model.hpp>

#include <QString>

#include <cstdint>
#include <optional>
#include <vector>

namespace collscope::gui {

struct SearchQuery {
  QString text;                        // as typed, trimmed
  std::optional<store::Op> op;         // an op name
  std::int64_t min_bytes = -1;         // a size or size range, inclusive; -1: no size term
  std::int64_t max_bytes = -1;
  std::vector<bool> names;             // per TimelineModel::names(): matches the text (name search only)
  bool by_name() const { return !op && min_bytes < 0; }
  bool matches_call(const run::CollectiveCall& c) const {
    return (!op || c.op == *op) && (min_bytes < 0 || (c.bytes >= min_bytes && c.bytes <= max_bytes));
  }
  bool matches_name(std::uint32_t name) const { return name < names.size() && names[name]; }
};

// Bytes a size term means, inclusive: "1 MiB" → what format_bytes shows as "1 MiB" (3 significant digits:
// [1.0 − 0.005, 1.0 + 0.005) MiB), "4096" → exactly 4096, ">1MiB" → above it, "64KiB..1MiB" → between.
// nullopt when the text is no size.
std::optional<std::pair<std::int64_t, std::int64_t>> parse_size_term(const QString& text);

// Parses a query against a run (name matches need its string table). An empty query matches nothing.
SearchQuery parse_search(const QString& text, const TimelineModel& model);

// One match: a collective (kind Collectives, its id) or an NVTX range / GPU activity (its kind and id).
struct SearchHit {
  LaneKind kind = LaneKind::Collectives;
  std::uint32_t id = 0;
  std::int64_t start_ns = 0;  // run time
  std::int64_t end_ns = 0;
};

// Every match in time order (ties by rank). At most `limit` (the count says how many there were).
struct SearchResults {
  std::vector<SearchHit> hits;
  std::size_t count = 0;
};
SearchResults find_all(const SearchQuery& query, const TimelineModel& model, std::size_t limit = 5'000'000);

}  // namespace collscope::gui
