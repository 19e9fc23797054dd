#pragma once
// The NCCL tuner plugin interface v6 (NCCL 2.30), as NVIDIA's ext-tuner/example/nccl/tuner_v6.h lays it out:
// v5's calls and an optional getChunkSize. Its NVLink domains and constants are v5's.
#include <cstddef>
#include <cstdint>

#include "common.hpp"
#include "tuner_v5.hpp"

namespace collscope::nccl_tuner {

struct TunerV6 {
  const char* name;
  Result (*init)(void** context, std::uint64_t comm_id, std::size_t n_ranks, std::size_t n_nodes, Logger log,
                 NvlDomainInfoV5* nvl_domains, TunerConstantsV5* constants);
  Result (*getCollInfo)(void* context, int coll_type, std::size_t n_bytes, int num_pipe_ops, float** coll_cost_table,
                        int num_algo, int num_proto, int reg_buff, int* n_channels);
  Result (*finalize)(void* context);
  // Optional in the interface: NCCL keeps its own chunk size when null. NCCL clamps the result to its buffers.
  Result (*getChunkSize)(void* context, int coll_type, std::size_t n_bytes, int algo, int proto, int n_channels,
                         std::size_t* chunk_size);
};

}  // namespace collscope::nccl_tuner
