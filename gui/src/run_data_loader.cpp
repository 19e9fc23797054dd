// Loads a run for the viewer through collscope::run (no SQL and no matching of its own here): the run read once,
// its clocks aligned and its collectives matched by run/, then the lanes built over it (timeline_model.cpp).
#include <collscope/gui/run_data_loader.hpp>
#include <collscope/gui/windowed_run.hpp>

#include <collscope/run/clock_alignment.hpp>
#include <collscope/run/run.hpp>
#include <collscope/store/error.hpp>

#include "run_analysis.hpp"

#include <fmt/format.h>

#include <atomic>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>

#include <malloc.h>

namespace collscope::gui {

std::shared_ptr<const RunData> load_timeline(const std::string& dir, const ProgressFn& progress) {
  auto report = [&](int percent, const std::string& stage) {
    if (progress) progress(percent, stage);
  };
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) throw InputError(fmt::format("{}: no such run directory", dir));
  report(0, "reading rank files");
  run::LoadOptions options;
  std::mutex progress_mutex;
  options.on_file_loaded = [&](std::size_t done, std::size_t total, const std::string& path) {
    std::lock_guard lock(progress_mutex);
    report(static_cast<int>(80.0 * double(done) / double(total)),
           fmt::format("read {}", std::filesystem::path(path).filename().string()));
  };
  auto loaded = std::make_shared<const run::Run>(run::RunLoader(options).load(dir));
  report(82, "aligning clocks");
  auto clocks = run::ClockAligner().align(*loaded);
  report(86, "matching collectives, building lanes");
  auto data = std::make_shared<RunData>();
  data->dir = dir;
  data->timeline = std::make_shared<const TimelineModel>(loaded, std::move(clocks));
  data->warnings = loaded->problems;
  const auto readable = loaded->ranks.size();
  if (loaded->world_size > 0 && static_cast<std::size_t>(loaded->world_size) > readable)
    data->warnings.insert(data->warnings.begin(),
                          fmt::format("{}: partial run: {} of {} ranks have a readable trace file", dir, readable,
                                      loaded->world_size));
  report(100, "timeline ready");
  return data;
}

std::shared_ptr<const RunData> load_run(const std::string& dir, const ProgressFn& progress) {
  return analyze_loaded_run(*load_timeline(dir, progress));
}

namespace {
std::atomic<int> active_loads{0};
}  // namespace

struct RunLoadJob::Relay : std::enable_shared_from_this<RunLoadJob::Relay> {
  std::mutex mutex;
  RunLoadJob* job = nullptr;
  // Runs fn on the job's (GUI) thread if this relay is still the job's current one when it gets there.
  template <typename Fn>
  void post(Fn fn) {
    std::lock_guard lock(mutex);
    if (!job) return;
    RunLoadJob* target = job;
    auto self = shared_from_this();  // held by the event: its address cannot be reused meanwhile
    QMetaObject::invokeMethod(target, [target, self, fn = std::move(fn)] {
      if (target->relay_ == self) fn(target);
    }, Qt::QueuedConnection);  // dropped by Qt if the job is deleted first
  }
};

int RunLoadJob::activeLoads() { return active_loads.load(); }

RunLoadJob::RunLoadJob(QObject* parent) : QObject(parent) {
  qRegisterMetaType<std::shared_ptr<const collscope::gui::RunData>>();
}

RunLoadJob::~RunLoadJob() {
  if (relay_) {
    std::lock_guard lock(relay_->mutex);
    relay_->job = nullptr;
  }
}

void RunLoadJob::start(const QString& dir) {
  if (relay_) {
    std::lock_guard lock(relay_->mutex);
    relay_->job = nullptr;  // abandon the previous load
  }
  relay_ = std::make_shared<Relay>();
  relay_->job = this;
  running_ = true;
  const std::string path = dir.toStdString();
  ++active_loads;
  std::thread([relay = relay_, path] {
    auto progress_fn = [&relay](int percent, const std::string& stage) {
      relay->post([percent, text = QString::fromStdString(stage)](RunLoadJob* job) { emit job->progress(percent, text); });
    };
    auto fail = [&relay](const std::string& message) {
      relay->post([text = QString::fromStdString(message)](RunLoadJob* job) { emit job->failed(text); });
    };
    try {
      // A large run with a view cache: its overview at once, its events a window at a time (windowed_run.hpp).
      const auto policy = windowed_run_policy();
      const auto cache = view_cache_path(path);
      if (auto windowed = WindowedRun::open(path, cache); windowed && windowed->event_count() >= policy.min_events) {
        auto overview = windowed->overview();
        relay->post([overview](RunLoadJob* job) { emit job->loaded(overview); });
        relay->post([](RunLoadJob* job) {
          job->running_ = false;
          emit job->finished();
        });
        --active_loads;
        return;
      }
      auto timeline = load_timeline(path, progress_fn);
      relay->post([timeline](RunLoadJob* job) { emit job->loaded(timeline); });
      {
        progress_fn(0, analysis_available() ? "analyzing" : "finding steps");
        try {
          auto analyzed = analyze_loaded_run(*timeline);
          relay->post([analyzed](RunLoadJob* job) { emit job->loaded(analyzed); });
          if (static_cast<std::int64_t>(analyzed->model().event_count()) >= policy.min_events) {
            try {  // the next opening reads it a window at a time
              write_view_cache(*analyzed, cache);
            } catch (const std::exception& e) {
              fmt::print(stderr, "collscope-view: {}\n", e.what());  // this opening is complete without it
            }
          }
          // Loading and analysis free most of what they allocated on this thread and the reader threads, but
          // glibc keeps freed pages in those threads' arenas: 13 B/event of RSS at 2.25 M events (viewer_bench,
          // docs/performance.md). Give them back; the run's own arrays stay.
          ::malloc_trim(0);
        } catch (const std::exception& e) {
          fail(fmt::format("analysis failed: {}", e.what()));
        }
      }
    } catch (const std::exception& e) {
      fail(e.what());
    }
    relay->post([](RunLoadJob* job) {
      job->running_ = false;
      emit job->finished();
    });
    --active_loads;
  }).detach();
}

}  // namespace collscope::gui
