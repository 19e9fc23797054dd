// Point-to-point matching and wait states on small hand-written runs (the real TraceWriter and RunLoader) whose
// answers are known exactly: MPI's non-overtaking order with wildcard receives, late sender, late receiver, one
// MPI_Waitall waiting for two senders, the time in MPI of a non-blocking call, and the point-to-point figures of
// the reports (time and waits per rank, messages per pair, message sizes).
#include <collscope/run/point_to_point.hpp>
#include <collscope/run/run.hpp>
#include <collscope/run/wait_states.hpp>
#include <collscope/store/sqlite.hpp>
#include <collscope/store/trace_reader.hpp>
#include <collscope/store/trace_writer.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>

namespace fs = std::filesystem;
using namespace collscope;
using store::Op;
using store::PointToPointRow;

namespace {

constexpr std::int64_t kMs = 1'000'000;

// <tmp>/collscope-wait-states-<pid>/<name>, empty.
fs::path fresh_dir(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("collscope-wait-states-" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}
constexpr std::int64_t kBase = 1'000'000'000;  // ns: every rank's clock at its trace's start (one host)

// One rank file of `size` ranks on host "node", world communicator, the given point-to-point rows.
void write_rank(const fs::path& dir, int rank, int size, const std::vector<PointToPointRow>& rows) {
  store::TraceWriter w((dir / store::rank_file_name(rank)).string());
  w.begin();
  w.set_meta(store::meta_key::kWorldRank, std::to_string(rank));
  w.set_meta(store::meta_key::kWorldSize, std::to_string(size));
  w.set_meta(store::meta_key::kHost, "node");
  w.set_meta(store::meta_key::kMonotonicStart, std::to_string(kBase));
  store::CommunicatorRow world;
  world.id = 1;
  world.key = 0x1234;
  world.size = size;
  world.rank = rank;
  for (int m = 0; m < size; ++m) world.members.push_back(m);
  world.name = "MPI_COMM_WORLD";
  world.created_ns = kBase;
  w.add_communicator(world);
  for (const auto& r : rows) w.add(r);
  w.commit();
}

PointToPointRow send(std::int64_t seq, Op op, int peer, int tag, std::int64_t start_ms, std::int64_t end_ms) {
  return {.comm = 1, .seq = seq, .op = op, .count = 1, .send_peer = peer, .send_tag = tag, .send_bytes = 8,
          .start_ns = kBase + start_ms * kMs, .end_ns = kBase + end_ms * kMs};
}
PointToPointRow recv(std::int64_t seq, Op op, int peer, int tag, std::int64_t start_ms, std::int64_t end_ms) {
  return {.comm = 1, .seq = seq, .op = op, .count = 1, .recv_peer = peer, .recv_tag = tag, .recv_bytes = 8,
          .start_ns = kBase + start_ms * kMs, .end_ns = kBase + end_ms * kMs};
}
// A non-blocking row: posted in 0 ms at start_ms, `wait_ms` in completion calls ending at end_ms.
PointToPointRow nonblocking(PointToPointRow r, std::int64_t wait_ms) {
  r.post_end_ns = r.start_ns;
  r.wait_ns = wait_ms * kMs;
  r.wait_calls = 1;
  return r;
}

}  // namespace

TEST(WaitStates, WildcardReceivesMatchInNonOvertakingOrder) {
  const auto dir = fresh_dir("order");
  // Rank 0 sends tag 5, tag 7, tag 5 to rank 1. Rank 1 receives with MPI_ANY_TAG: its statuses say it got tag 7
  // first, then both tag 5 messages; its rows are in completion order (seq 2 written first). A fourth receive's
  // source stayed unknown.
  write_rank(dir, 0, 2, {send(0, Op::Send, 1, 5, 0, 1), send(1, Op::Send, 1, 7, 2, 3), send(2, Op::Send, 1, 5, 4, 5)});
  write_rank(dir, 1, 2,
             {recv(2, Op::Recv, 0, 5, 10, 11), recv(0, Op::Recv, 0, 7, 6, 7), recv(1, Op::Recv, 0, 5, 8, 9),
              recv(3, Op::Recv, store::kPeerUnknown, 0, 12, 13)});
  const run::Run r = run::load_run(dir.string());
  ASSERT_EQ(r.point_to_point_count(), 7u);
  const run::MatchedMessages m = run::match_messages(r);
  ASSERT_EQ(m.messages.size(), 3u);
  EXPECT_EQ(m.unknown_source, 1);
  EXPECT_EQ(m.unmatched_sends, 0);
  // Sender seq → receiver seq.
  std::map<int, int> pairs;
  for (const auto& msg : m.messages)
    pairs[r.ranks[msg.send_rank].point_to_point[msg.send_call].seq] = r.ranks[msg.recv_rank].point_to_point[msg.recv_call].seq;
  EXPECT_EQ(pairs, (std::map<int, int>{{0, 1}, {1, 0}, {2, 2}}));
}

// The run of LateSenderLateReceiverAndOneWaitallForTwo (described there).
run::Run late_states_run() {
  const auto dir = fresh_dir("states");
  write_rank(dir, 0, 3,
             {recv(0, Op::Recv, 1, 0, 1, 5), nonblocking(recv(1, Op::Irecv, 1, 1, 13, 14), 1),
              send(2, Op::Send, 2, 0, 26, 26), send(3, Op::Send, 1, 9, 40, 40)});
  write_rank(dir, 1, 3,
             {send(0, Op::Send, 0, 0, 4, 5), send(1, Op::Ssend, 0, 1, 10, 14), send(2, Op::Send, 2, 0, 28, 28),
              recv(3, Op::Recv, 0, 9, 45, 46)});
  write_rank(dir, 2, 3,
             {nonblocking(recv(0, Op::Irecv, 0, 0, 19, 30), 10), nonblocking(recv(1, Op::Irecv, 1, 0, 19, 30), 10)});
  return run::load_run(dir.string());
}

TEST(WaitStates, LateSenderLateReceiverAndOneWaitallForTwo) {
  // Late sender: rank 0 in MPI_Recv from 1 ms, rank 1's MPI_Send enters at 4 ms: rank 0 waits 3 ms.
  // Late receiver: rank 1's MPI_Ssend from 10 to 14 ms, rank 0 posts its MPI_Irecv at 13 ms: rank 1 waits 3 ms.
  //   (rank 0's Irecv waits 1 ms in MPI_Wait, after the send began: no late sender.)
  // One MPI_Waitall of rank 2 from 20 to 30 ms for receives from 0 (send at 26 ms) and 1 (send at 28 ms): it
  //   waits 8 ms, 6 of them for both (3 each) and 2 more for rank 1: 3 ms for rank 0, 5 ms for rank 1.
  // An eager MPI_Send of rank 0 at 40 ms returning at once, its receive posted at 45 ms: nobody waits.
  const run::Run r = late_states_run();
  ASSERT_TRUE(r.problems.empty()) << r.problems.front();
  const run::ClockAlignment clocks = run::ClockAligner().align(r);
  const run::PointToPointWaits w = run::measure_point_to_point_waits(r, clocks);
  EXPECT_EQ(w.messages, 5);
  // (state, waiting, waited for) → ns
  std::map<std::tuple<run::WaitState, int, int>, std::int64_t> got;
  for (const auto& x : w.waits) got[{x.state, x.waiting_rank, x.waited_for}] += x.wait_ns;
  using run::WaitState;
  const std::map<std::tuple<run::WaitState, int, int>, std::int64_t> want = {
      {{WaitState::LateSender, 0, 1}, 3 * kMs},
      {{WaitState::LateReceiver, 1, 0}, 3 * kMs},
      {{WaitState::LateSender, 2, 0}, 3 * kMs},
      {{WaitState::LateSender, 2, 1}, 5 * kMs}};
  EXPECT_EQ(got, want);
}

TEST(PointToPointSummary, TimeWaitsAndMessagesPerRankAndPair) {
  const run::Run r = late_states_run();
  const run::ClockAlignment clocks = run::ClockAligner().align(r);
  const run::PointToPointSummary p = run::summarize_point_to_point(r, run::measure_point_to_point_waits(r, clocks));
  ASSERT_EQ(p.ranks.size(), 3u);
  // Rank 0: MPI_Recv 1–5 ms, its MPI_Irecv's 1 ms MPI_Wait, two sends that returned at once: 5 ms. Rank 1: 1 + 4 +
  // 1 ms. Rank 2: one MPI_Waitall of 10 ms completing both its receives counts once, not 20 ms.
  EXPECT_EQ(p.ranks[0].time_ns, 5 * kMs);
  EXPECT_EQ(p.ranks[1].time_ns, 6 * kMs);
  EXPECT_EQ(p.ranks[2].time_ns, 10 * kMs);
  EXPECT_EQ(p.ranks[0].wait_ns, 3 * kMs);
  EXPECT_EQ(p.ranks[1].wait_ns, 3 * kMs);
  EXPECT_EQ(p.ranks[2].wait_ns, 8 * kMs);
  EXPECT_DOUBLE_EQ(p.mean_time_ns, 7.0 * kMs);
  EXPECT_DOUBLE_EQ(p.mean_wait_ns, 14.0 / 3 * kMs);
  EXPECT_EQ(p.calls, 10);
  EXPECT_EQ(p.matched_messages, 5);
  // Sends of 8 bytes: 0 → 1 and 0 → 2 one each, 1 → 0 two (MPI_Send and MPI_Ssend), 1 → 2 one.
  std::vector<std::tuple<int, int, std::int64_t, std::int64_t>> pairs;
  for (const auto& x : p.pairs) pairs.emplace_back(x.sender, x.receiver, x.messages, x.bytes);
  EXPECT_EQ(pairs, (std::vector<std::tuple<int, int, std::int64_t, std::int64_t>>{
                       {0, 1, 1, 8}, {0, 2, 1, 8}, {1, 0, 2, 16}, {1, 2, 1, 8}}));
  EXPECT_EQ(p.messages, 5);
  EXPECT_EQ(p.bytes, 40);
  EXPECT_EQ(p.ranks[0].messages_sent, 2);
  EXPECT_EQ(p.ranks[0].messages_received, 2);
  EXPECT_EQ(p.ranks[2].messages_received, 2);
  EXPECT_EQ(p.ranks[2].bytes_received, 16);
  ASSERT_EQ(p.sizes.size(), 1u);
  EXPECT_EQ(p.sizes[0].size_bucket_bytes, 8);
  EXPECT_EQ(p.sizes[0].messages, 5);
}

TEST(PointToPointSummary, MessageSizeBins) {
  const auto dir = fresh_dir("sizes");
  // Rank 0 sends 0, 1, 8, 9, 15, 16 and 65536 bytes to rank 1; one send to MPI_PROC_NULL and one that failed move
  // nothing.
  std::vector<PointToPointRow> rows;
  std::int64_t seq = 0;
  for (std::int64_t bytes : {0, 1, 8, 9, 15, 16, 65536}) {
    auto row = send(seq, Op::Send, 1, 0, seq, seq);
    row.send_bytes = bytes;
    rows.push_back(row);
    ++seq;
  }
  rows.push_back(send(seq++, Op::Send, store::kPeerProcNull, 0, 20, 20));
  auto failed = send(seq++, Op::Send, 1, 0, 21, 21);
  failed.status = 15;
  rows.push_back(failed);
  write_rank(dir, 0, 2, rows);
  write_rank(dir, 1, 2, {});
  const run::Run r = run::load_run(dir.string());
  const run::PointToPointSummary p =
      run::summarize_point_to_point(r, run::measure_point_to_point_waits(r, run::ClockAligner().align(r)));
  // (lower bound, messages, bytes, smallest, largest)
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>> bins;
  for (const auto& b : p.sizes) bins.emplace_back(b.size_bucket_bytes, b.messages, b.bytes, b.min_bytes, b.max_bytes);
  EXPECT_EQ(bins, (decltype(bins){{0, 1, 0, 0, 0}, {1, 1, 1, 1, 1}, {8, 3, 32, 8, 15}, {16, 1, 16, 16, 16},
                                  {65536, 1, 65536, 65536, 65536}}));
  EXPECT_EQ(p.messages, 7);
  EXPECT_EQ(p.calls, 9);
}

TEST(WaitStates, TimeInMpiOfANonblockingCall) {
  const run::NonblockingTimes t{.post_end_ns = 110, .wait_ns = 20, .wait_calls = 4};
  const run::MpiSpans s = run::spans_in_mpi(100, 200, &t);
  EXPECT_TRUE(s.nonblocking);
  EXPECT_EQ(s.post.start_ns, 100);
  EXPECT_EQ(s.post.end_ns, 110);
  EXPECT_EQ(s.completion.start_ns, 180);
  EXPECT_EQ(s.completion.end_ns, 200);
  EXPECT_EQ(s.total_ns(), 30);  // the other 70 ns overlapped with the rank's own work
  const run::MpiSpans blocking = run::spans_in_mpi(100, 200, nullptr);
  EXPECT_EQ(blocking.total_ns(), 100);
}

TEST(WaitStates, FilesBeforeSchema12HaveNoPointToPoint) {
  const auto dir = fresh_dir("old");
  write_rank(dir, 0, 1, {send(0, Op::Send, 0, 0, 1, 2)});
  store::sqlite::Database((dir / store::rank_file_name(0)).string(), store::sqlite::OpenMode::ReadWrite)
      .exec("DROP TABLE point_to_point; UPDATE meta SET value='1.1' WHERE key='schema_version'");
  const run::Run r = run::load_run(dir.string());
  ASSERT_EQ(r.ranks.size(), 1u);
  EXPECT_EQ(r.ranks[0].schema_version, "1.1");
  EXPECT_EQ(r.point_to_point_count(), 0u);
}
