// Event batches (schema 1.3): the reader decodes the batches a killed run left as the rows they stand for, in id
// order among the table's own rows; expanding them at exit gives exactly those rows as plain SQL rows; a truncated
// or corrupt batch is one line naming the file, the table and the row, never a crash or a wrong row.
#include <collscope/store/error.hpp>
#include <collscope/store/event_batch.hpp>
#include <collscope/store/sqlite.hpp>
#include <collscope/store/trace_reader.hpp>
#include <collscope/store/trace_writer.hpp>

#include <gtest/gtest.h>

#include <bit>
#include <filesystem>
#include <map>
#include <sstream>

#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace collscope::store;

namespace {

fs::path temp_dir() { return collscope::test::temp_root("collscope-event-batch-test"); }

// Every column of a row as text, so that whole rows compare (tables.def drives it).
template <typename T>
void show(std::ostream& o, const T& v) {
  if constexpr (std::is_enum_v<T> || std::is_integral_v<T>) o << static_cast<long long>(v);
  else if constexpr (std::is_same_v<T, double> || std::is_same_v<T, std::string>) o << v;
  else o << '?';  // lists and blobs: not in the tables compared here
}
template <typename T>
void show(std::ostream& o, const std::optional<T>& v) {
  if (v) show(o, *v);
  else o << "NULL";
}
template <typename Row> std::string row_text(const Row& r);
#define COLLSCOPE_TABLE(sql, RowT, since_, order) \
  template <> inline std::string row_text(const RowT& r) { std::ostringstream o;
#define COLLSCOPE_COLUMN(type, member, flags) o << #member << '='; show(o, r.member); o << ' ';
#define COLLSCOPE_TABLE_END(sql) return o.str(); }
#include <collscope/store/tables.def>
#undef COLLSCOPE_TABLE
#undef COLLSCOPE_COLUMN
#undef COLLSCOPE_TABLE_END

CollectiveRecord collective_record(int i) {
  CollectiveRecord r;
  r.start_ns = 1'000'000'000'000 + i * 1000;
  r.end_ns = r.start_ns + 500 + i;
  r.seq = i;
  r.count = 100 + i;
  r.bytes = 4 * r.count;
  r.sendbuf = 0x7f0000000000ULL + i;
  r.recvbuf = 0xffff800000000000ULL + i;  // high bit set: the same 64 bits back
  r.comm = 1 + i % 3;
  r.datatype = 1;
  r.reduce_op = i % 2 ? 0 : 2;
  r.status = i % 11 == 0 ? 15 : 0;
  r.op = static_cast<std::uint8_t>(i % 2 ? Op::Bcast : Op::Iallreduce);
  if (i % 2) r.root = i % 5, r.flags |= kRecordRoot;
  if (!(i % 2)) {
    r.flags |= kRecordNonBlocking;
    r.post_end_ns = r.start_ns + 20;
    r.wait_ns = 300 + i;
    r.wait_calls = 1 + i % 4;
  }
  return r;
}

// The row a record stands for, written the plain way (what the tracer wrote before 1.3).
CollectiveRow as_row(const CollectiveRecord& r, std::int64_t thread) {
  CollectiveRow c;
  c.comm = r.comm, c.seq = r.seq, c.op = static_cast<Op>(r.op), c.count = r.count, c.datatype = r.datatype;
  c.bytes = r.bytes, c.reduce_op = r.reduce_op, c.sendbuf = r.sendbuf, c.recvbuf = r.recvbuf, c.thread = thread;
  c.start_ns = r.start_ns, c.end_ns = r.end_ns, c.status = r.status;
  if (r.flags & kRecordRoot) c.root = r.root;
  if (r.flags & kRecordPeer) c.peer = r.peer;
  if (r.flags & kRecordNonBlocking) c.post_end_ns = r.post_end_ns, c.wait_ns = r.wait_ns, c.wait_calls = r.wait_calls;
  return c;
}

PointToPointRecord p2p_record(int i) {
  PointToPointRecord r;
  r.start_ns = 2'000'000'000'000 + i * 1000;
  r.end_ns = r.start_ns + 700;
  r.seq = i;
  r.count = 8 + i;
  r.sendbuf = 0x1000 + i, r.recvbuf = 0x2000 + i;
  r.comm = 1;
  r.datatype = 1;
  r.op = static_cast<std::uint8_t>(i % 3 == 0 ? Op::Sendrecv : i % 3 == 1 ? Op::Isend : Op::Recv);
  if (i % 3 != 2) r.flags |= kRecordSends, r.send_peer = i % 3 == 0 ? kPeerProcNull : 1, r.send_tag = 7, r.send_bytes = 4 * r.count;
  if (i % 3 != 1) r.flags |= kRecordReceives, r.recv_peer = kPeerUnknown, r.recv_tag = 9, r.recv_bytes = 4 * r.count;
  if (i % 3 == 1) r.flags |= kRecordNonBlocking, r.post_end_ns = r.start_ns + 5, r.wait_ns = 60, r.wait_calls = 3;
  return r;
}

PointToPointRow as_row(const PointToPointRecord& r, std::int64_t thread) {
  PointToPointRow p;
  p.comm = r.comm, p.seq = r.seq, p.op = static_cast<Op>(r.op), p.count = r.count, p.datatype = r.datatype;
  if (r.flags & kRecordSends) p.send_peer = r.send_peer, p.send_tag = r.send_tag, p.send_bytes = r.send_bytes;
  if (r.flags & kRecordReceives) p.recv_peer = r.recv_peer, p.recv_tag = r.recv_tag, p.recv_bytes = r.recv_bytes;
  p.sendbuf = r.sendbuf, p.recvbuf = r.recvbuf, p.thread = thread, p.start_ns = r.start_ns, p.end_ns = r.end_ns;
  if (r.flags & kRecordNonBlocking) p.post_end_ns = r.post_end_ns, p.wait_ns = r.wait_ns, p.wait_calls = r.wait_calls;
  p.status = r.status;
  return p;
}

struct Expected {
  std::vector<CollectiveRow> collectives;
  std::vector<PointToPointRow> p2p;
};

// A rank file as the tracer writes it while a job runs: 300 collectives, most in batches of up to 64 records
// (two threads), every 50th a plain row between batches (an NCCL call), and 40 point-to-point calls in 2 batches.
// mode: "batches" (left as they are, as a killed run leaves them), "expanded" (expanded at exit), "rows" (every
// event a plain row: the path before 1.3).
Expected write_trace(const std::string& path, const std::string& mode) {
  Expected want;
  TraceWriter w(path);
  w.begin();
  w.intern("MPI_FLOAT");
  w.intern("MPI_SUM");
  std::vector<std::uint8_t> buf;
  std::int64_t in_buf = 0, thread = 1;
  BatchEncoder<CollectiveRecord> encoder;
  auto flush = [&] {
    if (in_buf == 0) return;
    const std::int64_t first = w.add_event_batch(BatchKind::Collectives, thread, in_buf, buf.data(), buf.size());
    EXPECT_EQ(first, static_cast<std::int64_t>(want.collectives.size()) - in_buf + 1);
    buf.clear();
    in_buf = 0;
    encoder.reset();
  };
  for (int i = 0; i < 300; ++i) {
    if (i == 150) flush(), thread = 2, w.commit(), w.begin();  // another thread's ring, another drain
    if (i % 50 == 7) {
      flush();
      CollectiveRow nccl = as_row(collective_record(i), thread);
      nccl.stream = 77, nccl.correlation = 9000 + i, nccl.group = 3, nccl.gpu_start_ns = 1, nccl.gpu_end_ns = 2;
      nccl.post_end_ns.reset(), nccl.wait_ns.reset(), nccl.wait_calls.reset();
      w.add_collective(nccl);
      nccl.id = w.last_id();
      want.collectives.push_back(nccl);
      continue;
    }
    const CollectiveRecord r = collective_record(i);
    CollectiveRow row = as_row(r, thread);
    row.id = static_cast<std::int64_t>(want.collectives.size()) + 1;
    want.collectives.push_back(row);
    if (mode == "rows") {
      w.add_collective(row);
      continue;
    }
    const std::size_t at = buf.size();
    buf.resize(at + kMaxRecordBytes);
    buf.resize(static_cast<std::size_t>(encoder.encode(r, buf.data() + at) - buf.data()));
    if (++in_buf == 64) flush();
  }
  flush();
  for (int b = 0; b < 2; ++b) {
    std::vector<std::uint8_t> p(20 * kMaxRecordBytes);
    BatchEncoder<PointToPointRecord> p2p_encoder;
    std::uint8_t* end = p.data();
    for (int i = 0; i < 20; ++i) {
      const PointToPointRecord r = p2p_record(b * 20 + i);
      end = p2p_encoder.encode(r, end);
      PointToPointRow row = as_row(r, 1);
      row.id = b * 20 + i + 1;
      want.p2p.push_back(row);
      if (mode == "rows") w.add(row);
    }
    p.resize(static_cast<std::size_t>(end - p.data()));
    if (mode != "rows") {
      EXPECT_EQ(w.add_event_batch(BatchKind::PointToPoint, 1, 20, p.data(), p.size()), b * 20 + 1);
    }
  }
  w.commit();
  if (mode == "expanded") {
    EXPECT_EQ(w.expand_event_batches(), 300 - 6 + 40);
  }
  return want;
}

template <typename Row>
void expect_rows(const std::vector<Row>& got, const std::vector<Row>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(row_text(got[i]), row_text(want[i])) << what << " row " << i;
}

std::int64_t sql_int(const std::string& path, const std::string& sql) {
  sqlite::Database db(path, sqlite::OpenMode::ReadOnly);
  auto q = db.prepare(sql);
  return q.step() ? q.int64(0) : -1;
}

std::string sql_dump(const std::string& path, const std::string& table) {
  sqlite::Database db(path, sqlite::OpenMode::ReadOnly);
  auto q = db.prepare("SELECT * FROM " + table + " ORDER BY id");
  std::string out;
  while (q.step()) {
    for (int c = 0; c < q.column_count(); ++c) out += (q.is_null(c) ? std::string("NULL") : q.text(c)) + ",";
    out += "\n";
  }
  return out;
}

}  // namespace

TEST(EventBatches, ReaderDecodesWhatAKilledRunLeftAsItsRows) {
  const auto path = (temp_dir() / "killed.sqlite").string();
  const Expected want = write_trace(path, "batches");
  // 4 batches of collectives per thread (split by the plain rows), 2 of point-to-point calls.
  ASSERT_EQ(sql_int(path, "SELECT count(*) FROM event_batches"), 10);
  ASSERT_EQ(sql_int(path, "SELECT count(*) FROM collectives"), 6);    // only the plain rows
  TraceReader r(path);
  EXPECT_EQ(r.schema_version().minor, collscope::store::kSchemaMinor);
  expect_rows(r.collectives(), want.collectives, "collectives");
  expect_rows(r.rows<PointToPointRow>(), want.p2p, "point_to_point");
  EXPECT_EQ(r.row_count("collectives"), 300);
  EXPECT_EQ(r.row_count("point_to_point"), 40);
  // A projection reads only its columns, batch rows as table rows.
  std::vector<CollectiveRow> seqs;
  r.for_each<CollectiveRow>(columns<&CollectiveRow::seq, &CollectiveRow::wait_ns>(), [&](const CollectiveRow& c) { seqs.push_back(c); });
  ASSERT_EQ(seqs.size(), 300u);
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    EXPECT_EQ(seqs[i].seq, static_cast<std::int64_t>(i));
    EXPECT_EQ(seqs[i].id, 0);
    EXPECT_EQ(seqs[i].recvbuf, 0u);
    EXPECT_EQ(seqs[i].wait_ns, want.collectives[i].wait_ns);
  }
  const auto found = r.find_collective(2, 100);  // in a batch
  ASSERT_TRUE(found);
  EXPECT_EQ(row_text(*found), row_text(want.collectives[100]));
  EXPECT_EQ(row_text(*r.find_collective(2, 157)), row_text(want.collectives[157]));  // a plain row
  EXPECT_FALSE(r.find_collective(2, 301));
  // Reading changed nothing: readers never expand a file.
  EXPECT_EQ(sql_int(path, "SELECT count(*) FROM event_batches"), 10);
}

TEST(EventBatches, ExpandedAtExitTheFileHoldsTheRowsThePlainPathWrites) {
  const auto expanded = (temp_dir() / "expanded.sqlite").string();
  const auto rows = (temp_dir() / "rows.sqlite").string();
  const Expected want = write_trace(expanded, "expanded");
  write_trace(rows, "rows");
  EXPECT_EQ(sql_int(expanded, "SELECT count(*) FROM event_batches"), 0);
  EXPECT_EQ(sql_int(expanded, "SELECT count(*) FROM collectives"), 300);
  for (const char* table : {"collectives", "point_to_point"}) {
    const std::string plain = sql_dump(rows, table);
    EXPECT_FALSE(plain.empty());
    EXPECT_EQ(sql_dump(expanded, table), plain) << table;  // plain SQL sees the same rows
  }
  TraceReader r(expanded);
  expect_rows(r.collectives(), want.collectives, "collectives");
  expect_rows(r.rows<PointToPointRow>(), want.p2p, "point_to_point");
}

TEST(EventBatches, ACorruptBatchIsOneLineNamingTheFileTableAndRow) {
  const auto good = (temp_dir() / "good.sqlite").string();
  write_trace(good, "batches");
  struct Case {
    std::string edit, expect;
  };
  const std::vector<Case> cases = {
      {"UPDATE event_batches SET payload = substr(payload, 1, length(payload) - 3) WHERE id = 2", "event_batches row 2: record 48 runs past the end of the payload (a truncated or corrupt batch)"},
      {"UPDATE event_batches SET payload = substr(payload, 1, 700) WHERE id = 2", "event_batches row 2: record "},
      {"UPDATE event_batches SET payload = CAST(payload || X'00' AS BLOB) WHERE id = 3", "event_batches row 3: 1 bytes after its last record"},
      {"UPDATE event_batches SET count = count + 1000000000000 WHERE id = 1", "event_batches row 1: count 1000000000007 does not fit"},
      {"UPDATE event_batches SET count = count - 1 WHERE id = 1", "event_batches row 1: "},
      {"UPDATE event_batches SET count = -1 WHERE id = 1", "event_batches row 1: count -1 does not fit"},
      {"UPDATE event_batches SET format_version = 9 WHERE id = 3", "event_batches row 3: format version 9"},
      {"UPDATE event_batches SET first_id = 1 WHERE id = 2", "event_batches row 2: first_id 1 overlaps"},
      {"UPDATE event_batches SET first_id = -5 WHERE id = 1", "event_batches row 1: first_id -5 is out of range"},
      {"UPDATE event_batches SET first_id = 9223372036854775807 WHERE id = 1", "event_batches row 1: first_id"},
      {"UPDATE event_batches SET payload = 'not a blob' WHERE id = 1", "event_batches row 1: payload is not a blob"},
      {"UPDATE event_batches SET payload = CAST(X'ffffffffffffffffffff7f' || substr(payload, 12) AS BLOB) WHERE id = 1", "longer than 64 bits"},
      // Flags 0, then 7 fields of 0, then a zigzag value of 2^33 for the first record's comm: 2^32, out of its range.
      {"UPDATE event_batches SET payload = CAST(X'0000000000000000' || X'8080808020' || substr(payload, 15) AS BLOB) WHERE id = 1", "record 0: comm = 4294967296 is out of range"},
      {"UPDATE collectives SET id = 3 WHERE id = 8", "collectives.id 3 is both a row and in event_batches"},
  };
  for (const Case& c : cases) {
    const auto bad = (temp_dir() / "bad.sqlite").string();
    fs::copy_file(good, bad, fs::copy_options::overwrite_existing);
    {
      sqlite::Database db(bad, sqlite::OpenMode::ReadWrite);
      db.exec(c.edit);
    }
    try {
      TraceReader r(bad);
      // Bounded by what the payloads can hold (a record is at least 13 bytes): a corrupt count cannot inflate it.
      EXPECT_LE(r.row_count("collectives"), 360) << c.edit;
      r.collectives();
      ADD_FAILURE() << "no error for: " << c.edit;
    } catch (const collscope::InputError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(bad + ": ", 0), 0u) << what;
      EXPECT_NE(what.find(c.expect), std::string::npos) << c.edit << "\n" << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

TEST(EventBatches, RecordLayoutIsTheDocumentedOne) {
  // docs/trace-format.md: each field zigzag LEB128, the difference from the previous record's (0 before the first),
  // end_ns and post_end_ns from the record's own start_ns.
  CollectiveRecord a;
  a.start_ns = 1000, a.end_ns = 1300, a.seq = 5, a.count = 64, a.bytes = 256, a.sendbuf = 0x7f00, a.recvbuf = 0x7f00;
  a.comm = 1, a.datatype = 1, a.reduce_op = 2, a.status = 0, a.op = 1;
  CollectiveRecord b = a;
  b.start_ns = 2000, b.end_ns = 2100, b.seq = 6, b.count = 32, b.bytes = 128, b.status = -1, b.op = 2;
  b.flags = kRecordRoot | kRecordNonBlocking, b.root = 0, b.post_end_ns = 2010, b.wait_ns = 50, b.wait_calls = 3;
  std::vector<std::uint8_t> bytes(2 * kMaxRecordBytes);
  BatchEncoder<CollectiveRecord> enc;
  std::uint8_t* end = enc.encode(b, enc.encode(a, bytes.data()));
  bytes.resize(static_cast<std::size_t>(end - bytes.data()));
  const std::vector<std::uint8_t> want = {
      // a: flags 0 first; start 1000 -> zigzag 2000 = d0 0f; end +300 -> 600 = d8 04; seq 5 -> 10; count 64 -> 128 =
      // 80 01; bytes 256 -> 512 = 80 04; sendbuf, recvbuf 0x7f00 -> 0xfe00 = 80 fc 03; (post_end_ns, wait_ns: not
      // non-blocking, no bytes) comm 1 -> 2; datatype 1 -> 2; reduce_op 2 -> 4; (root, peer: no flag) status 0;
      // (wait_calls) op 1 -> 2; (stream, correlation, grp: not NCCL).
      0x00, 0xd0, 0x0f, 0xd8, 0x04, 0x0a, 0x80, 0x01, 0x80, 0x04, 0x80, 0xfc, 0x03, 0x80, 0xfc, 0x03, 0x02, 0x02,
      0x04, 0x00, 0x02,
      // b: flags +5 -> 0a; start +1000 -> d0 0f; end +100 -> c8 01; seq +1 -> 02; count -32 -> 3f; bytes -128 -> ff 01;
      // sendbuf, recvbuf 0; post_end_ns +10 from start -> 14; wait_ns 50 (from the last written: none, 0) -> 64;
      // comm, datatype, reduce_op 0; root 0 -> 00; status -1 -> 01; wait_calls +3 -> 06; op +1 -> 02.
      0x0a, 0xd0, 0x0f, 0xc8, 0x01, 0x02, 0x3f, 0xff, 0x01, 0x00, 0x00, 0x14, 0x64, 0x00, 0x00, 0x00, 0x00, 0x01,
      0x06, 0x02};
  EXPECT_EQ(bytes, want);
  BatchDecoder<CollectiveRow> dec(bytes.data(), bytes.size(), 42, 2, 7, "x");
  CollectiveRow ra, rb;
  ASSERT_TRUE(dec.next(ra));
  ASSERT_TRUE(dec.next(rb));
  EXPECT_FALSE(dec.next(rb));
  EXPECT_EQ(row_text(ra), "id=42 comm=1 seq=5 op=1 count=64 datatype=1 bytes=256 reduce_op=2 root=NULL peer=NULL "
                          "sendbuf=32512 recvbuf=32512 stream=NULL thread=7 start_ns=1000 end_ns=1300 gpu_start_ns=NULL "
                          "gpu_end_ns=NULL correlation=NULL group=NULL status=0 post_end_ns=NULL wait_ns=NULL wait_calls=NULL ");
  EXPECT_EQ(row_text(rb), "id=43 comm=1 seq=6 op=2 count=32 datatype=1 bytes=128 reduce_op=2 root=0 peer=NULL "
                          "sendbuf=32512 recvbuf=32512 stream=NULL thread=7 start_ns=2000 end_ns=2100 gpu_start_ns=NULL "
                          "gpu_end_ns=NULL correlation=NULL group=NULL status=-1 post_end_ns=2010 wait_ns=50 wait_calls=3 ");
  // A batch of format 1 (schema 1.3-1.5 writers): every field but stream, correlation, grp, in table order.
  const std::vector<std::uint8_t> v1 = {
      // a: every field, flags last (post_end_ns written as start_ns: 0).
      0xd0, 0x0f, 0xd8, 0x04, 0x0a, 0x80, 0x01, 0x80, 0x04, 0x80, 0xfc, 0x03, 0x80, 0xfc, 0x03, 0x00, 0x00, 0x02,
      0x02, 0x04, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00,
      0xd0, 0x0f, 0xc8, 0x01, 0x02, 0x3f, 0xff, 0x01, 0x00, 0x00, 0x14, 0x64, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
      0x06, 0x02, 0x0a};
  BatchDecoder<CollectiveRow> old(v1.data(), v1.size(), 42, 2, 7, "x", 1);
  CollectiveRow oa, ob;
  ASSERT_TRUE(old.next(oa));
  ASSERT_TRUE(old.next(ob));
  EXPECT_FALSE(old.next(ob));
  EXPECT_EQ(row_text(oa), row_text(ra));
  EXPECT_EQ(row_text(ob), row_text(rb));
  EXPECT_EQ(event_batch_problem(1, 1, 2, 1, v1.size(), 0), "");
  EXPECT_NE(event_batch_problem(3, 1, 2, 1, 100, 0).find("format version 1 is not one this collscope reads for kind 3"),
            std::string::npos);
}

namespace {

// Saves records of one kind as the tracer's writer does (tracer/src/preload/core/writer.cpp): into a batch with
// batches on, else each as its row; returns the row's id.
template <typename Record>
struct Saver {
  std::vector<std::uint8_t> bytes;
  std::int64_t count = 0;
  BatchEncoder<Record> encoder;
  std::int64_t save(TraceWriter& w, bool batches, const Record& r, std::int64_t thread = 0) {
    if (!batches) {
      if constexpr (std::is_same_v<Record, CollectiveGpuTimesRecord>) {
        w.set_collective_gpu_times(r.collective, r.gpu_start_ns, r.gpu_end_ns);  // an update of the row
        return 0;
      } else {
        w.add(row_of(r, 0, thread));
        return w.last_id();
      }
    }
    const std::int64_t id = w.next_id(BatchRecordTraits<Record>::kind) + count;
    const std::size_t at = bytes.size();
    bytes.resize(at + kMaxRecordBytes);
    bytes.resize(static_cast<std::size_t>(encoder.encode(r, bytes.data() + at) - bytes.data()));
    ++count;
    return id;
  }
  void flush(TraceWriter& w, std::int64_t thread = 0) {
    if (count) w.add_event_batch(BatchRecordTraits<Record>::kind, thread, count, bytes.data(), bytes.size());
    bytes.clear(), count = 0, encoder.reset();
  }
};

// A rank file of every record kind of schema 1.6, written with batches or with rows (COLLSCOPE_EVENT_BATCHES=0):
// NCCL collectives whose GPU times come later (some twice, the span grown), NVTX ranges of every shape, GPU
// activities, and buffers whose totals are saved at every drain.
void write_every_kind(const std::string& path, bool batches) {
  TraceWriter w(path);
  w.begin();
  const std::int64_t datatype = w.intern("ncclFloat32"), kernel = w.intern("ncclDevKernel_AllReduce");
  Saver<CollectiveRecord> collectives;
  Saver<NvtxRangeRecord> ranges;
  Saver<GpuActivityRecord> activities;
  Saver<BufferRecord> buffers;
  Saver<CollectiveGpuTimesRecord> gpu_times;
  std::vector<std::int64_t> collective_ids;
  std::map<std::uint64_t, BufferRecord> totals;
  for (int drain = 0; drain < 3; ++drain) {
    for (int i = drain * 20; i < drain * 20 + 20; ++i) {
      CollectiveRecord c = collective_record(i);
      c.flags &= static_cast<std::uint8_t>(~kRecordNonBlocking);  // NCCL calls have no MPI request times
      c.datatype = static_cast<std::uint32_t>(datatype);
      c.stream = 0x5500 + i % 2, c.correlation = 1000 + i, c.group = i % 3 ? i / 3 : 0, c.flags |= kRecordNccl;
      collective_ids.push_back(collectives.save(w, batches, c, 1 + drain % 2));
      NvtxRangeRecord n;
      n.start_ns = 5'000'000 + i * 100, n.thread = 1 + i % 2, n.domain = i % 4 ? 0 : datatype, n.name = kernel;
      n.kind = static_cast<std::uint8_t>(i % 3), n.category = i % 5, n.depth = n.kind == 0 ? i % 4 : 0;
      if (n.kind != 2 && i % 7) n.end_ns = n.start_ns + 50 + i, n.flags |= kRecordEnded;
      if (n.kind == 1 && i % 7) n.end_thread = 3, n.flags |= kRecordEndThread;
      if (i % 4 == 1) n.payload = -i, n.flags |= kRecordPayloadInt;
      if (i % 4 == 2) n.payload = std::bit_cast<std::int64_t>(0.25 * i), n.flags |= kRecordPayloadDouble;
      if (i % 3 == 0) n.color = 0xff00ff00u + i, n.flags |= kRecordColor;
      ranges.save(w, batches, n);
      GpuActivityRecord g;
      g.start_ns = 6'000'000 + i * 1000, g.end_ns = g.start_ns + 400, g.correlation = 77 + i, g.stream = 13;
      g.name = kernel, g.bytes = i % 2 ? 4096 : 0, g.device = 0, g.kind = static_cast<std::uint8_t>(i % 4);
      if (g.kind == 1) g.copy_kind = 8, g.flags |= kRecordCopyKind;
      activities.save(w, batches, g);
      const std::uint64_t address = i % 3 == 0 ? 0x7f0000001000ULL : i % 3 == 1 ? 0x7f0000200000ULL : 0x8000000000000040ULL;
      BufferRecord& b = totals[address];
      if (b.uses == 0) b.address = address, b.first_ns = c.start_ns, b.bytes_min = c.bytes;
      b.bytes_max = std::max(b.bytes_max, c.bytes), b.bytes_min = std::min(b.bytes_min, c.bytes);
      b.bytes_total += c.bytes, b.uses += 1, b.last_ns = c.start_ns, b.tensors_packed += 2, b.bytes_packed += 64;
    }
    // End of a drain: the GPU times found so far (the first 10 calls again, their span grown), the buffers' totals.
    for (std::size_t k = drain == 0 ? 0 : 10; k < collective_ids.size(); k += 3) {
      const CollectiveGpuTimesRecord t{.gpu_start_ns = 9'000'000 + static_cast<std::int64_t>(k) * 10,
                                       .gpu_end_ns = 9'000'500 + drain * 1000 + static_cast<std::int64_t>(k),
                                       .collective = collective_ids[k]};
      gpu_times.save(w, batches, t);
    }
    for (const auto& [address, b] : totals) buffers.save(w, batches, b);
    collectives.flush(w, 1 + drain % 2);
    ranges.flush(w), activities.flush(w), buffers.flush(w), gpu_times.flush(w);
    w.commit();
    w.begin();
  }
  w.commit();
}

std::string sql_dump_by(const std::string& path, const std::string& table, const std::string& order) {
  sqlite::Database db(path, sqlite::OpenMode::ReadOnly);
  auto q = db.prepare("SELECT * FROM " + table + " ORDER BY " + order);
  std::string out;
  while (q.step()) {
    for (int c = 0; c < q.column_count(); ++c) out += (q.is_null(c) ? std::string("NULL") : q.text(c)) + ",";
    out += "\n";
  }
  return out;
}

template <typename Row>
std::vector<std::string> texts(const TraceReader& r) {
  std::vector<std::string> out;
  r.for_each<Row>([&](const Row& row) { out.push_back(row_text(row)); });
  return out;
}

}  // namespace

TEST(EventBatches, EveryKindReadsAsTheRowsOfTheRowPath) {
  const auto batched = (temp_dir() / "kinds-batched.sqlite").string();
  const auto rows = (temp_dir() / "kinds-rows.sqlite").string();
  write_every_kind(batched, true);
  write_every_kind(rows, false);
  // Nothing but batches in the batched file: every kind went through them.
  for (const char* table : {"collectives", "nvtx_ranges", "gpu_activities", "buffers"})
    EXPECT_EQ(sql_int(batched, std::string("SELECT count(*) FROM ") + table), 0) << table;
  EXPECT_EQ(sql_int(batched, "SELECT count(DISTINCT kind) FROM event_batches"), 5);
  TraceReader b(batched), p(rows);
  EXPECT_EQ(texts<CollectiveRow>(b), texts<CollectiveRow>(p));
  EXPECT_EQ(texts<NvtxRangeRow>(b), texts<NvtxRangeRow>(p));
  EXPECT_EQ(texts<GpuActivityRow>(b), texts<GpuActivityRow>(p));
  EXPECT_EQ(texts<BufferRow>(b), texts<BufferRow>(p));
  for (const char* table : {"collectives", "nvtx_ranges", "gpu_activities", "buffers"})
    EXPECT_EQ(b.row_count(table), p.row_count(table)) << table;
  EXPECT_EQ(b.row_count("buffers"), 3);
  EXPECT_EQ(b.row_count("nvtx_ranges"), 60);
  // The GPU times joined on: the last record of a row wins; a projection without them reads none.
  const auto c = b.collectives();
  ASSERT_EQ(c.size(), 60u);
  EXPECT_EQ(c[3].gpu_end_ns, 9'000'500 + 3);
  EXPECT_EQ(c[13].gpu_end_ns, 9'000'500 + 2 * 1000 + 13);
  EXPECT_FALSE(c[1].gpu_start_ns);
  EXPECT_EQ(row_text(*b.find_collective(c[13].comm, c[13].seq)), row_text(c[13]));
  b.for_each<CollectiveRow>(columns<&CollectiveRow::seq>(), [](const CollectiveRow& r) { EXPECT_FALSE(r.gpu_end_ns); });
  // A projection of buffers keeps the readers' order (uses DESC, address as SQLite compares it).
  std::vector<std::uint64_t> addresses;
  b.for_each<BufferRow>(columns<&BufferRow::address>(), [&](const BufferRow& r) { addresses.push_back(r.address); });
  EXPECT_EQ(addresses, (std::vector<std::uint64_t>{0x8000000000000040ULL, 0x7f0000001000ULL, 0x7f0000200000ULL}));
  // `collscope sql`: expanded, plain SQL sees exactly the row path's tables.
  {
    TraceWriter w(batched, TraceWriter::Existing{});
    EXPECT_EQ(w.expand_event_batches(), 3 * 60);
  }
  EXPECT_EQ(sql_int(batched, "SELECT count(*) FROM event_batches"), 0);
  EXPECT_EQ(sql_dump_by(batched, "collectives", "id"), sql_dump_by(rows, "collectives", "id"));
  EXPECT_EQ(sql_dump_by(batched, "nvtx_ranges", "id"), sql_dump_by(rows, "nvtx_ranges", "id"));
  EXPECT_EQ(sql_dump_by(batched, "gpu_activities", "id"), sql_dump_by(rows, "gpu_activities", "id"));
  EXPECT_EQ(sql_dump_by(batched, "buffers", "address"), sql_dump_by(rows, "buffers", "address"));
  EXPECT_FALSE(sql_dump_by(rows, "buffers", "address").empty());
}

TEST(EventBatches, ACorruptBatchOfANewKindNamesTheFile) {
  const auto good = (temp_dir() / "kinds-good.sqlite").string();
  write_every_kind(good, true);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"UPDATE event_batches SET payload = substr(payload, 1, length(payload) - 2) WHERE kind = 3", "runs past the end"},
      {"UPDATE event_batches SET format_version = 1 WHERE kind = 4", "format version 1 is not one this collscope reads for kind 4"},
      {"UPDATE event_batches SET payload = CAST(payload || X'00' AS BLOB) WHERE kind = 5", "1 bytes after its last record"},
      {"UPDATE event_batches SET first_id = 1 WHERE kind = 6 AND first_id > 1", "overlaps"},
      {"UPDATE event_batches SET kind = 9 WHERE kind = 3", "kind 9 is not one this collscope reads"},
  };
  for (const auto& [edit, expect] : cases) {
    const auto bad = (temp_dir() / "kinds-bad.sqlite").string();
    fs::copy_file(good, bad, fs::copy_options::overwrite_existing);
    sqlite::Database(bad, sqlite::OpenMode::ReadWrite).exec(edit);
    std::string what;
    try {
      TraceReader r(bad);
      r.nvtx_ranges(), r.gpu_activities(), r.buffers(), r.collectives();
      // An unknown kind is no reader's rows: only `collscope sql` meets it.
      TraceWriter(bad, TraceWriter::Existing{}).expand_event_batches();
    } catch (const collscope::Error& e) {
      what = e.what();
    }
    EXPECT_EQ(what.rfind(bad + ": event_batches row ", 0), 0u) << edit << "\n" << what;
    EXPECT_NE(what.find(expect), std::string::npos) << edit << "\n" << what;
  }
}
