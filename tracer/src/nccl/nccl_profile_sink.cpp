#include "nccl_profile_sink.hpp"

#include <collscope/store/trace_writer.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "core/comm_registry.hpp"
#include "nccl_profile_bridge.hpp"
#include "core/runtime.hpp"

namespace collscope::tracer::nccl_profile {

// ---- RowMatcher ----

void RowMatcher::add_row(const Row& row) {
  const std::uint64_t key = call_key(row.comm_slot, row.seq);
  if (by_call_.emplace(key, row.row_id).second) {
    call_order_.push_back(key);
    if (call_order_.size() > kKeep) {
      by_call_.erase(call_order_.front());
      call_order_.pop_front();
    }
  }
  if (row.nccl_seq < 0 || row.func == kNoFunc) return;
  auto& rows = by_nccl_seq_[(std::uint64_t{row.comm_slot} << 8) | row.func];
  rows[row.nccl_seq] = Entry{row, false};
  if (rows.size() > kKeep) rows.erase(rows.begin());
}

std::optional<std::int64_t> RowMatcher::find(const CollectiveRecord& r, std::uint32_t token_slot) {
  if (r.identity == Identity::Call) {
    auto it = by_call_.find(call_key(r.comm_slot, r.call_seq));
    if (it == by_call_.end()) return std::nullopt;
    return it->second;
  }
  if (r.identity != Identity::NcclSeq || token_slot == 0 || r.nccl_seq < 0) return std::nullopt;
  auto rows_it = by_nccl_seq_.find((std::uint64_t{token_slot} << 8) | r.func);
  if (rows_it == by_nccl_seq_.end()) return std::nullopt;
  auto& rows = rows_it->second;
  const std::uint64_t bytes = r.count * r.datatype_bytes;
  auto agrees = [&](const Entry& e) {
    return !e.claimed && e.row.bytes_per_rank == bytes && e.row.sendbuf == r.sendbuf && e.row.recvbuf == r.recvbuf;
  };
  auto claim = [&](Entry& e) {
    e.claimed = true;
    return e.row.row_id;
  };
  if (auto exact = rows.find(r.nccl_seq); exact != rows.end() && agrees(exact->second)) return claim(exact->second);
  // Inside a group NCCL launches the tasks in its own order (by size), so its numbers follow that order.
  std::optional<std::int64_t> best;
  std::int64_t best_distance = kGroupReach + 1;
  for (auto it = rows.lower_bound(r.nccl_seq - kGroupReach); it != rows.end() && it->first <= r.nccl_seq + kGroupReach;
       ++it) {
    const std::int64_t d = it->first > r.nccl_seq ? it->first - r.nccl_seq : r.nccl_seq - it->first;
    if (agrees(it->second) && d < best_distance) {
      best_distance = d;
      best = it->first;
    }
  }
  if (!best) return std::nullopt;
  return claim(rows[*best]);
}

// ---- the sink ----

namespace {

constexpr int kPendingDrains = 100;  // a record waits this many drains for its row (~5 s at 50 ms)
constexpr std::size_t kMaxPending = 1 << 16;

struct PendingCollective {
  CollectiveRecord record;
  int drains = 0;
};
struct PendingProxyOp {
  ProxyOpRecord op;
  int drains = 0;
};

struct Sink {
  RowMatcher matcher;
  std::vector<PendingCollective> pending;
  std::vector<PendingProxyOp> pending_ops;
  std::unordered_map<std::uint64_t, std::int64_t> row_of_record;  // CollectiveRecord.record_id -> row
  std::deque<std::uint64_t> record_order;
  std::unordered_set<std::int64_t> timed_rows;
  std::deque<std::int64_t> timed_order;
  std::uint64_t records = 0, matched = 0, unmatched = 0, proxy_ops = 0, proxy_unmatched = 0;
  bool meta_dirty = false;
};

Sink& sink() {
  static auto* s = new Sink();  // never destroyed: the final drain runs at exit
  return *s;
}

void remember_timed(Sink& s, std::int64_t row) {
  if (!s.timed_rows.insert(row).second) return;
  s.timed_order.push_back(row);
  if (s.timed_order.size() > RowMatcher::kKeep) {
    s.timed_rows.erase(s.timed_order.front());
    s.timed_order.pop_front();
  }
}

void write_proxy_op(const ProxyOpRecord& op, std::int64_t row, WriterContext& ctx) {
  store::NcclProxyOpRow r;
  r.collective = row;
  r.channel = op.channel;
  r.peer = op.peer;
  r.is_send = op.is_send != 0;
  r.steps = op.steps;
  r.steps_done = op.steps_done;
  r.chunk_bytes = op.chunk_bytes;
  r.bytes = op.bytes;
  r.start_ns = ctx.clock.to_ns(op.start_ticks);
  r.end_ns = ctx.clock.to_ns(op.end_ticks);
  ctx.writer.add(r);
  ++sink().proxy_ops;
}

bool try_write(const CollectiveRecord& rec, WriterContext& ctx) {
  Sink& s = sink();
  const std::uint32_t token_slot = rec.identity == Identity::NcclSeq ? slot_of_token(rec.comm_token) : 0;
  const auto row = s.matcher.find(rec, token_slot);
  if (!row) return false;
  if (rec.kernel_channels > 0 && rec.gpu_start_ns > 0 && rec.gpu_end_ns >= rec.gpu_start_ns) {
    ctx.set_collective_gpu_times(*row, rec.gpu_start_ns, rec.gpu_end_ns);
    remember_timed(s, *row);
  }
  store::NcclProfileRow p;
  p.collective = *row;
  p.algorithm = ctx.store_string(rec.algorithm);
  p.protocol = ctx.store_string(rec.protocol);
  p.channels = rec.channels;
  p.warps = rec.warps;
  p.kernel_channels = rec.kernel_channels;
  p.nccl_seq = rec.nccl_seq;
  p.proxy_ops = static_cast<std::int32_t>(rec.proxy_ops);
  p.api_version = rec.api_version;
  ctx.writer.add(p);
  if (s.row_of_record.emplace(rec.record_id, *row).second) {
    s.record_order.push_back(rec.record_id);
    if (s.record_order.size() > RowMatcher::kKeep) {
      s.row_of_record.erase(s.record_order.front());
      s.record_order.pop_front();
    }
  }
  ++s.matched;
  return true;
}

bool try_write(const ProxyOpRecord& op, WriterContext& ctx) {
  auto it = sink().row_of_record.find(op.record_id);
  if (it == sink().row_of_record.end()) return false;
  write_proxy_op(op, it->second, ctx);
  return true;
}

void on_record(const Event& e, WriterContext& ctx) {
  Sink& s = sink();
  s.meta_dirty = true;
  switch (record_kind(e)) {
    case RecordKind::Collective: {
      CollectiveRecord rec;
      std::memcpy(static_cast<void*>(&rec), &e, sizeof rec);
      ++s.records;
      if (!try_write(rec, ctx)) {
        if (s.pending.size() < kMaxPending) s.pending.push_back({rec, 0});
        else ++s.unmatched;
      }
      break;
    }
    case RecordKind::ProxyOp: {
      ProxyOpRecord op;
      std::memcpy(static_cast<void*>(&op), &e, sizeof op);
      if (!try_write(op, ctx)) {
        if (s.pending_ops.size() < kMaxPending) s.pending_ops.push_back({op, 0});
        else ++s.proxy_unmatched;
      }
      break;
    }
  }
}

void on_collective(const Event& e, std::int64_t row_id, WriterContext&) {
  if (e.comm_slot == 0 || comm_slot(e.comm_slot).backend != store::Backend::Nccl) return;
  RowMatcher::Row row;
  row.row_id = row_id;
  row.comm_slot = e.comm_slot;
  row.seq = e.seq;
  row.func = nccl_func(static_cast<store::Op>(e.op));
  row.nccl_seq = e.nccl.nccl_seq_plus1 ? static_cast<std::int64_t>(e.nccl.nccl_seq_plus1) - 1 : -1;
  row.bytes_per_rank = static_cast<std::int64_t>(e.nccl.count_bytes);
  row.sendbuf = e.sendbuf;
  row.recvbuf = e.recvbuf;
  sink().matcher.add_row(row);
}

// Records whose row came later in the same drain (another thread's ring) or in a later one get their turn here;
// after kPendingDrains they are counted as unmatched.
void on_drain(WriterContext& ctx) {
  Sink& s = sink();
  const bool final_drain = ctx.final_drain;
  std::erase_if(s.pending, [&](PendingCollective& p) {
    if (try_write(p.record, ctx)) return s.meta_dirty = true;
    if (++p.drains < kPendingDrains && !final_drain) return false;
    ++s.unmatched;
    s.meta_dirty = true;
    return true;
  });
  std::erase_if(s.pending_ops, [&](PendingProxyOp& p) {
    if (try_write(p.op, ctx)) return s.meta_dirty = true;
    if (++p.drains < kPendingDrains && !final_drain) return false;
    ++s.proxy_unmatched;
    s.meta_dirty = true;
    return true;
  });
  if (!s.meta_dirty) return;
  s.meta_dirty = false;
  ctx.writer.set_meta("nccl_profiler.records", std::to_string(s.records));
  ctx.writer.set_meta("nccl_profiler.matched", std::to_string(s.matched));
  ctx.writer.set_meta("nccl_profiler.unmatched", std::to_string(s.unmatched));
  ctx.writer.set_meta("nccl_profiler.proxy_ops", std::to_string(s.proxy_ops));
  if (s.proxy_unmatched) ctx.writer.set_meta("nccl_profiler.proxy_ops_unmatched", std::to_string(s.proxy_unmatched));
}

}  // namespace

void install_sink() {
  static const bool installed = [] {
    set_event_handler(EventKind::Extension, &on_record);
    add_collective_hook(&on_collective);
    add_drain_hook(&on_drain);
    return true;
  }();
  (void)installed;
}

bool has_kernel_channel_times(std::int64_t row) { return sink().timed_rows.count(row) != 0; }

}  // namespace collscope::tracer::nccl_profile
