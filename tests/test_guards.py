"""Inputs that gave a wrong answer or an unclear error: each now gives the right answer, or a one-line DeccalError
that names the argument the user passed, before any work."""
import numpy as np
import pytest
from deccal import checks
from deccal.checks import DeccalError, check_sample_weight
from deccal.distributions import project_simplex, AtomDistribution
from deccal.kernels import RBF, Linear, Polynomial, ExpInner
from deccal.embedding import Embedding
from deccal.dimfree import DimFreeDeCal
from deccal.audit import audit
from deccal.metrics import decision_calibration_score


@pytest.fixture(scope='module')
def probs():
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(3), 200)
    return np.array([rng.choice(3, p=p) for p in P]), P


def _one_line(e, arg):
    "The error starts with the argument's name and is one line of at most 160 characters."
    msg = str(e.value)
    assert msg.startswith(f'{arg}: ') and '\n' not in msg and len(msg) <= 160, (len(msg), msg)


# 1. weights whose sum overflows acted as weights of 0 (the score was 0.0)
@pytest.mark.parametrize('scale', [1e307, 1e-320, 2.0**700])
def test_huge_or_tiny_equal_weights_are_unit_weights(probs, scale):
    y, P = probs
    plain = decision_calibration_score(y, P, sample_weight=np.ones(200))
    assert plain > 1e-3                               # the bug returned 0.0
    assert decision_calibration_score(y, P, sample_weight=np.full(200, scale)) == pytest.approx(plain, rel=1e-12)


def test_rescaled_weights_keep_every_ratio_and_finite_sums():
    w = np.random.default_rng(1).uniform(0, 1, 50) * 1e306
    ws = check_sample_weight(w, 50, 'y')
    assert np.isfinite(ws.sum()) and np.isfinite(ws @ ws) and 0.5 <= ws.max() < 1
    np.testing.assert_allclose(ws / ws.sum(), (w / 1e306) / (w / 1e306).sum(), rtol=1e-14)
    np.testing.assert_array_equal(ws * (w.max() / ws.max()), w)       # rescaled by a power of 2: exactly


# 2. a huge offset common to a row swallowed the 1 the projection onto the simplex must sum to
def _bisect(v):
    "Projection onto the simplex by bisection on the threshold tau of sum max(v - tau, 0) = 1 (independent)."
    lo, hi = v.max() - 1.0, v.max()
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.maximum(v - mid, 0).sum() >= 1 else (lo, mid)
    return np.maximum(v - lo, 0)


def test_project_simplex_huge_offset():
    np.testing.assert_array_equal(project_simplex(np.array([[1e16, 1, 0]])), [[1., 0., 0.]])


@pytest.mark.parametrize('off,unit', [(1e12, 2.0**-10), (1e16, 2.0), (-1e16, 2.0), (1e12, 2.0**-12)])
def test_project_simplex_is_invariant_to_an_offset(off, unit):
    V = np.random.default_rng(2).integers(-6, 7, size=(60, 5)) * unit
    assert (V + off - off == V).all()                 # the shifted rows hold V exactly: the same projection
    W = project_simplex(V + off)
    np.testing.assert_allclose(W, project_simplex(V), atol=1e-12)
    np.testing.assert_allclose(W, [_bisect(v) for v in V], atol=1e-12)


def test_project_simplex_random_rows_against_bisection():
    V = np.random.default_rng(3).normal(scale=5, size=(200, 7))
    np.testing.assert_allclose(project_simplex(V), [_bisect(v) for v in V], atol=1e-12)


# 3. R1 = 1e300 failed deep inside (OverflowError in the theory step, or "F: contains ... NaN" in an audit)
@pytest.fixture(scope='module')
def sample():
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(40, 1))
    return Embedding.from_points(Y + 0.5 * rng.normal(size=(40, 1))), Y


@pytest.mark.parametrize('R1', [1e300, 1e200, 1e-200])
def test_dimfree_refuses_a_radius_whose_square_overflows(sample, R1):
    pred, Y = sample
    with pytest.raises(DeccalError) as e:
        DimFreeDeCal(RBF(1.0), R1=R1, max_rounds=3, early_stopping=False).fit(pred, Y)
    _one_line(e, 'R1')
    assert '[1e-150, 1e+150]' in str(e.value)


def test_dimfree_largest_radius_runs(sample):
    pred, Y = sample
    cal = DimFreeDeCal(RBF(1.0), R1=1e150, max_rounds=2, early_stopping=False).fit(pred, Y)
    assert all(np.isfinite(h['square_loss']) for h in cal.history_)
    assert np.isfinite(cal.history_[0]['audit_value'])


# 4. y * 1e200 in a regression: "gamma: must lie in (0, inf)" for a gamma the user never set
@pytest.mark.parametrize('scale', [1e200, 1e-200])
def test_bandwidth_from_data_names_the_data(scale):
    y = np.random.default_rng(4).normal(size=100) * scale
    with pytest.raises(DeccalError) as e:
        checks.check_bandwidth(y, 'y', hint='pass kernel=')
    _one_line(e, 'y')
    assert 'rescale y or pass kernel=' in str(e.value)


def test_bandwidth_of_ordinary_data_passes():
    y = np.random.default_rng(4).normal(size=100)
    assert checks.check_bandwidth(y * 1e100, 'y') is None and checks.check_bandwidth(y, 'y', 0.7) == 0.7


# 5. the exp kernel's domain error was 499 characters long
@pytest.mark.parametrize('kernel', [ExpInner(), Linear(), Polynomial(3, 1.0)])
@pytest.mark.parametrize('value', [1e100, 1e300, 1e76])
def test_kernel_domain_message_is_one_short_line(kernel, value):
    with pytest.raises(DeccalError) as e:
        kernel.check(np.array([[value, 1.0]]), 'Y')
    _one_line(e, 'Y')
    assert 'rescale Y' in str(e.value) and f'||y|| = {value:.3g}' in str(e.value)


# 6. the metrics refused random_state=None or a RandomState, which the estimators accept
def test_metric_random_state_like_scikit_learn(probs):
    y, P = probs
    for seed in (0, 7):   # an int: the cost matrices of default_rng(seed), as before
        R = np.random.default_rng(seed).uniform(0, 1, (200, 5, 3))
        assert decision_calibration_score(y, P, random_state=seed) == decision_calibration_score(y, P, costs=R)
    g = decision_calibration_score(y, P, random_state=np.random.default_rng(7))
    assert g == decision_calibration_score(y, P, random_state=7)
    a = decision_calibration_score(y, P, random_state=np.random.RandomState(3))
    assert a == decision_calibration_score(y, P, random_state=np.random.RandomState(3))
    assert np.isfinite(decision_calibration_score(y, P, random_state=None))
    with pytest.raises(DeccalError) as e:
        decision_calibration_score(y, P, random_state='seed')
    _one_line(e, 'random_state')


def test_atom_distribution_sample_takes_a_random_state():
    D = AtomDistribution(np.array([[0., 1., 2.]]), np.array([[0.2, 0.3, 0.5]]))
    np.testing.assert_array_equal(D.sample(5, np.random.RandomState(0)), D.sample(5, np.random.RandomState(0)))
    assert isinstance(checks.random_generator(np.random.RandomState(0)), np.random.Generator)


# 7. mixed labels were silently turned into strings
@pytest.mark.parametrize('labels', [[0, 'a', 1, 'b'], np.array([0, 'a', 1, 'b'], dtype=object), (1.5, 'x', 2, 'y')])
def test_mixed_labels_are_refused(labels):
    P = np.full((4, 4), 0.25)
    with pytest.raises(DeccalError) as e:
        decision_calibration_score(labels, P)
    _one_line(e, 'y_true')
    with pytest.raises(DeccalError) as e:
        decision_calibration_score(np.array([0, 1, 2, 3]), P, labels=labels)
    _one_line(e, 'labels')


def test_labels_of_one_type_pass():
    assert checks.check_label_kinds(['a', 'b'], 'y').dtype.kind == 'U'
    assert checks.check_label_kinds([3, 1], 'y').dtype.kind == 'i'
    assert checks.check_label_kinds(np.array(['a', 'b'], dtype=object), 'y').dtype == object


def test_audit_refuses_a_radius_that_overflows_its_search():
    # R1 = 1e305 ended in an internal "F: contains ... NaN"; 1e200 is still audited
    r = np.random.default_rng(0)
    px = r.uniform(0.2, 0.8, (60, 2)); y = np.clip(px + 0.1 * r.normal(size=(60, 2)), 0, 1)
    with pytest.raises(DeccalError, match='^R1:'): audit(Embedding.from_points(px), y, kernel=RBF(1.0), R1=1e305)
    assert np.isfinite(audit(Embedding.from_points(px), y, kernel=RBF(1.0), R1=1e200, n_starts=1).value)


def test_a_norm_past_the_largest_float_is_refused_by_name():
    "||y|| above 1.8e308 (each entry finite) is refused naming Y, not an OverflowError while writing the message."
    with pytest.raises(DeccalError, match=r"K\(y, y\) = exp.*rescale Y"):
        ExpInner().check(np.array([[1.5e308, 1.5e308]]))


def test_calibrator_actions_past_the_machine_are_refused():
    "DimFreeDeCal with 10**7 actions is refused naming n_actions before its first round allocates."
    P = np.random.default_rng(0).dirichlet(np.ones(3), 300)
    Y = np.eye(3)[np.random.default_rng(1).integers(0, 3, 300)]
    with pytest.raises(DeccalError, match=r'^n_actions: 10,000,000 actions on 300 rows need about'):
        DimFreeDeCal(Linear(), n_actions=10**7, early_stopping=False).fit(Embedding.from_probs(P), Y)
