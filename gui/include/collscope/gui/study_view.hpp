#pragma once
// The tuning-study view: the trials of a `collscope tune` study file (STUDY.sqlite), read through the autotuner's
// own Study and SearchSpace so that knob names, scores and the best settings are the tuner's (`tune show` prints
// the same best), as a table (a trial's row opens its trace), and a convergence plot (each trial's score and the
// best so far, with ticks and the objective's unit).
#include <QWidget>

#include <optional>
#include <string>
#include <vector>

class QTableWidget;
class QLabel;

namespace collscope::gui {

struct StudyData {
  std::string path;
  bool maximize = true;                    // objective direction from the stored search space
  std::string unit;                        // the objective's unit ("samples/s"), may be empty
  std::vector<std::string> columns;        // trial columns shown: id, kind, status, one per knob (by name), score...
  std::vector<std::vector<std::string>> rows;  // as shown: scores and times formatted
  std::vector<std::optional<double>> scores;  // per trial, in trial order; nullopt: failed / no score
  std::vector<std::string> trace_dirs;     // per trial: its trace directory ("" when it has none)
  // The tuner's best: the settings with the best mean score over their successful runs.
  std::optional<double> best_mean;
  std::string best_text;                   // "fusion_threshold=67108864 cycle_ms=5 (mean of 2 runs, trials 3,7)"
  // The best setting's mean after each trial (nullopt until the first scored trial), the tuner's definition of best
  // (autotuner::best_mean_after_each): the plot's line ends at best_mean.
  std::vector<std::optional<double>> best_so_far;
};

// True when `path` is a study file (an SQLite file with a `trials` table), without throwing.
bool is_study_file(const std::string& path);
// Throws collscope::InputError naming the file.
StudyData load_study(const std::string& path);
// A score with the precision its size needs and its unit: "1004.3 samples/s", "12.5 ms".
std::string format_score(double value, const std::string& unit);

class ConvergencePlot : public QWidget {
  Q_OBJECT
 public:
  explicit ConvergencePlot(QWidget* parent = nullptr);
  void setStudy(const StudyData* study);

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  const StudyData* study_ = nullptr;
};

class StudyView : public QWidget {
  Q_OBJECT
 public:
  explicit StudyView(QWidget* parent = nullptr);
  void setStudy(StudyData study);
  const StudyData& study() const { return study_; }
  QTableWidget* trialsTable() const { return table_; }
  QLabel* title() const { return title_; }

 signals:
  // A trial's row was double-clicked (or Enter pressed on it) and the trial left a trace: its directory.
  void traceRequested(const QString& trace_dir);

 private:
  StudyData study_;
  QLabel* title_;
  QTableWidget* table_;
  ConvergencePlot* plot_;
};

}  // namespace collscope::gui
