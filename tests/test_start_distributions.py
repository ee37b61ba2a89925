"""Checks of `deccal.start_distributions`: the exact CRPS of atoms, the candidate starts and their choice by
cross-fitted CRPS.

The CRPS is checked against the O(B^2) energy form E|Z - y| - E|Z - Z'| / 2 and against the integral of
(F(t) - 1{t >= y})^2 by the midpoint rule; the builders against their definitions (quantiles of the residuals,
per bin, of the normalized residuals) and against repeated or dropped rows for their weights.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from deccal.checks import DeccalError
from deccal.crossfit import fold_ids
from deccal.start_distributions import (StartRows, choose_start, crps_atoms, crps_report, gaussian_start,
                                        knn_difficulty, level_quantiles, mondrian_bin, mondrian_edges, mondrian_start,
                                        normalized_start, oof_crps, residual_start, select_start, start_candidates)


def energy_crps(z, w, y):
    "The CRPS of one row by its O(B^2) energy form."
    w = np.asarray(w, float) / np.sum(w)
    return (w * np.abs(z - y)).sum() - 0.5 * (w[:, None] * w[None] * np.abs(z[:, None] - z[None])).sum()


def integral_crps(z, w, y, step=1e-4):
    "The CRPS of one row by the midpoint rule on a grid covering the atoms and y."
    o = np.argsort(z)
    zs, cw = z[o], np.cumsum(np.asarray(w, float)[o]) / np.sum(w)
    t = np.arange(min(zs[0], y) - 1, max(zs[-1], y) + 1, step) + step / 2
    F = np.r_[0.0, cw][np.searchsorted(zs, t, side='right')]
    return ((F - (t >= y)) ** 2).sum() * step


# ------------------------------------------------------------------------------------------------ the CRPS
def test_crps_matches_the_integral_and_the_energy_form():
    rng = np.random.default_rng(0)
    Z, W, y = rng.normal(size=(6, 5)), rng.uniform(size=(6, 5)), rng.normal(size=6)
    W[0, :2] = 0                                                      # some weights of 0
    Z[1, :3] = Z[1, 0]                                                # tied atoms
    y[2] = Z[2, 4]                                                    # an outcome on an atom
    got = crps_atoms(Z, W, y)
    np.testing.assert_allclose(got, [energy_crps(Z[i], W[i], y[i]) for i in range(6)], rtol=0, atol=1e-13)
    np.testing.assert_allclose(got, [integral_crps(Z[i], W[i], y[i]) for i in range(6)], rtol=0, atol=1e-3)
    np.testing.assert_allclose(crps_atoms(Z, None, y), [energy_crps(Z[i], np.ones(5), y[i]) for i in range(6)],
                               rtol=0, atol=1e-13)


def test_crps_of_a_point_mass_is_the_absolute_error():
    z, y = np.array([[1.5], [-2.0], [0.0]]), np.array([0.5, 1.0, 0.0])
    np.testing.assert_array_equal(crps_atoms(z, None, y), np.abs(z[:, 0] - y))


@settings(max_examples=60, deadline=None)
@given(B=st.integers(1, 12), seed=st.integers(0, 2**31 - 1), shift=st.floats(-1e3, 1e3), scale=st.floats(0.01, 100))
def test_crps_properties(B, seed, shift, scale):
    rng = np.random.default_rng(seed)
    Z, W, y = rng.normal(size=(3, B)), rng.uniform(0.01, 1, size=(3, B)), rng.normal(size=3)
    c = crps_atoms(Z, W, y)
    assert (c >= 0).all()
    np.testing.assert_allclose(c, [energy_crps(Z[i], W[i], y[i]) for i in range(3)], rtol=1e-10, atol=1e-12)
    perm = rng.permutation(B)
    np.testing.assert_allclose(crps_atoms(Z[:, perm], 3 * W[:, perm], y), c, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(crps_atoms(scale * Z + shift, W, scale * y + shift), scale * c,
                               rtol=1e-8, atol=1e-9 * (1 + abs(shift)))


@pytest.mark.parametrize('call, message', [
    (lambda: crps_atoms(np.zeros((2, 0)), None, [0.0, 0.0]), 'atoms: no atoms'),
    (lambda: crps_atoms(np.zeros(3), None, [0.0]), 'atoms: expected 2 dimensions'),
    (lambda: crps_atoms(np.zeros((2, 3)), None, [0.0]), 'y: has 1 rows but atoms has 2'),
    (lambda: crps_atoms(np.zeros((2, 3)), np.ones((2, 2)), [0.0, 0.0]), 'weights: has shape (2, 2)'),
    (lambda: crps_atoms(np.zeros((2, 3)), -np.ones((2, 3)), [0.0, 0.0]), 'weights: has negative entries'),
    (lambda: crps_atoms(np.zeros((2, 3)), np.r_[[np.ones(3)], [np.zeros(3)]], [0.0, 0.0]),
     'weights: row 1 has no positive weight'),
    (lambda: crps_atoms([[np.inf, 0.0]], None, [0.0]), 'atoms: contains 1 NaN or infinite'),
    (lambda: residual_start([0.0], np.ones(5), 0), 'B: must be an integer >= 1'),
    (lambda: residual_start([[0.0]], np.ones(5), 3), 'pred_new: expected 1 dimensions'),
    (lambda: residual_start([0.0], np.ones(5), 3, np.zeros(5)), 'sample_weight: all weights are 0'),
    (lambda: mondrian_start(np.ones(5), np.ones(4), [0.0], 3), 'resid_cal: has 4 rows but pred_cal has 5'),
    (lambda: mondrian_start(np.ones(5), np.ones(5), [0.0], 3, n_bins=0), 'n_bins: must be an integer >= 1'),
    (lambda: normalized_start(np.zeros(5), np.ones(5), [0.0], [1.0], 3), 'difficulty_cal: must be > 0'),
    (lambda: normalized_start(np.ones(5), np.ones(5), [0.0], [np.nan], 3), 'difficulty_new: contains'),
    (lambda: knn_difficulty(np.ones((5, 2)), np.ones(5), np.ones((2, 3))), 'X_new: has 3 columns but X_fit has 2'),
    (lambda: knn_difficulty(np.ones((5, 2)), np.ones(5), np.ones((2, 2)), leave_one_out=True),
     'X_new: with leave_one_out=True'),
    (lambda: knn_difficulty(np.array(['a', 'b']), np.ones(2), np.ones(2)), 'X_fit: expected an array of numbers'),
    (lambda: gaussian_start([0.0], [-1.0], 3), 'std: must be >= 0'),
    (lambda: StartRows([0.0, 1.0], resid=[0.0]), 'resid: has 1 rows but pred has 2'),
    (lambda: select_start({'residual': None}, StartRows([0.0] * 20, [0.0] * 20)), "candidates: 'residual' is not"),
    (lambda: select_start(start_candidates(), StartRows([0.0] * 20, [0.0] * 20), reference='x'),
     "reference: 'x' is not a candidate"),
    (lambda: select_start(start_candidates(), StartRows([0.0] * 20, [0.0] * 20), min_gain_se=-1),
     'min_gain_se: must lie in'),
])
def test_bad_input_names_the_argument(call, message):
    with pytest.raises(DeccalError) as e: call()
    assert message in str(e.value), str(e.value)


# ------------------------------------------------------------------------------------------------ the builders
def _sample(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, X[:, 0], rng.normal(size=n) * (0.2 + (X[:, 1] > 0))


def test_atoms_are_nondecreasing_in_every_row():
    X, p, r = _sample()
    rng = np.random.default_rng(1)
    pn, Xn = rng.normal(size=50), rng.normal(size=(50, 2))
    cal, new = StartRows(p, r, X), StartRows(pn, X=Xn)
    for nm, build in start_candidates(B=30, min_rows=50, k=20).items():
        A = build(cal, new)
        assert A.shape == (50, 30), nm
        assert (np.diff(A, axis=1) >= 0).all(), nm
    assert (np.diff(gaussian_start(pn, np.abs(pn), 30), axis=1) >= 0).all()


def test_builders_are_their_definitions():
    X, p, r = _sample()
    levels = (np.arange(20) + 0.5) / 20
    q = np.sort(r)[np.ceil(levels * len(r) - 1e-9).astype(int) - 1]   # the inverted distribution function
    np.testing.assert_array_equal(level_quantiles(r, 20), q)
    np.testing.assert_array_equal(residual_start([1.0], r, 20)[0], 1.0 + q)
    edges = mondrian_edges(p, 4, 50)
    b = mondrian_bin(edges, p)
    assert len(edges) == 3 and np.bincount(b).min() >= 50
    A = mondrian_start(p, r, p[:10], 20, 4, 50)
    for i in range(10):
        np.testing.assert_allclose(A[i] - p[i], level_quantiles(r[b == b[i]], 20), rtol=0, atol=1e-14)
    s = 0.5 + np.abs(p)
    np.testing.assert_allclose(normalized_start(s, r, [2.0], [3.0], 20)[0], 2.0 + 3.0 * level_quantiles(r / s, 20),
                               rtol=1e-14)


def test_weights_are_respected():
    X, p, r = _sample(200)
    rng = np.random.default_rng(2)
    wi = rng.integers(0, 4, 200).astype(float)
    rep = np.repeat(np.arange(200), wi.astype(int))
    np.testing.assert_array_equal(residual_start([0.0], r, 25, wi), residual_start([0.0], r[rep], 25))
    s = 0.5 + np.abs(p)
    np.testing.assert_array_equal(normalized_start(s, r, [0.0], [1.0], 25, wi),
                                  normalized_start(s[rep], r[rep], [0.0], [1.0], 25))
    w01 = (wi > 0).astype(float)                                      # 0/1 weights: the rows of weight 0 dropped
    keep = w01 > 0
    np.testing.assert_array_equal(mondrian_start(p, r, p[:20], 25, 3, 40, w01),
                                  mondrian_start(p[keep], r[keep], p[:20], 25, 3, 40))
    np.testing.assert_allclose(knn_difficulty(X, r, X[:20], 15, sample_weight=w01),
                               knn_difficulty(X[keep], r[keep], X[:20], 15), rtol=1e-14)
    oof = {'residual': rng.uniform(size=200), 'a': rng.uniform(size=200)}
    rep_w = crps_report(oof, w01)
    assert rep_w['a']['mean'] == pytest.approx(oof['a'][keep].mean(), rel=1e-13)
    assert rep_w['a']['diff'] == pytest.approx((oof['a'] - oof['residual'])[keep].mean(), rel=1e-12)


def test_leave_one_out_never_counts_the_row_itself():
    rng = np.random.default_rng(3)
    X = np.repeat(rng.normal(size=(30, 2)), 2, axis=0)                # every row twice: ties with itself
    r = np.repeat(rng.normal(size=30), 2) + np.tile([0.0, 10.0], 30)  # the copies' residuals differ by 10
    s = knn_difficulty(X, r, X, k=1, leave_one_out=True, floor=0)
    np.testing.assert_allclose(s, np.abs(r.reshape(30, 2)[:, ::-1].ravel()), rtol=1e-14)


# ------------------------------------------------------------------------------------------------ the choice
def test_out_of_fold_crps_never_sees_the_fold():
    X, p, r = _sample(120)
    calls = []

    def spy(fit, new):
        calls.append((len(fit), new.resid is None))
        return residual_start(new.pred, fit.resid, 5)
    oof = oof_crps({'residual': spy}, StartRows(p, r, X), n_folds=4, seed=1)['residual']
    assert calls == [(90, True)] * 4
    f = fold_ids(120, 4, 1)
    te = f == 0
    np.testing.assert_allclose(oof[te], crps_atoms(residual_start(p[te], r[~te], 5), None, (p + r)[te]), rtol=1e-14)


def test_selection_adapts_to_heteroscedastic_noise_and_keeps_the_residual_start_otherwise():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(600, 3))
    hetero = StartRows(X[:, 0], rng.normal(size=600) * (0.1 + 0.5 * (X[:, 1] > 0)), X)
    name, rep = select_start(start_candidates(), hetero)
    assert name == 'normalized' and rep['normalized']['diff'] < -3 * rep['normalized']['diff_se']
    homo = StartRows(X[:, 0], 0.3 * rng.normal(size=600), X)
    name, rep = select_start(start_candidates(), homo)
    best = min(rep, key=lambda nm: rep[nm]['mean'])
    assert name == 'residual' or rep[best]['diff'] < -rep[best]['diff_se']


def test_the_guard():
    rep = {'residual': dict(mean=1.0, se=0.1, diff=0.0, diff_se=0.0),
           'a': dict(mean=0.95, se=0.1, diff=-0.05, diff_se=0.03)}
    assert [choose_start(rep, min_gain_se=g) for g in (0, 1, 2)] == ['a', 'a', 'residual']
    rep['a']['diff_se'] = float('inf')                                # one effective row: no evidence
    assert choose_start(rep, min_gain_se=0.5) == 'residual'
