"""Does the pooled out-of-fold gap that `select_first_stage` ranks the candidates by predict their gap on new rows?

Prints figures; it is not a test.  Usage:

    python bench/oof_gap_bias.py            # 10 splits; prints the table
    python bench/oof_gap_bias.py --write    # ... and writes bench/oof_gap_bias_results.md

The decision makers' gap of a candidate is a mean over rows of its residuals, |mean_i (paid - promised)|.
`select_first_stage` computes it on the out-of-fold probabilities of all calibration rows pooled.  A stage with a
free intercept (vector or matrix scaling, isotonic regression) fitted on the other folds matches their class
frequencies, and the pooled residual mean over all folds then cancels most of the calibration sample's own noise:
the pooled out-of-fold gap of such a stage is small whatever its gap on new rows.  The per-fold gap (the gap
within each fold, averaged over the folds) does not pool, so it does not cancel; it is noisier (each fold has a
fifth of the rows).  This script measures both against the gap on 20,000 new rows, for the eight named
candidates, on the synthetic problem of bench/calibration_size.py (the same data, splits, 2,000 training rows and
200 decision makers) with logistic regression and gradient boosting and 500 or 1,500 calibration rows, 5 folds
as in `select_first_stage`.  Reported per model and size: each candidate's three gaps, means over 10 splits, and
which candidate the pooled gap and the per-fold gap rank first, against the one that is best on the new rows; each
candidate's pooled gap and gap on new rows minus the model's ('none'), paired over the splits (mean ± paired
standard error); and, in the JSON block, every split's three gaps per candidate (`per_split`), for other pairs.
"""
from __future__ import annotations
import os
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS')
import argparse, sys, time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
# the thread settings this script had when it imported bench/skeptic.py or bench/sklearn_calibration.py here
# (for the libraries loaded from here on: scipy's OpenBLAS, scikit-learn's OpenMP)
thread_defaults()
from _measure import machine_info, emit_record, mse                    # noqa: E402
from _data import random_costs, pool_split_and_model                  # noqa: E402
from _scores import zhao_gaps                                          # noqa: E402
from _calibrators import candidates, CV                               # noqa: E402
from deccal.first_stage import stratified_folds                        # noqa: E402
from deccal.decisions import cost_gap_rows                             # noqa: E402

NAMES = ('none', 'temperature', 'vector', 'matrix', 'isotonic', 'temperature+isotonic', 'vector+isotonic',
         'matrix+isotonic')
MODELS = ('logreg', 'hgb')
SIZES = (500, 1500)


def run(job):
    "One model and split: {size: {candidate: (pooled, per fold, new rows)}}."
    mname, seed = job
    X, y, te, pool, base = pool_split_and_model(mname, seed)                      # calibration_size's splits
    costs = random_costs(5)                                                       # the skeptic's
    Pt, out = base.predict_proba(X[te]), {}
    for n in SIZES:
        ca = pool[:n]
        Pc, yc = base.predict_proba(X[ca]), y[ca]
        oofs, tests, _ = candidates(Pc, yc, Pt, seed)
        folds = stratified_folds(yc, CV, seed)
        rec = {}
        for nm in NAMES:
            r = cost_gap_rows(oofs[nm], yc, costs)                # (decision makers, rows)
            rec[nm] = (float(np.abs(r.mean(1)).mean()),
                       float(np.mean([np.abs(r[:, folds == k].mean(1)).mean() for k in range(CV)])),
                       float(zhao_gaps(tests[nm], y[te], costs).mean()))
        out[n] = rec
    return mname, seed, out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument('--seeds', type=int, default=10)
    ap.add_argument('--write', action='store_true')
    a = ap.parse_args(argv)
    t0 = time.time()
    from multiprocessing import Pool
    with Pool(2) as pool: res = list(pool.imap(run, [(m, s) for m in MODELS for s in range(a.seeds)]))
    lines, cells = [], []
    for m in MODELS:
        for n in SIZES:
            recs = [out[n] for mm, _, out in res if mm == m]
            mean = {nm: np.mean([r[nm] for r in recs], axis=0) for nm in NAMES}       # (pooled, per fold, new)
            first = {k: sum(min(NAMES, key=lambda nm: r[nm][j]) == min(NAMES, key=lambda nm: r[nm][2])
                            for r in recs) for j, k in ((0, 'pooled'), (1, 'per fold'))}
            per = {nm: np.array([r[nm] for r in recs]) for nm in NAMES}                   # (splits, 3)
            vs = lambda nm, j: "{:+.4f} ± {:.4f}".format(*mse(per[nm][:, j] - per['none'][:, j]))   # paired
            lines += [f"**{m}, {n:,} calibration rows** ({a.seeds} splits; the candidate best on the new rows is "
                      f"ranked first by the pooled gap in {first['pooled']} splits, by the per-fold gap in "
                      f"{first['per fold']})", '',
                      '| candidate | pooled out-of-fold gap | per-fold gap | gap on 20,000 new rows '
                      '| Δ pooled gap vs none | Δ new-row gap vs none |',
                      '|---|---|---|---|---|---|']
            lines += [f"| {nm} | {mean[nm][0]:.4f} | {mean[nm][1]:.4f} | {mean[nm][2]:.4f} | "
                      f"{vs(nm, 0) if nm != 'none' else ''} | {vs(nm, 2) if nm != 'none' else ''} |"
                      for nm in NAMES] + ['']
            cells.append(dict(base=m, n=n, gaps={nm: mean[nm].tolist() for nm in NAMES}, first=first,
                              per_split={nm: per[nm].tolist() for nm in NAMES}))
    head = ["# The pooled out-of-fold gap against the gap on new rows", '', machine_info(['first_stage.py']), '',
            f"Produced by `python bench/oof_gap_bias.py --write`; {time.time() - t0:.0f} s.  Means over splits; "
            "Δ = paired difference (same split) from the model's own probabilities ('none'), mean ± paired "
            "standard error over splits; the JSON block keeps every split's gaps (`per_split`: pooled, per fold, "
            "new rows).  "
            "The scenario: the docstring of bench/oof_gap_bias.py.", '']
    emit_record(head + lines, dict(seeds=a.seeds, cells=cells), 'oof_gap_bias_results.md', a.write)


if __name__ == '__main__':
    main()
