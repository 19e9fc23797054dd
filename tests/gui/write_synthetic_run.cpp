// Writes the viewer's lockstep run (3 ranks on 2 hosts, 10 steps, rank 2 late) into DIR.
#include <collscope/testing/lockstep_run.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  collscope::testing::write_lockstep_run(argv[1], {});
  return 0;
}
