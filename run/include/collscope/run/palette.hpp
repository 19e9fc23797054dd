#pragma once
// The one palette of collscope: the viewer (Qt) and the reports (SVG) draw a collective, a severity or a
// lateness with the same colour, so a reader who learned one recognises the other. Colours are 0xRRGGBB; the
// viewer wraps them in QColor, the reports write them as "#rrggbb". No toolkit here: the analyzer must not
// depend on Qt.
#include <collscope/store/schema.hpp>

#include <cstdint>
#include <string>

namespace collscope::run::palette {

using Rgb = std::uint32_t;  // 0xRRGGBB

// Per operation, as the viewer's timeline draws it (a family shares a colour: allgather and allgatherv).
Rgb op_colour(store::Op op);

// Findings by severity: critical, warning, info.
inline constexpr Rgb kCritical = 0xbe1414;
inline constexpr Rgb kWarning = 0xaa6400;
inline constexpr Rgb kInfo = 0x3c3c3c;
// A call still in flight when the job was killed (a hang), in the timeline.
inline constexpr Rgb kInFlight = 0xc81e1e;
// Time series: the step time, the time inside collectives, a reference such as the link's bandwidth.
inline constexpr Rgb kStepTime = 0x1f77b4;
inline constexpr Rgb kCommTime = 0xd62728;
inline constexpr Rgb kReference = 0x555555;
// Point-to-point: time in point-to-point calls, and the part of it spent waiting for another rank (drawn over it).
inline constexpr Rgb kPointToPoint = 0x74c476;
inline constexpr Rgb kPointToPointWait = 0x1b7837;
// The tuner: each trial, the best so far, the model (GP) and its uncertainty band.
inline constexpr Rgb kTrial = 0x888888;
inline constexpr Rgb kBest = 0x1f77b4;
inline constexpr Rgb kModel = 0xd62728;

// Distinct colours for the k-th series of a chart when no meaning fixes one (cycles after 10).
Rgb series_colour(std::size_t k);

// Lateness (how late a rank arrived, 0 = on time) on a sequential ramp: fraction 0 → white, 1 → dark red,
// through yellow and orange; clamped to [0, 1].
Rgb lateness_colour(double fraction);
// An amount (bytes, messages, time: the communication matrix of the viewer and of the HTML report) as a fraction
// of the largest: 0 → white, 1 → dark blue; clamped to [0, 1]. Blue, not the red of lateness: traffic is no fault.
Rgb amount_colour(double fraction);

// "#rrggbb" for SVG and HTML.
std::string hex(Rgb rgb);

}  // namespace collscope::run::palette
