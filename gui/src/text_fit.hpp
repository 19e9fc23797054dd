#pragma once
// Labels that fit their room whole or shortened at a word, never cut inside one ("step 14" for "step 148").
// Used by every view that draws text into a fixed room (timeline, collective lens).
#include <QFontMetrics>
#include <QString>

namespace collscope::gui {

// Text that fits `width` px whole, else `shorter` whole, else nothing.
inline QString fitting(const QFontMetrics& fm, const QString& text, const QString& shorter, double width) {
  if (fm.horizontalAdvance(text) <= width) return text;
  if (!shorter.isEmpty() && fm.horizontalAdvance(shorter) <= width) return shorter;
  return {};
}

// Text that fits `width` px: whole, else its longest run of whole words followed by "…", else nothing (Qt's
// elidedText cuts inside a word: "forwa…").
inline QString elided_at_word(const QFontMetrics& fm, const QString& text, double width) {
  if (fm.horizontalAdvance(text) <= width) return text;
  for (qsizetype cut = text.lastIndexOf(' '); cut > 0; cut = text.lastIndexOf(' ', cut - 1)) {
    const QString head = text.left(cut).trimmed();
    if (head.isEmpty()) break;
    const QString candidate = head + QChar(0x2026);
    if (fm.horizontalAdvance(candidate) <= width) return candidate;
  }
  return {};
}

}  // namespace collscope::gui
