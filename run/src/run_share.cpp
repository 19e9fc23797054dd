// A run share as bytes: its tables, then each file on its own; lengths as 64-bit counts, rows of plain values
// copied whole, strings by length.
#include <collscope/run/run_share.hpp>
#include <collscope/store/error.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace collscope::run {
namespace {

// Every member of RankTrace is written below: a new member changes its size and stops the build here until it is.
static_assert(sizeof(RankTrace) == 456, "RankTrace changed: encode and decode its new member in run_share.cpp");
static_assert(sizeof(Communicator) == 136, "Communicator changed: encode and decode its new member in run_share.cpp");

constexpr std::uint64_t kTablesMagic = 0x31'45'52'41'48'53'53'43;  // "CSSHARE1" (little-endian)
constexpr std::uint64_t kFileMagic = 0x31'45'4c'49'46'53'53'43;    // "CSSFILE1"

class ByteWriter {
 public:
  template <typename T>
  void value(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void text(const std::string& s) {
    value<std::uint64_t>(s.size());
    out_ += s;
  }
  template <typename T>
  void rows(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    value<std::uint64_t>(v.size());
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  ByteReader(std::string_view bytes, const std::string& origin) : bytes_(bytes), origin_(origin) {}
  template <typename T>
  T value() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  std::string text() {
    const auto n = count(1);
    return std::string(take(n), n);
  }
  template <typename T>
  std::vector<T> rows() {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto n = count(sizeof(T));
    std::vector<T> v(n);
    if (n > 0) std::memcpy(static_cast<void*>(v.data()), take(n * sizeof(T)), n * sizeof(T));
    return v;
  }
  // A count of items of `size` bytes each, no more than the bytes left could hold (a bad count is an error, not a
  // huge allocation).
  std::size_t count(std::size_t size) {
    const auto n = value<std::uint64_t>();
    if (n > (bytes_.size() - at_) / std::max<std::size_t>(size, 1)) fail("a count beyond its end");
    return static_cast<std::size_t>(n);
  }
  bool done() const { return at_ == bytes_.size(); }
  [[noreturn]] void fail(const char* what) const {
    throw InputError(fmt::format("{}: not a run share ({} at byte {} of {})", origin_, what, at_, bytes_.size()));
  }

 private:
  const char* take(std::size_t n) {
    if (n > bytes_.size() - at_) fail("cut short");
    const char* p = bytes_.data() + at_;
    at_ += n;
    return p;
  }
  std::string_view bytes_;
  const std::string& origin_;
  std::size_t at_ = 0;
};

void write_trace(ByteWriter& w, const RankTrace& t) {
  w.value<std::int32_t>(t.world_rank);
  w.text(t.path);
  w.text(t.host);
  w.text(t.schema_version);
  w.value<std::uint64_t>(t.meta.size());
  for (const auto& [k, v] : t.meta) w.text(k), w.text(v);
  for (const auto ns : {t.monotonic_start_ns, t.realtime_start_ns, t.monotonic_end_ns, t.realtime_end_ns,
                        t.events_dropped})
    w.value<std::int64_t>(ns);
  w.rows(t.collectives);
  w.rows(t.nonblocking_collectives);
  w.rows(t.point_to_point);
  w.rows(t.calls_in_flight);
  w.rows(t.left_out_calls);
  w.rows(t.nvtx_ranges);
  w.rows(t.gpu_activities);
  w.value<std::uint64_t>(t.threads.size());
  for (const auto& th : t.threads) w.value(th.id), w.value(th.tid), w.text(th.name);
  w.rows(t.buffers);
  w.rows(t.cpu_samples);
  w.rows(t.tracer_flushes);
}

RankTrace read_trace(ByteReader& r) {
  RankTrace t;
  t.world_rank = r.value<std::int32_t>();
  t.path = r.text();
  t.host = r.text();
  t.schema_version = r.text();
  for (auto n = r.count(16); n > 0; --n) {
    auto key = r.text();
    t.meta.emplace(std::move(key), r.text());
  }
  for (auto* ns : {&t.monotonic_start_ns, &t.realtime_start_ns, &t.monotonic_end_ns, &t.realtime_end_ns,
                   &t.events_dropped})
    *ns = r.value<std::int64_t>();
  t.collectives = r.rows<CollectiveCall>();
  t.nonblocking_collectives = r.rows<NonblockingCollective>();
  t.point_to_point = r.rows<PointToPointCall>();
  t.calls_in_flight = r.rows<CallInFlight>();
  t.left_out_calls = r.rows<LeftOutCall>();
  t.nvtx_ranges = r.rows<NvtxRange>();
  t.gpu_activities = r.rows<GpuActivity>();
  t.threads.resize(r.count(24));
  for (auto& th : t.threads) {
    th.id = r.value<std::int64_t>();
    th.tid = r.value<std::int64_t>();
    th.name = r.text();
  }
  t.buffers = r.rows<store::BufferRow>();
  t.cpu_samples = r.rows<store::CpuSampleRow>();
  t.tracer_flushes = r.rows<store::TracerFlushRow>();
  return t;
}

}  // namespace

std::string encode_share_tables(const RunShare& share) {
  ByteWriter w;
  w.value(kTablesMagic);
  w.value<std::uint64_t>(share.strings.size());
  for (const auto& s : share.strings) w.text(s);
  w.value<std::uint64_t>(share.communicators.size());
  for (const auto& c : share.communicators) {
    w.value(c.key);
    w.value(c.backend);
    w.value<std::int32_t>(c.size);
    w.rows(c.members);
    w.text(c.name);
    w.value<std::uint8_t>(c.parent.has_value());
    w.value<std::uint64_t>(c.parent.value_or(0));
    w.value<std::uint8_t>(c.color.has_value());
    w.value<std::int64_t>(c.color.value_or(0));
  }
  w.value<std::uint64_t>(share.files.size());
  return w.take();
}

std::string encode_loaded_file(const LoadedRankFile& f) {
  ByteWriter w;
  w.value(kFileMagic);
  w.value<std::uint64_t>(f.index);
  w.text(f.error);
  w.value<std::uint64_t>(f.problems.size());
  for (const auto& p : f.problems) w.text(p);
  w.value<std::uint8_t>(f.trace.has_value());
  if (f.trace) write_trace(w, *f.trace);
  return w.take();
}

std::pair<RunShare, std::size_t> decode_share_tables(std::string_view bytes, const std::string& origin) {
  ByteReader r(bytes, origin);
  if (r.value<std::uint64_t>() != kTablesMagic) r.fail("no share header");
  RunShare share;
  share.strings.resize(r.count(8));
  for (auto& s : share.strings) s = r.text();
  if (share.strings.empty() || !share.strings[0].empty()) r.fail("no empty string first");
  share.communicators.resize(r.count(8));
  for (auto& c : share.communicators) {
    c.key = r.value<std::uint64_t>();
    c.backend = r.value<store::Backend>();
    c.size = r.value<std::int32_t>();
    c.members = r.rows<int>();
    c.name = r.text();
    const bool has_parent = r.value<std::uint8_t>() != 0;
    const auto parent = r.value<std::uint64_t>();
    if (has_parent) c.parent = parent;
    const bool has_color = r.value<std::uint8_t>() != 0;
    const auto color = r.value<std::int64_t>();
    if (has_color) c.color = color;
  }
  const auto files = r.value<std::uint64_t>();
  if (!r.done()) r.fail("bytes after its end");
  if (files > std::uint64_t{1} << 32) r.fail("more files than any run has");
  return {std::move(share), static_cast<std::size_t>(files)};
}

LoadedRankFile decode_loaded_file(std::string_view bytes, const std::string& origin, const RunShare& tables) {
  ByteReader r(bytes, origin);
  if (r.value<std::uint64_t>() != kFileMagic) r.fail("no file header");
  LoadedRankFile f;
  f.index = r.value<std::uint64_t>();
  f.error = r.text();
  f.problems.resize(r.count(8));
  for (auto& p : f.problems) p = r.text();
  if (r.value<std::uint8_t>() != 0) f.trace = read_trace(r);
  if (!r.done()) r.fail("bytes after its end");
  if (!f.trace) return f;
  // Every index the trace holds points into its share's tables (the assembly renumbers through them).
  const auto strings = static_cast<std::int32_t>(tables.strings.size());
  const auto comms = static_cast<std::int32_t>(tables.communicators.size());
  const auto in = [](std::int32_t i, std::int32_t n) { return i >= 0 && i < n; };
  const auto& t = *f.trace;
  for (const auto& c : t.collectives)
    if (!in(c.comm, comms) || !in(c.datatype, strings)) r.fail("a call naming no communicator or string");
  for (const auto& c : t.calls_in_flight)
    if (!in(c.call.comm, comms) || !in(c.call.datatype, strings)) r.fail("a call naming no communicator or string");
  for (const auto& p : t.point_to_point)
    if (!in(p.comm, comms)) r.fail("a message naming no communicator");
  for (const auto& l : t.left_out_calls)
    if (!in(l.comm, comms)) r.fail("a call naming no communicator");
  for (const auto& n : t.nvtx_ranges)
    if (!in(n.name, strings)) r.fail("a range naming no string");
  for (const auto& g : t.gpu_activities)
    if (!in(g.name, strings)) r.fail("an activity naming no string");
  return f;
}

}  // namespace collscope::run
