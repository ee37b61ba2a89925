"""Inputs the estimators used to meet with a scikit-learn or NumPy message from deep inside (or hours of work):
each is now refused before any work with a DeccalError naming the argument, or gives the right answer."""
import time
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LinearRegression, LogisticRegression

import deccal.regressor_defaults as de
import deccal.kernels
from deccal.checks import DeccalError
from deccal.estimators import DecisionCalibratedClassifier, DecisionCalibratedRegressor

warnings.filterwarnings('ignore', category=UserWarning)


def _data(n=300, seed=0):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 3))
    return X, (X[:, 0] > 0).astype(int), X[:, 0] + r.normal(size=n) * .1


def _refused(arg, f, match):
    "f() raises a DeccalError naming `arg` whose message matches `match`; the error."
    with pytest.raises(DeccalError, match=match) as e: f()
    assert e.value.arg == arg, e.value
    assert '\n' not in str(e.value)                       # one line
    return e.value


class CountingLinear(LinearRegression):
    "A linear regression that counts its fits."
    fits = 0

    def fit(self, X, y, sample_weight=None):
        type(self).fits += 1
        return super().fit(X, y, sample_weight=sample_weight)


# ----------------------------------------------------------------------------- 1. an unfitted frozen estimator
@pytest.mark.parametrize('E, base', [(DecisionCalibratedClassifier, LogisticRegression),
                                     (DecisionCalibratedRegressor, LinearRegression)])
def test_unfitted_frozen_estimator(E, base):
    X, t, y = _data()
    target = t if E is DecisionCalibratedClassifier else y
    e = _refused('estimator', lambda: E(FrozenEstimator(base())).fit(X, target), 'must|not fitted')
    assert f'the frozen {base.__name__} is not fitted' in str(e)


def test_fitted_frozen_estimator_still_works():
    X, t, y = _data()
    c = DecisionCalibratedClassifier(FrozenEstimator(LogisticRegression().fit(X, t)), max_rounds=2).fit(X, t)
    assert c.predict_proba(X[:3]).shape == (3, 2)


# ----------------------------------------------------------------------------- 2. outputs of the model against y
def test_two_output_frozen_regressor_against_1d_y():
    X, _, y = _data()
    two = FrozenEstimator(LinearRegression().fit(X, np.c_[y, y]))
    e = _refused('y', lambda: DecisionCalibratedRegressor(two).fit(X, y), 'predicts 2 output')
    assert 'has 1 column' in str(e)


def test_one_output_frozen_regressor_against_2d_y():
    X, _, y = _data()
    one = FrozenEstimator(LinearRegression().fit(X, y))
    _refused('y', lambda: DecisionCalibratedRegressor(one).fit(X, np.c_[y, -y]), 'has 2 column.*predicts 1 output')


# ----------------------------------------------------------------------------- 3. labels that mix numbers and strings
@pytest.mark.parametrize('labels', [np.array([0, 'a'] * 150, dtype=object), [0, 'a'] * 150,
                                    pd.Series([1.5, 'b'] * 150), ['a', 2] * 150])
def test_mixed_labels(labels):
    X, _, _ = _data()
    _refused('y', lambda: DecisionCalibratedClassifier(max_rounds=2).fit(X, labels),
             'labels must be all numbers or all strings')


def test_mixed_labels_with_a_frozen_classifier():
    X, t, _ = _data()
    frozen = FrozenEstimator(LogisticRegression().fit(X, np.where(t == 1, 'a', 'b')))
    _refused('y', lambda: DecisionCalibratedClassifier(frozen).fit(X, [0, 'a'] * 150), 'all numbers or all strings')


def test_labels_of_one_type_keep_their_type():
    X, t, _ = _data()
    ints = DecisionCalibratedClassifier(max_rounds=2, n_folds=None).fit(X, list(t))
    assert ints.classes_.tolist() == [0, 1] and isinstance(ints.predict(X[:2])[0], np.integer)
    strs = DecisionCalibratedClassifier(max_rounds=2, n_folds=None).fit(X, np.where(t == 1, 'yes', 'no').tolist())
    assert strs.classes_.tolist() == ['no', 'yes']


# ----------------------------------------------------------------------------- 4. outcomes on extreme scales
def test_huge_outcomes_refused_up_front():
    X, _, y = _data()
    CountingLinear.fits = 0
    e = _refused('y', lambda: DecisionCalibratedRegressor(CountingLinear()).fit(X, y * 1e200), 'rescale y')
    assert '1e+150' in str(e) and 'gamma' not in str(e)
    assert CountingLinear.fits == 0
    _refused('y', lambda: DecisionCalibratedRegressor(kernel='linear').fit(X, y * 1e200), 'above 1e\\+150')


def test_tiny_outcomes_refused_for_the_default_rbf():
    "Outcomes of several dimensions keep the RBF kernel, whose median heuristic refuses squared distances that vanish."
    X, _, y = _data()
    e = _refused('y', lambda: DecisionCalibratedRegressor().fit(X, np.c_[y, y] * 1e-200), 'pass kernel=RBF')
    assert 'rescale y' in str(e)


def test_outcomes_on_extreme_scales_are_scaled_inside():
    """1-D outcomes are mapped onto the min kernel's domain by their own range, so y * 1e100 and y * 1e-200 give the
    same fit as y: the start (no round) to rounding; with rounds to the accuracy of the auditor's searches (they
    stop after 30 L-BFGS steps, so last-bit differences of the scaled arithmetic can move a witness), so those are
    compared to 1 %. For outcomes of several dimensions the median heuristic's gamma scales by 1e-200."""
    X, _, y = _data(200)
    y = np.abs(y) ** 1.5                      # a skewed outcome: the rounds have something to correct
    start = {s: DecisionCalibratedRegressor(max_rounds=0, n_folds=None).fit(X, y * s) for s in (1.0, 1e100, 1e-200)}
    for s in (1e100, 1e-200):
        np.testing.assert_allclose(start[s].predict(X[:20]) / s, start[1.0].predict(X[:20]), rtol=1e-9)
        np.testing.assert_allclose(start[s].predict_quantiles(X[:20], [0.1, 0.9]) / s,
                                   start[1.0].predict_quantiles(X[:20], [0.1, 0.9]), rtol=1e-9)
    two = {s: DecisionCalibratedRegressor(max_rounds=0, n_folds=None).fit(X, np.c_[y, y] * s) for s in (1.0, 1e100)}
    np.testing.assert_allclose(two[1e100].kernel_.gamma * 1e200, two[1.0].kernel_.gamma, rtol=1e-12)
    fit = lambda s: DecisionCalibratedRegressor(max_rounds=3, n_folds=None, early_stopping=False).fit(X, y * s)
    one, big = fit(1.0), fit(1e100)                 # without early stopping: the rounds are kept, not judged
    assert one.calibrator_.best_round_ > 0 and big.calibrator_.best_round_ > 0     # rounds were kept in both
    p_one, p_big = one.predict(X[:20]), big.predict(X[:20]) / 1e100
    assert np.isfinite(p_big).all() and np.abs(p_one - start[1.0].predict(X[:20])).max() > 1e-3   # the rounds moved it
    np.testing.assert_allclose(p_big, p_one, rtol=0.01)


# ----------------------------------------------------------------------------- 5. the work of a fit
def test_too_many_atoms_refused_before_any_fit():
    X, _, y = _data(400)
    CountingLinear.fits = 0
    t0 = time.perf_counter()
    e = _refused('n_samples', lambda: DecisionCalibratedRegressor(CountingLinear(), n_samples=1024).fit(X, y),
                 'N = 410,000 atoms')
    assert time.perf_counter() - t0 < 30 and CountingLinear.fits == 0
    best = int(str(e).split('n_samples <= ')[1].split()[0])
    assert best == de.MAX_ATOMS // 320 - 1       # 5 folds: each calibrator pairs 320 of the 400 rows whole
    de.check_fit_work(400, best)
    _refused('n_samples', lambda: de.check_fit_work(400, best + 1), f'MAX_ATOMS = {de.MAX_ATOMS:,}')


def test_default_n_samples_never_refused():
    for n in (50, de.EXACT_ROWS, 2 * de.EXACT_ROWS, 10**5, 10**8):
        de.check_fit_work(n, 16)
        assert de.fit_work(n, 16)[1] <= de.EXACT_ROWS * 17


def _counted(monkeypatch, n, B, seed=0):
    """Kernel evaluations of a regressor fit with the RBF kernel (n rows, n_samples=B), counted where each Gram matrix
    is filled (the min kernel, the default for 1-D outcomes, reads tables instead: fit_work bounds its work above)."""
    sizes, gram = [], deccal.kernels._gram_kernel

    def counting(kind, p0, p1, A, Bt, out):
        sizes.append(out.size)
        return gram(kind, p0, p1, A, Bt, out)
    monkeypatch.setattr(deccal.kernels, '_gram_kernel', counting)
    X, _, y = _data(n, seed)
    DecisionCalibratedRegressor(n_samples=B, max_rounds=3, kernel='rbf').fit(X, y)
    monkeypatch.setattr(deccal.kernels, '_gram_kernel', gram)
    return sum(sizes)


@pytest.mark.parametrize('n, B', [(100, 16), (150, 40)])
def test_work_estimate_counts_the_evaluations(monkeypatch, n, B):
    "Below exact_max rows the work is quadratic in N and fit_work's estimate is within 20% of the count."
    c, (N, _, est) = _counted(monkeypatch, n, B), de.fit_work(n, B)
    assert 0.8 < c / est < 1.1, (c, est)
    assert 7 < c / N**2 < 9


def test_work_estimate_is_an_upper_bound_above_exact_max(monkeypatch):
    n = 2 * de.EXACT_ROWS
    c, (_, N_pair, est) = _counted(monkeypatch, n, 16), de.fit_work(n, 16)
    assert c <= est and N_pair == de.EXACT_ROWS * 17


# ----------------------------------------------------------------------------- 6. sample weights reach predict
def _weighted_setup():
    r = np.random.default_rng(0)
    n = 240
    X = r.normal(size=(2 * n, 2))
    y = np.abs(X[:, 0]) + X[:, 1] ** 2 / 2 + r.exponential(size=2 * n) * (1 + (X[:, 0] > 0))
    base = FrozenEstimator(LinearRegression().fit(X[n:], y[n:]))   # linear on a curved, skewed outcome
    w = (np.arange(n) % 2 == 0).astype(float)                       # every other row weighted 0
    return base, X[:n], y[:n], w, X[n:n + 50]


def test_weights_zero_equal_dropping_rows_at_the_start():
    "Without rounds the prediction is the residual distribution's mean: zero weights are dropped rows, exactly."
    base, X, y, w, Xt = _weighted_setup()
    E = lambda: DecisionCalibratedRegressor(base, max_rounds=0, n_folds=None, early_stopping=False)
    pw, pd_, pu = (E().fit(X, y, sample_weight=w).predict(Xt), E().fit(X[w > 0], y[w > 0]).predict(Xt),
                   E().fit(X, y).predict(Xt))
    np.testing.assert_allclose(pw, pd_, rtol=0, atol=1e-10)
    assert np.abs(pw - pu).max() > 0.05


def test_weights_change_the_calibrated_predictions():
    """With rounds kept, the weighted fit is far from the unweighted one and closer to the fit without the
    zero-weight rows (not equal to it: their atoms stay in the basis, so the auditor searches a larger space and
    its witnesses differ; over these 50 rows the largest difference is about a third of the unweighted fit's, 0.033
    against 0.108, with the rows in the canonical order; a tenth in the order they were given)."""
    base, X, y, w, Xt = _weighted_setup()
    E = lambda: DecisionCalibratedRegressor(base, max_rounds=2, n_folds=None, early_stopping=False)
    mw = E().fit(X, y, sample_weight=w)
    assert len(mw.calibrator_.rounds_) == 2
    pw, pd_, pu = mw.predict(Xt), E().fit(X[w > 0], y[w > 0]).predict(Xt), E().fit(X, y).predict(Xt)
    start = np.einsum('ibd->id', mw.start_atoms(Xt))[:, 0] / mw.start_atoms(Xt).shape[1]
    assert np.abs(pw - start).max() > 0.05                 # the calibration is not trivial
    gap_u, gap_d = np.abs(pw - pu).max(), np.abs(pw - pd_).max()
    assert gap_u > 0.05 and gap_d < 0.5 * gap_u, (gap_u, gap_d)


@pytest.mark.parametrize('scale', [1e200, 1e-200])
def test_costs_far_from_one_are_refused_naming_costs(scale):
    "Costs scaled by 1e200 or 1e-200 are refused naming `costs` (not 'beta ... got 0.0' nor 'all zero')."
    from sklearn.datasets import make_classification
    from sklearn.frozen import FrozenEstimator
    from sklearn.naive_bayes import GaussianNB
    X, y = make_classification(400, 6, n_informative=4, n_classes=3, random_state=0)
    base = FrozenEstimator(GaussianNB().fit(X[:200], y[:200]))
    M = np.random.default_rng(0).uniform(0, 1, (4, 3)) * scale
    with pytest.raises(DeccalError, match=r'^costs: the largest cost is .* rescale costs'):
        DecisionCalibratedClassifier(base, costs=M, segments=None).fit(X[200:], y[200:])


@pytest.mark.parametrize('n, kw, arg', [(9, {}, 'n_folds'), (4, {}, 'n_folds'), (2, dict(n_folds=None), 'first_stage')])
def test_too_few_rows_name_the_users_argument(n, kw, arg):
    "Too few rows for the default folds are refused naming n_folds or first_stage, not an internal cv or folds."
    from sklearn.datasets import make_classification
    X, y = make_classification(300, 5, random_state=0)
    base = FrozenEstimator(LogisticRegression().fit(X[:100], y[:100]))
    yi = np.array([0, 1] * (n // 2) + [0] * (n % 2))
    with pytest.raises(DeccalError, match=f'^{arg}: '):
        DecisionCalibratedClassifier(base, **kw).fit(X[100:100 + n], yi)


from sklearn.base import BaseEstimator, ClassifierMixin  # noqa: E402


class _Float32NB(ClassifierMixin, BaseEstimator):
    "A fitted GaussianNB whose probabilities are off by `off` per row (as a float32 model rounds), or by much more."
    def __init__(self, nb=None, off=0.0): self.nb, self.off = nb, off
    def fit(self, X, y): self.classes_ = self.nb.classes_; return self
    def predict_proba(self, X): return self.nb.predict_proba(X) * (1 + self.off)
    def predict(self, X): return self.nb.predict(X)


@pytest.mark.parametrize('first_stage', ['auto', None])
def test_model_probabilities_within_rounding_are_taken_and_beyond_refused(first_stage):
    "Rows off by 5e-5 are taken by every first stage alike; off by 1e-2 refused naming the estimator."
    from sklearn.datasets import make_classification
    from sklearn.naive_bayes import GaussianNB
    X, y = make_classification(600, 6, n_informative=4, n_classes=3, random_state=0)
    nb = GaussianNB().fit(X[:200], y[:200])
    near, far = (FrozenEstimator(_Float32NB(nb, off).fit(X[:200], y[:200])) for off in (5e-5, 1e-2))
    est = DecisionCalibratedClassifier(near, first_stage=first_stage, segments=None, max_rounds=3).fit(X[200:], y[200:])
    np.testing.assert_allclose(est.predict_proba(X[:50]).sum(1), 1, atol=1e-12)
    with pytest.raises(DeccalError, match=r"^estimator: predict_proba"):
        DecisionCalibratedClassifier(far, first_stage=first_stage, segments=None).fit(X[200:], y[200:])


def test_actions_past_the_machine_are_refused_before_any_fit():
    "n_actions = 10**9 is refused naming n_actions at once, before the base model or the calibrator allocates."
    from sklearn.datasets import make_classification
    from sklearn.naive_bayes import GaussianNB
    X, y = make_classification(600, 6, n_informative=4, n_classes=3, random_state=0)
    base = FrozenEstimator(GaussianNB().fit(X[:200], y[:200]))
    t0 = time.perf_counter()
    with pytest.raises(DeccalError, match=r'^n_actions: 1,000,000,000 actions on 400 rows need about'):
        DecisionCalibratedClassifier(base, n_actions=10**9).fit(X[200:], y[200:])
    assert time.perf_counter() - t0 < 5                       # refused, not attempted (a generous bound)
