"""Benchmark: how sharp the auditor's search must be inside the estimators' cross-fitted rounds.

Prints figures; it is not a test.  Usage:

    python bench/estimator_search.py            # prints the table
    python bench/estimator_search.py --write    # ... and writes bench/estimator_search_results.md

DecisionCalibratedClassifier(FrozenEstimator(GaussianNB), first_stage='temperature') on scikit-learn's digits,
5 random splits (50% fit the base model, 25% calibrate, 25% test).  The estimators' calibrator is DimFreeDeCal
with the line-search step; this script varies its auditor (`n_starts` random starts besides the previous
round's witness, `max_iter` L-BFGS iterations per start) and reports, per setting, the fit time, the held-out
mean gap of the calibrated vectors (deccal.metrics.decision_calibration_score: 200 random cost matrices, 5
actions), the rounds kept and the rounds run over the 5 folds.  Means over splits, with standard errors.
"""
from __future__ import annotations
import os
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults('OMP_WAIT_POLICY', 'OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS')
import argparse, sys, time
import numpy as np
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
from _measure import machine_info   # noqa: E402
from sklearn.datasets import load_digits                                   # noqa: E402
from sklearn.naive_bayes import GaussianNB                                 # noqa: E402
from sklearn.frozen import FrozenEstimator                                 # noqa: E402
from deccal.estimators import DecisionCalibratedClassifier                 # noqa: E402
from deccal.metrics import decision_calibration_score                      # noqa: E402
import deccal.estimator_base as est_module                                 # noqa: E402  (fit's calibrator_for)

SETTINGS = [dict(n_starts=2, max_iter=100), dict(n_starts=1, max_iter=100), dict(n_starts=2, max_iter=30),
            dict(n_starts=1, max_iter=30)]


def run(n_splits):
    X, y = load_digits(return_X_y=True)
    make = est_module.calibrator_for          # the estimators' own factory of their calibrator
    rows = []
    for kw in SETTINGS:
        est_module.calibrator_for = lambda method, kernel, **k: make(method, kernel, **{**k, **kw})
        rec = []
        for s in range(n_splits):
            p = np.random.default_rng(s).permutation(len(y))
            tr, ca, te = np.split(p, [len(y) // 2, 3 * len(y) // 4])
            base = GaussianNB().fit(X[tr], y[tr])
            t0 = time.perf_counter()
            m = DecisionCalibratedClassifier(FrozenEstimator(base), first_stage='temperature').fit(X[ca], y[ca])
            dt = time.perf_counter() - t0
            g = decision_calibration_score(y[te], m.calibrated_vectors(X[te]), labels=base.classes_)
            rec.append((dt, g, m.calibrator_.best_round_, sum(m.calibrator_.rounds_run_)))
        est_module.calibrator_for = make
        r = np.array(rec)
        rows.append((kw, r.mean(0), r.std(0, ddof=1) / np.sqrt(len(r))))
        print(kw, r.mean(0).round(4), flush=True)
    return rows


if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('--splits', type=int, default=5)
    ap.add_argument('--write', action='store_true')
    a = ap.parse_args()
    rows = run(a.splits)
    lines = ['| n_starts | max_iter | fit s | mean gap (test) | rounds kept | rounds run (5 folds) |',
             '|---|---|---|---|---|---|']
    for kw, m, se in rows:
        lines.append(f"| {kw['n_starts']} | {kw['max_iter']} | {m[0]:.2f} ± {se[0]:.2f} | {m[1]:.4f} ± {se[1]:.4f} | "
                     f"{m[2]:.1f} ± {se[2]:.1f} | {m[3]:.0f} ± {se[3]:.0f} |")
    print('\n'.join(lines))
    if a.write:
        with open(os.path.join(REPO, 'bench', 'estimator_search_results.md'), 'w') as f:
            f.write('\n'.join(['# The auditor inside the estimators: search settings', '',
                               machine_info(('dimfree.py', 'estimators.py', 'crossfit.py')), '',
                               f'Produced by `python bench/estimator_search.py --write` ({a.splits} splits).', '']
                              + lines) + '\n')
