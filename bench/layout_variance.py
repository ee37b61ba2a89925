"""Benchmark: does DecisionCalibratedClassifier give the same predictions for the same data in different layouts?

Prints figures; it is not a test.  Usage:

    python bench/layout_variance.py                 # prints the tables (3 splits)
    python bench/layout_variance.py --write         # ... and writes bench/layout_variance_results.md
    python bench/layout_variance.py --seeds 1 --sets breast_cancer_nb --modes frozen --paths defaults   # a quick look

The same numbers, laid out differently, should give predictions equal up to rounding; at the least, any difference
should be far below the noise of the held-out measure.  Variants of the features X (the same transformation applied
to every X the fit and the predictions see): 'array' (C-ordered float64, the reference), 'array again' (a second fit
of the same array: run-to-run determinism), 'DataFrame' (pandas, string column names), 'CSR' (scipy.sparse; only for
LogisticRegression, GaussianNB refuses sparse input), 'Fortran' (np.asfortranarray), 'x (1 + 1e-15)' (every entry
times 1 + 1e-15: a few ulps), '2 OpenBLAS threads' (the array, fit and predictions inside
threadpoolctl.threadpool_limits(2, 'blas'); every other variant runs with 1 thread).

Settings: digits + StandardScaler(with_mean=False) + LogisticRegression (with_mean=False so that the same pipeline
takes the CSR matrix), breast_cancer + GaussianNB.  Modes: 'frozen' = the base model fitted once on the array's
40% training part, wrapped in FrozenEstimator, the calibrator fitted on 30% (bench/sklearn_calibration.split);
'cv=5' = the unfitted base model, DecisionCalibratedClassifier(model, cv=5) fitted on the training and calibration
parts together (70%: out-of-fold probabilities on 5 folds, then the model refitted on all of them).  Both are tested
on the same 30% test part.  Paths: 'defaults' (n_folds=5, learning_rate=0.5, first_stage='auto', ...) and 'old'
(n_folds=None, first_stage=None, learning_rate=1.0: one validation split, no first stage, no shrinkage, as before the
cross-fitting).  Every fit: costs = the 200 evaluation cost matrices, random_state=0.

Figures per variant: max |predict_proba - the array's| and max |calibrated_vectors - the array's| over the test
rows; rounds kept (calibrator_.best_round_); the first stage chosen; proba_floor_; the test mean gap (Zhao et al.'s
evaluation, bench/sklearn_calibration.zhao_gaps, 200 decision makers with A = 5) and its difference from the
array's; beside them the noise of the held-out measure: the standard error of the array's mean gap over a
bootstrap of the test rows (500 resamples; the decisions fixed, the rows redrawn), and over the decision makers
(the sd of the 200 gaps / sqrt(200)).
"""
from __future__ import annotations
import os
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults('OMP_WAIT_POLICY', 'OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS')
import argparse, contextlib, json, sys, time, warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp
from threadpoolctl import threadpool_limits, threadpool_info

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
from _measure import machine_info                                     # noqa: E402
from _data import sklearn_datasets, split, random_costs                # noqa: E402

from sklearn.base import clone                                        # noqa: E402
from sklearn.frozen import FrozenEstimator                             # noqa: E402
from sklearn.linear_model import LogisticRegression                    # noqa: E402
from sklearn.naive_bayes import GaussianNB                             # noqa: E402
from sklearn.pipeline import make_pipeline                             # noqa: E402
from sklearn.preprocessing import StandardScaler                       # noqa: E402

from deccal.estimators import DecisionCalibratedClassifier            # noqa: E402

SETS = {   # name: (data set, base model's label, base model, takes sparse input)
    'digits_nb': ('digits', 'GaussianNB', GaussianNB, False),   # extra: a setting where the defaults keep rounds
    'digits_lr': ('digits', 'LogisticRegression (StandardScaler(with_mean=False))',
                  lambda: make_pipeline(StandardScaler(with_mean=False), LogisticRegression(max_iter=2000)), True),
    'breast_cancer_nb': ('breast_cancer', 'GaussianNB', GaussianNB, False),
}
PATHS = {'defaults': {}, 'old': dict(n_folds=None, first_stage=None, learning_rate=1.0)}
MODES = ('frozen', 'cv=5')
VARIANTS = ('array', 'array again', 'DataFrame', 'CSR', 'Fortran', 'x (1 + 1e-15)', '2 OpenBLAS threads')


def layout(X, variant):
    "X in the variant's layout."
    if variant == 'DataFrame': return pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    if variant == 'CSR': return sp.csr_matrix(X)
    if variant == 'Fortran': return np.asfortranarray(X)
    if variant == 'x (1 + 1e-15)': return X * (1 + 1e-15)
    return np.ascontiguousarray(X)


def gap_terms(V, y, costs):
    "(K, n): realized minus predicted cost of each decision maker's best response on each row (zhao_gaps' terms)."
    F = np.einsum('ic,kac->kia', V, costs)
    choice = F.argmin(2)
    pred = np.take_along_axis(F, choice[:, :, None], 2)[:, :, 0]
    return costs[np.arange(len(costs))[:, None], choice, y[None, :]] - pred


def gap_noise(D, B=500, seed=0):
    "(mean gap, its se over a bootstrap of the test rows, its se over the decision makers) from gap_terms D."
    g = np.abs(D.mean(1))
    rng = np.random.default_rng(seed)
    n = D.shape[1]
    boot = [np.abs(D[:, rng.integers(0, n, n)].mean(1)).mean() for _ in range(B)]
    return float(g.mean()), float(np.std(boot, ddof=1)), float(g.std(ddof=1) / np.sqrt(len(g)))


def fit_variant(set_name, mode, path, variant, X, y, seed, costs, frozen_base):
    "Fit one variant; returns (predict_proba, calibrated_vectors, facts) on the test part."
    tr, ca, te = split(y, seed)
    fit_rows = ca if mode == 'frozen' else np.concatenate([tr, ca])
    est = FrozenEstimator(frozen_base) if mode == 'frozen' else clone(SETS[set_name][2]())
    if mode == 'cv=5': kw = dict(cv=5)
    else: kw = {}
    Xf, Xt = layout(X[fit_rows], variant), layout(X[te], variant)
    threads = (threadpool_limits(limits=2, user_api='blas') if variant == '2 OpenBLAS threads'
               else contextlib.nullcontext())
    with threads, warnings.catch_warnings():
        warnings.simplefilter('ignore')
        nthreads = sorted({i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas'})
        m = DecisionCalibratedClassifier(est, costs=costs, random_state=0, **kw, **PATHS[path]).fit(Xf, y[fit_rows])
        P, V = m.predict_proba(Xt), m.calibrated_vectors(Xt)
    fs = m.first_stage_
    return P, V, dict(kept=int(m.calibrator_.best_round_), first_stage='-' if fs is None else getattr(fs, 'name', '?'),
                      floor=float(getattr(m, 'proba_floor_', 0.0)), blas_threads=nthreads)


def run(sets, modes, paths, seeds, log=None, only_log=False):   # seeds: a list of split seeds
    "Every (set, mode, path, variant, seed): rows of figures; blocks already in the JSON lines `log` are not rerun."
    rows, notes, done = [], [], set()
    if log and os.path.exists(log):
        with open(log) as fh:
            for line in fh:
                block = json.loads(line)
                rows += block
                done.add(tuple(block[0][k] for k in ('set', 'seed', 'mode', 'path')))
    T0 = time.perf_counter()
    data = {}
    for s in sets:
        dname, mlabel, make, sparse_ok = SETS[s]
        X, y = sklearn_datasets()[dname]()
        data[s] = X, y = np.asarray(X, float), np.unique(y, return_inverse=True)[1]
        tr, ca, te = split(y, 0)
        notes.append(f"{dname} + {mlabel}: {len(y)} rows, {X.shape[1]} features; train/calibrate/test "
                     f"{len(tr)}/{len(ca)}/{len(te)}")
    for seed in seeds:                         # splits outermost: an interrupted run has every setting's first splits
        for s in sets:
            dname, mlabel, make, sparse_ok = SETS[s]
            X, y = data[s]
            costs = random_costs(int(y.max()) + 1)
            tr, ca, te = split(y, seed)
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                frozen_base = make().fit(X[tr], y[tr])          # fitted once, on the array, for every 'frozen' variant
            for mode in modes:
                for path in paths:
                    if (s, seed, mode, path) in done or only_log: continue
                    ref, block = None, []
                    for variant in VARIANTS:
                        if variant == 'CSR' and not sparse_ok: continue
                        P, V, f = fit_variant(s, mode, path, variant, X, y, seed, costs, frozen_base)
                        gap, se_boot, se_dm = gap_noise(gap_terms(V, y[te], costs))
                        if ref is None: ref = (P, V, gap)
                        block.append(dict(set=s, mode=mode, path=path, variant=variant, seed=seed, gap=gap,
                                          se_boot=se_boot, se_dm=se_dm, dgap=gap - ref[2],
                                          dP=float(np.abs(P - ref[0]).max()), dV=float(np.abs(V - ref[1]).max()), **f))
                    rows += block
                    if log:
                        with open(log, 'a') as fh: fh.write(json.dumps(block) + '\n')
                    print(f"  {s} seed {seed} {mode} {path} done ({time.perf_counter() - T0:.0f} s)", file=sys.stderr,
                          flush=True)
    order = {k: i for i, k in enumerate(SETS)}
    rows.sort(key=lambda r: (order[r['set']], MODES.index(r['mode']), list(PATHS).index(r['path']), r['seed']))
    return [r for r in rows if r['set'] in sets], notes


def fe(x): return '0' if x == 0 else f"{x:.1e}"


def tables(rows, seeds):
    "Markdown lines: seed 0 in full, then the summary over seeds."
    head = ['data + model', 'mode', 'path', 'variant', 'max abs Δ predict_proba', 'max abs Δ calibrated_vectors',
            'rounds kept', 'first stage', 'floor', 'mean gap', 'Δ mean gap', 'se (bootstrap rows)',
            'se (decision makers)']
    has0 = {r['set'] for r in rows if r['seed'] == 0}
    out = ["#### Split (seed) 0; every split of a setting run only on other seeds", '',
           '| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    for r in rows:
        if r['seed'] != 0 and r['set'] in has0: continue
        label = (SETS[r['set']][0] + ' + ' + SETS[r['set']][1].split(' ')[0]
                 + (f" (seed {r['seed']})" if r['seed'] else ''))
        out.append('| ' + ' | '.join([label, r['mode'], r['path'],
                                      r['variant'], fe(r['dP']), fe(r['dV']), str(r['kept']), r['first_stage'],
                                      f"{r['floor']:g}", f"{r['gap']:.5f}", f"{r['dgap']:+.1e}" if r['dgap'] else '0',
                                      f"{r['se_boot']:.5f}", f"{r['se_dm']:.5f}"]) + ' |')
    if seeds > 1:
        head = ['data + model', 'mode', 'path', 'variant', 'largest max abs Δ predict_proba',
                'largest max abs Δ calibrated_vectors', 'splits with other rounds kept',
                'splits with another first stage', 'largest abs Δ mean gap', 'mean se (bootstrap rows)',
                'largest abs Δ / its split\'s se']
        out += ['', "#### Over the splits (each row: the splits its setting ran)", '', '| ' + ' | '.join(head) + ' |',
                '|' + '---|' * len(head)]
        keys = list(dict.fromkeys((r['set'], r['mode'], r['path'], r['variant']) for r in rows))
        for k in keys:
            rs = [r for r in rows if (r['set'], r['mode'], r['path'], r['variant']) == k]
            refs = {r['seed']: r for r in rows if (r['set'], r['mode'], r['path'], r['variant']) == k[:3] + ('array',)}
            rk = sum(r['kept'] != refs[r['seed']]['kept'] for r in rs)
            fsd = sum(r['first_stage'] != refs[r['seed']]['first_stage'] for r in rs)
            ratio = max(abs(r['dgap']) / r['se_boot'] for r in rs)
            out.append('| ' + ' | '.join([SETS[k[0]][0] + ' + ' + SETS[k[0]][1].split(' ')[0], *k[1:],
                                          fe(max(r['dP'] for r in rs)), fe(max(r['dV'] for r in rs)),
                                          f"{rk}/{len(rs)}", f"{fsd}/{len(rs)}", fe(max(abs(r['dgap']) for r in rs)),
                                          f"{np.mean([r['se_boot'] for r in rs]):.5f}", f"{ratio:.2g}"]) + ' |')
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seeds', type=int, default=3)
    ap.add_argument('--seed-list', default=None, help='split seeds, separated by commas (instead of 0..seeds-1)')
    ap.add_argument('--sets', default='digits_lr,breast_cancer_nb')
    ap.add_argument('--modes', default=','.join(MODES))
    ap.add_argument('--paths', default=','.join(PATHS))
    ap.add_argument('--log', default=None, help='JSON lines file: each finished block of variants is appended; '
                                                'blocks already there are not run again (resume a long run)')
    ap.add_argument('--only-log', action='store_true', help='run nothing: tabulate what --log holds')
    ap.add_argument('--write', action='store_true')
    ap.add_argument('--out', default='layout_variance_results.md')
    a = ap.parse_args(argv)
    T0 = time.perf_counter()
    seeds = [int(v) for v in a.seed_list.split(',')] if a.seed_list else list(range(a.seeds))
    rows, notes = run(a.sets.split(','), a.modes.split(','), a.paths.split(','), seeds, a.log, a.only_log)
    n_seeds = len({r['seed'] for r in rows})
    lines = tables(rows, n_seeds)
    threads2 = {tuple(r['blas_threads']) for r in rows if r['variant'] == '2 OpenBLAS threads'}
    threads1 = {tuple(r['blas_threads']) for r in rows if r['variant'] != '2 OpenBLAS threads'}
    per_set = '; '.join(f"{s}: seeds {sorted({r['seed'] for r in rows if r['set'] == s})}"
                        for s in dict.fromkeys(r['set'] for r in rows))
    summary = (f"splits: {per_set}; OpenBLAS threads seen during the fits: {sorted(threads1)} (other variants), "
               f"{sorted(threads2)} ('2 OpenBLAS threads'); total {time.perf_counter() - T0:.0f} s")
    print('\n'.join(lines)); print(summary)
    for n in notes: print(n)
    if a.write:
        from deccal.runtime import atomic_write
        out = os.path.join(REPO, 'bench', a.out)
        cmd = 'python bench/layout_variance.py ' + ' '.join(argv if argv is not None else sys.argv[1:])
        text = '\n'.join([
            "# The same data in other layouts: how far DecisionCalibratedClassifier's predictions move", '',
            machine_info(('dimfree.py', 'crossfit.py', 'first_stage.py', 'estimators.py')), '',
            f"Produced by `{cmd.strip()}`. {summary}.", '', *[f"- {n}" for n in notes], '',
            "Variants: 'array' (C-ordered float64, the reference of the Δ columns), 'array again' (a second fit of the "
            "same array), 'DataFrame' (pandas, string column names), 'CSR' (scipy.sparse, LogisticRegression only), "
            "'Fortran' (np.asfortranarray), 'x (1 + 1e-15)' (every entry times 1 + 1e-15), '2 OpenBLAS threads' (the "
            "array, fit and predictions under threadpoolctl.threadpool_limits(2, 'blas'); all others with 1). "
            "Modes: 'frozen' = FrozenEstimator of the base model fitted once on the array's training part (40%), "
            "calibrated on 30%; 'cv=5' = the unfitted base model, DecisionCalibratedClassifier(model, cv=5) fitted on "
            "the training and calibration parts (70%). Paths: 'defaults' (n_folds=5, learning_rate=0.5, "
            "first_stage='auto', ...); 'old' (n_folds=None, first_stage=None, learning_rate=1.0). Test: the same 30% "
            "for every variant. Columns: max abs Δ = the largest absolute difference from the array's fit over the "
            "test rows and classes; rounds kept = calibrator_.best_round_; floor = proba_floor_; mean gap = Zhao et "
            "al.'s evaluation on the test part (200 decision makers, A = 5; decisions from calibrated_vectors); Δ mean "
            "gap = this variant's minus the array's; the noise of this held-out measure: se (bootstrap rows) = the "
            "standard deviation of the mean gap over 500 bootstrap resamples of the test rows (decisions fixed), se "
            "(decision makers) = sd of the 200 per-decision-maker gaps / sqrt(200).", '',
            *lines, '', '<!-- analysis -->', ''])
        if os.path.exists(out):
            with open(out) as fh: prev = fh.read().partition('<!-- analysis -->')[2].lstrip('\n')
            text += prev
        atomic_write(out, lambda f: f.write(text.encode()))
        print(f"wrote {out}")


if __name__ == '__main__':
    main()
