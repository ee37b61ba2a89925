"""The benchmark a skeptic would run: deccal's scikit-learn wrappers, with their DEFAULTS, against the calibrators
one would use instead, on held-out data, with paired standard errors and a verdict per cell.

Prints figures; it is not a test and asserts nothing about time.  Usage:

    python bench/skeptic.py --quick                 # 2 seeds, a few cells: a smoke run
    python bench/skeptic.py --write                 # the full run (20 seeds), writes bench/skeptic_results.md
    python bench/skeptic.py --seeds 3 --datasets digits,fair --models logreg,hgb --part classification

deccal's estimators are called with their defaults plus what the user knows (the cost matrices or losses of
the decision makers they know of), so a rerun after the defaults change measures the new defaults.

CLASSIFICATION.  Data: load_digits (1,797 rows, 10 classes), load_breast_cancer (569 rows, 2 classes),
statsmodels' `fair` data (6,366 women surveyed by Redbook in 1974, 8 features; the label: any extramarital
affair, 32% yes; binary) and make_classification (5,000 rows, 20 features, 5 classes, as in
bench/sklearn_calibration.py).  `fair` ships inside the statsmodels wheel (no download), which is why this
script imports statsmodels: it is a real data set of a few thousand rows, preferred to load_wine (178 rows);
without statsmodels the script falls back to load_wine and says so.  Each seed splits the rows at random
(stratified) into 40% to train the base model, 30% to calibrate it and 30% to test: every figure is measured on
the test split.  Base models: LogisticRegression on standardized features, GaussianNB, HistGradientBoosting
and RandomForest (100 trees).  Calibrators, all fitted on the calibration split with the base model
frozen: none; CalibratedClassifierCV(FrozenEstimator(base), method='sigmoid' / 'isotonic' / 'temperature');
matrix scaling (deccal.first_stage.MatrixScaling: softmax(W log p + b), the parametrization of Dirichlet
calibration, Kull et al. 2019, with its default L2 penalty toward the identity); deccal's
DecisionCalibratedClassifier(FrozenEstimator(base), costs=costs), costs = the 200 evaluation cost matrices
(the decision makers the user knows of; the test labels are never used); MCGrad (multicalibration by gradient
boosting, MCGrad(random_state=seed) on the features and the base model's P(positive)) on the binary data sets,
run in a separate venv because it needs torch: a venv named venv-mcgrad beside the repository's folder (made with
`python3 -m venv venv-mcgrad` and `pip install torch mcgrad`), or the Python given by --mcgrad-python; without
it the MCGrad rows are skipped and the output says so.

Columns: Zhao et al.'s evaluation on the test split: 200 random decision makers (A = 5 actions, cost entries
uniform in [0, 1]), each best-responding to the predictions; per decision maker |mean predicted cost of the chosen
actions - mean realized cost|; its mean and max over the 200; the debiased gap: per decision maker (mean of
promised - paid)^2 minus its sampling variance (var / n), an unbiased estimate of the squared gap on the
population, averaged over the 200 and shown as sign * sqrt (about 0 for calibrated predictions). deccal's
decisions and predicted costs use `calibrated_vectors`; the others their probabilities. Log loss (probabilities
clipped at machine epsilon, as scikit-learn's log_loss does), Brier (sum over classes) and accuracy of
`predict_proba`; 'rows with a 0' = the share of test rows whose predict_proba has an exact 0; the realized mean
cost under ONE fixed cost matrix per data set of the actions chosen by `predict_action(X, M)` (deccal) or the
argmin of the expected cost under the probabilities (others); the calibrator's fit time (including the frozen
model's predictions on the calibration split; the machine is shared, so read it as an order of magnitude).
The fixed matrices M[a, c] (cost of action a when the class is c):
  binary: actions (dismiss, act); the positive class (malignant = sklearn's label 0 for breast cancer; an
    affair for fair) missed by 'dismiss' costs 1.0, a false alarm ('act' on a negative) costs 0.1, correct
    decisions cost 0: act when P(positive) > 0.1/1.1.
  multiclass: action a = 'say class a'; correct 0; missing the expensive class (the last class: digit 9,
    make_classification's class 4) costs 1.0; any other error costs 0.1.
  M is not among the `costs` given to deccal (nor is the newsvendor below among its `losses`).
Paired differences per cell (per split, then mean and standard error over the splits): deccal minus the best
of none / sigmoid / isotonic / temperature (best = lowest mean gap of the cell) for the mean gap; deccal minus
temperature for the log loss; deccal minus the baseline of lowest mean realized cost for the realized cost.
Verdicts: gap <= best + 1 se; gap below best by >= 2 se; log loss <= temperature + 0.01; cost <= best + 1 se.
The "(noise floor)" row: the temperature-scaled probabilities evaluated against labels drawn from themselves
(5 draws): the gaps sampling noise alone gives on a test split of that size.

REGRESSION.  Data: load_diabetes (442 rows) and statsmodels' `randhie` (the RAND health insurance experiment,
20,190 person-years; outcome log(1 + outpatient visits), 31% zeros; 9 features; a random 6,000 rows, fixed, to
keep the run short) or, without statsmodels, make_friedman1(2,000 rows, noise 1.0).  Splits 40/30/30 at random.
Outcomes are scaled to [0.2, 1] with the calibration split's min and max (clipped): y' = 0.2 + 0.8 (y - min) /
(max - min).  In [0, 1] the 'min' kernel applies; the floor 0.2 puts the newsvendor's per-action constant in
its RKHS (every function of that RKHS vanishes at 0; min(y, 0.2) / 0.2 = 1 on [0.2, 1], as in the newsvendor
tutorial).  Base models, fitted on the scaled training outcomes: Ridge on standardized features and
HistGradientBoostingRegressor.  Predictions compared on the test rows: the point prediction
(Embedding.from_points), the split-conformal residual distribution (the prediction plus the 64 quantiles, at
levels (j + 1/2) / 64, of the calibration split's residuals: Embedding.from_samples), both clipped to [0.2, 1];
and DecisionCalibratedRegressor(FrozenEstimator(base), kernel='min', losses=losses) with its defaults
(`calibrated_embedding`), losses = the 200 random piecewise-linear losses below (the decision makers the user
knows of).  Columns: the 200 random losses' mean and max gap, as for classification (best response to
Embedding.loss_estimates; realized loss Loss.value): 5 actions each, piecewise_linear_loss with slopes k1 ~
U(-1, 0) below the kink, k2 ~ U(0, 1) above, kinks ~ U(0.2, 1); a newsvendor with fixed costs (5 order levels
0.3 ... 0.9, a unit short costs 0.8, a unit left over 0.2; critical ratio 0.8): the mean realized cost of its
best-response order and its gap |promised - paid|; the held-out square loss E||p(x) - phi(y)||^2 in the min
kernel's RKHS (lower is better; for a distribution p it is a proper score); when the regressor has
`predict_quantiles` (checked with hasattr; called as predict_quantiles(X, levels) -> (n, 3)), the pinball
loss at levels 0.1, 0.5, 0.9 and the count of test rows whose three quantiles are not nondecreasing (the
baselines: the point prediction at every level; the residual distribution's quantiles).  Paired: deccal minus
the residual distribution.  Verdicts: mean gap <= residuals + 1 se; mean gap below residuals by >= 2 se;
newsvendor cost <= residuals + 1 se.
"""
from __future__ import annotations
import os
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults()
import argparse, shlex, subprocess, sys, time, warnings

import numpy as np                                                     # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
from _measure import machine_info, mse, table, yn, paired               # noqa: E402
from _data import (N_COSTS, N_ACTIONS, clf_datasets, CLF_MODELS, split, fixed_costs, random_costs,   # noqa: E402
                   reg_datasets, REG_MODELS)
from _scores import noise_floor, prob_metrics, rounds                   # noqa: E402
from _calibrators import BASELINES, run_mcgrad                          # noqa: E402

from sklearn.calibration import CalibratedClassifierCV                 # noqa: E402
from sklearn.frozen import FrozenEstimator                             # noqa: E402

import deccal                                                          # noqa: E402
from deccal.estimators import DecisionCalibratedClassifier, DecisionCalibratedRegressor   # noqa: E402
from deccal.first_stage import MatrixScaling                           # noqa: E402

FLOOR = 0.2                                                   # regression outcomes are scaled to [FLOOR, 1]
ORDERS = np.linspace(0.3, 0.9, 5)                             # the newsvendor's order levels
C_UNDER, C_OVER = 0.8, 0.2                                    # its cost of a unit short / left over
LEVELS = (0.1, 0.5, 0.9)                                      # pinball levels


# ----------------------------------------------------------------------------- one classification split
def clf_split(X, y, mname, seed, costs, M):
    "Every calibrator on one split: {name: columns}, the MCGrad inputs (binary only), the split sizes."
    tr, ca, te = split(y, seed)
    base = CLF_MODELS[mname]().fit(X[tr], y[tr])
    Xc, yc, Xt, yt = X[ca], y[ca], X[te], y[te]
    Pt = base.predict_proba(Xt)
    rows = {}
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        rows['none'] = prob_metrics(Pt, Pt, yt, costs, M, (Pt @ M.T).argmin(1), 0.0)
        for m in ('sigmoid', 'isotonic', 'temperature'):
            t0 = time.perf_counter()
            cal = CalibratedClassifierCV(FrozenEstimator(base), method=m).fit(Xc, yc)
            secs = time.perf_counter() - t0
            P = cal.predict_proba(Xt)
            rows[m] = prob_metrics(P, P, yt, costs, M, (P @ M.T).argmin(1), secs)
            if m == 'temperature': floor = noise_floor(P, costs, seed)
        t0 = time.perf_counter()
        ms = MatrixScaling().fit(base.predict_proba(Xc), yc)
        secs = time.perf_counter() - t0
        P = ms.transform(Pt)
        rows['matrix'] = prob_metrics(P, P, yt, costs, M, (P @ M.T).argmin(1), secs)
        t0 = time.perf_counter()
        dc = DecisionCalibratedClassifier(FrozenEstimator(base), costs=costs).fit(Xc, yc)
        secs = time.perf_counter() - t0
        V, P = dc.calibrated_vectors(Xt), dc.predict_proba(Xt)
        rows['deccal'] = prob_metrics(V, P, yt, costs, M, dc.predict_action(Xt, M), secs)
        rows['deccal'].update(rounds(dc))
        fs = getattr(dc, 'first_stage_', None)
        rows['deccal']['first_stage'] = 'none' if fs is None else str(getattr(fs, 'name', None) or type(fs).__name__)
    rows['(noise floor)'] = floor
    mc_in = None
    if Pt.shape[1] == 2:
        mc_in = (Xc.astype(float), base.predict_proba(Xc)[:, 1], yc.astype(float), Xt.astype(float), Pt[:, 1])
    return rows, mc_in, yt, (len(tr), len(ca), len(te))


# ----------------------------------------------------------------------------- regression
def random_losses(seed=2024):
    "The 200 random piecewise-linear losses (5 actions each) and one Loss stacking all their 1,000 actions."
    rng = np.random.default_rng(seed)
    ls = [deccal.piecewise_linear_loss(rng.uniform(-1, 0, N_ACTIONS), rng.uniform(0, 1, N_ACTIONS),
                                       rng.uniform(FLOOR, 1, N_ACTIONS)) for _ in range(N_COSTS)]
    atoms = np.vstack([l.atoms for l in ls])
    coef = np.zeros((N_COSTS * N_ACTIONS, len(atoms)))
    r = c = 0
    for l in ls:
        coef[r:r + l.coef.shape[0], c:c + l.coef.shape[1]] = l.coef
        r += l.coef.shape[0]; c += l.coef.shape[1]
    return ls, deccal.Loss(deccal.MinKernel(), atoms, coef, 'stack')


def newsvendor_loss():
    "The fixed newsvendor, exact in the min kernel's RKHS on [FLOOR, 1] (the construction of the newsvendor tutorial)."
    A = len(ORDERS)
    g = deccal.piecewise_linear_loss(k1=np.full(A, -C_OVER), k2=np.full(A, C_UNDER), c=ORDERS)
    one = deccal.piecewise_linear_loss(k1=np.full(A, 1 / FLOOR), k2=np.zeros(A), c=np.full(A, FLOOR))
    return deccal.Loss(deccal.MinKernel(), np.vstack([g.atoms, one.atoms]),
                       np.hstack([g.coef, C_OVER * ORDERS[:, None] * one.coef]), name='newsvendor')


def newsvendor_cost(y):
    "Its cost, directly: (n,) outcomes -> (n, A)."
    y = np.asarray(y, float).reshape(-1, 1)
    return C_UNDER * np.maximum(y - ORDERS, 0) + C_OVER * np.maximum(ORDERS - y, 0)


def pinball(Q, y):
    "Mean pinball loss at each of LEVELS: Q (n, 3) quantile predictions."
    d = y[:, None] - Q
    lv = np.asarray(LEVELS)[None, :]
    return np.mean(np.maximum(lv * d, (lv - 1) * d), axis=0)


def reg_metrics(emb, y, stack, nv, Q, secs):
    "Columns of one prediction (an Embedding) on the test outcomes y (n,)."
    F = emb.loss_estimates(stack).reshape(len(y), N_COSTS, N_ACTIONS)
    Lv = stack.value(y[:, None]).reshape(len(y), N_COSTS, N_ACTIONS)
    ch = F.argmin(2)
    pick = lambda T: np.take_along_axis(T, ch[:, :, None], 2)[:, :, 0]
    gaps = np.abs(pick(F).mean(0) - pick(Lv).mean(0))
    Fn = emb.loss_estimates(nv)
    a = Fn.argmin(1)
    paid = newsvendor_cost(y)[np.arange(len(y)), a]
    out = dict(mean_gap=float(gaps.mean()), max_gap=float(gaps.max()), nv_cost=float(paid.mean()),
               nv_gap=float(abs(paid.mean() - Fn[np.arange(len(y)), a].mean())),
               sq=float(np.mean(emb.sq_error(deccal.MinKernel(), y[:, None]))), fit_s=secs)
    if Q is not None:
        pb = pinball(Q, y)
        out.update(pb10=float(pb[0]), pb50=float(pb[1]), pb90=float(pb[2]),
                   nonmono=float(np.sum((np.diff(Q, axis=1) < 0).any(1))))
    return out


def reg_split(X, y, mname, seed, losses, stack, nv):
    "Point prediction, residual distribution and deccal on one split: {name: columns}, sizes."
    idx = np.random.default_rng(seed).permutation(len(y))
    n1, n2 = int(0.4 * len(y)), int(0.7 * len(y))
    tr, ca, te = idx[:n1], idx[n1:n2], idx[n2:]
    lo, hi = y[ca].min(), y[ca].max()
    scale = lambda v: FLOOR + (1 - FLOOR) * np.clip((v - lo) / (hi - lo), 0, 1)
    ys = scale(y)
    base = REG_MODELS[mname]().fit(X[tr], ys[tr])
    yc, yt = ys[ca], ys[te]
    mu = base.predict(X[te])
    t0 = time.perf_counter()
    res = yc - base.predict(X[ca])
    rq = np.quantile(res, (np.arange(64) + 0.5) / 64)
    secs = time.perf_counter() - t0
    atoms = np.clip(mu[:, None] + rq[None, :], FLOOR, 1)
    rows = {}
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        pt = np.clip(mu, FLOOR, 1)
        rows['point'] = reg_metrics(deccal.Embedding.from_points(pt), yt, stack, nv, np.repeat(pt[:, None], 3, 1), 0.0)
        Qr = np.quantile(atoms, LEVELS, axis=1).T
        rows['residuals'] = reg_metrics(deccal.Embedding.from_samples(atoms), yt, stack, nv, Qr, secs)
        t0 = time.perf_counter()
        dr = DecisionCalibratedRegressor(FrozenEstimator(base), kernel='min', losses=losses).fit(X[ca], yc)
        secs = time.perf_counter() - t0
        Q = None
        if hasattr(dr, 'predict_quantiles'):
            try: Q = np.asarray(dr.predict_quantiles(X[te], np.asarray(LEVELS)), float).reshape(len(te), 3)
            except Exception as e: print(f"predict_quantiles failed: {type(e).__name__}: {e}", file=sys.stderr)
        rows['deccal'] = reg_metrics(dr.calibrated_embedding(X[te]), yt, stack, nv, Q, secs)
        rows['deccal'].update(rounds(dr))
    return rows, (len(tr), len(ca), len(te))


# ----------------------------------------------------------------------------- summaries
def fmt(v, nd, key=None):
    m, s = mse(v)
    if key == 'dgap2':                   # the mean of the squared estimates, shown as sign * sqrt in the gap's units
        return f"{np.sign(m) * np.sqrt(abs(m)):.{nd}f} (sq {m * 1e6:+.2f} ± {s * 1e6:.2f} e-6)"
    return f"{m:.{nd}f} ± {s:.{nd}f}" if np.isfinite(s) else f"{m:.{nd}f}"


CLF_COLS = [('mean_gap', 'mean gap', 4), ('dgap2', 'debiased gap', 4), ('max_gap', 'max gap', 4),
            ('log_loss', 'log loss', 3), ('brier', 'Brier', 4),
            ('accuracy', 'accuracy', 3), ('cost', 'cost under M', 4), ('zeros', 'rows with a 0', 3),
            ('fit_s', 'fit s', 3), ('kept', 'rounds kept', 1), ('run', 'rounds run', 1)]
REG_COLS = [('mean_gap', 'mean gap', 4), ('max_gap', 'max gap', 4), ('nv_cost', 'newsvendor cost', 4),
            ('nv_gap', 'newsvendor gap', 4), ('sq', 'sq loss (min RKHS)', 4), ('pb10', 'pinball 0.1', 4),
            ('pb50', 'pinball 0.5', 4), ('pb90', 'pinball 0.9', 4), ('nonmono', 'non-monotone rows', 1),
            ('fit_s', 'fit s', 3), ('kept', 'rounds kept', 1), ('run', 'rounds run', 1)]


def paired_of(per, a, b, key):
    "Per-split a - b for column key: (mean, paired se); per: {name: [columns per split]}."
    return paired([{a: ra, b: rb} for ra, rb in zip(per[a], per[b])], a, b, key)


def clf_verdict(per):
    "The paired differences and the four checks of one classification cell."
    means = lambda key, names: {n: np.mean([r[key] for r in per[n]]) for n in names}
    g = means('mean_gap', BASELINES); best_g = min(g, key=g.get)
    c = means('cost', BASELINES); best_c = min(c, key=c.get)
    dg, sg = paired_of(per, 'deccal', best_g, 'mean_gap')
    dl, sl = paired_of(per, 'deccal', 'temperature', 'log_loss')
    dc, sc = paired_of(per, 'deccal', best_c, 'cost')
    return dict(best_g=best_g, dg=dg, sg=sg, best_c=best_c, dl=dl, sl=sl, dc=dc, sc=sc,
                v_gap=dg <= sg, v_gap2=dg <= -2 * sg, v_ll=dl <= 0.01, v_cost=dc <= sc)


def reg_verdict(per):
    "The paired differences deccal - residual distribution and the three checks of one regression cell."
    dg, sg = paired_of(per, 'deccal', 'residuals', 'mean_gap')
    dc, sc = paired_of(per, 'deccal', 'residuals', 'nv_cost')
    return dict(v_gap=dg <= sg, v_gap2=dg <= -2 * sg, v_cost=dc <= sc)


# ----------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seeds', type=int, default=20)
    ap.add_argument('--datasets', default=None, help='comma-separated names (classification and regression)')
    ap.add_argument('--models', default=None, help='comma-separated: logreg, gnb, hgb, rf (classification); ridge, hgb')
    ap.add_argument('--part', default='both', choices=('both', 'classification', 'regression'))
    ap.add_argument('--quick', action='store_true', help='2 seeds, few cells: a smoke run')
    ap.add_argument('--mcgrad-python', default=os.path.join(os.path.dirname(REPO), 'venv-mcgrad', 'bin', 'python'),
                    help="the Python of a venv with mcgrad installed ('' to skip MCGrad)")
    ap.add_argument('--write', action='store_true')
    ap.add_argument('--out', default='skeptic_results.md')
    a = ap.parse_args(argv)
    cds, rds = clf_datasets(), reg_datasets()
    if a.quick:
        a.seeds = 2
        a.datasets = a.datasets or 'breast_cancer,digits,diabetes'
        a.models = a.models or 'logreg,hgb,ridge'
    dsel = a.datasets.split(',') if a.datasets else list(cds) + list(rds)
    msel = a.models.split(',') if a.models else ['logreg', 'gnb', 'hgb', 'rf', 'ridge']
    use_mcgrad = bool(a.mcgrad_python) and os.path.exists(a.mcgrad_python)
    T0 = time.perf_counter()
    log = lambda s: print(f"[{time.perf_counter() - T0:6.0f} s] {s}", file=sys.stderr, flush=True)
    out_lines, notes = [], []
    mc_note = None if use_mcgrad else f"MCGrad skipped: no Python at {a.mcgrad_python!r}"
    if use_mcgrad:
        probe = 'import mcgrad, torch; print(mcgrad.__version__, torch.__version__)'
        r = subprocess.run([a.mcgrad_python, '-c', probe], capture_output=True, text=True)
        mc_note = (f"MCGrad {r.stdout.split()[0]} (torch {r.stdout.split()[1]}, in its own venv)" if r.returncode == 0
                   else "MCGrad skipped: its venv does not import mcgrad")
        use_mcgrad = r.returncode == 0

    # ------------------------------------------------------------- classification
    if a.part in ('both', 'classification'):
        crow, prow, vrow = [], [], []
        for dname in [d for d in dsel if d in cds]:
            loader, expensive, desc = cds[dname]
            X, y = loader()
            y = np.unique(y, return_inverse=True)[1]
            C = int(y.max()) + 1
            costs = random_costs(C)
            M = fixed_costs(C, expensive)
            for mname in [m for m in CLF_MODELS if m in msel]:
                per, mc_in, fs_names = {}, [], []
                for seed in range(a.seeds):
                    rows, mi, yt, sizes = clf_split(X, y, mname, seed, costs, M)
                    for k, r in rows.items(): per.setdefault(k, []).append(r)
                    fs_names.append(rows['deccal'].pop('first_stage'))
                    if mi is not None: mc_in.append((mi, yt))
                    log(f"{dname} {mname} seed {seed}")
                if mc_in and use_mcgrad:
                    res, err = run_mcgrad(a.mcgrad_python, [m for m, _ in mc_in])
                    if res is None: mc_note = f"MCGrad failed: {err}"
                    else:
                        for (p1, secs), (_, yt) in zip(res, mc_in):
                            p1 = np.clip(p1, 0, 1)
                            P = np.column_stack([1 - p1, p1])
                            r = prob_metrics(P, P, yt, costs, M, (P @ M.T).argmin(1), secs)
                            per.setdefault('mcgrad', []).append(r)
                        log(f"{dname} {mname} MCGrad")
                notes.append(f"{dname} ({desc}): {len(y)} rows, {X.shape[1]} features, {C} classes; "
                             f"train/calibrate/test {sizes[0]}/{sizes[1]}/{sizes[2]}; expensive class {expensive}")
                order = ['none', 'sigmoid', 'isotonic', 'temperature', 'matrix'] \
                    + (['mcgrad'] if 'mcgrad' in per else []) + ['deccal', '(noise floor)']
                for name in order:
                    rs = per[name]
                    crow.append([dname, mname, name] + [fmt([r[k] for r in rs], nd, k) if k in rs[0] else ''
                                                        for k, _, nd in CLF_COLS])
                v = clf_verdict(per)
                fsn = ', '.join(f"{n} x{fs_names.count(n)}" for n in dict.fromkeys(fs_names))
                prow.append([dname, mname, v['best_g'], f"{v['dg']:+.4f} ± {v['sg']:.4f}",
                             f"{v['dl']:+.3f} ± {v['sl']:.3f}",
                             v['best_c'], f"{v['dc']:+.4f} ± {v['sc']:.4f}", fsn])
                vrow.append([dname, mname, yn(v['v_gap']), yn(v['v_gap2']), yn(v['v_ll']), yn(v['v_cost'])])
        out_lines += ['## Classification', '',
                      *table(crow, ['data', 'base', 'calibrator'] + [h for _, h, _ in CLF_COLS]), '',
                      '### Paired differences (deccal minus baseline; mean ± paired se over splits)', '',
                      *table(prow, ['data', 'base', 'best gap baseline', 'mean gap: deccal - best',
                                    'log loss: deccal - temperature', 'best cost baseline', 'cost: deccal - best',
                                    "deccal's first stage"]), '',
                      '### Verdicts', '',
                      *table(vrow, ['data', 'base', 'gap <= best + 1 se', 'gap below best by >= 2 se',
                                    'log loss <= temperature + 0.01', 'cost <= best + 1 se']), '']

    # ------------------------------------------------------------- regression
    if a.part in ('both', 'regression'):
        losses, stack = random_losses()
        nv = newsvendor_loss()
        rrow, prow, vrow = [], [], []
        for dname in [d for d in dsel if d in rds]:
            loader, desc = rds[dname]
            X, y = loader()
            for mname in [m for m in REG_MODELS if m in msel]:
                per = {}
                for seed in range(a.seeds):
                    rows, sizes = reg_split(X, y, mname, seed, losses, stack, nv)
                    for k, r in rows.items(): per.setdefault(k, []).append(r)
                    log(f"{dname} {mname} seed {seed}")
                notes.append(f"{dname} ({desc}): {len(y)} rows, {X.shape[1]} features; "
                             f"train/calibrate/test {sizes[0]}/{sizes[1]}/{sizes[2]}")
                for name in ('point', 'residuals', 'deccal'):
                    rs = per[name]
                    rrow.append([dname, mname, name] + [fmt([r[k] for r in rs], nd) if k in rs[0] else ''
                                                        for k, _, nd in REG_COLS])
                cells = []
                for key, nd in (('mean_gap', 4), ('max_gap', 4), ('nv_cost', 4), ('nv_gap', 4), ('sq', 4),
                                ('pb10', 4), ('pb50', 4), ('pb90', 4)):
                    if key in per['deccal'][0]:
                        m, s = paired_of(per, 'deccal', 'residuals', key)
                        cells.append(f"{m:+.{nd}f} ± {s:.{nd}f}")
                    else: cells.append('')
                prow.append([dname, mname] + cells)
                v = reg_verdict(per)
                vrow.append([dname, mname, yn(v['v_gap']), yn(v['v_gap2']), yn(v['v_cost'])])
        qnote = ('deccal has predict_quantiles: its pinball columns are filled.'
                 if any(r[2] == 'deccal' and r[8] for r in rrow)
                 else 'DecisionCalibratedRegressor has no predict_quantiles (yet): its pinball columns are empty.')
        out_lines += ['## Regression', '', qnote, '',
                      *table(rrow, ['data', 'base', 'prediction'] + [h for _, h, _ in REG_COLS]), '',
                      '### Paired differences (deccal minus the residual distribution; mean ± paired se over splits)',
                      '',
                      *table(prow, ['data', 'base', 'mean gap', 'max gap', 'newsvendor cost', 'newsvendor gap',
                                    'sq loss', 'pinball 0.1', 'pinball 0.5', 'pinball 0.9']), '',
                      '### Verdicts (deccal against the residual distribution)', '',
                      *table(vrow, ['data', 'base', 'gap <= residuals + 1 se', 'gap below residuals by >= 2 se',
                                    'newsvendor cost <= residuals + 1 se']), '']

    elapsed = time.perf_counter() - T0
    summary = (f"{a.seeds} seeds (splits), means ± standard errors over seeds; 200 random decision makers "
               f"(A = 5); total {elapsed:.0f} s")
    print('\n'.join(out_lines)); print(summary)
    for n in dict.fromkeys(notes): print(n)
    if mc_note: print(mc_note)
    if a.write:
        from deccal.runtime import atomic_write
        out = os.path.join(REPO, 'bench', a.out)
        cmd = 'python bench/skeptic.py ' + ' '.join(shlex.quote(x) for x in (sys.argv[1:] if argv is None else argv))
        title = "# The skeptic's benchmark: deccal's estimators with their defaults against the usual calibrators"
        text = '\n'.join([title,
                          '', machine_info(('estimators.py', 'first_stage.py', 'dimfree.py')), '',
                          f"Produced by `{cmd.strip()}`. {summary}.", '',
                          *[f"- {n}" for n in dict.fromkeys(notes)], *([f"- {mc_note}"] if mc_note else []), '',
                          'What every column means, and how the splits, cost matrices and losses are made: the '
                          "docstring of bench/skeptic.py.", '',
                          *out_lines, '<!-- analysis -->', ''])
        if os.path.exists(out):            # keep the analysis written below the marker (re-read it against new numbers)
            with open(out) as fh: prev = fh.read().partition('<!-- analysis -->')[2].lstrip('\n')
            text += prev
        atomic_write(out, lambda f: f.write(text.encode()))
        print(f"wrote {out}")


if __name__ == '__main__':
    main()
