"""Benchmark: the options of DecisionCalibratedClassifier's cross-fitted calibration, varied one at a time, held out.

Prints figures; it is not a test.  Usage:

    python bench/crossfit_choices.py                      # prints the tables (10 splits)
    python bench/crossfit_choices.py --write              # ... and writes bench/crossfit_choices_results.md
    python bench/crossfit_choices.py --seeds 1 --sets digits_nb --configs 'defaults;learning_rate=1.0'   # a quick look

Each split (seed) cuts the rows at random, stratified, into 40% to train the base model, 30% to calibrate and 30%
to test (bench/sklearn_calibration.py's split).  The base model, fitted on the training part, is frozen
(sklearn.frozen.FrozenEstimator) and given to DecisionCalibratedClassifier(costs=the 200 evaluation cost matrices,
first_stage='auto', random_state=0, ...) with the configuration's options; everything is measured on the test
part.  Data sets and base models: digits + GaussianNB, digits + LogisticRegression (standardized), breast_cancer +
GaussianNB, make_classification (5,000 rows, 5 classes, as in bench/sklearn_calibration.py) +
HistGradientBoostingClassifier.

Configurations: the defaults (n_folds=5, learning_rate=0.5, ensemble=True, min_gain_se=2, max_rounds=50,
n_iter_no_change=5), then one option changed at a time: learning_rate 1.0 / 0.25; ensemble False; min_gain_se
0 / 1 / 3; n_folds 3; (max_rounds, n_iter_no_change) (20, 3) / (20, 5) / (50, 3); and n_folds=None, the single
validation split of before the cross-fitting (still with first_stage='auto'), with learning_rate 1.0 (the old
rounds: no shrinkage existed) and 0.5.  Reference rows: 'base model' (its probabilities as they are) and 'first
stage alone' (start_probabilities of the defaults' fit: the selected first stage with no round; the first stage
depends only on the calibration probabilities and the seed, so it is the same in every configuration).

Figures: mean gap = Zhao et al.'s evaluation (bench/sklearn_calibration.zhao_gaps: 200 cost matrices, A = 5,
entries uniform in [0, 1]; best response to the calibrated vectors; |mean predicted - mean realized cost| per
decision maker), averaged over the 200; Brier and log loss of predict_proba; rounds kept (best_round_); the
probability floor chosen (proba_floor_); the fit's CPU seconds (process time, all threads; less sensitive than wall
time to the other jobs on a shared machine, still only a rough guide).  Means ± standard errors over splits, and
paired differences (same split) against the first stage alone and against the defaults (mean gap, log loss, fit CPU
seconds), mean ± paired standard error over splits.
"""
from __future__ import annotations
import os
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults('OMP_WAIT_POLICY', 'OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS')
import argparse, copy, json, sys, time, warnings

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
from _measure import machine_info, mse                                # noqa: E402
from _data import N_COSTS, N_ACTIONS, sklearn_datasets, SKLEARN_MODELS, split, random_costs   # noqa: E402
from _scores import zhao_gaps, brier                                  # noqa: E402

from sklearn.ensemble import HistGradientBoostingClassifier           # noqa: E402
from sklearn.frozen import FrozenEstimator                             # noqa: E402
from sklearn.metrics import log_loss                                   # noqa: E402
from sklearn.naive_bayes import GaussianNB                             # noqa: E402

import deccal.classifier                                              # noqa: E402  (its select_first_stage is swapped)
from deccal.estimators import DecisionCalibratedClassifier            # noqa: E402
from deccal.crossfit import CrossFitDeCal                             # noqa: E402

SETS = {   # name: (data set, base model's label, base model)
    'digits_nb': ('digits', 'GaussianNB', GaussianNB),
    'digits_lr': ('digits', 'LogisticRegression (standardized)', SKLEARN_MODELS['LogisticRegression']),
    'breast_cancer_nb': ('breast_cancer', 'GaussianNB', GaussianNB),
    'make_classification_hgb': ('make_classification', 'HistGradientBoosting',
                                lambda: HistGradientBoostingClassifier(random_state=0)),
}

CONFIGS = {   # name: the options changed from the defaults
    'defaults': {},
    'learning_rate=1.0': dict(learning_rate=1.0),
    'learning_rate=0.25': dict(learning_rate=0.25),
    'ensemble=False': dict(ensemble=False),
    'min_gain_se=0': dict(min_gain_se=0.0),
    'min_gain_se=1': dict(min_gain_se=1.0),
    'min_gain_se=3': dict(min_gain_se=3.0),
    'n_folds=3': dict(n_folds=3),
    'max_rounds=20, n_iter_no_change=3': dict(max_rounds=20, n_iter_no_change=3),
    'max_rounds=20, n_iter_no_change=5': dict(max_rounds=20),
    'max_rounds=50, n_iter_no_change=3': dict(n_iter_no_change=3),
    'n_folds=None, learning_rate=1.0 (old rounds)': dict(n_folds=None, learning_rate=1.0),
    'n_folds=None, learning_rate=0.5': dict(n_folds=None),
}
REFS = ('base model', 'first stage alone')


# ----------------------------------------------------------------------------- the first stage, selected once a split
class SelectOnce:
    """deccal.classifier.select_first_stage, remembered: every configuration of a split gives it the same calibration
    probabilities, labels and seed, and it is deterministic, so it runs once a split (a copy of the one result is handed
    to each fit); `seconds` holds the CPU time of the runs that did the work (added back to every fit's CPU time)."""
    def __init__(self, f):
        self.f, self.memo, self.seconds = f, {}, {}

    def __call__(self, P, y, **kw):
        key = (np.ascontiguousarray(P).tobytes(), np.ascontiguousarray(y).tobytes(), repr(sorted(kw.items())))
        if key not in self.memo:
            c0 = time.process_time()
            self.memo[key] = self.f(P, y, **kw)
            self.seconds[key] = time.process_time() - c0
        return copy.deepcopy(self.memo[key])


SELECT = SelectOnce(deccal.classifier.select_first_stage)
deccal.classifier.select_first_stage = SELECT       # _fit_first_stage looks the name up in the module at each call


# ----------------------------------------------------------------------------- one split
def metrics(V, P, y, costs) -> dict:
    "The test figures of decision vectors V and probabilities P."
    g = zhao_gaps(V, y, costs)
    return dict(mean_gap=float(g.mean()), max_gap=float(g.max()), brier=brier(P, y),
                log_loss=float(log_loss(y, P, labels=np.arange(costs.shape[2]))))


def run_split(set_name, seed, configs, costs, X, y, first_stage='auto') -> dict:
    "Every configuration on one split: {config: figures}."
    _, _, make = SETS[set_name]
    tr, ca, te = split(y, seed)
    base = make().fit(X[tr], y[tr])
    out = {}
    SELECT.memo.clear(); SELECT.seconds.clear()
    P0 = base.predict_proba(X[te])
    out['base model'] = metrics(P0, P0, y[te], costs)
    for name in configs:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            c0, w0 = time.process_time(), time.perf_counter()
            m = DecisionCalibratedClassifier(FrozenEstimator(base), costs=costs, random_state=0,
                                             first_stage=first_stage, **CONFIGS[name]).fit(X[ca], y[ca])
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            V, P = m.calibrated_vectors(X[te]), m.predict_proba(X[te])
            P1 = m.start_probabilities(X[te])
        cal = m.calibrator_
        fs_cpu = sum(SELECT.seconds.values())       # the first stage's selection, counted in every fit that uses it
        if name != configs[0]: cpu += fs_cpu         # the first configuration ran it inside its fit
        r = metrics(V, P, y[te], costs)
        runs = cal.rounds_run_ if isinstance(cal, CrossFitDeCal) else [len(cal.all_rounds_)]
        r.update(kept=int(cal.best_round_), run=float(np.mean(runs)), floor=float(getattr(m, 'proba_floor_', 0.0)),
                 cpu_s=cpu, wall_s=wall, first_stage_cpu_s=fs_cpu,
                 first_stage='-' if m.first_stage_ is None else getattr(m.first_stage_, 'name', '?'))
        out[name] = r
        if name == 'defaults' or 'first stage alone' not in out:
            out['first stage alone'] = {**metrics(P1, P1, y[te], costs), 'first_stage': r['first_stage']}
    return out


# ----------------------------------------------------------------------------- tables
def fmt(v, nd, sign=False):
    "mean ± standard error over splits, as text."
    v = np.asarray(v, float) + 0.0                   # + 0.0: no '-0.0000' for exact zeros
    v[np.abs(v) < 1e-12] = 0.0                        # differences of a few ulps print as 0
    f = f"{{:+.{nd}f}}" if sign else f"{{:.{nd}f}}"
    m, s = mse(v)
    if len(v) < 2: return f.format(m)
    return f"{f.format(m)} ± {s:.{nd}f}"


COLS = [('mean_gap', 'mean gap', 4), ('brier', 'Brier', 4), ('log_loss', 'log loss', 3)]


def table(res: dict, set_name: str, configs) -> list:
    "Markdown lines of one data set's table; res[seed][config] = figures."
    seeds = sorted(res)
    head = ['configuration', 'mean gap', 'Δ gap vs first stage', 'Δ gap vs defaults', 'Brier', 'Δ Brier vs first stage',
            'log loss', 'Δ log loss vs first stage', 'Δ log loss vs defaults', 'max gap', 'rounds kept', 'rounds run',
            'floor', 'fit CPU s', 'Δ fit CPU s vs defaults']
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    get = lambda c, k: [res[s][c][k] for s in seeds]
    fs = 'first stage alone'
    for c in list(REFS) + list(configs):
        if any(c not in res[s] for s in seeds): continue
        vs_defaults = c in CONFIGS and c != 'defaults' and all('defaults' in res[s] for s in seeds)
        dd = lambda k, nd: fmt(np.subtract(get(c, k), get('defaults', k)), nd, True) if vs_defaults else ''
        row = [c, fmt(get(c, 'mean_gap'), 4),
               fmt(np.subtract(get(c, 'mean_gap'), get(fs, 'mean_gap')), 4, True) if c != fs else '',
               dd('mean_gap', 4),
               fmt(get(c, 'brier'), 4),
               fmt(np.subtract(get(c, 'brier'), get(fs, 'brier')), 4, True) if c != fs else '',
               fmt(get(c, 'log_loss'), 3),
               fmt(np.subtract(get(c, 'log_loss'), get(fs, 'log_loss')), 3, True) if c != fs else '',
               dd('log_loss', 4),
               fmt(get(c, 'max_gap'), 4)]
        if c in CONFIGS:
            kept = get(c, 'kept')
            row += [f"{fmt(kept, 1)} ({sum(k > 0 for k in kept)}/{len(kept)} > 0)", fmt(get(c, 'run'), 1),
                    fmt(get(c, 'floor'), 3), fmt(get(c, 'cpu_s'), 2), dd('cpu_s', 2)]
        else: row += [''] * 5
        lines.append('| ' + ' | '.join(row) + ' |')
    return lines


# ----------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seeds', type=int, default=10)
    ap.add_argument('--sets', default=','.join(SETS))
    ap.add_argument('--configs', default=';'.join(CONFIGS), help="names of CONFIGS, separated by ';'")
    ap.add_argument('--first-stage', default='auto', choices=['auto', 'none'],
                    help="every configuration's first_stage ('none': None, the rounds start from the base model)")
    ap.add_argument('--log', default=None, help='JSON lines files, separated by commas: each finished split is '
                    'appended to the first; splits already in any are not run again, and all are tabulated')
    ap.add_argument('--only-log', action='store_true', help='run nothing: tabulate what --log holds')
    ap.add_argument('--write', action='store_true')
    ap.add_argument('--out', default='crossfit_choices_results.md')
    a = ap.parse_args(argv)
    configs = [c.strip() for c in a.configs.split(';')]
    for c in configs:
        if c not in CONFIGS: ap.error(f"unknown configuration {c!r}; the names: {'; '.join(CONFIGS)}")
    if 'defaults' not in configs: configs = ['defaults'] + configs
    sets = a.sets.split(',')
    fs_run = a.first_stage
    done = {}                                       # (first_stage, set, seed): {config: figures}
    logs = a.log.split(',') if a.log else []
    for lg in logs:
        if not os.path.exists(lg): continue
        with open(lg) as fh:
            for line in fh:
                d = json.loads(line)
                done[(d.get('first_stage', 'auto'), d['set'], d['seed'])] = d['res']
    T0 = time.perf_counter()
    data = {}
    for s in SETS:                                  # every set: the tables show what the logs hold
        X, y = sklearn_datasets()[SETS[s][0]]()
        data[s] = (X, np.unique(y, return_inverse=True)[1])
    for seed in range(a.seeds):                     # splits outermost: an interrupted run has every set's first splits
        for s in sets:
            X, y = data[s]
            if (fs_run, s, seed) in done or a.only_log: continue
            C = int(y.max()) + 1
            costs = random_costs(C)                            # sklearn_calibration's
            res = run_split(s, seed, configs, costs, X, y, None if fs_run == 'none' else 'auto')
            done[(fs_run, s, seed)] = res
            if logs:
                with open(logs[0], 'a') as fh:
                    fh.write(json.dumps(dict(first_stage=fs_run, set=s, seed=seed, res=res)) + '\n')
            print(f"  {s} seed {seed} done ({time.perf_counter() - T0:.0f} s)", file=sys.stderr, flush=True)
    out_lines, n_seeds = [], {}
    for fs_name in ('auto', 'none'):
        if not any(k[0] == fs_name for k in done): continue
        if fs_name == 'auto':
            out_lines += ["## first_stage='auto' (the default)", '']
        else:
            out_lines += ["## first_stage=None: the rounds start from the base model (supplementary)", '',
                          "Every configuration as above but with first_stage=None, so that the rounds have "
                          "something to correct and the options act: here 'first stage alone' is the base model's "
                          "probabilities, and 'n_folds=None, learning_rate=1.0' is the estimator as it was before "
                          "the cross-fitting, the first stage and the learning rate.", '']
        for s in SETS:
            if s not in data: continue
            X, y = data[s]
            res = {seed: r for (f, ss, seed), r in done.items() if f == fs_name and ss == s and seed < a.seeds}
            if not res: continue
            n_seeds[(fs_name, s)] = len(res)
            tr, ca, te = split(y, 0)
            fs = [res[k]['first stage alone']['first_stage'] for k in sorted(res)]
            names, counts = np.unique(fs, return_counts=True)
            dname, mlabel, _ = SETS[s]
            cfgs = [c for c in CONFIGS if all(c in res[k] for k in res)]
            out_lines += [f"### {dname} + {mlabel}" + (' (first_stage=None)' if fs_name == 'none' else ''), '',
                          f"{len(y)} rows, {X.shape[1]} features, {int(y.max()) + 1} classes; train/calibrate/test "
                          f"{len(tr)}/{len(ca)}/{len(te)}; {len(res)} splits (seeds {', '.join(map(str, sorted(res)))})"
                          + ("; first stage chosen: " + ', '.join(f"{n} ({c})" for n, c in zip(names, counts))
                             if fs_name == 'auto' else ''), '',
                          *table(res, s, [c for c in cfgs if c not in REFS]), '']
    elapsed = time.perf_counter() - T0
    print('\n'.join(out_lines))
    counts = ', '.join(f"{s} {n}" + (' (first_stage=None)' if f == 'none' else '') for (f, s), n in n_seeds.items())
    summary = (f"splits per data set: {counts}; means ± standard errors over "
               f"splits; {N_COSTS} cost matrices (A = {N_ACTIONS}, entries uniform in [0, 1]); this invocation "
               f"{elapsed:.0f} s")
    print(summary)
    if a.write:
        from deccal.runtime import atomic_write
        out = os.path.join(REPO, 'bench', a.out)
        cmd = 'python bench/crossfit_choices.py ' + ' '.join(argv if argv is not None else sys.argv[1:])
        text = '\n'.join([
            "# Cross-fitted calibration: the options of DecisionCalibratedClassifier, held out", '',
            machine_info(('dimfree.py', 'crossfit.py', 'first_stage.py', 'estimators.py')), '',
            f"Produced by `{cmd.strip()}`. {summary}.", '',
            "Each split: 40% of the rows train the base model (then frozen with FrozenEstimator), 30% calibrate, 30% "
            "test (stratified). DecisionCalibratedClassifier(FrozenEstimator(base), costs=the 200 cost matrices, "
            "first_stage='auto', random_state=0) with the defaults n_folds=5, learning_rate=0.5, ensemble=True, "
            "min_gain_se=2, max_rounds=50, n_iter_no_change=5, and one option changed per row. "
            "Columns: mean gap / max gap = mean / max over the 200 decision makers (A = 5, costs uniform in [0, 1]) "
            "of |mean predicted cost of the best-response actions - mean realized cost| on the test part (Zhao et "
            "al.'s evaluation; deccal's decisions use `calibrated_vectors`); Brier (summed over classes) and log loss "
            "of `predict_proba`; Δ = paired differences on the same split (negative: lower than the reference), mean "
            "± standard error over splits (against the defaults: of the mean gap, of the log loss to 4 decimals and "
            "of the fit CPU s); 'first stage alone' = `start_probabilities` (the selected first stage, no "
            "round; the same in every configuration); rounds kept = `calibrator_.best_round_` (and in how many "
            "splits it was > 0); rounds run = mean over the fold calibrators of the rounds early stopping let run; "
            "floor = `proba_floor_`; fit CPU s = process CPU time of `fit` on a shared 2-core machine (first stage "
            "selection included; a rough guide to relative cost, not a timing).", '',
            *out_lines, '<!-- analysis -->', ''])
        if os.path.exists(out):
            with open(out) as fh: prev = fh.read().partition('<!-- analysis -->')[2].lstrip('\n')
            text += prev
        atomic_write(out, lambda f: f.write(text.encode()))
        print(f"wrote {out}")


if __name__ == '__main__':
    main()
