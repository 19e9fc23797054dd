// The timeline's mouse, wheel and keys, its hover tooltips and its context menu.
#include <collscope/gui/timeline_view.hpp>

#include "point_to_point_text.hpp"
#include "timeline_layout.hpp"
#include "tool_tip.hpp"

#include <QContextMenuEvent>
#include <QKeyEvent>
#include <QMenu>
#include <QMouseEvent>
#include <QWheelEvent>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

namespace collscope::gui {

using namespace timeline;

void TimelineView::mousePressEvent(QMouseEvent* e) {
  setFocus(Qt::MouseFocusReason);
  press_pos_ = e->position();
  press_button_ = e->button();
  press_t0_ = t0_;
  press_t1_ = t1_;
  press_scroll_y_ = scroll_y_;
  dragging_ = false;
  selecting_range_ = (e->modifiers() & Qt::ShiftModifier) || e->button() == Qt::RightButton;
}

void TimelineView::mouseMoveEvent(QMouseEvent* e) {
  if (e->buttons() != Qt::NoButton) {
    const QPointF d = e->position() - press_pos_;
    if (!dragging_ && std::abs(d.x()) + std::abs(d.y()) > 3) {
      dragging_ = true;
      if (selecting_range_) range_a_ = range_b_ = xToTime(press_pos_.x());
    }
    if (!dragging_) return;
    if (selecting_range_) {
      range_b_ = xToTime(e->position().x());
      update();
      return;
    }
    const double dt = d.x() / plotWidth() * (press_t1_ - press_t0_);
    scroll_y_ = press_scroll_y_ - static_cast<int>(d.y());
    clampVerticalScroll();
    setVisibleRange(press_t0_ - dt, press_t1_ - dt);
    return;
  }
  const auto hit = collectiveAt(e->position());
  if (hit != hovered_) {
    hovered_ = hit;
    update();
    emit collectiveHovered(hit);
  }
}

void TimelineView::mouseReleaseEvent(QMouseEvent* e) {
  const bool was_range = selecting_range_;
  selecting_range_ = false;
  if (was_range && dragging_) {
    setRange(range_a_, range_b_);  // computes the totals, emits rangeSelected
  } else if (!dragging_ && press_button_ == Qt::RightButton) {
    std::unique_ptr<QMenu> menu(contextMenuAt(e->position()));
    menu->exec(e->globalPosition().toPoint());
  } else if (!dragging_ && !was_range) {
    const Row* row = rowAt(e->position().y());
    if (row && e->position().x() < kLabelWidth && row->kind == RowKind::Host) {
      setHostCollapsed(row->index, !host_collapsed_[row->index]);
    } else if (row && e->position().x() < kLabelWidth && row->kind == RowKind::Rank) {
      setRankCollapsed(row->index, !rank_collapsed_[row->index]);
    } else if (const auto hit = collectiveAt(e->position()); hit != kNoInstance) {
      selectCollective(hit);
    } else if (const auto call = pointToPointAt(e->position()); call != kNoInstance) {
      selectPointToPoint(call);
    } else {
      selectCollective(kNoInstance);
      if (selected_p2p_ != kNoInstance || !selected_messages_.empty()) selectPointToPoint(kNoInstance);
    }
  }
  dragging_ = false;
  press_button_ = Qt::NoButton;
  update();
}

void TimelineView::wheelEvent(QWheelEvent* e) {
  const double notches = e->angleDelta().y() / 120.0;
  if (e->modifiers() & Qt::ShiftModifier) {
    scroll_y_ -= static_cast<int>(notches * 40);
    clampVerticalScroll();
    update();
  } else {
    zoomAround(std::pow(0.8, notches), e->position().x());
  }
  e->accept();
}

void TimelineView::keyPressEvent(QKeyEvent* e) {
  if (handleKey(e->key(), e->modifiers())) e->accept();
  else QWidget::keyPressEvent(e);
}

bool TimelineView::handleKey(int key, Qt::KeyboardModifiers modifiers) {
  // W/S zoom around the mouse (or the centre), A/D pan by a tenth, as in Perfetto and Nsight Systems.
  const QPointF mouse = mapFromGlobal(QCursor::pos());
  const double x = rect().contains(mouse.toPoint()) ? mouse.x() : kLabelWidth + plotWidth() / 2;
  const bool alt = modifiers & Qt::AltModifier;
  switch (key) {
    case Qt::Key_W: zoomAround(0.8, x); break;
    case Qt::Key_S: zoomAround(1.25, x); break;
    case Qt::Key_A: panByPixels(-plotWidth() / 10); break;
    case Qt::Key_D: panByPixels(plotWidth() / 10); break;
    case Qt::Key_Z: zoomToSelection(); break;
    case Qt::Key_F: case Qt::Key_0: zoomToFit(); break;
    case Qt::Key_Escape: clearSelection(); break;
    case Qt::Key_Backspace: back(); break;
    case Qt::Key_Left: if (alt) back(); else panByPixels(-plotWidth() / 10); break;
    case Qt::Key_Right: if (alt) forward(); else panByPixels(plotWidth() / 10); break;
    case Qt::Key_Up: scroll_y_ -= 40, clampVerticalScroll(), update(); break;
    case Qt::Key_Down: scroll_y_ += 40, clampVerticalScroll(), update(); break;
    case Qt::Key_PageUp: scroll_y_ -= height() / 2, clampVerticalScroll(), update(); break;
    case Qt::Key_PageDown: scroll_y_ += height() / 2, clampVerticalScroll(), update(); break;
    case Qt::Key_Question: case Qt::Key_F1: emit helpRequested(); break;
    default: return false;
  }
  return true;
}

void TimelineView::contextMenuEvent(QContextMenuEvent* e) {
  if (e->reason() == QContextMenuEvent::Mouse) return;  // opened on release, unless the right button dragged
  const QPointF at = rect().contains(e->pos()) ? QPointF(e->pos()) : QPointF(kLabelWidth + plotWidth() / 2, height() / 2.0);
  std::unique_ptr<QMenu> menu(contextMenuAt(at));
  menu->exec(mapToGlobal(at.toPoint()));
}

void TimelineView::leaveEvent(QEvent*) {
  if (hovered_ != kNoInstance) {
    hovered_ = kNoInstance;
    update();
    emit collectiveHovered(kNoInstance);
  }
}

bool TimelineView::event(QEvent* e) {
  return answer_tool_tip(this, e, [this](QPointF pos) { return toolTipAt(pos); }) || QWidget::event(e);
}

QString TimelineView::toolTipAt(QPointF pos) const {
  if (!run_) return {};
  const auto& m = run_->model();
  const double t = xToTime(pos.x());
  auto step_at = [&](double time) -> const Step* {
    const auto& steps = run_->steps;
    auto it = std::upper_bound(steps.begin(), steps.end(), time, [](double v, const Step& s) { return v < s.start_ns; });
    if (it == steps.begin()) return nullptr;
    --it;
    return time <= it->end_ns ? &*it : nullptr;
  };
  if (pos.y() >= kRulerHeight && pos.y() < kHeaderHeight && pos.x() >= kLabelWidth) {
    const Step* s = step_at(t);
    return s ? QString::fromStdString(fmt::format("step {}: {}", s->number, format_duration(double(s->end_ns - s->start_ns))))
             : QString();
  }
  const Row* row = rowAt(pos.y());
  if (!row) return {};
  const double ns_per_px = (t1_ - t0_) / plotWidth();
  switch (row->kind) {
    case RowKind::Counter: {
      if (row->index == 0) {
        const Step* s = step_at(t);
        return s ? QString::fromStdString(fmt::format("step {} took {}", s->number, format_duration(double(s->end_ns - s->start_ns))))
                 : tr("step time: one bar per step, orange when over 1.1 × the median");
      }
      const auto& b = run_->summaries->busbw_gbps;
      float best = -1;
      for (auto i = std::lower_bound(b.t_ns.begin(), b.t_ns.end(), static_cast<std::int64_t>(t - 3 * ns_per_px));
           i != b.t_ns.end() && *i <= t + 3 * ns_per_px; ++i)
        best = std::max(best, b.value[static_cast<std::size_t>(i - b.t_ns.begin())]);
      return best >= 0 ? QString::fromStdString(fmt::format("bus bandwidth {} (highest here)", run::format_bandwidth(best)))
                       : tr("bus bandwidth of each collective (nccl-tests definition), the highest per pixel");
    }
    case RowKind::Host: {
      std::string ranks;
      for (const int r : host_ranks_[row->index]) ranks += (ranks.empty() ? "" : ", ") + std::to_string(m.run().ranks[r].world_rank);
      return QString::fromStdString(fmt::format("host {}: ranks {} (click the name to {})", m.clocks().hosts[row->index],
                                                ranks, host_collapsed_[row->index] ? "expand" : "collapse"));
    }
    case RowKind::Rank: {
      const int r = row->index;
      std::string text = fmt::format("rank {} (click the name to {} its lanes)", m.run().ranks[r].world_rank,
                                     rank_collapsed_[r] ? "show" : "hide");
      if (run_->summaries && pos.x() >= kLabelWidth) {
        const auto& a = run_->summaries->activity;
        double late = 0, wait = 0;
        const int b0 = std::clamp(static_cast<int>(t0_ / double(a.bucket_ns)), 0, a.buckets - 1);
        const int b1 = std::clamp(static_cast<int>(std::ceil(t1_ / double(a.bucket_ns))), b0 + 1, a.buckets);
        for (int k = b0; k < b1; ++k) late += a.late(r, k), wait += a.wait(r, k);
        text += fmt::format("\nin view: arrived {} after the first rank in total (red), waited {} for the last (blue)",
                            format_duration(late), format_duration(wait));
      }
      return QString::fromStdString(text);
    }
    case RowKind::Lane: break;
  }
  const auto& lane = m.lanes()[row->index];
  if (pos.x() < kLabelWidth)
    return QString::fromStdString(fmt::format("rank {} · {}", m.run().ranks[lane.rank_index].world_rank, lane.label));
  if (lane.kind == LaneKind::Collectives) {
    const auto id = collectiveAt(pos);
    if (id == kNoInstance) {
      const auto call = pointToPointAt(pos);
      return call == kNoInstance ? QString() : QString::fromStdString(point_to_point_summary(m, call));
    }
    const auto e = m.collective(id);
    const auto& c = m.call(id);
    const auto& comm = m.run().communicators[c.comm];
    std::int64_t last = e.start_ns;
    int last_rank = e.rank_index;
    for (const auto other : m.members(id))
      if (const auto o = m.collective(other); o.start_ns > last) last = o.start_ns, last_rank = o.rank_index;
    std::string text = fmt::format("{} {} on {} (seq {})\nrank {}: {} in the call", store::op_name(e.op),
                                   format_bytes(double(e.bytes)), comm.shown_name().empty() ? "an unnamed communicator" : comm.shown_name(),
                                   c.seq, m.run().ranks[e.rank_index].world_rank, format_duration(double(e.end_ns - e.start_ns)));
    if (last > e.start_ns)
      text += fmt::format(", {} of it waiting for rank {}", format_duration(double(last - e.start_ns)),
                          m.run().ranks[last_rank].world_rank);
    else
      text += ", arrived last";
    if (e.flags & kCallInFlight) text += "\nin flight: never returned";
    return QString::fromStdString(text);
  }
  const double tol = 3 * ns_per_px;
  for (std::uint32_t i = m.first_ending_after(lane, static_cast<std::int64_t>(t - tol)); i < lane.end && m.start_at(lane, i) <= t + tol; ++i) {
    const auto name = m.names()[m.name_at(lane, i)];
    return QString::fromStdString(fmt::format("{}\n{} · {}", name.empty() ? "(unnamed)" : name,
                                              format_duration(double(m.end_at(lane, i) - m.start_at(lane, i))), lane.label));
  }
  return {};
}

QMenu* TimelineView::contextMenuAt(QPointF pos) {
  auto* menu = new QMenu(this);
  const Row* row = rowAt(pos.y());
  if (run_ && row) {
    const auto& m = run_->model();
    const auto id = collectiveAt(pos);
    if (id != kNoInstance) {
      menu->addAction(tr("Select this collective"), this, [this, id] { selectCollective(id); });
      menu->addAction(tr("Zoom to this collective"), this, [this, id] {
        selectCollective(id);
        zoomToSelection();
      });
      menu->addSeparator();
    }
    if (row->kind == RowKind::Lane) {
      const int lane = row->index;
      const int r = m.lanes()[lane].rank_index;
      menu->addAction(lane_pinned_[lane] ? tr("Unpin this lane") : tr("Pin this lane to the top"), this,
                      [this, lane] { setLanePinned(lane, !lane_pinned_[lane]); });
      menu->addAction(tr("Hide the lanes of rank %1").arg(m.run().ranks[r].world_rank), this, [this, r] { setRankCollapsed(r, true); });
    }
    if (row->kind == RowKind::Rank) {
      const int r = row->index;
      menu->addAction(rank_collapsed_[r] ? tr("Show the lanes of rank %1").arg(m.run().ranks[r].world_rank)
                                         : tr("Hide the lanes of rank %1").arg(m.run().ranks[r].world_rank),
                      this, [this, r] { setRankCollapsed(r, !rank_collapsed_[r]); });
    }
    if (row->kind == RowKind::Host) {
      const int h = row->index;
      menu->addAction(host_collapsed_[h] ? tr("Expand this host") : tr("Collapse this host"), this,
                      [this, h] { setHostCollapsed(h, !host_collapsed_[h]); });
    }
    menu->addAction(tr("Hide the lanes of every rank"), this, [this] {
      std::fill(rank_collapsed_.begin(), rank_collapsed_.end(), 1);
      layoutRows();
      update();
    });
    menu->addAction(tr("Expand everything"), this, [this] {
      std::fill(rank_collapsed_.begin(), rank_collapsed_.end(), 0);
      std::fill(host_collapsed_.begin(), host_collapsed_.end(), 0);
      layoutRows();
      update();
    });
    menu->addSeparator();
  }
  if (hasRange()) {
    menu->addAction(tr("Zoom to the selected range (Z)"), this, [this] { zoomToSelection(); });
    menu->addAction(tr("Clear the range"), this, [this] { clearRange(); });
  }
  menu->addAction(tr("Back (Backspace)"), this, [this] { back(); })->setEnabled(canGoBack());
  menu->addAction(tr("Forward (Alt+Right)"), this, [this] { forward(); })->setEnabled(canGoForward());
  menu->addAction(tr("Zoom to fit (F)"), this, [this] { zoomToFit(); });
  return menu;
}

}  // namespace collscope::gui
