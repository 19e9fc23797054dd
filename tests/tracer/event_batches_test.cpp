// Event batches (schema 1.3) on real Open MPI jobs: the C probe's every collective and point-to-point call, 2 ranks,
// traced two ways. A run written with batches (the default, left as batches at exit since 1.5) reads through the
// store's reader as exactly the rows of the row-per-event path (COLLSCOPE_EVENT_BATCHES=0), `collscope analyze`
// reads it, and after `collscope sql` plain SQL sees those rows and no batch is left.
#include <collscope/store/sqlite.hpp>
#include <collscope/store/trace_reader.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../common/absent_dir.hpp"
#include "../common/run_process.hpp"

namespace fs = std::filesystem;
using namespace collscope::store;
using collscope::testing::env_or;
using collscope::testing::run_process;

namespace {

const std::string kBin = env_or("COLLSCOPE_BIN", "build/bin");

fs::path fresh_dir(const std::string& name) { return collscope::testing::absent_dir("collscope-event-batches-test", name); }

void trace_probe(const fs::path& dir, std::vector<std::pair<std::string, std::string>> env) {
  std::vector<std::string> argv = {kBin + "/collscope", "trace", "-o", dir.string(), "--"};
  for (const auto& a : collscope::testing::mpirun(2)) argv.push_back(a);
  argv.push_back(kBin + "/mpi_calls_probe_openmpi");
  const auto r = run_process(argv, env, 120);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
}

// The calls of a rank file, one line each, without what differs between two runs of the same program (times,
// addresses, the number of MPI_Test calls a polling loop made), sorted by communicator, op and seq. Read through
// the store's reader (which decodes batches) or with plain SQL (which sees only rows).
std::vector<std::string> calls_via_reader(const fs::path& file) {
  TraceReader r(file.string());
  const auto strings = r.strings();
  std::map<std::int64_t, std::string> comm_names;
  for (const auto& c : r.communicators()) comm_names[c.id] = c.name;
  auto opt = [](const auto& v) { return v ? std::to_string(*v) : std::string("NULL"); };
  std::vector<std::string> out;
  for (const auto& c : r.collectives())
    out.push_back(fmt::format("coll {} {} {} {} {} {} {} {} {} {} {} {}", comm_names[c.comm], c.seq, int(c.op), c.count,
                              strings.at(c.datatype), c.bytes, strings.at(c.reduce_op), opt(c.root), opt(c.peer),
                              c.thread, c.status, c.post_end_ns ? 1 : 0));
  r.for_each<PointToPointRow>([&](const PointToPointRow& p) {
    out.push_back(fmt::format("p2p {} {} {} {} {} {} {} {} {} {} {} {} {} {}", comm_names[p.comm], p.seq, int(p.op),
                              p.count, strings.at(p.datatype), opt(p.send_peer), opt(p.send_tag), opt(p.send_bytes),
                              opt(p.recv_peer), opt(p.recv_tag), opt(p.recv_bytes), p.thread, p.status,
                              p.post_end_ns ? 1 : 0));
  });
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> calls_via_sql(const fs::path& file) {
  sqlite::Database db(file.string(), sqlite::OpenMode::ReadOnly);
  std::vector<std::string> out;
  auto q = db.prepare(
      "SELECT 'coll ' || m.name || ' ' || c.seq || ' ' || c.op || ' ' || c.count || ' ' || d.value || ' ' || c.bytes "
      "|| ' ' || r.value || ' ' || coalesce(c.root, 'NULL') || ' ' || coalesce(c.peer, 'NULL') || ' ' || c.thread || "
      "' ' || c.status || ' ' || (c.post_end_ns IS NOT NULL) FROM collectives c JOIN communicators m ON m.id = c.comm "
      "JOIN strings d ON d.id = c.datatype JOIN strings r ON r.id = c.reduce_op");
  while (q.step()) out.push_back(q.text(0));
  auto p = db.prepare(
      "SELECT 'p2p ' || m.name || ' ' || p.seq || ' ' || p.op || ' ' || p.count || ' ' || d.value || ' ' || "
      "coalesce(send_peer, 'NULL') || ' ' || coalesce(send_tag, 'NULL') || ' ' || coalesce(send_bytes, 'NULL') || ' ' "
      "|| coalesce(recv_peer, 'NULL') || ' ' || coalesce(recv_tag, 'NULL') || ' ' || coalesce(recv_bytes, 'NULL') || "
      "' ' || p.thread || ' ' || p.status || ' ' || (p.post_end_ns IS NOT NULL) FROM point_to_point p JOIN "
      "communicators m ON m.id = p.comm JOIN strings d ON d.id = p.datatype");
  while (p.step()) out.push_back(p.text(0));
  std::sort(out.begin(), out.end());
  return out;
}

std::int64_t sql_int(const fs::path& file, const std::string& sql) {
  sqlite::Database db(file.string(), sqlite::OpenMode::ReadOnly);
  auto q = db.prepare(sql);
  return q.step() ? q.int64(0) : -1;
}

}  // namespace

TEST(EventBatches, BatchedRunsHoldTheRowsOfTheRowPathAndSqlMakesThemRows) {
  const auto rows = fresh_dir("rows"), batches = fresh_dir("batches");
  trace_probe(rows, {{"COLLSCOPE_EVENT_BATCHES", "0"}});
  trace_probe(batches, {});
  std::map<int, std::vector<std::string>> wanted;
  for (int rank : {0, 1}) {
    const std::string f = rank_file_name(rank);
    const auto want = calls_via_sql(rows / f);
    ASSERT_GT(want.size(), 50u) << "the probe makes every kind of call";
    EXPECT_GT(sql_int(rows / f, "SELECT count(*) FROM point_to_point"), 10);
    EXPECT_EQ(TraceReader((batches / f).string()).schema_version().minor, collscope::store::kSchemaMinor);
    // As the job left it: batches, which plain SQL does not see and the reader decodes.
    EXPECT_GT(sql_int(batches / f, "SELECT count(*) FROM event_batches"), 0) << f;
    EXPECT_EQ(sql_int(batches / f, "SELECT count(*) FROM point_to_point"), 0) << f;
    EXPECT_EQ(calls_via_reader(batches / f), want) << f;
    EXPECT_EQ(calls_via_reader(rows / f), want) << f;  // the two ways of reading agree
    wanted[rank] = want;
  }
  const auto a = run_process({kBin + "/collscope", "analyze", batches.string()}, {}, 60);
  EXPECT_EQ(a.exit_code, 0) << a.out << a.err;
  // `collscope sql`: the same rows for plain SQL, and no batch left; a second time changes nothing.
  const auto s1 = run_process({kBin + "/collscope", "sql", batches.string()}, {}, 60);
  ASSERT_EQ(s1.exit_code, 0) << s1.out << s1.err;
  EXPECT_NE(s1.out.find(rank_file_name(1) + ": "), std::string::npos) << s1.out;
  for (int rank : {0, 1}) {
    const std::string f = rank_file_name(rank);
    EXPECT_EQ(calls_via_sql(batches / f), wanted[rank]) << f;
    EXPECT_EQ(sql_int(batches / f, "SELECT count(*) FROM event_batches"), 0) << f;
    EXPECT_EQ(calls_via_reader(batches / f), wanted[rank]) << f;
  }
  const auto s2 = run_process({kBin + "/collscope", "sql", (batches / rank_file_name(0)).string()}, {}, 60);
  EXPECT_EQ(s2.exit_code, 0) << s2.out << s2.err;
  EXPECT_NE(s2.out.find("already plain rows"), std::string::npos) << s2.out;
  const auto bad = run_process({kBin + "/collscope", "sql", (batches / "no-such.sqlite").string()}, {}, 60);
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("no-such.sqlite: no such trace file"), std::string::npos) << bad.err;
}

TEST(EventBatches, ACorruptBatchInARunIsNamedByTheAnalyzer) {
  const auto kept = fresh_dir("corrupt");
  trace_probe(kept, {});
  {
    sqlite::Database db((kept / rank_file_name(1)).string(), sqlite::OpenMode::ReadWrite);
    db.exec("UPDATE event_batches SET payload = substr(payload, 1, length(payload) - 10) WHERE id = "
            "(SELECT min(id) FROM event_batches)");
  }
  const auto r = run_process({kBin + "/collscope", "analyze", kept.string()}, {}, 60);
  // The run loader's rule for a bad rank file: it names the file and the problem in one line, then
  // either analyses the other ranks (exit 0, the line under "problem:") or stops (exit 2). Never a crash.
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.exit_code << r.out << r.err;
  const std::string all = r.out + r.err;
  EXPECT_NE(all.find((kept / rank_file_name(1)).string() + ": event_batches row "), std::string::npos) << all;
  EXPECT_NE(all.find("runs past the end of the payload (a truncated"), std::string::npos) << all;
  std::istringstream lines(r.err);
  for (std::string line; std::getline(lines, line);) EXPECT_EQ(line.rfind("collscope analyze: ", 0), 0u) << r.err;
}
