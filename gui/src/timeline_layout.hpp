#pragma once
// Sizes (px) and colours shared by the timeline's files.
#include <QColor>

#include <cstdint>

namespace collscope::gui::timeline {

inline const QColor kLateColor(205, 40, 40);    // a rank arriving after the first one
inline const QColor kWaitColor(60, 110, 200);   // a rank waiting for the last one
inline const QColor kSearchColor(255, 200, 0);  // search matches

inline constexpr int kRulerHeight = 24;
inline constexpr int kStepBandHeight = 16;
inline constexpr int kHeaderHeight = kRulerHeight + kStepBandHeight;
inline constexpr int kCounterHeight = 22;         // step time, bus bandwidth
inline constexpr int kHostRowHeight = 18;
inline constexpr int kRankRowHeight = 14;         // the rank's lateness / wait strip
inline constexpr int kCollectiveLaneHeight = 24;
inline constexpr int kSpanLaneHeight = 16;
inline constexpr int kLegendHeight = 20;
inline constexpr double kMaxFill = 2.5;           // lanes grow up to this factor to fill an empty window
inline constexpr double kMinBoxPx = 2.0;          // narrower events are aggregated per pixel column
inline constexpr int kMaxArrows = 64;             // wait arrows drawn for one instance
// Message lines drawn in one frame at most: past it the view is too wide for lines to tell apart, and the legend
// asks to zoom in (the messages of the range are counted by two binary searches, not visited).
inline constexpr std::uint32_t kMaxMessageLines = 20000;
inline const QColor kLateSenderColor(205, 40, 40);     // a message line whose receiver waited for its sender
inline const QColor kLateReceiverColor(225, 130, 20);  // a message line whose sender waited for its receiver

}  // namespace collscope::gui::timeline
