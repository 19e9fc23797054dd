// Reads trace files the way every collscope reader does (TraceReader) and prints what it found, so that tests can
// read a run as another user, or inside a read-only mount.
//   trace_read_probe FILE...   -> "FILE: N collectives, M strings, K communicators" per file; exit 2 with the
//                                 reader's one-line error on bad input
#include <collscope/store/error.hpp>
#include <collscope/store/trace_reader.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  try {
    for (int i = 1; i < argc; ++i) {
      const collscope::store::TraceReader reader(argv[i]);
      std::printf("%s: %lld collectives, %zu strings, %zu communicators\n", argv[i],
                  static_cast<long long>(reader.collectives().size()), reader.strings().size(),
                  reader.communicators().size());
    }
  } catch (const collscope::Error& e) {
    std::fprintf(stderr, "trace_read_probe: %s\n", e.what());
    return 2;
  }
  return 0;
}
