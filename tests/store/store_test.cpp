// The trace store: what the writer puts in, the reader gets back; bad files give one clear line.
#include <collscope/store/error.hpp>
#include <collscope/store/sqlite.hpp>
#include <collscope/store/trace_reader.hpp>
#include <collscope/store/trace_writer.hpp>

#include <gtest/gtest.h>

#include "test_support.hpp"

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace collscope::store;

namespace {

fs::path temp_dir() { return collscope::test::temp_root("collscope-store-test"); }

std::string error_of(const std::string& path) {
  try {
    TraceReader r(path);
  } catch (const collscope::InputError& e) {
    return e.what();
  }
  return "";
}

std::string write_sample(const fs::path& path) {
  TraceWriter w(path.string());
  w.begin();
  w.set_meta(meta_key::kWorldRank, "3");
  w.set_meta(meta_key::kWorldSize, "4");
  w.add_thread({1, 4242, "main"});
  CommunicatorRow c;
  c.id = 1;
  c.key = 0xfedcba9876543210ULL;  // high bit set: must survive the signed INTEGER column
  c.size = 2;
  c.rank = 1;
  c.parent = 77;
  c.color = 1;
  c.members = {1, 3};
  c.created_ns = 100;
  c.name = "split";
  w.add_communicator(c);
  w.set_communicator_destroyed(1, 900);
  for (int i = 0; i < 5; ++i) {
    CollectiveRow r;
    r.comm = 1;
    r.seq = i;
    r.op = i % 2 ? Op::Bcast : Op::Allreduce;
    r.count = 1000 + i;
    r.datatype = w.intern("MPI_FLOAT");
    r.bytes = 4 * r.count;
    r.reduce_op = i % 2 ? 0 : w.intern("MPI_SUM");
    if (i % 2) r.root = 0;
    r.sendbuf = 0x7f0000001000ULL;
    r.recvbuf = 0x7f0000002000ULL;
    r.thread = 1;
    r.start_ns = 1000 * i;
    r.end_ns = 1000 * i + 500;
    r.status = 0;
    w.add_collective(r);
  }
  NvtxRangeRow n;
  n.domain = 0;
  n.name = w.intern("step");
  n.start_ns = 10;
  n.end_ns = 20;
  n.thread = 1;
  n.payload_double = 2.5;
  w.add_nvtx_range(n);
  GpuActivityRow g;
  g.name = w.intern("ncclDevKernel_AllReduce");
  g.stream = 7;
  g.start_ns = 5;
  g.end_ns = 6;
  g.correlation = 99;
  w.add_gpu_activity(g);
  w.upsert_buffer({0x7f0000001000ULL, 4016, 4000, 20040, 5, 0, 4000, 0, 0});
  w.commit();
  return path.string();
}

}  // namespace

TEST(Store, RoundTrip) {
  auto path = write_sample(temp_dir() / "rank-00003.sqlite");
  TraceReader r(path);
  EXPECT_EQ(r.schema_version().major, kSchemaMajor);
  EXPECT_EQ(r.meta_int(meta_key::kWorldRank), 3);
  EXPECT_EQ(r.meta_value(meta_key::kSchemaVersion), "1.8");
  auto strings = r.strings();
  auto comms = r.communicators();
  ASSERT_EQ(comms.size(), 1u);
  EXPECT_EQ(comms[0].key, 0xfedcba9876543210ULL);
  EXPECT_EQ(comms[0].members, (std::vector<std::int32_t>{1, 3}));
  EXPECT_EQ(comms[0].parent, 77u);
  EXPECT_EQ(comms[0].destroyed_ns, 900);
  auto colls = r.collectives();
  ASSERT_EQ(colls.size(), 5u);
  EXPECT_EQ(colls[1].op, Op::Bcast);
  EXPECT_EQ(colls[1].root, 0);
  EXPECT_FALSE(colls[0].root.has_value());
  EXPECT_EQ(colls[4].bytes, 4 * 1004);
  EXPECT_EQ(strings.at(colls[0].datatype), "MPI_FLOAT");
  EXPECT_EQ(strings.at(colls[0].reduce_op), "MPI_SUM");
  EXPECT_EQ(colls[1].reduce_op, 0);
  EXPECT_EQ(colls[3].start_ns, 3000);
  EXPECT_EQ(colls[3].end_ns, 3500);
  EXPECT_EQ(r.row_count("collectives"), 5);
  auto nvtx = r.nvtx_ranges();
  ASSERT_EQ(nvtx.size(), 1u);
  EXPECT_EQ(strings.at(nvtx[0].name), "step");
  EXPECT_DOUBLE_EQ(nvtx[0].payload_double.value(), 2.5);
  auto gpu = r.gpu_activities();
  ASSERT_EQ(gpu.size(), 1u);
  EXPECT_EQ(gpu[0].correlation, 99u);
  auto buffers = r.buffers();
  ASSERT_EQ(buffers.size(), 1u);
  EXPECT_EQ(buffers[0].uses, 5);
  EXPECT_EQ(r.threads().at(0).tid, 4242);
}

TEST(Store, OpNamesRoundTrip) {
  for (int i = 0; i < kOpCount; ++i) {
    auto op = static_cast<Op>(i);
    EXPECT_EQ(op_from_name(op_name(op)), op);
  }
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Op::Allreduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Op::Allgather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Op::Bcast, 4), 1.0);
}

TEST(Store, NonBlockingAndPersistentFormsShareTheirCallsFactors) {
  EXPECT_EQ(blocking_form(Op::Iallreduce), Op::Allreduce);
  EXPECT_EQ(blocking_form(Op::AllreduceInit), Op::Allreduce);
  EXPECT_EQ(blocking_form(Op::NeighborAlltoallwInit), Op::NeighborAlltoallw);
  EXPECT_EQ(blocking_form(Op::IreduceScatterBlock), Op::ReduceScatterBlock);
  EXPECT_EQ(blocking_form(Op::Isend), Op::Send);
  EXPECT_EQ(blocking_form(Op::Iprobe), Op::Probe);
  EXPECT_EQ(blocking_form(Op::Barrier), Op::Barrier);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Op::AllreduceInit, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Op::Ialltoallw, 4), 0.75);
}

TEST(Store, PointToPointRowsRoundTrip) {
  const auto path = (temp_dir() / "p2p.sqlite").string();
  {
    TraceWriter w(path);
    w.begin();
    PointToPointRow r;
    r.comm = 1;
    r.seq = 3;
    r.op = Op::Sendrecv;
    r.count = 6;
    r.send_peer = 1;
    r.send_tag = 10;
    r.send_bytes = 24;
    r.recv_peer = kPeerUnknown;
    r.recv_tag = 11;
    r.recv_bytes = 20;
    r.start_ns = 100;
    r.end_ns = 250;
    r.post_end_ns = 120;
    r.wait_ns = 90;
    r.wait_calls = 3;
    w.add(r);
    r.op = Op::Recv;
    r.send_peer.reset();
    r.send_tag.reset();
    r.send_bytes.reset();
    r.post_end_ns.reset();
    r.wait_ns.reset();
    r.wait_calls.reset();
    w.add(r);
    w.commit();
  }
  TraceReader reader(path);
  EXPECT_EQ(reader.schema_version().minor, collscope::store::kSchemaMinor);
  const auto rows = reader.rows<PointToPointRow>();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].op, Op::Sendrecv);
  EXPECT_EQ(rows[0].send_peer, 1);
  EXPECT_EQ(rows[0].recv_peer, kPeerUnknown);
  EXPECT_EQ(rows[0].recv_bytes, 20);
  EXPECT_EQ(rows[0].wait_ns, 90);
  EXPECT_EQ(rows[0].wait_calls, 3);
  EXPECT_FALSE(rows[1].send_peer.has_value());
  EXPECT_FALSE(rows[1].post_end_ns.has_value());
  EXPECT_EQ(rows[1].recv_tag, 11);
}

TEST(Store, MissingFile) {
  auto msg = error_of((temp_dir() / "nope.sqlite").string());
  EXPECT_NE(msg.find("nope.sqlite: no such file"), std::string::npos) << msg;
}

TEST(Store, NotSqlite) {
  auto path = temp_dir() / "garbage.sqlite";
  std::ofstream(path) << "this is not a database, just some text that is long enough to be read as a header"
                      << std::string(200, 'x');
  auto msg = error_of(path.string());
  EXPECT_NE(msg.find("garbage.sqlite: not a collscope trace"), std::string::npos) << msg;
}

TEST(Store, SqliteButNotATrace) {
  auto path = temp_dir() / "other.sqlite";
  fs::remove(path);
  sqlite::Database(path.string(), sqlite::OpenMode::Create).exec("CREATE TABLE t(x)");
  auto msg = error_of(path.string());
  EXPECT_NE(msg.find("other.sqlite: not a collscope trace (no meta table)"), std::string::npos) << msg;
}

TEST(Store, NewerMajorVersionRefused) {
  auto path = write_sample(temp_dir() / "newer.sqlite");
  sqlite::Database(path, sqlite::OpenMode::ReadWrite).exec("UPDATE meta SET value='2.0' WHERE key='schema_version'");
  auto msg = error_of(path);
  EXPECT_NE(msg.find("newer.sqlite: schema version 2.0 is newer than this collscope reads (1.x)"), std::string::npos)
      << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST(Store, NewerMinorVersionAccepted) {
  auto path = write_sample(temp_dir() / "minor.sqlite");
  sqlite::Database(path, sqlite::OpenMode::ReadWrite).exec("UPDATE meta SET value='1.7' WHERE key='schema_version'");
  TraceReader r(path);
  EXPECT_EQ(r.schema_version().minor, 7);
  EXPECT_EQ(r.collectives().size(), 5u);
}

TEST(Store, CallsInFlightKeepOneRowPerThread) {
  const auto path = (temp_dir() / "in-flight.sqlite").string();
  {
    TraceWriter w(path);
    w.begin();
    CallInFlightRow a;
    a.thread = 1;
    a.comm = 2;
    a.seq = 7;
    a.op = Op::Allreduce;
    a.count = 256;
    a.datatype = w.intern("MPI_FLOAT");
    a.bytes = 1024;
    a.reduce_op = w.intern("MPI_SUM");
    a.start_ns = 1000;
    a.seen_ns = 5000;
    w.set_call_in_flight(a);
    a.seen_ns = 9000;  // seen again later: the same row, updated
    w.set_call_in_flight(a);
    CallInFlightRow b = a;
    b.thread = 2;
    b.op = Op::Bcast;
    b.root = 0;
    w.set_call_in_flight(b);
    w.clear_call_in_flight(3);  // no row: nothing happens
    w.commit();
  }
  {
    TraceReader r(path);
    const auto rows = r.calls_in_flight();
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].thread, 1);
    EXPECT_EQ(rows[0].seq, 7);
    EXPECT_EQ(rows[0].op, Op::Allreduce);
    EXPECT_EQ(rows[0].seen_ns, 9000);
    EXPECT_FALSE(rows[0].root.has_value());
    EXPECT_EQ(r.strings().at(rows[0].datatype), "MPI_FLOAT");
    EXPECT_EQ(rows[1].op, Op::Bcast);
    EXPECT_EQ(rows[1].root, 0);
  }
  {
    TraceWriter w(path + ".2");
    w.begin();
    CallInFlightRow a;
    a.thread = 1;
    w.set_call_in_flight(a);
    w.clear_call_in_flight(1);  // the call returned
    w.commit();
  }
  EXPECT_TRUE(TraceReader(path + ".2").calls_in_flight().empty());
}

TEST(Store, Version10FilesHaveNoCallsInFlight) {
  // A file written before 1.1: no calls_in_flight table; the reader gives none instead of failing.
  auto path = write_sample(temp_dir() / "v10.sqlite");
  sqlite::Database(path, sqlite::OpenMode::ReadWrite)
      .exec("DROP TABLE calls_in_flight; UPDATE meta SET value='1.0' WHERE key='schema_version'");
  TraceReader r(path);
  EXPECT_TRUE(r.calls_in_flight().empty());
  EXPECT_EQ(r.collectives().size(), 5u);
}

TEST(Store, NcclProfileProxyOpsAndGpuWorkRoundTrip) {
  const auto path = (temp_dir() / "nccl-profile.sqlite").string();
  {
    TraceWriter w(path);
    w.begin();
    CollectiveRow c;
    c.comm = 1;
    w.add_collective(c);
    const std::int64_t row = w.last_id();
    NcclProfileRow p{.collective = row, .algorithm = w.intern("RING"), .protocol = w.intern("LL128"), .channels = 4,
                     .warps = 16, .kernel_channels = 4, .nccl_seq = 7, .proxy_ops = 2, .api_version = 5};
    w.add(p);
    p.channels = 8;  // a later report of the same collective replaces the row
    w.add(p);
    w.add(NcclProxyOpRow{.collective = row, .channel = 3, .peer = 1, .is_send = true, .steps = 8, .steps_done = 8,
                         .chunk_bytes = 131072, .bytes = 1 << 20, .start_ns = 100, .end_ns = 900});
    w.add(CollectiveGpuWorkRow{row, 11});
    w.add(CollectiveGpuWorkRow{row, 11});  // the same pair twice: one row
    w.add(CollectiveGpuWorkRow{row, 12});
    w.commit();
  }
  TraceReader r(path);
  const auto profile = r.rows<NcclProfileRow>();
  ASSERT_EQ(profile.size(), 1u);
  const auto strings = r.strings();
  EXPECT_EQ(strings.at(profile[0].algorithm), "RING");
  EXPECT_EQ(strings.at(profile[0].protocol), "LL128");
  EXPECT_EQ(profile[0].channels, 8);
  EXPECT_EQ(profile[0].warps, 16);
  EXPECT_EQ(profile[0].nccl_seq, 7);
  EXPECT_EQ(profile[0].api_version, 5);
  const auto ops = r.rows<NcclProxyOpRow>();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_TRUE(ops[0].is_send);
  EXPECT_EQ(ops[0].channel, 3);
  EXPECT_EQ(ops[0].bytes, 1 << 20);
  EXPECT_EQ(ops[0].end_ns - ops[0].start_ns, 800);
  const auto work = r.rows<CollectiveGpuWorkRow>();
  ASSERT_EQ(work.size(), 2u);
  EXPECT_EQ(work[0].activity, 11);
  EXPECT_EQ(work[1].activity, 12);
  EXPECT_EQ(r.row_count("nccl_proxy_ops"), 1);
}

TEST(Store, Version11FilesHaveNoNcclProfile) {
  auto path = write_sample(temp_dir() / "v11.sqlite");
  sqlite::Database(path, sqlite::OpenMode::ReadWrite)
      .exec("DROP TABLE nccl_profile; DROP TABLE nccl_proxy_ops; DROP TABLE collective_gpu_work; "
            "UPDATE meta SET value='1.1' WHERE key='schema_version'");
  TraceReader r(path);
  EXPECT_TRUE(r.rows<NcclProfileRow>().empty());
  EXPECT_TRUE(r.rows<NcclProxyOpRow>().empty());
  EXPECT_TRUE(r.rows<CollectiveGpuWorkRow>().empty());
}

TEST(Store, TruncatedFile) {
  // A big trace cut in half (a full disk, a copy interrupted): the reader must say so, not crash.
  auto src = temp_dir() / "big.sqlite";
  {
    TraceWriter w(src.string());
    w.begin();
    CollectiveRow r;
    r.comm = 1;
    for (int i = 0; i < 20000; ++i) {
      r.seq = i;
      r.start_ns = i;
      r.end_ns = i + 1;
      w.add_collective(r);
    }
    w.commit();
  }
  // fold the WAL into the main file, as a finished run does
  sqlite::Database(src.string(), sqlite::OpenMode::ReadWrite).exec("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE");
  auto cut = temp_dir() / "cut.sqlite";
  fs::copy_file(src, cut, fs::copy_options::overwrite_existing);
  fs::resize_file(cut, fs::file_size(src) / 2);
  std::string msg;
  try {
    TraceReader r(cut.string());
    r.collectives();
  } catch (const collscope::InputError& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("cut.sqlite: "), std::string::npos) << msg;
  EXPECT_TRUE(msg.find("truncated or corrupt") != std::string::npos || msg.find("cannot read") != std::string::npos)
      << msg;
}

TEST(Store, EmptyFile) {
  auto path = temp_dir() / "empty.sqlite";
  std::ofstream{path};
  EXPECT_NE(error_of(path.string()).find("empty.sqlite: empty file"), std::string::npos);
}
