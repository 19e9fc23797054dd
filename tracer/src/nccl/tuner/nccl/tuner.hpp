#pragma once
// The NCCL tuner plugin interface, versions 3 (NCCL 2.22), 4 (2.24), 5 (2.28: communicator id, NVLink domains,
// editable cost-model constants) and 6 (2.30: optional getChunkSize): the operations, algorithms and protocols
// every version shares, and each version's function table from its own header (tuner_v3.hpp ...), as in NVIDIA's
// published ext-tuner/example/nccl/ (NCCL does not install these headers). NCCL looks up the newest version it
// knows and falls back to older ones.
#include "common.hpp"
#include "tuner_v3.hpp"
#include "tuner_v4.hpp"
#include "tuner_v5.hpp"
#include "tuner_v6.hpp"

namespace collscope::nccl_tuner {

// ncclFunc_t
enum Func : int { Broadcast = 0, Reduce = 1, AllGather = 2, ReduceScatter = 3, AllReduce = 4, SendRecv = 5, Send = 6, Recv = 7 };

// Rows of the cost table: NCCL_ALGO_*; columns: NCCL_PROTO_*. An entry of -1 means "not possible here".
inline constexpr int kAlgoTree = 0, kAlgoRing = 1, kAlgoCollnetDirect = 2, kAlgoCollnetChain = 3, kAlgoNvls = 4,
                     kAlgoNvlsTree = 5, kAlgoPat = 6;
inline constexpr int kProtoLL = 0, kProtoLL128 = 1, kProtoSimple = 2;
inline constexpr float kIgnore = -1.0f;  // NCCL_ALGO_PROTO_IGNORE

}  // namespace collscope::nccl_tuner
