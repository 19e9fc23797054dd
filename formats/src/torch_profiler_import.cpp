// torch.profiler import. Each rank's Chrome trace is streamed (one event in memory at a time); what is kept per rank
// is its c10d calls, the work spans of its backend and its ProfilerStep#N ranges. The calls are paired with their
// work in order per operation, grouped by process group, and written with the store's TraceWriter, one rank file
// per trace, as the tracer writes them.
#include <collscope/formats/torch_profiler.hpp>
#include <collscope/run/physical_limits.hpp>
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
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "import_run_dir.hpp"

namespace collscope::formats {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// An op's name without its backend prefix, underscores or capitals: "c10d::_allgather_base_" -> "allgatherbase".
std::string bare_op_name(std::string name) {
  for (const char* prefix : {"c10d::", "gloo:", "nccl:", "mpi:", "ucc:", "xccl:"})
    if (name.starts_with(prefix)) name = name.substr(std::string_view(prefix).size());
  std::string n;
  for (char c : name)
    if (c != '_') n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return n;
}

// "c10d::allreduce_", "gloo:all_reduce", "allgather_into_tensor_coalesced", "_reduce_scatter_base" -> the op.
std::optional<store::Op> op_of(const std::string& name) {
  const std::string n = bare_op_name(name);
  static const std::map<std::string, store::Op> ops = {
      {"allreduce", store::Op::Allreduce},          {"allreducecoalesced", store::Op::Allreduce},
      {"broadcast", store::Op::Bcast},              {"reduce", store::Op::Reduce},
      {"allgather", store::Op::Allgather},          {"allgatherbase", store::Op::Allgather},
      {"allgathercoalesced", store::Op::Allgather}, {"allgatherintotensor", store::Op::Allgather},
      {"allgatherintotensorcoalesced", store::Op::Allgather},
      {"gather", store::Op::Gather},                {"scatter", store::Op::Scatter},
      {"reducescatter", store::Op::ReduceScatter},  {"reducescatterbase", store::Op::ReduceScatter},
      {"reducescattertensor", store::Op::ReduceScatter}, {"reducescattertensorcoalesced", store::Op::ReduceScatter},
      // torch's all_to_all takes a tensor per peer, all_to_all_single (alltoall_base) split sizes: counts may differ
      // per rank, as MPI_Alltoallv's do (matching compares op and type only, not counts).
      {"alltoall", store::Op::Alltoallv},           {"alltoallbase", store::Op::Alltoallv},
      {"alltoallv", store::Op::Alltoallv},          {"barrier", store::Op::Barrier},
      {"send", store::Op::Send},                    {"recv", store::Op::Recv},
      {"recvanysource", store::Op::Recv}};
  auto it = ops.find(n);
  return it == ops.end() ? std::nullopt : std::optional(it->second);
}

bool is_point_to_point(store::Op op) { return op == store::Op::Send || op == store::Op::Recv; }

// Bytes per element of c10's ScalarType names ("Float", "BFloat16", "Long", ...) as record_param_comms writes them.
std::int64_t element_size(const std::string& dtype) {
  static const std::map<std::string, std::int64_t> sizes = {
      {"Float", 4},        {"Double", 8},       {"Half", 2},          {"BFloat16", 2},     {"Long", 8},
      {"Int", 4},          {"Short", 2},        {"Char", 1},          {"Byte", 1},         {"Bool", 1},
      {"ComplexHalf", 4},  {"ComplexFloat", 8}, {"ComplexDouble", 16}, {"UInt16", 2},      {"UInt32", 4},
      {"UInt64", 8},       {"QInt8", 1},        {"QUInt8", 1},        {"QInt32", 4},       {"QUInt4x2", 1}};
  if (auto it = sizes.find(dtype); it != sizes.end()) return it->second;
  if (dtype.starts_with("Float8")) return 1;
  return 0;
}

// The C++ type names the profiler writes in an op's "Input type" ("float", "c10::BFloat16", "long int") as c10's
// ScalarType names, the ones record_param_comms writes; a name already in that form is kept.
std::string scalar_type_name(std::string type) {
  if (type.starts_with("c10::")) type = type.substr(5);
  static const std::map<std::string, std::string> names = {
      {"float", "Float"},          {"double", "Double"},         {"long", "Long"},   {"long int", "Long"},
      {"int64_t", "Long"},         {"long long", "Long"},        {"int", "Int"},     {"short", "Short"},
      {"short int", "Short"},      {"signed char", "Char"},      {"unsigned char", "Byte"},
      {"bool", "Bool"},            {"complex<float>", "ComplexFloat"}, {"complex<double>", "ComplexDouble"},
      {"complex<c10::Half>", "ComplexHalf"}};
  if (auto it = names.find(type); it != names.end()) return it->second;
  return type;
}

// One c10d call on the calling thread.
struct Call {
  store::Op op = store::Op::Unknown;
  std::string thread;  // "pid/tid"
  std::int64_t start_ns = 0, end_ns = 0;
  std::string group = "default";  // process group name
  std::string group_desc;
  std::vector<std::int32_t> group_ranks;
  bool ranks_cut = false;  // "[0, 1, ..., 63]": the trace left ranks out
  std::int64_t group_size = 0;
  std::int64_t in_nelems = -1, out_nelems = -1;
  std::string dtype;
  std::optional<std::int64_t> seq;
  std::optional<std::int32_t> peer;
  bool sized = false;         // from record_param_comms' metadata
  bool shape_sized = false;   // from the input shapes of the op or of its backend span (torch without that metadata)
  // Filled when paired.
  std::optional<std::int64_t> work_end_ns;
  std::optional<std::pair<std::int64_t, std::int64_t>> gpu_ns;
};

// A backend's span: gloo:* on a worker thread (the work), an NCCL kernel (the GPU work), or nccl:* on the calling
// thread (the enqueue: no work, but its input's shape where the call has none).
struct Work {
  enum Kind { Worker, Kernel, Enqueue };
  store::Op op = store::Op::Unknown;
  std::int64_t start_ns = 0, end_ns = 0;
  Kind kind = Worker;
  std::string thread;
  std::int64_t elements = -1;  // of its input tensor, from "Input Dims"; -1 unknown
  std::string dtype;
};

struct RankTrace {
  std::string path;
  int rank = -1, world_size = 0;
  std::string backend;
  bool kineto = false;
  std::optional<std::int64_t> base_ns;  // baseTimeNanoseconds: CLOCK_REALTIME of ts 0
  bool epoch_ts = false;                // ts are microseconds since 1970 (older Kineto)
  std::vector<Call> param_comms, c10d_calls;
  std::vector<Work> work;
  std::map<std::int64_t, std::tuple<std::int64_t, std::int64_t, std::string>> steps;  // N -> start, end, thread
  // PyTorch's own ranges inside the steps, for the phases: DDP's forward, the autograd engine's backward functions,
  // the optimizer's step.
  std::vector<std::pair<std::int64_t, std::int64_t>> forward, backward, optimizer;
  std::map<std::string, std::string> thread_names;
  std::int64_t first_ns = std::numeric_limits<std::int64_t>::max(), last_ns = 0;
  std::int64_t events = 0;
};

std::string text_of(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  return v.dump();
}

std::optional<std::int64_t> integer_of(const json& v) {
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && std::fabs(d) < 9e18) return static_cast<std::int64_t>(d);
    return std::nullopt;
  }
  if (v.is_string()) {
    try {
      std::size_t used = 0;
      const std::string s = v.get<std::string>();
      const long long x = std::stoll(s, &used);
      if (used == s.size()) return x;
    } catch (const std::exception&) {
    }
  }
  return std::nullopt;
}

// Elements and ScalarType of an op's `index`-th input from the profiler's "Input Dims" and "Input type" (recorded
// with record_shapes=True): [[8192, 384], ...] -> 3145728; nullopt when that input is no tensor with a shape.
std::optional<std::pair<std::int64_t, std::string>> input_shape(const json* args, std::size_t index) {
  if (!args || !args->contains("Input Dims") || !args->contains("Input type")) return std::nullopt;
  const json &dims = (*args)["Input Dims"], &types = (*args)["Input type"];
  if (!dims.is_array() || !types.is_array() || dims.size() <= index || types.size() <= index) return std::nullopt;
  const json& d = dims[index];
  if (!d.is_array() || d.empty() || !types[index].is_string()) return std::nullopt;
  const std::string type = types[index].get<std::string>();
  if (type.empty() || type == "TensorList" || type == "Scalar") return std::nullopt;
  std::int64_t elements = 1;
  for (const auto& n : d) {
    const auto v = integer_of(n);
    if (!v || *v < 0) return std::nullopt;
    elements = *v == 0 ? 0 : std::min<std::int64_t>(elements * *v, run::PhysicalLimits::kMaxCallCount + 1);
  }
  if (elements > run::PhysicalLimits::kMaxCallCount) return std::nullopt;
  return std::pair{elements, scalar_type_name(type)};
}

// "[0, 1, 2, 3]" -> ranks; "[0, 1, ..., 63]" (record_param_comms cuts lists past 30 ranks): `cut`.
std::vector<std::int32_t> ranks_of(const std::string& text, bool& cut) {
  std::vector<std::int32_t> out;
  cut = text.find("...") != std::string::npos;
  std::int64_t value = 0;
  bool digits = false;
  for (char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      value = std::min<std::int64_t>(value * 10 + (c - '0'), store::kMaxWorldSize);
      digits = true;
    } else {
      if (digits) out.push_back(static_cast<std::int32_t>(value));
      value = 0;
      digits = false;
    }
  }
  if (digits) out.push_back(static_cast<std::int32_t>(value));
  return out;
}

// A cut list whose ranks run evenly ("[0, 2, 4, ..., 62]") with `size` members is rebuilt; else empty.
std::vector<std::int32_t> rebuild_cut(const std::vector<std::int32_t>& shown, std::int64_t size) {
  if (shown.size() < 3 || size < static_cast<std::int64_t>(shown.size()) || size > store::kMaxWorldSize) return {};
  const std::int64_t stride = shown[1] - shown[0];
  for (std::size_t i = 1; i + 1 < shown.size(); ++i)
    if (shown[i] - shown[i - 1] != stride) return {};
  if (stride <= 0 || shown.front() + stride * (size - 1) != shown.back()) return {};
  std::vector<std::int32_t> out;
  for (std::int64_t i = 0; i < size; ++i) out.push_back(static_cast<std::int32_t>(shown.front() + stride * i));
  return out;
}

std::string error_at(const json::parse_error& e) {
  std::string why = e.what();
  if (const auto colon = why.find(": "); colon != std::string::npos) why = why.substr(colon + 2);
  std::replace(why.begin(), why.end(), '\n', ' ');
  return why;
}

RankTrace read_trace(const std::string& path) {
  RankTrace t;
  t.path = path;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(fmt::format("{}: no such file", path));
  if (!fs::is_regular_file(path, ec)) throw InputError(fmt::format("{}: not a regular file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read", path));
  const std::uint64_t file_size = fs::file_size(path, ec);
  constexpr double kMaxUs = double(run::PhysicalLimits::kMaxRealtimeNs / 1000);

  auto thread_of = [](const json& e) {
    auto id = [](const json& e, const char* k) { return e.contains(k) ? text_of(e[k]) : std::string("?"); };
    return id(e, "pid") + "/" + id(e, "tid");
  };
  auto handle = [&](const json& e) {
    ++t.events;
    const std::string ph = e.contains("ph") && e["ph"].is_string() ? e["ph"].get<std::string>() : "";
    const std::string name = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
    if (ph == "M") {
      if (name == "thread_name" && e.contains("args") && e["args"].is_object() && e["args"].contains("name"))
        t.thread_names[thread_of(e)] = text_of(e["args"]["name"]);
      return;
    }
    if (ph != "X") return;
    const bool param_comms = name == "record_param_comms";
    const bool c10d = name.starts_with("c10d::");
    const bool gloo = name.starts_with("gloo:");
    const bool enqueue = name.starts_with("nccl:");
    const bool step = name.starts_with("ProfilerStep#");
    const int phase = name == "DistributedDataParallel.forward"                      ? 1
                      : name.starts_with("autograd::engine::evaluate_function: ")    ? 2
                      : name.starts_with("Optimizer.step#")                          ? 3
                                                                                     : 0;
    const json* args = e.contains("args") && e["args"].is_object() ? &e["args"] : nullptr;
    const std::string cat = e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : "";
    const bool kernel = cat == "kernel" && args && (args->contains("Collective name") || name.starts_with("nccl"));
    if (!param_comms && !c10d && !gloo && !enqueue && !step && !kernel && !phase) return;
    if (!e.contains("ts") || !e["ts"].is_number() || !e.contains("dur") || !e["dur"].is_number())
      throw InputError(fmt::format("{}: event {} ({}) has no numeric ts and dur", path, t.events, name));
    const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    if (!(ts >= -kMaxUs && ts <= kMaxUs) || !(dur >= 0 && dur <= double(run::PhysicalLimits::kMaxSpanNs / 1000)))
      throw InputError(fmt::format("{}: event {} ({}) has ts {} and dur {} us, no clock's times", path, t.events, name, ts, dur));
    const std::int64_t start = std::llround(ts * 1000), end = start + std::llround(dur * 1000);
    t.first_ns = std::min(t.first_ns, start);
    t.last_ns = std::max(t.last_ns, end);
    if (ts > 9.0e14) t.epoch_ts = true;  // after 1998 as microseconds since 1970
    if (phase) {
      (phase == 1 ? t.forward : phase == 2 ? t.backward : t.optimizer).emplace_back(start, end);
      return;
    }
    if (step) {
      try {
        const std::int64_t n = std::stoll(name.substr(13));
        if (n >= 0 && cat != "gpu_user_annotation") t.steps.try_emplace(n, start, end, thread_of(e));
      } catch (const std::exception&) {
      }
      return;
    }
    if (gloo || enqueue || kernel) {
      std::optional<store::Op> op;
      if (args && args->contains("Collective name")) op = op_of(text_of((*args)["Collective name"]));
      if (!op && !kernel) op = op_of(name);
      if (!op && kernel) {
        for (const auto& [word, o] : {std::pair{"AllReduce", store::Op::Allreduce}, {"AllGather", store::Op::Allgather},
                                      {"ReduceScatter", store::Op::ReduceScatter}, {"Broadcast", store::Op::Bcast},
                                      {"Reduce", store::Op::Reduce}, {"SendRecv", store::Op::Send}})
          if (name.find(word) != std::string::npos) {  // SendRecv: also all_to_all's (pair_work)
            op = o;
            break;
          }
      }
      if (!op) return;
      Work w{*op, start, end, kernel ? Work::Kernel : enqueue ? Work::Enqueue : Work::Worker, thread_of(e), -1, ""};
      if (auto shape = input_shape(args, 0); shape && !kernel) std::tie(w.elements, w.dtype) = *shape;
      t.work.push_back(std::move(w));
      return;
    }
    Call c;
    c.thread = thread_of(e);
    c.start_ns = start;
    c.end_ns = end;
    if (c10d) {
      auto op = op_of(name);
      if (!op) return;  // c10d::monitored_barrier_ etc.
      c.op = *op;
      // The ops that take (output, input) tensors give both sizes in their shapes; the others take tensor lists,
      // whose shapes the profiler does not record (their backend span has them).
      const std::string bare = bare_op_name(name);
      if (bare == "allgatherbase" || bare == "reducescatterbase" || bare == "alltoallbase" ||
          bare == "allgatherintotensorcoalesced" || bare == "reducescattertensorcoalesced") {
        const auto out = input_shape(args, 0), in = input_shape(args, 1);
        if (out && in) {
          c.out_nelems = out->first, c.in_nelems = in->first, c.dtype = in->second;
          c.shape_sized = true;
        }
      }
      t.c10d_calls.push_back(std::move(c));
      return;
    }
    if (!args || !args->contains("Collective name")) return;
    auto op = op_of(text_of((*args)["Collective name"]));
    if (!op) return;
    c.op = *op;
    auto arg = [&](const char* k) -> const json* { return args->contains(k) ? &(*args)[k] : nullptr; };
    if (auto* v = arg("Process Group Name")) c.group = text_of(*v);
    if (auto* v = arg("Process Group Description")) c.group_desc = text_of(*v);
    if (auto* v = arg("Process Group Ranks")) c.group_ranks = ranks_of(text_of(*v), c.ranks_cut);
    if (auto* v = arg("Group size")) c.group_size = integer_of(*v).value_or(0);
    if (auto* v = arg("In msg nelems")) c.in_nelems = integer_of(*v).value_or(-1);
    if (auto* v = arg("Out msg nelems")) c.out_nelems = integer_of(*v).value_or(-1);
    if (auto* v = arg("dtype")) c.dtype = text_of(*v);
    if (auto* v = arg("Seq")) c.seq = integer_of(*v);
    if (c.op == store::Op::Send)
      if (auto* v = arg("Dst Rank")) c.peer = static_cast<std::int32_t>(integer_of(*v).value_or(-1));
    if (c.op == store::Op::Recv)
      if (auto* v = arg("Src Rank")) c.peer = static_cast<std::int32_t>(integer_of(*v).value_or(-1));
    if (c.peer && (*c.peer < 0 || *c.peer >= store::kMaxWorldSize)) c.peer.reset();
    if (c.seq && (*c.seq < 0 || *c.seq > run::PhysicalLimits::kMaxCallCount)) c.seq.reset();
    if (c.in_nelems > run::PhysicalLimits::kMaxCallCount) c.in_nelems = -1;
    if (c.out_nelems > run::PhysicalLimits::kMaxCallCount) c.out_nelems = -1;
    if (c.group_size < 0 || c.group_size > store::kMaxWorldSize) c.group_size = 0;
    c.sized = c.in_nelems >= 0 || c.out_nelems >= 0;
    t.param_comms.push_back(std::move(c));
  };

  // Events are the objects of the root array (the autograd profiler), or of the root object's "traceEvents" array
  // (Kineto); the rest of the root object (distributedInfo, baseTimeNanoseconds) stays in the parsed document.
  // Keys after "traceEvents" are the root object's again: Kineto writes its log lines after it ("INFO": [strings]).
  int event_depth = -1;
  bool in_trace_events = false, events_ended = false;
  auto on_parse = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::array_start && depth == 0 && event_depth < 0) event_depth = 1;
    if (event == json::parse_event_t::key && depth == 1 && event_depth < 0) in_trace_events = parsed == "traceEvents";
    if (event == json::parse_event_t::array_start && depth == 1 && in_trace_events && event_depth < 0) event_depth = 2;
    if (event == json::parse_event_t::array_end && depth == event_depth - 1) events_ended = true;
    if (depth != event_depth || events_ended) return true;
    if (event == json::parse_event_t::value)
      throw InputError(fmt::format("{}: an element of its trace events is not an event object", path));
    if (event == json::parse_event_t::object_end) {
      handle(parsed);
      return false;
    }
    return true;
  };
  json root;
  try {
    root = json::parse(in, on_parse, true);
  } catch (const json::parse_error& e) {
    if (e.byte >= file_size)
      throw InputError(fmt::format("{}: the JSON ends before it is complete ({} bytes: a truncated file); nothing imported",
                                   path, file_size));
    throw InputError(fmt::format("{}: not valid JSON at byte {} of {} ({}); nothing imported", path,
                                 e.byte > 0 ? e.byte - 1 : 0, file_size, error_at(e)));
  }
  if (event_depth < 0)
    throw InputError(fmt::format("{}: not a torch.profiler trace (expected a JSON object with \"traceEvents\" or an "
                                 "array of trace events)",
                                 path));
  if (root.is_object()) {
    if (root.contains("distributedInfo")) {
      const auto& d = root["distributedInfo"];
      if (!d.is_object()) throw InputError(fmt::format("{}: distributedInfo is not an object", path));
      t.kineto = true;
      if (d.contains("rank")) {
        const auto r = integer_of(d["rank"]);
        if (!r || *r < 0 || *r >= store::kMaxWorldSize)
          throw InputError(fmt::format("{}: distributedInfo.rank {} is not a rank", path, d["rank"].dump()));
        t.rank = static_cast<int>(*r);
      }
      if (d.contains("world_size")) {
        const auto w = integer_of(d["world_size"]);
        if (!w || *w < 1 || *w > store::kMaxWorldSize)
          throw InputError(fmt::format("{}: distributedInfo.world_size {} is not a job size", path, d["world_size"].dump()));
        t.world_size = static_cast<int>(*w);
      }
      if (d.contains("backend")) t.backend = text_of(d["backend"]);
    }
    if (root.contains("baseTimeNanoseconds")) {
      const auto b = integer_of(root["baseTimeNanoseconds"]);
      if (b && *b > 0 && *b <= run::PhysicalLimits::kMaxRealtimeNs) t.base_ns = *b;
    }
    if (root.contains("schemaVersion") || root.contains("deviceProperties")) t.kineto = true;
  }
  if (!t.param_comms.empty()) t.kineto = true;
  if (t.first_ns > t.last_ns) t.first_ns = t.last_ns = 0;  // nothing timed
  // Older Kineto writes ts as microseconds since 1970 (1.68e15 in 2023): as ns that is past the 2^60 ns a rank
  // file's monotonic clock may reach. Times then count from the trace's first whole second, which becomes the
  // CLOCK_REALTIME of time 0.
  if (t.epoch_ts && !t.base_ns && t.first_ns > 0) {
    const std::int64_t origin = t.first_ns / 1'000'000'000 * 1'000'000'000;
    auto shift = [origin](std::int64_t& ns) { ns -= origin; };
    for (auto* calls : {&t.param_comms, &t.c10d_calls})
      for (auto& c : *calls) shift(c.start_ns), shift(c.end_ns);
    for (auto& w : t.work) shift(w.start_ns), shift(w.end_ns);
    for (auto& [n, step] : t.steps) shift(std::get<0>(step)), shift(std::get<1>(step));
    for (auto* spans : {&t.forward, &t.backward, &t.optimizer})
      for (auto& [a, b] : *spans) shift(a), shift(b);
    shift(t.first_ns), shift(t.last_ns);
    t.base_ns = origin;
  }
  return t;
}

// The number after "rank" in a file name ("rank-1.json", "trace_rank3.pt.trace.json"), or -1.
int rank_from_name(const std::string& path) {
  static const std::regex re(R"(rank[-_.]?([0-9]{1,7}))", std::regex::icase);
  std::smatch m;
  const std::string name = fs::path(path).filename().string();
  if (!std::regex_search(name, m, re)) return -1;
  return std::stoi(m[1].str());
}

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// Pairs each call with its backend's spans of one kind, in order per operation: the k-th gloo:all_reduce a rank ran
// is its k-th allreduce. A span that started before the call (by more than a millisecond: clocks of two threads) is
// skipped. A worker span or a kernel ends the call's work (a kernel is also its GPU span); any of the three sizes a
// call that has no size yet from its input's shape. NCCL runs all_to_all as SendRecv kernels: those serve the
// rank's alltoall calls when it makes no send or receive calls.
std::int64_t pair_work(std::vector<Call>& calls, const std::vector<Work>& work, Work::Kind kind) {
  const bool point_to_point = std::any_of(calls.begin(), calls.end(), [](const Call& c) { return is_point_to_point(c.op); });
  std::map<store::Op, std::vector<const Work*>> by_op;
  for (const auto& w : work)
    if (w.kind == kind)
      by_op[kind == Work::Kernel && w.op == store::Op::Send && !point_to_point ? store::Op::Alltoallv : w.op].push_back(&w);
  for (auto& [op, list] : by_op)
    std::stable_sort(list.begin(), list.end(), [](auto* a, auto* b) { return a->start_ns < b->start_ns; });
  std::map<store::Op, std::size_t> next;
  std::int64_t paired = 0;
  for (auto& c : calls) {
    auto it = by_op.find(c.op);
    if (it == by_op.end()) continue;
    auto& j = next[c.op];
    while (j < it->second.size() && it->second[j]->start_ns + 1'000'000 < c.start_ns) ++j;
    if (j >= it->second.size()) continue;
    const Work* w = it->second[j++];
    if (kind == Work::Kernel) c.gpu_ns = {w->start_ns, w->end_ns};
    // The call lasts until its work ends, on gloo's worker or in NCCL's kernel (Kineto puts kernels on the CPU
    // clock), as a traced call does: the transfer time is then the shortest of the members' calls.
    if (kind != Work::Enqueue) c.work_end_ns = std::max(c.end_ns, w->end_ns);
    if (!c.sized && !c.shape_sized && w->elements >= 0) {
      c.in_nelems = w->elements, c.dtype = w->dtype;
      c.shape_sized = true;
    }
    ++paired;
  }
  return paired;
}

struct Group {
  std::uint64_t key = 0;
  std::string name;
  std::vector<std::int32_t> members;
  std::int64_t min_seq = std::numeric_limits<std::int64_t>::max();
};

}  // namespace

bool looks_like_torch_profiler_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::string head(256 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  for (const char* horovod : {"NEGOTIATE_", "CYCLE_START", "start_time_since_epoch_in_micros"})
    if (head.find(horovod) != std::string::npos) return false;
  for (const char* torch : {"\"distributedInfo\"", "record_param_comms", "ProfilerStep#", "\"aten::", "\"c10d::",
                            "\"gloo:", "\"nccl:", "\"CPU functions\"", "\"baseTimeNanoseconds\""})
    if (head.find(torch) != std::string::npos) return true;
  return false;
}

TorchProfilerImportCounts import_torch_profiler(const std::vector<std::string>& paths, const std::string& run_dir,
                                                int world_size) {
  if (paths.empty()) throw InputError("collscope import: no trace files given");
  TorchProfilerImportCounts counts;
  std::vector<RankTrace> traces;
  for (const auto& p : paths) traces.push_back(read_trace(p));

  // Ranks: distributedInfo, else the file name, else the order given.
  bool names_give_ranks = true;
  for (const auto& t : traces) names_give_ranks = names_give_ranks && (t.rank >= 0 || rank_from_name(t.path) >= 0);
  for (std::size_t i = 0; i < traces.size(); ++i)
    if (traces[i].rank < 0) traces[i].rank = names_give_ranks ? rank_from_name(traces[i].path) : static_cast<int>(i);
  int world = world_size;
  for (const auto& t : traces)
    if (world <= 0 && t.world_size > 0) world = t.world_size;
  if (world <= 0) {
    world = static_cast<int>(traces.size());
    for (const auto& t : traces) world = std::max(world, t.rank + 1);
  }
  std::map<int, const RankTrace*> by_rank;
  for (const auto& t : traces) {
    if (t.world_size > 0 && t.world_size != world)
      throw InputError(fmt::format("{}: distributedInfo.world_size {} but the job has {} ranks", t.path, t.world_size, world));
    if (t.rank >= world)
      throw InputError(fmt::format("{}: rank {} but the job has {} ranks (--world-size)", t.path, t.rank, world));
    auto [it, added] = by_rank.emplace(t.rank, &t);
    if (!added) throw InputError(fmt::format("{}: rank {} again (also {})", t.path, t.rank, it->second->path));
  }
  if (static_cast<int>(traces.size()) < world) {
    std::string missing;
    int shown = 0;
    for (int r = 0; r < world && shown < 8; ++r)
      if (!by_rank.count(r)) missing += (shown++ ? ", " : "") + std::to_string(r);
    counts.problems.push_back(fmt::format("{}: {} of {} ranks have no trace (rank {}{}); they are left out",
                                          traces.front().path, world - static_cast<int>(traces.size()), world, missing,
                                          world - static_cast<int>(traces.size()) > shown ? ", ..." : ""));
  }
  const bool kineto = std::any_of(traces.begin(), traces.end(), [](const auto& t) { return t.kineto; });
  counts.shape = kineto ? "kineto" : "autograd profiler";
  counts.ranks = static_cast<std::int64_t>(traces.size());
  counts.world_size = world;

  // Per rank: its calls (record_param_comms when it has them, else c10d::*), paired with their work.
  std::vector<std::vector<Call>> calls(traces.size());
  std::string backend_name;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    auto& t = traces[i];
    auto& c = calls[i];
    c = t.param_comms.empty() ? std::move(t.c10d_calls) : std::move(t.param_comms);
    if (c.empty())  // a trace with the backend's spans only (gloo:* with no c10d op recorded): each is its own call
      for (const auto& w : t.work)
        if (w.kind == Work::Worker) {
          Call x;
          x.op = w.op, x.thread = w.thread, x.start_ns = w.start_ns, x.end_ns = w.end_ns;
          c.push_back(std::move(x));
        }
    std::stable_sort(c.begin(), c.end(), [](const Call& a, const Call& b) { return a.start_ns < b.start_ns; });
    // record_param_comms nested in another of the same call (one per layer of c10d on some versions): the outer one.
    std::vector<Call> kept;
    std::map<std::string, std::int64_t> open_until;
    for (auto& x : c) {
      const std::string key = x.thread + "|" + x.group + "|" + std::to_string(static_cast<int>(x.op));
      if (auto it = open_until.find(key); it != open_until.end() && x.start_ns < it->second && x.end_ns <= it->second) continue;
      open_until[key] = x.end_ns;
      kept.push_back(std::move(x));
    }
    c = std::move(kept);
    const std::int64_t gloo_paired = pair_work(c, t.work, Work::Worker);
    pair_work(c, t.work, Work::Kernel);
    pair_work(c, t.work, Work::Enqueue);
    // NCCL's calls return once the work is queued: without its kernel in the trace (no GPU activity recorded, or a
    // sampled trace) a call's span is not its transfer, and bytes over it would be a bandwidth nobody measured.
    // Such calls keep their times and lose their size.
    const bool queued = t.backend == "nccl" || std::any_of(t.work.begin(), t.work.end(), [](const Work& w) { return w.kind == Work::Kernel; });
    std::int64_t unsized = 0;
    for (auto& x : c) {
      if (queued && !x.gpu_ns && !x.work_end_ns && (x.sized || x.shape_sized)) {
        x.in_nelems = x.out_nelems = -1;
        x.sized = x.shape_sized = false;
        ++unsized;
      }
      if (!x.work_end_ns && !x.gpu_ns && x.op != store::Op::Send && x.op != store::Op::Recv) ++counts.without_work;
      if (x.sized) ++counts.with_sizes;
      if (x.shape_sized) ++counts.with_shapes;
    }
    if (unsized)
      counts.problems.push_back(fmt::format("{}: {} NCCL calls have no kernel in the trace; imported without their size "
                                            "(their span is the enqueue, not the transfer)",
                                            t.path, unsized));
    if (backend_name.empty()) backend_name = t.backend;
    if (backend_name.empty() && gloo_paired > 0) backend_name = "gloo";
    counts.steps = std::max<std::int64_t>(counts.steps, static_cast<std::int64_t>(t.steps.size()));
  }
  std::int64_t total = 0;
  for (const auto& c : calls) total += static_cast<std::int64_t>(c.size());
  if (total == 0)
    throw InputError(fmt::format("{}: no collectives found (no record_param_comms, c10d::* or gloo:* ops): was the job "
                                 "distributed, and the profiler on while it communicated?",
                                 traces.front().path));
  for (std::size_t i = 0; i < traces.size(); ++i)
    if (calls[i].empty()) counts.problems.push_back(fmt::format("{}: rank {} has no collectives", traces[i].path, traces[i].rank));

  // Process groups: one communicator each, the same key on every member.
  std::map<std::string, Group> groups;
  std::set<std::string> cut_warned;
  for (std::size_t i = 0; i < traces.size(); ++i)
    for (auto& x : calls[i]) {
      auto& g = groups[x.group];
      if (g.members.empty()) {
        g.key = fnv1a("torch process group " + x.group);
        g.name = x.group == "default" && x.group_ranks.empty() && !kineto
                     ? std::string("default process group (imported)")
                     : fmt::format("process group {}{}", x.group, x.group_desc.empty() ? "" : " (" + x.group_desc + ")");
        if (!x.group_ranks.empty() && !x.ranks_cut) g.members = x.group_ranks;
        else if (x.ranks_cut) g.members = rebuild_cut(x.group_ranks, x.group_size);
        else if (x.group_size == 0 || x.group_size == world)
          for (int r = 0; r < world; ++r) g.members.push_back(r);
        if (g.members.empty() && cut_warned.insert(x.group).second)
          counts.problems.push_back(fmt::format("{}: the trace does not list the ranks of process group {} ({}); its "
                                                "collectives are left out",
                                                traces[i].path, x.group, x.group_ranks.empty() ? "no Process Group Ranks" : "a list cut short"));
      }
      if (x.seq) g.min_seq = std::min(g.min_seq, *x.seq);
    }

  detail::prepare_run_dir(run_dir);
  const store::Backend backend = backend_name == "gloo" ? store::Backend::Gloo
                                 : backend_name == "nccl" ? store::Backend::Nccl
                                                          : store::Backend::Torch;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const auto& t = traces[i];
    const int r = t.rank;
    store::TraceWriter w((fs::path(run_dir) / store::rank_file_name(r)).string());
    w.begin();
    w.set_meta(store::meta_key::kWorldRank, std::to_string(r));
    w.set_meta(store::meta_key::kWorldSize, std::to_string(world));
    // Each rank's profiler has its own clock (the autograd profiler counts from its own start): one "host" per
    // rank, so the clock alignment refines each from the ends of the synchronising collectives.
    w.set_meta(store::meta_key::kHost, fmt::format("rank {} profiler clock", r));
    w.set_meta(store::meta_key::kLauncher, "torch.profiler");
    w.set_meta(store::meta_key::kCommandLine, fmt::format("collscope import torch-profiler {}", t.path));
    w.set_meta(store::meta_key::kMonotonicStart, std::to_string(t.first_ns));
    w.set_meta(store::meta_key::kMonotonicEnd, std::to_string(t.last_ns));
    const std::optional<std::int64_t> realtime_of_zero = t.base_ns ? t.base_ns : t.epoch_ts ? std::optional<std::int64_t>(0) : std::nullopt;
    if (realtime_of_zero) {
      w.set_meta(store::meta_key::kRealtimeStart, std::to_string(*realtime_of_zero + t.first_ns));
      w.set_meta(store::meta_key::kRealtimeEnd, std::to_string(*realtime_of_zero + t.last_ns));
    }
    w.set_meta(store::meta_key::kImportedFrom, fs::absolute(t.path).string());
    w.set_meta(store::meta_key::kImportFormat, kineto ? "torch-profiler-kineto" : "torch-profiler-autograd");
    // Threads: those of the calls and steps, numbered in order of appearance.
    std::map<std::string, std::int64_t> thread_ids;
    auto thread = [&](const std::string& key) {
      auto [it, added] = thread_ids.try_emplace(key, static_cast<std::int64_t>(thread_ids.size()) + 1);
      if (added) {
        std::int64_t tid = 0;
        const auto slash = key.rfind('/');
        try {
          tid = std::stoll(key.substr(slash + 1));
        } catch (const std::exception&) {
        }
        auto name = t.thread_names.find(key);
        w.add_thread({it->second, tid, name != t.thread_names.end() ? name->second : "thread " + key.substr(slash + 1)});
      }
      return it->second;
    };
    std::map<std::string, std::int64_t> comm_ids;
    for (const auto& x : calls[i]) {
      if (comm_ids.count(x.group)) continue;
      const auto& g = groups[x.group];
      const auto me = std::find(g.members.begin(), g.members.end(), r);
      if (g.members.empty() || me == g.members.end()) {
        comm_ids[x.group] = 0;
        if (!g.members.empty())
          counts.problems.push_back(fmt::format("{}: rank {} calls collectives of process group {}, which does not list it; left out",
                                                t.path, r, x.group));
        continue;
      }
      store::CommunicatorRow comm;
      comm.id = static_cast<std::int64_t>(comm_ids.size()) + 1;
      comm.key = g.key;
      comm.backend = backend;
      comm.size = static_cast<std::int32_t>(g.members.size());
      comm.rank = static_cast<std::int32_t>(me - g.members.begin());
      comm.members = g.members;
      comm.name = g.name;
      comm.created_ns = t.first_ns;
      w.add_communicator(comm);
      comm_ids[x.group] = comm.id;
      ++counts.communicators;
    }
    const std::int64_t step_name = w.intern("step");
    const std::int64_t phase_names[3] = {w.intern("forward"), w.intern("backward"), w.intern("optimizer")};
    for (const auto& [n, step] : t.steps) {
      const auto [start, end, step_thread] = step;
      store::NvtxRangeRow row;
      row.name = step_name;
      row.start_ns = start;
      row.end_ns = end;
      row.thread = thread(step_thread);
      w.add_nvtx_range(row);
      // The phases, as `collscope trace` records them for Python jobs: DDP's forward, the span of the autograd
      // engine's functions (backward), the optimizer's step; each the first (backward: all) inside the step.
      const std::vector<std::pair<std::int64_t, std::int64_t>>* spans[3] = {&t.forward, &t.backward, &t.optimizer};
      for (int p = 0; p < 3; ++p) {
        std::int64_t from = std::numeric_limits<std::int64_t>::max(), to = std::numeric_limits<std::int64_t>::min();
        for (const auto& [a, b] : *spans[p])
          if (a >= start && b <= end && (p == 1 || from == std::numeric_limits<std::int64_t>::max() || a < from)) {
            if (p != 1 && from != std::numeric_limits<std::int64_t>::max()) continue;
            from = std::min(from, a), to = std::max(to, b);
          }
        if (from > to) continue;
        store::NvtxRangeRow phase;
        phase.name = phase_names[p];
        phase.start_ns = from;
        phase.end_ns = to;
        phase.thread = row.thread;
        phase.depth = 1;
        w.add_nvtx_range(phase);
        ++counts.phases;
      }
    }
    std::map<std::pair<std::int64_t, bool>, std::int64_t> next_seq;  // per communicator, collectives / point-to-point
    std::vector<store::CollectiveRow> rows;
    for (const auto& x : calls[i]) {
      const std::int64_t comm = comm_ids[x.group];
      if (comm == 0) continue;
      const auto& g = groups[x.group];
      store::CollectiveRow row;
      row.comm = comm;
      const bool p2p = is_point_to_point(x.op);
      auto& counter = next_seq[{comm, p2p}];
      row.seq = !p2p && x.seq && g.min_seq != std::numeric_limits<std::int64_t>::max() ? *x.seq - g.min_seq : counter;
      counter = row.seq + 1;
      row.op = x.op;
      const std::int64_t size = element_size(x.dtype);
      const std::int64_t in = std::max<std::int64_t>(0, x.in_nelems);
      // An allgather sized from its input's shape only: it gathers that from every member.
      const std::int64_t out = x.out_nelems >= 0 || x.op != store::Op::Allgather
                                   ? std::max<std::int64_t>(0, x.out_nelems)
                                   : in * static_cast<std::int64_t>(g.members.size());
      const bool by_input = x.op == store::Op::Allreduce || x.op == store::Op::Bcast || x.op == store::Op::Reduce || p2p;
      row.count = in;
      row.bytes = (by_input ? in : std::max(in, out)) * size;
      row.datatype = x.dtype.empty() ? 0 : w.intern(x.dtype);
      if (p2p && x.peer) row.peer = *x.peer;
      row.thread = thread(x.thread);
      row.start_ns = x.start_ns;
      row.end_ns = x.work_end_ns.value_or(x.end_ns);
      if (x.gpu_ns) row.gpu_start_ns = x.gpu_ns->first, row.gpu_end_ns = x.gpu_ns->second;
      rows.push_back(row);
    }
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
    for (std::size_t k = 0; k < rows.size(); ++k) {
      w.add_collective(rows[k]);
      if (k % 20000 == 19999) w.commit(), w.begin();
    }
    counts.collectives += static_cast<std::int64_t>(rows.size());
    w.commit();
  }
  // Communicators are per rank in the store; count process groups once.
  counts.communicators = static_cast<std::int64_t>(std::count_if(groups.begin(), groups.end(), [](const auto& g) { return !g.second.members.empty(); }));
  return counts;
}

}  // namespace collscope::formats
