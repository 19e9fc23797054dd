#pragma once
// The analyzer's view of a loaded run: refined clock offsets, findings, statistics, steps.
// Built only when the analyzer library is (COLLSCOPE_GUI_HAVE_ANALYZER); otherwise unavailable.
#include <collscope/gui/run_data.hpp>

#include <memory>

namespace collscope::gui {

bool analysis_available();

// A copy of `run` with the analyzer's clock alignment applied and its findings, statistics and steps
// attached (RunData::analyzed = true). Runs the analyzer over run.dir; throws collscope::InputError.
std::shared_ptr<const RunData> analyze_loaded_run(const RunData& run);

}  // namespace collscope::gui
