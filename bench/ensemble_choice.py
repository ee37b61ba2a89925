"""Does `ensemble=False` lose anything against the default `ensemble=True`, on held-out rows?

Prints figures; it is not a test and asserts nothing.  Usage:

    python bench/ensemble_choice.py                 # the skeptic's 16 small cells (20 splits) and its large cells
    python bench/ensemble_choice.py --write         # and writes bench/ensemble_choice_results.md
    python bench/ensemble_choice.py --quick         # 2 splits of breast_cancer / digits with logreg, 1 large split
    python bench/ensemble_choice.py --part small --seeds 5 --datasets digits --models logreg

WHY.  DecisionCalibratedClassifier(ensemble=True) (the default) averages the 5 fold calibrators of its cross-fitting,
each replaying its rounds on every scored row; ensemble=False refits one calibrator on every calibration row with the
round count the cross-fitting chose, so scoring replays one calibrator instead of five.  Both share everything before
that last step (first stage, folds, the rounds kept), so a pair fitted on the same split differs only in it.

CELLS.  The same data, splits, base models, decision makers and team matrices as the skeptic's benchmarks (all from
bench/_data.py):
  small   bench/skeptic.py's classification cells: digits, breast_cancer, fair, make_classification x logreg, gnb,
          hgb, rf; 20 stratified 40/30/30 splits; costs = the 200 random evaluation matrices (seed 12345), given to
          deccal as `costs=`, as bench/skeptic.py does; the team matrix M = fixed_costs.
  large   bench/skeptic_large.py's cells: diamonds and flights x GaussianNB, HGB x 2,000 and 10,000 calibration rows;
          5 splits; 25,000 / 250,000 test rows; the 200 random matrices of seed 2024; deccal without costs (its
          defaults) and with costs=M, the team's matrix.
For each cell and split both estimators are fitted on the same rows with the same (default) random_state.

COLUMNS.  Paired differences ensemble=False minus the default, per split, then mean ± se over splits, of every measure
the skeptic's scripts report: small cells, the mean gap, debiased gap (the mean over the 200 decision makers of
(mean promised - paid)^2 - var / n, in units of 1e-6), max gap, log loss, Brier, accuracy, rows with an exact 0,
the realized cost under M (predict_action); large cells, the gap, its noise floor, the debiased gap, log loss,
cost under M, the team's gap.  And for both estimators: the fit time, the rounds kept (and run), and the time of
predict_proba on 100,000 rows (the test rows, repeated or cut to 100,000; the better of 2 calls, beside the frozen
base model's predict_proba on the same rows; on the first --time-splits splits of each cell, 1 by default: scoring
100,000 rows with a 10-class boosted model takes seconds a call on the shared machine).  BLAS one thread, the machine
shared: read the times as orders of magnitude, the ratios as figures.
"""
from __future__ import annotations
import os
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults()
import argparse, sys, time, warnings

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
from _measure import machine_info, emit_record, mse, table               # noqa: E402
from _data import (clf_datasets, CLF_MODELS, split, fixed_costs, random_costs,    # noqa: E402
                   LARGE_DATASETS, LARGE_MODELS, TEST_ROWS, large_split)
from _scores import prob_metrics, large_columns, rounds                   # noqa: E402

TIME_ROWS = 100_000
SMALL_KEYS = (('mean_gap', 'mean gap', 4), ('dgap2', 'debiased gap² (e-6)', 2), ('max_gap', 'max gap', 4),
              ('log_loss', 'log loss', 4), ('brier', 'Brier', 4), ('accuracy', 'accuracy', 4),
              ('zeros', 'rows with a 0', 4), ('cost', 'cost under M', 4))
LARGE_KEYS = (('gap', 'gap', 5), ('floor', 'noise floor', 5), ('dgap2', 'debiased gap² (e-6)', 3),
              ('log_loss', 'log loss', 5), ('cost', 'cost under M', 5), ('team_gap', 'team gap', 5))


def best_of(f, k:int=2) -> float:
    "The shortest of k calls of f(), in seconds."
    out = []
    for _ in range(k):
        t0 = time.perf_counter(); f(); out.append(time.perf_counter() - t0)
    return min(out)


def time_rows(Xt):
    "The test rows repeated (or cut) to TIME_ROWS rows."
    return Xt[np.arange(TIME_ROWS) % len(Xt)]


def fit_pair(frozen, Xc, yc, **kw):
    "The default and ensemble=False fitted on the same rows: {name: (estimator, fit seconds)}."
    from deccal.estimators import DecisionCalibratedClassifier
    out = {}
    for name, ens in (('default', True), ('single', False)):
        t0 = time.perf_counter()
        est = DecisionCalibratedClassifier(frozen, ensemble=ens, **kw).fit(Xc, yc)
        out[name] = (est, time.perf_counter() - t0)
    return out


def timings(base, pair, Xt) -> dict:
    "predict_proba seconds per TIME_ROWS rows: the base model's and each estimator's."
    Xb = time_rows(Xt)
    out = {'base_predict_s': best_of(lambda: base.predict_proba(Xb))}
    for name, (est, _) in pair.items(): out[name] = best_of(lambda: est.predict_proba(Xb))
    return out


def small_split(X, y, mname, seed, costs, M, timed:bool) -> dict:
    "Both estimators on one of bench/skeptic.py's splits: {'default': columns, 'single': columns}."
    from sklearn.frozen import FrozenEstimator
    tr, ca, te = split(y, seed)
    base = CLF_MODELS[mname]().fit(X[tr], y[tr])
    Xc, yc, Xt, yt = X[ca], y[ca], X[te], y[te]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        pair = fit_pair(FrozenEstimator(base), Xc, yc, costs=costs)
        rows = {}
        for name, (est, secs) in pair.items():
            rows[name] = prob_metrics(est.calibrated_vectors(Xt), est.predict_proba(Xt), yt, costs, M,
                                      est.predict_action(Xt, M), secs)
            rows[name].update(rounds(est), first_stage=est.first_stage_.name)
        if timed:
            t = timings(base, pair, Xt)
            for name in pair: rows[name].update(predict_s=t[name], base_predict_s=t['base_predict_s'])
    return rows


def large_one(X, y, M, mname, n_cal, seed, costs, n_test, timed:bool) -> dict:
    "Both estimators, without and with costs=M, on one of bench/skeptic_large.py's splits: {(costs, name): columns}."
    from sklearn.frozen import FrozenEstimator
    tr, ca, te = large_split(len(y), seed, n_cal, n_test)
    base = LARGE_MODELS[mname]().fit(X[tr], y[tr])
    Xc, yc, Xt, yt = X[ca], y[ca], X[te], y[te]
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        for ckey, kw in (('defaults', {}), ('costs=M', dict(costs=M))):
            pair = fit_pair(FrozenEstimator(base), Xc, yc, **kw)
            t = timings(base, pair, Xt) if timed else None
            for name, (est, secs) in pair.items():
                r = large_columns(est.calibrated_vectors(Xt), est.predict_proba(Xt), est.predict_action(Xt, M), yt,
                                  costs, M, secs)
                r.update(rounds(est), first_stage=est.first_stage_.name)
                if timed: r.update(predict_s=t[name], base_predict_s=t['base_predict_s'])
                out[f"{ckey}|{name}"] = r
    return out


def diff_cell(pairs:list, keys, nd_of:dict) -> list:
    "Formatted paired differences single - default over splits, one string per key."
    out = []
    for key in keys:
        d = [p['single'][key] - p['default'][key] for p in pairs]
        if key == 'dgap2': d = [v * 1e6 for v in d]
        m, s = mse(d)
        nd = nd_of[key]
        out.append(f"{m:+.{nd}f} ± {s:.{nd}f}" if np.isfinite(s) else f"{m:+.{nd}f}")
    return out


def time_cells(pairs:list) -> list:
    "fit s (default / single), predict_proba s per 100k rows (base / default / single) and ratios to the base."
    f = lambda n, k: np.mean([p[n][k] for p in pairs])
    timed = [p for p in pairs if 'predict_s' in p['default']]
    g = lambda n, k: np.mean([p[n][k] for p in timed]) if timed else float('nan')
    b = g('default', 'base_predict_s')
    return [f"{f('default', 'fit_s'):.2f} / {f('single', 'fit_s'):.2f}",
            f"{b:.3f} / {g('default', 'predict_s'):.3f} / {g('single', 'predict_s'):.3f}",
            f"{g('default', 'predict_s') / b:.1f}x / {g('single', 'predict_s') / b:.1f}x",
            f"{f('default', 'kept'):.1f} / {f('single', 'kept'):.1f}"]


def worse(pairs:list, keys) -> str:
    "The measures on which ensemble=False is worse than the default by more than 2 paired se (higher is worse)."
    out = []
    for key in keys:
        d = [p['single'][key] - p['default'][key] for p in pairs]
        if key == 'accuracy': d = [-v for v in d]
        m, s = mse(d)
        if np.isfinite(s) and m > 2 * s: out.append(key)
    return ', '.join(out) or 'none'


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--part', default='both', choices=('both', 'small', 'large'))
    ap.add_argument('--seeds', type=int, default=20, help='splits per small cell')
    ap.add_argument('--time-splits', type=int, default=1, help='splits of each cell on which predict_proba is timed')
    ap.add_argument('--datasets', default=None, help='small cells: comma-separated names')
    ap.add_argument('--models', default=None, help='small cells: comma-separated logreg, gnb, hgb, rf')
    ap.add_argument('--splits', type=int, default=5, help='splits per large cell')
    ap.add_argument('--sizes', default='2000,10000', help='large cells: calibration rows')
    ap.add_argument('--large-models', default='gnb,hgb')
    ap.add_argument('--large-datasets', default='diamonds,flights')
    ap.add_argument('--quick', action='store_true')
    ap.add_argument('--write', action='store_true')
    a = ap.parse_args(argv)
    if a.quick:
        a.seeds, a.splits, a.sizes = 2, 1, '2000'
        a.datasets, a.models = a.datasets or 'breast_cancer,digits', a.models or 'logreg'
        a.large_models, a.large_datasets = 'gnb', 'diamonds'
    T0 = time.perf_counter()
    log = lambda s: print(f"[{time.perf_counter() - T0:6.0f} s] {s}", file=sys.stderr, flush=True)
    small, large = {}, {}
    Xw, yw = clf_datasets()['breast_cancer'][0]()     # a warm-up pair (Numba's compilation), not reported
    small_split(Xw, yw, 'logreg', 0, random_costs(2), fixed_costs(2, 0), True)
    if a.part in ('both', 'small'):
        cds = clf_datasets()
        dsel = a.datasets.split(',') if a.datasets else list(cds)
        msel = a.models.split(',') if a.models else list(CLF_MODELS)
        for dname in dsel:
            loader, expensive, _ = cds[dname]
            X, y = loader()
            y = np.unique(y, return_inverse=True)[1]
            C = int(y.max()) + 1
            costs, M = random_costs(C), fixed_costs(C, expensive)
            for mname in msel:
                pairs = []
                for seed in range(a.seeds):
                    pairs.append(small_split(X, y, mname, seed, costs, M, seed < a.time_splits))
                    log(f"{dname} {mname} seed {seed}: gap {pairs[-1]['default']['mean_gap']:.4f} / "
                        f"{pairs[-1]['single']['mean_gap']:.4f}")
                small[f"{dname} | {mname}"] = pairs
    if a.part in ('both', 'large'):
        for dname in a.large_datasets.split(','):
            X, y, M = LARGE_DATASETS[dname]()
            R = random_costs(int(y.max()) + 1, seed=2024)
            for mname in a.large_models.split(','):
                for n_cal in [int(s) for s in a.sizes.split(',')]:
                    per = []
                    for s in range(a.splits):
                        per.append(large_one(X, y, M, mname, n_cal, s, R, TEST_ROWS[dname], s < a.time_splits))
                        log(f"{dname} {mname} {n_cal} split {s}")
                    for ckey in ('defaults', 'costs=M'):
                        large[f"{dname} | {mname} | {n_cal} | {ckey}"] = [
                            {n: r[f"{ckey}|{n}"] for n in ('default', 'single')} for r in per]
    seconds = time.perf_counter() - T0
    lines = ["# ensemble=False against the default (ensemble=True): paired differences on held-out rows", '',
             machine_info(('estimators.py', 'classifier.py', 'crossfit.py', 'replay.py')), '',
             f"Produced by `python bench/ensemble_choice.py{' ' + ' '.join(sys.argv[1:] if argv is None else argv)}`;"
             f" total {seconds:.0f} s (a shared machine).  Small cells: {a.seeds} splits each; large cells: {a.splits} "
             f"splits each; predict_proba timed on the first {a.time_splits} split(s) of each cell.  Every difference "
             "is ensemble=False minus the default, per split, then mean ± se over splits; what the cells and columns "
             "are: the docstring of bench/ensemble_choice.py.", '']
    tcols = ['fit s (default / False)', f'predict_proba s per {TIME_ROWS:,} rows (base / default / False)',
             'predict_proba / base (default / False)', 'rounds kept (default / False)']
    if small:
        nd = {k: n for k, _, n in SMALL_KEYS}
        rows = [cell.split(' | ') + [f"{np.mean([p['default']['mean_gap'] for p in pairs]):.4f}"]
                + diff_cell(pairs, nd, nd) + [worse(pairs, nd)] for cell, pairs in small.items()]
        trows = [cell.split(' | ') + time_cells(pairs) for cell, pairs in small.items()]
        lines += ["## The skeptic's small cells (bench/skeptic.py's classification part; deccal given costs=)", '',
                  *table(rows, ['data', 'base', "default's mean gap"] + [h for _, h, _ in SMALL_KEYS]
                         + ['False worse by > 2 se on']), '', *table(trows, ['data', 'base'] + tcols), '']
    if large:
        nd = {k: n for k, _, n in LARGE_KEYS}
        rows = [cell.split(' | ') + [f"{np.mean([p['default']['gap'] for p in pairs]):.5f}"]
                + diff_cell(pairs, nd, nd) + [worse(pairs, [k for k in nd if k != 'floor'])]
                for cell, pairs in large.items()]
        trows = [cell.split(' | ') + time_cells(pairs) for cell, pairs in large.items()]
        lines += ["## The large cells (bench/skeptic_large.py)", '',
                  *table(rows, ['data', 'base', 'calibration rows', 'deccal', "default's gap"]
                         + [h for _, h, _ in LARGE_KEYS] + ['False worse by > 2 se on']), '',
                  *table(trows, ['data', 'base', 'calibration rows', 'deccal'] + tcols), '']
    emit_record(lines, dict(options=vars(a), seconds=seconds, small=small, large=large), 'ensemble_choice_results.md',
                a.write)


if __name__ == '__main__':
    main()
