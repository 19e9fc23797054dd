#include "core/recorder.hpp"

namespace collscope::tracer {

__attribute__((tls_model("initial-exec"))) constinit thread_local int t_traced_depth = 0;

}  // namespace collscope::tracer
