#pragma once
// Rules the collscope NCCL tuner plugin applies (tracer/src/nccl/tuner/), and `collscope tune
// --export-nccl-rules` writes: for an operation and a message size range (and optionally a communicator size),
// which algorithm and protocol NCCL should use, how many channels and what chunk size.
//
// File (COLLSCOPE_NCCL_TUNER_RULES), one rule per line, '#' starts a comment, the first matching rule wins:
//   # op         min_bytes  max_bytes  algo  proto   channels  [ranks=N] [chunk=BYTES]
//   allreduce    0          65535      tree  ll      -
//   allreduce    65536      inf        ring  simple  16        ranks=8   chunk=512K
// op: allreduce, allgather, reducescatter, broadcast, reduce; bytes: integers, K/M/G suffixes (binary) or inf;
// algo: tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat or -; proto: ll, ll128, simple or -;
// channels: a number or -; ranks: the communicator size the rule is for (default any; a bare 7th number is
// ranks too); chunk: the chunk size NCCL should use (tuner API v6, NCCL 2.30+; older NCCL ignores it).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace collscope::nccl_tuner {

struct Rule {
  int func = 0;  // Func
  std::uint64_t min_bytes = 0, max_bytes = UINT64_MAX;
  int algo = -1, proto = -1;  // -1: leave NCCL's choice
  int channels = -1;
  std::int64_t ranks = -1;    // -1: any communicator size
  std::uint64_t chunk_bytes = 0;  // 0: NCCL's chunk size
};

// A rule as one line of the file ("allreduce 64K inf ring simple 16 chunk=512K").
std::string format_rule(const Rule& rule);

// Parses rules; on a bad line returns nullopt and sets `error` to "FILE:LINE: what is wrong".
std::optional<std::vector<Rule>> parse_rules(const std::string& text, const std::string& file, std::string& error);

// The first rule for (func, bytes, ranks), or null.
const Rule* match(const std::vector<Rule>& rules, int func, std::uint64_t bytes, std::size_t ranks);

// The chunk size `rule` sets for a collective NCCL runs with (algo, proto), or 0: a rule's chunk applies where its
// algorithm and protocol (when it names them) are the ones NCCL runs.
std::uint64_t chunk_for(const Rule& rule, int algo, int proto);

// Applies `rule` to NCCL's cost table (num_algo rows of num_proto floats): the chosen entry gets cost 0 so NCCL
// picks it. Only entries NCCL marked possible are touched. Returns false when the chosen entry was not possible.
bool apply(const Rule& rule, float* table, int num_algo, int num_proto);

}  // namespace collscope::nccl_tuner
