#pragma once
// A share of a run's rank files: what one of several processes that load a run together (`mpirun -np N collscope
// analyze RUN`, cluster/) read from the files it was given, sent to process 0 as bytes; process 0 assembles the
// run from every share (RunLoader::assemble). One process loading the whole run goes through the same two steps
// with one share, so both give the same Run, down to the order of its lists.
#include <collscope/run/run.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace collscope::run {

// One rank file of a share: its place in the run's file list and what reading it gave.
struct LoadedRankFile {
  std::size_t index = 0;              // into the run's file list (store::rank_files(run_dir))
  std::optional<RankTrace> trace;     // nullopt when the file was not read at all (error says why)
  std::string error;                  // why the file was not read at all
  std::vector<std::string> problems;  // what was left out of a file that was read
};

struct RunShare {
  // The share's own tables: its traces' string and communicator indices point here (Run's meaning of them).
  std::vector<std::string> strings{""};
  std::vector<Communicator> communicators;
  std::vector<LoadedRankFile> files;
};

// A share as bytes for another process (host byte order: processes of one job on one kind of machine): its tables
// (strings, communicators, how many files follow), then one message per file, so that neither side ever holds a
// second copy of more than one file's rows.
std::string encode_share_tables(const RunShare& share);
std::string encode_loaded_file(const LoadedRankFile& file);
// The share's tables (files empty) and how many files follow. Both decoders throw collscope::InputError naming
// `origin` ("process 2's share of RUN") when the bytes are not a whole message; a file whose indices point outside
// its share's tables is one too.
std::pair<RunShare, std::size_t> decode_share_tables(std::string_view bytes, const std::string& origin);
LoadedRankFile decode_loaded_file(std::string_view bytes, const std::string& origin, const RunShare& tables);

}  // namespace collscope::run
