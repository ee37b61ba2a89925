"""Benchmark: deccal's DecisionCalibratedClassifier beside scikit-learn's calibrators, on data that ship with
scikit-learn.

Prints figures; it is not a test.  Usage:

    python bench/sklearn_calibration.py                 # prints the table
    python bench/sklearn_calibration.py --write --zhao  # ... with method="zhao" too, and writes
                                                        # bench/sklearn_calibration_results.md
    python bench/sklearn_calibration.py --seeds 1 --datasets digits --models LogisticRegression   # a quick look

Data: load_digits (1,797 images, 10 classes), load_breast_cancer (569 rows, 2 classes) and
make_classification (5,000 rows, 20 features, 5 classes).  Each seed splits the rows at random (stratified)
into 40% to train the base model, 30% to calibrate it and 30% to test: every figure is measured on the test
split, which neither the base model nor any calibrator sees.

Base models: LogisticRegression (on standardized features), GaussianNB, RandomForestClassifier (100 trees).
Calibrators, all given the same calibration split and the base model fitted on the training split, frozen
(sklearn.frozen.FrozenEstimator): none; CalibratedClassifierCV with method 'sigmoid', 'isotonic' and
'temperature'; deccal's DecisionCalibratedClassifier (method 'dimfree', and 'zhao' with --zhao), given the
200 evaluation cost matrices as `costs` (the decision makers the user knows of: they set n_actions and R1;
the labels of the test split are never used).

Figures (Zhao et al. 2021's evaluation): 200 random decision makers, each with A = 5 actions and a cost
matrix with entries uniform in [0, 1]; each acts by the best response to the calibrated predictions (the
action of least expected cost); for each, |mean predicted cost of the chosen actions - mean realized cost|
on the test split.  Reported: its mean and its max over the 200 decision makers; the log loss and the Brier
score (mean ||p(x) - e_y||^2) of the probabilities (`predict_proba`), the test accuracy; the calibrator's
fit time.  For deccal the decisions and predicted costs use the calibrated vectors (`calibrated_vectors`,
what its guarantee is about; `predict_loss` computes the same); the probability columns use its
`predict_proba` (the vectors projected onto the simplex).  Means over seeds (10 by default: the whole run takes
about 2 minutes on 2 cores, so more splits than the 3 first planned, for steadier standard errors) with
standard errors.  Until deccal.estimators exists (or with --direct) deccal's rows use DimFreeDeCal / ZhaoDeCal
directly on Embedding.from_probs of the frozen model's probabilities: linear kernel, n_actions = 5,
R1 = the largest row norm of the 200 cost matrices, beta = 20, eps = 0.05, line search (DimFreeDeCal),
at most 50 rounds, early stopping on 20% of the calibration split.
The row "(noise floor)" evaluates the temperature-scaled probabilities against labels drawn from themselves
(5 draws): they are calibrated for those labels, so its gaps are what sampling noise alone gives.
"""
from __future__ import annotations
import os
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults('OMP_WAIT_POLICY', 'OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS')
import argparse, sys, time, warnings

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
from _measure import machine_info, mse   # noqa: E402
from _data import sklearn_datasets, SKLEARN_MODELS, split, random_costs   # noqa: E402
from _scores import zhao_gaps, brier, noise_floor                      # noqa: E402

from sklearn.calibration import CalibratedClassifierCV                 # noqa: E402
from sklearn.frozen import FrozenEstimator                             # noqa: E402
from sklearn.metrics import log_loss                                   # noqa: E402

import deccal                                                          # noqa: E402


# ----------------------------------------------------------------------------- deccal
def deccal_available():
    "True when deccal.estimators offers DecisionCalibratedClassifier."
    try:
        from deccal.estimators import DecisionCalibratedClassifier   # noqa: F401
        return True
    except Exception as e:                                             # not written yet, or broken
        print(f"deccal.estimators not usable ({type(e).__name__}: {e}); using DimFreeDeCal on Embedding.from_probs",
              file=sys.stderr)
        return False


class _DirectDimFree:
    """The fallback when deccal.estimators is not there: DimFreeDeCal (or ZhaoDeCal) on Embedding.from_probs of the
    frozen model's probabilities, linear kernel, line search, early stopping on 20% of the calibration split."""
    def __init__(self, base, costs, method):
        self.base, self.costs, self.method = base, costs, method

    def fit(self, X, y):
        P, C = self.base.predict_proba(X), len(self.base.classes_)
        R1 = float(np.linalg.norm(self.costs, axis=2).max())
        kw = dict(n_actions=self.costs.shape[1], beta=20.0, R1=R1, max_rounds=50)
        cls = deccal.DimFreeDeCal if self.method == 'dimfree' else deccal.ZhaoDeCal
        if self.method == 'dimfree': kw['step'] = 'line-search'
        self.cal_ = cls(deccal.Linear(), **kw).fit(deccal.Embedding.from_probs(P), np.eye(C)[y])
        return self

    def calibrated_vectors(self, X):
        return deccal.explicit_predictions(self.cal_.transform(deccal.Embedding.from_probs(self.base.predict_proba(X))),
                                           deccal.Linear())

    def predict_proba(self, X):
        return _project_simplex(self.calibrated_vectors(X))


def _project_simplex(V):
    "Euclidean projection of each row onto the probability simplex (sort-based)."
    U = -np.sort(-V, axis=1)
    css = np.cumsum(U, axis=1) - 1
    k = np.arange(1, V.shape[1] + 1)
    rho = (U - css / k > 0).sum(1)
    tau = css[np.arange(len(V)), rho - 1] / rho
    return np.maximum(V - tau[:, None], 0)


# ----------------------------------------------------------------------------- one run
def methods(use_estimator, zhao):
    out = ['none', 'sigmoid', 'isotonic', 'temperature', 'deccal dimfree']
    if zhao: out.append('deccal zhao')
    return out


def calibrate(name, base, Xc, yc, costs, use_estimator):
    """Fit calibrator `name` on the calibration split; returns (V for decisions, P for probabilities as functions of X,
    fit seconds)."""
    frozen = FrozenEstimator(base)
    t0 = time.perf_counter()
    if name == 'none':
        m = base
        return m.predict_proba, m.predict_proba, 0.0, None
    if name in ('sigmoid', 'isotonic', 'temperature'):
        m = CalibratedClassifierCV(frozen, method=name).fit(Xc, yc)
        return m.predict_proba, m.predict_proba, time.perf_counter() - t0, None
    method = name.split()[-1]
    if use_estimator:
        from deccal.estimators import DecisionCalibratedClassifier
        m = DecisionCalibratedClassifier(frozen, costs=costs, method=method).fit(Xc, yc)
    else:
        m = _DirectDimFree(base, costs, method).fit(Xc, yc)
    secs = time.perf_counter() - t0
    cal = getattr(m, 'calibrator_', None) or getattr(m, 'cal_', None)
    ran = max(cal.rounds_run_) if hasattr(cal, 'rounds_run_') else len(cal.all_rounds_)  # cross-fitted: its folds' most
    return m.calibrated_vectors, m.predict_proba, secs, (cal.best_round_, ran)


def run_one(dname, X, y, mname, seed, costs, use_estimator, zhao):
    tr, ca, te = split(y, seed)
    t0 = time.perf_counter()
    base = SKLEARN_MODELS[mname]().fit(X[tr], y[tr])
    base_secs = time.perf_counter() - t0
    rows = {}
    for name in methods(use_estimator, zhao):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            vec, prob, secs, rounds = calibrate(name, base, X[ca], y[ca], costs, use_estimator)
            V, P = vec(X[te]), prob(X[te])
        gaps = zhao_gaps(V, y[te], costs)
        rows[name] = dict(mean_gap=float(gaps.mean()), max_gap=float(gaps.max()),
                          proba_gap=float(zhao_gaps(P, y[te], costs).mean()),
                          log_loss=float(log_loss(y[te], P, labels=np.arange(costs.shape[2]))), brier=brier(P, y[te]),
                          accuracy=float((P.argmax(1) == y[te]).mean()), fit_s=secs)
        if rounds is not None: rows[name].update(kept=rounds[0], run=rounds[1])
        # the noise floor: labels drawn from these probabilities, for which they are calibrated
        if name == 'temperature':
            floor = noise_floor(P, costs, seed)
    rows['(noise floor)'] = floor
    return rows, base_secs, (len(tr), len(ca), len(te))


# ----------------------------------------------------------------------------- table
COLS = [('mean_gap', 'mean gap', 4), ('max_gap', 'max gap', 4), ('proba_gap', 'mean gap of predict_proba', 4),
        ('log_loss', 'log loss', 3), ('brier', 'Brier', 4), ('accuracy', 'accuracy', 3), ('fit_s', 'fit s', 3),
        ('kept', 'rounds kept', 1), ('run', 'rounds run', 1)]


def fmt(vals, nd):
    m, se = mse(vals)
    return f"{m:.{nd}f} ± {se:.{nd}f}" if len(vals) > 1 else f"{m:.{nd}f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--seeds', type=int, default=10)
    ap.add_argument('--datasets', default='digits,breast_cancer,make_classification')
    ap.add_argument('--models', default=','.join(SKLEARN_MODELS))
    ap.add_argument('--zhao', action='store_true', help="also deccal's method='zhao'")
    ap.add_argument('--direct', action='store_true', help='use DimFreeDeCal on Embedding.from_probs even if '
                                                          'deccal.estimators exists')
    ap.add_argument('--write', action='store_true')
    ap.add_argument('--out', default='sklearn_calibration_results.md')
    a = ap.parse_args(argv)
    use_estimator = (not a.direct) and deccal_available()
    T0 = time.perf_counter()
    table, notes = [], []
    for dname in a.datasets.split(','):
        X, y = sklearn_datasets()[dname]()
        y = np.unique(y, return_inverse=True)[1]
        C = int(y.max()) + 1
        costs = random_costs(C)   # the same 200 decision makers for every seed
        for mname in a.models.split(','):
            per = {}
            base_t = []
            for seed in range(a.seeds):
                rows, bs, sizes = run_one(dname, X, y, mname, seed, costs, use_estimator, a.zhao)
                base_t.append(bs)
                for name, r in rows.items(): per.setdefault(name, []).append(r)
                print(f"  {dname} {mname} seed {seed} done ({time.perf_counter() - T0:.0f} s)",
                      file=sys.stderr, flush=True)
            notes.append(f"{dname}: {len(y)} rows, {X.shape[1]} features, {C} classes; train/calibrate/test "
                         f"{sizes[0]}/{sizes[1]}/{sizes[2]}; {mname} fit {np.mean(base_t):.2f} s")
            for name, rs in per.items():
                table.append([dname, mname, name]
                             + [fmt([r[k] for r in rs], nd) if k in rs[0] else '' for k, _, nd in COLS])
    elapsed = time.perf_counter() - T0
    head = ['data', 'base model', 'calibrator'] + [h for _, h, _ in COLS]
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    for row in table:
        lines.append('| ' + ' | '.join(row) + ' |')
    impl = ('deccal.estimators.DecisionCalibratedClassifier(FrozenEstimator(base), costs=costs, method=...)'
            if use_estimator
            else 'DimFreeDeCal / ZhaoDeCal on Embedding.from_probs (deccal.estimators not used)')
    summary = (f"{a.seeds} seeds (splits), means ± standard errors over seeds; 200 cost matrices (A = 5, entries "
               f"uniform in [0, 1]); deccal: {impl}; total {elapsed:.0f} s")
    print('\n'.join(lines)); print(summary)
    for n in dict.fromkeys(notes): print(n)
    if a.write:
        from deccal.runtime import atomic_write
        out = os.path.join(REPO, 'bench', a.out)
        text = '\n'.join(['# Calibrators on scikit-learn data: decision calibration, log loss, fit time', '',
                          machine_info(('dimfree.py', 'estimators.py') if use_estimator else ('dimfree.py',)), '',
                          'Produced by `python bench/sklearn_calibration.py --write' + (' --zhao' if a.zhao else '')
                          + '`. ' + summary + '.', '',
                          *[f"- {n}" for n in dict.fromkeys(notes)], '',
                          "Columns: mean gap / max gap = mean / max over the 200 decision makers of |mean predicted "
                          "cost of the best-response actions - mean realized cost| on the test split (Zhao et al.'s "
                          "evaluation; deccal: its calibrated vectors; mean gap of predict_proba: the same for the "
                          "probabilities, for deccal its calibrated vectors projected onto the simplex); log loss, "
                          "Brier (mean squared distance to the one-hot label, summed over classes) and accuracy of "
                          "`predict_proba` on the test split; fit s = the calibrator's fit time on the calibration "
                          "split; rounds kept / run: deccal's patches kept by early stopping / rounds it ran. (noise "
                          "floor): the same evaluation of the temperature-scaled probabilities against labels drawn "
                          "from those probabilities (5 draws), for which they are calibrated by construction: the gaps "
                          "that sampling noise alone gives on a test split of this size.", '',
                          *lines, '', '<!-- analysis -->', ''])
        if os.path.exists(out):        # keep the written analysis below the marker (re-read it against the new numbers)
            with open(out) as fh: prev = fh.read().partition('<!-- analysis -->')[2].lstrip('\n')
            text += prev
        atomic_write(out, lambda f: f.write(text.encode()))
        print(f"wrote {out}")


if __name__ == '__main__':
    main()
