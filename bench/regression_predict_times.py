"""How long the fitted regressor takes to answer for 50,000 new rows: every public way a forecaster reads its
calibrated distributions (atoms, quantiles, expected losses of a newsvendor, intervals), each timed alone, with the
peak memory above the start of the call.

Prints figures; it is not a test and asserts nothing.  Usage:

    python bench/regression_predict_times.py            # flights, 20,000 calibration rows, 50,000 new rows
    python bench/regression_predict_times.py --write    # and writes bench/regression_predict_times_results.md

The set-up is one split of bench/regression_large.py (seed 0): the flights data, a gradient-boosted model fitted on
50,000 rows and frozen, DecisionCalibratedRegressor with its defaults fitted on 20,000 calibration rows (flights:
ten features, so the normalized start's neighbours are searched at every call).  Each call is made once to warm
up (Numba's compilation is not the call's time), then timed --repeats times; the table shows the median and the
largest.  The newsvendor: 9 orders (the calibration y's deciles), a unit short costs 3, a unit left over 1.
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
from _measure import machine_info, emit_record, reset_hwm, rss_bytes, hwm_bytes   # noqa: E402
from _measure import table                                                         # noqa: E402
from _data import REG_LARGE_DATASETS as DATASETS                                  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--n-cal', type=int, default=20000)
    ap.add_argument('--n-new', type=int, default=50000)
    ap.add_argument('--repeats', type=int, default=3)
    ap.add_argument('--write', action='store_true')
    ap.add_argument('--out', default='regression_predict_times_results.md')
    a = ap.parse_args(argv)
    from sklearn.frozen import FrozenEstimator
    from deccal.estimators import DecisionCalibratedRegressor
    from deccal.losses import newsvendor_loss
    loader, _, make_base, _ = DATASETS['flights']
    X, y, cat = loader()
    idx = np.random.default_rng(0).permutation(len(y))
    tr, ca, te = idx[:50000], idx[50000:50000 + a.n_cal], idx[50000 + a.n_cal:50000 + a.n_cal + a.n_new]
    base = make_base(cat).fit(X[tr], y[tr])
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        est = DecisionCalibratedRegressor(FrozenEstimator(base)).fit(X[ca], y[ca])
    fit_s = time.perf_counter() - t0
    Xn = X[te]
    nv = newsvendor_loss(3.0, 1.0, np.quantile(y[ca], np.arange(1, 10) / 10))
    calls = {'predict_distribution(X)': lambda: est.predict_distribution(Xn),
             'predict_quantiles(X, [0.1, 0.5, 0.9])': lambda: est.predict_quantiles(Xn, [0.1, 0.5, 0.9]),
             'predict_loss(X, newsvendor of 9 orders)': lambda: est.predict_loss(Xn, nv),
             'predict_action(X, newsvendor of 9 orders)': lambda: est.predict_action(Xn, nv),
             'predict_interval(X, 0.1)': lambda: est.predict_interval(Xn, 0.1),
             'predict(X) (the calibrated mean)': lambda: est.predict(Xn)}
    rows, blob = [], dict(n_cal=a.n_cal, n_new=len(te), fit_s=fit_s, start=est.start_, calls={})
    for name, f in calls.items():
        f()                                                     # warm-up
        secs, peaks = [], []
        for _ in range(a.repeats):
            ok, rss0 = reset_hwm(), rss_bytes()
            t0 = time.perf_counter(); f(); secs.append(time.perf_counter() - t0)
            peaks.append((hwm_bytes() - rss0) / 1e6 if ok else float('nan'))
        blob['calls'][name] = dict(seconds=secs, peak_mb=peaks)
        rows.append([name, f"{np.median(secs):.2f}", f"{max(secs):.2f}", f"{max(peaks):.0f}"])
        print(f"{name}: {np.median(secs):.2f} s (max {max(secs):.2f}), peak {max(peaks):.0f} MB", file=sys.stderr)
    lines = ["# The regressor's answers for 50,000 new rows: seconds and memory", '',
             machine_info(('estimators.py', 'start_distributions.py', 'embedding.py')), '',
             f"Produced by `python bench/regression_predict_times.py{' --write' if a.write else ''}`. flights, "
             f"{a.n_cal:,} calibration rows (fit {fit_s:.1f} s, start {est.start_!r}), {len(te):,} new rows, "
             f"{a.repeats} timed calls each after a warm-up. What the set-up is: the docstring of the script.", '',
             *table(rows, ['call', 'median s', 'largest s', 'peak MB above the call\'s start']), '']
    emit_record(lines, blob, a.out, a.write)


if __name__ == '__main__':
    main()
