#pragma once
// The one chart library of collscope's reports (the analyzer's HTML report and the tuner's study report): plain
// SVG text, no scripts, no dependency. Every chart has a title, axes with ticks whose text says the unit (the
// caller passes run/format.hpp's formatters), a legend, and hover text (<title>) on its marks. Colours come from
// run/palette.hpp, shared with the viewer.
#include <collscope/run/palette.hpp>

#include <cmath>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace collscope::analyzer::chart {

using run::palette::Rgb;

enum class Scale {
  Linear,
  Log2,   // ticks at powers of two: byte sizes
  Log10,  // ticks at powers of ten (and 2, 5 within a decade)
};

struct Axis {
  std::string label{};  // what it shows and its unit, "bus bandwidth (GB/s)"
  Scale scale = Scale::Linear;
  // Tick text; default: a plain number with the ticks' precision (never scientific notation).
  std::function<std::string(double)> format{};
  bool integer = false;    // ticks at whole numbers only (trials, steps)
  bool from_zero = false;  // linear: the range includes 0
  std::optional<double> min{}, max{};  // fixed ends (data outside is drawn at the edge)
};

enum class Mark {
  Line,        // polyline through the points in order
  Points,      // filled dots
  Rings,       // hollow circles (a "best" beside a median)
  LinePoints,  // both
  Band,        // area between low and high (an uncertainty band), translucent
  ErrorBars,   // dot with a vertical bar from low to high
  // A filled bar from the y axis' zero (or its bottom) up to y: across x from low to high when both are given (a
  // histogram's bin), else centred on x, 80 % of the narrowest gap between the series' x values wide (one value
  // per rank). A later series' bars are drawn over an earlier one's ("of it waiting" over the total).
  Bars,
};

struct Point {
  double x = 0, y = 0;
  double low = NAN, high = NAN;  // Band, ErrorBars: y; Bars: x (a bin's edges)
  std::string tip{};             // hover text
};

struct Series {
  std::string name{};  // legend entry; empty: none
  Rgb colour = 0;
  Mark mark = Mark::Line;
  bool dashed = false;
  std::vector<Point> points{};
};

// A horizontal line across the plot: a target or a limit ("link 25 GB/s").
struct Reference {
  double y = 0;
  std::string name{};  // legend entry and the line's label
  Rgb colour = run::palette::kReference;
};

struct XYChart {
  std::string title;
  Axis x, y;
  std::vector<Series> series;
  std::vector<Reference> references;
  int width = 640, height = 320;  // px
};
std::string render(const XYChart& chart);

// A matrix of non-negative values as coloured cells: rows (ranks) × columns (steps). More rows or columns than
// fit are merged (their maximum shown), labelled by their range.
struct HeatMap {
  std::string title;
  std::vector<std::string> row_labels;       // one per row
  Axis x;                                    // label and tick text of the column index
  std::vector<std::vector<double>> cells;    // [row][column], >= 0
  std::string value_label;                   // the colour bar's caption, with its unit
  std::function<std::string(double)> format_value;  // colour-bar ticks and hover text
  std::function<Rgb(double)> ramp = run::palette::lateness_colour;  // fraction of the maximum → colour
  // Hover text of a cell: "rank 1, step 12: 20.1 ms late". Default: row label, column and value.
  std::function<std::string(const std::string& row, const std::string& column, double value)> tip;
  int width = 760;
  std::size_t max_rows = 128, max_columns = 400;
};
std::string render(const HeatMap& map);

// Tick positions over [lo, hi] on a 1-2-5 step, about `target` of them (whole numbers when integer).
std::vector<double> linear_ticks(double lo, double hi, int target, bool integer = false);
// A number with the precision a step of `step` needs, without exponent: 0.25, 1500, 2.5k, 3M.
std::string plain_number(double value, double step);

}  // namespace collscope::analyzer::chart
