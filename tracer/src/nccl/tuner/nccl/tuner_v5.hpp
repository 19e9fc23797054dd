#pragma once
// The NCCL tuner plugin interface v5 (NCCL 2.28), as NVIDIA's ext-tuner/example/nccl/tuner_v5.h lays it out:
// init learns the communicator id, its NVLink domains and NCCL's cost-model constants (which it may edit).
#include <cstddef>
#include <cstdint>

#include "common.hpp"

namespace collscope::nccl_tuner {

// ncclNvlDomainInfo_v5_t, ncclTunerConstants_v5_t; NCCL_NUM_* sizes of NCCL 2.28 (v6 keeps them).
inline constexpr int kNumAlgorithms = 7, kNumProtocols = 3, kNumHwLinks = 3, kNumCompCaps = 4, kNumTuningScales = 3;
struct NvlDomainInfoV5 {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
};
struct TunerConstantsV5 {
  double baseLatencies[kNumAlgorithms][kNumProtocols];
  double hwLatencies[kNumHwLinks][kNumAlgorithms][kNumProtocols];
  double llMaxBws[kNumCompCaps][kNumTuningScales];
  double perChMaxRingLL128Bws[kNumCompCaps][kNumTuningScales];
  double perChMaxTreeLL128Bws[kNumCompCaps][kNumTuningScales];
  double perChMaxTreeBws[kNumCompCaps][kNumTuningScales];
};

struct TunerV5 {
  const char* name;
  Result (*init)(void** context, std::uint64_t comm_id, std::size_t n_ranks, std::size_t n_nodes, Logger log,
                 NvlDomainInfoV5* nvl_domains, TunerConstantsV5* constants);
  Result (*getCollInfo)(void* context, int coll_type, std::size_t n_bytes, int num_pipe_ops, float** coll_cost_table,
                        int num_algo, int num_proto, int reg_buff, int* n_channels);
  Result (*finalize)(void* context);
};

}  // namespace collscope::nccl_tuner
