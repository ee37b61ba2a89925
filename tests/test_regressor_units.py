"""The regressor on y's own scale: affine equivariance, losses in y's units, intervals, the lean distribution path."""
import warnings
import numpy as np
import pytest
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LinearRegression
from deccal.checks import DeccalError
from deccal.embedding import FactoredEmbedding
from deccal.estimators import DecisionCalibratedRegressor
from deccal.kernels import MinKernel, RBF
from deccal.losses import OutcomeScale, PiecewiseLinearLoss, newsvendor_loss, pinball_loss


class Affine(RegressorMixin, BaseEstimator):
    "A fixed model a * (x0 + x1^2 / 2) + b: the same forecaster in other units."
    def __init__(self, a=1.0, b=0.0): self.a, self.b = a, b
    def fit(self, X, y): self.n_features_in_ = X.shape[1]; return self
    def predict(self, X): return self.a * (X[:, 0] + 0.5 * X[:, 1] ** 2) + self.b


def problem(n, seed):
    "Heteroscedastic skewed outcomes: the model misses the noise's shape and its dependence on x2."
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.gamma(2.0, 0.3 + 0.6 * (X[:, 2] > 0)) - 1.0
    return X, y


@pytest.fixture(scope='module')
def fitted():
    X, y = problem(2400, 0)
    est = DecisionCalibratedRegressor(FrozenEstimator(Affine().fit(X, y)), max_rounds=8, n_actions=3)
    return est.fit(X[:1200], y[:1200]), X[1200:], y[1200:]


def test_default_is_min_kernel_on_the_scaled_outcome(fitted):
    est, X, y = fitted
    assert est.kernel_ == MinKernel() and isinstance(est.outcome_scale_, OutcomeScale)
    assert est.outcome_scale_.lo < y.min() + 1 and est.outcome_scale_.hi > est.outcome_scale_.lo
    Z = est.start_atoms(X[:50])
    assert Z.shape == (50, est.n_samples_, 1) and est.n_samples_ == int(np.sqrt(1200) / 2)   # default_n_samples
    # the atoms are in y's units: around the model's prediction, not in [0, 1]
    pred = Affine().predict(X[:50])
    assert np.abs(np.median(Z[:, :, 0], axis=1) - pred).max() < 3.0 and Z.min() < 0


def test_affine_equivariance():
    "y -> a y + b with the model in the same units: every output in y's units moves the same way."
    X, y = problem(900, 1)
    a, b = 250.0, 40.0
    fits = [DecisionCalibratedRegressor(FrozenEstimator(Affine(s, t).fit(X, y)), max_rounds=4)
            .fit(X[:600], (s * y + t)[:600]) for s, t in ((1.0, 0.0), (a, b))]
    Xt = X[600:]
    q1, q2 = (f.predict_quantiles(Xt, [0.1, 0.5, 0.9]) for f in fits)
    np.testing.assert_allclose(q2, a * q1 + b, rtol=1e-7, atol=1e-6 * a)
    i1, i2 = (f.predict_interval(Xt, 0.2) for f in fits)
    np.testing.assert_allclose(i2, a * i1 + b, rtol=1e-7, atol=1e-6 * a)
    nv = newsvendor_loss(3.0, 1.0, [-0.5, 0.5, 1.5])
    nv2 = newsvendor_loss(3.0 / a, 1.0 / a, a * np.array([-0.5, 0.5, 1.5]) + b)   # the same costs per unit of y
    np.testing.assert_allclose(fits[1].predict_loss(Xt, nv2), fits[0].predict_loss(Xt, nv), rtol=1e-7, atol=1e-9)
    assert fits[0].start_ == fits[1].start_ and fits[0].calibrator_.best_round_ == fits[1].calibrator_.best_round_


def test_losses_in_y_units_match_the_kernel(fitted):
    est, X, y = fitted
    nv = newsvendor_loss(2.0, 1.0, np.quantile(y, [0.2, 0.5, 0.8]))
    kl = nv.in_kernel(est.outcome_scale_)
    np.testing.assert_allclose(est.predict_loss(X[:40], nv), est.calibrated_embedding(X[:40]).loss_estimates(kl),
                               rtol=1e-12, atol=1e-12)
    # on the widened range the kernel representation is the loss itself
    t = np.linspace(est.outcome_scale_.lo, est.outcome_scale_.hi, 301)
    np.testing.assert_allclose(kl.value(est.outcome_scale_.to_kernel(t)[:, None]), nv.value(t), atol=1e-9)
    np.testing.assert_array_equal(est.predict_action(X[:40], nv), est.predict_loss(X[:40], nv).argmin(1))
    pb = pinball_loss(0.9, [0.0, 1.0])
    np.testing.assert_allclose(pb.value([2.0]), [[0.9 * 2.0, 0.9 * 1.0]])


def test_expected_losses_of_the_distribution_are_the_promise_without_rounds():
    "With no round kept the distribution is the start and its expected loss is the kernel estimate."
    X, y = problem(800, 2)
    est = DecisionCalibratedRegressor(FrozenEstimator(Affine().fit(X, y)), max_rounds=0).fit(X[:500], y[:500])
    assert est.calibrator_.best_round_ == 0
    Z, W = est.atom_weights(X[500:])
    np.testing.assert_array_equal(W, np.full(W.shape, 1.0 / W.shape[1]))
    loss = PiecewiseLinearLoss([0.0, 1.0], [-1.0, -0.5], [2.0, 1.0], [0.3, 0.0])
    direct = np.einsum('ib,iba->ia', W, loss.value(Z[:, :, 0].ravel()).reshape(*W.shape, 2))
    np.testing.assert_allclose(est.predict_loss(X[500:], loss), direct, rtol=1e-9, atol=1e-9)


def test_interval_coverage_on_new_rows():
    "Marginal coverage of the 80% interval on 6,000 new rows, within three binomial standard errors of 0.8 or above."
    X, y = problem(9000, 3)
    est = DecisionCalibratedRegressor(FrozenEstimator(Affine().fit(X, y)), max_rounds=6).fit(X[:3000], y[:3000])
    I = est.predict_interval(X[3000:], 0.2)
    assert (I[:, 0] <= I[:, 1]).all()
    cover = ((y[3000:] >= I[:, 0]) & (y[3000:] <= I[:, 1])).mean()
    assert cover >= 0.8 - 3 * np.sqrt(0.8 * 0.2 / 6000), cover
    assert cover <= 0.86, cover                        # and not by being needlessly wide
    with pytest.raises(DeccalError, match='alpha'): est.predict_interval(X[:5], 0.0)
    with pytest.raises(DeccalError, match='alpha'): est.predict_interval(X[:5], 1.5)


def test_calibrated_embedding_stays_factored(fitted):
    est, X, y = fitted
    emb = est.calibrated_embedding(X)
    assert isinstance(emb, FactoredEmbedding)
    # memory O(n (B + T A)): the per-row weights are over the rounds' functions, not over the shared atoms
    assert emb.coef.shape[1] <= 5 * max(est.calibrator_.best_round_, 1) * est.n_actions_ < len(emb.U) or \
        est.calibrator_.best_round_ == 0


def test_other_kernels_warn_and_multivariate_keeps_rbf():
    X, y = problem(500, 4)
    nv = newsvendor_loss(2.0, 1.0, [0.0, 1.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        est = DecisionCalibratedRegressor(LinearRegression(), kernel=RBF(0.5), losses=nv, cv=3, max_rounds=1).fit(X, y)
    assert any('not in the RKHS of RBF(gamma=0.5)' in str(w.message) for w in caught)
    assert est.outcome_scale_ is None
    Y2 = np.column_stack([y, 2 * y])
    est2 = DecisionCalibratedRegressor(LinearRegression(), cv=3, max_rounds=1).fit(X, Y2)
    assert est2.outcome_scale_ is None and isinstance(est2.kernel_, RBF)
    with pytest.raises(DeccalError, match='losses'):
        DecisionCalibratedRegressor(LinearRegression(), losses=nv, cv=3).fit(X, Y2)
    with pytest.raises(DeccalError, match='loss'):
        est2.predict_loss(X[:3], nv)


def test_bad_losses_named():
    with pytest.raises(DeccalError, match='underage: costs must be > 0'): newsvendor_loss(-1.0, 1.0, [1.0])
    with pytest.raises(DeccalError, match='losses'):
        X, y = problem(200, 5)
        DecisionCalibratedRegressor(LinearRegression(), losses=[newsvendor_loss(1.0, 1.0, [0.0]), 'x'], cv=3).fit(X, y)
