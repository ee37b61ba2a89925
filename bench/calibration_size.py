"""How deccal's lead over the standard calibrators grows with the calibration sample.

Prints figures; it is not a test.  Usage:

    python bench/calibration_size.py            # 10 splits, sizes 500 .. 15,000, two processes; prints
    python bench/calibration_size.py --write    # ... and writes bench/calibration_size_results.md
    python bench/calibration_size.py --seeds 1 --sizes 300 600    # a quick look

The skeptic's benchmark (bench/skeptic.py) calibrates on 171 to 1,910 rows and tests on as many: its standard
errors are dominated by the test sets' noise (its "noise floor" rows), and a calibrator's systematic lead shows
only where it is large.  Here the data are unlimited: the skeptic's synthetic problem (scikit-learn's
make_classification with the same arguments: 5 classes, 20 features, 10 informative, 2 clusters a class,
class_sep 1, 2 % of labels flipped), drawn once with 80,000 rows.  On each split (a random permutation of them) a
base model (the skeptic's logreg, gnb and hgb) is fitted on 2,000 rows, and calibrated on the first n of a pool of
15,000 other rows (n = 500, 1,500, 5,000, 15,000: nested samples, so that the sizes are paired) by none, sigmoid,
isotonic and temperature scaling (scikit-learn's CalibratedClassifierCV on the frozen model) and by deccal's
DecisionCalibratedClassifier(FrozenEstimator(base), costs=the 200 decision makers), its defaults otherwise; all
are scored on the same 20,000 test rows by Zhao et al.'s mean gap over the skeptic's 200 random decision makers
(A = 5) (deccal by its calibrated vectors, as in the skeptic).  The noise floor is that of temperature scaling's
probabilities against labels drawn from themselves on the test rows (the skeptic's), here with 20,000 test rows.
Reported per model and size: each calibrator's mean gap ± the standard error over splits; deccal minus the best
baseline of that model and size (chosen after the fact), paired by split; deccal's fit seconds and its first
stages.
"""
from __future__ import annotations
import os
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS')
import argparse, sys, time, warnings

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
# the thread settings this script had when it imported bench/skeptic.py or bench/sklearn_calibration.py here
# (for the libraries loaded from here on: scipy's OpenBLAS, scikit-learn's OpenMP)
thread_defaults()
from _measure import machine_info, emit_record, mse                    # noqa: E402
from _data import random_costs, pool_split_and_model, POOL_ROWS, POOL_TRAIN, POOL_TEST   # noqa: E402
from _scores import zhao_gaps                                          # noqa: E402
from _calibrators import BASELINES                                     # noqa: E402
from sklearn.calibration import CalibratedClassifierCV                 # noqa: E402
from sklearn.frozen import FrozenEstimator                             # noqa: E402
from deccal.estimators import DecisionCalibratedClassifier             # noqa: E402

MODELS = ('logreg', 'gnb', 'hgb')
SIZES = (500, 1500, 5000, 15000)
N_ROWS, N_TRAIN, N_TEST = POOL_ROWS, POOL_TRAIN, POOL_TEST   # the synthetic pool of bench/_data.py


def run(job):
    "One model and split: {size: {calibrator: mean gap}, ...}."
    mname, seed, sizes = job
    X, y, te, pool, base = pool_split_and_model(mname, seed)
    costs = random_costs(5)                                                       # the skeptic's
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        Pt = base.predict_proba(X[te])
        for n in sizes:
            ca = pool[:n]
            rec = {'none': float(zhao_gaps(Pt, y[te], costs).mean())}
            for m in BASELINES[1:]:
                P = CalibratedClassifierCV(FrozenEstimator(base), method=m).fit(X[ca], y[ca]).predict_proba(X[te])
                rec[m] = float(zhao_gaps(P, y[te], costs).mean())
                if m == 'temperature':
                    lab = (P.cumsum(1) > np.random.default_rng([seed, n]).uniform(size=(len(P), 1))).argmax(1)
                    rec['floor'] = float(zhao_gaps(P, lab, costs).mean())
            t0 = time.process_time()
            dc = DecisionCalibratedClassifier(FrozenEstimator(base), costs=costs).fit(X[ca], y[ca])
            rec['deccal seconds'] = time.process_time() - t0
            rec['deccal'] = float(zhao_gaps(dc.calibrated_vectors(X[te]), y[te], costs).mean())
            fs = dc.first_stage_
            rec['first stage'] = 'none' if fs is None else str(getattr(fs, 'name', None) or type(fs).__name__)
            out[n] = rec
    return mname, seed, out



def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument('--seeds', type=int, default=10)
    ap.add_argument('--sizes', type=int, nargs='*', default=list(SIZES))
    ap.add_argument('--write', action='store_true')
    a = ap.parse_args(argv)
    if max(a.sizes) > N_ROWS - N_TRAIN - N_TEST: ap.error('a size is larger than the pool')
    t0 = time.time()
    from multiprocessing import Pool
    jobs = [(m, s, a.sizes) for m in MODELS for s in range(a.seeds)]
    with Pool(2) as pool: res = list(pool.imap(run, jobs))
    names = (*BASELINES, 'deccal', 'floor')
    lines = ['| base | calibration rows | ' + ' | '.join(names) + ' | best baseline | deccal - best | in se '
             '| deccal fit s | deccal\'s first stages |', '|' + '---|' * (len(names) + 7)]
    cells = []
    for m in MODELS:
        for n in a.sizes:
            recs = [out[n] for mm, _, out in res if mm == m]
            g = {k: mse([r[k] for r in recs]) for k in names}
            best = min(BASELINES, key=lambda b: g[b][0])
            d, s = mse([r['deccal'] - r[best] for r in recs])
            fs = [r['first stage'] for r in recs]
            secs = float(np.mean([r['deccal seconds'] for r in recs]))
            cells.append(dict(base=m, n=n, gaps=g, best=best, diff=d, se=s, seconds=secs))
            lines.append(f"| {m} | {n:,} | " + ' | '.join(f"{g[k][0]:.4f} ± {g[k][1]:.4f}" for k in names)
                         + f" | {best} | {d:+.4f} ± {s:.4f} | {d / s:+.1f} | {secs:.1f} | "
                         + ', '.join(f"{nm} x{fs.count(nm)}" for nm in dict.fromkeys(fs)) + ' |')
            print(lines[-1], flush=True)
    head = ["# deccal's lead over the standard calibrators against the calibration sample's size", '',
            machine_info(['estimators.py', 'first_stage.py']), '',
            f"Produced by `python bench/calibration_size.py --write`: {a.seeds} splits, {N_TRAIN:,} training rows, "
            f"{N_TEST:,} test rows, nested calibration samples; {time.time() - t0:.0f} s.  Mean gaps ± standard "
            "errors over splits; 'deccal - best': paired by split; 'deccal fit s': CPU seconds.  The scenario: the "
            "docstring of bench/calibration_size.py.", '']
    emit_record(head + lines + [''], dict(seeds=a.seeds, sizes=a.sizes, cells=cells),
                'calibration_size_results.md', a.write)


if __name__ == '__main__':
    main()
