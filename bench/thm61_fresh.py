"""Benchmark: Theorem 6.1 on fresh data - DimFreeDeCal's output, measured on the population by brute force.

Prints figures; it is not a test.  Usage:

    python bench/thm61_fresh.py            # every row, 30 seeds each (a few minutes on one busy core)
    python bench/thm61_fresh.py --write    # ... and writes bench/thm61_fresh_results.md
    python bench/thm61_fresh.py --nt 10,25 --seeds 5     # a part

The problem (the one of nbs/09b_on_new_data.ipynb, small enough for a brute force): the linear kernel on R^2
(phi(y) = y), two actions, beta = 5, R1 = 1, x ~ U[-1, 1]^2, y = x + U[-0.3, 0.3]^2 noise, base predictor
p0(x) = 0.6 x.  With two actions the quantal response of a rule l' depends only on w = r_l'(0) - r_l'(1), a point of
the disk of radius 2 R1, and the best l for a rule is closed form, so the population decision calibration error is

    decCE(p) = max_{||w|| <= 2 R1} R1 sum_a || E[(E[y|x] - p(x)) k_a(x)] ||,   E[y|x] = x,

with the expectation by the midpoint rule on a 100 x 100 grid of x and the maximum over a grid of the disk, refined
by Nelder-Mead from the three best grid points.  The population square loss is E||p(x) - y||^2 =
E||p(x) - x||^2 + 2 * 0.6^2 / 12 (the noise's variance), the first term on the same grid.

Each run: DimFreeDeCal(Linear(), n_actions=2, beta=5, R1=1, eps=0.05, step='theory', sample=SAMPLE,
max_rounds=25, early_stopping=False, seed=s) on 25 * n_t points drawn with np.random.default_rng(s); with
sample='split' each of the 25 rounds audits its own part of n_t points, with 'reuse' every round audits the whole
sample (above search_max = 20,000 rows: the basis and each round's search on 20,000 random rows, the patch
statistics on every row).  Recorded per run: the output's population decCE and square loss, the rounds run and
`stop_reason_` ('target': the audit value reached 3 eps / 4, the algorithm's own ending; 'max_rounds': truncated
after 25 rounds).
"""
from __future__ import annotations
import os
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults('OMP_WAIT_POLICY', 'OPENBLAS_NUM_THREADS')
import argparse, json, sys, time

import numpy as np
import scipy.optimize, scipy.special

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
from _measure import machine_info   # noqa: E402

from deccal import Embedding, DimFreeDeCal, Linear, explicit_predictions   # noqa: E402

B_T, R1_T, EPS, PARTS = 5.0, 1.0, 0.05, 25
NOISE_VAR = 2 * 0.6**2 / 12                                  # E||y - x||^2 for U[-0.3, 0.3]^2 noise
_g = (np.arange(100) + 0.5) / 100 * 2 - 1
XG = np.stack(np.meshgrid(_g, _g), -1).reshape(-1, 2)        # midpoint rule over x ~ U[-1, 1]^2


def lin_sample(n, rng):
    "n draws of the problem: base predictions (an Embedding) and outcomes."
    x = rng.uniform(-1, 1, (n, 2))
    return Embedding.from_points(0.6 * x), x + rng.uniform(-0.3, 0.3, (n, 2))


def population_decce(P, X=XG, beta=B_T, R1=R1_T):
    "decCE of predictions P (on the grid X of contexts, E[y|x] = x) over the linear loss class with two actions."
    def value(W):
        K0 = scipy.special.expit(-beta * P @ np.atleast_2d(W).T); r = X - P
        G0 = r.T @ K0 / len(X); G1 = r.mean(0)[:, None] - G0
        return R1 * (np.linalg.norm(G0, axis=0) + np.linalg.norm(G1, axis=0))
    t = np.linspace(-2 * R1, 2 * R1, 41)
    W = np.stack(np.meshgrid(t, t), -1).reshape(-1, 2); W = W[np.linalg.norm(W, axis=1) <= 2 * R1]
    vals = value(W); best = vals.max()
    for i in np.argsort(vals)[-3:]:
        r = scipy.optimize.minimize(lambda w: -value(w)[0] if np.linalg.norm(w) <= 2 * R1 else 0.0, W[i],
                                    method='Nelder-Mead', options=dict(xatol=1e-5, fatol=1e-8))
        best = max(best, -r.fun)
    return float(best)


def run(n_t, sample, seed):
    "One fit; returns the output's population decCE and square loss, the rounds run and the stop reason."
    p_, y_ = lin_sample(PARTS * n_t, np.random.default_rng(seed))
    c = DimFreeDeCal(Linear(), n_actions=2, beta=B_T, R1=R1_T, eps=EPS, step='theory', sample=sample,
                     max_rounds=PARTS, early_stopping=False, seed=seed).fit(p_, y_)
    P = explicit_predictions(c.transform(Embedding.from_points(0.6 * XG)), Linear())
    return dict(decce=population_decce(P), sq=float(((P - XG)**2).sum(1).mean() + NOISE_VAR),
                rounds=len(c.rounds_), stop=c.stop_reason_)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--nt', default='10,25,100,400,4000')
    ap.add_argument('--seeds', type=int, default=30)
    ap.add_argument('--write', action='store_true')
    a = ap.parse_args()
    t_start = time.perf_counter()
    base = dict(decce=population_decce(0.6 * XG), sq=float(((0.6 * XG - XG)**2).sum(1).mean() + NOISE_VAR))
    rows = []
    for n_t in [int(v) for v in a.nt.split(',')]:
        for sample in ('split', 'reuse'):
            runs = [run(n_t, sample, s) for s in range(a.seeds)]
            row = dict(n_t=n_t, n=PARTS * n_t, sample=sample, seeds=a.seeds,
                       **{k: [r[k] for r in runs] for k in ('decce', 'sq', 'rounds', 'stop')})
            rows.append(row)
            v = np.array(row['decce'])
            print(f"n_t = {n_t:5d} {sample:5s}: decCE median {np.median(v):.4f}, share <= eps {np.mean(v <= EPS):.2f}; "
                  f"stopped by target {row['stop'].count('target')} of {a.seeds}  "
                  f"[{time.perf_counter() - t_start:.0f} s]", flush=True)
    out = dict(eps=EPS, parts=PARTS, beta=B_T, R1=R1_T, base=base, rows=rows)
    text = '\n'.join([
        "# Theorem 6.1 on fresh data: DimFreeDeCal's output on the population (brute force)", '',
        machine_info(('dimfree.py',)), '',
        f"Produced by `python bench/thm61_fresh.py --write` ({time.perf_counter() - t_start:.0f} s). "
        "The problem and the runs are described in the script's docstring; per run: the output's population decCE "
        "and square loss, rounds run, stop reason.", '',
        '```json', json.dumps(out), '```'])
    if a.write:
        with open(os.path.join(REPO, 'bench', 'thm61_fresh_results.md'), 'w') as f: f.write(text + '\n')
    else: print(text[:2000])


if __name__ == '__main__':
    main()
