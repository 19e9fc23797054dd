#include <collscope/gui/study_view.hpp>

#include <collscope/run/format.hpp>
#include <collscope/run/palette.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/sqlite.hpp>
#ifdef COLLSCOPE_GUI_HAVE_AUTOTUNER
#include <collscope/analyzer/svg_chart.hpp>
#include <collscope/autotuner/tuner.hpp>
#endif

#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QPainterPath>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

namespace collscope::gui {

namespace {

// The study file read-only through the store's SQLite wrapper; nullopt when it is no SQLite file at all.
std::optional<store::sqlite::Database> open_study(const std::string& path) {
  try {
    return store::sqlite::Database(path, store::sqlite::OpenMode::ReadOnly);
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace

bool is_study_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  try {
    const auto db = open_study(path);
    return db && db->has_table("trials") && !db->has_table("collectives");
  } catch (const Error&) {
    return false;  // not an SQLite database
  }
}

std::string format_score(double value, const std::string& unit) {
  // The reports' number format (no exponent, the digits a thousandth of the value needs).
#ifdef COLLSCOPE_GUI_HAVE_AUTOTUNER
  const std::string number = analyzer::chart::plain_number(value, std::fabs(value) / 1000);
#else
  const std::string number = fmt::format("{:.4g}", value);
#endif
  return unit.empty() ? number : fmt::format("{} {}", number, unit);
}

StudyData load_study(const std::string& path) {
#ifndef COLLSCOPE_GUI_HAVE_AUTOTUNER
  throw InputError(fmt::format("{}: this viewer was built without the autotuner and cannot read study files", path));
#else
  namespace at = autotuner;
  const at::Study study = at::Study::open(path);  // InputError naming the file when it is no study
  const at::SearchSpace space = at::stored_space(study);
  const auto trials = at::checked_trials(study, space);
  const auto& objective = space.objective();
  StudyData out;
  out.path = path;
  out.maximize = objective.maximize;
  out.unit = objective.unit;
  out.columns = {"trial", "kind", "status"};
  for (const auto& k : space.knobs()) out.columns.push_back(k.env ? fmt::format("{} ({})", k.name, *k.env) : k.name);
  out.columns.push_back(objective.unit.empty() ? "score" : fmt::format("score ({})", objective.unit));
  out.columns.insert(out.columns.end(), {"wall time", "why"});
  for (const auto& t : trials) {
    std::vector<std::string> row{std::to_string(t.id), t.kind, std::string(at::trial_status_name(t.status))};
    for (std::size_t i = 0; i < t.values.size() && i < space.knobs().size(); ++i) row.push_back(space.knobs()[i].shown(t.values[i]));
    row.push_back(t.score ? format_score(*t.score, {}) : "-");
    row.push_back(t.wall_s > 0 ? run::format_duration(t.wall_s * 1e9) : "-");
    row.push_back(t.reason);
    out.rows.push_back(std::move(row));
    // A stopped trial keeps its partial score for the optimiser; the plot shows what the tuner ranks.
    out.scores.push_back(at::keeps_score(t.status) ? t.score : std::nullopt);
    std::error_code ec;
    const auto trace = std::filesystem::path(t.dir) / "trace";
    out.trace_dirs.push_back(!t.dir.empty() && std::filesystem::is_directory(trace, ec) ? trace.string() : std::string());
  }
  out.best_so_far = at::best_mean_after_each(space, trials);
  if (const auto best = at::best_settings(space, trials)) {
    out.best_mean = best->mean_score;
    out.best_text = fmt::format("{} (mean of {} run{}, trial{} {})", space.describe(best->values), best->runs, best->runs == 1 ? "" : "s",
                                best->trial_ids.size() == 1 ? "" : "s", fmt::join(best->trial_ids, ","));
  }
  return out;
#endif
}

ConvergencePlot::ConvergencePlot(QWidget* parent) : QWidget(parent) { setMinimumHeight(160); }

void ConvergencePlot::setStudy(const StudyData* study) {
  study_ = study;
  update();
}

namespace {

// About `target` tick values over [lo, hi] on a 1-2-5 step (the reports' ticks when the analyzer is built).
std::vector<double> ticks(double lo, double hi, int target, bool integer) {
#ifdef COLLSCOPE_GUI_HAVE_AUTOTUNER
  return analyzer::chart::linear_ticks(lo, hi, target, integer);
#else
  (void)integer;
  return {lo, hi};
#endif
}

}  // namespace

void ConvergencePlot::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  const QFontMetrics fm = p.fontMetrics();
  const int left = fm.horizontalAdvance("000000.0") + 14;
  const QRectF area(left, 10, width() - left - 12, height() - 2 * fm.height() - 22);
  p.setPen(QColor(120, 120, 120));
  p.drawRect(area);
  if (!study_ || study_->scores.empty()) {
    p.drawText(rect(), Qt::AlignCenter, tr("No trials"));
    return;
  }
  double lo = 1e300, hi = -1e300;
  for (const auto& s : study_->scores)
    if (s) lo = std::min(lo, *s), hi = std::max(hi, *s);
  if (lo > hi) {
    p.drawText(rect(), Qt::AlignCenter, tr("No trial has a score yet"));
    return;
  }
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) lo -= std::max(1.0, std::fabs(lo) * 0.05), hi += std::max(1.0, std::fabs(hi) * 0.05);
  const double pad = (hi - lo) * 0.06;
  lo -= pad, hi += pad;
  const double n = static_cast<double>(study_->scores.size());
  auto x = [&](double i) { return area.left() + (i + 0.5) / n * area.width(); };  // i: 0-based trial index
  auto y = [&](double v) { return area.bottom() - (v - lo) / (hi - lo) * area.height(); };
  // Ticks: the score on the left with its precision, the trial number (whole numbers) below.
  const auto y_ticks = ticks(lo, hi, std::max(2, int(area.height() / (2.5 * fm.height()))), false);
  const double y_step = y_ticks.size() > 1 ? y_ticks[1] - y_ticks[0] : std::fabs(hi);
  for (const double v : y_ticks) {
    if (v < lo || v > hi) continue;
    p.setPen(QColor(235, 235, 235));
    p.drawLine(QPointF(area.left() + 1, y(v)), QPointF(area.right() - 1, y(v)));
    p.setPen(QColor(80, 80, 80));
#ifdef COLLSCOPE_GUI_HAVE_AUTOTUNER
    const QString text = QString::fromStdString(analyzer::chart::plain_number(v, y_step));
#else
    const QString text = QString::number(v, 'g', 4);
#endif
    p.drawText(QRectF(0, y(v) - fm.height() / 2.0, left - 6, fm.height()), Qt::AlignRight | Qt::AlignVCenter, text);
  }
  for (const double t : ticks(1, n, std::max(2, int(area.width() / (6.0 * fm.horizontalAdvance('0')))), true)) {
    if (t < 1 || t > n) continue;
    p.setPen(QColor(80, 80, 80));
    p.drawLine(QPointF(x(t - 1), area.bottom()), QPointF(x(t - 1), area.bottom() + 4));
    p.drawText(QRectF(x(t - 1) - 30, area.bottom() + 4, 60, fm.height()), Qt::AlignHCenter | Qt::AlignTop, QString::number(t));
  }
  const QString score = study_->unit.empty() ? tr("score") : tr("score (%1)").arg(QString::fromStdString(study_->unit));
  p.drawText(QRectF(area.left(), area.bottom() + 4 + fm.height(), area.width(), fm.height() + 4), Qt::AlignCenter,
             tr("trial; dots: %1, %2; line: best setting so far (mean); red cross: no score")
                 .arg(score, study_->maximize ? tr("higher is better") : tr("lower is better")));
  p.setRenderHint(QPainter::Antialiasing);
  QPainterPath best_line;
  const auto& best = study_->best_so_far;
  bool started = false;
  for (std::size_t i = 0; i < best.size(); ++i) {
    if (!best[i]) continue;
    if (!started) best_line.moveTo(x(double(i)), y(*best[i]));
    else best_line.lineTo(x(double(i)), y(*best[i]));
    started = true;
  }
  p.setPen(QPen(QColor(QRgb(run::palette::kBest)), 2));
  p.setBrush(Qt::NoBrush);
  p.drawPath(best_line);
  for (std::size_t i = 0; i < study_->scores.size(); ++i) {
    if (study_->scores[i]) {
      p.setPen(Qt::NoPen);
      p.setBrush(QColor(QRgb(run::palette::kTrial)));
      p.drawEllipse(QPointF(x(double(i)), y(*study_->scores[i])), 3.5, 3.5);
    } else {  // no score (failed, timed out, interrupted): a red cross on the axis
      p.setPen(QPen(QColor(QRgb(run::palette::kCritical)), 1.5));
      const double cx = x(double(i)), cy = area.bottom();
      p.drawLine(QPointF(cx - 3, cy - 3), QPointF(cx + 3, cy + 3));
      p.drawLine(QPointF(cx - 3, cy + 3), QPointF(cx + 3, cy - 3));
    }
  }
}

StudyView::StudyView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  title_ = new QLabel(tr("No study loaded: File ▸ Open a STUDY.sqlite of `collscope tune`"), this);
  title_->setWordWrap(true);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  table_ = new QTableWidget(this);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setToolTip(tr("Double-click a trial (or press Enter) to open its trace"));
  auto activate = [this](int row) {
    if (row >= 0 && row < static_cast<int>(study_.trace_dirs.size()) && !study_.trace_dirs[row].empty())
      emit traceRequested(QString::fromStdString(study_.trace_dirs[row]));
  };
  connect(table_, &QTableWidget::cellActivated, this, [activate](int row, int) { activate(row); });
  connect(table_, &QTableWidget::cellDoubleClicked, this, [activate](int row, int) { activate(row); });
  plot_ = new ConvergencePlot(this);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(plot_);
  split->addWidget(table_);
  layout->addWidget(title_);
  layout->addWidget(split, 1);
}

void StudyView::setStudy(StudyData study) {
  study_ = std::move(study);
  title_->setText(QString::fromStdString(
      study_.best_mean ? fmt::format("{}: {} trials. Best: {}: {}", study_.path, study_.rows.size(),
                                     format_score(*study_.best_mean, study_.unit), study_.best_text)
                       : fmt::format("{}: {} trials, none with a score", study_.path, study_.rows.size())));
  table_->clear();
  table_->setColumnCount(static_cast<int>(study_.columns.size()));
  table_->setRowCount(static_cast<int>(study_.rows.size()));
  QStringList headers;
  for (const auto& c : study_.columns) headers << QString::fromStdString(c);
  table_->setHorizontalHeaderLabels(headers);
  for (std::size_t r = 0; r < study_.rows.size(); ++r)
    for (std::size_t c = 0; c < study_.rows[r].size(); ++c) {
      auto* item = new QTableWidgetItem(QString::fromStdString(study_.rows[r][c]));
      // Numbers (trial, numeric knobs, score, time) to the right, words (kind, status, categories, why) to the left.
      bool number = false;
      item->text().split(' ').front().toDouble(&number);
      if (number || item->text() == "-") item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      if (!study_.trace_dirs[r].empty()) item->setToolTip(tr("Double-click to open %1").arg(QString::fromStdString(study_.trace_dirs[r])));
      table_->setItem(static_cast<int>(r), static_cast<int>(c), item);
    }
  table_->resizeColumnsToContents();
  plot_->setStudy(&study_);
}

}  // namespace collscope::gui
