// Ground truth for the exports of point-to-point messages: real Open MPI runs of halo_probe traced with the
// preload, whose messages are known exactly (tests/analyzer/halo_probe.cpp):
//   halo      4 ranks, 5 steps: per step each rank MPI_Irecv from both neighbours (tag 1 from the left, 0 from the
//             right), MPI_Isend to both, 1024 doubles (8192 B) each, MPI_Waitall, MPI_Allreduce of 1 double; one
//             MPI_Barrier before. Per rank: 10 isends, 10 irecvs, 1 barrier, 5 allreduces; 40 messages in all.
//   pingpong  2 ranks, osu_latency's pattern: per size (8, 512, 4096, 65536 B) one barrier and 10 round trips of
//             blocking MPI_Send / MPI_Recv with tag 100 + the size's index. Per rank: 40 sends, 40 receives,
//             5 barriers; 80 messages in all.
// The Chrome export is read back as JSON.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
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
