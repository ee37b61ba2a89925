"""The fast transform (one Numba kernel over rows, factored output) against the replay as it was before it: the
reference below is that code, kept verbatim as plain NumPy (round by round products with BLAS, `quantal_response`,
the plain `Embedding` with an N x (M0 + m) theta)."""
import numba
import numpy as np
import pytest

from deccal import DimFreeDeCal, ZhaoDeCal, Embedding, RBF, Linear, MinKernel, linear_loss
from deccal.audit import explicit_predictions
from deccal.crossfit import mean_embedding
from deccal.decisions import quantal_response
from deccal.embedding import FactoredEmbedding


def reference_replay(cal, pred, path=False):
    "The replay before the Numba kernel (the library's code, round by round in NumPy)."
    S, A, beta, R2 = cal._stacked(), cal.params_['n_actions'], cal.params_['beta'], cal.R2_
    N, TA = pred.n, S['C'].shape[0]
    if TA:
        h = cal.basis_.h(pred)
        HC, HD = h @ S['C'].T, h @ S['D'].T
    BG = np.concatenate([S['BC'][:, :, None], S['GD'][:, :, None]], axis=2)
    a = np.zeros((N, TA))
    n2 = pred.sq_norms(cal.params_['kernel'])
    c = np.minimum(1.0, R2 / np.sqrt(np.maximum(n2, 1e-300)))
    cs, n2s = [c], [n2]
    for t0 in range(0, TA, A):
        sl = slice(t0, t0 + A)
        if t0:
            M = a[:, :t0] @ BG[:t0, sl].reshape(t0, 2 * A)
            e, qd = HC[:, sl] + M[:, 0::2], HD[:, sl] + M[:, 1::2]
        else: e, qd = HC[:, sl], HD[:, sl]
        k = quantal_response(c[:, None] * e, beta)
        kk = k / c[:, None]
        n2 = n2 + 2 * np.einsum('ia,ia->i', kk, qd) + np.einsum('ia,ab,ib->i', kk, S['GD'][sl, sl], kk)
        a[:, sl] = kk
        c = np.minimum(c, R2 / np.sqrt(np.maximum(n2, 1e-300)))
        cs.append(c); n2s.append(n2)
    return (c, a, n2, cs, n2s) if path else (c, a, n2)


def reference_transform(cal, pred):
    "The plain Embedding the transform built before (with the base's scale gamma kept: c gamma)."
    b, S = cal.basis_, cal._stacked()
    atoms, _ = b.expand(np.zeros((0, b.m)))
    c, a, _ = reference_replay(cal, pred)
    _, coef = b.expand(c[:, None] * (a @ S['D']))
    return Embedding(pred.Z, pred.W, np.vstack([pred.V, atoms]), np.hstack([c[:, None] * pred.theta, coef]),
                     c * pred.gamma)


def data(n, seed, d=2):
    r = np.random.default_rng(seed)
    x = r.uniform(0.05, 1, (n, d))
    return Embedding.from_points(0.7 * x), 0.8 * x + 0.2 * r.uniform(0, 1, (n, d))


def dim(kernel): return 1 if isinstance(kernel, MinKernel) else 2


def fitted(cls=DimFreeDeCal, kernel=None, rounds=8, weights=None, **kw):
    p, y = data(200, 1, dim(kernel))
    opts = dict(n_actions=4, eps=1e-5, max_rounds=rounds, early_stopping=False, n_starts=1, max_iter=30, **kw)
    cal = cls(kernel or RBF(1.0), **opts).fit(p, y, sample_weight=weights)
    assert len(cal.rounds_) == rounds
    return cal


def rel_err(x, ref):
    return np.abs(x - ref).max() / max(np.abs(ref).max(), 1e-300)


CASES = {
    'rbf': lambda: fitted(),
    'linear': lambda: fitted(kernel=Linear()),
    'min': lambda: fitted(kernel=MinKernel()),
    'learning_rate': lambda: fitted(learning_rate=0.4),
    'weights': lambda: fitted(weights=np.random.default_rng(3).integers(0, 4, 200).astype(float)),
    'zhao': lambda: fitted(ZhaoDeCal),
    'more_directions_than_atoms': lambda: fitted(exact_max=8, max_rank=10),
}


@pytest.fixture(scope='module', params=list(CASES))
def cal(request): return CASES[request.param]()


def test_more_directions_than_atoms():
    cal = CASES['more_directions_than_atoms']()
    assert cal.basis_.m < len(cal._stacked()['D']) and not cal._stacked()['by_rounds']
    assert cal.transform(data(5, 2)[0]).coef.shape == (5, cal.basis_.m)


def test_transform_equals_reference(cal):
    new, _ = data(301, 7, dim(cal.params_['kernel']))        # 4 full tiles of 64 rows and a partial one
    out, ref = cal.transform(new), reference_transform(cal, new)
    assert isinstance(out, FactoredEmbedding) and out._theta is None
    assert rel_err(out.theta, ref.theta) <= 1e-12
    assert rel_err(out.gamma, ref.gamma) <= 1e-12
    np.testing.assert_array_equal(out.V, ref.V)
    np.testing.assert_array_equal(out.Z, ref.Z)


def test_path_equals_reference(cal):
    new, _ = data(130, 8, dim(cal.params_['kernel']))
    got, ref = cal._replay(new, path=True), reference_replay(cal, new, path=True)
    for g, r in zip(got[:3], ref[:3]): assert rel_err(g, r) <= 1e-12
    for g, r in zip(got[3:], ref[3:]): assert rel_err(np.array(g), np.array(r)) <= 1e-12


def test_same_with_one_thread(cal):
    new, _ = data(301, 9, dim(cal.params_['kernel']))
    outs = []
    for nt in (numba.config.NUMBA_NUM_THREADS, 1):
        old = numba.get_num_threads(); numba.set_num_threads(nt)
        try: outs.append(cal.transform(new))
        finally: numba.set_num_threads(old)
    np.testing.assert_array_equal(outs[0].coef, outs[1].coef)
    np.testing.assert_array_equal(outs[0].s, outs[1].s)


def test_factored_methods_equal_plain(cal):
    new, y = data(90, 10, dim(cal.params_['kernel']))
    out = cal.transform(new)
    kern = cal.params_['kernel']
    plain = reference_transform(cal, new)
    u = np.random.default_rng(11).uniform(0.05, 1, (17, new.dim))
    loss = linear_loss(np.random.default_rng(12).normal(size=(3, 2)))
    assert rel_err(out.evaluate(kern, u), plain.evaluate(kern, u)) <= 1e-11
    assert rel_err(out.evaluate_paired(kern, y), plain.evaluate_paired(kern, y)) <= 1e-11
    assert rel_err(out.sq_norms(kern), plain.sq_norms(kern)) <= 1e-11
    assert rel_err(out.sq_error(kern, y), plain.sq_error(kern, y)) <= 1e-10
    if isinstance(kern, Linear): assert rel_err(out.loss_estimates(loss), plain.loss_estimates(loss)) <= 1e-11
    assert out._theta is None                   # none of these built theta
    sub = out[np.arange(5, 40)]
    assert isinstance(sub, FactoredEmbedding)
    assert rel_err(sub.theta, plain.theta[5:40]) <= 1e-12


def test_consumers_of_the_output():
    cal = fitted(kernel=Linear())
    new, y = data(50, 12)
    out, plain = cal.transform(new), reference_transform(cal, new)
    assert rel_err(explicit_predictions(out, Linear()), explicit_predictions(plain, Linear())) <= 1e-12
    both = Embedding.concat(out, plain)
    assert rel_err(explicit_predictions(both, Linear())[:50], explicit_predictions(plain, Linear())) <= 1e-12
    avg = mean_embedding([out, out])
    assert rel_err(explicit_predictions(avg, Linear()), explicit_predictions(plain, Linear())) <= 1e-12
    assert type(out.to_embedding()) is Embedding
    assert rel_err(out.inner(Linear(), plain), plain.inner(Linear())) <= 1e-12


def test_base_scale_kept():
    "gamma != 1: the same functions written with scaled weights calibrate to the same functions."
    cal = fitted(kernel=Linear())
    new, _ = data(70, 13)
    g = np.random.default_rng(14).uniform(0.5, 2, 70)
    a = cal.transform(Embedding(new.Z, new.W, gamma=g))
    b = cal.transform(Embedding(new.Z, g[:, None] * new.W))
    assert rel_err(explicit_predictions(a, Linear()), explicit_predictions(b, Linear())) <= 1e-12
