#pragma once
// The analyzer works on collscope::run's model of a run (loading, clocks, matching and steps live there, once).
// Its names are used unqualified in the analyzer: a variable called `run` is everywhere and would hide the
// namespace in `run::Run`.
#include <collscope/run/call_index.hpp>
#include <collscope/run/statistics.hpp>
#include <collscope/run/clock_alignment.hpp>
#include <collscope/run/format.hpp>
#include <collscope/run/lateness.hpp>
#include <collscope/run/matching.hpp>
#include <collscope/run/run.hpp>
#include <collscope/run/steps.hpp>
#include <collscope/run/wait_states.hpp>

namespace collscope::analyzer {

// Every name of collscope::run, unqualified here: the analyzer's own names (declared in this namespace) still win
// over run's, which lookup finds only after them.
using namespace collscope::run;

}  // namespace collscope::analyzer
