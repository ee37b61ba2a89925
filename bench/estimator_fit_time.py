"""Benchmark: the default fit of DecisionCalibratedClassifier on 1,500 calibration rows.

Prints figures; it is not a test.  Usage:

    python bench/estimator_fit_time.py            # prints the table
    python bench/estimator_fit_time.py --write    # ... and writes bench/estimator_fit_time_results.md

The target: the default fit (first stage 'auto', 5 cross-fitted calibrators) takes at most 2 s on 1,500 calibration
rows.  Three problems, each with a frozen base model fitted on other rows: make_classification (5 classes, 20
features) with LogisticRegression and with HistGradientBoostingClassifier, and digits (10 classes, 1,500 of its
images) with GaussianNB.  Each fit runs 3 times in this process (after one warm-up fit that compiles Numba's
functions); the script reports the wall time and the process's CPU time (one BLAS thread, so on a quiet machine
the two agree; when other jobs share the cores the CPU time is the better estimate of the quiet wall time), and
the machine's load average.  Each problem is fitted twice over: without costs, and with `costs` = 200 random cost
matrices (5 actions, entries uniform in [0, 1]: the decision makers one knows of, which make the first stage be
chosen by their out-of-fold gap).
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
from _measure import machine_info, loadavg                                 # noqa: E402
from sklearn.datasets import load_digits, make_classification              # noqa: E402
from sklearn.ensemble import HistGradientBoostingClassifier                # noqa: E402
from sklearn.frozen import FrozenEstimator                                 # noqa: E402
from sklearn.linear_model import LogisticRegression                        # noqa: E402
from sklearn.naive_bayes import GaussianNB                                 # noqa: E402
from deccal.estimators import DecisionCalibratedClassifier                 # noqa: E402


def problems():
    X, y = make_classification(n_samples=4000, n_features=20, n_informative=10, n_classes=5, random_state=0)
    Xd, yd = load_digits(return_X_y=True)
    lr = LogisticRegression(max_iter=2000).fit(X[:2500], y[:2500])
    yield 'make_classification, LogisticRegression', lr, X[2500:], y[2500:]
    hgb = HistGradientBoostingClassifier().fit(X[:2500], y[:2500])
    yield 'make_classification, HistGradientBoosting', hgb, X[2500:], y[2500:]
    yield 'digits, GaussianNB', GaussianNB().fit(Xd[1500:], yd[1500:]), Xd[:1500], yd[:1500]


def run(repeats):
    rows = []
    for name, base, Xc, yc in problems():
        DecisionCalibratedClassifier(FrozenEstimator(base)).fit(Xc[:300], yc[:300])     # warm-up (Numba, caches)
        costs = np.random.default_rng(0).uniform(0, 1, (200, 5, len(np.unique(yc))))
        for label, kw in (('none', {}), ('200 matrices', {'costs': costs})):
            walls, cpus = [], []
            for _ in range(repeats):
                w0, c0 = time.perf_counter(), time.process_time()
                m = DecisionCalibratedClassifier(FrozenEstimator(base), **kw).fit(Xc, yc)
                walls.append(time.perf_counter() - w0); cpus.append(time.process_time() - c0)
            rows.append((name, label, len(yc), np.median(walls), np.median(cpus), m.first_stage_.name,
                         m.calibrator_.best_round_, sum(m.calibrator_.rounds_run_), loadavg()))
            print(rows[-1], flush=True)
    return rows


if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('--repeats', type=int, default=3)
    ap.add_argument('--write', action='store_true')
    a = ap.parse_args()
    rows = run(a.repeats)
    lines = ['| problem | costs | rows | wall s (median) | CPU s (median) | first stage | rounds kept '
             '| rounds run (5 folds) | load |',
             '|---|---|---|---|---|---|---|---|---|']
    lines += [f"| {r[0]} | {r[1]} | {r[2]:,} | {r[3]:.2f} | {r[4]:.2f} | {r[5]} | {r[6]} | {r[7]} | {r[8]} |"
              for r in rows]
    print('\n'.join(lines))
    if a.write:
        with open(os.path.join(REPO, 'bench', 'estimator_fit_time_results.md'), 'w') as f:
            f.write('\n'.join(['# The default fit on 1,500 calibration rows', '',
                               machine_info(('estimators.py', 'crossfit.py', 'dimfree.py', 'first_stage.py')), '',
                               f'Produced by `python bench/estimator_fit_time.py --write` ({a.repeats} fits each).', '']
                              + lines) + '\n')
