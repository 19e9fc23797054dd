// The "Ranks" panel (rank_views.hpp): the rank heat map and the collective lens side by side, with a line saying
// what they show.
#include <collscope/gui/rank_views.hpp>

#include <QLabel>
#include <QSplitter>
#include <QVBoxLayout>

namespace collscope::gui {

RankViews::RankViews(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  note_ = new QLabel(this);
  note_->setWordWrap(true);
  heat_ = new RankHeatMap(this);
  lens_ = new CollectiveLens(this);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(heat_);
  split->addWidget(lens_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  layout->addWidget(note_);
  layout->addWidget(split, 1);
  connect(heat_, &RankHeatMap::cellActivated, this, [this](int rank, int step) {
    if (!run_ || !run_->summaries) return;
    const auto& h = run_->summaries->heat;
    emit stepActivated(rank, h.step_start_ns[step], h.step_start_ns[step + 1]);
  });
  connect(lens_, &CollectiveLens::collectiveActivated, this, &RankViews::collectiveActivated);
  connect(lens_, &CollectiveLens::instanceActivated, this, &RankViews::instanceActivated);
  setRun(nullptr);
}

void RankViews::setRun(std::shared_ptr<const RunData> run) {
  run_ = std::move(run);
  heat_->setRun(run_);
  lens_->setRun(run_);
  note_->setText(!run_ ? tr("No run loaded.")
                       : !run_->summaries
                             ? tr("Analyzing…")
                             : tr("Left: how late each rank came to each step's collectives (its arrival after the first "
                                  "rank's, summed). Right: one row per collective, where its ranks arrived between the first "
                                  "and the last (red: the last). Wheel: zoom, drag: pan, double-click: all, click: show it."));
}

}  // namespace collscope::gui
