"""The kernel registry, input checks, the memory budget and the blocking of kernels, losses and embeddings.

Each check of a fixed defect first asserts with names that existed before (a `ValueError` naming the
argument), so that it fails on the old code for the defect itself, then checks the new error classes.
"""
import tracemalloc
import warnings

import numpy as np
import pytest

import deccal
import deccal.runtime as dr
from deccal import kernels as dk, embedding as de


def set_budget(monkeypatch, budget, everywhere=True):
    "Set the memory budget; `everywhere`: also in modules that kept a copy of it (older versions)."
    monkeypatch.setattr(dr, 'MEMORY_BUDGET', budget, raising=False)
    if everywhere:
        for m in (dk, de):
            if hasattr(m, 'MEMORY_BUDGET'): monkeypatch.setattr(m, 'MEMORY_BUDGET', budget)


def mixed_embedding(rng, n, B, M, d=2):
    "Sample predictions with shared atoms on top and a scale: every part of an Embedding."
    p = deccal.Embedding.from_samples(rng.normal(size=(n, B, d)))
    if M: p = p.patch(rng.normal(size=(M, d)), rng.normal(size=(n, M)) / M)
    return p.scale(rng.uniform(0.5, 1.5, n))


# --- the registry -----------------------------------------------------------------------------------
def test_registry_round_trip():
    from deccal.kernels import KERNELS, make_kernel, kernel_spec
    assert set(KERNELS) == {'linear', 'poly', 'rbf', 'laplacian', 'min', 'exp'}
    ks = [deccal.Linear(), deccal.Polynomial(3, 0.5), deccal.RBF(0.7), deccal.Laplacian(0.3), deccal.MinKernel(),
          deccal.ExpInner()]
    for k in ks:
        name, params = kernel_spec(k)
        assert KERNELS[name] is type(k) and type(k).name == name
        assert make_kernel(*kernel_spec(k)) == k and make_kernel(name, **params) == k
        assert type(k)(**k.get_params()) == k
    assert kernel_spec(deccal.Polynomial(3, 0.5)) == ('poly', {'degree': 3, 'c': 0.5})
    assert kernel_spec(deccal.RBF(0.7)) == ('rbf', {'gamma': 0.7})
    assert kernel_spec(deccal.MinKernel()) == ('min', {})


def test_registry_errors():
    from deccal.kernels import make_kernel, kernel_spec
    for call in (lambda: make_kernel('gauss'), lambda: make_kernel('rbf', sigma=1.0),
                 lambda: make_kernel('min', gamma=1.0),
                 lambda: make_kernel(None), lambda: kernel_spec(deccal.FeatureMap(np.sin)), lambda: kernel_spec('rbf')):
        with pytest.raises(deccal.DeccalError) as e: call()
        assert e.value.arg == 'kernel'
    with pytest.raises(deccal.DeccalError, match='linear, poly, rbf, laplacian, min, exp'): make_kernel('gauss')
    class MyRBF(deccal.RBF): pass
    with pytest.raises(deccal.DeccalError, match='kernel: .*not one of the registered'): kernel_spec(MyRBF(1.0))
    with pytest.raises(deccal.DeccalError) as e: make_kernel('rbf', gamma=0.0)
    assert e.value.arg == 'gamma'


# --- Polynomial's parameters ------------------------------------------------------------------------
def test_polynomial_degree_string_refused():
    with pytest.raises(ValueError, match='degree'): deccal.Polynomial('2')
    with pytest.raises(TypeError) as e: deccal.Polynomial('2')
    assert isinstance(e.value, deccal.DeccalTypeError) and e.value.arg == 'degree'


def test_polynomial_offset_string_refused():
    with pytest.raises(ValueError, match='c:'): deccal.Polynomial(2, '1')
    with pytest.raises(deccal.DeccalTypeError) as e: deccal.Polynomial(2, '1')
    assert e.value.arg == 'c'


def test_polynomial_fractional_degree_and_bad_offset():
    for bad, arg in [(dict(degree=2.5), 'degree'), (dict(degree=0), 'degree'), (dict(degree=True), 'degree'),
                     (dict(c=-1.0), 'c'), (dict(c=np.nan), 'c'), (dict(c=1e80, degree=2), 'c')]:
        with pytest.raises(deccal.DeccalError) as e: deccal.Polynomial(**bad)
        assert e.value.arg == arg, bad
    assert deccal.Polynomial(2.0) == deccal.Polynomial(2)


# --- dot-product kernels and huge points --------------------------------------------------------------
@pytest.mark.parametrize('kernel', [deccal.Linear(), deccal.Polynomial(2, 1.0), deccal.Polynomial(3, 0.0)], ids=repr)
def test_dot_product_kernels_refuse_overflowing_points(kernel):
    Y = np.array([[1e300, 1.0], [0.5, -0.5]])
    with pytest.raises(ValueError, match='A: .*rescale'): kernel.gram(Y)
    with warnings.catch_warnings():
        warnings.simplefilter('error')        # the check itself must not overflow
        with pytest.raises(ValueError, match='A: .*rescale'): kernel.gram(Y)
        with pytest.raises(ValueError, match='B: .*rescale'): kernel.gram(Y[1:], Y)
        with pytest.raises(ValueError, match='Y: .*rescale'): kernel.check(Y * 1e8)
        with pytest.raises(ValueError, match=r'pred \(atoms\): .*rescale'):
            deccal.Embedding.from_points(Y).sq_norms(kernel)
    with pytest.raises(deccal.DeccalError) as e: kernel.diag(Y)
    assert e.value.arg == 'A'


def test_dot_product_kernels_bound_on_k_yy():
    # the bound is K(y, y) <= 1e150: just below is accepted, just above is refused, for all three kernels
    for kernel, ok, bad in [(deccal.Linear(), 0.99e75, 1.01e75), (deccal.Polynomial(3, 0.0), 0.99e25, 1.01e25),
                            (deccal.ExpInner(), np.sqrt(345.0), np.sqrt(346.0))]:
        assert np.isfinite(kernel.diag([[ok]])).all() and kernel.diag([[ok]])[0] <= 1e150
        with pytest.raises(ValueError, match='A: .*rescale'): kernel.diag([[bad]])
    assert deccal.Linear().diag(np.zeros((1, 3)))[0] == 0.0 and deccal.Linear().diag([[1e-200]])[0] == 0.0


def test_loss_and_fit_refuse_overflowing_points():
    loss = deccal.linear_loss(np.eye(2))
    with pytest.raises(ValueError, match='Y: .*rescale'): loss.value([[1e300, 0.0]])
    with pytest.raises(ValueError, match='points: .*rescale'):
        deccal.fit_loss(lambda Y: Y, deccal.Polynomial(2), [[1e200, 1.0], [0.0, 1.0]])


@pytest.mark.parametrize('kernel', [deccal.Linear(), deccal.Polynomial(2)], ids=repr)
def test_audit_refuses_overflowing_outcomes(kernel):
    # before: an error from inside a linear-algebra routine, far from the cause
    rng = np.random.default_rng(6)
    Y = rng.normal(size=(40, 2)); Y[3] = [1e300, 0.0]
    with pytest.raises(ValueError, match='Y: .*rescale'):
        deccal.audit(deccal.Embedding.from_points(rng.normal(size=(40, 2))), Y, kernel)


# --- Embedding.from_probs -----------------------------------------------------------------------------
def test_from_probs_accepts_rounding_dust():
    P3 = np.random.default_rng(1).dirichlet(np.ones(3), 2000)
    P = np.column_stack([P3, 1 - P3.sum(1)])            # a tail probability: some come out as -4e-16
    assert P.min() < 0
    e = deccal.Embedding.from_probs(P)
    assert e.theta.min() >= 0 and np.abs(e.theta.sum(1) - 1).max() <= 4e-16
    np.testing.assert_allclose(e.theta, np.maximum(P, 0), rtol=0, atol=1e-15)
    e = deccal.Embedding.from_probs([[0.5, 0.5 + 5e-7]])           # off the sum within atol: renormalized
    np.testing.assert_allclose(e.theta.sum(1), 1.0, rtol=0, atol=1e-15)


def test_from_probs_refuses_beyond_atol():
    for P, kw in [([[1.1, -0.1]], {}), ([[0.5, 0.6]], {}), ([[1 + 1e-8, -1e-8]], dict(atol=1e-9)),
                  ([[0.5, 0.5 + 1e-7]], dict(atol=1e-8))]:
        with pytest.raises(ValueError, match='P: ') as e: deccal.Embedding.from_probs(P, **kw)
        assert e.value.arg == 'P', (P, kw)


@pytest.mark.parametrize('atol', [np.nan, -1e-3, np.inf, 1.0])
def test_from_probs_atol_checked(atol):
    with pytest.raises(ValueError, match='atol'): deccal.Embedding.from_probs([[0.5, 0.9]], atol=atol)
    with pytest.raises(deccal.DeccalError) as e: deccal.Embedding.from_probs([[0.5, 0.5]], atol=atol)
    assert e.value.arg == 'atol'


def test_from_probs_atol_string():
    with pytest.raises(deccal.DeccalTypeError) as e: deccal.Embedding.from_probs([[0.5, 0.5]], atol='1e-6')
    assert e.value.arg == 'atol'


# --- the memory budget --------------------------------------------------------------------------------
def test_memory_budget_lives_in_runtime():
    assert not hasattr(dk, 'MEMORY_BUDGET') and not hasattr(de, 'MEMORY_BUDGET')
    assert dr.MEMORY_BUDGET == 256 * 2**20


def count_grams(monkeypatch):
    "Count the kernel blocks computed: the calls of Kernel.gram_unchecked (Kernel.gram calls it after its checks)."
    calls, orig = [], dk.Kernel.gram_unchecked
    def spy(self, A, B=None):
        calls.append(1); return orig(self, A, B)
    monkeypatch.setattr(dk.Kernel, 'gram_unchecked', spy)
    return calls


def test_memory_budget_reaches_embedding(monkeypatch):
    rng = np.random.default_rng(0)
    p, k = deccal.Embedding.from_samples(rng.normal(size=(30, 4, 2))), deccal.RBF(0.5)
    U = rng.normal(size=(10, 2))
    ref = dict(inner=p.inner(k), evaluate=p.evaluate(k, U))
    calls = count_grams(monkeypatch)
    set_budget(monkeypatch, 8 * 4 * 4 * 30 * 3, everywhere=False)   # only deccal.runtime: 3 rows of inner per block
    got = dict(inner=p.inner(k), evaluate=p.evaluate(k, U))
    assert len(calls) == 10 + 1, len(calls)
    for key in ref: np.testing.assert_allclose(got[key], ref[key], rtol=1e-12, atol=1e-14)


def test_memory_budget_reaches_loss_and_feature_map(monkeypatch):
    rng = np.random.default_rng(1)
    loss = deccal.Loss(deccal.RBF(0.5), rng.normal(size=(50, 2)), rng.normal(size=(3, 50)))
    Y = rng.normal(size=(40, 2))
    ref = loss.value(Y)
    fm = deccal.FeatureMap(deccal.Polynomial(2).features, 'poly2')
    Gref = fm.gram(Y)
    calls = count_grams(monkeypatch)
    set_budget(monkeypatch, 8 * 53 * 10, everywhere=False)           # 10 rows of Y per block
    np.testing.assert_allclose(loss.value(Y), ref, rtol=1e-12, atol=1e-14)
    assert len(calls) == 4, len(calls)
    phis = []
    fm2 = deccal.FeatureMap(lambda Z: phis.append(len(Z)) or deccal.Polynomial(2).features(Z), 'poly2')
    set_budget(monkeypatch, 8 * 6 * 7, everywhere=False)             # 7 rows of 6 features per block
    np.testing.assert_allclose(fm2.gram(Y), Gref, rtol=1e-12, atol=1e-12)
    assert max(phis) == 7 and len(phis) == 1 + 6 + 6 * 6, (max(phis), len(phis))


@pytest.mark.parametrize('B1,M1,B2,M2', [(1, 0, 1, 0), (5, 0, 3, 0), (1, 3, 4, 0), (6, 2, 1, 3), (4, 3, 5, 2)])
def test_blocked_results_unchanged(monkeypatch, B1, M1, B2, M2):
    rng = np.random.default_rng(B1 * 100 + M1 * 10 + B2)
    p, q, k = mixed_embedding(rng, 17, B1, M1), mixed_embedding(rng, 13, B2, M2), deccal.RBF(0.4)
    U, Y = rng.normal(size=(11, 2)), rng.normal(size=(17, 2))
    loss = deccal.Loss(k, rng.normal(size=(9, 2)), rng.normal(size=(3, 9)))
    run = lambda: dict(inner=p.inner(k, q), self=p.inner(k), evaluate=p.evaluate(k, U), paired=p.evaluate_paired(k, Y),
                       sq_norms=p.sq_norms(k), loss=p.loss_estimates(loss))
    ref = run()
    for budget in (8 * B1 * 40, 8, 1):                # a few rows per block; single kernel values per tile
        set_budget(monkeypatch, budget)
        got = run()
        for key in ref:
            np.testing.assert_allclose(got[key], ref[key], rtol=1e-12, atol=1e-13, err_msg=f"{key} {budget}")
    np.testing.assert_allclose(ref['self'], ref['self'].T, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(np.diag(ref['self']), ref['sq_norms'], rtol=1e-12, atol=1e-13)


def peak_bytes(fn):
    tracemalloc.start()
    try:
        out = fn(); return out, tracemalloc.get_traced_memory()[1]
    finally: tracemalloc.stop()


def test_inner_of_sample_predictions_stays_in_budget(monkeypatch):
    # one row of inner is a B x (n B) kernel block: 2.6 MB, against a budget of 0.5 MiB
    rng = np.random.default_rng(2)
    n, B, budget = 200, 40, 2**19
    p, k = deccal.Embedding.from_samples(rng.normal(size=(n, B, 2))), deccal.RBF(0.5)
    set_budget(monkeypatch, budget)
    p[:2].inner(k, p[:3])                   # a first call loads compiled code: not part of the measurement
    out, peak = peak_bytes(lambda: p.inner(k))
    assert 8 * B * n * B > 3 * budget
    assert peak <= 2 * budget + out.nbytes, (peak, budget, out.nbytes)
    # and the same values as in one block (a few rows: all of them at once would be a 1.2 GB block)
    set_budget(monkeypatch, 2**30)
    rows = [0, 1, 150, 199]
    np.testing.assert_allclose(out[rows], p[rows].inner(k, p), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out, out.T, rtol=1e-12, atol=1e-14)


def test_evaluate_and_sq_norms_of_many_samples_stay_in_budget(monkeypatch):
    rng = np.random.default_rng(3)
    budget, k = 2**19, deccal.RBF(0.5)
    p = deccal.Embedding.from_samples(rng.normal(size=(20, 250, 2)))
    U = rng.normal(size=(4000, 2))                                  # one row of evaluate: 250 x 4000 values, 8 MB
    big = deccal.Embedding.from_samples(rng.normal(size=(3, 700, 2)))   # one row of sq_norms: 700 x 700 pairs, 20 MB
    set_budget(monkeypatch, budget)
    p[:1].evaluate(k, U[:3]); big[:1].sq_norms(k)       # compiled code loaded before the measurement
    ev, peak_ev = peak_bytes(lambda: p.evaluate(k, U))
    sq, peak_sq = peak_bytes(lambda: big.sq_norms(k))
    assert peak_ev <= 2 * budget + ev.nbytes, (peak_ev, ev.nbytes)
    assert peak_sq <= 2 * budget, peak_sq
    set_budget(monkeypatch, 2**30)
    np.testing.assert_allclose(ev, p.evaluate(k, U), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(sq, big.sq_norms(k), rtol=1e-12)


# --- errors: classes and names --------------------------------------------------------------------------
def test_wrong_types_are_type_errors():
    rng = np.random.default_rng(4)
    pred = deccal.Embedding.from_points(rng.normal(size=(5, 2)))
    loss = deccal.linear_loss(np.eye(2))
    Y = rng.normal(size=(5, 2))
    cases = [
        (lambda: deccal.Loss('rbf', np.zeros((2, 2)), np.zeros((1, 2))), 'kernel'),
        (lambda: deccal.FeatureMap(3.0), 'phi'),
        (lambda: pred.loss_estimates('linear'), 'loss'),
        (lambda: pred.sq_norms(None), 'kernel'),
        (lambda: pred.evaluate('rbf', Y), 'kernel'),
        (lambda: pred.inner(deccal.RBF(), Y), 'other'),
        (lambda: loss.inner(np.eye(2)), 'other'),
        (lambda: deccal.decision_calibration_error(Y, Y, loss, loss), 'pred'),
        (lambda: deccal.decision_calibration_error(pred, Y, None, loss), 'loss'),
        (lambda: deccal.decision_calibration_error(pred, Y, loss, 'l'), 'rule_loss'),
        (lambda: deccal.fit_loss(lambda Z: Z, 'rbf', Y), 'kernel'),
        (lambda: deccal.fit_loss(3, deccal.RBF(), Y), 'fn'),
        (lambda: deccal.reliability_bins(pred, Y, loss, loss, bins='5'), 'bins'),
        (lambda: deccal.Embedding.concat(pred, Y), 'preds'),
        (lambda: loss * 'x', 's'),
    ]
    for call, arg in cases:
        with pytest.raises(deccal.DeccalTypeError) as e: call()
        assert e.value.arg == arg and str(e.value).startswith(arg + ': '), (arg, str(e.value))


def test_value_errors_name_the_argument():
    rng = np.random.default_rng(5)
    pred = deccal.Embedding.from_samples(rng.normal(size=(5, 3, 2)))
    loss = deccal.linear_loss(np.eye(2))
    Y = rng.normal(size=(5, 2))
    cases = [
        (lambda: deccal.reliability_bins(pred, Y, loss, loss, bins=2.5), 'bins'),
        (lambda: deccal.reliability_bins(pred, Y, loss, loss, bins=0), 'bins'),
        (lambda: deccal.piecewise_linear_loss([1.0, 2.0], [1.0], [0.5, 0.5]), 'k2'),
        (lambda: deccal.piecewise_linear_loss([1.0], [1.0], [0.5, 0.5]), 'c'),
        (lambda: deccal.Loss(deccal.RBF(), np.zeros((2, 2)), np.zeros((1, 3))), 'coef'),
        (lambda: pred.scale(np.ones(3)), 's'),
        (lambda: pred.patch(np.zeros((2, 2)), np.zeros((5, 3))), 'theta'),
        (lambda: deccal.Embedding(np.zeros((2, 0, 1)), np.zeros((2, 0))), 'Z'),
        (lambda: deccal.Embedding.from_samples(np.zeros((3, 2, 1)), np.ones((3, 3))), 'weights'),
        (lambda: deccal.RBF().paired(np.zeros((2, 1)), np.zeros((3, 1))), 'B'),
        (lambda: deccal.FeatureMap(lambda Z: Z[:1]).gram(np.zeros((3, 2))), 'phi'),
        (lambda: deccal.fit_loss(lambda Z: Z, deccal.RBF(), Y, seed=-1), 'seed'),
        (lambda: deccal.piecewise_linear_loss([1.0], [1.0], [0.5], utility='yes'), 'utility'),
    ]
    for call, arg in cases:
        with pytest.raises(deccal.DeccalError) as e: call()
        assert e.value.arg == arg and str(e.value).startswith(arg + ': '), (arg, str(e.value))
