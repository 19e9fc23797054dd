#pragma once
// The tuning-study view: the trials of a `collscope tune` study file (STUDY.sqlite, read directly: the
// viewer does not link the autotuner) as a table, and a convergence plot (each trial's score and the
// best so far).
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
  std::vector<std::string> columns;        // trial columns shown
  std::vector<std::vector<std::string>> rows;
  std::vector<std::optional<double>> scores;  // per trial, in trial order; nullopt: failed / no score
  // Best score after each trial (nullopt until the first scored trial).
  std::vector<std::optional<double>> best_so_far() const;
};

// True when `path` is a study file (an SQLite file with a `trials` table), without throwing.
bool is_study_file(const std::string& path);
// Throws collscope::InputError naming the file.
StudyData load_study(const std::string& path);

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

 private:
  StudyData study_;
  QLabel* title_;
  QTableWidget* table_;
  ConvergencePlot* plot_;
};

}  // namespace collscope::gui
