#include <collscope/gui/main_window.hpp>
#include <collscope/gui/communication_matrix.hpp>

#include <collscope/gui/panels.hpp>
#include <collscope/gui/rank_views.hpp>
#include <collscope/gui/run_data_loader.hpp>
#include <collscope/gui/study_view.hpp>
#include <collscope/gui/timeline_view.hpp>
#include <collscope/gui/windowed_run.hpp>

#include <QAction>
#include <QApplication>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QProgressBar>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QTextBrowser>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>

#include <collscope/store/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace collscope::gui {
namespace {

constexpr int kMaxRecent = 8;

const char* kHelpHtml = R"(<h3>Keys (they work whichever panel has the focus)</h3>
<table cellspacing="4">
<tr><td><b>W</b> / <b>S</b></td><td>zoom in / out around the mouse</td></tr>
<tr><td><b>A</b> / <b>D</b>, ← / →</td><td>pan left / right by a tenth of the view</td></tr>
<tr><td><b>Z</b></td><td>zoom to the selected range, else to the selected collective</td></tr>
<tr><td><b>F</b> or <b>0</b></td><td>zoom to fit the whole run</td></tr>
<tr><td><b>Backspace</b>, <b>Alt+←</b> / <b>Alt+→</b></td><td>back / forward through the views you jumped to</td></tr>
<tr><td><b>Esc</b></td><td>clear the selection, the range, the tint and the search highlight</td></tr>
<tr><td><b>Ctrl+F</b>, <b>Enter</b> / <b>Shift+Enter</b>, <b>F3</b> / <b>Shift+F3</b></td><td>search, next / previous match</td></tr>
<tr><td><b>↑</b> / <b>↓</b>, PgUp / PgDn</td><td>scroll the lanes</td></tr>
<tr><td><b>?</b> or <b>F1</b></td><td>this help</td></tr>
</table>
<h3>Mouse</h3>
<p>Wheel: zoom around the cursor · Shift+wheel: scroll the lanes · drag: pan · Shift+drag or right-drag: select a
time range (its duration and totals appear over it) · click a collective: select it on every rank · click a host
or rank name: collapse or expand it · right-click: pin a lane, hide ranks, zoom, back · hover: details.</p>
<h3>Colours</h3>
<p>Boxes are coloured by operation. The light part of a collective is its <b>wait</b> (this rank's arrival to the
last rank's arrival), the solid part the rest of the call. A dark bar along the bottom: how full the fusion buffer
was. Red hatched: a call the job hung in. Under each rank's name, red is how late the rank came to collectives
(its arrival after the first rank's), blue how long it waited for the last one: a straggler is the red row.
Arrows run from every rank that waited to the rank it waited for. Search matches are outlined in yellow.</p>
<h3>Search</h3>
<p><code>allreduce</code>, <code>1 MiB</code> (what is shown as 1 MiB), <code>4096</code> (bytes exactly),
<code>&gt;64KiB</code>, <code>64KiB..1MiB</code>, <code>bcast 1MiB</code>, or part of an NVTX range or kernel
name.</p>)";

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
  connect(study_, &StudyView::traceRequested, this, &MainWindow::openRun);
  rank_views_ = new RankViews(this);
  communication_ = new CommunicationPanel(this);
  auto dock = [this](QWidget* w, const QString& title, Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(title);
    d->setWidget(w);
    addDockWidget(area, d);
    return d;
  };
  auto* details_dock = details_dock_ = dock(details_, tr("Details"), Qt::RightDockWidgetArea);
  auto* findings_dock = findings_dock_ = dock(findings_, tr("Findings"), Qt::BottomDockWidgetArea);
  auto* statistics_dock = dock(statistics_, tr("Statistics"), Qt::BottomDockWidgetArea);
  auto* ranks_dock = dock(rank_views_, tr("Ranks"), Qt::BottomDockWidgetArea);
  auto* messages_dock = communication_dock_ = dock(communication_, tr("Messages"), Qt::BottomDockWidgetArea);
  study_dock_ = dock(study_, tr("Tuning study"), Qt::BottomDockWidgetArea);
  tabifyDockWidget(findings_dock, statistics_dock);
  tabifyDockWidget(statistics_dock, ranks_dock);
  tabifyDockWidget(ranks_dock, messages_dock);
  tabifyDockWidget(messages_dock, study_dock_);
  findings_dock->raise();

  // Menus and toolbar.
  auto* file = menuBar()->addMenu(tr("&File"));
  auto* open = file->addAction(tr("&Open run or study…"), this, &MainWindow::openDialog);
  open->setShortcut(QKeySequence::Open);
  recent_menu_ = file->addMenu(tr("Open &recent"));
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
  auto* view = menuBar()->addMenu(tr("&View"));
  back_action_ = view->addAction(tr("&Back"), timeline_, &TimelineView::back);
  forward_action_ = view->addAction(tr("F&orward"), timeline_, &TimelineView::forward);
  auto* fit = view->addAction(tr("Zoom to &fit (F)"), timeline_, &TimelineView::zoomToFit);
  auto* zoom_sel = view->addAction(tr("Zoom to &selection (Z)"), timeline_, &TimelineView::zoomToSelection);
  view->addSeparator();
  for (auto* d : {details_dock, findings_dock, statistics_dock, ranks_dock, messages_dock, study_dock_})
    view->addAction(d->toggleViewAction());
  auto* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&Keys and colours (? or F1)"), this, &MainWindow::showHelp);

  auto* bar = addToolBar(tr("Navigation"));
  bar->setObjectName("navigation");
  bar->addAction(open);
  bar->addAction(back_action_);
  bar->addAction(forward_action_);
  bar->addAction(fit);
  bar->addAction(zoom_sel);
  bar->addSeparator();
  search_ = new QLineEdit(this);
  search_->setPlaceholderText(tr("Search: allreduce, 1 MiB, >64KiB, kernel name (Enter / Shift+Enter)"));
  search_->setClearButtonEnabled(true);
  search_->setMinimumWidth(260);
  search_->setMaximumWidth(360);
  bar->addWidget(search_);
  bar->addAction(tr("◀"), this, [this] { findPrevious(search_->text()); })->setToolTip(tr("Previous match (Shift+Enter, Shift+F3)"));
  bar->addAction(tr("▶"), this, [this] { findNext(search_->text()); })->setToolTip(tr("Next match (Enter, F3)"));
  search_status_ = new QLabel(this);
  search_status_->setMinimumWidth(110);
  bar->addWidget(search_status_);
  connect(search_, &QLineEdit::returnPressed, this, [this] {
    if (QApplication::keyboardModifiers() & Qt::ShiftModifier) findPrevious(search_->text());
    else findNext(search_->text());
  });
  connect(search_, &QLineEdit::textChanged, this, [this] {
    query_.reset();
    results_ = {};
    current_hit_ = -1;
    search_status_->clear();
    timeline_->setSearch(nullptr);
  });
  bar->addSeparator();
  bar->addWidget(new QLabel(tr(" Step "), this));
  step_box_ = new QSpinBox(this);
  step_box_->setObjectName("step");
  step_box_->setRange(0, 0);
  step_box_->setToolTip(tr("The step at the centre of the view; type another and Go to frame it"));
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
    const bool refined = run_ && run_->timeline == run->timeline;
    showRun(std::move(run), refined);
  });
  connect(loader_, &RunLoadJob::failed, this, [this](const QString& message) {
    showMessage(message, true);
    emit loadFailed(message);
  });
  connect(loader_, &RunLoadJob::finished, this, [this] {
    progress_->hide();
    if (run_ && run_->windowed)
      statusBar()->showMessage(QString::fromStdString(fmt::format(
          "{}: {} ranks, {} events, shown a window at a time from the view cache {}", run_->dir,
          run_->run().ranks.size(), run_->windowed->event_count(), run_->windowed->cache_path())));
    else if (run_)
      statusBar()->showMessage(QString::fromStdString(fmt::format(
          "{}: {} ranks, {} collectives, {} GPU activities, {} NVTX ranges{}", run_->dir, run_->run().ranks.size(),
          run_->model().collective_count(), run_->model().span_count(LaneKind::GpuStream),
          run_->model().span_count(LaneKind::Nvtx), run_->analyzed ? ", analyzed" : "")));
    else
      statusBar()->clearMessage();  // not "Loading …" under the error banner
    emit loadFinished();
  });

  window_loader_ = new RunWindowLoader(this);
  connect(window_loader_, &RunWindowLoader::loaded, this, &MainWindow::showWindow);
  connect(window_loader_, &RunWindowLoader::failed, this, [this](const QString& message) { showMessage(message, true); });
  connect(timeline_, &TimelineView::visibleRangeChanged, this, &MainWindow::requestVisibleWindow);
  connect(timeline_, &TimelineView::rowsScrolled, this, &MainWindow::requestVisibleWindow);

  connect(timeline_, &TimelineView::collectiveSelected, details_, &DetailsPanel::showCollective);
  connect(timeline_, &TimelineView::pointToPointSelected, details_, &DetailsPanel::showPointToPoint);
  connect(communication_, &CommunicationPanel::cellActivated, this, [this](int sender, int receiver) {
    // The pair's messages selected, the view framed on them: the first send's posting to the last completion.
    if (!run_) return;
    const auto& messages = run_->model().messages();
    auto selected = messages.messages_between(sender, receiver);
    if (selected.empty()) return;
    std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = std::numeric_limits<std::int64_t>::min();
    for (const auto m : selected) {
      const auto msg = messages.message(m);
      first = std::min({first, msg.send_ns, msg.recv_ns});
      last = std::max({last, msg.send_ns, msg.recv_ns});
    }
    timeline_->selectMessages(std::move(selected));
    const double pad = std::max<double>(double(last - first), 1000) * 0.02;
    timeline_->jumpTo(double(first) - pad, double(last) + pad);
    statusBar()->showMessage(tr("Messages from rank %1 to rank %2 selected: Esc clears them").arg(sender).arg(receiver), 6000);
  });
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
  connect(timeline_, &TimelineView::rangeSelected, this, [this](std::int64_t a, std::int64_t b) {
    if (b > a) statusBar()->showMessage(tr("Range of %1 selected: Z zooms to it, Esc clears it").arg(QString::fromStdString(format_duration(double(b - a)))), 6000);
  });
  connect(timeline_, &TimelineView::historyChanged, this, &MainWindow::updateHistoryActions);
  // The step field follows the view as it pans and zooms: the step at its centre (the last one started by then).
  connect(timeline_, &TimelineView::visibleRangeChanged, this, &MainWindow::showStepInView);
  connect(timeline_, &TimelineView::helpRequested, this, &MainWindow::showHelp);
  connect(findings_, &FindingsPanel::findingActivated, this, &MainWindow::activateFinding);
  connect(statistics_, &StatisticsPanel::collectiveActivated, this, [this](std::uint32_t id) {
    timeline_->selectCollective(id);
    timeline_->zoomToSelection();
  });
  connect(rank_views_, &RankViews::stepActivated, this, [this](int rank_index, std::int64_t start, std::int64_t end) {
    timeline_->setHighlightedRanks({rank_index});
    if (run_ && run_->windowed) timeline_->revealRank(rank_index);  // its row, so that its events load
    const double pad = std::max<double>(double(end - start), 1000) * 0.02;
    timeline_->jumpTo(double(start) - pad, double(end) + pad);
  });
  connect(rank_views_, &RankViews::instanceActivated, this, [this](std::uint32_t instance, int rank_index) {
    // A windowed run: the instance's time on the last arriver's row; its call is selected once its window loads.
    if (!run_ || instance >= run_->model().matched().instances.size()) return;
    const auto& inst = run_->model().matched().instances[instance];
    const auto& m = run_->model();
    const double first = double(m.run_time(inst.first_arrival_ns)), end = double(m.run_time(inst.last_completion_ns));
    const double pad = std::max(end - first, 1000.0) * 0.5;
    pending_instance_ = instance;
    pending_rank_ = rank_index;
    timeline_->setHighlightedRanks({rank_index});
    timeline_->revealRank(rank_index);
    timeline_->jumpTo(first - pad, end + pad);
    showWindow(run_);  // selects it at once when the shown window holds it
  });
  connect(rank_views_, &RankViews::collectiveActivated, this, [this](std::uint32_t id) {
    timeline_->selectCollective(id);
    timeline_->zoomToSelection();
  });
  addWindowKeys();
  updateHistoryActions();
  rebuildRecentMenu();
}

MainWindow::~MainWindow() = default;

void MainWindow::showEvent(QShowEvent* e) {
  QMainWindow::showEvent(e);
  if (docks_sized_) return;
  // Sized once the window has its size (before, Qt spreads the docks evenly): most of the height to the timeline.
  docks_sized_ = true;
  QTimer::singleShot(0, this, [this] {
    resizeDocks({details_dock_}, {std::max(300, width() / 4)}, Qt::Horizontal);
    resizeDocks({findings_dock_}, {std::max(150, height() / 5)}, Qt::Vertical);
  });
}

void MainWindow::addWindowKeys() {
  // The timeline's keys, for the whole window: a text field that has the focus keeps its letters (it claims them
  // before shortcuts), everything else gets them to the timeline.
  for (const QKeyCombination key :
       {QKeyCombination(Qt::Key_W), QKeyCombination(Qt::Key_S), QKeyCombination(Qt::Key_A), QKeyCombination(Qt::Key_D),
        QKeyCombination(Qt::Key_Z), QKeyCombination(Qt::Key_F), QKeyCombination(Qt::Key_0),
        QKeyCombination(Qt::Key_Escape), QKeyCombination(Qt::Key_Backspace), QKeyCombination(Qt::Key_Question),
        QKeyCombination(Qt::Key_F1), QKeyCombination(Qt::AltModifier, Qt::Key_Left),
        QKeyCombination(Qt::AltModifier, Qt::Key_Right)}) {
    auto* action = new QAction(this);
    action->setShortcut(QKeySequence(key));
    action->setShortcutContext(Qt::WindowShortcut);
    connect(action, &QAction::triggered, this, [this, key] { timeline_->handleKey(key.key(), key.keyboardModifiers()); });
    addAction(action);
  }
  auto* find = new QAction(this);
  find->setShortcut(QKeySequence::Find);
  connect(find, &QAction::triggered, this, [this] {
    search_->setFocus();
    search_->selectAll();
  });
  addAction(find);
  auto* next = new QAction(this);
  next->setShortcut(QKeySequence(Qt::Key_F3));
  connect(next, &QAction::triggered, this, [this] { findNext(search_->text()); });
  addAction(next);
  auto* previous = new QAction(this);
  previous->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F3));
  connect(previous, &QAction::triggered, this, [this] { findPrevious(search_->text()); });
  addAction(previous);
}

void MainWindow::updateHistoryActions() {
  back_action_->setEnabled(timeline_->canGoBack());
  forward_action_->setEnabled(timeline_->canGoForward());
}

void MainWindow::showHelp() {
  if (!help_) {
    help_ = new QDialog(this);
    help_->setWindowTitle(tr("collscope view: keys and colours"));
    auto* layout = new QVBoxLayout(help_);
    auto* text = new QTextBrowser(help_);
    text->setHtml(QString::fromUtf8(kHelpHtml));
    layout->addWidget(text);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, help_);
    connect(buttons, &QDialogButtonBox::rejected, help_, &QDialog::hide);
    layout->addWidget(buttons);
    help_->resize(620, 560);
  }
  help_->show();
  help_->raise();
}

bool MainWindow::loading() const { return loader_->running(); }

void MainWindow::openDialog() {
  // One dialog for both: a run directory (pick any of its rank files, or the directory) or a study file.
  QFileDialog dialog(this, tr("Open a run directory or a study file"));
  dialog.setFileMode(QFileDialog::AnyFile);
  dialog.setNameFilters({tr("Runs and studies (*.sqlite)"), tr("All files (*)")});
  dialog.setOption(QFileDialog::DontUseNativeDialog, false);
  dialog.setLabelText(QFileDialog::Accept, tr("Open"));
  if (dialog.exec() != QDialog::Accepted || dialog.selectedFiles().isEmpty()) return;
  QString path = dialog.selectedFiles().front();
  // A rank file opens its run.
  if (QFileInfo(path).isFile() && QFileInfo(path).fileName().startsWith("rank-") && !is_study_file(path.toStdString()))
    path = QFileInfo(path).absolutePath();
  openRun(path);
}

void MainWindow::openRun(const QString& path) {
  if (is_study_file(path.toStdString())) {
    try {
      study_->setStudy(load_study(path.toStdString()));
      study_dock_->show();
      study_dock_->raise();
      showMessage({}, false);
      addRecent(path);
    } catch (const Error& e) {
      const QString message = QString::fromStdString(e.what());
      showMessage(message, true);
      QMetaObject::invokeMethod(this, [this, message] { emit loadFailed(message); }, Qt::QueuedConnection);
    }
    // Queued, as after a background load: callers connect after openRun() returns.
    QMetaObject::invokeMethod(this, [this] { emit loadFinished(); }, Qt::QueuedConnection);
    return;
  }
  loading_dir_ = path;
  showMessage({}, false);
  progress_->setValue(0);
  progress_->show();
  statusBar()->showMessage(tr("Loading %1…").arg(path), 2000);
  addRecent(path);
  loader_->start(path);
}

void MainWindow::showRun(std::shared_ptr<const RunData> run, bool keep_range) {
  const auto selected = timeline_->selectedCollective();
  const auto ranks = timeline_->highlightedRanks();
  pending_instance_ = kNoInstance;
  run_ = std::move(run);
  timeline_->setRun(run_, keep_range);
  details_->setRun(run_);
  if (keep_range && selected != kNoInstance) {
    timeline_->selectCollective(selected);
    details_->showCollective(selected);
    timeline_->setHighlightedRanks(ranks);
  }
  if (!keep_range) {
    query_.reset();
    results_ = {};
    current_hit_ = -1;
    search_status_->clear();
  }
  findings_->setRun(run_.get());
  statistics_->setRun(run_);
  rank_views_->setRun(run_);
  communication_->setRun(run_);
  step_box_->setRange(0, std::max<int>(0, static_cast<int>(run_->steps.size()) - 1));
  showStepInView();
  setWindowTitle(QString::fromStdString(fmt::format("collscope view — {}", run_->dir)));
  if (!run_->warnings.empty()) {
    std::string text;
    for (const auto& w : run_->warnings) text += (text.empty() ? "" : "\n") + w;
    showMessage(QString::fromStdString(text), false);
  } else {
    showMessage({}, false);
  }
  if (!search_->hasFocus()) timeline_->setFocus(Qt::OtherFocusReason);
  window_loader_->setRun(run_->windowed);
  emit runLoaded();
  requestVisibleWindow();
}

bool MainWindow::loadingWindow() const { return window_loader_->busy(); }

void MainWindow::requestVisibleWindow() {
  if (!run_ || !run_->windowed) return;
  const auto& windowed = *run_->windowed;
  const auto [first, last] = timeline_->visibleRanks();
  if (first == last) return;
  const RunWindow visible{.rank_begin = first,
                          .rank_end = last,
                          .pinned_ranks = timeline_->pinnedRanks(),
                          .start_ns = std::max<std::int64_t>(0, timeline_->visibleStart()),
                          .end_ns = std::min(timeline_->visibleEnd(), windowed.duration_ns())};
  // Margins for the next scroll: the visible ranks and range again on each side, less while the budget says no.
  auto around = [&](double margin) {
    const int ranks = static_cast<int>(std::ceil((last - first) * margin));
    const auto pad = static_cast<std::int64_t>(double(visible.end_ns - visible.start_ns) * margin);
    return RunWindow{.rank_begin = std::max(0, first - ranks),
                     .rank_end = std::min(windowed.rank_count(), last + ranks),
                     .pinned_ranks = visible.pinned_ranks,
                     .start_ns = std::max<std::int64_t>(0, visible.start_ns - pad),
                     .end_ns = std::min(windowed.duration_ns(), visible.end_ns + pad)};
  };
  const auto budget = windowed_run_policy().window_events;
  // A window that holds the view is kept unless the view shrank well inside it (zoomed in): then the memory goes
  // back to what the view needs.
  const auto kept = [&](const RunWindow& w) {
    return w.contains(visible) && windowed.estimated_events(w) <= std::max(budget / 4, 4 * windowed.estimated_events(around(1.0)));
  };
  if (kept(run_->window) || (window_loader_->busy() && kept(window_loader_->requested()))) return;
  if (const auto in_view = windowed.estimated_events(visible); in_view > budget) {
    timeline_->setUnloadedNote(tr("zoom in to load events (%1 in view)").arg(in_view));
    return;
  }
  RunWindow wanted = visible;
  for (const double margin : {1.0, 0.5, 0.25, 0.1})
    if (const auto w = around(margin); windowed.estimated_events(w) <= budget) {
      wanted = w;
      break;
    }
  timeline_->setUnloadedNote(tr("loading events…"));
  window_loader_->request(wanted);
}

void MainWindow::showWindow(std::shared_ptr<const RunData> window) {
  if (!run_ || !run_->windowed || window->windowed != run_->windowed) return;  // another run was opened since
  const bool other_window = run_ != window;
  auto shown = std::move(run_);
  run_ = std::move(window);
  if (other_window) {
    timeline_->setRun(run_, true);
    details_->setRun(run_);
    window_loader_->retire(std::move(shown));  // the views hold it no longer
    if (query_) {  // hits are collective ids: the new window's own
      results_ = find_all(*query_, run_->model());
      current_hit_ = -1;
    }
    if (timeline_->selectedCollective() != kNoInstance) details_->showCollective(timeline_->selectedCollective());
  }
  if (pending_instance_ != kNoInstance)
    for (const auto id : run_->model().instance_members(pending_instance_))
      if (run_->model().rank_of_collective(id) == pending_rank_) {
        pending_instance_ = kNoInstance;
        timeline_->selectCollective(id);
        details_->showCollective(id);
        break;
      }
  if (!other_window) return;
  emit windowLoaded();
  requestVisibleWindow();  // the view may have moved on while it loaded
}

QString MainWindow::message() const { return banner_->isHidden() ? QString() : banner_->text(); }

void MainWindow::showMessage(const QString& text, bool error) {
  banner_->setText(text);
  banner_->setVisible(!text.isEmpty());
  banner_->setStyleSheet(error ? "QLabel { background: #f8d7da; color: #721c24; padding: 6px; }"
                               : "QLabel { background: #fff3cd; color: #5c4400; padding: 6px; }");
}

void MainWindow::addRecent(const QString& path) {
  QSettings settings("collscope", "viewer");
  QStringList recent = settings.value("recent").toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue("recent", recent);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  recent_menu_->clear();
  const QStringList recent = QSettings("collscope", "viewer").value("recent").toStringList();
  for (const auto& path : recent) recent_menu_->addAction(path, this, [this, path] { openRun(path); });
  recent_menu_->setEnabled(!recent.isEmpty());
}

bool MainWindow::findNext(const QString& query) { return find(query, +1); }
bool MainWindow::findPrevious(const QString& query) { return find(query, -1); }

QString MainWindow::searchStatus() const { return search_status_->text(); }

bool MainWindow::find(const QString& text, int direction) {
  if (!run_ || text.trimmed().isEmpty()) return false;
  if (!query_ || query_->text != text.trimmed()) {
    query_ = std::make_shared<const SearchQuery>(parse_search(text, run_->model()));
    results_ = find_all(*query_, run_->model());
    current_hit_ = -1;
    timeline_->setSearch(query_);
  }
  if (results_.hits.empty()) {
    search_status_->setText(tr("no match"));
    statusBar()->showMessage(tr("No match for \"%1\"").arg(text.trimmed()), 4000);
    return false;
  }
  const auto n = static_cast<std::ptrdiff_t>(results_.hits.size());
  if (current_hit_ < 0) {
    // From the selected collective when this search finds collectives, else from the start of the view: the first
    // match after it (or the last before it, going back).
    const auto sel = query_->by_name() ? kNoInstance : timeline_->selectedCollective();
    const double from = sel != kNoInstance ? double(run_->model().collective(sel).start_ns) : timeline_->visibleStart() - 1.0;
    auto it = std::upper_bound(results_.hits.begin(), results_.hits.end(), from,
                               [](double t, const SearchHit& h) { return t < double(h.start_ns); });
    if (sel != kNoInstance && direction > 0) {
      // The selected call itself does not count as the next match.
      it = std::find_if(results_.hits.begin(), results_.hits.end(),
                        [&](const SearchHit& h) { return double(h.start_ns) >= from && !(h.kind == LaneKind::Collectives && h.id == sel); });
    }
    current_hit_ = direction > 0 ? (it - results_.hits.begin()) % n : ((it - results_.hits.begin()) - 1 + n) % n;
  } else {
    current_hit_ = (current_hit_ + direction + n) % n;
  }
  showHit(results_.hits[static_cast<std::size_t>(current_hit_)]);
  search_status_->setText(results_.count > results_.hits.size()
                              ? tr("%1 of %2 shown (%3 in all)").arg(current_hit_ + 1).arg(n).arg(results_.count)
                              : tr("%1 of %2 matches").arg(current_hit_ + 1).arg(n));
  return true;
}

void MainWindow::showHit(const SearchHit& hit) {
  if (hit.kind == LaneKind::Collectives) {
    timeline_->selectCollective(hit.id);
    timeline_->zoomToSelection();
    return;
  }
  const double w = std::max<double>(double(hit.end_ns - hit.start_ns), 1000);
  timeline_->jumpTo(double(hit.start_ns) + w / 2 - 2 * w, double(hit.start_ns) + w / 2 + 2 * w);
  const auto span = run_->model().span(hit.kind, hit.id);
  statusBar()->showMessage(QString::fromStdString(fmt::format("{} ({})", run_->model().names()[span.name],
                                                              format_duration(double(hit.end_ns - hit.start_ns)))), 4000);
}

void MainWindow::showStepInView() {
  if (!run_ || run_->steps.empty() || step_box_->hasFocus()) return;  // not while the user types a step
  const auto& steps = run_->steps;
  const std::int64_t start = timeline_->visibleStart(), centre = start + (timeline_->visibleEnd() - start) / 2;
  const auto after = std::upper_bound(steps.begin(), steps.end(), centre,
                                      [](std::int64_t t, const Step& s) { return t < s.start_ns; });
  step_box_->setValue(static_cast<int>(std::max<std::ptrdiff_t>(0, after - steps.begin() - 1)));
}

void MainWindow::jumpToStep(int step) {
  if (!run_ || step < 0 || step >= static_cast<int>(run_->steps.size())) return;
  const auto& s = run_->steps[step];
  const double pad = std::max<double>(s.end_ns - s.start_ns, 1000) * 0.02;
  timeline_->jumpTo(s.start_ns - pad, s.end_ns + pad);
}

void MainWindow::activateFinding(const Finding& finding) {
  if (!run_) return;
  std::vector<int> ranks;
  for (int world : finding.world_ranks)
    if (int r = run_->model().rank_index_of_world(world); r >= 0) ranks.push_back(r);
  timeline_->jumpTo(static_cast<double>(finding.start_ns), static_cast<double>(finding.end_ns));
  // Its evidence selected: outlined on every rank with its wait arrows, and in the Details panel.
  if (finding.evidence != kNoInstance) timeline_->selectCollective(finding.evidence);
  timeline_->setHighlightedRanks(ranks);
  statusBar()->showMessage(QString::fromStdString(finding.suggestion), 8000);
}

}  // namespace collscope::gui
