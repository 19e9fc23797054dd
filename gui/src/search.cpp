// The toolbar's search (search.hpp).
#include <collscope/gui/search.hpp>

#include <QRegularExpression>

#include <algorithm>
#include <cmath>

namespace collscope::gui {
namespace {

struct Size {
  double value = 0;     // bytes
  double half = 0;      // half the display precision (0: exact)
};

// "4096" (exact bytes), "1 MiB", "1.5m", "64KiB", "2 GB" (binary units, as the viewer shows sizes).
std::optional<Size> parse_one_size(const QString& text) {
  static const QRegularExpression re(R"(^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$)",
                                     QRegularExpression::CaseInsensitiveOption);
  const auto m = re.match(text);
  if (!m.hasMatch()) return std::nullopt;
  const double number = m.captured(1).toDouble();
  const QString unit = m.captured(2).toLower();
  const int power = unit == "k" ? 1 : unit == "m" ? 2 : unit == "g" ? 3 : unit == "t" ? 4 : 0;
  const double scale = std::pow(1024.0, power);
  Size s{number * scale, 0};
  // With a unit the size is read as displayed: 3 significant digits, so "1 MiB" is anything shown as 1.00 MiB.
  if (power > 0 && number > 0) s.half = 0.5 * std::pow(10.0, std::floor(std::log10(number)) - 2) * scale;
  return s;
}

}  // namespace

std::optional<std::pair<std::int64_t, std::int64_t>> parse_size_term(const QString& raw) {
  const QString text = raw.trimmed();
  static const QRegularExpression range(R"(^(.+?)\s*(?:\.\.|–)\s*(.+)$)");
  if (const auto m = range.match(text); m.hasMatch()) {
    const auto a = parse_one_size(m.captured(1)), b = parse_one_size(m.captured(2));
    if (!a || !b) return std::nullopt;
    return std::pair{static_cast<std::int64_t>(std::ceil(std::min(a->value, b->value))),
                     static_cast<std::int64_t>(std::floor(std::max(a->value, b->value)))};
  }
  static const QRegularExpression compare(R"(^(>=|<=|>|<)\s*(.+)$)");
  if (const auto m = compare.match(text); m.hasMatch()) {
    const auto s = parse_one_size(m.captured(2));
    if (!s) return std::nullopt;
    const QString op = m.captured(1);
    const auto v = s->value;
    if (op == ">") return std::pair{static_cast<std::int64_t>(std::floor(v)) + 1, INT64_MAX};
    if (op == ">=") return std::pair{static_cast<std::int64_t>(std::ceil(v)), INT64_MAX};
    if (op == "<") return std::pair{std::int64_t{0}, static_cast<std::int64_t>(std::ceil(v)) - 1};
    return std::pair{std::int64_t{0}, static_cast<std::int64_t>(std::floor(v))};
  }
  const auto s = parse_one_size(text);
  if (!s) return std::nullopt;
  if (s->half == 0) return std::pair{static_cast<std::int64_t>(std::llround(s->value)), static_cast<std::int64_t>(std::llround(s->value))};
  return std::pair{static_cast<std::int64_t>(std::ceil(s->value - s->half)),
                   static_cast<std::int64_t>(std::ceil(s->value + s->half)) - 1};
}

SearchQuery parse_search(const QString& raw, const TimelineModel& model) {
  SearchQuery q;
  q.text = raw.trimmed();
  if (q.text.isEmpty()) return q;
  auto set_size = [&](const std::pair<std::int64_t, std::int64_t>& r) { q.min_bytes = r.first, q.max_bytes = r.second; };
  if (const auto size = parse_size_term(q.text)) {
    set_size(*size);
    return q;
  }
  // An op name, alone or followed by a size term.
  const int space = q.text.indexOf(QRegularExpression(R"(\s)"));
  const QString head = space < 0 ? q.text : q.text.left(space);
  if (const auto op = store::op_from_name(head.toLower().toStdString())) {
    if (space < 0) {
      q.op = op;
      return q;
    }
    if (const auto size = parse_size_term(q.text.mid(space + 1))) {
      q.op = op;
      set_size(*size);
      return q;
    }
  }
  const auto& names = model.names();
  q.names.assign(names.size(), false);
  for (std::size_t n = 1; n < names.size(); ++n)
    q.names[n] = QString::fromStdString(names[n]).contains(q.text, Qt::CaseInsensitive);
  return q;
}

SearchResults find_all(const SearchQuery& q, const TimelineModel& m, std::size_t limit) {
  SearchResults out;
  if (q.text.isEmpty()) return out;
  auto add = [&](LaneKind kind, std::uint32_t id, std::int64_t start, std::int64_t end) {
    ++out.count;
    if (out.hits.size() < limit) out.hits.push_back({kind, id, start, end});
  };
  const auto& ranks = m.run().ranks;
  if (!q.by_name()) {
    std::size_t completed = 0;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      const auto& calls = ranks[r].collectives;
      completed += calls.size();
      for (std::size_t j = 0; j < calls.size(); ++j)
        if (q.matches_call(calls[j]))
          add(LaneKind::Collectives, m.collective_id(static_cast<int>(r), static_cast<std::int32_t>(j)),
              m.run_time(static_cast<int>(r), calls[j].start_ns), m.run_time(static_cast<int>(r), calls[j].end_ns));
    }
    for (auto id = static_cast<std::uint32_t>(completed); id < m.collective_count(); ++id)  // calls in flight
      if (q.matches_call(m.call(id))) {
        const auto e = m.collective(id);
        add(LaneKind::Collectives, id, e.start_ns, e.end_ns);
      }
  } else {
    for (const auto kind : {LaneKind::Nvtx, LaneKind::GpuStream})
      for (std::uint32_t id = 0; id < m.span_count(kind); ++id) {
        const auto s = m.span(kind, id);
        if (q.matches_name(s.name)) add(kind, id, s.start_ns, s.end_ns);
      }
  }
  std::stable_sort(out.hits.begin(), out.hits.end(),
                   [](const SearchHit& a, const SearchHit& b) { return a.start_ns < b.start_ns; });
  return out;
}

}  // namespace collscope::gui
