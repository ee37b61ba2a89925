"""Benchmark: DimFreeDeCal against ZhaoDeCal - held-out decision calibration error against calibration samples.

Prints figures; it is not a test.  Usage:

    python bench/zhao_vs_dimfree.py            # the whole grid, 3 seeds (a few minutes on one busy core)
    python bench/zhao_vs_dimfree.py --write    # ... and writes bench/zhao_vs_dimfree_results.md

The problem (the one of nbs/09b_on_new_data.ipynb's side-by-side section): x ~ U[-1, 1]^2, point forecasts 0.6 x,
outcomes x + 0.3 N(0, I_2); RBF(1.0), 3 actions, beta = 5, R1 = 1.  For each eps in (0.1, 0.05, 0.025) and n in
(100, 200, 400, 800, 1600) and each seed s: a calibration sample of n points, DimFreeDeCal (line search) and
ZhaoDeCal (lambda = 1) fitted on it with the paper's in-sample stopping rule (early_stopping=False,
sample='reuse') and max_rounds = 60.
Measured: the held-out decision calibration error of each output - a fresh audit of the calibrated predictions on
2,000 new points finds the worst pair (l, l'), which is re-measured on 4,000 others (`audit(..., holdout=...)`):
an unbiased estimate of that pair's error, with its standard error; a lower bound on decCE over the class, not an
upper one.  Also the rounds run and `stop_reason_` ('target': the audit value reached 3 eps / 4; 'max_rounds':
truncated).  The two fresh samples from np.random.default_rng(5), shared by every run; the calibration sample of
(s, n) from np.random.default_rng([s, n]), the same for every eps.
"""
from __future__ import annotations
import os
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults('OMP_WAIT_POLICY', 'OPENBLAS_NUM_THREADS')
import argparse, json, sys, time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
from _measure import machine_info   # noqa: E402

from deccal import Embedding, DimFreeDeCal, ZhaoDeCal, RBF, audit   # noqa: E402

K, A, BETA, R1 = RBF(1.0), 3, 5.0, 1.0


def make(n, rng, d=2, shrink=0.6, noise=0.3):
    x = rng.uniform(-1, 1, (n, d))
    return Embedding.from_points(shrink * x), x + noise * rng.normal(size=(n, d))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--n', default='100,200,400,800,1600')
    ap.add_argument('--eps', default='0.1,0.05,0.025')
    ap.add_argument('--seeds', type=int, default=3)
    ap.add_argument('--write', action='store_true')
    a = ap.parse_args()
    t0 = time.perf_counter()
    rng = np.random.default_rng(5)
    (pa, ya), (pb, yb) = make(2000, rng), make(4000, rng)
    def heldout(cal=None):
        tr = (lambda q: cal.transform(q)) if cal is not None else (lambda q: q)
        r = audit(tr(pa), ya, kernel=K, n_actions=A, beta=BETA, R1=R1, n_starts=2, max_iter=100, holdout=(tr(pb), yb))
        return r.holdout_value, r.holdout_se
    base = heldout()
    rows = []
    for eps in [float(v) for v in a.eps.split(',')]:
        for n, s in [(int(v), s) for v in a.n.split(',') for s in range(a.seeds)]:
            p_n, y_n = make(n, np.random.default_rng([s, n]))
            for cls, kw in ((DimFreeDeCal, dict(step='line-search')), (ZhaoDeCal, {})):
                c = cls(kernel=K, n_actions=A, beta=BETA, R1=R1, eps=eps, max_rounds=60, early_stopping=False,
                        **kw).fit(p_n, y_n)
                v, se = heldout(c)
                rows.append(dict(calibrator=cls.__name__, eps=eps, n=n, seed=s, rounds=len(c.rounds_),
                                 stop=c.stop_reason_, heldout=v, se=se))
                print(f"{cls.__name__:12s} eps={eps:<6g} n={n:<5d} seed={s} rounds={len(c.rounds_):<3d} "
                      f"({c.stop_reason_}) held-out {v:.4f} (se {se:.4f})  [{time.perf_counter() - t0:.0f} s]",
                      flush=True)
    out = dict(base=dict(heldout=base[0], se=base[1]), rows=rows)
    text = '\n'.join([
        "# DimFreeDeCal against ZhaoDeCal: held-out decision calibration error against calibration samples", '',
        machine_info(('dimfree.py', 'zhao.py')), '',
        f"Produced by `python bench/zhao_vs_dimfree.py --write` ({time.perf_counter() - t0:.0f} s). The problem and "
        "the measure are described in the script's docstring.", '',
        '```json', json.dumps(out), '```'])
    if a.write:
        with open(os.path.join(REPO, 'bench', 'zhao_vs_dimfree_results.md'), 'w') as f: f.write(text + '\n')
    else: print(text[:2000])


if __name__ == '__main__':
    main()
