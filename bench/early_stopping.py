r"""Benchmark: how well early stopping on held-out data picks the round to keep, on four problems.

Prints figures; it is not a test.  Usage:

    python bench/early_stopping.py            # prints the tables
    python bench/early_stopping.py --write    # ... and writes bench/early_stopping_results.md
    python bench/early_stopping.py --cases planted,cobb --fractions 0.2
    python bench/early_stopping.py --cases newsvendor,cobb,digits --fractions 0.2 --write \
        --out early_stopping_results_tutorials.md

For each problem and each `validation_fraction`, DimFreeDeCal (line search, at most 30 rounds) is run with
early stopping but no patience (`n_iter_no_change=1000`), so that every round up to 30 is run on the same
fitting part; the calibrator truncated after each round T is then scored on **fresh data**: the auditor
searches a fresh sample for the worst pair and the pair is re-measured on a second fresh sample (the
"fresh gap", with its standard error). A patience p is replayed from the recorded held-out square losses
(early stopping depends only on the rounds before it stops), giving the round the rule keeps; it is checked
against a real fit with that patience. Beside it: the rule without a held-out part (`early_stopping=False`:
stop when the in-sample audit value is at most 3 eps / 4, as the paper's algorithm does), on the whole sample.

Problems (the notebooks' examples): planted (RBF, point forecasts that shrink the truth by 0.7, n = 200,
eps = 0.04), newsvendor (min kernel, 8 forecast quantiles, n = 400, eps = 0.02), Cobb-Douglas (exp inner
kernel, d = 4 goods, 4 forecast draws, n = 200, eps = 0.02), digits (linear kernel on a logistic
regression's probabilities, 400 calibration images, eps = 0.01; fresh data: the 400 + 397 images the
classifier and the calibrator never saw). Fresh data: 2,000 + 4,000 points for the planted problem, 1,000 + 3,000
for the newsvendor and Cobb-Douglas ones (their predictions are samples, and an audit costs more).
"""
from __future__ import annotations
import os
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults('OMP_WAIT_POLICY', 'OPENBLAS_NUM_THREADS')
import argparse, sys, time

import numpy as np
import scipy.special, scipy.stats

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
from _measure import machine_info   # noqa: E402

import deccal                         # noqa: E402
from deccal import Embedding, DimFreeDeCal, ZhaoDeCal, audit   # noqa: E402

MAX_ROUNDS = 30


def planted():
    rng = np.random.default_rng(0)
    def make(n, d=3, shrink=0.7, noise=0.3):
        x = rng.uniform(-1, 1, (n, d)); return Embedding.from_points(shrink * x), x + noise * rng.normal(size=(n, d))
    kw = dict(kernel=deccal.RBF(0.5), n_actions=4, beta=10.0, R1=1.0)
    return make(200), make(2000), make(4000), kw, 0.04


def newsvendor():
    floor, B = 0.2, 8
    levels = (np.arange(B) + 0.5) / B
    def days(n, seed):
        rng = np.random.default_rng(seed); x = rng.uniform(0, 1, n); m = 0.25 + 0.5 * x
        y = floor + (1 - floor) * rng.beta(8 * m, 8 * (1 - m))
        S = floor + (1 - floor) * scipy.stats.beta.ppf(levels, 40 * m[:, None], 40 * (1 - m[:, None]))
        return Embedding.from_samples(S), y[:, None]
    kw = dict(kernel=deccal.MinKernel(), n_actions=4, beta=20.0, R1=1.5, R2=1.0)
    return days(400, 1), days(1000, 2), days(3000, 3), kw, 0.02


def cobb():
    def consumers(n, d, seed, B=4):
        rng = np.random.default_rng(seed); s = 1 / np.sqrt(d - 1)
        lo, hi = np.zeros(d), np.r_[0.8, np.full(d - 1, 0.6 * s)]
        mu = np.c_[rng.uniform(0.2, 0.6, n), rng.uniform(0, 0.6 * s, (n, d - 1))]
        sd = np.r_[0.1, np.full(d - 1, 0.1 * s)]
        Y = np.clip(mu + sd * rng.normal(size=(n, d)), lo, hi)
        S = np.clip(mu[:, None, :] + np.r_[0.15, np.zeros(d - 1)] + 0.4 * sd * rng.normal(size=(n, B, d)), lo, hi)
        return Embedding.from_samples(S), Y
    kw = dict(kernel=deccal.ExpInner(), n_actions=4, beta=20.0, R1=np.sqrt(np.e), R2=np.sqrt(np.e))
    return consumers(200, 4, 1), consumers(1000, 4, 2), consumers(3000, 4, 3), kw, 0.02


def digits():
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    X, t = load_digits(return_X_y=True); X = X / 16.0
    perm = np.random.default_rng(0).permutation(len(t)); tr, ca, au, te = np.split(perm, [500, 900, 1300])
    P = scipy.special.softmax(LogisticRegression(C=1e4, max_iter=5000).fit(X[tr], t[tr]).decision_function(X), axis=1)
    Y = np.eye(10)[t]; emb = lambda ix: Embedding.from_probs(P[ix], np.eye(10))
    kw = dict(kernel=deccal.Linear(), n_actions=5, beta=20.0, R1=2.5)
    return (emb(ca), Y[ca]), (emb(au), Y[au]), (emb(te), Y[te]), kw, 0.01


CASES = dict(planted=planted, newsvendor=newsvendor, cobb=cobb, digits=digits)


def fresh_gap(cal, F1, F2, kw):
    "The worst pair the auditor finds on F1, re-measured on F2: (value, standard error)."
    r = audit(cal.transform(F1[0]), F1[1], holdout=(cal.transform(F2[0]), F2[1]), n_starts=4, **kw)
    return r.holdout_value, r.holdout_se


def replay(hl, patience):
    "The round early stopping with this patience keeps, and the last round it runs, from held-out square losses."
    for t in range(len(hl)):
        if t - int(np.argmin(hl[:t + 1])) >= patience: return int(np.argmin(hl[:t + 1])), t
    return int(np.argmin(hl)), len(hl) - 1


def run(case, fractions, patiences, cls):
    (p, Y), F1, F2, kw, eps = CASES[case]()
    step = dict(step='line-search') if cls is DimFreeDeCal else {}     # ZhaoDeCal's patch has no step size
    fit_kw = dict(eps=eps, max_rounds=MAX_ROUNDS, **step, **kw)
    rows = []
    t0 = time.perf_counter()
    insample = cls(early_stopping=False, **fit_kw).fit(p, Y)
    g_in = fresh_gap(insample, F1, F2, kw)
    for vf in fractions:
        long = cls(n_iter_no_change=1000, validation_fraction=vf, **fit_kw).fit(p, Y)
        hl = np.array([h['holdout_square_loss'] for h in long.history_])
        gaps = np.array([fresh_gap(long.truncated(T), F1, F2, kw) for T in range(len(long.all_rounds_) + 1)])
        b = int(np.argmin(gaps[:, 0]))
        for pat in patiences:
            k, last = replay(hl, pat)
            real = cls(n_iter_no_change=pat, validation_fraction=vf, **fit_kw).fit(p, Y)
            assert real.best_round_ == k, (case, vf, pat, real.best_round_, k)
            z = (gaps[k, 0] - gaps[b, 0]) / np.hypot(gaps[k, 1], gaps[b, 1])
            rows.append(dict(case=case, vf=vf, patience=pat, kept=k, last=last, gap=gaps[k], best_T=b, best=gaps[b],
                             z=z, gap_last=gaps[last], round0=gaps[0], in_rounds=len(insample.rounds_), in_gap=g_in,
                             eps=eps, n=p.n, curve=gaps))
    return rows, time.perf_counter() - t0


def table(rows):
    out = ["| problem | n | eps | validation | patience | kept round (of run) | fresh gap kept | best round: fresh gap "
           "| kept - best | fresh gap, last round run | round 0 | in-sample rule: rounds, fresh gap |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['case']} | {r['n']} | {r['eps']} | {r['vf']:.0%} | {r['patience']} | {r['kept']} (of "
                   f"{r['last']}) | {r['gap'][0]:.4f} ± {r['gap'][1]:.4f} | {r['best_T']}: {r['best'][0]:.4f} ± "
                   f"{r['best'][1]:.4f} | {r['z']:+.1f} se | {r['gap_last'][0]:.4f} | {r['round0'][0]:.4f} | "
                   f"{r['in_rounds']}, {r['in_gap'][0]:.4f} ± {r['in_gap'][1]:.4f} |")
    return '\n'.join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--cases', default='planted,newsvendor,cobb,digits')
    ap.add_argument('--fractions', default='0.1,0.2,0.3')
    ap.add_argument('--patiences', default='3,5,10')
    ap.add_argument('--zhao', action='store_true', help='ZhaoDeCal instead of DimFreeDeCal')
    ap.add_argument('--write', action='store_true')
    ap.add_argument('--out', default=None, help='results file name in bench/ (default: '
                                                'early_stopping[_zhao]_results.md)')
    a = ap.parse_args()
    cls = ZhaoDeCal if a.zhao else DimFreeDeCal
    fr = [float(v) for v in a.fractions.split(',')]; pa = [int(v) for v in a.patiences.split(',')]
    lines = [f"# {cls.__name__}: early stopping on four problems", '', machine_info(('dimfree.py',)), '']
    allrows = []
    for case in a.cases.split(','):
        rows, secs = run(case, fr, pa, cls)
        allrows += rows
        print(f"{case}: {secs:.0f} s", flush=True)
        print(table(rows), flush=True)
        curve = rows[0]['curve']
        lines.append(f"{case}: fresh gap per round (validation {rows[0]['vf']:.0%}): "
                     + ' '.join(f"{v:.3f}" for v in curve[:, 0]))
    lines += ['', table(allrows)]
    text = '\n'.join(lines)
    print(text)
    if a.write:
        name = a.out or ('early_stopping_zhao_results.md' if a.zhao else 'early_stopping_results.md')
        with open(os.path.join(REPO, 'bench', name), 'w') as f: f.write(text + '\n')


if __name__ == '__main__':
    main()
