#pragma once
// The account a probe program gives of its own MPI calls (mpi_calls_probe.c, the Fortran and Python probes), and
// the comparison of that account with the trace: every call the program says it made, in its order per
// communicator, with its counts, bytes, root, peers and tags, and nothing else.
#include <collscope/store/trace_reader.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "../common/run_process.hpp"

namespace collscope::testing {

// What rank `rank` of a probe run with COLLSCOPE_PROBE_OUT=`account` wrote (account.R), "" if nothing.
inline std::string account_of(const std::filesystem::path& account, int rank) {
  std::ifstream in(account.string() + "." + std::to_string(rank));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// One line "rank R: coll OP comm=C count=N bytes=B root=T".
struct ExpectedCollective {
  std::string op, comm;
  std::int64_t count = 0, bytes = 0;
  int root = -1;
};

// The collectives rank `rank` says it made, per communicator name (world, split, cart, ...), in order.
inline std::map<std::string, std::vector<ExpectedCollective>> expected_collectives(const std::string& out, int rank) {
  std::map<std::string, std::vector<ExpectedCollective>> by_comm;
  const std::regex line("rank " + std::to_string(rank) +
                        R"(: coll (\w+) comm=(\w+) count=(-?\d+) bytes=(-?\d+) root=(-?\d+))");
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (!std::regex_search(l, m, line)) continue;
    by_comm[m[2]].push_back({m[1], m[2], std::stoll(m[3]), std::stoll(m[4]), std::stoi(m[5])});
  }
  return by_comm;
}

// The trace's name of the communicator a probe calls `name`.
inline std::string comm_prefix(const std::string& name) {
  if (name == "world") return "MPI_COMM_WORLD";
  if (name == "self") return "MPI_COMM_SELF";
  if (name == "cart") return "cart_create(";
  return name + "(";
}

inline const store::CommunicatorRow* comm_named(const std::vector<store::CommunicatorRow>& comms,
                                                const std::string& probe_name) {
  const std::string prefix = comm_prefix(probe_name);
  for (const auto& c : comms)
    if (c.name.rfind(prefix, 0) == 0) return &c;
  return nullptr;
}

// Non-blocking and persistent calls carry when their posting call returned and the time their completion calls
// took (within the row's span); blocking calls carry neither.
template <typename Row>
void expect_completion_times(const Row& r, const std::string& op, const std::string& where) {
  // (MPI_Iprobe and MPI_Improbe poll: no request, nothing to complete.)
  const bool nonblocking = (op[0] == 'i' && op != "iprobe" && op != "improbe") || op.ends_with("_init");
  ASSERT_EQ(r.post_end_ns.has_value(), nonblocking) << where;
  EXPECT_EQ(r.wait_ns.has_value(), nonblocking) << where;
  if (!nonblocking || !r.post_end_ns || !r.wait_ns) return;
  EXPECT_LE(r.start_ns, *r.post_end_ns) << where;
  EXPECT_LE(*r.post_end_ns, r.end_ns) << where;
  EXPECT_GE(*r.wait_ns, 0) << where;
  EXPECT_LE(*r.wait_ns, r.end_ns - r.start_ns) << where;
  EXPECT_GE(r.wait_calls.value_or(0), 1) << where;
}

// Every collective of the account is in the trace, in order (seq 0, 1, ... on its communicator), with its op,
// count, bytes and root; and the trace has no other collective on those communicators.
inline void expect_collectives_match(const store::TraceReader& trace, const std::string& out, int rank) {
  const auto expected = expected_collectives(out, rank);
  ASSERT_FALSE(expected.empty()) << "rank " << rank << " printed no collective";
  const auto comms = trace.communicators();
  const auto rows = trace.collectives();
  for (const auto& [name, calls] : expected) {
    const store::CommunicatorRow* comm = comm_named(comms, name);
    ASSERT_TRUE(comm) << "rank " << rank << ": no communicator " << name << " in " << trace.path();
    std::vector<store::CollectiveRow> on;
    for (const auto& r : rows)
      if (r.comm == comm->id) on.push_back(r);
    std::sort(on.begin(), on.end(), [](const auto& a, const auto& b) { return a.seq < b.seq; });
    ASSERT_EQ(on.size(), calls.size()) << "rank " << rank << " on " << name;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const auto& c = calls[i];
      const auto& r = on[i];
      const std::string where = "rank " + std::to_string(rank) + " " + name + " call " + std::to_string(i) + " (" +
                                c.op + ")";
      EXPECT_EQ(r.seq, static_cast<std::int64_t>(i)) << where;
      EXPECT_EQ(store::op_name(r.op), c.op) << where;
      EXPECT_EQ(r.count, c.count) << where;
      EXPECT_EQ(r.bytes, c.bytes) << where;
      EXPECT_EQ(r.root.value_or(-1), c.root) << where;
      EXPECT_EQ(r.status, 0) << where;
      EXPECT_LE(r.start_ns, r.end_ns) << where;
      expect_completion_times(r, c.op, where);
    }
  }
}

// One line "rank R: p2p OP comm=C count=N send=PEER/TAG/BYTES recv=PEER/TAG/BYTES" ("-": no such side, PEER
// "null": MPI_PROC_NULL).
struct ExpectedSide {
  bool present = false;
  std::int32_t peer = 0;
  std::int32_t tag = 0;
  std::int64_t bytes = 0;
};
struct ExpectedMessage {
  std::string op, comm;
  std::int64_t count = 0;
  ExpectedSide send, recv;
};

inline ExpectedSide parse_side(const std::string& text) {
  ExpectedSide side;
  if (text == "-") return side;
  std::smatch m;
  const std::regex re(R"((null|-?\d+)/(-?\d+)/(-?\d+))");
  if (!std::regex_match(text, m, re)) return side;
  side.present = true;
  side.peer = m[1] == "null" ? store::kPeerProcNull : std::stoi(m[1]);
  side.tag = std::stoi(m[2]);
  side.bytes = std::stoll(m[3]);
  return side;
}

inline std::map<std::string, std::vector<ExpectedMessage>> expected_messages(const std::string& out, int rank) {
  std::map<std::string, std::vector<ExpectedMessage>> by_comm;
  const std::regex line("rank " + std::to_string(rank) + R"(: p2p (\w+) comm=(\w+) count=(-?\d+) send=(\S+) recv=(\S+))");
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (!std::regex_search(l, m, line)) continue;
    by_comm[m[2]].push_back({m[1], m[2], std::stoll(m[3]), parse_side(m[4]), parse_side(m[5])});
  }
  return by_comm;
}

// Every point-to-point call of the account is in the trace's point_to_point table, in order (seq 0, 1, ... on
// its communicator), with its op, count, and each side's peer (a world rank), tag and bytes; nothing else is.
inline void expect_messages_match(const store::TraceReader& trace, const std::string& out, int rank) {
  const auto expected = expected_messages(out, rank);
  const auto comms = trace.communicators();
  const auto rows = trace.rows<store::PointToPointRow>();
  std::size_t matched_rows = 0;
  for (const auto& [name, calls] : expected) {
    const store::CommunicatorRow* comm = comm_named(comms, name);
    ASSERT_TRUE(comm) << "rank " << rank << ": no communicator " << name << " in " << trace.path();
    std::vector<store::PointToPointRow> on;
    for (const auto& r : rows)
      if (r.comm == comm->id) on.push_back(r);
    std::sort(on.begin(), on.end(), [](const auto& a, const auto& b) { return a.seq < b.seq; });
    ASSERT_EQ(on.size(), calls.size()) << "rank " << rank << " point-to-point on " << name;
    matched_rows += on.size();
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const auto& c = calls[i];
      const auto& r = on[i];
      const std::string where = "rank " + std::to_string(rank) + " " + name + " message " + std::to_string(i) +
                                " (" + c.op + ")";
      EXPECT_EQ(r.seq, static_cast<std::int64_t>(i)) << where;
      EXPECT_EQ(store::op_name(r.op), c.op) << where;
      EXPECT_EQ(r.count, c.count) << where;
      EXPECT_EQ(r.send_peer.has_value(), c.send.present) << where;
      if (c.send.present && r.send_peer) {
        EXPECT_EQ(*r.send_peer, c.send.peer) << where;
        EXPECT_EQ(r.send_tag.value_or(-999), c.send.tag) << where;
        EXPECT_EQ(r.send_bytes.value_or(-1), c.send.bytes) << where;
      }
      EXPECT_EQ(r.recv_peer.has_value(), c.recv.present) << where;
      if (c.recv.present && r.recv_peer) {
        EXPECT_EQ(*r.recv_peer, c.recv.peer) << where;
        EXPECT_EQ(r.recv_tag.value_or(-999), c.recv.tag) << where;
        EXPECT_EQ(r.recv_bytes.value_or(-1), c.recv.bytes) << where;
      }
      EXPECT_EQ(r.status, 0) << where;
      EXPECT_LE(r.start_ns, r.end_ns) << where;
      expect_completion_times(r, c.op, where);
    }
  }
  EXPECT_EQ(matched_rows, rows.size()) << "rank " << rank << ": point-to-point rows the program did not report";
}

// A probe run under `collscope trace`, each rank's account in account.R.
struct ProbeRun {
  ProcessResult result;
  std::filesystem::path dir, account;
};

inline std::string bin_dir() { return env_or("COLLSCOPE_BIN", "build/bin"); }

inline ProbeRun run_traced_probe(const std::string& name, const std::vector<std::string>& job,
                                 std::vector<std::pair<std::string, std::string>> env = {}) {
  namespace fs = std::filesystem;
  ProbeRun run;
  run.dir = fs::temp_directory_path() / ("collscope-probe-test-" + std::to_string(getpid())) / name;
  fs::remove_all(run.dir);
  fs::create_directories(run.dir.parent_path());
  run.account = run.dir.string() + "-account";
  std::vector<std::string> argv = {bin_dir() + "/collscope", "trace", "-o", run.dir.string(), "--"};
  argv.insert(argv.end(), job.begin(), job.end());
  env.emplace_back("COLLSCOPE_PROBE_OUT", run.account.string());
  run.result = run_process(argv, env, 120);
  return run;
}

// The run ended well, said nothing from collscope, and each of its `ranks` ranks' account matches its trace.
inline void expect_probe_traced_exactly(const ProbeRun& run, const std::string& abi, int ranks = 2) {
  const auto& r = run.result;
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err.find("collscope:"), std::string::npos) << r.err;  // nothing to warn about
  for (int rank = 0; rank < ranks; ++rank) {
    const std::string said = account_of(run.account, rank);
    ASSERT_NE(said.find("rank " + std::to_string(rank) + ": done"), std::string::npos) << said << r.out << r.err;
    store::TraceReader trace((run.dir / store::rank_file_name(rank)).string());
    EXPECT_EQ(trace.meta_value("mpi_abi").value_or(""), abi);
    expect_collectives_match(trace, said, rank);
    expect_messages_match(trace, said, rank);
  }
}

}  // namespace collscope::testing
