"""What the predict benches share (predict_vs_horovod.py, samples/fusion_trainer/bench/predict_vs_real.py): their
rounds and their table.

Rounds: each traces the baselines, asks the model (and an --against model) for every setting from them, then runs the
baseline and every setting for real, untraced, in an order rotated each round, so that slow drifts of the machine's
load spread over all of them.

Table: per setting the median over rounds of the predictions and of the measured steps, the error, and whether the
predicted direction of change is right where the real change exceeds the baseline's run-to-run noise (2 x 1.4826 x
MAD of its rounds' medians); with `against`, another model's predictions of the same traces in two more columns.
A prediction of None (the model declined) is "not predicted"."""
import statistics
import sys


def run_rounds(rounds, settings, baselines, trace, predict, measure, against=None, last_round=None):
    """`settings`: (label, predict arguments, job environment, job arguments, baseline name); `baselines`: name -> job
    arguments. `trace(name, job arguments, round)` -> a traced run's directory; `predict(binary, run, arguments)` ->
    the predicted step (ms) or None, binary None for the bench's own model; `measure(environment, arguments)` -> the
    measured median step (ms). `last_round(runs)` gets the last round's traced runs (name -> directory). Returns
    (predicted, against predictions or None, measured, baseline)."""
    predicted = {label: [] for label, *_ in settings}
    others = {label: [] for label, *_ in settings}
    measured = {label: [] for label, *_ in settings}
    baseline = []
    for round_ in range(rounds):
        runs = {name: trace(name, extra, round_) for name, extra in baselines.items()}
        for label, predict_args, _, _, base in settings:
            predicted[label].append(predict(None, runs[base], predict_args))
            if against:
                others[label].append(predict(against, runs[base], predict_args))
        order = [("baseline", {}, [])] + [(label, env, extra) for label, _, env, extra, _ in settings]
        shift = round_ % len(order)
        for label, env, extra in order[shift:] + order[:shift]:
            value = measure(env, extra)
            (baseline if label == "baseline" else measured[label]).append(value)
        print(f"round {round_ + 1}/{rounds} done", file=sys.stderr)
        if last_round and round_ == rounds - 1:
            last_round(runs)
    return predicted, others if against else None, measured, baseline


def print_table(description, labels, predicted, measured, baseline, against=None):
    base = statistics.median(baseline)
    noise = 2 * 1.4826 * statistics.median([abs(b - base) for b in baseline])

    def judge(p, change):
        if abs(change) <= noise:
            return "n/a (within noise)"
        return "right" if (p - base) * change > 0 else "WRONG"

    def cell(values, m, change, errors):
        known = [v for v in values if v is not None]
        if not known:
            return "not predicted", "-", "-"
        q = statistics.median(known)
        errors.append(abs(q - m) / m)
        return f"{q:.2f}", f"{100 * (q - m) / m:+.1f} %", judge(q, change)

    print(f"Baseline ({description}): median step {base:.2f} ms over {len(baseline)} rounds, noise ±{noise:.2f} ms "
          "(2 x 1.4826 x MAD of the rounds' medians)\n")
    print("| setting | predicted (ms) | measured (ms) | error | real change (ms) | direction |" +
          (" --against predicted (ms) | its error |" if against else ""))
    print("|---|---|---|---|---|---|" + ("---|---|" if against else ""))
    errors, other_errors = [], []
    for label in labels:
        m = statistics.median(measured[label])
        change = m - base
        p, e, d = cell(predicted[label], m, change, errors)
        other = ""
        if against:
            q, qe, qd = cell(against[label], m, change, other_errors)
            other = f" {q} | {qe} ({qd}) |"
        print(f"| {label} | {p} | {m:.2f} | {e} | {change:+.2f} | {d} |{other}")
    for name, errs in (("", errors), ("--against: ", other_errors)):
        if errs:
            print(f"\n{name}median absolute error {100 * statistics.median(errs):.1f} %, largest "
                  f"{100 * max(errs):.1f} %")
