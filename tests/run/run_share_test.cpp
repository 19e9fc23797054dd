// A run loaded in shares (run/run_share.hpp), as the processes of `mpirun -np N collscope analyze RUN` load it: the
// shares, sent as bytes and assembled, give the run one process loads, down to every row, index and problem line;
// bytes that are not a whole share are one error naming where they came from, never a crash or a huge allocation.
// Runs are synthetic (the real TraceWriter), with process sets (communicators that only some files know) and a row
// out of physical range on one of them, edited with the sqlite3 shell as a corrupt file would have it.
#include <collscope/run/run.hpp>
#include <collscope/run/run_share.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/trace_reader.hpp>
#include <collscope/testing/synthetic_run.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace fs = std::filesystem;
using collscope::InputError;
using collscope::run::Run;
using collscope::run::RunLoader;
using collscope::run::RunShare;

namespace {

fs::path root() { return collscope::test::temp_root("collscope-run-share"); }

// 6 ranks on two parity process sets, a straggler, and rank 3's process-set call 2 out of physical range (left
// out, keeping its place in its communicator's sequence).
fs::path run_with_process_sets() {
  const fs::path dir = root() / "run";
  fs::remove_all(dir);
  collscope::testing::SyntheticRunSpec spec;
  spec.ranks = 6;
  spec.steps = 6;
  spec.process_sets = true;
  spec.slow_rank = 4;
  spec.slow_ms = 3;
  spec.cpu_samples = 1;
  collscope::testing::write_synthetic_run(dir.string(), spec);
  const fs::path file = dir / "rank-00003.sqlite";
  const std::string edit =
      "UPDATE collectives SET end_ns = start_ns - 5000000 WHERE id = (SELECT id FROM collectives WHERE comm = "
      "(SELECT id FROM communicators WHERE size < 6 LIMIT 1) ORDER BY id LIMIT 1 OFFSET 2)";
  EXPECT_EQ(collscope::test::shell("sqlite3 " + collscope::test::shell_quote(file.string()) + " " +
                                   collscope::test::shell_quote(edit)),
            0);
  return dir;
}

// Everything of a run that the analysis reads, by meaning (communicators by key, strings by value), one line each.
std::string dump(const Run& run) {
  std::string out = fmt::format("world {} ranks {}\n", run.world_size, run.ranks.size());
  for (const auto& p : run.problems) out += "problem " + p + "\n";
  for (const auto& c : run.communicators)
    out += fmt::format("comm {:#x} {} [{}] {} / {}\n", c.key, c.size, fmt::join(c.members, ","), c.name, c.display_name);
  const auto key = [&](int comm) { return run.communicators.at(static_cast<std::size_t>(comm)).key; };
  for (const auto& r : run.ranks) {
    out += fmt::format("rank {} {} {} {} {} {}\n", r.world_rank, r.path, r.host, r.schema_version, r.meta.size(),
                       r.events_dropped);
    for (const auto& c : r.collectives)
      out += fmt::format(" c {} {} {} {} {:#x}/{} {} {} {} {} {}\n", c.start_ns, c.end_ns, c.bytes, c.count, key(c.comm),
                         c.seq, run.strings.at(static_cast<std::size_t>(c.datatype)), c.root, int(c.op),
                         int(c.fusion_fill_pct), int(c.reduction));
    for (const auto& l : r.left_out_calls) out += fmt::format(" left out {:#x}/{}\n", key(l.comm), l.seq);
    for (const auto& n : r.nvtx_ranges)
      out += fmt::format(" n {} {} {} {}\n", run.strings.at(static_cast<std::size_t>(n.name)), n.start_ns, n.end_ns,
                         n.depth);
    for (const auto& s : r.cpu_samples) out += fmt::format(" s {} {} {} {}\n", s.thread, s.t_ns, s.cpu_ns, s.runq_ns);
    for (const auto& t : r.threads) out += fmt::format(" t {} {} {}\n", t.id, t.tid, t.name);
  }
  return out;
}

// Each process's share loaded, sent as its messages (tables, then each file) and decoded, as process 0 gets it.
std::vector<RunShare> shares_of(const fs::path& run, const std::vector<std::vector<std::size_t>>& split) {
  const auto paths = collscope::store::rank_files(run.string());
  std::vector<RunShare> shares;
  for (std::size_t p = 0; p < split.size(); ++p) {
    const RunShare loaded = RunLoader().load_share(paths, split[p]);
    const std::string origin = fmt::format("process {}'s share", p);
    auto [share, files] = collscope::run::decode_share_tables(collscope::run::encode_share_tables(loaded), origin);
    EXPECT_EQ(files, split[p].size());
    for (const auto& f : loaded.files)
      share.files.push_back(collscope::run::decode_loaded_file(collscope::run::encode_loaded_file(f), origin, share));
    shares.push_back(std::move(share));
  }
  return shares;
}

}  // namespace

TEST(RunShare, SharesSentAsBytesAssembleIntoTheRunOneProcessLoads) {
  const fs::path run = run_with_process_sets();
  const collscope::run::Run whole = collscope::run::load_run(run.string());
  ASSERT_EQ(whole.ranks.size(), 6u);
  ASSERT_EQ(whole.ranks[3].left_out_calls.size(), 1u) << dump(whole);
  // The left-out call is on a process set rank 3 belongs to, whatever order the communicators were met in.
  const auto& set = whole.communicators.at(static_cast<std::size_t>(whole.ranks[3].left_out_calls[0].comm));
  EXPECT_LT(set.size, 6);
  EXPECT_NE(std::find(set.members.begin(), set.members.end(), 3), set.members.end()) << dump(whole);
  const std::string expected = dump(whole);
  // Files out of order, one process with none (more processes than files), one with most.
  for (const auto& split : std::vector<std::vector<std::vector<std::size_t>>>{
           {{0, 1, 2, 3, 4, 5}}, {{5, 1}, {}, {3, 0, 4}, {2}}, {{1, 3, 5}, {0, 2, 4}}}) {
    SCOPED_TRACE(split.size());
    EXPECT_EQ(dump(RunLoader::assemble(run.string(), shares_of(run, split))), expected);
  }
}

TEST(RunShare, BytesThatAreNotAWholeMessageAreOneErrorNamingTheirOrigin) {
  const fs::path run = run_with_process_sets();
  const auto paths = collscope::store::rank_files(run.string());
  const RunShare loaded = RunLoader().load_share(paths, {1, 3});
  const std::string tables = collscope::run::encode_share_tables(loaded);
  const std::string file = collscope::run::encode_loaded_file(loaded.files[1]);
  const std::string origin = "process 2's share of RUN";
  const auto [share, files] = collscope::run::decode_share_tables(tables, origin);
  ASSERT_EQ(files, 2u);
  const auto one_error = [&](const std::function<void()>& decode, const std::string& what) {
    try {
      decode();
      ADD_FAILURE() << what << " was read";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(origin + ": not a run share (", 0), 0u) << e.what();
    }
  };
  // Every cut of either message: one InputError naming the origin.
  for (std::size_t n = 0; n < tables.size(); ++n)
    one_error([&] { collscope::run::decode_share_tables(std::string_view(tables).substr(0, n), origin); },
              fmt::format("the tables cut at {} of {} bytes", n, tables.size()));
  for (std::size_t n = 0; n < file.size(); n += (n < 4096 ? 1 : 997))
    one_error([&] { collscope::run::decode_loaded_file(std::string_view(file).substr(0, n), origin, share); },
              fmt::format("a file cut at {} of {} bytes", n, file.size()));
  // The tables sent in a file's place, and a file whose indices point beyond its share's tables.
  one_error([&] { collscope::run::decode_loaded_file(tables, origin, share); }, "the tables as a file");
  RunShare fewer = share;
  fewer.communicators.resize(1);
  one_error([&] { collscope::run::decode_loaded_file(file, origin, fewer); }, "a file beyond its tables");
  // Bytes of the header and the first rows flipped: read (a changed value, not a structure) or one error, never
  // anything else.
  for (std::size_t at = 0; at < std::min<std::size_t>(file.size(), 512); ++at) {
    std::string changed = file;
    changed[at] = static_cast<char>(changed[at] ^ 0x5a);
    try {
      (void)collscope::run::decode_loaded_file(changed, origin, share);
    } catch (const InputError&) {
    }
  }
  EXPECT_NO_THROW(collscope::run::decode_loaded_file(file, origin, share));
}
