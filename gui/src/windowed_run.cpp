// The view cache of a large run and the windows read from it (see windowed_run.hpp).
//
// File layout (native byte order: a cache is read on the machine that wrote it, and one of another format version
// or byte order is ignored and rewritten):
//   header    magic, format version, struct layout, buckets per rank, the rank files' fingerprint, duration and
//             bucket width (ns)
//   contents  length-prefixed: the run without its events, clocks, instances, summaries, steps, findings, ...
//   tables    per rank and kind with events: kBuckets + 2 row offsets (bucket b holds the rows starting in it,
//             the last range the rows longer than a bucket), then the rows (run/'s structs, with their index in
//             the rank's vector so that a window keeps run/'s order)
//   index     per rank and kind: the file offset of its table (0: no events); per rank: its event count
//   trailer   the index's offset, magic
#include <collscope/gui/windowed_run.hpp>

#include <collscope/store/error.hpp>
#include <collscope/store/trace_reader.hpp>

#include <fmt/format.h>

#include <QMetaObject>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <utility>
#include <type_traits>

#include <fcntl.h>
#include <unistd.h>

namespace collscope::gui {
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'c', 's', 'v', 'i', 'e', 'w', '\0', '\1'};
constexpr std::uint32_t kFormatVersion = 1;  // raise it when the layout below changes
// Time buckets per rank over the run: a window reads whole buckets, so a window of a tenth of the run reads at most
// 2/256 of the run more than it needs; the bucket tables cost 1 KiB per rank and kind.
constexpr std::uint32_t kBuckets = 256;
constexpr int kKinds = 4;  // LaneKind order: collectives, NVTX ranges, GPU activities, point-to-point calls

// A row as the cache stores it: run/'s struct and its index in the rank's vector.
template <typename Row>
struct Stored {
  Row row;
  std::uint32_t index = 0;
};
// A collective keeps its non-blocking times beside it (RankTrace::nonblocking_collectives by call index).
struct StoredCollective {
  run::CollectiveCall row;
  run::NonblockingTimes nonblocking;
  std::uint32_t index = 0;
  std::uint32_t has_nonblocking = 0;
};

// The sizes of the structs the cache stores as bytes (run/'s rows, the summaries' rows): a cache written by a
// collscope whose structs differ is ignored, not misread.
std::uint64_t struct_layout() {
  std::uint64_t h = 0;
  for (const std::size_t size :
       {sizeof(StoredCollective), sizeof(Stored<run::NvtxRange>), sizeof(Stored<run::GpuActivity>),
        sizeof(Stored<run::PointToPointCall>), sizeof(run::InstanceSummary), sizeof(run::CallInFlight),
        sizeof(store::BufferRow), sizeof(LensRow), sizeof(Step), sizeof(StatisticsRow), sizeof(run::MatchedMessage),
        sizeof(run::MessageWait), sizeof(MatrixCell)})
    h = h * 1000003 + size;
  return h;
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 0xcbf29ce484222325ULL) {
  for (const unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// What identifies the run's contents: every rank file's name, size and modification time.
std::uint64_t run_fingerprint(const std::string& dir) {
  std::uint64_t h = fnv1a("collscope view cache");
  for (const auto& path : store::rank_files(dir)) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    const auto mtime = fs::last_write_time(path, ec).time_since_epoch().count();
    h = fnv1a(fmt::format("{}\n{}\n{}\n", fs::path(path).filename().string(), size, mtime), h);
  }
  return h;
}

// Sequential writer of the cache file.
class Writer {
 public:
  explicit Writer(std::string path) : path_(std::move(path)), f_(std::fopen(path_.c_str(), "wb")) {
    if (!f_) throw Error(fmt::format("{}: cannot write the view cache: {}", path_, std::strerror(errno)));
  }
  ~Writer() {
    if (f_) std::fclose(f_);
  }
  void close() {
    const bool ok = std::fflush(f_) == 0 && !std::ferror(f_);
    std::fclose(f_);
    f_ = nullptr;
    if (!ok) throw Error(fmt::format("{}: cannot write the view cache (disk full?)", path_));
  }
  std::uint64_t offset() const { return offset_; }
  void bytes(const void* p, std::size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) throw Error(fmt::format("{}: cannot write the view cache", path_));
    offset_ += n;
  }
  template <typename T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes(&v, sizeof v);
  }

 private:
  std::string path_;
  std::FILE* f_;
  std::uint64_t offset_ = 0;
};

// The contents section, built in memory (its length goes first). `blob(a, b, ...)` appends its arguments: strings
// and vectors with their length first, everything else as its bytes.
class Blob {
 public:
  template <typename... T>
  void operator()(const T&... v) {
    (put(v), ...);
  }
  std::vector<char> data;

 private:
  template <typename T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const char*>(&v);
    data.insert(data.end(), p, p + sizeof v);
  }
  void put(const std::string& s) {
    put<std::uint64_t>(s.size());
    data.insert(data.end(), s.begin(), s.end());
  }
  template <typename T>
  void put(const std::vector<T>& v) {
    put<std::uint64_t>(v.size());
    if constexpr (std::is_trivially_copyable_v<T>) {
      const auto* p = reinterpret_cast<const char*>(v.data());
      data.insert(data.end(), p, p + v.size() * sizeof(T));
    } else {
      for (const auto& e : v) put(e);
    }
  }
  void put(const std::map<std::string, std::string>& m) {
    put<std::uint64_t>(m.size());
    for (const auto& [k, v] : m) put(k), put(v);
  }
};

// Reads what Blob wrote, with the same argument lists: `in(a, b, ...)` fills its arguments.
class BlobReader {
 public:
  BlobReader(const std::vector<char>& data, const std::string& path) : p_(data.data()), end_(p_ + data.size()), path_(path) {}
  template <typename... T>
  void operator()(T&... v) {
    (get(v), ...);
  }

 private:
  template <typename T>
  void get(T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    take(&v, sizeof v);
  }
  void get(std::string& s) {
    const auto n = count(1);
    s.assign(p_, p_ + n);
    p_ += n;
  }
  template <typename T>
  void get(std::vector<T>& v) {
    if constexpr (std::is_trivially_copyable_v<T>) {
      v.resize(count(sizeof(T)));
      take(v.data(), v.size() * sizeof(T));
    } else {
      v.resize(count(1));
      for (auto& e : v) get(e);
    }
  }
  void get(std::map<std::string, std::string>& m) {
    for (auto n = count(1); n > 0; --n) {
      std::string k, v;
      get(k), get(v);
      m[std::move(k)] = std::move(v);
    }
  }
  // A length, checked against what is left (each element takes at least `min_bytes`).
  std::uint64_t count(std::uint64_t min_bytes) {
    std::uint64_t n = 0;
    get(n);
    if (n > static_cast<std::uint64_t>(end_ - p_) / std::max<std::uint64_t>(min_bytes, 1))
      throw Error(fmt::format("{}: view cache cut short", path_));
    return n;
  }
  void take(void* out, std::size_t n) {
    if (n > static_cast<std::size_t>(end_ - p_)) throw Error(fmt::format("{}: view cache cut short", path_));
    std::memcpy(out, p_, n);
    p_ += n;
  }
  const char* p_;
  const char* end_;
  const std::string& path_;
};

// Each cached struct's fields, listed once for both directions (Io: Blob, or BlobReader with non-const structs).
template <typename Io, typename V>
void each(Io& io, V& v);
template <typename Io, typename T>
void fields(Io& io, T& c) requires std::is_same_v<std::remove_const_t<T>, run::Communicator> {
  io(c.key, c.backend, c.size, c.members, c.name, c.display_name, c.parent, c.color);
}
template <typename Io, typename T>
void fields(Io& io, T& t) requires std::is_same_v<std::remove_const_t<T>, store::ThreadRow> {
  io(t.id, t.tid, t.name);
}
// A rank without its events (what the overview keeps).
template <typename Io, typename T>
void fields(Io& io, T& t) requires std::is_same_v<std::remove_const_t<T>, run::RankTrace> {
  io(t.world_rank, t.path, t.host, t.schema_version, t.meta, t.monotonic_start_ns, t.realtime_start_ns,
     t.monotonic_end_ns, t.realtime_end_ns, t.events_dropped, t.buffers, t.calls_in_flight);
  each(io, t.threads);
}
template <typename Io, typename T>
void fields(Io& io, T& c) requires std::is_same_v<std::remove_const_t<T>, run::ClockAlignment> {
  io(c.offset_ns, c.anchor_offset_ns, c.residual_ns, c.residual_p50_ns, c.instances_used, c.hosts, c.host_of_rank,
     c.origin_ns, c.realtime_origin_ns);
}
template <typename Io, typename T>
void fields(Io& io, T& s) requires std::is_same_v<std::remove_const_t<T>, CounterSeries> {
  io(s.t_ns, s.value, s.max, s.median);
}
template <typename Io, typename T>
void fields(Io& io, T& s) requires std::is_same_v<std::remove_const_t<T>, RunSummaries> {
  io(s.activity.bucket_ns, s.activity.buckets, s.activity.ranks, s.activity.late_ns, s.activity.wait_ns);
  io(s.heat.ranks, s.heat.steps, s.heat.from_steps, s.heat.step_start_ns, s.heat.late_ns, s.heat.scale_ns, s.lens);
  fields(io, s.busbw_gbps);
  fields(io, s.step_ns);
}
template <typename Io, typename T>
void fields(Io& io, T& f) requires std::is_same_v<std::remove_const_t<T>, Finding> {
  io(f.kind, f.severity, f.summary, f.suggestion, f.start_ns, f.end_ns, f.cost_ns, f.world_ranks);
}

// A vector of structs with fields(): its length, then each.
template <typename Io, typename V>
void each(Io& io, V& v) {
  auto n = static_cast<std::uint64_t>(v.size());
  io(n);
  if constexpr (!std::is_const_v<V>) v.resize(n);
  for (auto& e : v) fields(io, e);
}

// The run without its events: every rank's metadata, communicators, strings.
template <typename Io, typename R>
void run_fields(Io& io, R& r) {
  io(r.dir, r.world_size, r.strings, r.problems);
  each(io, r.communicators);
  each(io, r.ranks);
}

// The rows of one rank and kind as stored, and the run time of a stored row's start and end.
struct KindRows {
  template <typename Row>
  static std::int64_t start(const Row& r) { return r.start_ns; }
  template <typename Row>
  static std::int64_t end(const Row& r) { return std::max(r.end_ns, r.start_ns); }
};

// Writes one rank's rows of one kind as a bucket table; returns its offset (0 when there are none).
template <typename StoredRow, typename Rows, typename MakeStored>
std::uint64_t put_table(Writer& w, const Rows& rows, std::int64_t shift, std::int64_t bucket_ns, MakeStored make) {
  if (rows.empty()) return 0;
  std::vector<std::vector<StoredRow>> buckets(kBuckets + 1);  // the last: rows longer than a bucket
  for (std::uint32_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const std::int64_t start = KindRows::start(r) + shift, end = KindRows::end(r) + shift;
    const std::size_t b = end - start > bucket_ns
                              ? kBuckets
                              : static_cast<std::size_t>(std::clamp<std::int64_t>(start / bucket_ns, 0, kBuckets - 1));
    buckets[b].push_back(make(i));
  }
  const std::uint64_t at = w.offset();
  std::uint32_t offset = 0;
  for (const auto& b : buckets) {
    w.pod(offset);
    offset += static_cast<std::uint32_t>(b.size());
  }
  w.pod(offset);
  for (const auto& b : buckets) w.bytes(b.data(), b.size() * sizeof(StoredRow));
  return at;
}

void pread_exact(int fd, void* out, std::size_t n, std::uint64_t at, const std::string& path) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    const auto got = ::pread(fd, p, n, static_cast<off_t>(at));
    if (got <= 0) throw Error(fmt::format("{}: view cache cut short", path));
    p += got, n -= static_cast<std::size_t>(got), at += static_cast<std::uint64_t>(got);
  }
}

// The rows of one rank and kind overlapping [t0, t1] (run time), in the rank's original order.
template <typename StoredRow, typename RowOf>
std::vector<StoredRow> read_table(int fd, const std::string& path, std::uint64_t at, std::int64_t shift,
                                  std::int64_t bucket_ns, std::int64_t t0, std::int64_t t1, RowOf row_of) {
  std::vector<StoredRow> out;
  if (at == 0) return out;
  std::array<std::uint32_t, kBuckets + 2> offsets;
  pread_exact(fd, offsets.data(), sizeof offsets, at, path);
  const std::uint64_t rows_at = at + sizeof offsets;
  // Rows no longer than a bucket that overlap [t0, t1] start in [t0 - bucket, t1].
  const auto bucket = [&](std::int64_t t) { return static_cast<std::size_t>(std::clamp<std::int64_t>(t / bucket_ns, 0, kBuckets - 1)); };
  const std::size_t b0 = bucket(t0 - bucket_ns), b1 = bucket(t1);
  auto read_range = [&](std::uint32_t from, std::uint32_t to) {
    if (to <= from) return;
    const auto old = out.size();
    out.resize(old + (to - from));
    pread_exact(fd, out.data() + old, (to - from) * sizeof(StoredRow), rows_at + std::uint64_t{from} * sizeof(StoredRow), path);
  };
  read_range(offsets[b0], offsets[b1 + 1]);
  read_range(offsets[kBuckets], offsets[kBuckets + 1]);
  std::erase_if(out, [&](const StoredRow& s) {
    const auto& r = row_of(s);
    return KindRows::end(r) + shift < t0 || KindRows::start(r) + shift > t1;
  });
  std::sort(out.begin(), out.end(), [](const StoredRow& a, const StoredRow& b) { return a.index < b.index; });
  return out;
}

std::int64_t env_int(const char* name, std::int64_t fallback) {
  const auto v = env_or_empty(name);
  if (v.empty()) return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  return end && *end == '\0' && n >= 0 ? n : fallback;
}

}  // namespace

struct WindowedRun::Contents {  // the overview
  run::Run skeleton;  // every rank, no events
  run::ClockAlignment clocks;
  std::vector<run::InstanceSummary> instances;
  std::vector<std::size_t> comm_first;
  int reference_comm = -1;
  std::shared_ptr<const RunSummaries> summaries;
  std::vector<Step> steps;
  std::vector<Finding> findings;
  std::vector<StatisticsRow> statistics;
  std::vector<std::string> warnings;
  std::string dir;
  run::MatchedMessages messages;  // point-to-point, in the whole run's calls
  run::PointToPointWaits waits;   // MessageWait::message indexes `messages`
  std::vector<MatrixCell> matrix;
};

namespace {

template <typename Io, typename C>
void contents_fields(Io& io, C& c) {
  run_fields(io, c.skeleton);
  fields(io, c.clocks);
  io(c.instances, c.comm_first, c.reference_comm);
  if constexpr (std::is_const_v<C>) {
    fields(io, *c.summaries);
  } else {
    auto summaries = std::make_shared<RunSummaries>();
    fields(io, *summaries);
    c.summaries = std::move(summaries);
  }
  io(c.steps);
  each(io, c.findings);
  io(c.statistics, c.warnings, c.dir);
  io(c.messages.messages, c.messages.unmatched_sends, c.messages.unmatched_receives, c.messages.unknown_source);
  io(c.waits.waits, c.waits.messages, c.waits.unmatched_sends, c.waits.unmatched_receives, c.waits.unknown_source);
  io(c.matrix);
}

}  // namespace

namespace {

// The run's messages (and their waits) whose two calls a window holds, in the window's calls. `loaded[r]`: the
// run's index of each of rank r's calls in the window, ascending (the window keeps run/'s order).
std::pair<run::MatchedMessages, run::PointToPointWaits> messages_within(
    const run::MatchedMessages& all, const run::PointToPointWaits& all_waits,
    const std::vector<std::vector<std::uint32_t>>& loaded) {
  auto in_window = [&](std::int32_t rank, std::int32_t call) -> std::int32_t {
    const auto& v = loaded[static_cast<std::size_t>(rank)];
    const auto it = std::lower_bound(v.begin(), v.end(), static_cast<std::uint32_t>(call));
    return it != v.end() && *it == static_cast<std::uint32_t>(call) ? static_cast<std::int32_t>(it - v.begin()) : -1;
  };
  run::MatchedMessages out;
  std::vector<std::int32_t> renumbered(all.messages.size(), -1);  // the run's message index -> the window's
  for (std::size_t k = 0; k < all.messages.size(); ++k) {
    const auto& m = all.messages[k];
    if (loaded[static_cast<std::size_t>(m.send_rank)].empty() || loaded[static_cast<std::size_t>(m.recv_rank)].empty()) continue;
    const auto send = in_window(m.send_rank, m.send_call), recv = in_window(m.recv_rank, m.recv_call);
    if (send < 0 || recv < 0) continue;
    renumbered[k] = static_cast<std::int32_t>(out.messages.size());
    out.messages.push_back({.send_rank = m.send_rank, .send_call = send, .recv_rank = m.recv_rank, .recv_call = recv});
  }
  // The counts are the run's (the Messages panel says them), the waits the window's.
  run::PointToPointWaits waits{.waits = {},
                               .messages = all_waits.messages,
                               .unmatched_sends = all_waits.unmatched_sends,
                               .unmatched_receives = all_waits.unmatched_receives,
                               .unknown_source = all_waits.unknown_source};
  for (auto w : all_waits.waits)
    if (renumbered[static_cast<std::size_t>(w.message)] >= 0) {
      w.message = renumbered[static_cast<std::size_t>(w.message)];
      waits.waits.push_back(w);
    }
  return {std::move(out), std::move(waits)};
}

}  // namespace

WindowedRunPolicy windowed_run_policy() {
  WindowedRunPolicy p;
  p.min_events = env_int("COLLSCOPE_VIEW_WINDOWED_MIN_EVENTS", p.min_events);
  p.window_events = std::max<std::int64_t>(1, env_int("COLLSCOPE_VIEW_WINDOW_EVENTS", p.window_events));
  return p;
}

std::string view_cache_path(const std::string& run_dir) {
  std::string dir = env_or_empty("COLLSCOPE_VIEW_CACHE_DIR");
  if (dir.empty()) {
    const auto xdg = env_or_empty("XDG_CACHE_HOME");
    dir = !xdg.empty() ? xdg + "/collscope/views" : env_or_empty("HOME") + "/.cache/collscope/views";
  }
  std::error_code ec;
  auto abs = fs::weakly_canonical(fs::absolute(run_dir, ec), ec);
  if (ec) abs = run_dir;
  auto name = abs.filename().string();
  if (name.empty()) name = "run";
  return fmt::format("{}/{}-{:016x}.view", dir, name, fnv1a(abs.string()));
}

void write_view_cache(const RunData& analyzed, const std::string& path) {
  const auto& m = analyzed.model();
  const auto& run = m.run();
  if (!analyzed.summaries) throw Error(fmt::format("{}: no summaries to cache for {}", path, analyzed.dir));
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  // The events take ~80 B each (docs/performance.md): a cache that would fill more than half the free space is
  // not written (the run is then read whole at every opening, as a small one).
  const double needed_bytes = 100.0 * double(m.event_count()) + 64e6;
  if (const auto space = fs::space(fs::path(path).parent_path(), ec); !ec && double(space.available) < 2 * needed_bytes)
    throw Error(fmt::format("{}: view cache not written: it would take ~{:.0f} MB of the {:.0f} MB free", path,
                            needed_bytes / 1e6, double(space.available) / 1e6));
  const std::string tmp = fmt::format("{}.tmp-{}", path, ::getpid());
  const std::int64_t duration = std::max<std::int64_t>(m.duration_ns(), 1);
  const std::int64_t bucket_ns = std::max<std::int64_t>(1, (duration + kBuckets - 1) / kBuckets);
  {
    Writer w(tmp);
    w.bytes(kMagic, sizeof kMagic);
    w.pod(kFormatVersion);
    w.pod(struct_layout());
    w.pod(kBuckets);
    w.pod(run_fingerprint(analyzed.dir));
    w.pod(duration);
    w.pod(bucket_ns);

    run::Run skeleton;  // the run without its events
    skeleton.dir = run.dir, skeleton.world_size = run.world_size, skeleton.strings = run.strings;
    skeleton.problems = run.problems, skeleton.communicators = run.communicators;
    skeleton.ranks.reserve(run.ranks.size());
    for (const auto& t : run.ranks) {
      run::RankTrace s;
      s.world_rank = t.world_rank, s.path = t.path, s.host = t.host, s.schema_version = t.schema_version;
      s.meta = t.meta, s.events_dropped = t.events_dropped;
      s.monotonic_start_ns = t.monotonic_start_ns, s.realtime_start_ns = t.realtime_start_ns;
      s.monotonic_end_ns = t.monotonic_end_ns, s.realtime_end_ns = t.realtime_end_ns;
      s.threads = t.threads, s.buffers = t.buffers, s.calls_in_flight = t.calls_in_flight;
      skeleton.ranks.push_back(std::move(s));
    }
    const WindowedRun::Contents contents{.skeleton = std::move(skeleton),
                                         .clocks = m.clocks(),
                                         .instances = m.matched().instances,
                                         .comm_first = m.matched().comm_first,
                                         .reference_comm = m.matched().reference_comm,
                                         .summaries = analyzed.summaries,
                                         .steps = analyzed.steps,
                                         .findings = analyzed.findings,
                                         .statistics = analyzed.statistics,
                                         .warnings = analyzed.warnings,
                                         .dir = analyzed.dir,
                                         .messages = m.messages().matched(),
                                         .waits = m.messages().waits(),
                                         .matrix = m.messages().matrix()};
    Blob b;
    contents_fields(b, contents);
    w.pod<std::uint64_t>(b.data.size());
    w.bytes(b.data.data(), b.data.size());

    std::vector<std::array<std::uint64_t, kKinds>> tables(run.ranks.size());
    std::vector<std::int64_t> events(run.ranks.size());
    for (std::size_t r = 0; r < run.ranks.size(); ++r) {
      const auto& t = run.ranks[r];
      const std::int64_t shift = m.run_time(static_cast<int>(r), 0);
      std::vector<const run::NonblockingTimes*> nonblocking(t.collectives.size(), nullptr);
      for (const auto& nb : t.nonblocking_collectives) nonblocking[static_cast<std::size_t>(nb.call)] = &nb.times;
      tables[r][0] = put_table<StoredCollective>(w, t.collectives, shift, bucket_ns, [&](std::uint32_t i) {
        StoredCollective s{};
        s.row = t.collectives[i];
        s.index = i;
        if (nonblocking[i]) s.nonblocking = *nonblocking[i], s.has_nonblocking = 1;
        return s;
      });
      auto stored = [](const auto& rows) {
        return [&rows](std::uint32_t i) {
          Stored<std::decay_t<decltype(rows[0])>> s{};
          s.row = rows[i];
          s.index = i;
          return s;
        };
      };
      tables[r][1] = put_table<Stored<run::NvtxRange>>(w, t.nvtx_ranges, shift, bucket_ns, stored(t.nvtx_ranges));
      tables[r][2] = put_table<Stored<run::GpuActivity>>(w, t.gpu_activities, shift, bucket_ns, stored(t.gpu_activities));
      tables[r][3] = put_table<Stored<run::PointToPointCall>>(w, t.point_to_point, shift, bucket_ns, stored(t.point_to_point));
      events[r] = static_cast<std::int64_t>(t.collectives.size() + t.nvtx_ranges.size() + t.gpu_activities.size() +
                                            t.point_to_point.size());
    }
    const std::uint64_t index_at = w.offset();
    w.pod<std::uint64_t>(run.ranks.size());
    for (const auto& t : tables) w.bytes(t.data(), sizeof t);
    w.bytes(events.data(), events.size() * sizeof(std::int64_t));
    w.pod(index_at);
    w.bytes(kMagic, sizeof kMagic);
    w.close();
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error(fmt::format("{}: cannot write the view cache: {}", path, ec.message()));
  }
}

WindowedRun::~WindowedRun() {
  if (fd_ >= 0) ::close(fd_);
}

std::shared_ptr<const WindowedRun> WindowedRun::open(const std::string& run_dir, const std::string& cache_path) {
  const int fd = ::open(cache_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  std::shared_ptr<WindowedRun> w(new WindowedRun);
  w->fd_ = fd;
  w->path_ = cache_path;
  try {
    char magic[8];
    std::uint32_t version = 0, buckets = 0;
    std::uint64_t fingerprint = 0, at = 0;
    auto read = [&](auto& v) {
      pread_exact(fd, &v, sizeof v, at, cache_path);
      at += sizeof v;
    };
    std::uint64_t layout = 0;
    read(magic), read(version), read(layout), read(buckets), read(fingerprint), read(w->duration_ns_), read(w->bucket_ns_);
    if (std::memcmp(magic, kMagic, sizeof magic) != 0 || version != kFormatVersion || layout != struct_layout() ||
        buckets != kBuckets)
      return nullptr;
    if (fingerprint != run_fingerprint(run_dir)) return nullptr;  // the run changed since
    std::uint64_t contents_size = 0;
    read(contents_size);
    std::vector<char> blob(contents_size);
    pread_exact(fd, blob.data(), blob.size(), at, cache_path);
    BlobReader in(blob, cache_path);
    auto c = std::make_shared<Contents>();
    contents_fields(in, *c);
    for (auto& f : c->findings) f.evidence = kNoInstance;  // a collective id of the whole-run model, not a window's
    w->contents_ = std::move(c);

    // The index, from the trailer.
    struct Trailer {
      std::uint64_t index_at;
      char magic[8];
    } trailer{};
    const auto size = static_cast<std::uint64_t>(::lseek(fd, 0, SEEK_END));
    if (size < sizeof trailer) return nullptr;
    pread_exact(fd, &trailer, sizeof trailer, size - sizeof trailer, cache_path);
    if (std::memcmp(trailer.magic, kMagic, sizeof kMagic) != 0) return nullptr;
    std::uint64_t ranks = 0;
    pread_exact(fd, &ranks, sizeof ranks, trailer.index_at, cache_path);
    if (ranks != w->contents_->skeleton.ranks.size()) return nullptr;
    w->table_offset_.resize(ranks);
    w->events_per_rank_.resize(ranks);
    pread_exact(fd, w->table_offset_.data(), ranks * sizeof(w->table_offset_[0]), trailer.index_at + sizeof ranks, cache_path);
    pread_exact(fd, w->events_per_rank_.data(), ranks * sizeof(std::int64_t),
                trailer.index_at + sizeof ranks + ranks * sizeof(w->table_offset_[0]), cache_path);
    for (const auto e : w->events_per_rank_) w->event_count_ += e;
  } catch (const Error&) {
    return nullptr;  // a cache cut short (a writer killed before its rename cannot leave one; a full disk can)
  }
  return w;
}

std::shared_ptr<const RunData> WindowedRun::overview() const { return load(RunWindow{}); }

std::int64_t WindowedRun::estimated_events(const RunWindow& window) const {
  const double fraction =
      std::min(1.0, double(window.end_ns - window.start_ns) / double(std::max<std::int64_t>(duration_ns_, 1)));
  std::int64_t events = 0;
  for (const int r : window.ranks())
    if (r >= 0 && r < rank_count()) events += events_per_rank_[static_cast<std::size_t>(r)];
  return static_cast<std::int64_t>(double(events) * fraction);
}

std::shared_ptr<const RunData> WindowedRun::load(const RunWindow& requested) const {
  const auto& c = *contents_;
  RunWindow window = requested;
  window.rank_begin = std::clamp(window.rank_begin, 0, rank_count());
  window.rank_end = std::clamp(window.rank_end, window.rank_begin, rank_count());
  auto run = std::make_shared<run::Run>(c.skeleton);
  run::MatchedRun matched;
  matched.instances = c.instances;
  matched.comm_first = c.comm_first;
  matched.reference_comm = c.reference_comm;
  matched.call_index.assign(run->ranks.size(), std::vector<std::vector<std::int32_t>>(run->communicators.size()));
  std::vector<std::vector<std::uint32_t>> p2p_index(run->ranks.size());  // per rank: each loaded call's index in the run
  std::erase_if(window.pinned_ranks, [&](int r) { return r < 0 || r >= rank_count(); });
  for (const int r : window.ranks()) {
    auto& t = run->ranks[static_cast<std::size_t>(r)];
    const auto& tables = table_offset_[static_cast<std::size_t>(r)];
    const std::int64_t shift = c.clocks.offset_ns[static_cast<std::size_t>(r)] - c.clocks.origin_ns;
    const std::int64_t t0 = window.start_ns, t1 = window.end_ns;
    for (const auto& s : read_table<StoredCollective>(fd_, path_, tables[0], shift, bucket_ns_, t0, t1,
                                                      [](const StoredCollective& s) -> const auto& { return s.row; })) {
      if (s.has_nonblocking)
        t.nonblocking_collectives.push_back({static_cast<std::int32_t>(t.collectives.size()), s.nonblocking});
      auto& seqs = matched.call_index[static_cast<std::size_t>(r)][static_cast<std::size_t>(s.row.comm)];
      if (s.row.seq >= 0) {
        if (seqs.size() <= static_cast<std::size_t>(s.row.seq)) seqs.resize(static_cast<std::size_t>(s.row.seq) + 1, -1);
        seqs[static_cast<std::size_t>(s.row.seq)] = static_cast<std::int32_t>(t.collectives.size());
      }
      t.collectives.push_back(s.row);
    }
    auto rows_of = [&](auto& into, std::uint64_t at) {
      using Row = typename std::decay_t<decltype(into)>::value_type;
      for (const auto& s : read_table<Stored<Row>>(fd_, path_, at, shift, bucket_ns_, t0, t1,
                                                   [](const Stored<Row>& s) -> const auto& { return s.row; }))
        into.push_back(s.row);
    };
    rows_of(t.nvtx_ranges, tables[1]);
    rows_of(t.gpu_activities, tables[2]);
    for (const auto& s : read_table<Stored<run::PointToPointCall>>(
             fd_, path_, tables[3], shift, bucket_ns_, t0, t1,
             [](const Stored<run::PointToPointCall>& s) -> const auto& { return s.row; })) {
      t.point_to_point.push_back(s.row);
      p2p_index[static_cast<std::size_t>(r)].push_back(s.index);
    }
  }
  auto out = std::make_shared<RunData>();
  out->dir = c.dir;
  auto [messages, waits] = messages_within(c.messages, c.waits, p2p_index);
  out->timeline = std::make_shared<const TimelineModel>(
      run, c.clocks, std::move(matched),
      TimelineModel::WholeRun{
          .duration_ns = duration_ns_, .messages = std::move(messages), .waits = std::move(waits), .matrix = c.matrix});
  out->steps = c.steps;
  out->findings = c.findings;
  out->statistics = c.statistics;
  out->warnings = c.warnings;
  out->analyzed = true;
  out->summaries = c.summaries;
  out->windowed = shared_from_this();
  out->window = window;
  return out;
}

RunWindowLoader::RunWindowLoader(QObject* parent) : QObject(parent) {
  qRegisterMetaType<std::shared_ptr<const collscope::gui::RunData>>();
}

RunWindowLoader::~RunWindowLoader() {
  if (worker_.joinable()) worker_.join();
}

void RunWindowLoader::setRun(std::shared_ptr<const WindowedRun> run) {
  run_ = std::move(run);
  has_pending_ = false;
}

void RunWindowLoader::request(const RunWindow& window) {
  pending_ = window;
  has_pending_ = true;
  if (!worker_.joinable()) startNext();
}

void RunWindowLoader::startNext() {
  if (!has_pending_ || !run_) return;
  has_pending_ = false;
  in_flight_ = pending_;
  worker_ = std::thread([this, run = run_, window = in_flight_, retired = std::move(retired_)]() mutable {
    retired.clear();
    std::shared_ptr<const RunData> data;
    QString error;
    try {
      data = run->load(window);
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
    }
    // Back on the GUI thread: this object outlives the thread (its destructor joins it).
    QMetaObject::invokeMethod(this, [this, data, error, run] {
      if (worker_.joinable()) worker_.join();
      if (run == run_) {
        if (data) emit loaded(data);
        else emit failed(error);
      }
      startNext();
    }, Qt::QueuedConnection);
  });
  retired_.clear();  // moved into the worker
}

}  // namespace collscope::gui
