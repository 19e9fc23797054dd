// tables.def drives everything: the DDL the writer creates, the columns the reader decodes, projections, and
// the docs. Also: files written by the format's earlier writers (schema 1.0 and 1.1 DDL verbatim) still read.
#include <collscope/store/error.hpp>
#include <collscope/store/sqlite.hpp>
#include <collscope/store/trace_reader.hpp>
#include <collscope/store/trace_writer.hpp>

#include <gtest/gtest.h>

#include "test_support.hpp"
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using namespace collscope::store;

namespace {

fs::path temp_dir() { return collscope::test::temp_root("collscope-table-test"); }

CollectiveRow collective(int i) {
  CollectiveRow r;
  r.comm = 1 + i % 3;
  r.seq = i;
  r.op = i % 2 ? Op::Bcast : Op::Allreduce;
  r.count = 100 + i;
  r.bytes = 4 * r.count;
  if (i % 2) r.root = i % 5;
  r.sendbuf = 0x7f0000000000ULL + i;
  r.recvbuf = 0xffff800000000000ULL + i;  // high bit set: the same 64 bits back
  r.thread = 1;
  r.start_ns = 1'000'000'000'000 + i * 1000;
  r.end_ns = r.start_ns + 500;
  if (i % 7 == 0) r.gpu_start_ns = r.start_ns + 10, r.gpu_end_ns = r.start_ns + 400, r.correlation = 9000 + i;
  r.status = i % 11 == 0 ? 15 : 0;
  return r;
}

// The schema 1.1 DDL as the writers of collscope 0.1 created it (before tables.def): such files must read.
constexpr const char* kSchema11Sql = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE strings(id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ops(code INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE threads(id INTEGER PRIMARY KEY, tid INTEGER NOT NULL, name TEXT);
CREATE TABLE communicators(
  id INTEGER PRIMARY KEY, key INTEGER NOT NULL, backend TEXT NOT NULL, size INTEGER NOT NULL,
  rank INTEGER NOT NULL, parent INTEGER, color INTEGER, members TEXT NOT NULL,
  created_ns INTEGER NOT NULL, destroyed_ns INTEGER, name TEXT);
CREATE TABLE collectives(
  id INTEGER PRIMARY KEY, comm INTEGER NOT NULL, seq INTEGER NOT NULL, op INTEGER NOT NULL,
  count INTEGER NOT NULL, datatype INTEGER NOT NULL, bytes INTEGER NOT NULL, reduce_op INTEGER NOT NULL,
  root INTEGER, peer INTEGER, sendbuf INTEGER NOT NULL, recvbuf INTEGER NOT NULL, stream INTEGER,
  thread INTEGER NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
  gpu_start_ns INTEGER, gpu_end_ns INTEGER, correlation INTEGER, grp INTEGER, status INTEGER NOT NULL);
CREATE TABLE buffers(
  address INTEGER PRIMARY KEY, bytes_max INTEGER NOT NULL, bytes_min INTEGER NOT NULL,
  bytes_total INTEGER NOT NULL, uses INTEGER NOT NULL, first_ns INTEGER NOT NULL, last_ns INTEGER NOT NULL,
  tensors_packed INTEGER NOT NULL DEFAULT 0, bytes_packed INTEGER NOT NULL DEFAULT 0);
CREATE TABLE nvtx_ranges(
  id INTEGER PRIMARY KEY, domain INTEGER NOT NULL, name INTEGER NOT NULL, kind INTEGER NOT NULL,
  category INTEGER NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER, thread INTEGER NOT NULL,
  end_thread INTEGER, depth INTEGER NOT NULL, payload_int INTEGER, payload_double REAL, color INTEGER);
CREATE TABLE calls_in_flight(
  thread INTEGER PRIMARY KEY, comm INTEGER NOT NULL, seq INTEGER NOT NULL, op INTEGER NOT NULL,
  count INTEGER NOT NULL, datatype INTEGER NOT NULL, bytes INTEGER NOT NULL, reduce_op INTEGER NOT NULL,
  root INTEGER, start_ns INTEGER NOT NULL, seen_ns INTEGER NOT NULL);
CREATE TABLE gpu_activities(
  id INTEGER PRIMARY KEY, kind INTEGER NOT NULL, name INTEGER NOT NULL, device INTEGER NOT NULL,
  stream INTEGER NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, correlation INTEGER NOT NULL,
  bytes INTEGER NOT NULL, copy_kind INTEGER);
)sql";

// A file as the 0.1 writer left it, in WAL mode as a killed run does, with a few rows of each kind.
void write_old_file(const fs::path& path, const std::string& version) {
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path.string() + suffix);
  sqlite::Database db(path.string(), sqlite::OpenMode::Create);
  db.exec("PRAGMA journal_mode=WAL");
  db.exec(kSchema11Sql);
  if (version == "1.0") db.exec("DROP TABLE calls_in_flight");
  db.exec("INSERT INTO meta VALUES('schema_version', '" + version + "'), ('world_rank', '1'), ('world_size', '2')");
  db.exec("INSERT INTO strings VALUES(0, ''), (1, 'MPI_FLOAT'), (2, 'MPI_SUM'), (3, 'step')");
  db.exec("INSERT INTO threads VALUES(1, 4242, 'main'), (2, 4243, NULL)");
  db.exec("INSERT INTO communicators VALUES(1, -81985529216486896, 'mpi', 2, 1, NULL, NULL, '0,1', 5, NULL, "
          "'MPI_COMM_WORLD'), (2, 77, 'nccl', 2, 0, -81985529216486896, 3, '1,0', 6, 99, NULL)");
  db.exec("INSERT INTO collectives VALUES(1, 1, 0, 1, 256, 1, 1024, 2, NULL, NULL, 4096, 8192, NULL, 1, 100, 200, "
          "NULL, NULL, NULL, NULL, 0), (2, 2, 0, 3, 8, 1, 32, 0, 0, NULL, -1, -1, 7, 2, 300, 400, 310, 390, 55, 4, 0)");
  db.exec("INSERT INTO buffers VALUES(4096, 1024, 1024, 1024, 1, 100, 100, 0, 0)");
  db.exec("INSERT INTO nvtx_ranges VALUES(1, 0, 3, 0, 0, 50, 450, 1, NULL, 0, NULL, 2.5, NULL)");
  db.exec("INSERT INTO gpu_activities VALUES(1, 0, 3, 0, 7, 310, 390, 55, 0, NULL)");
  if (version == "1.1") db.exec("INSERT INTO calls_in_flight VALUES(1, 1, 1, 1, 256, 1, 1024, 2, NULL, 500, 1600)");
}

}  // namespace

TEST(Tables, WriterCreatesExactlyTheDeclaredColumns) {
  const auto path = (temp_dir() / "ddl.sqlite").string();
  { TraceWriter w(path); }
  sqlite::Database db(path, sqlite::OpenMode::ReadOnly);
  int tables = 0;
  for_each_table([&](auto table) {
    using T = decltype(table);
    ++tables;
    ASSERT_TRUE(db.has_table(T::name)) << T::name;
    auto q = db.prepare("SELECT name, \"notnull\", pk FROM pragma_table_info(?1) ORDER BY cid");
    q.bind(1, T::name);
    std::size_t i = 0;
    while (q.step()) {
      ASSERT_LT(i, std::size(T::columns)) << T::name << " has an undeclared column " << q.text(0);
      const ColumnInfo& c = T::columns[i++];
      EXPECT_EQ(q.text(0), c.name) << T::name;
      const bool key = c.flags.bits & column_bit::kKey;
      EXPECT_EQ(q.int64(2) != 0, key) << T::name << "." << c.name;
      if (!key) {
        EXPECT_EQ(q.int64(1) != 0, !c.nullable) << T::name << "." << c.name;
      }
    }
    EXPECT_EQ(i, std::size(T::columns)) << T::name;
  });
  EXPECT_EQ(tables, 17);
}

TEST(Tables, DocsDescribeEveryColumn) {
  std::ifstream in(COLLSCOPE_SOURCE_DIR "/docs/trace-format.md");
  ASSERT_TRUE(in) << "docs/trace-format.md not found";
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  for_each_table([&](auto table) {
    using T = decltype(table);
    // The table's section: from its heading to the next one.
    const auto start = doc.find("## `" + std::string(T::name));
    ASSERT_NE(start, std::string::npos) << "docs/trace-format.md has no section for " << T::name;
    const auto end = doc.find("\n## ", start + 4);
    const std::string section = doc.substr(start, end == std::string::npos ? std::string::npos : end - start);
    for (const ColumnInfo& c : T::columns) {
      const bool named = section.find("`" + std::string(c.name) + "`") != std::string::npos ||
                         section.find("(" + std::string(c.name) + " ") != std::string::npos ||
                         section.find(", " + std::string(c.name) + " ") != std::string::npos;
      EXPECT_TRUE(named) << "docs/trace-format.md does not describe " << T::name << "." << c.name;
    }
  });
}

TEST(Tables, IdsAreConsecutiveAcrossBatchesAndUpdatesReachWaitingRows) {
  const auto path = (temp_dir() / "ids.sqlite").string();
  const int n = 64 * 3 + 17;  // three full multi-row batches and a remainder
  {
    TraceWriter w(path);
    w.begin();
    for (int i = 0; i < n; ++i) {
      w.add_collective(collective(i));
      ASSERT_EQ(w.last_id(), i + 1);
      if (i == 130) w.set_collective_gpu_times(w.last_id(), 7, 8);  // a row still waiting for its batch
    }
    w.set_collective_gpu_times(3, 5, 6);  // a row written long ago
    w.commit();
    w.begin();
    w.add_collective(collective(n));  // a new transaction continues the ids
    EXPECT_EQ(w.last_id(), n + 1);
    w.commit();
  }
  TraceReader r(path);
  const auto rows = r.collectives();
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(n + 1));
  for (int i = 0; i <= n; ++i) {
    CollectiveRow want = collective(i);
    want.id = i + 1;
    if (i == 130) want.gpu_start_ns = 7, want.gpu_end_ns = 8;
    if (i == 2) want.gpu_start_ns = 5, want.gpu_end_ns = 6;
    const CollectiveRow& got = rows[i];
    EXPECT_EQ(got.id, want.id);
    EXPECT_EQ(got.seq, want.seq);
    EXPECT_EQ(got.op, want.op);
    EXPECT_EQ(got.root, want.root);
    EXPECT_EQ(got.recvbuf, want.recvbuf);
    EXPECT_EQ(got.start_ns, want.start_ns);
    EXPECT_EQ(got.gpu_start_ns, want.gpu_start_ns);
    EXPECT_EQ(got.gpu_end_ns, want.gpu_end_ns);
    EXPECT_EQ(got.correlation, want.correlation);
    EXPECT_EQ(got.status, want.status);
  }
}

TEST(Tables, GivenIdsAndNumberedIdsMixInOneTable) {
  // Imports give their own ids; the tracer leaves them to the writer. Batches with and without given ids must
  // agree with what last_id() said.
  const auto path = (temp_dir() / "mixed-ids.sqlite").string();
  std::vector<std::int64_t> said;
  {
    TraceWriter w(path);
    w.begin();
    for (int i = 0; i < 70; ++i) w.add_collective(collective(i)), said.push_back(w.last_id());
    CollectiveRow given = collective(70);
    given.id = 1000;
    w.add_collective(given);
    said.push_back(w.last_id());
    for (int i = 71; i < 200; ++i) w.add_collective(collective(i)), said.push_back(w.last_id());
    w.commit();
  }
  std::vector<std::int64_t> ids, seqs;
  TraceReader(path).for_each<CollectiveRow>(columns<&CollectiveRow::id, &CollectiveRow::seq>(), [&](const CollectiveRow& r) {
    ids.push_back(r.id);
    seqs.push_back(r.seq);
  });
  EXPECT_EQ(ids, said);
  ASSERT_EQ(ids.size(), 200u);
  EXPECT_EQ(ids[69], 70);
  EXPECT_EQ(ids[70], 1000);
  EXPECT_EQ(ids[71], 1001);
  EXPECT_EQ(ids[199], 1129);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(seqs[i], i);
}

TEST(Tables, ProjectionReadsOnlyTheChosenColumns) {
  const auto path = (temp_dir() / "projection.sqlite").string();
  {
    TraceWriter w(path);
    w.begin();
    for (int i = 0; i < 100; ++i) w.add_collective(collective(i));
    w.commit();
  }
  TraceReader r(path);
  int n = 0;
  r.for_each<CollectiveRow>(columns<&CollectiveRow::seq, &CollectiveRow::end_ns, &CollectiveRow::root>(),
                            [&](const CollectiveRow& row) {
                              const CollectiveRow want = collective(n++);
                              EXPECT_EQ(row.seq, want.seq);
                              EXPECT_EQ(row.end_ns, want.end_ns);
                              EXPECT_EQ(row.root, want.root);
                              EXPECT_EQ(row.id, 0);  // not read
                              EXPECT_EQ(row.start_ns, 0);
                              EXPECT_EQ(row.sendbuf, 0u);
                              EXPECT_FALSE(row.gpu_start_ns.has_value());
                            });
  EXPECT_EQ(n, 100);
  // The analysis summary is a projection too.
  n = 0;
  r.for_each_collective_summary([&](const CollectiveSummary& row) {
    const CollectiveRow want = collective(n++);
    EXPECT_EQ(row.comm, want.comm);
    EXPECT_EQ(row.start_ns, want.start_ns);
    EXPECT_EQ(row.status, want.status);
    EXPECT_EQ(row.sendbuf, want.sendbuf);  // fusion-buffer fill needs it
    EXPECT_EQ(row.recvbuf, 0u);  // not in the summary
  });
  EXPECT_EQ(n, 100);
  static_assert(columns<&CollectiveRow::id>().mask == 1);
  static_assert(columns<&CollectiveRow::status>().mask == std::uint64_t{1} << 20);
  static_assert(ColumnSet<CollectiveRow>::all().mask == (std::uint64_t{1} << 24) - 1);  // 21 columns + 3 of 1.2
}

TEST(Tables, Schema11And10FilesStillRead) {
  for (const std::string version : {"1.1", "1.0"}) {
    const auto path = (temp_dir() / ("old-" + version + ".sqlite")).string();
    write_old_file(path, version);
    TraceReader r(path);
    EXPECT_EQ(r.meta_int(meta_key::kWorldRank), 1);
    const auto strings = r.strings();
    ASSERT_EQ(strings.size(), 4u);
    const auto threads = r.threads();
    ASSERT_EQ(threads.size(), 2u);
    EXPECT_EQ(threads[1].name, "");
    const auto comms = r.communicators();
    ASSERT_EQ(comms.size(), 2u);
    EXPECT_EQ(comms[0].key, 0xfedcba9876543210ULL);
    EXPECT_EQ(comms[0].members, (std::vector<std::int32_t>{0, 1}));
    EXPECT_EQ(comms[1].backend, Backend::Nccl);
    EXPECT_EQ(comms[1].parent, 0xfedcba9876543210ULL);
    EXPECT_EQ(comms[1].destroyed_ns, 99);
    const auto colls = r.collectives();
    ASSERT_EQ(colls.size(), 2u);
    EXPECT_EQ(strings[colls[0].datatype], "MPI_FLOAT");
    EXPECT_EQ(colls[1].op, Op::Bcast);
    EXPECT_EQ(colls[1].root, 0);
    EXPECT_EQ(colls[1].sendbuf, ~std::uint64_t{0});
    EXPECT_EQ(colls[1].stream, 7u);
    EXPECT_EQ(colls[1].group, 4);
    EXPECT_EQ(colls[1].correlation, 55u);
    ASSERT_EQ(r.nvtx_ranges().size(), 1u);
    EXPECT_DOUBLE_EQ(r.nvtx_ranges()[0].payload_double.value(), 2.5);
    ASSERT_EQ(r.gpu_activities().size(), 1u);
    EXPECT_EQ(r.buffers().at(0).address, 4096u);
    EXPECT_EQ(r.calls_in_flight().size(), version == "1.1" ? 1u : 0u);
    // 1.2's table and columns: none, and NULL.
    EXPECT_TRUE(r.rows<PointToPointRow>().empty());
    EXPECT_FALSE(colls[0].post_end_ns.has_value());
    EXPECT_FALSE(colls[0].wait_ns.has_value());
  }
}

TEST(Sqlite, ErrorsNameTheFileAndTransactionsRollBack) {
  const auto path = (temp_dir() / "wrapper.sqlite").string();
  fs::remove(path);
  sqlite::Database db(path, sqlite::OpenMode::Create);
  db.exec("CREATE TABLE t(x INTEGER NOT NULL)");
  {
    sqlite::Transaction t(db);
    db.prepare("INSERT INTO t VALUES(?1)").bind(1, 5).run();
  }  // not committed: rolled back
  {
    sqlite::Transaction t(db);
    auto insert = db.prepare("INSERT INTO t VALUES(?1)");
    insert.bind(1, std::optional<std::int64_t>(7)).run();
    insert.bind(1, 8).run();
    t.commit();
  }
  auto q = db.prepare("SELECT x FROM t ORDER BY x");
  std::vector<std::int64_t> xs;
  while (q.step()) xs.push_back(q.int64(0));
  EXPECT_EQ(xs, (std::vector<std::int64_t>{7, 8}));
  std::string msg;
  try {
    db.prepare("INSERT INTO t VALUES(NULL)").run();
  } catch (const collscope::Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("wrapper.sqlite: cannot write: NOT NULL constraint failed: t.x"), std::string::npos) << msg;
  msg.clear();
  try {
    db.prepare("SELEC 1");
  } catch (const collscope::Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("wrapper.sqlite: cannot prepare SQL: near \"SELEC\""), std::string::npos) << msg;
  msg.clear();
  try {
    sqlite::Database((temp_dir() / "absent" / "x.sqlite").string(), sqlite::OpenMode::ReadOnly);
  } catch (const collscope::InputError& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("x.sqlite: cannot open: unable to open database file"), std::string::npos) << msg;
}
