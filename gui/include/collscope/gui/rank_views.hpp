#pragma once
// Views that scale to thousands of ranks, where one lane per rank stops working: the "Ranks" panel holding the
// rank heat map (rank_heatmap.hpp) and the collective lens (collective_lens.hpp) side by side.
#include <collscope/gui/collective_lens.hpp>
#include <collscope/gui/rank_heatmap.hpp>
#include <collscope/gui/run_data.hpp>

#include <QWidget>

#include <cstdint>
#include <memory>

class QLabel;

namespace collscope::gui {

// The two side by side in the "Ranks" panel, with a line saying what they show.
class RankViews : public QWidget {
  Q_OBJECT
 public:
  explicit RankViews(QWidget* parent = nullptr);
  void setRun(std::shared_ptr<const RunData> run);
  RankHeatMap* heatMap() const { return heat_; }
  CollectiveLens* lens() const { return lens_; }

 signals:
  void stepActivated(int rank_index, std::int64_t start_ns, std::int64_t end_ns);
  void collectiveActivated(std::uint32_t id);
  void instanceActivated(std::uint32_t instance, int rank_index);  // CollectiveLens::instanceActivated

 private:
  std::shared_ptr<const RunData> run_;
  QLabel* note_;
  RankHeatMap* heat_;
  CollectiveLens* lens_;
};

}  // namespace collscope::gui
