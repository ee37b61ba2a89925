"""Checks of the definitions through the public names only.

References here are computed independently of deccal: direct NumPy formulas, closed forms and
Monte Carlo estimates with their standard errors.
"""
import numpy as np
import pytest
import deccal
from deccal.kernels import make_kernel

rng = np.random.default_rng(12345)

# --- independent references -------------------------------------------------------------------
def ref_gram(name, A, B):
    dot = A @ B.T
    if name == 'linear': return dot
    if name == 'poly': return (dot + 0.5) ** 3
    if name == 'rbf': return np.exp(-0.7 * ((A[:, None] - B[None]) ** 2).sum(-1))
    if name == 'laplacian': return np.exp(-0.3 * np.abs(A[:, None] - B[None]).sum(-1))
    if name == 'min': return np.minimum(A[:, :1], B[:, 0][None])
    if name == 'exp': return np.exp(dot)

# built through the registry (the names and parameters that files and the command line use)
PARAMS = {'linear': {}, 'poly': {'degree': 3, 'c': 0.5}, 'rbf': {'gamma': 0.7}, 'laplacian': {'gamma': 0.3},
          'min': {}, 'exp': {}}
KERNELS = {name: make_kernel(name, **params) for name, params in PARAMS.items()}

def points(name, n, d):
    if name == 'min': return rng.uniform(0, 1, (n, 1))
    return rng.normal(size=(n, d)) * (0.4 if name == 'exp' else 1.0)

@pytest.mark.parametrize('name', list(KERNELS))
@pytest.mark.parametrize('d', [1, 3, 10])
def test_kernel_matches_numpy(name, d):
    A, B = points(name, 40, d), points(name, 4500, d)
    K = KERNELS[name].gram(A, B)
    if name in ('linear', 'poly'):   # dot-product kernels: error relative to the condition scale sum |a_k b_k|
        exact = ref_gram(name, A.astype(np.longdouble), B.astype(np.longdouble))
        scale = ref_gram(name, np.abs(A), np.abs(B))
        assert np.all(np.abs(K - exact) <= 1e-12 * scale)
    else:
        np.testing.assert_allclose(K, ref_gram(name, A, B), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(KERNELS[name].diag(A), np.diag(ref_gram(name, A, A)), rtol=1e-12)

@pytest.mark.parametrize('name', list(KERNELS))
def test_gram_symmetric_psd(name):
    Y = points(name, 150, 3)
    G = KERNELS[name].gram(Y)
    assert np.array_equal(G, G.T)
    ev = np.linalg.eigvalsh(G)
    assert ev.min() >= -1e-10 * max(1.0, ev.max())

def test_rbf_exp_accuracy_far_range():
    # arguments from 0 down to about -700: values span 1 .. 1e-304
    A = np.zeros((1, 1)); B = np.linspace(0, 26, 3000)[:, None]
    np.testing.assert_allclose(deccal.RBF(1.0).gram(A, B)[0], np.exp(-B[:, 0] ** 2), rtol=1e-13, atol=1e-300)

# --- exact representations of the paper's two examples -----------------------------------------
def test_piecewise_linear_exact_and_norm_bound():
    R = 3.0
    k1, k2, c = rng.uniform(-R, R, 8), rng.uniform(-R, R, 8), rng.uniform(0, 1, 8)
    loss = deccal.piecewise_linear_loss(k1, k2, c)
    y = np.concatenate([rng.uniform(0, 1, 1000), c, [0, 1]])[:, None]
    direct = np.where(y < c, k1 * y, k2 * y + (k1 - k2) * c)
    assert np.max(np.abs(loss.value(y) - direct)) <= 1e-10
    assert np.all(loss.norms() <= R + 1e-12)
    # the closed form of the norm: int_0^1 g'(t)^2 dt = c k1^2 + (1 - c) k2^2
    np.testing.assert_allclose(loss.norms() ** 2, c * k1 ** 2 + (1 - c) * k2 ** 2, rtol=1e-12)

def test_cobb_douglas_exact_and_norm_bound():
    d = 6
    alpha = rng.dirichlet(np.ones(d), size=5)
    loss = deccal.cobb_douglas_loss(alpha)
    Y = rng.uniform(0, 1, (1000, d))
    direct = np.exp(Y @ alpha.T)
    assert np.max(np.abs(loss.value(Y) - direct) / direct) <= 1e-10
    assert np.all(loss.norms() <= np.sqrt(np.e))
    np.testing.assert_allclose(loss.norms(), np.exp((alpha ** 2).sum(1) / 2), rtol=1e-12)

def test_linear_loss_and_estimates():
    R = rng.normal(size=(3, 4)); loss = deccal.linear_loss(R)
    Yh = rng.normal(size=(20, 4))
    np.testing.assert_allclose(deccal.Embedding.from_points(Yh).loss_estimates(loss), Yh @ R.T, rtol=1e-12, atol=1e-12)
    P = rng.dirichlet(np.ones(4), 20)
    np.testing.assert_allclose(deccal.Embedding.from_probs(P, np.eye(4)).loss_estimates(loss), P @ R.T,
                               rtol=1e-12, atol=1e-12)

# --- decision rules ------------------------------------------------------------------------------
def test_quantal_response_limits():
    F = rng.normal(size=(3000, 6))
    srt = np.sort(F, 1); margin = srt[:, 1] - srt[:, 0]
    k, br = deccal.quantal_response(F, 1e6), deccal.best_response(F)
    unique = 1e6 * margin > 746   # beyond this the other weights underflow to exactly 0
    assert unique.mean() > 0.99
    assert np.array_equal(k[unique], br[unique])
    k8 = deccal.quantal_response(F * 1e3, 1e8)
    assert np.all(np.isfinite(k8)) and np.allclose(k8.sum(1), 1)
    np.testing.assert_allclose(deccal.quantal_response(F[:5], 1.5),
                               np.exp(-1.5 * F[:5]) / np.exp(-1.5 * F[:5]).sum(1, keepdims=True), rtol=1e-13)

# --- loss estimates from samples are Monte Carlo expectations ------------------------------------
def test_sample_estimates_match_closed_form_within_standard_error():
    n, B, d, s = 300, 500, 3, 0.25
    mu = rng.uniform(0, 1, (n, d))
    S = mu[:, None, :] + s * rng.normal(size=(n, B, d))
    alpha = rng.dirichlet(np.ones(d), 3); loss = deccal.cobb_douglas_loss(alpha)
    est = deccal.Embedding.from_samples(S).loss_estimates(loss)
    exact = np.exp(mu @ alpha.T + s ** 2 * (alpha ** 2).sum(1) / 2)   # E exp(<alpha, y>), y ~ N(mu, s^2 I)
    vals = np.exp(np.einsum('nbd,ad->nba', S, alpha))
    se = vals.std(1, ddof=1) / np.sqrt(B)
    z = (est - exact) / se
    assert np.abs(z).max() < 5                  # 900 estimates: P(max |z| > 5) < 1e-3
    assert abs(z.mean()) < 3 / np.sqrt(z.size) * 2 and 0.85 < z.std() < 1.15

# --- decision calibration error ---------------------------------------------------------------------
def test_decision_calibration_error_explicit():
    n, d, A = 500, 3, 4
    Yh, Y = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    R1, R2 = rng.normal(size=(A, d)), rng.normal(size=(A, d))
    pred = deccal.Embedding.from_points(Yh)
    for beta in (None, 3.0):
        F2 = Yh @ R2.T
        k = (np.eye(A)[F2.argmin(1)] if beta is None else np.exp(-beta * (F2 - F2.min(1, keepdims=True))))
        k = k / k.sum(1, keepdims=True)
        expect = abs(np.mean(np.sum(((Y - Yh) @ R1.T) * k, 1)))
        got = deccal.decision_calibration_error(pred, Y, deccal.linear_loss(R1), deccal.linear_loss(R2), beta)
        assert abs(got - expect) <= 1e-12

# --- bad input ------------------------------------------------------------------------------------
def test_bad_input_names_argument():
    pred = deccal.Embedding.from_points(rng.normal(size=(5, 2)))
    loss = deccal.linear_loss(np.ones((2, 2)))
    cases = [
        (lambda: deccal.RBF(0), 'gamma'),
        (lambda: deccal.Laplacian(-1), 'gamma'),
        (lambda: deccal.RBF().gram(np.zeros((3, 2)), np.zeros((3, 3))), 'B:'),
        (lambda: deccal.RBF().gram([[np.nan, 1.0]]), 'A:'),
        (lambda: deccal.RBF().gram([[np.inf, 1.0]]), 'A:'),
        (lambda: deccal.MinKernel().gram([[-0.1]]), 'A: the min kernel'),
        (lambda: deccal.ExpInner().gram(np.full((1, 2), 30.0)), 'A:'),
        (lambda: deccal.quantal_response(np.zeros((2, 2)), 0), 'beta'),
        (lambda: deccal.quantal_response(np.zeros((2, 2)), -2.0), 'beta'),
        (lambda: deccal.quantal_response(np.zeros(2), 1.0), 'F:'),
        (lambda: deccal.Embedding.from_samples(np.zeros((4, 0, 2))), 'S: empty sample'),
        (lambda: deccal.Embedding.from_points(np.zeros((0, 2))), 'Y_hat: empty'),
        (lambda: deccal.Embedding.from_probs([[0.2, 0.2]], np.eye(2)), 'P:'),
        (lambda: deccal.piecewise_linear_loss([1.0], [1.0], [2.0]), 'c:'),
        (lambda: deccal.cobb_douglas_loss(np.ones(3)), 'alpha:'),
        (lambda: deccal.decision_calibration_error(pred, np.zeros((4, 2)), loss, loss), 'Y: has 4 rows'),
        (lambda: deccal.decision_calibration_error(pred, np.zeros((5, 3)), loss, loss), 'Y:'),
        (lambda: deccal.decision_calibration_error(pred, np.full((5, 2), np.nan), loss, loss), 'Y: contains'),
        (lambda: deccal.decision_calibration_error(pred, np.zeros((5, 2)), loss, loss, beta=0.0), 'beta'),
        (lambda: pred.loss_estimates(deccal.linear_loss(np.ones((2, 3)))), 'loss:'),
    ]
    for fn, msg in cases:
        with pytest.raises(ValueError, match=None) as e: fn()
        assert msg in str(e.value), (msg, str(e.value))
        assert isinstance(e.value, deccal.DeccalError) and str(e.value).startswith(e.value.arg + ': '), repr(e.value)


def test_star_import_gives_the_public_names():
    "`from deccal import *` (the nbdev habit) brings every public name the top level offers."
    import deccal
    ns = {}
    exec('from deccal import *', ns)
    for name in ('RBF', 'Embedding', 'audit', 'certify', 'DimFreeDeCal', 'ZhaoDeCal', 'load_calibrator',
                 'quantal_response'):
        assert name in ns, name
    assert set(deccal.__all__) <= set(ns) and all(not n.startswith('_') for n in deccal.__all__)
