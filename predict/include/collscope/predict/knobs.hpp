#pragma once
// The knobs `collscope predict --set KNOB=VALUE` understands, read into a Change.
#include <collscope/predict/replay.hpp>

#include <string>
#include <vector>

namespace collscope::predict {

// Applies "KNOB=VALUE" to `change`. Known knobs: HOROVOD_FUSION_THRESHOLD (bytes), HOROVOD_CYCLE_TIME (ms),
// backward_passes_per_step (also gradient_accumulation), bucket_cap_mb (MB), fp16_compression (1/0, also
// compression=fp16), batch_size. A knob the model cannot predict appends one line to `not_predicted` and changes
// nothing. Throws InputError (one line naming the setting) for a malformed setting or value.
void apply_knob(const std::string& setting, Change& change, std::vector<std::string>& not_predicted);

// The text report (for a terminal, within 100 columns) and the JSON document (schema "collscope.prediction/1").
std::string prediction_text(const Prediction& p, const std::string& run_dir);
std::string prediction_json(const Prediction& p, const std::string& run_dir);

}  // namespace collscope::predict
