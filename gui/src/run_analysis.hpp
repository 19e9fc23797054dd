#pragma once
// What the analyzer adds to a loaded run: steps, findings, statistics. Built with the analyzer library when it is
// (COLLSCOPE_GUI_HAVE_ANALYZER); without it, the steps alone, from collscope::run.
#include <collscope/gui/run_data.hpp>

#include <memory>

namespace collscope::gui {

bool analysis_available();

// A new RunData sharing `loaded`'s timeline (the same run, clocks and matching: nothing is read or matched
// again) with the analyzer's steps, findings and statistics (RunData::analyzed = true), or only run/'s steps
// when the analyzer is not built.
std::shared_ptr<const RunData> analyze_loaded_run(const RunData& loaded);

}  // namespace collscope::gui
