#pragma once
// Loads a run directory (rank-NNNNN.sqlite files) into a RunData, off the GUI thread, through collscope::run:
// each rank file read once, clocks aligned and collectives matched by run/, the analyzer run on that same run.
// Bad input throws collscope::InputError (one line naming the file and the problem); a partial run
// (ranks missing, events dropped) loads with RunData::warnings.
#include <collscope/gui/run_data.hpp>

#include <QObject>
#include <QString>

#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace collscope::gui {

// percent 0..100, stage "reading rank-00001.sqlite", "matching collectives" ...
using ProgressFn = std::function<void(int percent, const std::string& stage)>;

// What the first paint needs: the run read (rank files in parallel), its clocks aligned, its collectives matched
// (collscope::run) and the lanes built; no steps, findings or statistics yet. Synchronous.
std::shared_ptr<const RunData> load_timeline(const std::string& dir, const ProgressFn& progress = {});
// load_timeline, then analyze_loaded_run (run_analysis.hpp): the whole view of a run. Synchronous.
std::shared_ptr<const RunData> load_run(const std::string& dir, const ProgressFn& progress = {});

// Runs load_timeline and then the analysis on a worker thread and reports both back on the GUI thread.
class RunLoadJob : public QObject {
  Q_OBJECT
 public:
  explicit RunLoadJob(QObject* parent = nullptr);
  // Does not wait: a load still running (the analyzer cannot be interrupted) finishes on its own
  // thread and its results are dropped.
  ~RunLoadJob() override;

  // Starts loading; the results of a load still running are dropped from then on.
  void start(const QString& dir);
  bool running() const { return running_; }
  // Loads still running in this process, abandoned ones included (collscope-view exits with _Exit
  // rather than run static destructors under them).
  static int activeLoads();

 signals:
  void progress(int percent, const QString& stage);
  void loaded(std::shared_ptr<const collscope::gui::RunData> run);
  void failed(const QString& message);
  void finished();  // after the last loaded()/failed() of this start()

 private:
  struct Relay;  // shared with the worker thread: the job to report to, or none once abandoned
  std::shared_ptr<Relay> relay_;
  bool running_ = false;
};

}  // namespace collscope::gui

Q_DECLARE_METATYPE(std::shared_ptr<const collscope::gui::RunData>)
