#pragma once
// Test helper for jobs that deadlock on purpose under `collscope trace`: runs the job and ends it with SIGTERM to its
// whole process group (as `timeout` does) once every rank's file shows the call it hangs in, instead of after a
// fixed time. A fixed `timeout 4` failed on a loaded 2-core machine: the job had not reached its hang, or the
// low-priority writer had not yet written the call in flight, when the 4 s were up (docs/reliability.md). The ceiling
// only ends a job that never hangs; the result then says timed_out.
#include <collscope/process/process.hpp>
#include <collscope/store/trace_reader.hpp>

#include <signal.h>

#include <chrono>
#include <exception>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "run_process.hpp"

namespace collscope::testing {

// Which calls in flight show a rank's hang: by default any. A call that was in flight past COLLSCOPE_HANG_MS and
// then ended (a slow collective on a loaded host) also shows for a while; a test that knows where each rank hangs
// says so.
using HangTest = std::function<bool(int rank, const std::vector<store::CallInFlightRow>& in_flight)>;

// Whether each of ranks 0..ranks-1 has a rank file in `dir` whose calls in flight pass `hung`. A file still being
// created (not yet a readable trace) counts as not yet.
inline bool every_rank_shows_its_hang(const std::filesystem::path& dir, int ranks, const HangTest& hung) {
  for (int rank = 0; rank < ranks; ++rank) {
    const auto file = dir / store::rank_file_name(rank);
    if (!std::filesystem::exists(file)) return false;
    try {
      const auto in_flight = store::TraceReader(file.string()).calls_in_flight();
      if (in_flight.empty() || (hung && !hung(rank, in_flight))) return false;
    } catch (const std::exception&) {
      return false;
    }
  }
  return true;
}

// Where `mpi_probe --hang-rank 1 --hang-iteration 3` hangs (tests/tracer/mpi_probe.cpp): rank 1 in the barrier on
// its dup of the world communicator (that communicator's first call, seq 0), the others in the world collective
// iteration 3 starts (their 13th world call, seq 12). Earlier world barriers have seq 3, 7 and 11.
inline bool at_mpi_probe_hang(int rank, const std::vector<store::CallInFlightRow>& in_flight) {
  for (const auto& c : in_flight)
    if (rank == 1 ? (c.op == store::Op::Barrier && c.seq == 0) : c.seq == 12) return true;
  return false;
}

// Runs `argv` (a `collscope trace -o dir -- ...` of a job that hangs) with `env` (as run_process takes it); SIGTERM to its process group
// once every rank's file in `dir` shows its hang, or at `ceiling_s` (then timed_out). Waits for it to end (SIGKILL
// 30 s after the SIGTERM if it has not).
inline ProcessResult run_until_every_rank_hangs(const std::vector<std::string>& argv,
                                                const std::vector<std::pair<std::string, std::string>>& env,
                                                const std::filesystem::path& dir, int ranks, const HangTest& hung = {},
                                                double ceiling_s = 120.0) {
  using clock = std::chrono::steady_clock;
  ProcessResult r;
  auto job = process::Process::start(captured_command(argv, env));
  const auto ceiling = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(ceiling_s));
  std::optional<clock::time_point> signalled;
  for (;;) {
    if (auto done = job.wait_for(std::chrono::milliseconds(100))) {
      r.exit_code = done->status();
      r.out = done->out;
      r.err = done->err;
      return r;
    }
    const auto now = clock::now();
    if (!signalled && (now > ceiling || every_rank_shows_its_hang(dir, ranks, hung))) {
      r.timed_out = now > ceiling;
      job.signal(SIGTERM);
      signalled = now;
    } else if (signalled && now - *signalled > std::chrono::seconds(30)) {
      const auto killed = job.terminate(std::chrono::seconds(0));
      r.exit_code = killed.status();
      r.out = killed.out;
      r.err = killed.err;
      r.timed_out = true;
      return r;
    }
  }
}

}  // namespace collscope::testing
