#pragma once
// The viewer's main window: wires the timeline, the panels, search, step navigation and the loader.
// It owns no analysis or drawing of its own.
#include <collscope/gui/run_data.hpp>

#include <QMainWindow>

#include <memory>

class QLabel;
class QLineEdit;
class QMenu;
class QProgressBar;
class QSpinBox;

namespace collscope::gui {

class DetailsPanel;
class FindingsPanel;
class RunLoadJob;
class StatisticsPanel;
class StudyView;
class TimelineView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Starts loading in the background; runLoaded() or loadFailed() follows, then loadFinished().
  // A study file (STUDY.sqlite of `collscope tune`) opens in the tuning-study view instead.
  void openRun(const QString& dir);
  // For tests and the screenshot tool: shows a run already in memory.
  void showRun(std::shared_ptr<const RunData> run, bool keep_range = false);
  bool loading() const;

  // Search by op name ("allreduce"), size ("64KiB", "1048576") or NVTX/kernel name; selects (or shows)
  // the next match after the current selection. Returns false when nothing matches.
  bool findNext(const QString& query);
  void jumpToStep(int step);
  void activateFinding(const Finding& finding);

  TimelineView* timeline() const { return timeline_; }
  DetailsPanel* details() const { return details_; }
  FindingsPanel* findings() const { return findings_; }
  StatisticsPanel* statistics() const { return statistics_; }
  StudyView* study() const { return study_; }
  const RunData* run() const { return run_.get(); }
  // The message shown above the timeline (errors, partial runs); empty when none.
  QString message() const;

 signals:
  void runLoaded();
  void loadFailed(const QString& message);
  void loadFinished();

 private:
  void showMessage(const QString& text, bool error);
  void addRecent(const QString& dir);
  void rebuildRecentMenu();
  void openDialog();

  std::shared_ptr<const RunData> run_;
  TimelineView* timeline_;
  DetailsPanel* details_;
  FindingsPanel* findings_;
  StatisticsPanel* statistics_;
  StudyView* study_;
  class QDockWidget* study_dock_;
  RunLoadJob* loader_;
  QLabel* banner_;
  QLabel* hover_label_;
  QProgressBar* progress_;
  QLineEdit* search_;
  QSpinBox* step_box_;
  QMenu* recent_menu_;
  QString loading_dir_;
};

}  // namespace collscope::gui
