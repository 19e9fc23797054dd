#pragma once
// The NCCL tuner plugin interface v4 (NCCL 2.24), as NVIDIA's ext-tuner/example/nccl/tuner_v4.h lays it out:
// getCollInfo learns whether the buffers are registered (reg_buff).
#include <cstddef>

#include "common.hpp"

namespace collscope::nccl_tuner {

struct TunerV4 {
  const char* name;
  Result (*init)(std::size_t n_ranks, std::size_t n_nodes, Logger log, void** context);
  Result (*getCollInfo)(void* context, int coll_type, std::size_t n_bytes, int num_pipe_ops, float** coll_cost_table,
                        int num_algo, int num_proto, int reg_buff, int* n_channels);
  Result (*destroy)(void* context);
};

}  // namespace collscope::nccl_tuner
