#pragma once
// NVTX domains with a meaning to collscope itself (nvtx_ranges.domain is the string id of the domain's name; ""
// is the default domain, where a job's plain nvtxRangePush ranges go).
#include <string_view>

namespace collscope::store {

// The ranges collscope's Python annotation records (step, forward, backward, optimizer: tracer/python), apart from
// the job's own, so that a job that marks its steps itself is not counted twice (run/'s loader keeps the job's).
inline constexpr std::string_view kPythonAnnotationDomain = "collscope.python";

}  // namespace collscope::store
