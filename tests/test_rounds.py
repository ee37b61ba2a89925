"""One calibration round, written once: every path (in memory, row blocks, split parts, Algorithm 2, Dask) runs
`deccal.rounds.run_rounds`, the paths agree, and a round equals Algorithm 1 computed explicitly in R^d."""
import numpy as np
import pytest
import deccal.rounds
import deccal.runtime
from deccal import Embedding, Linear, RBF, DimFreeDeCal, ZhaoDeCal, quantal_response


def _sample(n, seed=0, d=2):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, d))
    return Embedding.from_points(0.6 * x), x + 0.3 * rng.normal(size=(n, d))


@pytest.fixture
def spy(monkeypatch):
    "Count the calls of the one loop of rounds, whatever path calls it."
    calls = []
    real = deccal.rounds.run_rounds

    def counted(cal, *args, **kw):
        calls.append(type(cal).__name__)
        return real(cal, *args, **kw)
    monkeypatch.setattr(deccal.rounds, 'run_rounds', counted)
    return calls


@pytest.mark.parametrize('cls, kw', [
    (DimFreeDeCal, dict()),                                    # in memory, one block
    (DimFreeDeCal, dict(search_max=50)),                       # above search_max: the search on a part
    (DimFreeDeCal, dict(sample='split', max_rounds=3)),        # each round audits its own part
    (ZhaoDeCal, dict()),                                       # Algorithm 2: only the patch differs
])
def test_every_in_memory_path_runs_the_one_loop(spy, cls, kw):
    pred, Y = _sample(120)
    cal = cls(RBF(0.5), n_actions=3, **{'max_rounds': 2, 'early_stopping': False, **kw}).fit(pred, Y)
    assert spy == [cls.__name__] and len(cal.history_) >= 2


def test_dask_path_runs_the_one_loop(spy):
    da = pytest.importorskip('dask.array')
    from deccal.dask import DaskEmbedding
    pred, Y = _sample(200)
    dp = DaskEmbedding.from_points(da.from_array(pred.Z[:, 0, :], chunks=50))
    DimFreeDeCal(RBF(0.5), n_actions=3, max_rounds=2, early_stopping=False).fit(dp, da.from_array(Y, chunks=50))
    assert spy == ['DimFreeDeCal']


def _values(cal):
    return np.array([[h['square_loss'], h.get('audit_value') or 0.0] for h in cal.history_])


def test_one_block_and_many_blocks_agree(monkeypatch):
    "Cutting the rows into many blocks changes only the order of summation (theory step: no amplification)."
    pred, Y = _sample(300, seed=3)
    kw = dict(n_actions=3, eps=0.02, max_rounds=4, early_stopping=False)
    one = DimFreeDeCal(RBF(0.5), **kw).fit(pred, Y)
    monkeypatch.setattr(deccal.runtime, 'MEMORY_BUDGET', 8 * 2**10)        # 8 KiB: many blocks of a few rows
    many = DimFreeDeCal(RBF(0.5), **kw).fit(pred, Y)
    np.testing.assert_allclose(_values(many), _values(one), rtol=1e-8, atol=1e-12)


def test_dask_and_memory_agree():
    da = pytest.importorskip('dask.array')
    from deccal.dask import DaskEmbedding
    pred, Y = _sample(400, seed=4)
    kw = dict(n_actions=3, eps=0.02, max_rounds=4, early_stopping=False, search_max=200)
    mem = DimFreeDeCal(RBF(0.5), **kw).fit(pred, Y)
    dp = DaskEmbedding.from_points(da.from_array(pred.Z[:, 0, :], chunks=100))
    dsk = DimFreeDeCal(RBF(0.5), **kw).fit(dp, da.from_array(Y, chunks=100))
    np.testing.assert_allclose(_values(dsk), _values(mem), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize('step', ['theory', 'line-search'])
def test_a_round_is_algorithm_1_in_explicit_coordinates(step):
    """Given the rule l'_0 the auditor found, round 0 computed by hand in R^2 (linear kernel: phi(y) = y):
    G_a = mean (y - p) k_a, the value R1 sum ||G_a||, the patch, the projection and the next square loss."""
    pred, Y = _sample(80, seed=5)
    R1, beta, eps = 1.0, 4.0, 0.01
    cal = DimFreeDeCal(Linear(), n_actions=3, beta=beta, R1=R1, eps=eps, step=step, max_rounds=1,
                       early_stopping=False).fit(pred, Y)
    P = pred.Z[:, 0, :]
    rule = cal.rule_loss(0)
    Rrule = rule.coef @ rule.atoms                           # r_{l'}(a) as vectors of R^2
    P0 = P * np.minimum(1, cal.R2_ / np.linalg.norm(P, axis=1))[:, None]   # the first projection onto B(R2)
    k = quantal_response(P0 @ Rrule.T, beta)
    G = k.T @ (Y - P0) / len(Y)                              # (A, 2)
    Gn = np.linalg.norm(G, axis=1)
    assert cal.history_[0]['audit_value'] == pytest.approx(R1 * Gn.sum(), rel=1e-9)
    U = G / Gn[:, None]                                      # unit directions
    if step == 'theory': eta_R1 = eps / (2 * R1)             # eta R1 with eta = eps / (2 R1^2)
    else: eta_R1 = np.sum(G * U) / np.sum((k.T @ k / len(Y)) * (U @ U.T))   # the exact line search
    P1 = P0 + eta_R1 * k @ U
    P1 *= np.minimum(1, cal.R2_ / np.linalg.norm(P1, axis=1))[:, None]
    assert cal.history_[1]['square_loss'] == pytest.approx(np.mean(np.sum((P1 - Y)**2, 1)), rel=1e-9)
    new = Embedding.from_points(np.random.default_rng(6).uniform(-1, 1, (7, 2)))
    Pn = new.Z[:, 0, :] * np.minimum(1, cal.R2_ / np.linalg.norm(new.Z[:, 0, :], axis=1))[:, None]
    Pn1 = Pn + eta_R1 * quantal_response(Pn @ Rrule.T, beta) @ U
    Pn1 *= np.minimum(1, cal.R2_ / np.linalg.norm(Pn1, axis=1))[:, None]
    out = cal.transform(new)
    np.testing.assert_allclose(out.evaluate(Linear(), np.eye(2)), Pn1, rtol=1e-9, atol=1e-12)
