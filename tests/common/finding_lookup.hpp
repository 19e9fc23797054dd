#pragma once
// The first finding of a kind in an analysis (the analyzer orders them most costly first), or nullptr: how the
// analyzer's and the formats' tests look a finding up.
#include <collscope/analyzer/analysis.hpp>

namespace collscope::test {

inline const analyzer::Finding* find_finding(const analyzer::Analysis& a, analyzer::FindingKind kind) {
  for (const auto& f : a.findings)
    if (f.kind == kind) return &f;
  return nullptr;
}

}  // namespace collscope::test
