// Communicator names for people (run/communicator_names.hpp) from the names the tracer records: Horovod 0.28.1's
// communicators exactly as tests/data/horovod-0.28.1-cpu recorded them, and splits as MPI_Comm_split makes them.
#include <collscope/run/communicator_names.hpp>
#include <collscope/store/schema.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

using namespace collscope;

namespace {

struct Recorded {
  std::uint64_t key;
  std::optional<std::uint64_t> parent;
  int size;
  std::optional<std::int64_t> color;
  std::string name;
  std::vector<int> members{};  // world ranks; given for one-rank communicators only
};

run::Run run_of(const std::vector<Recorded>& comms, bool horovod) {
  run::Run r;
  r.ranks.emplace_back();
  if (horovod) r.ranks[0].meta[std::string(store::meta_key::kEnvPrefix) + "HOROVOD_CYCLE_TIME"] = "1";
  for (const auto& c : comms) {
    run::Communicator comm;
    comm.key = c.key;
    comm.parent = c.parent;
    comm.size = c.size;
    comm.color = c.color;
    comm.name = c.name;
    comm.members = c.members;
    r.communicators.push_back(comm);
  }
  return r;
}

}  // namespace

TEST(CommunicatorNames, HorovodDupChain) {
  // Horovod dups the world communicator, dups that twice for its process-set contexts, dups the second again,
  // and splits each context's communicator by node (split_type) and across nodes (split by local rank).
  const std::vector<Recorded> recorded = {
      {1, std::nullopt, 2, std::nullopt, "MPI_COMM_WORLD"},
      {2, std::nullopt, 1, std::nullopt, "MPI_COMM_SELF"},
      {3, 1, 2, std::nullopt, "dup(MPI_COMM_WORLD#0)"},
      {4, 3, 2, std::nullopt, "dup(dup(MPI_COMM_WORLD#0)#0)"},
      {5, 4, 2, 0, "split_type(dup(dup(MPI_COMM_WORLD#0)#0)#0,color=0)"},
      {6, 4, 1, 0, "split(dup(dup(MPI_COMM_WORLD#0)#0)#1,color=0)"},
      {7, 3, 2, std::nullopt, "dup(dup(MPI_COMM_WORLD#0)#1)"},
      {8, 7, 2, std::nullopt, "dup(dup(dup(MPI_COMM_WORLD#0)#1)#0)"},
      {9, 8, 2, 0, "split_type(dup(dup(dup(MPI_COMM_WORLD#0)#1)#0)#0,color=0)"},
      {10, 8, 1, 0, "split(dup(dup(dup(MPI_COMM_WORLD#0)#1)#0)#1,color=0)"},
  };
  const std::vector<std::string> want = {
      "MPI_COMM_WORLD",
      "MPI_COMM_SELF",
      "dup of MPI_COMM_WORLD (Horovod) #1",
      "dup of MPI_COMM_WORLD (Horovod) #2",
      "split_type of dup of MPI_COMM_WORLD (Horovod) #2, type 0, 2 ranks",
      "split of dup of MPI_COMM_WORLD (Horovod) #2, colour 0, 1 rank",
      "dup of MPI_COMM_WORLD (Horovod) #3",
      "dup of MPI_COMM_WORLD (Horovod) #4",
      "split_type of dup of MPI_COMM_WORLD (Horovod) #4, type 0, 2 ranks",
      "split of dup of MPI_COMM_WORLD (Horovod) #4, colour 0, 1 rank",
  };
  EXPECT_EQ(run::communicator_display_names(run_of(recorded, true)), want);
  // The run's order of communicators (by size, then key) does not change a name: numbers follow creation.
  auto reversed = recorded;
  std::reverse(reversed.begin(), reversed.end());
  auto want_reversed = want;
  std::reverse(want_reversed.begin(), want_reversed.end());
  EXPECT_EQ(run::communicator_display_names(run_of(reversed, true)), want_reversed);
  // Not a Horovod job: the same dups without the framework's name.
  EXPECT_EQ(run::communicator_display_names(run_of(recorded, false))[7], "dup of MPI_COMM_WORLD #4");
}

TEST(CommunicatorNames, SplitsDupsAndOtherConstructors) {
  const auto names = run::communicator_display_names(run_of(
      {
          {1, std::nullopt, 3, std::nullopt, "MPI_COMM_WORLD"},
          {2, 1, 2, 0, "split(MPI_COMM_WORLD#0,color=0)"},
          {3, 1, 1, 1, "split(MPI_COMM_WORLD#0,color=1)"},
          {4, 1, 3, std::nullopt, "dup(MPI_COMM_WORLD#1)"},
          {5, 2, 2, std::nullopt, "dup_with_info(split(MPI_COMM_WORLD#0,color=0)#0)"},
          {6, 1, 3, std::nullopt, "cart_create(MPI_COMM_WORLD#2)"},
          {7, std::nullopt, 3, std::nullopt, "comm"},
          {8, std::nullopt, 4, std::nullopt, "nccl"},
          // A parent the run does not hold (its rows never written): named from its recorded name.
          {9, 99, 2, 3, "split(MPI_COMM_WORLD#9,color=3)"},
          // Each rank's own MPI_COMM_SELF.
          {10, std::nullopt, 1, std::nullopt, "MPI_COMM_SELF", {0}},
          {11, std::nullopt, 1, std::nullopt, "MPI_COMM_SELF", {2}},
      },
      false));
  EXPECT_EQ(names, (std::vector<std::string>{
                       "MPI_COMM_WORLD",
                       "split of MPI_COMM_WORLD, colour 0, 2 ranks",
                       "split of MPI_COMM_WORLD, colour 1, 1 rank",
                       "dup of MPI_COMM_WORLD",
                       "dup of split of MPI_COMM_WORLD, colour 0, 2 ranks",
                       "cart_create of MPI_COMM_WORLD, 3 ranks",
                       "communicator of 3 ranks",
                       "nccl",
                       "split of MPI_COMM_WORLD, colour 3, 2 ranks",
                       "MPI_COMM_SELF of rank 0",
                       "MPI_COMM_SELF of rank 2",
                   }));
}
