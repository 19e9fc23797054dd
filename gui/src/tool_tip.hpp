#pragma once
// The views' hover text: Qt asks a widget for it with a ToolTip event; each view answers from its own toolTipAt().
#include <QHelpEvent>
#include <QToolTip>
#include <QWidget>

namespace collscope::gui {

// Shows (or hides, when empty) `text_at(pos)` for a ToolTip event; false for any other event, which the caller
// then passes on to QWidget::event.
template <typename TextAt>
bool answer_tool_tip(QWidget* widget, QEvent* e, TextAt&& text_at) {
  if (e->type() != QEvent::ToolTip) return false;
  auto* help = static_cast<QHelpEvent*>(e);
  const QString text = text_at(QPointF(help->pos()));
  if (text.isEmpty()) QToolTip::hideText();
  else QToolTip::showText(help->globalPos(), text, widget);
  return true;
}

}  // namespace collscope::gui
