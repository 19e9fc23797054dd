#pragma once
// The viewer's main window: wires the timeline, the panels, search, step navigation, the view history and the
// loader, and owns the window-wide keys (they work whichever panel has the focus). No analysis or drawing here.
#include <collscope/gui/run_data.hpp>
#include <collscope/gui/search.hpp>

#include <QMainWindow>

#include <memory>

class QAction;
class QDialog;
class QLabel;
class QLineEdit;
class QMenu;
class QProgressBar;
class QSpinBox;

namespace collscope::gui {

class CommunicationPanel;
class DetailsPanel;
class FindingsPanel;
class RankViews;
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
  void openRun(const QString& path);
  // For tests and the screenshot tool: shows a run already in memory.
  void showRun(std::shared_ptr<const RunData> run, bool keep_range = false);
  bool loading() const;

  // Search (search.hpp): by op, size as shown ("1 MiB", ">64KiB"), both, or NVTX/kernel name. Selects (or shows)
  // the next / previous match after the current one, highlights every match; false when nothing matches.
  bool findNext(const QString& query);
  bool findPrevious(const QString& query);
  QString searchStatus() const;  // "3 of 120 matches", "no match", ""
  void jumpToStep(int step);
  void activateFinding(const Finding& finding);
  void showHelp();

  TimelineView* timeline() const { return timeline_; }
  DetailsPanel* details() const { return details_; }
  FindingsPanel* findings() const { return findings_; }
  StatisticsPanel* statistics() const { return statistics_; }
  StudyView* study() const { return study_; }
  RankViews* rankViews() const { return rank_views_; }
  CommunicationPanel* communication() const { return communication_; }
  class QDockWidget* communicationDock() const { return communication_dock_; }
  QDialog* helpDialog() const { return help_; }
  const RunData* run() const { return run_.get(); }
  // A windowed run: whether a window of events is being loaded.
  bool loadingWindow() const;
  // The message shown above the timeline (errors, partial runs); empty when none.
  QString message() const;

 signals:
  void runLoaded();
  void windowLoaded();  // a windowed run's events of the visible ranks and range (windowed_run.hpp) are shown
  void loadFailed(const QString& message);
  void loadFinished();

 protected:
  void showEvent(QShowEvent* e) override;

 private:
  void showMessage(const QString& text, bool error);
  void addRecent(const QString& path);
  void rebuildRecentMenu();
  void openDialog();
  void addWindowKeys();
  bool find(const QString& query, int direction);
  void showHit(const SearchHit& hit);
  void updateHistoryActions();
  void showStepInView();
  // A windowed run: loads the events of the visible ranks and range (with margins) unless the shown window holds
  // them, in the background; showWindow shows them.
  void requestVisibleWindow();
  void showWindow(std::shared_ptr<const RunData> window);  // the step field follows the view: the step at its centre

  std::shared_ptr<const RunData> run_;
  TimelineView* timeline_;
  DetailsPanel* details_;
  FindingsPanel* findings_;
  StatisticsPanel* statistics_;
  StudyView* study_;
  RankViews* rank_views_;
  CommunicationPanel* communication_;
  class QDockWidget* communication_dock_;
  class QDockWidget* study_dock_;
  class QDockWidget* details_dock_;
  class QDockWidget* findings_dock_;
  bool docks_sized_ = false;
  // A windowed run: the lens's instance (and the rank whose call to select) waiting for its window.
  std::uint32_t pending_instance_ = kNoInstance;
  int pending_rank_ = -1;
  RunLoadJob* loader_;
  class RunWindowLoader* window_loader_;
  QLabel* banner_;
  QLabel* hover_label_;
  QProgressBar* progress_;
  QLineEdit* search_;
  QLabel* search_status_;
  QSpinBox* step_box_;
  QMenu* recent_menu_;
  QAction* back_action_;
  QAction* forward_action_;
  QDialog* help_ = nullptr;
  QString loading_dir_;
  // The current search: its query, its matches in time order and the one shown.
  std::shared_ptr<const SearchQuery> query_;
  SearchResults results_;
  std::ptrdiff_t current_hit_ = -1;
};

}  // namespace collscope::gui
