#pragma once
// Loads a run directory (rank-NNNNN.sqlite files) into a RunData, off the GUI thread.
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

// Reads every rank file (in parallel), aligns clocks, matches collectives across ranks by
// (communicator key, seq), sorts the events into lanes and, when the analyzer is built, attaches its
// findings and statistics. Synchronous; throws collscope::InputError.
std::shared_ptr<const RunData> load_run(const std::string& dir, const ProgressFn& progress = {});

// Runs load_run on a worker thread and reports back on the GUI thread.
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
