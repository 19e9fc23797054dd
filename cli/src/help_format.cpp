// Help and usage errors for people: usage lines without CLI11's "[SUBCOMMAND]" and "{false}" decorations, each
// option's default in its description, and for a mistyped command or option the nearest valid one.
#include <collscope/run/format.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <cctype>
#include <cstdlib>

#include "commands.hpp"

namespace collscope::cli {
namespace {

class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() {
    column_width(28);
    label("Positionals", "Arguments");
  }

  // "Usage: collscope analyze [OPTIONS] RUN_DIR"; a positional named COMMAND is the job, after "--".
  std::string make_usage(const CLI::App* app, std::string name) const override {
    std::string out = "Usage: " + name;
    if (!app->get_options([](const CLI::Option* o) { return o->nonpositional(); }).empty()) out += " [OPTIONS]";
    for (const CLI::Option* p : app->get_options([](const CLI::Option* o) { return o->get_positional(); })) {
      std::string word = p->get_name(true, false);
      if (word == "COMMAND") word = "-- COMMAND...";
      else if (p->get_expected_max() >= CLI::detail::expected_max_vector_size) word += "...";
      out += " " + (p->get_required() ? word : "[" + word + "]");
    }
    if (!app->get_parent() && !app->get_subcommands({}).empty()) out += " COMMAND [ARGS]";
    return out + "\n";
  }

  // "-o, --output" rather than "-o,--output"; flags without "{false}".
  std::string make_option_name(const CLI::Option* opt, bool positional) const override {
    if (positional) return opt->get_name(true, false);
    std::vector<std::string> names;
    for (const auto& s : opt->get_snames()) names.push_back("-" + s);
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    return fmt::format("{}", fmt::join(names, ", "));
  }

  // Only the value's kind ("FILE", "INT"); the default goes into the description.
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (opt->get_type_size() == 0 || opt->get_positional()) return "";
    std::string type = opt->get_type_name();
    type = type.substr(0, type.find(':'));  // "N:NONNEGATIVE": the check is in the description
    std::string out = " " + type;
    if (opt->get_expected_max() >= CLI::detail::expected_max_vector_size) out += " ...";
    return out;
  }

  // Descriptions wrap within the 100 columns (CLI11 indents the lines after a newline to the column).
  std::string make_option_desc(const CLI::Option* opt) const override {
    std::string desc = opt->get_description();
    if (opt->get_type_size() != 0 && !opt->get_default_str().empty() && desc.find("default") == std::string::npos)
      desc += " (default: " + opt->get_default_str() + ")";
    return run::wrap_text(desc, kWidth - get_column_width(), 0);
  }

  std::string make_subcommand(const CLI::App* sub) const override {
    std::string name = "  " + sub->get_display_name(true);
    name.resize(std::max(name.size() + 1, get_column_width()), ' ');
    const std::string pad(get_column_width(), ' ');
    std::string desc = run::wrap_text(sub->get_description(), kWidth - get_column_width(), 0);
    for (std::size_t at = desc.find('\n'); at != std::string::npos; at = desc.find('\n', at + 1)) desc.insert(at + 1, pad);
    return name + desc + "\n";
  }

  std::string make_footer(const CLI::App* app) const override {
    const std::string footer = app->get_footer();
    return footer.empty() ? footer : footer + (footer.ends_with('\n') ? "" : "\n");
  }

 private:
  static constexpr std::size_t kWidth = 100;  // columns of a terminal line
};

// Edit distance with adjacent transpositions ("analyse" → "analyze" is 1, "comapre" → "compare" is 1).
std::size_t distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// Whether the letters of `word` appear in `c` in order ("fmt" in "format").
bool subsequence(const std::string& word, const std::string& c) {
  std::size_t j = 0;
  for (char ch : c)
    if (j < word.size() && ch == word[j]) ++j;
  return j == word.size();
}

// The candidate nearest to `word` when it is near enough to be a typo or an abbreviation. Leading dashes are
// compared too, but do not count towards the length.
std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
  auto bare = [](const std::string& s) { return s.substr(s.find_first_not_of('-') == std::string::npos ? 0 : s.find_first_not_of('-')); };
  const std::string w = bare(word);
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, w.size() / 3) + 1;
  for (const auto& c : candidates) {
    const std::string b = bare(c);
    std::size_t d = distance(w, b);
    if (w.size() >= 3 && (b.starts_with(w) || subsequence(w, b))) d = std::min<std::size_t>(d, 2);
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& l : o->get_lnames()) out.push_back("--" + l);
    for (const auto& s : o->get_snames()) out.push_back("-" + s);
  }
  return out;
}

std::string full_name(const CLI::App& app) {
  std::string name = app.get_name();
  for (const CLI::App* p = app.get_parent(); p; p = p->get_parent())
    name = (p->get_parent() ? p->get_name() : std::string("collscope")) + " " + name;
  return app.get_parent() ? name : "collscope";
}

}  // namespace

std::shared_ptr<CLI::FormatterBase> help_formatter() { return std::make_shared<HelpFormatter>(); }

std::string usage_error(CLI::App& root, const CLI::ParseError& error, int argc, char** argv) {
  // The subcommand the error is about: the deepest one named on the command line (before "--").
  CLI::App* app = &root;
  std::vector<std::string> after;  // the arguments that follow it
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    CLI::App* sub = nullptr;
    if (!a.starts_with("-"))
      for (CLI::App* s : app->get_subcommands({}))
        if (s->get_name() == a) sub = s;
    if (sub) {
      app = sub;
      after.clear();
    } else {
      after.push_back(a);
    }
  }
  const std::string who = full_name(*app);
  const std::string help = fmt::format("see '{} --help'", who);
  // An option this command does not have.
  const auto options = option_names(*app);
  auto is_number = [](const std::string& a) {
    char* end = nullptr;
    std::strtod(a.c_str(), &end);
    return end && *end == '\0' && end != a.c_str();
  };
  for (const auto& a : after) {
    if (!a.starts_with("-") || a == "-" || is_number(a)) continue;  // "-3" is a value
    const std::string name = a.substr(0, a.find('='));
    if (std::find(options.begin(), options.end(), name) != options.end()) continue;
    const std::string near = nearest(name, options);
    return fmt::format("{}: {} is not an option of '{}'{} ({})", who, name, who,
                       near.empty() ? "" : fmt::format("; did you mean {}?", near), help);
  }
  // A command that does not exist.
  if (app == &root) {
    std::vector<std::string> commands;
    for (const CLI::App* s : root.get_subcommands({})) commands.push_back(s->get_name());
    for (const auto& a : after) {
      if (a.starts_with("-")) continue;
      const std::string near = nearest(a, commands);
      return fmt::format("collscope: '{}' is not a collscope command{} ({})", a,
                         near.empty() ? "" : fmt::format("; did you mean '{}'?", near), help);
    }
    if (after.empty()) return fmt::format("collscope: a command is needed, e.g. 'collscope demo' ({})", help);
  }
  std::string what = error.what();
  // CLI11's ranges print a lower bound of 0 up to DBL_MAX in full: say "must not be negative" instead.
  static const std::regex huge_range(R"(Value (\S+) not in range 0(\.0+)? to [0-9]{30,}(\.0+)?)");
  what = std::regex_replace(what, huge_range, "$1 must not be negative");
  // "The following argument..." reads as "the following argument..." after the colon; a name such as RUN_DIR or
  // --output keeps its case.
  const bool capitalised_word = what.size() > 1 && std::isupper(static_cast<unsigned char>(what[0])) &&
                                std::islower(static_cast<unsigned char>(what[1]));
  if (capitalised_word) what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
  return fmt::format("{}: {} ({})", who, what, help);
}

}  // namespace collscope::cli
