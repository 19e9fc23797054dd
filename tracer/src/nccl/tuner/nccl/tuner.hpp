#pragma once
// The NCCL tuner plugin interface, versions 3 (NCCL 2.22), 4 (2.24), 5 (2.28: communicator id, NVLink domains,
// editable cost-model constants) and 6 (2.30: optional getChunkSize). NCCL looks up the newest version it knows
// and falls back to older ones. NCCL does not install this header, so the declarations follow NVIDIA's
// published ext-tuner/example/nccl/tuner.h. Only layout and meaning matter: enums are passed as int.
#include <cstddef>
#include <cstdint>

namespace collscope::nccl_tuner {

using Result = int;  // ncclResult_t
inline constexpr Result kSuccess = 0;
inline constexpr Result kInternalError = 3;

// ncclFunc_t
enum Func : int { Broadcast = 0, Reduce = 1, AllGather = 2, ReduceScatter = 3, AllReduce = 4, SendRecv = 5, Send = 6, Recv = 7 };

// Rows of the cost table: NCCL_ALGO_*; columns: NCCL_PROTO_*. An entry of -1 means "not possible here".
inline constexpr int kAlgoTree = 0, kAlgoRing = 1, kAlgoCollnetDirect = 2, kAlgoCollnetChain = 3, kAlgoNvls = 4,
                     kAlgoNvlsTree = 5, kAlgoPat = 6;
inline constexpr int kProtoLL = 0, kProtoLL128 = 1, kProtoSimple = 2;
inline constexpr float kIgnore = -1.0f;  // NCCL_ALGO_PROTO_IGNORE

// ncclDebugLogger_t; level 2 = WARN, 3 = INFO; flags 64 = NCCL_TUNING.
using Logger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);
inline constexpr int kLogWarn = 2, kLogInfo = 3;
inline constexpr unsigned long kLogTuning = 64;

struct TunerV3 {
  const char* name;
  Result (*init)(std::size_t n_ranks, std::size_t n_nodes, Logger log, void** context);
  Result (*getCollInfo)(void* context, int coll_type, std::size_t n_bytes, int num_pipe_ops, float** coll_cost_table,
                        int num_algo, int num_proto, int* n_channels);
  Result (*destroy)(void* context);
};

struct TunerV4 {
  const char* name;
  Result (*init)(std::size_t n_ranks, std::size_t n_nodes, Logger log, void** context);
  Result (*getCollInfo)(void* context, int coll_type, std::size_t n_bytes, int num_pipe_ops, float** coll_cost_table,
                        int num_algo, int num_proto, int reg_buff, int* n_channels);
  Result (*destroy)(void* context);
};

// v5 and v6 (ncclNvlDomainInfo_v5_t, ncclTunerConstants_v5_t; NCCL_NUM_* sizes of NCCL 2.28).
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
