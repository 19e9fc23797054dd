// Loads a run for the viewer. Reads only the columns the timeline needs, one worker thread per core over
// the rank files, then builds the lanes: per rank, one lane per thread with collectives, one per NVTX
// nesting depth and thread, one per GPU stream; events sorted by start inside each lane.
#include <collscope/gui/run_loader.hpp>

#include <collscope/store/error.hpp>
#include <collscope/store/trace_reader.hpp>

#include "run_analysis.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <regex>
#include <thread>
#include <unordered_map>

namespace collscope::gui {
namespace {

namespace fs = std::filesystem;

struct LocalLane {
  LaneKind kind;
  std::int64_t key;
  std::string label;
};

// One rank file read into rows with file-local lane and string ids.
struct RankPart {
  RankInfo info;
  std::vector<std::string> strings;
  std::vector<LocalLane> lanes;
  EventVector<CollectiveEvent> collectives;  // .lane = local lane
  EventVector<std::uint64_t> comm_keys;      // per collective
  EventVector<std::int64_t> seqs;            // per collective
  EventVector<std::uint16_t> comm_sizes;     // per collective
  EventVector<SpanEvent> nvtx;               // .lane local, .name local string id
  EventVector<SpanEvent> gpu;
  std::int64_t anchor_offset_ns = 0;         // CLOCK_REALTIME - CLOCK_MONOTONIC at start; 0 when unknown
  std::int64_t min_start_ns = std::numeric_limits<std::int64_t>::max();  // earliest event, rank's clock
  std::string error;
};

// A read-only connection for the big tables; errors name the file.
class RawTable {
 public:
  explicit RawTable(std::string path) : path_(std::move(path)) {
    if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) fail();
    sqlite3_exec(db_, "PRAGMA cache_size=-65536; PRAGMA mmap_size=1073741824", nullptr, nullptr, nullptr);
  }
  ~RawTable() { sqlite3_close(db_); }
  RawTable(const RawTable&) = delete;
  RawTable& operator=(const RawTable&) = delete;
  template <typename Fn>
  void each(const char* sql, Fn&& fn) {
    sqlite3_stmt* q = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &q, nullptr) != SQLITE_OK) fail();
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) fn(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) fail();
  }

 private:
  [[noreturn]] void fail() const {
    throw InputError(fmt::format("{}: cannot read trace: {}", path_, db_ ? sqlite3_errmsg(db_) : "out of memory"));
  }
  std::string path_;
  sqlite3* db_ = nullptr;
};

// Local lane of (kind, key); consecutive rows nearly always hit the last lane, so that is checked first.
class LaneCache {
 public:
  explicit LaneCache(std::vector<LocalLane>& lanes) : lanes_(lanes) {}
  template <typename Label>
  std::uint16_t get(LaneKind kind, std::int64_t key, Label&& label) {
    if (last_ >= 0 && lanes_[last_].kind == kind && lanes_[last_].key == key) return static_cast<std::uint16_t>(last_);
    auto [it, inserted] = index_.try_emplace({static_cast<int>(kind), key}, static_cast<std::uint16_t>(lanes_.size()));
    if (inserted) lanes_.push_back({kind, key, label()});
    last_ = it->second;
    return it->second;
  }

 private:
  std::vector<LocalLane>& lanes_;
  std::map<std::pair<int, std::int64_t>, std::uint16_t> index_;
  int last_ = -1;
};

void read_rank(const fs::path& file, int world_rank_from_name, RankPart& part) {
  store::TraceReader reader(file.string());
  part.info.file = file.string();
  part.info.meta = reader.meta();
  part.info.world_rank = static_cast<int>(reader.meta_int(store::meta_key::kWorldRank).value_or(world_rank_from_name));
  part.info.host = reader.meta_value(store::meta_key::kHost).value_or("?");
  part.info.events_dropped = reader.meta_int(store::meta_key::kEventsDropped).value_or(0);
  auto mono = reader.meta_int(store::meta_key::kMonotonicStart);
  auto real = reader.meta_int(store::meta_key::kRealtimeStart);
  if (mono && real) part.anchor_offset_ns = *real - *mono;
  part.strings = reader.strings();

  std::unordered_map<std::int64_t, std::string> thread_names;
  for (const auto& t : reader.threads())
    thread_names[t.id] = t.name.empty() ? fmt::format("tid {}", t.tid) : fmt::format("{} ({})", t.name, t.tid);
  auto thread_label = [&](std::int64_t id) {
    auto it = thread_names.find(id);
    return it != thread_names.end() ? it->second : fmt::format("thread {}", id);
  };
  std::unordered_map<std::int64_t, std::pair<std::uint64_t, std::uint16_t>> comms;  // id -> key, size
  for (const auto& c : reader.communicators()) comms[c.id] = {c.key, static_cast<std::uint16_t>(c.size)};

  // Fusion buffers: one address reused for different sizes. Capacity: the job's HOROVOD_FUSION_THRESHOLD
  // when it set one (bytes), else the largest use seen.
  std::int64_t threshold = 0;
  if (auto it = part.info.meta.find("env.HOROVOD_FUSION_THRESHOLD"); it != part.info.meta.end())
    threshold = std::atoll(it->second.c_str());
  std::unordered_map<std::uint64_t, std::int64_t> fusion_capacity;
  for (const auto& b : reader.buffers())
    if (b.uses >= 2 && b.bytes_min < b.bytes_max)
      fusion_capacity[b.address] = threshold > 0 ? std::max(threshold, b.bytes_max) : b.bytes_max;

  // The large tables are read directly, only the columns the timeline draws (schema v1, checked by the
  // TraceReader above): 3-4x faster than materialising full rows, which matters at 1 M+ events.
  RawTable table(file.string());
  LaneCache lanes(part.lanes);
  const auto rows = reader.row_count("collectives");
  part.collectives.reserve(rows);
  part.comm_keys.reserve(rows);
  part.seqs.reserve(rows);
  part.comm_sizes.reserve(rows);
  // A call of `thread` on file communicator `comm`: on its thread's lane, with the matching key (communicator
  // key, seq) kept beside it. Consecutive calls mostly share a communicator, so the last lookup is kept.
  std::int64_t last_comm = -1;
  std::pair<std::uint64_t, std::uint16_t> comm_info{0, 0};
  auto add_call = [&](CollectiveEvent e, std::int64_t thread, std::int64_t comm, std::int64_t seq) {
    e.end_ns = std::max(e.end_ns, e.start_ns);
    e.lane = lanes.get(LaneKind::Collectives, thread, [&] { return "MPI/NCCL " + thread_label(thread); });
    if (comm != last_comm) {
      auto it = comms.find(comm);
      comm_info = it != comms.end() ? it->second : std::pair<std::uint64_t, std::uint16_t>{static_cast<std::uint64_t>(comm), 0};
      last_comm = comm;
    }
    part.comm_keys.push_back(comm_info.first);
    part.comm_sizes.push_back(comm_info.second);
    part.seqs.push_back(seq);
    part.min_start_ns = std::min(part.min_start_ns, e.start_ns);
    part.collectives.push_back(e);
  };
  table.each("SELECT id, comm, seq, op, bytes, sendbuf, thread, start_ns, end_ns FROM collectives ORDER BY id",
             [&](sqlite3_stmt* q) {
    CollectiveEvent e;
    e.row_id = static_cast<std::uint32_t>(sqlite3_column_int64(q, 0));
    const std::int64_t op = sqlite3_column_int64(q, 3);
    e.op = op >= 0 && op < store::kOpCount ? static_cast<store::Op>(op) : store::Op::Unknown;
    e.bytes = sqlite3_column_int64(q, 4);
    const auto sendbuf = static_cast<std::uint64_t>(sqlite3_column_int64(q, 5));
    e.start_ns = sqlite3_column_int64(q, 7);
    e.end_ns = sqlite3_column_int64(q, 8);
    if (!fusion_capacity.empty())
      if (auto it = fusion_capacity.find(sendbuf); it != fusion_capacity.end() && it->second > 0)
        e.fusion_fill_percent = static_cast<std::uint8_t>(std::clamp<std::int64_t>((e.bytes * 100 + it->second - 1) / it->second, 1, 100));
    add_call(e, sqlite3_column_int64(q, 6), sqlite3_column_int64(q, 1), sqlite3_column_int64(q, 2));
  });
  // Calls the job hung in (schema 1.1; a few rows at most): drawn as collectives that never returned.
  for (const auto& c : reader.calls_in_flight()) {
    CollectiveEvent e;
    e.op = c.op;
    e.bytes = c.bytes;
    e.start_ns = c.start_ns;
    e.end_ns = c.seen_ns;
    e.flags = kCallInFlight;
    add_call(e, c.thread, c.comm, c.seq);
  }
  part.nvtx.reserve(reader.row_count("nvtx_ranges"));
  table.each("SELECT name, kind, start_ns, end_ns, thread, depth FROM nvtx_ranges ORDER BY id", [&](sqlite3_stmt* q) {
    SpanEvent s;
    s.name = static_cast<std::uint32_t>(sqlite3_column_int64(q, 0));
    s.kind = static_cast<std::uint8_t>(sqlite3_column_int64(q, 1));
    s.start_ns = sqlite3_column_int64(q, 2);
    s.end_ns = sqlite3_column_type(q, 3) == SQLITE_NULL ? s.start_ns : std::max<std::int64_t>(sqlite3_column_int64(q, 3), s.start_ns);
    const std::int64_t thread = sqlite3_column_int64(q, 4);
    const int depth = static_cast<int>(std::clamp<std::int64_t>(sqlite3_column_int64(q, 5), 0, 63));
    s.lane = lanes.get(LaneKind::Nvtx, thread * 64 + depth,
                       [&] { return fmt::format("NVTX {} [{}]", thread_label(thread), depth); });
    part.min_start_ns = std::min(part.min_start_ns, s.start_ns);
    part.nvtx.push_back(s);
  });
  part.gpu.reserve(reader.row_count("gpu_activities"));
  table.each("SELECT kind, name, device, stream, start_ns, end_ns FROM gpu_activities ORDER BY id", [&](sqlite3_stmt* q) {
    SpanEvent s;
    s.kind = static_cast<std::uint8_t>(sqlite3_column_int64(q, 0));
    s.name = static_cast<std::uint32_t>(sqlite3_column_int64(q, 1));
    const auto device = sqlite3_column_int64(q, 2);
    const auto stream = static_cast<std::uint64_t>(sqlite3_column_int64(q, 3));
    s.start_ns = sqlite3_column_int64(q, 4);
    s.end_ns = std::max<std::int64_t>(sqlite3_column_int64(q, 5), s.start_ns);
    const auto key = (device << 40) | static_cast<std::int64_t>(stream & 0xffffffffffULL);
    s.lane = lanes.get(LaneKind::GpuStream, key, [&] { return fmt::format("GPU {} stream {}", device, stream); });
    part.min_start_ns = std::min(part.min_start_ns, s.start_ns);
    part.gpu.push_back(s);
  });
}

// Stable permutation ordering n items by bucket (0 .. buckets-1): a counting sort, O(n + buckets).
template <typename BucketOf>
EventVector<std::uint32_t> bucket_order(std::size_t n, std::size_t buckets, BucketOf&& bucket_of) {
  std::vector<std::uint32_t> offset(buckets + 1, 0);
  for (std::size_t i = 0; i < n; ++i) ++offset[bucket_of(i) + 1];
  for (std::size_t b = 0; b < buckets; ++b) offset[b + 1] += offset[b];
  EventVector<std::uint32_t> perm(n);
  for (std::size_t i = 0; i < n; ++i) perm[offset[bucket_of(i)]++] = static_cast<std::uint32_t>(i);
  return perm;
}

// Permutation ordering events by (lane, start): bucket by lane (lane_of(event) in 0 .. lanes-1), then sort
// only lanes that are not already in start order (a rank's calls on one thread nearly always are).
template <typename Events, typename LaneOf>
EventVector<std::uint32_t> lane_start_order(const Events& events, std::size_t lanes, LaneOf&& lane_of) {
  auto perm = bucket_order(events.size(), lanes, [&](std::size_t i) { return lane_of(events[i]); });
  for (std::size_t b = 0; b < perm.size();) {
    std::size_t e = b;
    while (e < perm.size() && events[perm[e]].lane == events[perm[b]].lane) ++e;
    auto by_start = [&](std::uint32_t x, std::uint32_t y) { return events[x].start_ns < events[y].start_ns; };
    if (!std::is_sorted(perm.begin() + b, perm.begin() + e, by_start)) std::stable_sort(perm.begin() + b, perm.begin() + e, by_start);
    b = e;
  }
  return perm;
}

// For events [begin, end) of one rank, sorted by (lane, start): the prefix maxima of end per lane (for the
// visible-range search) and each lane's [begin, end) range. Touches only that rank's lanes.
template <typename Event>
void fill_lane_ranges(const EventVector<Event>& events, EventVector<std::int64_t>& max_end, std::vector<Lane>& lanes,
                      std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    const bool first = i == begin || events[i - 1].lane != events[i].lane;
    max_end[i] = first ? events[i].end_ns : std::max(max_end[i - 1], events[i].end_ns);
    auto& lane = lanes[events[i].lane];
    if (first) lane.begin = static_cast<std::uint32_t>(i);
    lane.end = static_cast<std::uint32_t>(i + 1);
  }
}

// Runs fn(0 .. n-1) on up to one thread per core (this thread included).
template <typename Fn>
void parallel_for(std::size_t n, Fn&& fn) {
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next++) < n;) fn(i);
  };
  const auto threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, std::max<std::size_t>(n, 1));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

bool is_step_name(const std::string& name) {
  if (name.size() < 4) return false;
  std::string head = name.substr(0, 4);
  std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
  return head == "step" && (name.size() == 4 || !std::isalpha(static_cast<unsigned char>(name[4])));
}

}  // namespace

std::shared_ptr<const RunData> load_run(const std::string& dir, const ProgressFn& progress) {
  auto report = [&](int percent, const std::string& stage) {
    if (progress) progress(percent, stage);
  };
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw InputError(fmt::format("{}: no such run directory", dir));
  std::vector<std::pair<fs::path, int>> files;
  if (fs::is_directory(dir, ec)) {
    static const std::regex rank_file(R"(rank-(\d+)\.sqlite)");
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      std::smatch m;
      const auto name = entry.path().filename().string();
      if (std::regex_match(name, m, rank_file)) files.emplace_back(entry.path(), std::stoi(m[1].str()));
    }
    std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  } else {
    files.emplace_back(fs::path(dir), 0);  // a single rank file
  }
  if (files.empty()) throw InputError(fmt::format("{}: no rank-NNNNN.sqlite files: not a collscope run directory", dir));

  // Read the files in parallel; a broken file becomes a warning unless no file is readable.
  std::vector<RankPart> parts(files.size());
  std::atomic<int> done{0};
  std::mutex progress_mutex;
  report(0, "reading rank files");
  parallel_for(files.size(), [&](std::size_t i) {
    try {
      read_rank(files[i].first, files[i].second, parts[i]);
    } catch (const std::exception& e) {
      parts[i].error = e.what();
    }
    std::lock_guard lock(progress_mutex);
    const int n = ++done;
    report(static_cast<int>(80.0 * n / files.size()), fmt::format("read {}", files[i].first.filename().string()));
  });

  auto run = std::make_shared<RunData>();
  run->dir = dir;
  std::string first_error;
  std::vector<RankPart*> good;
  for (auto& p : parts) {
    if (!p.error.empty()) {
      run->warnings.push_back(p.error);
      if (first_error.empty()) first_error = p.error;
    } else {
      good.push_back(&p);
    }
  }
  if (good.empty()) throw InputError(first_error);
  std::sort(good.begin(), good.end(), [](auto* a, auto* b) { return a->info.world_rank < b->info.world_rank; });
  report(82, "building lanes");

  // Partial run: ranks the job had that have no readable file.
  std::int64_t world_size = 0;
  for (auto* p : good)
    if (auto it = p->info.meta.find(std::string(store::meta_key::kWorldSize)); it != p->info.meta.end())
      world_size = std::max<std::int64_t>(world_size, std::atoll(it->second.c_str()));
  if (world_size > static_cast<std::int64_t>(good.size()))
    run->warnings.push_back(fmt::format("{}: partial run: {} of {} ranks have a readable trace file", dir, good.size(), world_size));
  for (auto* p : good)
    if (p->info.events_dropped > 0)
      run->warnings.push_back(fmt::format("{}: {} events dropped by the tracer", p->info.file, p->info.events_dropped));

  // Provisional clock alignment from the realtime anchors (ranks on one host share CLOCK_MONOTONIC, so
  // they get offset 0); the analyzer refines it from the collectives themselves (run_analysis.cpp).
  const std::string& first_host = good.front()->info.host;
  for (auto* p : good)
    p->info.clock_offset_ns = p->info.host == first_host ? 0 : p->anchor_offset_ns - good.front()->anchor_offset_ns;

  // Lanes grouped by host (first appearance), then world rank, then kind and key.
  std::vector<std::string> hosts;
  for (auto* p : good)
    if (std::find(hosts.begin(), hosts.end(), p->info.host) == hosts.end()) hosts.push_back(p->info.host);
  std::vector<std::size_t> rank_order(good.size());
  std::iota(rank_order.begin(), rank_order.end(), 0);
  std::stable_sort(rank_order.begin(), rank_order.end(), [&](std::size_t a, std::size_t b) {
    auto ha = std::find(hosts.begin(), hosts.end(), good[a]->info.host) - hosts.begin();
    auto hb = std::find(hosts.begin(), hosts.end(), good[b]->info.host) - hosts.begin();
    return ha < hb;
  });
  std::vector<std::vector<std::uint16_t>> lane_map(good.size());  // local lane -> global lane
  for (std::size_t r : rank_order) {
    auto& p = *good[r];
    std::vector<std::size_t> order(p.lanes.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return std::pair(static_cast<int>(p.lanes[a].kind), p.lanes[a].key) <
             std::pair(static_cast<int>(p.lanes[b].kind), p.lanes[b].key);
    });
    lane_map[r].resize(p.lanes.size());
    for (std::size_t l : order) {
      if (run->lanes.size() >= 0xffff) throw InputError(fmt::format("{}: more than 65535 timeline lanes", dir));
      lane_map[r][l] = static_cast<std::uint16_t>(run->lanes.size());
      Lane lane;
      lane.rank_index = static_cast<int>(r);
      lane.kind = p.lanes[l].kind;
      lane.key = p.lanes[l].key;
      lane.label = p.lanes[l].label;
      run->lanes.push_back(std::move(lane));
    }
  }

  // Names shared across ranks: each rank's string table is mapped to global ids once (a string hash per
  // string, not per event: at 1 M+ spans the per-event hash was a tenth of the load).
  run->names.push_back("");
  std::unordered_map<std::string, std::uint32_t> name_ids{{"", 0}};
  auto global_names = [&](const RankPart& p) {
    std::vector<std::uint32_t> ids(p.strings.size());
    for (std::size_t local = 0; local < p.strings.size(); ++local) {
      auto [it, inserted] = name_ids.try_emplace(p.strings[local], static_cast<std::uint32_t>(run->names.size()));
      if (inserted) run->names.push_back(p.strings[local]);
      ids[local] = it->second;
    }
    return ids;
  };

  std::vector<std::vector<std::uint32_t>> name_maps;
  for (auto* p : good) name_maps.push_back(global_names(*p));

  // Each rank's lanes are contiguous in display order, so for each kind a rank's events are one block of
  // the run's array: one task per rank sorts its events by (lane, start) straight into its block, moving
  // them to global lanes, names and run time on the way (one copy, ranks in parallel).
  struct Block {
    std::size_t collectives = 0, nvtx = 0, gpu = 0;  // first index of the rank's events in each array
    std::uint16_t first_lane = 0;
  };
  std::vector<Block> blocks(good.size());
  std::size_t n_coll = 0, n_nvtx = 0, n_gpu = 0;
  for (std::size_t r : rank_order) {
    // A rank without events has no lanes (and no events to place).
    const auto& lanes_of_rank = lane_map[r];
    blocks[r] = {n_coll, n_nvtx, n_gpu,
                 lanes_of_rank.empty() ? std::uint16_t{0} : *std::min_element(lanes_of_rank.begin(), lanes_of_rank.end())};
    n_coll += good[r]->collectives.size(), n_nvtx += good[r]->nvtx.size(), n_gpu += good[r]->gpu.size();
  }
  if (n_coll >= kNoInstance) throw InputError(fmt::format("{}: too many collectives for the viewer", dir));
  std::int64_t origin = std::numeric_limits<std::int64_t>::max();  // run time 0: first event, aligned clock
  for (auto* p : good)
    if (p->min_start_ns != std::numeric_limits<std::int64_t>::max())
      origin = std::min(origin, p->min_start_ns + p->info.clock_offset_ns);
  if (origin == std::numeric_limits<std::int64_t>::max()) origin = 0;
  run->origin_ns = origin;

  report(86, "sorting events");
  auto& cs = run->collectives;
  cs.resize(n_coll);
  run->collectives_max_end.resize(n_coll);
  run->nvtx.resize(n_nvtx);
  run->nvtx_max_end.resize(n_nvtx);
  run->gpu.resize(n_gpu);
  run->gpu_max_end.resize(n_gpu);
  EventVector<std::uint64_t> keys(n_coll);  // matching keys, parallel to the collectives
  EventVector<std::int64_t> seqs(n_coll);
  EventVector<std::uint16_t> sizes(n_coll);
  std::vector<std::int64_t> rank_duration(good.size(), 0);
  parallel_for(good.size(), [&](std::size_t r) {
    auto& p = *good[r];
    const auto shift = p.info.clock_offset_ns - origin;
    const auto& to_global = lane_map[r];
    const auto& name_of = name_maps[r];
    const auto first_lane = blocks[r].first_lane;
    auto local_lane = [&](const auto& e) { return static_cast<std::size_t>(to_global[e.lane] - first_lane); };
    std::int64_t& duration = rank_duration[r];

    const auto coll_perm = lane_start_order(p.collectives, p.lanes.size(), local_lane);
    const std::size_t cb = blocks[r].collectives;
    for (std::size_t k = 0; k < coll_perm.size(); ++k) {
      const std::uint32_t from = coll_perm[k];
      CollectiveEvent e = p.collectives[from];
      e.lane = to_global[e.lane];
      e.rank_index = static_cast<std::uint16_t>(r);
      e.start_ns += shift;
      e.end_ns += shift;
      duration = std::max(duration, e.end_ns);
      cs[cb + k] = e;
      keys[cb + k] = p.comm_keys[from];
      seqs[cb + k] = p.seqs[from];
      sizes[cb + k] = p.comm_sizes[from];
    }
    fill_lane_ranges(cs, run->collectives_max_end, run->lanes, cb, cb + coll_perm.size());

    auto place_spans = [&](const EventVector<SpanEvent>& from, EventVector<SpanEvent>& to, EventVector<std::int64_t>& max_end,
                           std::size_t base) {
      const auto perm = lane_start_order(from, p.lanes.size(), local_lane);
      for (std::size_t k = 0; k < perm.size(); ++k) {
        SpanEvent s = from[perm[k]];
        s.lane = to_global[s.lane];
        s.name = s.name < name_of.size() ? name_of[s.name] : 0u;
        s.start_ns += shift;
        s.end_ns += shift;
        duration = std::max(duration, s.end_ns);
        to[base + k] = s;
      }
      fill_lane_ranges(to, max_end, run->lanes, base, base + perm.size());
    };
    place_spans(p.nvtx, run->nvtx, run->nvtx_max_end, blocks[r].nvtx);
    place_spans(p.gpu, run->gpu, run->gpu_max_end, blocks[r].gpu);
    p.collectives = {};
    p.comm_keys = {};
    p.seqs = {};
    p.comm_sizes = {};
    p.nvtx = {};
    p.gpu = {};
  });
  run->duration_ns = *std::max_element(rank_duration.begin(), rank_duration.end());
  for (auto* p : good) run->ranks.push_back(std::move(p->info));

  report(92, "matching collectives");
  // Instances: the seq-th call on a communicator (same key on every member) is one collective.
  {
    // Order by (communicator key, seq, rank) without a full sort: bucket by communicator (few), then
    // by seq (dense per communicator), then the few members of one seq by rank.
    std::vector<std::uint64_t> comm_keys;
    std::unordered_map<std::uint64_t, std::uint32_t> comm_index;
    EventVector<std::uint32_t> comm_of(cs.size());
    std::uint64_t last_key = 0;
    std::uint32_t last_index = kNoInstance;
    for (std::size_t i = 0; i < cs.size(); ++i) {
      if (last_index == kNoInstance || keys[i] != last_key) {  // a lane's calls mostly share a communicator
        auto [it, inserted] = comm_index.try_emplace(keys[i], static_cast<std::uint32_t>(comm_keys.size()));
        if (inserted) comm_keys.push_back(keys[i]);
        last_key = keys[i];
        last_index = it->second;
      }
      comm_of[i] = last_index;
    }
    std::vector<std::uint32_t> comm_rank(comm_keys.size());  // position of each comm in key order
    {
      std::vector<std::uint32_t> by_key(comm_keys.size());
      std::iota(by_key.begin(), by_key.end(), 0u);
      std::sort(by_key.begin(), by_key.end(), [&](auto a, auto b) { return comm_keys[a] < comm_keys[b]; });
      for (std::uint32_t r = 0; r < by_key.size(); ++r) comm_rank[by_key[r]] = r;
    }
    auto order = bucket_order(cs.size(), comm_keys.size(), [&](std::size_t i) { return comm_rank[comm_of[i]]; });
    for (std::size_t b = 0; b < order.size();) {
      std::size_t e = b;
      while (e < order.size() && keys[order[e]] == keys[order[b]]) ++e;
      std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
      for (std::size_t k = b; k < e; ++k) lo = std::min(lo, seqs[order[k]]), hi = std::max(hi, seqs[order[k]]);
      auto by_seq_rank = [&](std::uint32_t x, std::uint32_t y) {
        return seqs[x] != seqs[y] ? seqs[x] < seqs[y] : cs[x].rank_index < cs[y].rank_index;
      };
      if (hi - lo < static_cast<std::int64_t>(4 * (e - b) + 64)) {
        std::vector<std::uint32_t> group(order.begin() + b, order.begin() + e);
        auto sub = bucket_order(group.size(), static_cast<std::size_t>(hi - lo + 1),
                                [&](std::size_t k) { return static_cast<std::size_t>(seqs[group[k]] - lo); });
        for (std::size_t k = 0; k < sub.size(); ++k) order[b + k] = group[sub[k]];
        for (std::size_t g = b; g < e;) {  // members of one seq: a handful, by rank
          std::size_t h = g;
          while (h < e && seqs[order[h]] == seqs[order[g]]) ++h;
          std::sort(order.begin() + g, order.begin() + h, by_seq_rank);
          g = h;
        }
      } else {
        std::sort(order.begin() + b, order.begin() + e, by_seq_rank);  // sparse seqs
      }
      b = e;
    }
    run->instance_members.reserve(cs.size());
    for (std::size_t i = 0; i < order.size();) {
      std::size_t j = i;
      CollectiveInstance inst;
      inst.comm_key = keys[order[i]];
      inst.seq = seqs[order[i]];
      inst.op = cs[order[i]].op;
      inst.comm_size = sizes[order[i]];
      inst.members_begin = static_cast<std::uint32_t>(run->instance_members.size());
      inst.first_arrival_ns = std::numeric_limits<std::int64_t>::max();
      inst.last_arrival_ns = std::numeric_limits<std::int64_t>::min();
      const auto id = static_cast<std::uint32_t>(run->instances.size());
      for (; j < order.size() && keys[order[j]] == inst.comm_key && seqs[order[j]] == inst.seq; ++j) {
        auto& e = cs[order[j]];
        e.instance = id;
        run->instance_members.push_back(order[j]);
        inst.first_arrival_ns = std::min(inst.first_arrival_ns, e.start_ns);
        if (e.start_ns > inst.last_arrival_ns) {
          inst.last_arrival_ns = e.start_ns;
          inst.last_rank_index = e.rank_index;
        }
        inst.last_end_ns = std::max(inst.last_end_ns, e.end_ns);
        inst.bytes = std::max(inst.bytes, e.bytes);
      }
      inst.member_count = static_cast<std::uint16_t>(std::min<std::size_t>(j - i, 0xffff));
      run->instances.push_back(inst);
      i = j;
    }
  }


  // Steps band: NVTX ranges named "step…" of the lowest rank that has them (the analyzer replaces these
  // with its own, which also infers steps from the pattern of collectives).
  for (std::size_t r = 0; r < run->ranks.size() && run->steps.empty(); ++r)
    for (const auto& lane : run->lanes) {
      if (lane.kind != LaneKind::Nvtx || lane.rank_index != static_cast<int>(r)) continue;
      for (std::uint32_t i = lane.begin; i < lane.end; ++i)
        if (is_step_name(run->names[run->nvtx[i].name]))
          run->steps.push_back({0, run->nvtx[i].start_ns, run->nvtx[i].end_ns});
    }
  std::sort(run->steps.begin(), run->steps.end(), [](const Step& a, const Step& b) { return a.start_ns < b.start_ns; });
  for (std::size_t i = 0; i < run->steps.size(); ++i) run->steps[i].number = static_cast<int>(i);
  report(100, "timeline ready");
  return run;
}

namespace {
std::atomic<int> active_loads{0};
}  // namespace

struct RunLoadJob::Relay : std::enable_shared_from_this<RunLoadJob::Relay> {
  std::mutex mutex;
  RunLoadJob* job = nullptr;
  // Runs fn on the job's (GUI) thread if this relay is still the job's current one when it gets there.
  template <typename Fn>
  void post(Fn fn) {
    std::lock_guard lock(mutex);
    if (!job) return;
    RunLoadJob* target = job;
    auto self = shared_from_this();  // held by the event: its address cannot be reused meanwhile
    QMetaObject::invokeMethod(target, [target, self, fn = std::move(fn)] {
      if (target->relay_ == self) fn(target);
    }, Qt::QueuedConnection);  // dropped by Qt if the job is deleted first
  }
};

int RunLoadJob::activeLoads() { return active_loads.load(); }

RunLoadJob::RunLoadJob(QObject* parent) : QObject(parent) {
  qRegisterMetaType<std::shared_ptr<const collscope::gui::RunData>>();
}

RunLoadJob::~RunLoadJob() {
  if (relay_) {
    std::lock_guard lock(relay_->mutex);
    relay_->job = nullptr;
  }
}

void RunLoadJob::start(const QString& dir) {
  if (relay_) {
    std::lock_guard lock(relay_->mutex);
    relay_->job = nullptr;  // abandon the previous load
  }
  relay_ = std::make_shared<Relay>();
  relay_->job = this;
  running_ = true;
  const std::string path = dir.toStdString();
  ++active_loads;
  std::thread([relay = relay_, path] {
    auto progress_fn = [&relay](int percent, const std::string& stage) {
      relay->post([percent, text = QString::fromStdString(stage)](RunLoadJob* job) { emit job->progress(percent, text); });
    };
    auto fail = [&relay](const std::string& message) {
      relay->post([text = QString::fromStdString(message)](RunLoadJob* job) { emit job->failed(text); });
    };
    try {
      auto timeline = load_run(path, progress_fn);
      relay->post([timeline](RunLoadJob* job) { emit job->loaded(timeline); });
      if (analysis_available()) {
        progress_fn(0, "analyzing");
        try {
          auto analyzed = analyze_loaded_run(*timeline);
          relay->post([analyzed](RunLoadJob* job) { emit job->loaded(analyzed); });
        } catch (const std::exception& e) {
          fail(fmt::format("analysis failed: {}", e.what()));
        }
      }
    } catch (const std::exception& e) {
      fail(e.what());
    }
    relay->post([](RunLoadJob* job) {
      job->running_ = false;
      emit job->finished();
    });
    --active_loads;
  }).detach();
}

}  // namespace collscope::gui
