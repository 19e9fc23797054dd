#include <collscope/gui/main_window.hpp>

#include <collscope/gui/panels.hpp>
#include <collscope/gui/run_loader.hpp>
#include <collscope/gui/study_view.hpp>
#include <collscope/gui/timeline_view.hpp>

#include <QAction>
#include <QDockWidget>
#include <QFileDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QRegularExpression>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QToolBar>
#include <QVBoxLayout>

#include <collscope/store/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace collscope::gui {
namespace {

constexpr int kMaxRecent = 8;

// "64KiB", "1 MiB", "4096", "2m" → bytes.
std::optional<std::int64_t> parse_size(const QString& text) {
  static const QRegularExpression re(R"(^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$)", QRegularExpression::CaseInsensitiveOption);
  const auto m = re.match(text);
  if (!m.hasMatch()) return std::nullopt;
  double v = m.captured(1).toDouble();
  const QString unit = m.captured(2).toLower();
  const int power = unit == "k" ? 1 : unit == "m" ? 2 : unit == "g" ? 3 : unit == "t" ? 4 : 0;
  return static_cast<std::int64_t>(std::llround(v * std::pow(1024.0, power)));
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("collscope view"));
  resize(1400, 860);

  timeline_ = new TimelineView(this);
  banner_ = new QLabel(this);
  banner_->setObjectName("messageBanner");
  banner_->setWordWrap(true);
  banner_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  banner_->hide();
  auto* central = new QWidget(this);
  auto* layout = new QVBoxLayout(central);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addWidget(banner_);
  layout->addWidget(timeline_, 1);
  setCentralWidget(central);

  details_ = new DetailsPanel(this);
  findings_ = new FindingsPanel(this);
  statistics_ = new StatisticsPanel(this);
  study_ = new StudyView(this);
  auto dock = [this](QWidget* w, const QString& title, Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(title);
    d->setWidget(w);
    addDockWidget(area, d);
    return d;
  };
  auto* details_dock = dock(details_, tr("Details"), Qt::RightDockWidgetArea);
  auto* findings_dock = dock(findings_, tr("Findings"), Qt::BottomDockWidgetArea);
  auto* statistics_dock = dock(statistics_, tr("Statistics"), Qt::BottomDockWidgetArea);
  study_dock_ = dock(study_, tr("Tuning study"), Qt::BottomDockWidgetArea);
  tabifyDockWidget(findings_dock, statistics_dock);
  tabifyDockWidget(statistics_dock, study_dock_);
  findings_dock->raise();
  resizeDocks({details_dock}, {380}, Qt::Horizontal);
  resizeDocks({findings_dock}, {190}, Qt::Vertical);

  // Menus and toolbar.
  auto* file = menuBar()->addMenu(tr("&File"));
  auto* open = file->addAction(tr("&Open run…"), this, &MainWindow::openDialog);
  open->setShortcut(QKeySequence::Open);
  recent_menu_ = file->addMenu(tr("Open &recent"));
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
  auto* view = menuBar()->addMenu(tr("&View"));
  auto* fit = view->addAction(tr("Zoom to &fit (F)"), timeline_, &TimelineView::zoomToFit);
  auto* zoom_sel = view->addAction(tr("Zoom to &selection (Z)"), timeline_, &TimelineView::zoomToSelection);
  view->addSeparator();
  for (auto* d : {details_dock, findings_dock, statistics_dock, study_dock_}) view->addAction(d->toggleViewAction());
  auto* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&Keys"), this, [this] {
    QMessageBox::information(this, tr("Keys"),
                             tr("W / S: zoom in / out around the mouse\nA / D: pan left / right\n"
                                "Wheel: zoom, Shift+wheel: scroll lanes\nDrag: pan, Shift+drag or right-drag: select a range\n"
                                "Z: zoom to the selection, F: zoom to fit, Esc: clear the selection"));
  });

  auto* bar = addToolBar(tr("Navigation"));
  bar->setObjectName("navigation");
  bar->addAction(open);
  bar->addAction(fit);
  bar->addAction(zoom_sel);
  bar->addSeparator();
  search_ = new QLineEdit(this);
  search_->setPlaceholderText(tr("Search op, size or name (Enter: next)"));
  search_->setClearButtonEnabled(true);
  search_->setMaximumWidth(300);
  bar->addWidget(search_);
  connect(search_, &QLineEdit::returnPressed, this, [this] {
    if (!findNext(search_->text())) statusBar()->showMessage(tr("No match for \"%1\"").arg(search_->text()), 4000);
  });
  bar->addSeparator();
  bar->addWidget(new QLabel(tr(" Step "), this));
  step_box_ = new QSpinBox(this);
  step_box_->setRange(0, 0);
  bar->addWidget(step_box_);
  bar->addAction(tr("Go"), this, [this] { jumpToStep(step_box_->value()); });

  hover_label_ = new QLabel(this);
  statusBar()->addWidget(hover_label_, 1);
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 100);
  progress_->setMaximumWidth(260);
  progress_->setFormat("%p% %v");
  progress_->hide();
  statusBar()->addPermanentWidget(progress_);

  loader_ = new RunLoadJob(this);
  connect(loader_, &RunLoadJob::progress, this, [this](int percent, const QString& stage) {
    progress_->setValue(percent);
    progress_->setFormat(QStringLiteral("%1: %p%").arg(stage));
  });
  connect(loader_, &RunLoadJob::loaded, this, [this](std::shared_ptr<const RunData> run) {
    const bool refined = run_ && run->analyzed && run_->dir == run->dir;
    showRun(std::move(run), refined);
  });
  connect(loader_, &RunLoadJob::failed, this, [this](const QString& message) {
    showMessage(message, true);
    emit loadFailed(message);
  });
  connect(loader_, &RunLoadJob::finished, this, [this] {
    progress_->hide();
    if (run_)
      statusBar()->showMessage(QString::fromStdString(fmt::format(
          "{}: {} ranks, {} collectives, {} GPU activities, {} NVTX ranges{}", run_->dir, run_->run().ranks.size(),
          run_->model().collective_count(), run_->model().span_count(LaneKind::GpuStream),
          run_->model().span_count(LaneKind::Nvtx), run_->analyzed ? ", analyzed" : "")));
    else
      statusBar()->clearMessage();  // not "Loading …" under the error banner
    emit loadFinished();
  });

  connect(timeline_, &TimelineView::collectiveSelected, details_, &DetailsPanel::showCollective);
  connect(timeline_, &TimelineView::collectiveHovered, this, [this](std::uint32_t event) {
    if (!run_ || event >= run_->model().collective_count()) {
      hover_label_->clear();
      return;
    }
    const auto& m = run_->model();
    const auto e = m.collective(event);
    std::string text = fmt::format("rank {}: {} {}  {}", run_->run().ranks[e.rank_index].world_rank, store::op_name(e.op),
                                   format_bytes(double(e.bytes)), format_duration(double(e.end_ns - e.start_ns)));
    if (e.instance != kNoInstance)
      text += fmt::format("  wait {}", format_duration(double(std::max<std::int64_t>(
                                           0, m.run_time(m.matched().instances[e.instance].last_arrival_ns) - e.start_ns))));
    hover_label_->setText(QString::fromStdString(text));
  });
  connect(findings_, &FindingsPanel::findingActivated, this, &MainWindow::activateFinding);
  rebuildRecentMenu();
}

MainWindow::~MainWindow() = default;

bool MainWindow::loading() const { return loader_->running(); }

void MainWindow::openDialog() {
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a run directory"));
  if (!dir.isEmpty()) openRun(dir);
}

void MainWindow::openRun(const QString& dir) {
  if (is_study_file(dir.toStdString())) {
    try {
      study_->setStudy(load_study(dir.toStdString()));
      study_dock_->show();
      study_dock_->raise();
      showMessage({}, false);
      addRecent(dir);
    } catch (const Error& e) {
      const QString message = QString::fromStdString(e.what());
      showMessage(message, true);
      QMetaObject::invokeMethod(this, [this, message] { emit loadFailed(message); }, Qt::QueuedConnection);
    }
    // Queued, as after a background load: callers connect after openRun() returns.
    QMetaObject::invokeMethod(this, [this] { emit loadFinished(); }, Qt::QueuedConnection);
    return;
  }
  loading_dir_ = dir;
  showMessage({}, false);
  progress_->setValue(0);
  progress_->show();
  statusBar()->showMessage(tr("Loading %1…").arg(dir), 2000);
  addRecent(dir);
  loader_->start(dir);
}

void MainWindow::showRun(std::shared_ptr<const RunData> run, bool keep_range) {
  const auto selected = timeline_->selectedCollective();
  const auto ranks = timeline_->highlightedRanks();
  run_ = std::move(run);
  timeline_->setRun(run_, keep_range);
  details_->setRun(run_);
  if (keep_range && selected != kNoInstance) {
    timeline_->selectCollective(selected);
    details_->showCollective(selected);
    timeline_->setHighlightedRanks(ranks);
  }
  findings_->setRun(run_.get());
  statistics_->setRun(run_.get());
  step_box_->setRange(0, std::max<int>(0, static_cast<int>(run_->steps.size()) - 1));
  setWindowTitle(QString::fromStdString(fmt::format("collscope view — {}", run_->dir)));
  if (!run_->warnings.empty()) {
    std::string text;
    for (const auto& w : run_->warnings) text += (text.empty() ? "" : "\n") + w;
    showMessage(QString::fromStdString(text), false);
  } else {
    showMessage({}, false);
  }
  emit runLoaded();
}

QString MainWindow::message() const { return banner_->isHidden() ? QString() : banner_->text(); }

void MainWindow::showMessage(const QString& text, bool error) {
  banner_->setText(text);
  banner_->setVisible(!text.isEmpty());
  banner_->setStyleSheet(error ? "QLabel { background: #f8d7da; color: #721c24; padding: 6px; }"
                               : "QLabel { background: #fff3cd; color: #5c4400; padding: 6px; }");
}

void MainWindow::addRecent(const QString& dir) {
  QSettings settings("collscope", "viewer");
  QStringList recent = settings.value("recent").toStringList();
  recent.removeAll(dir);
  recent.prepend(dir);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue("recent", recent);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  recent_menu_->clear();
  const QStringList recent = QSettings("collscope", "viewer").value("recent").toStringList();
  for (const auto& dir : recent) recent_menu_->addAction(dir, this, [this, dir] { openRun(dir); });
  recent_menu_->setEnabled(!recent.isEmpty());
}

bool MainWindow::findNext(const QString& query) {
  if (!run_ || query.trimmed().isEmpty()) return false;
  const QString q = query.trimmed();
  const auto op = store::op_from_name(q.toLower().toStdString());
  const auto size = op ? std::nullopt : parse_size(q);
  const auto& m = run_->model();
  const auto& ranks = run_->run().ranks;
  if (op || size) {
    // Next matching collective in time after the selection (or the visible start), wrapping around.
    const auto sel = timeline_->selectedCollective();
    const std::int64_t after = sel != kNoInstance ? m.collective(sel).start_ns : timeline_->visibleStart() - 1;
    std::uint32_t best = kNoInstance, first = kNoInstance;
    std::int64_t best_start = 0, first_start = 0;
    for (std::size_t r = 0; r < ranks.size(); ++r)
      for (std::size_t j = 0; j < ranks[r].collectives.size(); ++j) {
        const auto& c = ranks[r].collectives[j];
        if (op ? c.op != *op : c.bytes != *size) continue;
        const auto start = m.run_time(static_cast<int>(r), c.start_ns);
        const auto id = m.collective_id(static_cast<int>(r), static_cast<std::int32_t>(j));
        if (first == kNoInstance || start < first_start) first = id, first_start = start;
        const bool later = start > after || (start == after && sel != kNoInstance && id > sel);
        if (later && (best == kNoInstance || start < best_start)) best = id, best_start = start;
      }
    if (best == kNoInstance) best = first;
    if (best == kNoInstance) return false;
    timeline_->selectCollective(best);
    timeline_->zoomToSelection();
    return true;
  }
  // NVTX range or GPU activity whose name contains the text.
  const auto& names = m.names();
  std::vector<bool> matches(names.size(), false);
  bool any = false;
  for (std::size_t n = 1; n < names.size(); ++n)
    if (QString::fromStdString(names[n]).contains(q, Qt::CaseInsensitive)) matches[n] = any = true;
  if (!any) return false;
  const double centre = (timeline_->visibleStart() + timeline_->visibleEnd()) / 2.0;
  struct Hit {
    std::int64_t start = 0, end = 0;
    std::int32_t name = -1;
  } best, first;
  auto consider = [&](int r, std::int32_t name, std::int64_t raw_start, std::int64_t raw_end) {
    if (!matches[name]) return;
    const Hit h{m.run_time(r, raw_start), m.run_time(r, std::max(raw_start, raw_end)), name};
    if (first.name < 0 || h.start < first.start) first = h;
    if (h.start > centre + 1 && (best.name < 0 || h.start < best.start)) best = h;
  };
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (const auto& s : ranks[r].nvtx_ranges) consider(static_cast<int>(r), s.name, s.start_ns, s.end_ns);
    for (const auto& g : ranks[r].gpu_activities) consider(static_cast<int>(r), g.name, g.start_ns, g.end_ns);
  }
  if (best.name < 0) best = first;
  if (best.name < 0) return false;
  const double w = std::max<double>(best.end - best.start, 1000);
  timeline_->setVisibleRange(best.start + w / 2 - 2 * w, best.start + w / 2 + 2 * w);
  statusBar()->showMessage(QString::fromStdString(names[best.name]), 4000);
  return true;
}

void MainWindow::jumpToStep(int step) {
  if (!run_ || step < 0 || step >= static_cast<int>(run_->steps.size())) return;
  const auto& s = run_->steps[step];
  const double pad = std::max<double>(s.end_ns - s.start_ns, 1000) * 0.02;
  timeline_->setVisibleRange(s.start_ns - pad, s.end_ns + pad);
}

void MainWindow::activateFinding(const Finding& finding) {
  if (!run_) return;
  std::vector<int> ranks;
  for (int world : finding.world_ranks)
    if (int r = run_->model().rank_index_of_world(world); r >= 0) ranks.push_back(r);
  timeline_->setHighlightedRanks(ranks);
  timeline_->setVisibleRange(static_cast<double>(finding.start_ns), static_cast<double>(finding.end_ns));
  statusBar()->showMessage(QString::fromStdString(finding.suggestion), 8000);
}

}  // namespace collscope::gui
