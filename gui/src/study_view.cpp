#include <collscope/gui/study_view.hpp>

#include <collscope/gui/run_data.hpp>
#include <collscope/store/error.hpp>

#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QPainterPath>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
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

struct Db {
  sqlite3* db = nullptr;
  explicit Db(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      sqlite3_close(db);
      db = nullptr;
    }
  }
  ~Db() { sqlite3_close(db); }
  bool has_table(const char* name) const {
    sqlite3_stmt* s = nullptr;
    bool found = false;
    if (db && sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", -1, &s, nullptr) == SQLITE_OK) {
      sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
      found = sqlite3_step(s) == SQLITE_ROW;
    }
    sqlite3_finalize(s);
    return found;
  }
};

}  // namespace

bool is_study_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  Db d(path);
  return d.db && d.has_table("trials") && !d.has_table("collectives");
}

StudyData load_study(const std::string& path) {
  Db d(path);
  if (!d.db || !d.has_table("trials")) throw InputError(fmt::format("{}: not a collscope study file (no trials table)", path));
  StudyData study;
  study.path = path;
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(d.db, "SELECT value FROM meta WHERE key='space'", -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
    const std::string space = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    static const std::regex minimize(R"(direction\s*:\s*["']?minimi[sz]e)");
    study.maximize = !std::regex_search(space, minimize);
  }
  sqlite3_finalize(s);
  if (sqlite3_prepare_v2(d.db, "SELECT * FROM trials ORDER BY id", -1, &s, nullptr) != SQLITE_OK)
    throw InputError(fmt::format("{}: cannot read trials: {}", path, sqlite3_errmsg(d.db)));
  int score_col = -1;
  std::vector<int> shown;
  for (int c = 0; c < sqlite3_column_count(s); ++c) {
    const std::string name = sqlite3_column_name(s, c);
    if (name == "score") score_col = c;
    if (name == "unit" || name == "pgid") continue;  // internal to the optimiser
    shown.push_back(c);
    study.columns.push_back(name);
  }
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int c : shown) {
      const auto* v = sqlite3_column_text(s, c);
      row.push_back(v ? reinterpret_cast<const char*>(v) : "");
    }
    study.rows.push_back(std::move(row));
    if (score_col >= 0 && sqlite3_column_type(s, score_col) != SQLITE_NULL) study.scores.push_back(sqlite3_column_double(s, score_col));
    else study.scores.push_back(std::nullopt);
  }
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) throw InputError(fmt::format("{}: cannot read trials: {}", path, sqlite3_errmsg(d.db)));
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
