"""Benchmark: which family of segments finds a planted miscalibration, on held-out data.

Prints figures; it is not a test.  Usage:

    python bench/segment_families.py --write     # 10 seeds of the three problems; writes segment_families_results.md
    python bench/segment_families.py --seeds 2   # a smoke run, nothing written

Data (binary labels): the model's logit z ~ 1.5 N(0, 1), a categorical segment A or B (probability 1/2 each), a
numeric feature u ~ N(0, 1) and a pure-noise numeric feature ~ N(0, 1).  The model is frozen and predicts
P(y = 1) = sigma(z) for every row (bench/_data.py's ZSigmoidModel).  The truth is sigma(s z), with s = 1/2 where the
model is over-confident, s = 2 where it is under-confident, s = 1 elsewhere:

* 'categorical level': over-confident in segment A, under-confident in B (bench/segments.py's problem);
  planted regions A and B.
* 'numeric region': over-confident where u > 0.6, under-confident where u < -0.6 (whatever the segment); planted
  regions u > 0.6 and u < -0.6 (about 27% of the rows each).
* 'level x region': over-confident where segment A and u > 0.6, under-confident where segment B and u > 0.6,
  calibrated elsewhere (about 14% of the rows each): on u > 0.6 the two cancel, so no single column's group is
  miscalibrated one way.
* 'no segment effect': the model is the truth (s = 1 everywhere); the regions of 'level x region' are measured.
  The default should find no effect and give, bit for bit, the fit without segments.

Each seed draws 3,000 calibration and 3,000 test rows.  Predictors, all fitted on the calibration rows: the true
probabilities (what sampling noise alone gives); the model; DecisionCalibratedClassifier(FrozenEstimator(model))
with segments=None; with the categorical column named (its levels: segments=['segment'], what 'auto' took before it
searched numeric columns); with segments='auto' (the default: the levels and a tree on the temperature score, kept
only on cross-fitted evidence, deccal.segment_search); with every column named (the
segment's levels and quartile bins of z, u and noise); and given tree_groups (deccal.segments: every node of a
depth-2 regression tree, nodes of at least 5% of the rows, on all four columns) fitted to a residual of the
calibration rows:

* 'tree on y - p': the model's residual y - p(x).  The model never saw these rows (it is frozen), so its residual
  there is not an in-sample fit; but the groups are chosen on the rows the calibrator is then fitted on (the
  estimator's cross-fitted choice of rounds is the only guard against a group that fits noise).
* 'tree on the witnessed gap': each row's gap for the pair (l, l') that deccal.audit.audit witnesses over every
  calibration row on the model's probabilities (linear kernel, the estimator's n_actions, beta, R1):
  sum_a q_a(x) (l(e_y, a) - l(p(x), a)), q the quantal response of l' (the statistic whose mean the audit
  maximizes).  The same rows, as above.
* 'tree on the temperature score': segments='trees', the categorical levels and the nodes of a tree on
  (y - p(x)) z, z = logit p(x): each row's derivative of the log-likelihood of sigma(z / T) in 1 / T at T = 1, so
  the tree looks for where a different temperature would fit better; it is suited to over- and under-confidence,
  the kind of miscalibration planted here (it does not see a shift of the logit, which y - p does).  The same
  rows, as above, kept without the evidence test.

Metric: Zhao et al.'s evaluation (bench/sklearn_calibration.zhao_gaps, 200 random decision makers with 5 actions,
as bench/segments.py) within each planted region's test rows; 'worst' = the larger of the two regions'; also over
every test row, and the log loss.  Means and standard errors over the seeds; paired differences (per seed) of each
predictor's worst region minus the true probabilities' and minus segments='auto''s.
"""
from __future__ import annotations
import os, sys
import argparse, time, warnings

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
# the thread settings this script had when it imported bench/skeptic.py or bench/sklearn_calibration.py here
# (for the libraries loaded from here on: scipy's OpenBLAS, scikit-learn's OpenMP)
from _threads import thread_defaults
thread_defaults()
from _measure import machine_info, emit_record, mse, paired                         # noqa: E402
from _data import ZSigmoidModel                                        # noqa: E402
from _scores import zhao_gaps                                          # noqa: E402

import pandas as pd                                                    # noqa: E402
from sklearn.frozen import FrozenEstimator                             # noqa: E402
from deccal.kernels import Linear                                      # noqa: E402
from deccal.embedding import Embedding                                 # noqa: E402
from deccal.audit import audit                                         # noqa: E402
from deccal.decisions import quantal_response                          # noqa: E402
from deccal.segments import tree_groups                                  # noqa: E402
from deccal.estimators import DecisionCalibratedClassifier             # noqa: E402

N_CAL, N_TEST, SEEDS = 3000, 3000, 10
PROBLEMS = ('categorical level', 'numeric region', 'level x region', 'no segment effect')
COLUMNS = ['z', 'segment', 'u', 'noise']
METHODS = ('model', 'true probabilities', 'no segments', 'categorical levels', 'every column named',
           'tree on y - p', 'tree on the witnessed gap', 'tree on the temperature score', "segments='auto'")
TREE = dict(max_depth=2, min_share=0.05)


def regions(problem:str, X) -> tuple:
    "The planted regions' masks: (over-confident, under-confident)."
    A, u = np.asarray(X['segment'] == 'A'), np.asarray(X['u'], float)
    if problem == 'categorical level': return A, ~A
    if problem == 'numeric region': return u > 0.6, u < -0.6
    if problem in ('level x region', 'no segment effect'): return A & (u > 0.6), ~A & (u > 0.6)
    raise ValueError(f"problem: unknown {problem!r}")


def planted(problem:str, n:int, seed:int):
    "Features (z, segment, u, noise) as a DataFrame, labels, the true P(y = 1), the planted regions."
    rng = np.random.default_rng(seed)
    z, A = 1.5 * rng.normal(size=n), rng.uniform(size=n) < 0.5
    X = pd.DataFrame(dict(z=z, segment=np.where(A, 'A', 'B'), u=rng.normal(size=n), noise=rng.normal(size=n)))
    over, under = regions(problem, X)
    if problem == 'no segment effect': over, under = np.zeros(n, bool), np.zeros(n, bool)   # the model is the truth
    t = 1 / (1 + np.exp(-np.where(over, 0.5, np.where(under, 2.0, 1.0)) * z))
    over, under = regions(problem, X)
    y = (rng.uniform(size=n) < t).astype(int)
    return X, y, t, (over, under)


def metrics(P, y, reg, costs) -> dict:
    "Zhao et al.'s mean gap within each planted region, the worse of the two, over every row; the log loss."
    g = [float(zhao_gaps(P[m], y[m], costs).mean()) for m in reg]
    ll = float(-np.mean(np.log(np.clip(P[np.arange(len(y)), y], 1e-15, 1))))
    return dict(gap_over=g[0], gap_under=g[1], worst=max(g), overall=float(zhao_gaps(P, y, costs).mean()),
                log_loss=ll)


def witnessed_gap(p, y, n_actions:int, beta:float, R1:float) -> np.ndarray:
    "Each row's gap for the pair the audit witnesses over every row: sum_a q_a(x) (l(e_y, a) - l(p(x), a))."
    P, Y = np.column_stack([1 - p, p]), np.eye(2)[y]
    res = audit(Embedding.from_probs(P), Y, Linear(), n_actions=n_actions, beta=beta, R1=R1, n_starts=4)
    q = quantal_response(res.rule_loss.value(P), beta)
    return (q * (res.loss.value(Y) - res.loss.value(P))).sum(1)


def one_seed(problem:str, seed:int, costs) -> dict:
    "Every predictor on one seed: {method: metrics (and, for deccal, the segments and rounds kept)}."
    Xc, yc, _, _ = planted(problem, N_CAL, 2 * seed)
    Xt, yt, tt, rt = planted(problem, N_TEST, 2 * seed + 1)
    model = FrozenEstimator(ZSigmoidModel().fit(Xc, yc))
    rows = {'model': metrics(model.predict_proba(Xt), yt, rt, costs),
            'true probabilities': metrics(np.column_stack([1 - tt, tt]), yt, rt, costs)}
    pc = model.predict_proba(Xc)[:, 1]
    fits = [('no segments', lambda: None), ('categorical levels', lambda: ['segment']),
            ('every column named', lambda: COLUMNS),
            ('tree on y - p', lambda: tree_groups(Xc, yc - pc, **TREE)),
            ('tree on the witnessed gap', lambda: tree_groups(Xc, witnessed_gap(pc, yc, *rules), **TREE)),
            ('tree on the temperature score', lambda: 'trees'),      # the estimator's segments='trees'
            ("segments='auto'", lambda: 'auto')]                      # the default: 'trees', kept on evidence
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        for name, family in fits:                        # 'no segments' first: its rules serve the audit
            t0 = time.process_time()
            est = DecisionCalibratedClassifier(model, segments=family()).fit(Xc, yc)
            rules = est.n_actions_, est.beta_, est.R1_
            Pt = est.predict_proba(Xt)
            if name == 'no segments': P_none = Pt
            rows[name] = metrics(Pt, yt, rt, costs)
            rows[name].update(cpu_seconds=time.process_time() - t0, kept=float(est.calibrator_.best_round_),
                              segments=est.segment_names_ or [], **overlaps(est.segments_membership(Xt), rt))
            if est.segment_effect_ is not None:              # the default's evidence, and whether it changed anything
                e = est.segment_effect_
                rows[name].update(kept_segments=e.kept, effect_gain=e.gain, effect_se=e.gain_se,
                                  same_as_none=bool(np.array_equal(Pt, P_none)))
    return rows


def summary(per:list, key:str='worst') -> dict:
    "Mean and standard error over seeds of rows[method][key], per method."
    return {m: mse([r[m][key] for r in per]) for m in METHODS}


def overlaps(M, reg) -> dict:
    "For each planted region, the largest Jaccard overlap (on the test rows) of a group of the family with it."
    if M is None: return dict(found_over=0.0, found_under=0.0)
    M = M[:, 1:] > 0
    jac = lambda m: float(max((M & m[:, None]).sum(0) / (M | m[:, None]).sum(0)))
    return dict(found_over=jac(reg[0]), found_under=jac(reg[1]))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument('--seeds', type=int, default=SEEDS)
    ap.add_argument('--write', action='store_true')
    a = ap.parse_args(argv)
    costs = np.random.default_rng(2024).uniform(0, 1, (200, 5, 2))
    t_all, results = time.perf_counter(), {}
    for prob in PROBLEMS:
        per = []
        for s in range(a.seeds):
            per.append(one_seed(prob, s, costs))
            print(f"{prob} seed {s}: " + ', '.join(f"{m} {r['worst']:.4f}" for m, r in per[-1].items()), flush=True)
        results[prob] = per
    seconds = time.perf_counter() - t_all
    lines = ["# Families of segments: which one finds a planted miscalibration, on held-out data", '',
             machine_info(('estimators.py', 'dimfree.py', 'segments.py')), '',
             f"Produced by `python bench/segment_families.py --write`; see the script for the problems and the "
             f"families. {a.seeds} seeds; {N_CAL:,} calibration and {N_TEST:,} test rows each; total {seconds:.0f} s "
             "(a shared machine: not a timing).", '']
    for prob, per in results.items():
        cols = {k: summary(per, k) for k in ('worst', 'gap_over', 'gap_under', 'overall', 'log_loss')}
        lines += [f"## Problem: {prob}", '', '| predictor | worst planted region | over-confident region | '
                  'under-confident region | every row | log loss | worst minus the true probabilities | '
                  "worst minus segments='auto' |", '|---|---|---|---|---|---|---|---|']
        for m in METHODS:
            d, e = paired(per, m, 'true probabilities', 'worst'), paired(per, m, "segments='auto'", 'worst')
            lines.append(f"| {m} | " + ' | '.join(f"{cols[k][m][0]:.4f} ± {cols[k][m][1]:.4f}" for k in cols)
                         + f" | {d[0]:+.4f} ± {d[1]:.4f} | {e[0]:+.4f} ± {e[1]:.4f} |")
        found = {m: [min(r[m]['found_over'], r[m]['found_under']) for r in per] for m in METHODS[3:]}
        kept = [r["segments='auto'"]['kept_segments'] for r in per]
        same = [r["segments='auto'"]['same_as_none'] for r in per]
        lines += ['', f"segments='auto' kept its family on {sum(kept)} of {len(kept)} seeds; where not kept, its "
                  f"predictions equal segments=None's bit for bit on {sum(s for s, k in zip(same, kept) if not k)} "
                  f"of {len(kept) - sum(kept)}."]
        lines += ['', "How well each family holds the planted regions (per seed, the worse region's largest Jaccard "
                  "overlap of a group with it, on the test rows; mean, and seeds at least 0.8): " +
                  ', '.join(f"{m} {np.mean(v):.2f} ({sum(x >= 0.8 for x in v)}/{len(v)})" for m, v in found.items())
                  + '.', '']
    blob = dict(seeds=a.seeds, n_cal=N_CAL, n_test=N_TEST, seconds=seconds, tree=TREE, problems=results)
    emit_record(lines, blob, 'segment_families_results.md', a.write)


if __name__ == '__main__':
    main()
