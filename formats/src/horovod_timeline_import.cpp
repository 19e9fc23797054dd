// Horovod Timeline import. Horovod's writer (horovod/common/timeline.cc) keeps, per tensor "process", one state
// machine: NEGOTIATE_<OP> begin, a tick ("X", name = rank) per rank reporting the tensor ready, end; then the
// operation begin (name = response type), nested activity begin/end pairs, and the operation end carrying dtype
// and shape. This file replays that state machine per tensor, groups the tensors whose communication activity
// ran together into one fused collective, and writes the run with the store's TraceWriter.
#include <collscope/formats/horovod_timeline.hpp>
#include <collscope/run/format.hpp>
#include <collscope/run/physical_limits.hpp>

#include "horovod_timeline_model.hpp"
#include <collscope/store/error.hpp>
#include <collscope/store/trace_reader.hpp>
#include <collscope/store/trace_writer.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <streambuf>
#include <vector>

#include "import_run_dir.hpp"

namespace collscope::formats {

// Bytes per element of Horovod's DataType_Name ("HOROVOD_FLOAT32") or a framework's name ("float32").
std::int64_t detail::element_size(std::string dtype) {
  for (auto& c : dtype) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (dtype.find("64") != std::string::npos) return 8;
  if (dtype.find("32") != std::string::npos) return 4;
  if (dtype.find("16") != std::string::npos) return 2;
  if (dtype.find('8') != std::string::npos || dtype.find("BOOL") != std::string::npos) return 1;
  return 0;
}

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace detail;

// Per tensor "process": what is open.
struct TensorState {
  bool negotiating = false;
  std::map<int, std::int64_t> ticks;
  std::int64_t negotiation_start_us = kNone, negotiation_end_us = kNone;
  std::optional<std::size_t> open_op;                        // index into the operations
  std::vector<std::pair<std::string, std::int64_t>> open;   // activities begun, not ended
};

bool is_comm_activity(const std::string& name) {
  for (const char* prefix : {"MPI_", "NCCL_", "GLOO_", "CCL_", "DDL_", "MLSL_", "ADASUM_"})
    if (name.starts_with(prefix)) return true;
  return false;
}

std::optional<store::Op> op_of(const std::string& type) {
  static const std::map<std::string, store::Op> ops = {
      {"ALLREDUCE", store::Op::Allreduce}, {"ADASUM", store::Op::Allreduce},  {"ALLGATHER", store::Op::Allgather},
      {"BROADCAST", store::Op::Bcast},     {"ALLTOALL", store::Op::Alltoall}, {"REDUCESCATTER", store::Op::ReduceScatter},
      {"BARRIER", store::Op::Barrier}};
  auto it = ops.find(type);
  return it == ops.end() ? std::nullopt : std::optional(it->second);
}

// "[1000, 2048]" -> 2048000; "[]" -> 1 (a scalar); nullopt when not a shape. A shape of more than
// PhysicalLimits::kMaxCallCount elements is `impossible` (its product would overflow long before any real tensor).
std::optional<std::int64_t> elements_of(const std::string& shape, bool& impossible) {
  if (shape.size() < 2 || shape.front() != '[' || shape.back() != ']') return std::nullopt;
  constexpr std::int64_t kMax = run::PhysicalLimits::kMaxCallCount;
  std::int64_t n = 1, dim = 0;
  bool digits = false;
  impossible = false;
  for (char c : shape.substr(1)) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      dim = dim > kMax ? dim : dim * 10 + (c - '0');  // stops growing once beyond the limit
      digits = true;
    } else if (c == ',' || c == ']') {
      if (digits) {
        if (dim > kMax || (dim > 0 && n > kMax / dim)) impossible = true;
        else n *= dim;
      }
      dim = 0;
      digits = false;
    }
  }
  return impossible ? 0 : n;
}

// The event's "ts" in microseconds; nullopt when it is not a time a timeline can hold (0 to 2^52 ns after the
// timeline's start): the event is then left out, with a warning.
std::optional<std::int64_t> micros_of(const json& e, const std::string& path) {
  auto it = e.find("ts");
  if (it == e.end() || !it->is_number()) throw InputError(fmt::format("{}: an event has no numeric \"ts\"", path));
  const double us = it->get<double>();
  if (!(us >= 0 && us <= double(run::PhysicalLimits::kMaxSpanNs / 1000))) return std::nullopt;
  return static_cast<std::int64_t>(us);
}

// One warning per kind of impossible value, naming the first event; each such event or operation is left out.
class LeftOut {
 public:
  explicit LeftOut(std::string path) : path_(std::move(path)) {}
  void add(std::string_view what, std::int64_t event, std::string detail) {
    auto& k = kinds_[std::string(what)];
    if (k.count++ == 0) k.first = fmt::format("event {}: {}", event, std::move(detail));
  }
  std::vector<std::string> warnings() const {
    std::vector<std::string> out;
    for (const auto& [what, k] : kinds_)
      out.push_back(fmt::format("{}: {}; out of physical range, left out ({} {})", path_, k.first, k.count, what));
    return out;
  }

 private:
  struct Kind {
    std::int64_t count = 0;
    std::string first;
  };
  std::string path_;
  std::map<std::string, Kind> kinds_;
};

// The timeline as valid UTF-8 for the JSON parser, read 64 KiB at a time: each ill-formed sequence becomes U+FFFD,
// so a Latin-1 byte in a tensor name imports as that character instead of stopping the parser at the first event.
// Knows which byte of the file the parser has reached, for the error that says where a file stops being JSON.
class Utf8RepairingBuffer : public std::streambuf {
 public:
  explicit Utf8RepairingBuffer(std::istream& in) : in_(in) {}
  std::uint64_t replaced() const { return replaced_; }
  // Bytes of the file before the next character the parser would read.
  std::uint64_t file_offset() const {
    const auto out_pos = static_cast<std::uint64_t>(gptr() - eback());
    std::uint64_t in_pos = out_pos;  // until the first replacement in this chunk, offsets agree
    for (const auto& [out_at, in_at] : marks_) {
      if (out_at > out_pos) break;
      in_pos = in_at + (out_pos - out_at);
    }
    return chunk_offset_ + in_pos;
  }

 protected:
  int_type underflow() override {
    while (gptr() == egptr()) {
      std::string raw = std::move(held_);
      held_.clear();
      const std::size_t kept = raw.size();
      raw.resize(kept + kChunk);
      in_.read(raw.data() + kept, static_cast<std::streamsize>(kChunk));
      raw.resize(kept + static_cast<std::size_t>(in_.gcount()));
      const bool at_end = !in_;
      if (raw.empty()) return traits_type::eof();
      chunk_offset_ = next_offset_;
      out_.clear();
      marks_.clear();
      for (std::size_t at = 0; at < raw.size();) {
        const std::size_t ascii_end = std::find_if(raw.begin() + static_cast<std::ptrdiff_t>(at), raw.end(),
                                                   [](char c) { return static_cast<unsigned char>(c) >= 0x80; }) - raw.begin();
        out_.append(raw, at, ascii_end - at);
        at = ascii_end;
        if (at == raw.size()) break;
        std::size_t bad = 0;
        bool incomplete = false;
        if (const std::size_t n = run::utf8_sequence(raw, at, bad, &incomplete)) {
          out_.append(raw, at, n);
          at += n;
        } else if (incomplete && !at_end) {
          held_ = raw.substr(at);  // the rest of the character is in the next chunk
          break;
        } else {
          out_.append(run::kReplacementCharacter);
          at += bad;
          ++replaced_;
          marks_.emplace_back(out_.size(), at);
        }
      }
      next_offset_ = chunk_offset_ + (raw.size() - held_.size());
      setg(out_.data(), out_.data(), out_.data() + out_.size());
      if (at_end && out_.empty()) return traits_type::eof();
    }
    return traits_type::to_int_type(*gptr());
  }

 private:
  static constexpr std::size_t kChunk = 64 * 1024;
  std::istream& in_;
  std::string out_, held_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> marks_;  // (chunk output offset, chunk input offset) after each replacement
  std::uint64_t chunk_offset_ = 0, next_offset_ = 0;           // file offset of this chunk's / the next chunk's first byte
  std::uint64_t replaced_ = 0;
};

// Replays the file's events through each tensor's state machine as the parser meets them: one event object is
// in memory at a time, never the whole document (Horovod timelines of long jobs are gigabytes). A file whose
// writer was killed mid-event keeps every complete event before the break (`truncated`); a file that stops being
// JSON before its end (a corrupt byte) is an error naming the byte, never a silently shorter run.
Timeline read_timeline(const std::string& path, bool& truncated) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(fmt::format("{}: no such file", path));
  if (fs::file_size(path, ec) == 0) throw InputError(fmt::format("{}: empty file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open", path));
  Timeline t;
  LeftOut left_out(path);
  std::map<std::int64_t, TensorState> states;
  std::int64_t seen = 0;
  auto handle = [&](const json& e) {
    ++seen;
    const std::string ph = e.value("ph", "");
    const std::string name = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
    const std::int64_t pid = e.contains("pid") && e["pid"].is_number_integer() ? e["pid"].get<std::int64_t>() : -1;
    if (ph == "M") {
      if (name == "process_name" && e.contains("args") && e["args"].is_object()) {
        const auto& args = e["args"];
        if (args.contains("start_time_since_epoch_in_micros") && args["start_time_since_epoch_in_micros"].is_number()) {
          const double origin_us = args["start_time_since_epoch_in_micros"].get<double>();
          if (origin_us >= 0 && origin_us <= double(run::PhysicalLimits::kMaxRealtimeNs / 1000))
            t.origin_us = static_cast<std::int64_t>(origin_us);
          else
            left_out.add("start times", seen, fmt::format("start_time_since_epoch_in_micros {} is not a time since 1970",
                                                          origin_us));
        }
        if (args.contains("name") && args["name"].is_string()) t.tensor_names[pid] = args["name"].get<std::string>();
      }
      return;
    }
    if (ph.empty()) return;
    const auto micros = micros_of(e, path);
    if (!micros) {
      left_out.add("events", seen, fmt::format("ts {} us is outside 0 to 2^52 ns", e["ts"].get<double>()));
      return;
    }
    const std::int64_t ts = *micros;
    t.last_us = std::max(t.last_us, ts);
    if (ph == "i" || ph == "I") {
      if (name == "CYCLE_START") t.cycle_starts_us.push_back(ts);
      return;
    }
    if (pid < 0) return;
    auto& s = states[pid];
    if (ph == "B") {
      if (!s.open_op && name.starts_with("NEGOTIATE_")) {
        s.negotiating = true;
        s.ticks.clear();
        s.negotiation_start_us = ts;
      } else if (!s.open_op) {
        TensorOperation op;
        op.type = name;
        op.start_us = ts;
        op.ready_us = std::move(s.ticks);
        op.tensor_pid = pid;
        op.negotiation_start_us = s.negotiation_start_us;
        op.negotiation_end_us = s.negotiation_end_us;
        s.ticks.clear();
        s.negotiation_start_us = s.negotiation_end_us = kNone;
        s.negotiating = false;
        s.open_op = t.operations.size();
        t.operations.push_back(std::move(op));
      } else {
        s.open.emplace_back(name, ts);
      }
    } else if (ph == "X" && s.negotiating) {
      int rank = -1;
      try {
        std::size_t used = 0;
        rank = std::stoi(name, &used);
        if (used != name.size()) rank = -1;
      } catch (const std::exception&) {
      }
      if (rank < 0) return;
      if (rank >= store::kMaxWorldSize) {
        left_out.add("ticks", seen, fmt::format("a tick names rank {}, beyond any job", rank));
        return;
      }
      s.ticks.try_emplace(rank, ts);  // the first report counts, as in Horovod
      t.max_rank = std::max(t.max_rank, rank);
      t.ticking_ranks.insert(rank);
      ++t.ticks;
    } else if (ph == "E") {
      if (!s.open_op) {
        if (s.negotiating) s.negotiating = false, s.negotiation_end_us = ts;
        return;
      }
      auto& op = t.operations[*s.open_op];
      if (!s.open.empty()) {
        op.activities.push_back({s.open.back().first, s.open.back().second, ts});
        s.open.pop_back();
        return;
      }
      op.end_us = ts;
      if (e.contains("args") && e["args"].is_object()) {
        const auto& args = e["args"];
        if (args.contains("dtype") && args["dtype"].is_string()) op.dtype = args["dtype"].get<std::string>();
        if (args.contains("shape") && args["shape"].is_string()) {
          const std::string shape = args["shape"].get<std::string>();
          if (auto n = elements_of(shape, op.impossible_shape)) op.elements = *n;
          if (op.impossible_shape)
            left_out.add("tensor operations", seen,
                         fmt::format("shape {} has more than 2^48 elements", shape.size() > 60 ? shape.substr(0, 60) + "..." : shape));
        }
        op.element_bytes = element_size(op.dtype);
      }
      s.open_op.reset();
    }
  };
  // Events are the objects of the root array (Horovod), or of the root object's "traceEvents" array.
  int event_depth = -1;
  bool in_trace_events = false;
  auto on_parse = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::array_start && depth == 0) event_depth = 1;
    if (event == json::parse_event_t::key && depth == 1 && event_depth < 0) in_trace_events = parsed == "traceEvents";
    if (event == json::parse_event_t::array_start && depth == 1 && in_trace_events && event_depth < 0) event_depth = 2;
    if (depth != event_depth) return true;
    if (event == json::parse_event_t::value)
      throw InputError(fmt::format("{}: an array element is not an event object", path));
    if (event == json::parse_event_t::object_end) {
      handle(parsed);
      return false;  // processed: not kept in the document
    }
    return true;
  };
  Utf8RepairingBuffer text(in);
  std::istream text_stream(&text);
  const std::uint64_t file_size = fs::file_size(path, ec);
  truncated = false;
  try {
    [[maybe_unused]] const json rest = json::parse(text_stream, on_parse, true);  // events were handled as read
  } catch (const json::parse_error& e) {
    const std::uint64_t offset = text.file_offset();
    if (seen == 0 && offset < file_size)
      throw InputError(fmt::format("{}: not JSON (a Horovod timeline is a JSON array of trace events)", path));
    if (offset < file_size) {
      std::string why = e.what();
      if (const auto colon = why.find(": "); colon != std::string::npos) why = why.substr(colon + 2);
      std::replace(why.begin(), why.end(), '\n', ' ');
      throw InputError(fmt::format("{}: not valid JSON at byte {} of {} ({}); nothing imported", path,
                                   offset > 0 ? offset - 1 : 0, file_size, why));
    }
    if (seen == 0) throw InputError(fmt::format("{}: not JSON (a Horovod timeline is a JSON array of trace events)", path));
    truncated = true;  // the parser ran out of file mid-event: the job was killed while writing it
  }
  t.replaced_sequences = text.replaced();
  t.warnings = left_out.warnings();
  if (event_depth < 0)
    throw InputError(fmt::format("{}: not a Horovod timeline (expected a JSON array of trace events)", path));
  // Operations still open when the file ends (a hung or killed job) end at the last event.
  for (auto& op : t.operations)
    if (op.end_us == kNone) op.end_us = t.last_us;
  for (auto& op : t.operations) {
    op.comm_start_us = op.start_us;
    op.comm_end_us = op.end_us;
    for (const auto& a : op.activities) {
      if (!is_comm_activity(a.name)) continue;
      if (!op.has_comm_activity) op.comm_start_us = a.start_us, op.comm_end_us = a.end_us;
      op.comm_start_us = std::min(op.comm_start_us, a.start_us);
      op.comm_end_us = std::max(op.comm_end_us, a.end_us);
      op.has_comm_activity = true;
      op.nccl = op.nccl || a.name.starts_with("NCCL_");
    }
  }
  return t;
}

// Tensors whose communication ran together (same type, overlapping communication activity): one collective.
struct FusedCollective {
  store::Op op = store::Op::Unknown;
  std::vector<std::size_t> members;  // operation indexes
  std::int64_t comm_start_us = 0, comm_end_us = 0;
  std::int64_t bytes = 0, elements = 0;
  std::string dtype;
};

std::vector<FusedCollective> fuse(const Timeline& t) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < t.operations.size(); ++i)
    if (op_of(t.operations[i].type) && !t.operations[i].impossible_shape) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) {
    return t.operations[a].comm_start_us < t.operations[b].comm_start_us;
  });
  std::vector<FusedCollective> out;
  for (std::size_t i : order) {
    const auto& op = t.operations[i];
    const bool joins = !out.empty() && op.has_comm_activity && t.operations[out.back().members.front()].has_comm_activity &&
                       t.operations[out.back().members.front()].type == op.type &&
                       op.comm_start_us < out.back().comm_end_us;
    if (!joins) {
      FusedCollective c;
      c.op = *op_of(op.type);
      c.comm_start_us = op.comm_start_us;
      c.comm_end_us = op.comm_end_us;
      c.dtype = op.dtype;
      out.push_back(std::move(c));
    }
    auto& c = out.back();
    c.members.push_back(i);
    c.comm_end_us = std::max(c.comm_end_us, op.comm_end_us);
    // Each term is at most 2^48 x 8; the sums stop just past the limit, so the run loader leaves such a fused
    // collective out with its warning instead of reading a wrapped-around negative size.
    constexpr std::int64_t kPast = run::PhysicalLimits::kMaxCallCount * 16;
    c.elements = std::min(kPast, c.elements + op.elements);
    c.bytes = std::min(kPast, c.bytes + op.elements * op.element_bytes);
  }
  return out;
}

// When rank `r` was ready for operation `op`: its tick; with ticks from others only, the end of the
// negotiation; with no ticks at all (a response cache hit), the operation's start.
std::int64_t ready_at(const TensorOperation& op, int r) {
  if (auto it = op.ready_us.find(r); it != op.ready_us.end()) return it->second;
  if (!op.ready_us.empty() && op.negotiation_end_us != kNone) return op.negotiation_end_us;
  return op.start_us;
}

}  // namespace

HorovodImportCounts import_horovod_timeline(const std::string& timeline_path, const std::string& run_dir,
                                            int world_size) {
  HorovodImportCounts counts;
  Timeline t = read_timeline(timeline_path, counts.truncated);
  counts.sized_from_names = size_from_names(t);  // before fusing: a fused broadcast's bytes are its tensors'
  const auto fused = fuse(t);
  const auto steps = infer_steps(t);
  if (fused.empty())
    throw InputError(fmt::format("{}: no Horovod operations (NEGOTIATE_*/ALLREDUCE/... events per tensor) found",
                                 timeline_path));
  const int ranks = world_size > 0 ? world_size : std::max(1, t.max_rank + 1);
  if (t.max_rank >= ranks)
    throw InputError(fmt::format("{}: ticks of rank {} but --world-size {}", timeline_path, t.max_rank, ranks));
  // Every rank reports each tensor it submits during negotiation, so a real timeline has ticks of every rank up to
  // the highest: a tick naming rank 100000 among ranks 0-1 is a corrupt name, not 99 998 silent ranks (a file each).
  if (world_size <= 0 && static_cast<int>(t.ticking_ranks.size()) < ranks)
    throw InputError(fmt::format("{}: a negotiation tick names rank {}, but only {} of ranks 0-{} ever tick; give "
                                 "--world-size if the job really had {} ranks",
                                 timeline_path, t.max_rank, t.ticking_ranks.size(), t.max_rank, ranks));
  counts.ranks = ranks;
  counts.tensors = static_cast<std::int64_t>(t.tensor_names.size());
  counts.tensor_operations = static_cast<std::int64_t>(t.operations.size());
  counts.collectives = static_cast<std::int64_t>(fused.size());
  counts.ticks = t.ticks;
  counts.steps = static_cast<std::int64_t>(steps.size());
  const TickAssessment ticks = assess_ticks(t, ranks);
  counts.steps_without_ticks = ticks.rounds_without_ticks;
  counts.lateness_unknown = ticks.unusable;
  counts.replaced_utf8 = static_cast<std::int64_t>(t.replaced_sequences);
  counts.problems = t.warnings;

  detail::prepare_run_dir(run_dir);
  const bool nccl = std::any_of(t.operations.begin(), t.operations.end(), [](const auto& op) { return op.nccl; });
  std::vector<std::int32_t> members(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) members[static_cast<std::size_t>(r)] = r;
  const std::int64_t us = 1000;  // ns per microsecond

  for (int r = 0; r < ranks; ++r) {
    store::TraceWriter w((fs::path(run_dir) / store::rank_file_name(r)).string());
    w.begin();
    w.set_meta(store::meta_key::kWorldRank, std::to_string(r));
    w.set_meta(store::meta_key::kWorldSize, std::to_string(ranks));
    // One clock for all ranks (rank 0's, which wrote the timeline): one "host" to the clock alignment, named for
    // what it is, not a machine.
    w.set_meta(store::meta_key::kHost, "timeline clock");
    if (!ticks.unusable.empty()) w.set_meta(std::string(store::meta_key::kArrivalsUnknown), ticks.unusable);
    w.set_meta(store::meta_key::kLauncher, "horovod");
    w.set_meta(store::meta_key::kCommandLine, fmt::format("collscope import horovod-timeline {}", timeline_path));
    w.set_meta(store::meta_key::kMonotonicStart, "0");
    w.set_meta(store::meta_key::kRealtimeStart, std::to_string(t.origin_us * us));
    w.set_meta(store::meta_key::kMonotonicEnd, std::to_string(t.last_us * us));
    w.set_meta(store::meta_key::kRealtimeEnd, std::to_string((t.origin_us + t.last_us) * us));
    w.set_meta(store::meta_key::kImportedFrom, fs::absolute(timeline_path).string());
    w.set_meta(store::meta_key::kImportFormat, "horovod-timeline");
    w.add_thread({1, 0, "horovod background thread"});
    store::CommunicatorRow comm;
    comm.id = 1;
    comm.key = kHorovodCommKey;
    comm.backend = nccl ? store::Backend::Nccl : store::Backend::Mpi;
    comm.size = ranks;
    comm.rank = r;
    comm.members = members;
    comm.name = "horovod world (imported)";
    w.add_communicator(comm);
    const std::int64_t sum = w.intern(nccl ? "ncclSum" : "MPI_SUM");
    for (const auto& [start, end] : steps) {
      store::NvtxRangeRow step;
      step.name = w.intern("step");
      step.start_ns = start * us;
      step.end_ns = end * us;
      step.thread = 1;
      w.add_nvtx_range(step);
    }
    std::int64_t previous_end = kNone;
    for (std::size_t k = 0; k < fused.size(); ++k) {
      const auto& c = fused[k];
      // Ready for all its tensors, and done with the previous operation: Horovod's background thread runs one
      // operation at a time, so a rank ready long ago still waits behind the operation before.
      std::int64_t arrival = previous_end;
      for (std::size_t i : c.members) arrival = std::max(arrival, ready_at(t.operations[i], r));
      arrival = std::min(arrival, c.comm_start_us);
      previous_end = c.comm_end_us;
      store::CollectiveRow row;
      row.comm = 1;
      row.seq = static_cast<std::int64_t>(k);
      row.op = c.op;
      row.count = c.elements;
      row.datatype = c.dtype.empty() ? 0 : w.intern(c.dtype);
      row.bytes = c.bytes;
      row.reduce_op = c.op == store::Op::Allreduce || c.op == store::Op::ReduceScatter ? sum : 0;
      if (c.op == store::Op::Bcast) row.root = 0;
      row.thread = 1;
      row.start_ns = arrival * us;
      row.end_ns = c.comm_end_us * us;
      w.add_collective(row);
      if (r == 0) {
        // The activities of the fused operation, one range per activity name across its tensors.
        std::map<std::string, std::pair<std::int64_t, std::int64_t>> spans;
        for (std::size_t i : c.members)
          for (const auto& a : t.operations[i].activities) {
            auto [it, added] = spans.try_emplace(a.name, a.start_us, a.end_us);
            if (!added) it->second.first = std::min(it->second.first, a.start_us), it->second.second = std::max(it->second.second, a.end_us);
          }
        for (const auto& [name, span] : spans) {
          store::NvtxRangeRow range;
          range.domain = w.intern("horovod");
          range.name = w.intern(name);
          range.start_ns = span.first * us;
          range.end_ns = span.second * us;
          range.thread = 1;
          w.add_nvtx_range(range);
        }
      }
      if (k % 20000 == 19999) w.commit(), w.begin();
    }
    if (r == 0)
      for (std::int64_t ts : t.cycle_starts_us) {
        store::NvtxRangeRow mark;
        mark.domain = w.intern("horovod");
        mark.name = w.intern("CYCLE_START");
        mark.kind = store::NvtxKind::Mark;
        mark.start_ns = ts * us;
        mark.thread = 1;
        w.add_nvtx_range(mark);
      }
    w.commit();
  }
  return counts;
}

}  // namespace collscope::formats
