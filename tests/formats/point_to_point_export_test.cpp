// Ground truth for the exports of point-to-point messages: real Open MPI runs of halo_probe traced with the
// preload, whose messages are known exactly (tests/analyzer/halo_probe.cpp):
//   halo      4 ranks, 5 steps: per step each rank MPI_Irecv from both neighbours (tag 1 from the left, 0 from the
//             right), MPI_Isend to both, 1024 doubles (8192 B) each, MPI_Waitall, MPI_Allreduce of 1 double; one
//             MPI_Barrier before. Per rank: 10 isends, 10 irecvs, 1 barrier, 5 allreduces; 40 messages in all.
//   pingpong  2 ranks, osu_latency's pattern: per size (8, 512, 4096, 65536 B) one barrier and 10 round trips of
//             blocking MPI_Send / MPI_Recv with tag 100 + the size's index. Per rank: 40 sends, 40 receives,
//             5 barriers; 80 messages in all.
// And for the OTF2 export, every kind of MPI call: tests/tracer/mpi_calls_probe.c (2 ranks) prints each call it
// makes with its peers, tags and bytes, the account the archive is compared with.
// The Chrome export is read back as JSON; the OTF2 archive with otf2-print (Debian's otf2-tools).
#include <collscope/formats/otf2.hpp>
#include <collscope/store/trace_reader.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "test_support.hpp"

namespace fs = std::filesystem;
using collscope::test::bin_dir;
using collscope::test::read_file;
using collscope::test::shell;
using nlohmann::json;

namespace {

constexpr int kHaloRanks = 4, kHaloSteps = 5, kRoundTrips = 10;
constexpr std::int64_t kPingPongBytes[] = {8, 512, 4096, 65536};

class MessageExport : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* program : {"collscope", "halo_probe"})
      if (!fs::exists(fs::path(bin_dir()) / program)) return;
    collscope::test::set_mpi_test_env();
    halo_ = trace("halo", kHaloRanks, fmt::format("--steps {} --compute-ms 2", kHaloSteps));
    pingpong_ = trace("pingpong", 2, fmt::format("--pingpong {}", kRoundTrips));
  }
  void SetUp() override {
    if (halo_.empty()) GTEST_SKIP() << "collscope or halo_probe not built in " << bin_dir();
  }

  // Traces halo_probe on `ranks` ranks into a fresh run directory; "" when the job failed (the test then fails).
  static fs::path trace(const std::string& name, int ranks, const std::string& args) {
    const fs::path dir = collscope::test::fresh_dir("collscope-p2p-export", name);
    const int rc = shell(fmt::format("timeout -s TERM 60 {0}/collscope trace -o {1} -- mpirun -np {2} --oversubscribe "
                                     "{0}/halo_probe {3} > {1}.log 2>&1",
                                     bin_dir(), dir.string(), ranks, args));
    EXPECT_EQ(rc, 0) << read_file(dir.string() + ".log");
    return rc == 0 ? dir : fs::path();
  }

  static json chrome(const fs::path& run, std::string* summary = nullptr) {
    const fs::path out = run.string() + ".json";
    EXPECT_EQ(shell(fmt::format("{}/collscope export {} -o {} 2> {}.err", bin_dir(), run.string(), out.string(), out.string())), 0)
        << read_file(out.string() + ".err");
    if (summary) *summary = read_file(out.string() + ".err");
    return json::parse(read_file(out));
  }

  static inline fs::path halo_, pingpong_;
};

// The slices and arrows of a Chrome export's point-to-point part.
struct ChromeMessages {
  // (pid, name) -> slices; every slice by (pid, tid, ts) for binding arrows.
  std::map<std::pair<int, std::string>, std::vector<json>> slices;
  std::map<std::tuple<int, std::int64_t, std::string>, json> slice_at;
  std::map<std::int64_t, std::pair<json, json>> arrows;  // id -> (s, f)
};

ChromeMessages messages_of(const json& trace) {
  ChromeMessages m;
  for (const auto& e : trace["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    if (e["ph"] == "X" && cat == "point_to_point") {
      m.slices[{e["pid"].get<int>(), e["name"].get<std::string>()}].push_back(e);
      m.slice_at[{e["pid"].get<int>(), e["tid"].get<std::int64_t>(), fmt::format("{:.3f}", e["ts"].get<double>())}] = e;
    }
    if (cat == "message") {
      auto& arrow = m.arrows[e["id"].get<std::int64_t>()];
      (e["ph"] == "s" ? arrow.first : arrow.second) = e;
    }
  }
  return m;
}

// The slice an arrow end binds to: the one starting at its time on its thread.
const json* bound(const ChromeMessages& m, const json& end) {
  auto it = m.slice_at.find({end["pid"].get<int>(), end["tid"].get<std::int64_t>(), fmt::format("{:.3f}", end["ts"].get<double>())});
  return it == m.slice_at.end() ? nullptr : &it->second;
}

}  // namespace

TEST_F(MessageExport, ChromeHaloExchangeHasEveryCallAndOneArrowPerMessage) {
  std::string summary;
  const json trace = chrome(halo_, &summary);
  const ChromeMessages m = messages_of(trace);
  for (int rank = 0; rank < kHaloRanks; ++rank) {
    const int left = (rank + kHaloRanks - 1) % kHaloRanks, right = (rank + 1) % kHaloRanks;
    // Each non-blocking call's posting call is a slice. Peer, tag, bytes: to the left with tag 0, to the right
    // with tag 1; from the left tag 1, from the right 0.
    for (const char* name : {"isend", "irecv"}) {
      const auto it = m.slices.find({rank, name});
      ASSERT_NE(it, m.slices.end()) << "rank " << rank << " " << name;
      EXPECT_EQ(it->second.size(), 2u * kHaloSteps) << "rank " << rank << " " << name;
      std::map<std::pair<int, int>, int> by_peer_tag;
      for (const auto& s : it->second) {
        EXPECT_EQ(s["args"]["bytes"], 8192) << s.dump();
        EXPECT_EQ(s["args"]["communicator"], "MPI_COMM_WORLD") << s.dump();
        ++by_peer_tag[{s["args"]["peer"].get<int>(), s["args"]["tag"].get<int>()}];
      }
      const bool sends = std::string(name) == "isend";
      const std::map<std::pair<int, int>, int> expected = {{{left, sends ? 0 : 1}, kHaloSteps}, {{right, sends ? 1 : 0}, kHaloSteps}};
      EXPECT_EQ(by_peer_tag, expected) << "rank " << rank << " " << name;
    }
    // Each step's MPI_Waitall completes all four: one completion slice listing them.
    const auto done = m.slices.find({rank, "completion (2 irecv, 2 isend)"});
    ASSERT_NE(done, m.slices.end()) << "rank " << rank;
    EXPECT_EQ(done->second.size(), static_cast<std::size_t>(kHaloSteps)) << "rank " << rank;
    for (const auto& s : done->second) EXPECT_EQ(s["args"]["requests"].size(), 4u) << s.dump();
  }
  // One arrow per message, from the send's posting call to the receive's completion on the peer, same tag.
  ASSERT_EQ(m.arrows.size(), static_cast<std::size_t>(kHaloRanks * 2 * kHaloSteps));
  for (const auto& [id, arrow] : m.arrows) {
    const auto& [s, f] = arrow;
    ASSERT_FALSE(s.is_null() || f.is_null()) << id;
    EXPECT_EQ(f.value("bp", ""), "e") << f.dump();
    const json* send = bound(m, s);
    const json* recv = bound(m, f);
    ASSERT_TRUE(send && recv) << s.dump() << " " << f.dump();
    EXPECT_EQ((*send)["name"], "isend") << send->dump();
    EXPECT_EQ((*recv)["name"], "completion (2 irecv, 2 isend)") << recv->dump();
    EXPECT_EQ((*send)["args"]["peer"], f["pid"]) << send->dump();
    // The completion lists the receive of this message: from the sender, with the send's tag.
    int receives = 0;
    for (const auto& r : (*recv)["args"]["requests"])
      receives += r["op"] == "irecv" && r["peer"] == s["pid"] && r["tag"] == (*send)["args"]["tag"];
    EXPECT_EQ(receives, 1) << recv->dump();
  }
  EXPECT_NE(summary.find("80 point-to-point calls (40 messages matched)"), std::string::npos) << summary;

  // Ranks 0 and 1 only: their calls, and the arrows between them (0 -> 1 and 1 -> 0, one per step each).
  const fs::path part = halo_.string() + "-01.json";
  ASSERT_EQ(shell(fmt::format("{}/collscope export {} -o {} --ranks 0,1 2> /dev/null", bin_dir(), halo_.string(), part.string())), 0);
  const ChromeMessages sliced = messages_of(json::parse(read_file(part)));
  std::set<int> pids;
  for (const auto& [key, slices] : sliced.slices) pids.insert(key.first);
  EXPECT_EQ(pids, (std::set<int>{0, 1}));
  std::map<std::pair<int, int>, int> directions;
  for (const auto& [id, arrow] : sliced.arrows) {
    ASSERT_TRUE(bound(sliced, arrow.first) && bound(sliced, arrow.second)) << arrow.first.dump();
    ++directions[{arrow.first["pid"].get<int>(), arrow.second["pid"].get<int>()}];
  }
  EXPECT_EQ(directions, (std::map<std::pair<int, int>, int>{{{0, 1}, kHaloSteps}, {{1, 0}, kHaloSteps}}));
}

TEST_F(MessageExport, ChromePingPongHasEverySendAndReceiveLinked) {
  const ChromeMessages m = messages_of(chrome(pingpong_));
  for (int rank = 0; rank < 2; ++rank)
    for (const char* name : {"send", "recv"}) {
      const auto it = m.slices.find({rank, name});
      ASSERT_NE(it, m.slices.end()) << rank << " " << name;
      std::map<std::pair<int, std::int64_t>, int> by_tag;
      for (const auto& s : it->second) {
        EXPECT_EQ(s["args"]["peer"], 1 - rank) << s.dump();
        ++by_tag[{s["args"]["tag"].get<int>(), s["args"]["bytes"].get<std::int64_t>()}];
      }
      std::map<std::pair<int, std::int64_t>, int> expected;
      for (int k = 0; k < 4; ++k) expected[{100 + k, kPingPongBytes[k]}] = kRoundTrips;
      EXPECT_EQ(by_tag, expected) << rank << " " << name;
    }
  ASSERT_EQ(m.arrows.size(), 2u * 4 * kRoundTrips);
  std::map<std::pair<int, int>, int> directions;
  for (const auto& [id, arrow] : m.arrows) {
    const json* send = bound(m, arrow.first);
    const json* recv = bound(m, arrow.second);
    ASSERT_TRUE(send && recv) << arrow.first.dump() << " " << arrow.second.dump();
    EXPECT_EQ((*send)["name"], "send");
    EXPECT_EQ((*recv)["name"], "recv");
    EXPECT_EQ((*send)["args"]["tag"], (*recv)["args"]["tag"]);
    EXPECT_EQ((*send)["args"]["bytes"], (*recv)["args"]["bytes"]);
    ++directions[{arrow.first["pid"].get<int>(), arrow.second["pid"].get<int>()}];
  }
  EXPECT_EQ(directions, (std::map<std::pair<int, int>, int>{{{0, 1}, 4 * kRoundTrips}, {{1, 0}, 4 * kRoundTrips}}));
}

namespace {

// One event record of otf2-print: its name, its location's rank (location ids hold the world rank in their high
// 32 bits) and its attributes.
struct Record {
  std::string event;
  int rank = 0;
  std::string attributes;
  std::string field(const std::string& name) const {
    std::smatch m;
    return std::regex_search(attributes, m, std::regex(name + ": ([^ ,]+)")) ? m[1].str() : "";
  }
};

std::vector<Record> otf2_records(const fs::path& archive) {
  const fs::path text = archive.string() + ".txt";
  EXPECT_EQ(shell(fmt::format("otf2-print {}/traces.otf2 > {} 2>&1", archive.string(), text.string())), 0) << read_file(text);
  std::vector<Record> out;
  std::istringstream in(read_file(text));
  const std::regex line(R"(^([A-Z_]+)\s+(\d+)\s+(\d+)\s*(.*)$)");
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_match(l, m, line)) out.push_back({m[1], static_cast<int>(std::stoull(m[2]) >> 32), m[4]});
  }
  return out;
}

fs::path export_otf2(const fs::path& run) {
  const fs::path dir = run.string() + "-otf2";
  fs::remove_all(dir);
  EXPECT_EQ(shell(fmt::format("{}/collscope export {} --format otf2 -o {} 2> {}.err", bin_dir(), run.string(), dir.string(), dir.string())), 0)
      << read_file(dir.string() + ".err");
  return dir;
}

std::map<std::string, int> count_events(const std::vector<Record>& records, int rank) {
  std::map<std::string, int> n;
  for (const auto& r : records)
    if (r.rank == rank && r.event != "ENTER" && r.event != "LEAVE") ++n[r.event];
  return n;
}

}  // namespace

// Without the library at configure time, --format otf2 is one line naming what is missing, exit 2.
TEST_F(MessageExport, Otf2WithoutTheLibraryIsOneLineAndExitTwo) {
  if (collscope::formats::otf2_available()) GTEST_SKIP() << "built with OTF2";
  const fs::path err = halo_.string() + ".no-otf2.err";
  EXPECT_EQ(shell(fmt::format("{}/collscope export {} --format otf2 -o {}-otf2 2> {}", bin_dir(), halo_.string(),
                              halo_.string(), err.string())),
            2);
  const std::string text = read_file(err);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_NE(text.find("without the OTF2 library"), std::string::npos) << text;
}

class Otf2Export : public MessageExport {
 protected:
  void SetUp() override {
    MessageExport::SetUp();
    if (IsSkipped()) return;
    if (!collscope::formats::otf2_available()) GTEST_SKIP() << "built without OTF2 (libopen-trace-format2-dev)";
    if (shell("command -v otf2-print > /dev/null") != 0) GTEST_SKIP() << "otf2-print (otf2-tools) not installed";
  }
};

TEST_F(Otf2Export, HaloExchangeHasEveryNonBlockingMessageAndCollectivePerRank) {
  const auto records = otf2_records(export_otf2(halo_));
  for (int rank = 0; rank < kHaloRanks; ++rank) {
    const int left = (rank + kHaloRanks - 1) % kHaloRanks, right = (rank + 1) % kHaloRanks;
    const std::map<std::string, int> expected = {
        {"MPI_ISEND", 2 * kHaloSteps},           {"MPI_ISEND_COMPLETE", 2 * kHaloSteps},
        {"MPI_IRECV_REQUEST", 2 * kHaloSteps},   {"MPI_IRECV", 2 * kHaloSteps},
        {"MPI_COLLECTIVE_BEGIN", 1 + kHaloSteps}, {"MPI_COLLECTIVE_END", 1 + kHaloSteps}};
    EXPECT_EQ(count_events(records, rank), expected) << "rank " << rank;
    std::map<std::string, int> isends, irecvs, collectives;
    for (const auto& r : records) {
      if (r.rank != rank) continue;
      // Peers are ranks of MPI_COMM_WORLD here, so world ranks.
      if (r.event == "MPI_ISEND") ++isends[r.field("Receiver") + "/" + r.field("Tag") + "/" + r.field("Length")];
      if (r.event == "MPI_IRECV") ++irecvs[r.field("Sender") + "/" + r.field("Tag") + "/" + r.field("Length")];
      if (r.event == "MPI_COLLECTIVE_END")
        ++collectives[r.field("Operation") + "/" + r.field("Root") + "/" + r.field("Sent") + "/" + r.field("Received")];
      if (r.event == "MPI_ISEND" || r.event == "MPI_IRECV" || r.event == "MPI_COLLECTIVE_END") {
        EXPECT_NE(r.attributes.find("Communicator: \"MPI_COMM_WORLD\""), std::string::npos) << r.attributes;
      }
    }
    EXPECT_EQ(isends, (std::map<std::string, int>{{fmt::format("{}/0/8192", left), kHaloSteps},
                                                   {fmt::format("{}/1/8192", right), kHaloSteps}}))
        << "rank " << rank;
    EXPECT_EQ(irecvs, (std::map<std::string, int>{{fmt::format("{}/1/8192", left), kHaloSteps},
                                                  {fmt::format("{}/0/8192", right), kHaloSteps}}))
        << "rank " << rank;
    EXPECT_EQ(collectives, (std::map<std::string, int>{{"BARRIER/NONE/0/0", 1}, {"ALLREDUCE/NONE/8/8", kHaloSteps}}))
        << "rank " << rank;
  }
}

TEST_F(Otf2Export, PingPongHasEveryBlockingSendAndReceivePerRank) {
  const fs::path archive = export_otf2(pingpong_);
  const auto records = otf2_records(archive);
  for (int rank = 0; rank < 2; ++rank) {
    const std::map<std::string, int> expected = {{"MPI_SEND", 4 * kRoundTrips}, {"MPI_RECV", 4 * kRoundTrips},
                                                 {"MPI_COLLECTIVE_BEGIN", 5}, {"MPI_COLLECTIVE_END", 5}};
    EXPECT_EQ(count_events(records, rank), expected) << "rank " << rank;
    std::map<std::string, int> sends, receives, expected_messages;
    for (int k = 0; k < 4; ++k) expected_messages[fmt::format("{}/{}/{}", 1 - rank, 100 + k, kPingPongBytes[k])] = kRoundTrips;
    for (const auto& r : records) {
      if (r.rank != rank) continue;
      if (r.event == "MPI_SEND") ++sends[r.field("Receiver") + "/" + r.field("Tag") + "/" + r.field("Length")];
      if (r.event == "MPI_RECV") ++receives[r.field("Sender") + "/" + r.field("Tag") + "/" + r.field("Length")];
    }
    EXPECT_EQ(sends, expected_messages) << "rank " << rank;
    EXPECT_EQ(receives, expected_messages) << "rank " << rank;
  }
  // Each rank's events are in time order with every region closed (OTF2's rules; otf2-print reads them in order).
  const std::string text = read_file(archive.string() + ".txt");
  EXPECT_EQ(text.find("rror"), std::string::npos) << text.substr(0, 2000);
  EXPECT_NE(read_file(archive.string() + ".err").find("80 MpiSend, 80 MpiRecv"), std::string::npos)
      << read_file(archive.string() + ".err");
}

TEST_F(Otf2Export, BadRequestsAreOneLineAndExitTwo) {
  const fs::path err = halo_.string() + ".bad.err";
  const fs::path taken = halo_.string() + "-taken";
  fs::create_directories(taken);
  std::ofstream(taken / "keep") << "x";
  for (const std::string& args : {fmt::format("export {} --format otf2", halo_.string()),
                                  fmt::format("export {} --format otf2 -o {}", halo_.string(), taken.string()),
                                  fmt::format("export {} --format otf2 -o {}/x --ranks 0", halo_.string(), taken.string())}) {
    EXPECT_EQ(shell(fmt::format("{}/collscope {} 2> {}", bin_dir(), args, err.string())), 2) << args;
    const std::string text = read_file(err);
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << args << ": " << text;
  }
  EXPECT_TRUE(fs::exists(taken / "keep"));
  EXPECT_FALSE(fs::exists(taken.string() + ".partial"));
}

// NVTX ranges are regions on their rank's thread: the fusion trainer marks step, forward, backward and optimizer.
TEST_F(Otf2Export, NvtxRangesAreRegions) {
  if (!fs::exists(fs::path(bin_dir()) / "fusion_trainer")) GTEST_SKIP() << "fusion_trainer not built";
  const fs::path run = collscope::test::fresh_dir("collscope-p2p-export", "trainer");
  ASSERT_EQ(shell(fmt::format("timeout -s TERM 60 {0}/collscope trace -o {1} -- mpirun -np 2 --oversubscribe "
                              "{0}/fusion_trainer --steps 3 --model-scale 0.02 > {1}.log 2>&1",
                              bin_dir(), run.string())),
            0)
      << read_file(run.string() + ".log");
  const fs::path archive = export_otf2(run);
  const auto records = otf2_records(archive);
  for (int rank = 0; rank < 2; ++rank) {
    collscope::store::TraceReader reader((run / collscope::store::rank_file_name(rank)).string());
    const auto strings = reader.strings();
    std::map<std::string, int> expected, got;
    reader.for_each_nvtx_range([&](const collscope::store::NvtxRangeRow& r) { ++expected[strings[static_cast<std::size_t>(r.name)]]; });
    ASSERT_FALSE(expected.empty()) << "rank " << rank << ": no NVTX ranges traced";
    for (const auto& r : records) {
      std::smatch m;
      const std::regex region("Region: \"([^\"]*)\"");
      if (r.rank == rank && r.event == "ENTER" && std::regex_search(r.attributes, m, region) && expected.count(m[1]))
        ++got[m[1]];
    }
    EXPECT_EQ(got, expected) << "rank " << rank;
  }
  // Nothing had to be cut to nest (the trainer's ranges enclose its calls).
  EXPECT_EQ(read_file(archive.string() + ".err").find("cut at its end"), std::string::npos) << read_file(archive.string() + ".err");
}

#ifdef COLLSCOPE_TEST_OPEN_MPI_PROBE
namespace {

// What the OTF2 archive of the probe's rank must hold, from its account: per record kind, "peer/tag/bytes" of each
// message, "OPERATION/root/sent/received" of each collective.
std::map<std::string, std::multiset<std::string>> expected_records(const std::string& account, int rank) {
  std::map<std::string, std::multiset<std::string>> out;
  const std::set<std::string> sends = {"send", "bsend", "ssend", "rsend", "sendrecv", "sendrecv_replace"};
  const std::set<std::string> receives = {"recv", "mrecv", "sendrecv", "sendrecv_replace"};
  const std::set<std::string> isends = {"isend", "ibsend", "issend", "irsend", "send_init", "bsend_init", "ssend_init",
                                        "rsend_init", "isendrecv", "isendrecv_replace"};
  const std::set<std::string> irecvs = {"irecv", "recv_init", "imrecv", "isendrecv", "isendrecv_replace"};
  const std::regex p2p(fmt::format(R"(rank {}: p2p (\w+) comm=\w+ count=-?\d+ send=(\S+) recv=(\S+))", rank));
  const std::regex coll(fmt::format(R"(rank {}: coll (\w+) comm=\w+ count=-?\d+ bytes=(\d+) root=(-?\d+))", rank));
  std::istringstream in(account);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_search(l, m, p2p)) {
      const std::string op = m[1], send = m[2], recv = m[3];
      // MPI_PROC_NULL ("null/...") moves nothing: a region without a message record.
      if (send != "-" && !send.starts_with("null")) {
        if (sends.count(op)) out["MPI_SEND"].insert(send);
        if (isends.count(op)) out["MPI_ISEND"].insert(send);
      }
      if (recv != "-" && !recv.starts_with("null")) {
        if (receives.count(op)) out["MPI_RECV"].insert(recv);
        if (irecvs.count(op)) out["MPI_IRECV"].insert(recv);
      }
    } else if (std::regex_search(l, m, coll)) {
      std::string op = m[1];
      const bool nonblocking = op.ends_with("_init") || op[0] == 'i';  // no blocking collective's name starts with i
      if (op.ends_with("_init")) op = op.substr(0, op.size() - 5);
      else if (op[0] == 'i') op = op.substr(1);
      if (op.starts_with("neighbor")) continue;  // no OTF2 operation: a region only
      for (auto& ch : op) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      const std::string root = m[3] == "-1" ? "NONE" : m[3].str();
      out[nonblocking ? "NON_BLOCKING_COLLECTIVE_COMPLETE" : "MPI_COLLECTIVE_END"].insert(
          fmt::format("{}/{}/{}/{}", op, root, m[2].str(), m[2].str()));
    }
  }
  return out;
}

}  // namespace

TEST_F(Otf2Export, EveryKindOfMpiCallOfTheCProbe) {
  const fs::path run = collscope::test::fresh_dir("collscope-p2p-export", "calls");
  const fs::path account = run.string() + ".account";
  ASSERT_EQ(shell(fmt::format("COLLSCOPE_PROBE_OUT={2} timeout -s TERM 60 {0}/collscope trace -o {1} -- mpirun -np 2 "
                              "--oversubscribe {0}/mpi_calls_probe_openmpi > {1}.log 2>&1",
                              bin_dir(), run.string(), account.string())),
            0)
      << read_file(run.string() + ".log");
  const auto records = otf2_records(export_otf2(run));
  for (int rank = 0; rank < 2; ++rank) {
    const auto expected = expected_records(read_file(account.string() + "." + std::to_string(rank)), rank);
    ASSERT_FALSE(expected.empty()) << "rank " << rank << ": no account";
    std::map<std::string, std::multiset<std::string>> got;
    std::map<std::string, int> starts;
    for (const auto& r : records) {
      if (r.rank != rank) continue;
      if (r.event == "MPI_SEND" || r.event == "MPI_ISEND")
        got[r.event].insert(r.field("Receiver") + "/" + r.field("Tag") + "/" + r.field("Length"));
      if (r.event == "MPI_RECV" || r.event == "MPI_IRECV")
        got[r.event].insert(r.field("Sender") + "/" + r.field("Tag") + "/" + r.field("Length"));
      if (r.event == "MPI_COLLECTIVE_END" || r.event == "NON_BLOCKING_COLLECTIVE_COMPLETE")
        got[r.event].insert(r.field("Operation") + "/" + r.field("Root") + "/" + r.field("Sent") + "/" + r.field("Received"));
      ++starts[r.event];
    }
    EXPECT_EQ(got, expected) << "rank " << rank;
    // Every completion has its start: MpiIsendComplete per MpiIsend, MpiIrecvRequest per MpiIrecv, a begin per end.
    EXPECT_EQ(starts["MPI_ISEND_COMPLETE"], starts["MPI_ISEND"]) << "rank " << rank;
    EXPECT_EQ(starts["MPI_IRECV_REQUEST"], starts["MPI_IRECV"]) << "rank " << rank;
    EXPECT_EQ(starts["MPI_COLLECTIVE_BEGIN"], starts["MPI_COLLECTIVE_END"]) << "rank " << rank;
    EXPECT_EQ(starts["NON_BLOCKING_COLLECTIVE_REQUEST"], starts["NON_BLOCKING_COLLECTIVE_COMPLETE"]) << "rank " << rank;
  }
}
#endif
