"""The table the predict benches print (predict_vs_horovod.py, samples/fusion_trainer/bench/predict_vs_real.py):
per setting the median over rounds of the predictions and of the measured steps, the error, and whether the
predicted direction of change is right where the real change exceeds the baseline's run-to-run noise (2 x 1.4826 x
MAD of its rounds' medians); with `against`, another model's predictions of the same traces in two more columns.
A prediction of None (the model declined) is "not predicted"."""
import statistics


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
