// The communication matrix (see communication_matrix.hpp).
#include <collscope/gui/communication_matrix.hpp>

#include <collscope/run/format.hpp>
#include <collscope/run/palette.hpp>

#include "tool_tip.hpp"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QVBoxLayout>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace collscope::gui {
namespace {
constexpr int kAxisPx = 46;  // room for the rank numbers left of and above the grid
constexpr int kMarginPx = 8;
}  // namespace

CommunicationMatrix::CommunicationMatrix(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumSize(160, 160);
}

void CommunicationMatrix::setRun(std::shared_ptr<const RunData> run) {
  run_ = std::move(run);
  world_ranks_.clear();
  if (run_)
    for (const auto& r : run_->run().ranks) world_ranks_.push_back(r.world_rank);
  update();
}

void CommunicationMatrix::setMetric(MatrixMetric metric) {
  metric_ = metric;
  update();
}

double CommunicationMatrix::value(const MatrixCell& c) const {
  switch (metric_) {
    case MatrixMetric::Bytes: return double(c.bytes);
    case MatrixMetric::Messages: return double(c.messages);
    case MatrixMetric::Time: return double(c.time_ns);
    case MatrixMetric::Wait: return double(c.wait_ns);
  }
  return 0;
}

std::string CommunicationMatrix::formatted(double v) const {
  switch (metric_) {
    case MatrixMetric::Bytes: return run::format_bytes(v);
    case MatrixMetric::Messages: return fmt::format("{}", static_cast<std::int64_t>(v));
    case MatrixMetric::Time:
    case MatrixMetric::Wait: return run::format_duration(v);
  }
  return {};
}

QRectF CommunicationMatrix::grid() const {
  const double side = std::max(0, std::min(width() - kAxisPx - kMarginPx, height() - kAxisPx - kMarginPx));
  return {double(kAxisPx), double(kAxisPx), side, side};
}

QRectF CommunicationMatrix::cellRect(int sender, int receiver) const {
  const auto row = std::lower_bound(world_ranks_.begin(), world_ranks_.end(), sender);
  const auto col = std::lower_bound(world_ranks_.begin(), world_ranks_.end(), receiver);
  if (row == world_ranks_.end() || *row != sender || col == world_ranks_.end() || *col != receiver) return {};
  const QRectF g = grid();
  const double cell = g.width() / double(world_ranks_.size());
  return {g.left() + double(col - world_ranks_.begin()) * cell, g.top() + double(row - world_ranks_.begin()) * cell, cell, cell};
}

std::optional<std::pair<int, int>> CommunicationMatrix::pairAt(QPointF pos) const {
  const QRectF g = grid();
  if (world_ranks_.empty() || !g.contains(pos)) return std::nullopt;
  const double n = double(world_ranks_.size());
  const auto row = std::min<std::size_t>(world_ranks_.size() - 1, static_cast<std::size_t>((pos.y() - g.top()) / g.height() * n));
  const auto col = std::min<std::size_t>(world_ranks_.size() - 1, static_cast<std::size_t>((pos.x() - g.left()) / g.width() * n));
  return std::pair{world_ranks_[row], world_ranks_[col]};
}

QString CommunicationMatrix::toolTipAt(QPointF pos) const {
  const auto pair = pairAt(pos);
  if (!run_ || !pair) return {};
  const auto* c = run_->model().messages().cell(pair->first, pair->second);
  if (!c) return QString::fromStdString(fmt::format("rank {} → rank {}: no messages", pair->first, pair->second));
  return QString::fromStdString(fmt::format(
      "rank {} → rank {}: {} message{}, {}\n{} from sends to receives (summed), {} waiting (late sender or receiver)\n"
      "click: select them on the timeline",
      c->sender, c->receiver, c->messages, c->messages == 1 ? "" : "s", run::format_bytes(double(c->bytes)),
      run::format_duration(double(c->time_ns)), run::format_duration(double(c->wait_ns))));
}

void CommunicationMatrix::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().window());
  if (!run_ || world_ranks_.empty()) return;
  const auto& cells = run_->model().messages().matrix();
  const QRectF g = grid();
  p.fillRect(g, Qt::white);
  p.setPen(QColor(60, 60, 60));
  QFont small = font();
  small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
  p.setFont(small);
  p.drawText(QRectF(g.left(), 0, g.width(), kAxisPx / 2.0), Qt::AlignCenter, tr("receiver"));
  p.save();
  p.translate(kAxisPx / 4.0, g.center().y());
  p.rotate(-90);
  p.drawText(QRectF(-g.height() / 2, -kAxisPx / 4.0, g.height(), kAxisPx / 2.0), Qt::AlignCenter, tr("sender"));
  p.restore();
  if (cells.empty()) {
    p.drawText(g, Qt::AlignCenter | Qt::TextWordWrap, tr("No point-to-point messages in this run"));
    return;
  }
  double max = 0;
  for (const auto& c : cells) max = std::max(max, value(c));
  // Ranks that share a pixel share a cell: cells summed per pixel block, so the grid costs the non-empty pairs.
  const std::size_t n = world_ranks_.size();
  const int blocks = static_cast<int>(std::min<double>(double(n), std::max(1.0, std::floor(g.width()))));
  const double block_px = g.width() / blocks;
  auto block_of = [&](int world_rank) {
    const auto k = std::lower_bound(world_ranks_.begin(), world_ranks_.end(), world_rank) - world_ranks_.begin();
    return static_cast<int>(double(k) * blocks / double(n));
  };
  std::vector<std::pair<std::pair<int, int>, double>> shown;
  shown.reserve(cells.size());
  for (const auto& c : cells) shown.push_back({{block_of(c.sender), block_of(c.receiver)}, value(c)});
  std::sort(shown.begin(), shown.end());
  std::vector<std::pair<std::pair<int, int>, double>> merged;
  for (const auto& s : shown)
    if (!merged.empty() && merged.back().first == s.first) merged.back().second += s.second;
    else merged.push_back(s);
  double merged_max = max;
  for (const auto& m : merged) merged_max = std::max(merged_max, m.second);
  const bool text = block_px >= 36 && std::size_t(blocks) == n;
  for (const auto& [at, v] : merged) {
    const QRectF r(g.left() + at.second * block_px, g.top() + at.first * block_px, block_px, block_px);
    const QColor colour(QRgb(run::palette::amount_colour(merged_max > 0 ? v / merged_max : 0)));
    p.fillRect(r, colour);
    if (text) {
      p.setPen(colour.lightness() < 140 ? Qt::white : Qt::black);
      p.drawText(r.adjusted(2, 2, -2, -2), Qt::AlignCenter | Qt::TextWordWrap, QString::fromStdString(formatted(v)));
    }
  }
  // Grid lines and rank numbers where there is room for them.
  p.setPen(QColor(210, 214, 220));
  if (block_px >= 4)
    for (int k = 0; k <= blocks; ++k) {
      p.drawLine(QPointF(g.left() + k * block_px, g.top()), QPointF(g.left() + k * block_px, g.bottom()));
      p.drawLine(QPointF(g.left(), g.top() + k * block_px), QPointF(g.right(), g.top() + k * block_px));
    }
  p.setPen(QColor(60, 60, 60));
  const int every = std::max(1, static_cast<int>(std::ceil(double(p.fontMetrics().height()) / (g.width() / double(n)))));
  for (std::size_t k = 0; k < n; k += every) {
    const double at = double(k) * g.width() / double(n), cell = g.width() / double(n);
    const QString label = QString::number(world_ranks_[k]);
    p.drawText(QRectF(kAxisPx / 2.0, g.top() + at, kAxisPx / 2.0 - 3, std::max(cell, 12.0)), Qt::AlignRight | Qt::AlignVCenter, label);
    p.drawText(QRectF(g.left() + at, kAxisPx / 2.0, std::max(cell, 12.0), kAxisPx / 2.0 - 2), Qt::AlignHCenter | Qt::AlignBottom, label);
  }
  p.setPen(QColor(150, 155, 165));
  p.setBrush(Qt::NoBrush);
  p.drawRect(g);
}

void CommunicationMatrix::mouseReleaseEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return;
  if (const auto pair = pairAt(e->position())) emit cellActivated(pair->first, pair->second);
}

bool CommunicationMatrix::event(QEvent* e) {
  return answer_tool_tip(this, e, [this](QPointF pos) { return toolTipAt(pos); }) || QWidget::event(e);
}

CommunicationPanel::CommunicationPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* top = new QHBoxLayout;
  metric_ = new QComboBox(this);
  metric_->addItems({tr("bytes"), tr("messages"), tr("time (send posted → receive completed)"),
                     tr("wait (late sender or late receiver)")});
  top->addWidget(new QLabel(tr("Point-to-point messages, per sender and receiver:"), this));
  top->addWidget(metric_);
  top->addStretch(1);
  note_ = new QLabel(this);
  note_->setWordWrap(true);
  matrix_ = new CommunicationMatrix(this);
  layout->addLayout(top);
  layout->addWidget(matrix_, 1);
  layout->addWidget(note_);
  connect(metric_, &QComboBox::currentIndexChanged, this,
          [this](int i) { matrix_->setMetric(static_cast<MatrixMetric>(i)); });
  connect(matrix_, &CommunicationMatrix::cellActivated, this, &CommunicationPanel::cellActivated);
}

void CommunicationPanel::setRun(std::shared_ptr<const RunData> run) {
  matrix_->setRun(run);
  if (!run) {
    note_->clear();
    return;
  }
  const auto& w = run->model().messages().waits();
  std::string text = fmt::format("{} messages matched (MPI's non-overtaking order, run/)", w.messages);
  if (w.unmatched_sends || w.unmatched_receives)
    text += fmt::format("; {} sends and {} receives without their other side in the run", w.unmatched_sends, w.unmatched_receives);
  if (w.unknown_source) text += fmt::format("; {} receives from an unknown source", w.unknown_source);
  note_->setText(QString::fromStdString(text + ". Click a cell to select its messages on the timeline."));
}

}  // namespace collscope::gui
