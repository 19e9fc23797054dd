#include <collscope/gui/study_view.hpp>

#include <collscope/gui/run_data.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/sqlite.hpp>

#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QPainterPath>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <regex>

namespace collscope::gui {

std::vector<std::optional<double>> StudyData::best_so_far() const {
  std::vector<std::optional<double>> out;
  std::optional<double> best;
  for (const auto& s : scores) {
    if (s && (!best || (maximize ? *s > *best : *s < *best))) best = s;
    out.push_back(best);
  }
  return out;
}

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

StudyData load_study(const std::string& path) {
  const auto db = open_study(path);
  if (!db || !db->has_table("trials"))
    throw InputError(fmt::format("{}: not a collscope study file (no trials table)", path));
  StudyData study;
  study.path = path;
  if (db->has_table("meta")) {
    auto q = db->prepare("SELECT value FROM meta WHERE key='space'");
    if (q.step()) {
      static const std::regex minimize(R"(direction\s*:\s*["']?minimi[sz]e)");
      study.maximize = !std::regex_search(q.text(0), minimize);
    }
  }
  auto q = db->prepare("SELECT * FROM trials ORDER BY id");
  int score_col = -1;
  std::vector<int> shown;
  for (int c = 0; c < q.column_count(); ++c) {
    const std::string name = q.column_name(c);
    if (name == "score") score_col = c;
    if (name == "unit" || name == "pgid") continue;  // internal to the optimiser
    shown.push_back(c);
    study.columns.push_back(name);
  }
  while (q.step()) {
    std::vector<std::string> row;
    for (int c : shown) row.push_back(q.text(c));
    study.rows.push_back(std::move(row));
    if (score_col >= 0 && !q.is_null(score_col)) study.scores.push_back(q.real(score_col));
    else study.scores.push_back(std::nullopt);
  }
  return study;
}

ConvergencePlot::ConvergencePlot(QWidget* parent) : QWidget(parent) { setMinimumHeight(160); }

void ConvergencePlot::setStudy(const StudyData* study) {
  study_ = study;
  update();
}

void ConvergencePlot::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  const QRectF area(50, 10, width() - 60, height() - 35);
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
  if (hi - lo < 1e-12) lo -= 1, hi += 1;
  const double n = static_cast<double>(study_->scores.size());
  auto x = [&](std::size_t i) { return area.left() + (i + 0.5) / n * area.width(); };
  auto y = [&](double v) { return area.bottom() - (v - lo) / (hi - lo) * area.height(); };
  p.drawText(QRectF(0, area.top() - 6, 48, 14), Qt::AlignRight, QString::number(hi, 'g', 4));
  p.drawText(QRectF(0, area.bottom() - 8, 48, 14), Qt::AlignRight, QString::number(lo, 'g', 4));
  p.drawText(QRectF(area.left(), area.bottom() + 4, area.width(), 16), Qt::AlignCenter,
             tr("trial (%1 score; line: best so far)").arg(study_->maximize ? tr("higher is better") : tr("lower is better")));
  p.setRenderHint(QPainter::Antialiasing);
  QPainterPath best_line;
  const auto best = study_->best_so_far();
  bool started = false;
  for (std::size_t i = 0; i < best.size(); ++i) {
    if (!best[i]) continue;
    if (!started) best_line.moveTo(x(i), y(*best[i]));
    else best_line.lineTo(x(i), y(*best[i]));
    started = true;
  }
  p.setPen(QPen(QColor(31, 119, 180), 2));
  p.drawPath(best_line);
  for (std::size_t i = 0; i < study_->scores.size(); ++i) {
    if (study_->scores[i]) {
      p.setPen(Qt::NoPen);
      p.setBrush(QColor(255, 127, 14));
      p.drawEllipse(QPointF(x(i), y(*study_->scores[i])), 3.5, 3.5);
    } else {  // failed trial: a red cross on the axis
      p.setPen(QPen(QColor(200, 30, 30), 1.5));
      p.drawLine(QPointF(x(i) - 3, area.bottom() - 3), QPointF(x(i) + 3, area.bottom() + 3));
      p.drawLine(QPointF(x(i) - 3, area.bottom() + 3), QPointF(x(i) + 3, area.bottom() - 3));
    }
  }
}

StudyView::StudyView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  title_ = new QLabel(tr("No study loaded: File ▸ Open a STUDY.sqlite of `collscope tune`"), this);
  table_ = new QTableWidget(this);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  plot_ = new ConvergencePlot(this);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(plot_);
  split->addWidget(table_);
  layout->addWidget(title_);
  layout->addWidget(split, 1);
}

void StudyView::setStudy(StudyData study) {
  study_ = std::move(study);
  const auto best = study_.best_so_far();
  title_->setText(QString::fromStdString(fmt::format("{}: {} trials, best score {}", study_.path, study_.rows.size(),
                                                     !best.empty() && best.back() ? fmt::format("{:.4g}", *best.back()) : "none")));
  table_->clear();
  table_->setColumnCount(static_cast<int>(study_.columns.size()));
  table_->setRowCount(static_cast<int>(study_.rows.size()));
  QStringList headers;
  for (const auto& c : study_.columns) headers << QString::fromStdString(c);
  table_->setHorizontalHeaderLabels(headers);
  for (std::size_t r = 0; r < study_.rows.size(); ++r)
    for (std::size_t c = 0; c < study_.rows[r].size(); ++c)
      table_->setItem(static_cast<int>(r), static_cast<int>(c), new QTableWidgetItem(QString::fromStdString(study_.rows[r][c])));
  table_->resizeColumnsToContents();
  plot_->setStudy(&study_);
}

}  // namespace collscope::gui
