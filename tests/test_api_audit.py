"""The auditor's and the lower bound's interface: signatures, argument checks (errors naming the argument),
the scaled inverse map of the search, and audits of sample predictions within the memory budget, with
progress while the Gram matrices are computed.

Each test here failed on the code before this interface was settled (see the comments)."""
import os
os.environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')
os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')

import contextlib, importlib, inspect, io, tracemalloc

import numpy as np
import pytest

da = importlib.import_module('deccal.audit')   # the module (the package re-exports a function `audit`)
import deccal.sketch as dsk, deccal.worst_pair as dwp   # the audit's Gram sketches and its search for the worst pair
from deccal.audit import audit, audit_best_response, certify
from deccal.embedding import Embedding
from deccal.kernels import Linear, RBF
from deccal.lower_bound import binary_decce, halfspace_splits, realize_split, sample_D1, sample_D2, sample_D_sigma
# imported under other names: pytest would collect a module-level function whose name starts with 'test'
from deccal.lower_bound import tester_advantage as advantage_mc, simulate_tester as simulate_lr


def _points(n=30, d=2, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    return Embedding.from_points(0.8 * x), x + 0.3 * rng.normal(size=(n, d))

def _samples(n, B, d=2, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    S = 0.8 * x[:, None, :] + 0.3 * rng.normal(size=(n, B, d))
    return Embedding.from_samples(S), x + 0.3 * rng.normal(size=(n, d))

def _raises(f, arg, type_error=False):
    "f() raises a ValueError whose message starts with `arg:`; then (separately) that it names it in `.arg`."
    with pytest.raises(ValueError, match=f'^{arg}:') as e: f()
    assert getattr(e.value, 'arg', None) == arg, f"{e.value!r} does not carry .arg == {arg!r}"
    if type_error: assert isinstance(e.value, TypeError), f"{e.value!r} is not a TypeError"


# --- signatures --------------------------------------------------------------------------------------
@pytest.mark.parametrize('f', [audit, certify, audit_best_response])
def test_kernel_required_and_options_keyword_only(f):
    # before: kernel=None by default and every option positional (audit(pred, Y, k, 3, 10.0) was accepted)
    ps = inspect.signature(f).parameters
    assert list(ps)[:3] == ['pred', 'Y', 'kernel']
    assert ps['kernel'].default is inspect.Parameter.empty
    opts = [p for name, p in ps.items() if name not in ('pred', 'Y', 'kernel') and p.kind != p.VAR_KEYWORD]
    assert opts and all(p.kind == p.KEYWORD_ONLY for p in opts), [p.name for p in opts if p.kind != p.KEYWORD_ONLY]

def test_renamed_options():
    # before: `maxiter` and `progress`; now `max_iter` and `verbose`, as everywhere in deccal
    pred, Y = _points()
    r = audit(pred, Y, Linear(), max_iter=3, n_starts=1, verbose=False)
    assert np.isfinite(r.value)
    b = audit_best_response(pred, Y, Linear(), max_iter=3, n_starts=1, betas=(10,))
    assert np.isfinite(b.value)
    for old in ('maxiter', 'progress'):
        assert old not in inspect.signature(audit).parameters


# --- argument checks ---------------------------------------------------------------------------------
PRED, Y = _points()
HOLD = _points(10, seed=3)
AUDIT_BAD = [   # (keyword arguments, the argument named) -- before: errors deep inside numpy, or silently accepted
    (dict(n_actions=None), 'n_actions'), (dict(n_actions=np.nan), 'n_actions'), (dict(n_actions=np.inf), 'n_actions'),
    (dict(n_actions=0), 'n_actions'), (dict(n_actions='2'), 'n_actions'),
    (dict(n_starts=0), 'n_starts'), (dict(n_starts=1.5), 'n_starts'),
    (dict(n_starts=-1, inits=[np.zeros((2, 2))]), 'n_starts'),
    (dict(max_iter=0), 'max_iter'), (dict(max_rank=0), 'max_rank'), (dict(exact_max=-1), 'exact_max'),
    (dict(trace_tol=0), 'trace_tol'), (dict(trace_tol=1.0), 'trace_tol'), (dict(trace_tol=np.nan), 'trace_tol'),
    (dict(seed=-1), 'seed'), (dict(seed=0.5), 'seed'),
    (dict(delta=0), 'delta'), (dict(delta=1.0), 'delta'), (dict(delta=np.nan), 'delta'),
    (dict(R2=0), 'R2'), (dict(R2=-1.0), 'R2'), (dict(R2=np.inf), 'R2'),
    (dict(weights=np.ones(5)), 'weights'), (dict(weights=np.full(30, np.nan)), 'weights'),
    (dict(weights=np.ones((30, 1))), 'weights'),
    (dict(holdout=5), 'holdout'), (dict(holdout=(HOLD[1], HOLD[1])), 'holdout'),
    (dict(beta='10'), 'beta'), (dict(R1=np.nan), 'R1'), (dict(verbose='yes'), 'verbose'),
]

@pytest.mark.parametrize('kw,arg', AUDIT_BAD, ids=[f'{a}={list(k.values())[0]!r}'[:40] for k, a in AUDIT_BAD])
def test_audit_checks(kw, arg):
    _raises(lambda: audit(PRED, Y, kernel=Linear(), **kw), arg)

def test_audit_wrong_types():
    # before: a plain ValueError for an array or None where an Embedding or a kernel belongs
    _raises(lambda: audit(np.zeros((30, 2)), Y, kernel=Linear()), 'pred', type_error=True)
    _raises(lambda: audit(PRED, Y, kernel=None), 'kernel', type_error=True)
    _raises(lambda: certify(PRED, Y, kernel=None), 'kernel', type_error=True)
    _raises(lambda: audit_best_response(PRED, Y, kernel=None), 'kernel', type_error=True)
    _raises(lambda: audit(PRED, Y, kernel=Linear(), holdout=(HOLD[1], HOLD[1])), 'holdout', type_error=True)

def test_n_starts_zero_with_inits():
    # n_starts = 0 is allowed when starts are given; their shape must suit the factors
    r0 = audit(PRED, Y, kernel=Linear(), n_starts=1, seed=0)
    U = np.full((2, r0.info['rank_P']), 0.1)
    r = audit(PRED, Y, kernel=Linear(), n_starts=0, inits=[U])
    assert len(r.info['start_values']) == 1
    _raises(lambda: audit(PRED, Y, kernel=Linear(), n_starts=0, inits=[np.zeros((2, r0.info['rank_P'] + 5))]), 'inits')

@pytest.mark.parametrize('kw,arg', [(dict(search_fraction=0), 'search_fraction'),
                                    (dict(search_fraction=1.0), 'search_fraction'),
                                    (dict(search_fraction=np.nan), 'search_fraction'),
                                    (dict(search_fraction='0.5'), 'search_fraction'),
                                    (dict(seed=-2), 'seed'), (dict(delta=2.0), 'delta'),
                                    (dict(n_actions=0), 'n_actions')])
def test_certify_checks(kw, arg):
    _raises(lambda: certify(PRED, Y, kernel=Linear(), **kw), arg)

@pytest.mark.parametrize('kw,arg', [(dict(n_starts=0), 'n_starts'), (dict(max_iter=0), 'max_iter'),
                                    (dict(seed=-1), 'seed'),
                                    (dict(betas=()), 'betas'), (dict(betas=(1, -3)), 'betas'),
                                    (dict(n_actions=np.nan), 'n_actions')])
def test_audit_best_response_checks(kw, arg):
    _raises(lambda: audit_best_response(PRED, Y, kernel=Linear(), **kw), arg)


# --- the lower bound's checks ------------------------------------------------------------------------
P2 = np.random.default_rng(5).normal(size=(15, 2))
Y2 = P2 + 0.3 * np.random.default_rng(6).normal(size=(15, 2))

def test_binary_decce_refuses_nan_tolerance():
    # before: tol=nan made every zero test False and binary_decce silently returned a smaller value
    ref = binary_decce(P2, Y2).value
    assert binary_decce(P2, Y2, tol=0).value == pytest.approx(ref, rel=1e-12)
    _raises(lambda: binary_decce(P2, Y2, tol=np.nan), 'tol')

@pytest.mark.parametrize('f,arg', [
    (lambda: binary_decce(P2, Y2, tol=-1e-9), 'tol'), (lambda: binary_decce(P2, Y2, tol=np.inf), 'tol'),
    (lambda: halfspace_splits(P2, tol=np.nan), 'tol'), (lambda: realize_split(P2, P2[:, 0] > 0, tol=np.nan), 'tol'),
    (lambda: binary_decce(P2, Y2, method='heuristic', seed=-1), 'seed'),
    (lambda: binary_decce(P2, Y2, method='heuristic', n_random=-5), 'n_random'),
    (lambda: binary_decce(P2, Y2, method='heuristic', max_iter=1.5), 'max_iter'),
    (lambda: sample_D1(10, 8, 0.1, seed=-1), 'seed'), (lambda: sample_D2(10, 8, 0.1, seed=0.5), 'seed'),
    (lambda: sample_D_sigma(10, np.ones(4), 0.1, seed=[1, -2]), 'seed'),
    (lambda: advantage_mc(4, 16, 100, seed=-3), 'seed'), (lambda: simulate_lr(4, 16, 100, seed=1.5), 'seed'),
    (lambda: sample_D1(np.nan, 8, 0.1), 'n'), (lambda: advantage_mc(4, 16, reps=1), 'reps'),
])
def test_lower_bound_checks(f, arg):
    _raises(f, arg)

def test_lower_bound_wrong_types():
    _raises(lambda: sample_D1(10, 8, 'a'), 'eps', type_error=True)
    _raises(lambda: sample_D1('10', 8, 0.1), 'n', type_error=True)

def test_lower_bound_seeds_still_accepted():
    # ints, lists of ints, None and Generators keep working; integral floats are integers
    for seed in (0, [1, 2], None, np.random.default_rng(3)): sample_D1(5, 4, 0.1, seed=seed)
    np.testing.assert_array_equal(sample_D1(5, 4.0, 0.1, seed=1)[0], sample_D1(5, 4, 0.1, seed=1)[0])


# --- the search's inverse map for any radius ---------------------------------------------------------
def test_u_to_v_round_trip():
    # before: R1**2 - |U|**2 was inf - inf (or 0 - 0) for extreme radii: NaN or garbage starts
    V = np.random.default_rng(0).normal(size=(4, 3)) * [[0.1], [1.0], [3.0], [20.0]]
    for R1 in (1e-200, 1e-5, 1.0, 7.5, 1e200, 1e300):
        U = R1 * (V / np.sqrt(1 + (V * V).sum(1))[:, None])
        V2 = dwp._u_to_v(U, R1)
        assert np.all(np.isfinite(V2)), R1
        np.testing.assert_allclose(V2, V, rtol=1e-6, err_msg=f'R1 = {R1:g}')

def test_audit_huge_radius_is_finite():
    r = audit(PRED, Y, kernel=RBF(0.5), R1=1e200, n_starts=2)
    assert np.isfinite(r.value) and np.all(np.isfinite(r.G_norms))
    # the value is R1 sum_a ||G_a|| <= R1 mean ||phi(y) - p(x)|| <= 2 R1 for the Gaussian kernel
    assert 0 < r.value / 1e200 <= 2.0
    assert np.all(np.isfinite(r.loss.coef)) and np.all(np.isfinite(r.rule_loss.coef))


# --- sample predictions within the memory budget -----------------------------------------------------
def _set_budget(monkeypatch, budget):
    "Set the memory budget wherever the deccal modules read it (deccal.runtime; older versions kept copies)."
    for m in ('deccal.runtime', 'deccal.kernels', 'deccal.embedding', 'deccal.audit'):
        mod = importlib.import_module(m)
        if hasattr(mod, 'MEMORY_BUDGET'): monkeypatch.setattr(mod, 'MEMORY_BUDGET', budget)

def test_blocked_audit_stays_within_budget(monkeypatch):
    # before: a row block of P cost B * (n B) kernel values per row whatever the budget: 7.5x a 256 KiB budget here
    pred, Y = _samples(160, 24)
    audit(pred[:20], Y[:20], kernel=RBF(0.5), n_starts=1)          # compile and load everything first
    budget = 256 * 1024
    _set_budget(monkeypatch, budget)
    tracemalloc.start()
    try:
        r = audit(pred, Y, kernel=RBF(0.5), exact_max=0, max_rank=10, n_starts=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally: tracemalloc.stop()
    outputs = 10 * pred.n * (10 + 10) * 8          # the range finder's thin (n, max_rank + 10) matrices, a few at once
    assert peak <= 2 * budget + outputs, (peak / budget, outputs / budget)
    assert np.isfinite(r.value) and r.value > 0

def test_blocked_and_dense_paths_agree(monkeypatch):
    # the same factorization with the dense matrices kept (one pass) and with passes over small tiles
    # (the factors agree up to rounding; the search's random starts, in their coordinates, may then end elsewhere)
    pred, Y = _samples(120, 8, seed=2)
    def factors():
        g = dsk.Grams(RBF(0.5), pred, Y)
        (SP, lamP), (SR, lamR), info = dsk.low_rank_factors(g, 0, 1e-6, 200, np.random.default_rng(0))
        return SP @ SP.T, SR @ SR.T, lamP, lamR, info
    big = factors()
    _set_budget(monkeypatch, 64 * 1024)
    small = factors()
    assert big[4]['dense_kept'] is True and small[4]['dense_kept'] is False
    for b, s in zip(big[:4], small[:4]): np.testing.assert_allclose(s, b, rtol=0, atol=1e-10 * np.abs(b).max())
    assert (small[4]['rank_P'], small[4]['rank_R']) == (big[4]['rank_P'], big[4]['rank_R'])

def test_dense_matrices_computed_once(monkeypatch):
    # before: the randomized factorization recomputed kernel blocks of P in each of its 3 passes, then 2 more for the
    # witness
    pred, Y = _samples(200, 4, seed=4)
    counted = {'entries': 0}
    inner = Embedding.inner
    def counting(self, kernel, other=None):
        q = self if other is None else other
        counted['entries'] += self.n * q.n
        return inner(self, kernel, other)
    monkeypatch.setattr(Embedding, 'inner', counting)
    audit(pred, Y, kernel=RBF(0.5), exact_max=0, n_starts=1)
    # at most one pass over P (half of it, by symmetry)
    assert counted['entries'] <= pred.n ** 2, counted['entries'] / pred.n ** 2

def test_progress_while_factoring(monkeypatch):
    # before: a single line ("factoring the Gram matrices ...") until the search started
    from deccal.runtime import Progress
    class EveryUpdate(Progress):
        def __init__(self, *a, **k): k['log_every'] = 0.0; super().__init__(*a, **k)
    monkeypatch.setattr(da, 'Progress', EveryUpdate)
    pred, Y = _samples(120, 8, seed=2)
    _set_budget(monkeypatch, 64 * 1024)
    flag = 'verbose' if 'verbose' in inspect.signature(audit).parameters else 'progress'
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        audit(pred, Y, kernel=RBF(0.5), exact_max=0, n_starts=2, **{flag: True})
    lines = err.getvalue().splitlines()
    first_search = next(i for i, l in enumerate(lines) if 'searching' in l)
    gram_lines = [l for l in lines[:first_search] if '%' in l]
    assert len(gram_lines) >= 10, lines[:first_search]
    pcts = [int(l.split('%')[0].split()[-1].split(':')[-1]) for l in gram_lines if 'pass 1 ' in l]
    assert pcts == sorted(pcts) and pcts[-1] == 100


# --- the report: each statement's bound, approximation and level, and their joint level ---------------
def test_report_levels_joint_and_R2_wording():
    # before: the bound over l had no level, the lower bound did not name its normal approximation, the Hoeffding line
    # was called distribution-free with R2 taken from the data, and no joint level was given for the statements
    pred, Y = _points(80, seed=7)
    est = certify(pred, Y, kernel=Linear(), n_actions=2, beta=5.0, n_starts=1, max_iter=20, delta=0.1)
    given = certify(pred, Y, kernel=Linear(), n_actions=2, beta=5.0, n_starts=1, max_iter=20, delta=0.1,
                    R2=2 * est.info['R2'])
    assert (est.info['R2_given'], given.info['R2_given']) == (False, True)
    for r in (est, given):
        text, joint = r.report(), r.report(joint=True)
        numbered = [l for l in text.splitlines() if l.startswith('  [')]
        assert len(numbered) == 4 and all('with confidence 90%' in l for l in numbered)
        assert all('with confidence 97.5%' in l for l in joint.splitlines() if l.startswith('  ['))
        assert 'at least 60% (1 - 4 x 0.1' in text and 'all 4 hold together with confidence at least 90%' in joint
        b = r.bounds(0.1 / 4)                        # report(joint=True) prints the single bounds at delta / k
        for key in ('normal_upper', 'hoeffding_upper', 'rule_bound'): assert f"{b[key]:.4g} with confidence" in joint
        # Hoeffding's one-sided half-width 2 R1 R2 sqrt(2 ln(1/delta) / m), from the stored numbers
        half = 2 * r.R1 * r.info['R2'] * np.sqrt(2 * np.log(4 / 0.1) / r.holdout_m)
        assert b['hoeffding_upper'] == pytest.approx(r.holdout_value + half, rel=1e-12)
    assert est.report().count('not distribution-free') == 3     # the R2 line, the Hoeffding line, the bound over l
    assert 'not distribution-free' not in given.report() and 'R2 = ' in given.report()
    _raises(lambda: est.report(joint=1), 'joint', type_error=True)
    _raises(lambda: est.bounds(delta=1.5), 'delta')
    _raises(lambda: audit(pred, Y, kernel=Linear(), n_starts=1).bounds(), 'holdout')
