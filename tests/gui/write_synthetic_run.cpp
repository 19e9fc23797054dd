// Writes the viewer's synthetic run (3 ranks on 2 hosts, 10 steps, rank 2 late) into DIR.
#include "synthetic_run.hpp"

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  collscope::gui::synthetic::write(argv[1], {});
  return 0;
}
