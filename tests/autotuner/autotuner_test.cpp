// GP / EI against closed-form values, search space parsing, and BO vs random on noisy analytic functions.
#include <collscope/testing/synthetic_run.hpp>
#include <collscope/autotuner/gaussian_process.hpp>
#include <collscope/autotuner/scoring.hpp>
#include <collscope/autotuner/search_space.hpp>
#include <collscope/autotuner/strategy.hpp>
#include <collscope/store/error.hpp>
#include <collscope/store/sqlite.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

using namespace collscope::autotuner;

TEST(ExpectedImprovement, MatchesHandComputedValues) {
  // mu = best: EI = sigma * phi(0) = 0.39894228.
  EXPECT_NEAR(expected_improvement(1.0, 1.0, 1.0), 0.3989422804, 1e-9);
  // z = 1: EI = 1 * Phi(1) + phi(1) = 0.8413447461 + 0.2419707245.
  EXPECT_NEAR(expected_improvement(2.0, 1.0, 1.0), 1.0833154706, 1e-9);
  // z = -1, sigma 2: EI = -2 * Phi(-1) + 2 * phi(-1) = -0.3173105078 + 0.4839414490.
  EXPECT_NEAR(expected_improvement(0.0, 2.0, 2.0), 0.1666309412, 1e-9);
  EXPECT_NEAR(log_expected_improvement(2.0, 1.0, 1.0), std::log(1.0833154706), 1e-9);
  // Tail: the asymptotic form joins the direct one at z = -5 and keeps decreasing, finite.
  const double direct = std::log(expected_improvement(0.0, 1.0, 5.5));
  EXPECT_NEAR(log_expected_improvement(0.0, 1.0, 5.5), direct, 2e-3);
  EXPECT_LT(log_expected_improvement(0.0, 1.0, 40.0), log_expected_improvement(0.0, 1.0, 20.0));
  EXPECT_TRUE(std::isfinite(log_expected_improvement(0.0, 1.0, 40.0)));
}

TEST(Matern52, MatchesFormula) {
  EXPECT_DOUBLE_EQ(matern52(0.0), 1.0);
  // r = 1: (1 + sqrt5 + 5/3) exp(-sqrt5) = 0.5239941088.
  EXPECT_NEAR(matern52(1.0), 0.5239941088, 1e-9);
}

TEST(GaussianProcess, TwoPointPosteriorMatchesClosedForm) {
  GaussianProcess gp({0});
  Eigen::MatrixXd x(2, 1);
  x << 0.0, 1.0;
  Eigen::VectorXd y(2);
  y << 0.0, 1.0;
  gp.condition(x, y, GpHyperparameters{{1.0}, 1.0, 1e-10});
  // Standardised y = ±1/sqrt(2); K = [[1,c],[c,1]], c = m(1). At x = 0.5, k* = (m(.5), m(.5)):
  // mean = 0.5 by symmetry; var = 1 - 2 m(.5)^2 / (1 + c), sd scaled by std(y) = 1/sqrt(2).
  const double c = 0.5239941088, m = (1 + std::sqrt(5.0) * 0.5 + 5.0 * 0.25 / 3) * std::exp(-std::sqrt(5.0) * 0.5);
  double mean = 0, sd = 0;
  gp.predict(Eigen::VectorXd::Constant(1, 0.5), mean, sd);
  EXPECT_NEAR(mean, 0.5, 1e-9);
  EXPECT_NEAR(sd, std::sqrt(0.5) * std::sqrt(1 - 2 * m * m / (1 + c)), 1e-6);
  gp.predict(Eigen::VectorXd::Constant(1, 1.0), mean, sd);
  EXPECT_NEAR(mean, 1.0, 1e-6);
  EXPECT_LT(sd, 1e-3);
  // Log marginal likelihood: -1/2 y'K^-1 y - 1/2 log|K| - log 2pi, with y'K^-1y = (1)/(1-c) for y = ±1/sqrt2.
  const double expected = -0.5 / (1 - c) - 0.5 * std::log(1 - c * c) - std::log(2 * M_PI);
  EXPECT_NEAR(gp.log_likelihood(), expected, 1e-6);
}

TEST(GaussianProcess, FitLearnsNoiseAndRelevance) {
  // y depends on x0 only, with noise sd 0.1: the fit gives x1 a longer length scale and noise near 0.01/var(y).
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> noise(0, 0.1);
  Eigen::MatrixXd x(40, 2);
  Eigen::VectorXd y(40);
  for (int i = 0; i < 40; ++i) {
    x(i, 0) = u(rng);
    x(i, 1) = u(rng);
    y[i] = std::sin(6 * x(i, 0)) + noise(rng);
  }
  GaussianProcess gp({0, 1});
  gp.fit(x, y, 1);
  const auto& h = gp.hyperparameters();
  EXPECT_GT(h.length_scales[1], 3 * h.length_scales[0]);
  const double noise_var = h.noise_variance * gp.y_scale() * gp.y_scale();
  EXPECT_GT(noise_var, 0.002);
  EXPECT_LT(noise_var, 0.03);
}

TEST(SearchSpace, MapsIntegersLogAndCategories) {
  const auto s = SearchSpace::parse(R"(
knobs:
  - {name: bytes, env: B, type: integer, scale: log, min: 1024, max: 1048576}
  - {name: algo, env: NCCL_ALGO, type: categorical, values: [Ring, Tree, CollnetDirect]}
  - {name: on, type: boolean}
)", "t.yaml");
  EXPECT_EQ(s.to_values({0.0, 0.0, 0.0}), (Assignment{"1024", "Ring", "0"}));
  EXPECT_EQ(s.to_values({1.0, 1.0, 1.0}), (Assignment{"1048576", "CollnetDirect", "1"}));
  EXPECT_EQ(s.to_values({0.5, 0.5, 0.4}), (Assignment{"32768", "Tree", "0"}));  // log midpoint of 2^10..2^20
  EXPECT_EQ(s.feature_count(), 1 + 3 + 2);
  // Inside one category's cell the features (what the GP sees) are identical.
  EXPECT_EQ(s.features({0.3, 0.40, 0.1}), s.features({0.3, 0.60, 0.2}));
  EXPECT_EQ(substitute("--x={bytes} {{bytes} {nope}", {{"bytes", "1;$(rm)"}}), "--x=1;$(rm) {bytes} {nope}");
}

TEST(SearchSpace, BadFilesNameTheKeyAndTheProblem) {
  auto message = [](const std::string& yaml) {
    try {
      SearchSpace::parse(yaml, "bad.yaml");
    } catch (const collscope::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("knobs:\n  - {name: a, min: 1, max: 2}\n  - {name: b, min: 8, max: 4}\n"),
            "bad.yaml: knobs[1].max: must be greater than min (4 <= 8)");
  EXPECT_EQ(message("knobs:\n  - {name: a, min: 0, max: 2, scale: log}\n"), "bad.yaml: knobs[0].min: log scale needs min > 0 (got 0)");
  EXPECT_EQ(message("knobs:\n  - {name: a, type: categorical}\n"),
            "bad.yaml: knobs[0].values: missing (a categorical knob lists its values)");
  EXPECT_EQ(message("knobs:\n  - {name: a, min: 1, max: 2, colour: red}\n").substr(0, 40), "bad.yaml: knobs[0].colour: unknown key (");
  EXPECT_EQ(message("knobs:\n  - {name: a, min: x, max: 2}\n"), "bad.yaml: knobs[0].min: must be a number, not 'x'");
  EXPECT_EQ(message("knobs: []\n"), "bad.yaml: knobs: must be a non-empty list");
  EXPECT_EQ(message("knobs:\n  - {name: a, min: 1, max: 2}\nobjective: {kind: regex}\n"),
            "bad.yaml: objective.regex: missing (kind: regex needs a pattern with one capture group)");
  EXPECT_EQ(message("knobs: [\n").substr(0, 25), "bad.yaml: line 2: not val");
}

namespace {
// Branin on [-5,10]x[0,15], minimum 0.397887; Hartmann-6 on [0,1]^6, minimum -3.32237.
double branin(const std::vector<double>& u) {
  const double x = -5 + 15 * u[0], y = 15 * u[1];
  const double b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, t = 1 / (8 * M_PI);
  return std::pow(y - b * x * x + c * x - 6, 2) + 10 * (1 - t) * std::cos(x) + 10;
}
double hartmann6(const std::vector<double>& x) {
  static const double a[4] = {1.0, 1.2, 3.0, 3.2};
  static const double A[4][6] = {{10, 3, 17, 3.5, 1.7, 8}, {0.05, 10, 17, 0.1, 8, 14}, {3, 3.5, 1.7, 10, 17, 8}, {17, 8, 0.05, 10, 0.1, 14}};
  static const double P[4][6] = {{1312, 1696, 5569, 124, 8283, 5886}, {2329, 4135, 8307, 3736, 1004, 9991},
                                 {2348, 1451, 3522, 2883, 3047, 6650}, {4047, 8828, 8732, 5743, 1091, 381}};
  double s = 0;
  for (int i = 0; i < 4; ++i) {
    double e = 0;
    for (int j = 0; j < 6; ++j) e += A[i][j] * std::pow(x[static_cast<std::size_t>(j)] - P[i][j] * 1e-4, 2);
    s += a[i] * std::exp(-e);
  }
  return -s;
}

// Simple regret (true value at the best noisy observation minus the optimum) after `evaluations`.
double regret(const SearchSpace& space, StrategyKind kind, std::uint64_t seed, int evaluations,
              double (*f)(const std::vector<double>&), double optimum, double noise_sd) {
  Strategy strategy(space, kind, seed, evaluations);
  std::mt19937_64 rng(seed + 1000);
  std::normal_distribution<double> noise(0, noise_sd);
  std::vector<Observation> history;
  double best_noisy = -1e300, best_true = 0;
  for (int i = 0; i < evaluations; ++i) {
    const auto s = strategy.suggest(i, history);
    const double truth = f(s->unit);
    const double observed = -(truth + noise(rng));  // maximise the negative
    history.push_back({s->unit, observed, {}});
    if (observed > best_noisy) {
      best_noisy = observed;
      best_true = truth;
    }
  }
  return best_true - optimum;
}

SearchSpace unit_space(int dims) {
  std::string yaml = "knobs:\n";
  for (int d = 0; d < dims; ++d) yaml += "  - {name: x" + std::to_string(d) + ", min: 0, max: 1}\n";
  return SearchSpace::parse(yaml, "unit.yaml");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}
}  // namespace

TEST(BayesianOptimisation, BeatsRandomSearchOnNoisyBraninAndHartmann6) {
  const auto branin_space = unit_space(2), hartmann_space = unit_space(6);
  std::vector<double> bo_b, rnd_b, bo_h, rnd_h;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    bo_b.push_back(regret(branin_space, StrategyKind::Bayesian, seed, 20, branin, 0.397887, 1.0));
    rnd_b.push_back(regret(branin_space, StrategyKind::Random, seed, 20, branin, 0.397887, 1.0));
    bo_h.push_back(regret(hartmann_space, StrategyKind::Bayesian, seed, 20, hartmann6, -3.32237, 0.05));
    rnd_h.push_back(regret(hartmann_space, StrategyKind::Random, seed, 20, hartmann6, -3.32237, 0.05));
  }
  std::printf("median simple regret at 20 evaluations: Branin BO %.3f random %.3f; Hartmann-6 BO %.3f random %.3f\n",
              median(bo_b), median(rnd_b), median(bo_h), median(rnd_h));
  EXPECT_LT(median(bo_b), median(rnd_b));
  EXPECT_LT(median(bo_h), median(rnd_h));
}

TEST(Strategy, SameSeedSameTrialsAndGridIsExhaustive) {
  const auto space = SearchSpace::parse("knobs:\n  - {name: a, min: 1, max: 3, type: integer}\n  - {name: b, type: categorical, values: [x, y]}\n", "g.yaml");
  Strategy grid(space, StrategyKind::Grid, 0, 100);
  EXPECT_EQ(grid.grid().size(), 6u);
  EXPECT_FALSE(grid.suggest(6, {}).has_value());
  Strategy r1(space, StrategyKind::Random, 5, 10), r2(space, StrategyKind::Random, 5, 10);
  EXPECT_EQ(r1.suggest(3, {})->unit, r2.suggest(3, {})->unit);
}

TEST(Scoring, TimedOutTrialSaysWhereItHung) {
  // A trial's run whose ranks 0-2 were killed inside allreduce #80 while rank 3 never came.
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / ("collscope-autotuner-hang-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  collscope::testing::SyntheticRunSpec spec;
  spec.steps = 20;
  collscope::testing::write_synthetic_run(dir.string(), spec);
  EXPECT_EQ(hang_summary(dir.string()), "");  // finished normally: nothing hung
  // Inside the files' traces (1000 s to about 1000.3 s after boot, plus the loader's 1 s of slack): a call seen
  // after its file's trace ended is out of physical range and left out (run/physical_limits.hpp).
  for (int r : {0, 1, 2}) {
    collscope::store::sqlite::Database db((dir / ("rank-0000" + std::to_string(r) + ".sqlite")).string(),
                                          collscope::store::sqlite::OpenMode::ReadWrite);
    db.exec("INSERT INTO calls_in_flight VALUES(1, 1, 80, 1, 1048576, 0, 4194304, 0, NULL, 1000500000000, 1000900000000)");
  }
  EXPECT_EQ(hang_summary(dir.string()), "hang: rank(s) 3 never made allreduce #80 on MPI_COMM_WORLD; rank(s) 0,1,2 wait in it");
  EXPECT_EQ(hang_summary((dir / "missing").string()), "");  // no trace at all: no summary, no exception
  fs::remove_all(dir);
}
