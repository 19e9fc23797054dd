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

using run::CallInFlight;
using run::ClockAligner;
using run::ClockAlignment;
using run::CollectiveCall;
using run::CollectiveInstance;
using run::CollectiveMatcher;
using run::Communicator;
using run::GpuActivity;
using run::InstanceSummary;
using run::Lateness;
using run::LoadOptions;
using run::MatchedRun;
using run::Mismatch;
using run::NvtxRange;
using run::RankTrace;
using run::Run;
using run::RunLoader;
using run::Step;
using run::StepDetector;
using run::StepNames;
using run::StepOptions;
using run::StepSummary;
using run::format_bandwidth;
using run::format_bytes;
using run::format_duration;
using run::format_ms;
using run::wrap_text;
using run::load_run;
using run::median_of;
using run::member_indices;

}  // namespace collscope::analyzer
