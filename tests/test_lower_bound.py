"""Checks of `deccal.lower_bound` (paper: "Lower Bound under Deterministic Optimal Decision Rule": the
Lemmas 4.1 (equivalent form), 4.2 (shattering), 4.3 and 4.4).

References are computed independently of the module: a dense search over pairs of linear losses straight
from the definition of decision calibration error (and `deccal.decisions.decision_calibration_error`),
Cover's function-counting theorem with a linear program, the closed form of the plug-in error on
orthogonal atoms, a brute-force total-variation distance over all small samples, and Monte Carlo
estimates with their standard errors.
"""
import itertools
import math
from math import comb

import numpy as np
import pytest
from scipy.optimize import linprog

from deccal.decisions import decision_calibration_error
from deccal.embedding import Embedding
from deccal.losses import linear_loss
from deccal.lower_bound import (atoms_V, binary_decce, collision_probability, collision_test, halfspace_gap,
                                halfspace_splits, h_sigma, realize_split, repeats_distribution, sample_D1, sample_D2,
                                sample_D_sigma, shatter, simulate_tester, support_D1, support_D_sigma, witness_losses)
# imported under other names: pytest would collect a module-level function whose name starts with 'test'
from deccal.lower_bound import tester_advantage as advantage_mc, tester_advantage_exact as advantage_exact


def toy(n, d, seed):
    rng = np.random.default_rng(seed)
    P = 0.4 * rng.normal(size=(n, d))
    return P, P + 0.3 * np.tanh(3 * P[:, :1]) * np.eye(d)[0] + 0.2 * rng.normal(size=(n, d))


# --- the samplers' outputs lie in the unit ball ----------------------------------------------------
@pytest.mark.parametrize('d', [1, 2, 3, 64, 2000])
@pytest.mark.parametrize('eps', [1e-3, 0.1, 0.25, 1 / 3 - 1e-12])
def test_samples_in_unit_ball(d, eps):
    sigma = np.random.default_rng(d).choice([-1, 1], d) / np.sqrt(d)
    draws = [sample_D1(400, d, eps, seed=1), sample_D2(400, d, eps, seed=2), sample_D_sigma(400, sigma, eps, seed=3),
             support_D1(d, eps)[:2], support_D_sigma(sigma, eps)[:2]]
    V = np.eye(d) / 2
    for P, Y in draws:
        assert np.linalg.norm(Y, axis=1).max() <= 1.0
        assert np.linalg.norm(P, axis=1).max() <= 1.0
        assert np.array_equal(P, V[P.argmax(1)])                    # predictions are points of V
        np.testing.assert_allclose(np.abs(Y - P).sum(1), eps, rtol=0, atol=1e-15)
        np.testing.assert_array_equal((Y - P)[:, 1:], 0.0)         # y - p = ±eps e_1
    P, Y, sigma2 = sample_D2(400, d, eps, seed=4, return_sigma=True)
    np.testing.assert_array_equal(Y, h_sigma(P, sigma2, eps))      # D_2 is D_sigma for the sigma it drew


def test_D1_is_calibrated_and_D2_constant_per_atom():
    P, Y = sample_D1(200_000, 5, 0.2, seed=0)
    a = P.argmax(1)
    for i in range(5):                                             # E[y - p | p = v_i] = 0, within Monte Carlo error
        r = (Y - P)[a == i, 0]
        assert abs(r.mean()) <= 4 * r.std() / math.sqrt(len(r))
    P, Y, sigma = sample_D2(500, 7, 0.2, seed=1, return_sigma=True)
    np.testing.assert_allclose(Y[:, 0] - P[:, 0], 0.2 * np.sign(sigma)[P.argmax(1)], atol=1e-15)


# --- the formula against brute force -----------------------------------------------------------------
def sphere_grid(d, k):
    if d == 2:
        t = 2 * np.pi * np.arange(k) / k
        return np.stack([np.cos(t), np.sin(t)], 1)
    i = np.arange(k) + 0.5
    z = 1 - 2 * i / k
    ph = np.pi * (1 + 5 ** 0.5) * i
    return np.stack([np.sqrt(1 - z * z) * np.cos(ph), np.sqrt(1 - z * z) * np.sin(ph), z], 1)


def brute_force_pairs(P, Y, n_rules, k, seed=0):
    """max |E sum_a k_l'(x, a) (l(a, y) - f_p(x, a, l))| over random rule losses l' (r(a) uniform in the unit
    ball, best response with ties to action 0) and all pairs of grid vectors of the sphere for l."""
    rng = np.random.default_rng(seed)
    n, d = P.shape
    U = rng.normal(size=(n_rules, 2, d))
    U /= np.linalg.norm(U, axis=2, keepdims=True)
    U *= rng.uniform(size=(n_rules, 2, 1)) ** (1 / d)
    F = np.einsum('id,kad->kia', P, U)
    K = np.stack([F[..., 0] <= F[..., 1], F[..., 0] > F[..., 1]], -1).astype(float)
    T = np.einsum('kia,id->kad', K, Y - P) / n
    L = sphere_grid(d, k)
    A0, A1 = T[:, 0] @ L.T, T[:, 1] @ L.T
    best = max(np.abs(A0[lo:lo + 40, :, None] + A1[lo:lo + 40, None, :]).max() for lo in range(0, n_rules, 40))
    pred = Embedding.from_points(P)                               # a few pairs through the library's definition
    for _ in range(5):
        kk, i, j = rng.integers(n_rules), rng.integers(k), rng.integers(k)
        direct = decision_calibration_error(pred, Y, linear_loss(np.stack([L[i], L[j]])), linear_loss(U[kk]))
        assert abs(direct - abs(A0[kk, i] + A1[kk, j])) <= 1e-12
    return best


@pytest.mark.parametrize('d,n,seed', [(2, 12, 0), (2, 30, 1), (3, 9, 2)])
def test_formula_matches_brute_force(d, n, seed):
    P, Y = toy(n, d, seed)
    ex = binary_decce(P, Y, method='exact')
    assert ex.method == 'exact'
    bf = brute_force_pairs(P, Y, 1500 if d == 2 else 1000, 360 if d == 2 else 300, seed=seed)
    assert bf <= ex.value + 1e-12                                # no pair of losses beats the formula
    assert bf >= (0.999 if d == 2 else 0.99) * ex.value          # and the best pair reaches it (grid resolution)
    assert np.array_equal(P @ ex.r > 0, ex.positive)
    loss, rule = witness_losses(P, Y, ex.r)                      # the value is attained by an actual pair
    assert abs(decision_calibration_error(Embedding.from_points(P), Y, loss, rule) - ex.value) <= 1e-12
    assert abs(halfspace_gap(P, Y, ex.r) - ex.value) <= 1e-14
    he = binary_decce(P, Y, method='heuristic')                  # the heuristic is a lower bound
    assert he.value <= ex.value * (1 + 1e-12) and ex.value <= ex.upper + 1e-12


def test_degenerate_faces_and_ties():
    """Points on the splitting hyperplane go to the second side (the tie goes to action 0): the only split
    isolating p_3 needs r = (0, b), a face no open cell reaches."""
    P = np.array([[1., 0], [-1, 0], [0, 1]])
    assert {tuple(np.flatnonzero(s)) for s in halfspace_splits(P)} == {(0, 2), (0,), (1, 2), (1,), (2,), ()}
    Y = P + [[0.3, 0], [0.3, 0], [-0.3, 0]]
    res = binary_decce(P, Y)
    assert abs(res.value - 0.3) <= 1e-15 and list(res.positive) == [False, False, True]
    rule = linear_loss(np.array([[0, 0.5], [0, -0.5]]))             # ties on p_1, p_2: action 0
    loss = linear_loss(np.array([[1.0, 0], [-1.0, 0]]))
    assert abs(decision_calibration_error(Embedding.from_points(P), Y, loss, rule) - 0.3) <= 1e-15
    assert abs(halfspace_gap(P, Y, [0.0, 1.0]) - 0.3) <= 1e-15      # at the face itself
    l, lr = witness_losses(P, Y, [0.0, 1.0])
    assert abs(decision_calibration_error(Embedding.from_points(P), Y, l, lr) - 0.3) <= 1e-15
    rng = np.random.default_rng(0)
    assert max(halfspace_gap(P, Y, u) for u in rng.normal(size=(500, 2))) <= 0.1 + 1e-15


@pytest.mark.parametrize('d,n', [(1, 7), (2, 20), (3, 15), (4, 11)])
def test_split_count_is_covers(d, n):
    P = np.random.default_rng(10 * d + n).normal(size=(n, d))
    S = halfspace_splits(P)
    cover = 2 * sum(comb(n - 1, k) for k in range(d))
    halfspace = linprog(np.zeros(d), A_ub=P, b_ub=-np.ones(n), bounds=[(None, None)] * d, method='highs').status == 0
    assert len(S) == cover + (not halfspace)
    assert len({tuple(s) for s in S}) == len(S)
    for s in S[:: max(1, len(S) // 40)]:
        r = realize_split(P, s)
        assert r is not None and np.array_equal(P @ r > 0, s)


def test_shattering():
    for d in range(4, 9):
        labels = np.array(list(itertools.product([-1, 1], repeat=d)))
        R = shatter(labels)
        assert np.allclose(np.linalg.norm(R, axis=1), 1)
        assert np.array_equal(np.sign(R @ atoms_V(d).T), labels)
    assert len(halfspace_splits(atoms_V(5))) == 32


@pytest.mark.parametrize('d', [1, 4, 6, 100])
def test_population_decce(d):
    eps = 0.15
    for seed in range(2):
        sigma = np.random.default_rng(seed).choice([-1, 1], d) / np.sqrt(d)
        P, Y, w = support_D_sigma(sigma, eps)
        assert abs(halfspace_gap(P, Y, sigma, w) - eps) <= 1e-14  # the lemma's r = sigma
        res = binary_decce(P, Y, w, method='exact' if d <= 6 else 'heuristic')
        assert abs(res.value - eps) <= 1e-14 and abs(res.upper - eps) <= 1e-14
    P, Y, w = support_D1(d, eps)
    assert binary_decce(P, Y, w).value <= 1e-15


def test_plugin_error_closed_form():
    eps, d = 0.25, 128
    for smp, n in ((sample_D1, 40), (sample_D1, 3000), (sample_D2, 500)):
        P, Y = smp(n, d, eps, seed=n)
        s = np.sign(Y[:, 0] - P[:, 0])
        closed = eps / n * np.abs(np.bincount(P.argmax(1), weights=s, minlength=d)).sum()
        assert abs(binary_decce(P, Y).value - closed) <= 1e-12


# --- the tester -----------------------------------------------------------------------------------------
def tv_brute(n, d):
    taus = np.array(list(itertools.product([-1, 1], repeat=d)))
    tv = 0.0
    for a in itertools.product(range(d), repeat=n):
        for s in itertools.product([-1, 1], repeat=n):
            tv += abs(0.5 ** n - np.all(taus[:, list(a)] == s, axis=1).mean()) / d ** n
    return tv / 2


@pytest.mark.parametrize('n,d', [(1, 2), (2, 3), (3, 3), (4, 2), (3, 4)])
def test_advantage_is_total_variation(n, d):
    assert abs(advantage_exact(n, d) - tv_brute(n, d)) <= 1e-12
    assert abs(repeats_distribution(n, d).sum() - 1) <= 1e-12


def test_collision_test_rule():
    rng = np.random.default_rng(0)
    for _ in range(200):
        d, n = int(rng.integers(1, 10)), int(rng.integers(1, 9))
        a, s = rng.integers(0, d, n), rng.choice([-1.0, 1.0], n)
        P = np.zeros((n, d)); P[np.arange(n), a] = 0.5
        Y = P.copy(); Y[:, 0] += 0.1 * s
        assert collision_test(P, Y) == any(len(set(s[a == v])) == 2 for v in set(a))


@pytest.mark.parametrize('n,d', [(2, 4096), (3, 4096), (2, 1024)])
def test_advantage_zero_when_n_much_smaller_than_sqrt_d(n, d):
    reps = 4000
    est, se = advantage_mc(n, d, reps, seed=n + d)
    assert est <= 3 * max(se, 1 / reps)                          # within simulation error of zero
    sim = simulate_tester(n, d, reps, seed=n + d + 1)
    assert sim['p2'] == 0 and sim['p1'] <= 3 * max(sim['se1'], 1 / reps)
    assert advantage_exact(n, d) <= collision_probability(n, d) <= n * (n - 1) / (2 * d)


def test_advantage_matches_exact_and_scales_with_sqrt_d():
    reps = 4000
    for d in (64, 1024):
        n = int(math.isqrt(d)) * 2                                 # n = 2 sqrt(d): the advantage is large
        exact = advantage_exact(n, d)
        se_exact = math.sqrt(exact * (1 - exact) / reps)
        est, se = advantage_mc(n, d, reps, seed=d)
        sim = simulate_tester(n, d, reps, seed=d + 1)
        assert abs(est - exact) <= 4 * se and abs(sim['advantage'] - exact) <= 4 * se_exact
        assert abs(exact - (1 - math.exp(-1))) < 0.03             # the limit 1 - exp(-x^2/4) at x = 2
    assert abs(advantage_exact(4, 4096) / (4 * 3 / (2 * 4096)) - 0.5) < 0.01   # half the paper's bound


# --- bad input ------------------------------------------------------------------------------------------
def test_value_errors():
    P, Y = toy(10, 2, 0)
    cases = [
        (lambda: sample_D1(10, 8, 0.4), 'eps'),
        (lambda: sample_D1(10, 8, 0.0), 'eps'),
        (lambda: sample_D2(10, 8, -0.1), 'eps'),
        (lambda: sample_D2(10, 8, None), 'eps'),
        (lambda: support_D1(3, 1 / 3), 'eps'),
        (lambda: sample_D1(10, 0, 0.1), 'd:'),
        (lambda: atoms_V(-2), 'd:'),
        (lambda: sample_D1(0, 8, 0.1), 'n:'),
        (lambda: sample_D2(1.5, 8, 0.1), 'n:'),
        (lambda: sample_D_sigma(5, [1, 0], 0.1), 'sigma'),
        (lambda: sample_D_sigma(5, [1, np.nan], 0.1), 'sigma'),
        (lambda: h_sigma(atoms_V(3), np.ones(2), 0.1), 'sigma'),
        (lambda: h_sigma(np.ones((2, 3)), np.ones(3), 0.1), 'P:'),
        (lambda: shatter([1, 2]), 'labels'),
        (lambda: binary_decce(P, Y[:4]), 'Y:'),
        (lambda: binary_decce(P, np.zeros((10, 3))), 'Y:'),
        (lambda: binary_decce(np.full((10, 2), np.nan), Y), 'P:'),
        (lambda: binary_decce(P, Y, weights=np.ones(4)), 'weights'),
        (lambda: binary_decce(P, Y, method='fast'), 'method'),
        (lambda: halfspace_gap(P, Y, [1.0, 0.0, 0.0]), 'r:'),
        (lambda: realize_split(P, [True, False]), 'positive'),
        (lambda: collision_test(P, Y[:3]), 'Y:'),
        (lambda: advantage_mc(0, 10), 'n:'),
        (lambda: advantage_mc(3, 10, reps=1), 'reps'),
        (lambda: simulate_tester(3, 0), 'd:'),
        (lambda: advantage_exact(3, 0), 'd:'),
        (lambda: collision_probability(0, 3), 'n:'),
    ]
    for f, word in cases:
        with pytest.raises(ValueError, match=word.replace('(', r'\(')):
            f()
