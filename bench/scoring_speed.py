"""Benchmark: how fast the default classifier scores new rows, against its base model and temperature scaling,
and how long its default fit takes and where that time goes.

Prints figures; it is not a test and asserts nothing about time.  Usage:

    python bench/scoring_speed.py --quick            # a smoke run: 6 classes, 20,000 scored rows
    python bench/scoring_speed.py --write            # the full run, writes bench/scoring_speed_results.md
    python bench/scoring_speed.py --fit-only --classes 6 --fit-rows 10000   # the fit alone: its wall, where it goes

The problem: make_classification (20 features, 10 informative, one cluster per class) with C = 2, 6, 10 and 50
classes; a GaussianNB fitted on 5,000 other rows (10,000 at 50 classes), frozen; DecisionCalibratedClassifier with
its defaults fitted on 10,000 calibration rows; 200,000 new rows scored.  Scoring: `predict_proba`,
`predict_action` and `predict_loss` with a 4 x C cost matrix (at 6 classes also `predict_proba` computed as before
the feature-space replay, the rounds replayed in the RKHS, and the largest difference between the two on 20,000
rows), against the base model's own `predict_proba` and
scikit-learn's temperature scaling (CalibratedClassifierCV(FrozenEstimator(base), method='temperature')), each the
median of 3 timed calls after a warm-up, with Numba's threads set to 1 and to 2 (the base model and scikit-learn
run as they do; BLAS with one thread).  MCGrad is not run here (it needs torch); its documentation reports over a
million predictions a second, the figure the rows-per-second column can be read against.

Fit: the default fit's wall time against the calibration rows (1,000 to 100,000 at 6 classes), with a cProfile
breakdown of the largest: the audit's search for each round's rule (`search_rule`: L-BFGS over the rule's
parameters), the first stage's selection, the segment search, and the rest; and the same breakdown at 50 classes
(10,000 rows).
"""
from __future__ import annotations
import os
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults('OMP_WAIT_POLICY', 'OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS')
import argparse, cProfile, pstats, sys, time, warnings
import numpy as np
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
# the thread settings this script had when it imported bench/skeptic.py or bench/sklearn_calibration.py here
# (for the libraries loaded from here on: scipy's OpenBLAS, scikit-learn's OpenMP)
thread_defaults()
from _measure import machine_info, emit_record, loadavg, table               # noqa: E402


def problem(C:int, n_cal:int, n_new:int, seed:int=0):
    "A frozen GaussianNB on C classes, its calibration rows and new rows."
    from sklearn.datasets import make_classification
    from sklearn.naive_bayes import GaussianNB
    n_train = 10_000 if C > 10 else 5_000
    X, y = make_classification(n_samples=n_train + n_cal + n_new, n_features=20, n_informative=10, n_classes=C,
                               n_clusters_per_class=1, random_state=seed)
    base = GaussianNB().fit(X[:n_train], y[:n_train])
    return base, X[n_train:n_train + n_cal], y[n_train:n_train + n_cal], X[n_train + n_cal:]


def fit_default(base, X, y):
    "The default DecisionCalibratedClassifier on (X, y), and its wall time."
    from sklearn.frozen import FrozenEstimator
    from deccal.estimators import DecisionCalibratedClassifier
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        est = DecisionCalibratedClassifier(FrozenEstimator(base)).fit(X, y)
    return est, time.perf_counter() - t0


def timed(f, repeats:int) -> float:
    "The median wall time of `repeats` calls of f after one warm-up call."
    f()
    secs = []
    for _ in range(repeats):
        t0 = time.perf_counter(); f(); secs.append(time.perf_counter() - t0)
    return float(np.median(secs))


def rkhs_proba(est, X):
    """`predict_proba` as it was computed before the feature-space replay: each fold calibrator's rounds replayed in
    the RKHS (`DimFreeDeCal.in_features` switched off), the embeddings averaged, their explicit vectors projected."""
    from deccal.dimfree import DimFreeDeCal
    from deccal.audit import explicit_predictions
    from deccal.classifier import project_simplex_floor
    from deccal.kernels import Linear
    G = est.segments_membership(X)
    P1 = est.start_probabilities(X, G)
    saved = DimFreeDeCal.in_features
    DimFreeDeCal.in_features = lambda self: False
    try: V = explicit_predictions(est.calibrator_.transform(est._embed(P1), G), Linear())
    finally: DimFreeDeCal.in_features = saved
    return project_simplex_floor(V, np.full_like(V, 1.0 / V.shape[1]), est.proba_floor_)


def scoring(C:int, n_cal:int, n_new:int, repeats:int, rkhs:bool=False) -> dict:
    "Seconds of each scoring call at 1 and 2 Numba threads, with the fit's time and what it kept."
    import numba
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator
    base, Xc, yc, Xn = problem(C, n_cal, n_new)
    est, fit_s = fit_default(base, Xc, yc)
    temp = CalibratedClassifierCV(FrozenEstimator(base), method='temperature').fit(Xc, yc)
    M = np.random.default_rng(1).uniform(0, 1, (4, C))
    calls = {'base predict_proba': lambda: base.predict_proba(Xn),
             'temperature predict_proba': lambda: temp.predict_proba(Xn),
             'deccal predict_proba': lambda: est.predict_proba(Xn),
             'deccal predict_action': lambda: est.predict_action(Xn, M),
             'deccal predict_loss': lambda: est.predict_loss(Xn, M)}
    V = est.predict_proba(Xn[:20_000])
    out_same = float(np.abs(V - rkhs_proba(est, Xn[:20_000])).max())
    out = dict(C=C, n_cal=n_cal, n_new=n_new, fit_s=fit_s, first_stage=est.first_stage_.name,
               rounds_kept=int(est.calibrator_.best_round_), members=len(est.calibrator_.members_), seconds={},
               max_diff_rkhs=out_same)
    if rkhs: calls['deccal predict_proba, RKHS replay'] = lambda: rkhs_proba(est, Xn)
    nt = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            out['seconds'][threads] = {nm: timed(f, repeats) for nm, f in calls.items()}
            print(f"C = {C}, {threads} thread(s): " + ', '.join(f"{k} {v:.3f} s" for k, v in
                                                            out['seconds'][threads].items()), file=sys.stderr)
    finally: numba.set_num_threads(nt)
    return out


def fit_breakdown(C:int, n_cal:int) -> dict:
    "The default fit under cProfile: cumulative seconds of its parts."
    base, Xc, yc, _ = problem(C, n_cal, 10)
    prof = cProfile.Profile()
    prof.enable(); est, wall = fit_default(base, Xc, yc); prof.disable()
    st = pstats.Stats(prof).stats
    def cum(fn):                                       # the cumulative time of the functions named fn
        return sum(v[3] for k, v in st.items() if k[2] == fn)
    parts = {'the rounds\' rule search (search_rule: L-BFGS over the rule\'s parameters)': cum('search_rule'),
             'first stage selection (select_first_stage)': cum('select_first_stage'),
             'segment search (segment_effect)': cum('segment_effect')}
    total = cum('fit') and max(v[3] for k, v in st.items() if k[2] == 'fit')
    parts['everything else'] = total - sum(parts.values())
    return dict(C=C, n_cal=n_cal, wall=wall, profiled=total, parts=parts, rounds_kept=int(est.calibrator_.best_round_),
                rounds_run=list(est.calibrator_.rounds_run_))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--classes', default='2,6,10,50')
    ap.add_argument('--fit-rows', default='1000,2000,5000,10000,20000,50000,100000')
    ap.add_argument('--n-new', type=int, default=200_000)
    ap.add_argument('--repeats', type=int, default=3)
    ap.add_argument('--quick', action='store_true', help='6 classes, 20,000 scored rows, fits at 1,000 and 2,000')
    ap.add_argument('--fit-only', action='store_true', help='no scoring: the fits and where their time goes')
    ap.add_argument('--write', action='store_true')
    ap.add_argument('--out', default='scoring_speed_results.md')
    a = ap.parse_args(argv)
    if a.quick: a.classes, a.fit_rows, a.n_new, a.repeats = '6', '1000,2000', 20_000, 1
    classes, fit_rows = [int(c) for c in a.classes.split(',')], [int(n) for n in a.fit_rows.split(',')]
    t0, load0 = time.perf_counter(), loadavg()
    score = [] if a.fit_only else [scoring(C, 10_000 if not a.quick else 2_000, a.n_new, a.repeats, rkhs=C == 6)
                                   for C in classes]
    fits = []
    for n in fit_rows:
        base, Xc, yc, _ = problem(6, n, 10)
        fits.append(dict(n_cal=n, wall=fit_default(base, Xc, yc)[1]))
        print(f"fit at {n:,} rows: {fits[-1]['wall']:.1f} s", file=sys.stderr)
    breakdowns = [fit_breakdown(6, fit_rows[-1])] + [fit_breakdown(C, 10_000) for C in classes if C > 10]
    names = ['base predict_proba', 'temperature predict_proba', 'deccal predict_proba', 'deccal predict_action',
             'deccal predict_loss', 'deccal predict_proba, RKHS replay']
    rows = []
    for s in score:
        for th, secs in s['seconds'].items():
            b = secs['base predict_proba']
            rows.append([str(s['C']), str(th), f"{s['fit_s']:.1f}", f"{s['first_stage']}, {s['rounds_kept']} rounds x "
                         f"{s['members']}"] + [f"{secs[k]:.3f} ({s['n_new'] / secs[k] / 1e3:,.0f}k/s)" if k in secs
                                               else '' for k in names]
                        + [f"{secs['deccal predict_proba'] / b:.1f}x", f"{secs['deccal predict_action'] / b:.1f}x",
                           f"{s['max_diff_rkhs']:.1e}"])
    head = ['classes', 'Numba threads', 'fit s', 'kept'] + [f"{k} s (rows/s)" for k in names] + [
        'predict_proba / base', 'predict_action / base', 'largest difference from the RKHS replay']
    lines = ["# Scoring and fitting speed of the default classifier", '',
             machine_info(('replay.py', 'dimfree.py', 'estimators.py', 'audit.py')), '',
             f"Produced by `python bench/scoring_speed.py{' --quick' if a.quick else ''}"
             f"{' --fit-only' if a.fit_only else ''}{' --write' if a.write else ''}`: "
             f"{time.perf_counter() - t0:.0f} s; load average before {load0}, after {loadavg()}. What the problem and "
             "the calls are: the docstring of the script.", '',
             *([f"## Scoring {a.n_new:,} new rows (median of {a.repeats} calls)", '', *table(rows, head), '']
               if score else []),
             "## The default fit against the calibration rows (6 classes)", '',
             *table([[f"{f['n_cal']:,}", f"{f['wall']:.1f}"] for f in fits], ['calibration rows', 'fit s']), '',
             *[line for B in breakdowns for line in (
                 f"## Where the fit's time goes ({B['C']} classes, {B['n_cal']:,} rows, under cProfile: "
                 f"{B['profiled']:.1f} s; rounds run per fold {B['rounds_run']}, kept {B['rounds_kept']})", '',
                 *table([[k, f"{v:.1f}", f"{v / B['profiled']:.0%}"] for k, v in B['parts'].items()],
                        ['part', 's', 'share']), '')]]
    emit_record(lines, dict(scoring=score, fits=fits, breakdowns=breakdowns, quick=a.quick), a.out, a.write)


if __name__ == '__main__':
    main()
