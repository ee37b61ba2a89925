"""Checks of the recalibration algorithms `deccal.dimfree.DimFreeDeCal` (Algorithm 1 of the paper, the theorem
after it) and `deccal.zhao.ZhaoDeCal` (Algorithm 2, the regularized extension of Zhao et al.).

References are computed without the implicit machinery: with kernels that have an explicit finite feature
map (Linear, Polynomial) the algorithms are re-run here as plain NumPy in R^m -- predictions as vectors,
G_a = E_hat[(phi(y) - p(x)) k_a(x)] as vectors, the step, the patch and the projection onto the ball of
radius R2 as vector operations. The implicit run and the reference share only the auditor's choice of the
rule loss l'_t in each round (the search is randomized), read from `cal.rule_loss(t)` and converted to an
explicit matrix U_t (A x m). Everything else is recomputed independently and compared to 1e-8.
"""
import os
os.environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')
os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')

import numpy as np
import pytest

from deccal.audit import explicit_predictions
from deccal.decisions import quantal_response
from deccal.dimfree import DimFreeDeCal
from deccal.persist import load_calibrator, FORMAT_VERSION
from deccal.embedding import Embedding
from deccal.kernels import Linear, Polynomial, RBF
from deccal.losses import Loss
from deccal.zhao import ZhaoDeCal

TOL = 1e-8


def make(n, d=2, shrink=0.6, noise=0.3, seed=0):
    "Miscalibrated point forecasts: predictions shrink x, outcomes are x plus noise."
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, d))
    return Embedding.from_points(shrink * x), x + noise * rng.normal(size=(n, d))


def close(a, b, tol=TOL):
    "Relative-or-absolute agreement to tol, elementwise."
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape, (a.shape, b.shape)
    err = np.abs(a - b) / np.maximum(1.0, np.abs(b))
    assert err.max(initial=0.0) <= tol, f"max relative error {err.max():.3g} > {tol:g}"


# ----------------------------------------------------------------------------- explicit reference
def project(X, R2):
    nrm = np.linalg.norm(X, axis=1)
    return X * np.minimum(1.0, R2 / np.maximum(nrm, 1e-300))[:, None]


def explicit_run(P, Phi_y, Us, beta, R1, R2, eps, method, regularizer=1.0):
    """Algorithm 1 (method 'theory' / 'line-search') or Algorithm 2 ('zhao') in R^m with the given rule
    matrices Us; returns the audit values, the square losses before each round and after the last, and the
    patches (U_t, D_t) to replay on new points."""
    P = project(P.copy(), R2)
    n = len(P)
    values, losses, patches = [], [], []
    for U in Us:
        losses.append(np.mean(((P - Phi_y) ** 2).sum(1)))
        k = quantal_response(P @ U.T, beta)
        G = (k / n).T @ (Phi_y - P)                           # (A, m): G_a
        Gn = np.linalg.norm(G, axis=1)
        values.append(R1 * Gn.sum())
        Dhat = (k / n).T @ k                                  # E_hat[k_a k_b]
        if method == 'zhao':
            D = np.linalg.solve(Dhat + regularizer * np.eye(len(Dhat)), G)
        else:
            unit = R1 * G / Gn[:, None]
            if method == 'theory': eta = eps / (2 * R1 ** 2)
            else:   # exact minimizer over eta of mean ||P + eta k unit - Phi_y||^2
                eta = np.sum(G * unit) / np.sum(Dhat * (unit @ unit.T))
            D = eta * unit
        patches.append((U, D))
        P = project(P + k @ D, R2)
    losses.append(np.mean(((P - Phi_y) ** 2).sum(1)))
    return np.array(values), np.array(losses), patches, P


def replay(Pn, patches, beta, R2):
    Pn = project(Pn.copy(), R2)
    for U, D in patches: Pn = project(Pn + quantal_response(Pn @ U.T, beta) @ D, R2)
    return Pn


def explicit_rules(cal, kernel):
    "The auditor's rule losses l'_t as explicit matrices U_t (A x m)."
    out = []
    for t in range(len(cal.rounds_)):
        rl = cal.rule_loss(t)
        assert isinstance(rl, Loss)
        out.append(rl.coef @ kernel.features(rl.atoms))
    return out


CASES = [
    ('dimfree-theory', Polynomial(2, 1.0), dict(step='theory')),
    ('dimfree-line-search', Polynomial(2, 1.0), dict(step='line-search')),
    ('dimfree-line-search-linear', Linear(), dict(step='line-search')),
    ('zhao', Polynomial(2, 1.0), dict()),
    ('zhao-lambda-0.1', Polynomial(2, 1.0), dict(regularizer=0.1)),
]


@pytest.mark.parametrize('name,kernel,kw', CASES, ids=[c[0] for c in CASES])
def test_exactness_against_explicit_feature_space(name, kernel, kw):
    # R2 above every ||phi(y)|| (4.01 for the polynomial kernel); binds on new points
    beta, R1, R2, eps = 5.0, 1.0, 4.5, 0.02
    pred, Y = make(80, seed=1)
    rng = np.random.default_rng(2)
    new = Embedding.from_points(rng.uniform(-1.5, 1.5, (40, 2)))
    cls = ZhaoDeCal if name.startswith('zhao') else DimFreeDeCal
    cal = cls(kernel=kernel, n_actions=3, beta=beta, R1=R1, R2=R2, eps=eps, max_rounds=4,
              n_starts=1, max_iter=40, early_stopping=False, **kw).fit(pred, Y)
    assert len(cal.rounds_) >= 2, "the case must exercise several rounds"
    Us = explicit_rules(cal, kernel)
    method = 'zhao' if cls is ZhaoDeCal else kw['step']
    values, losses, patches, P = explicit_run(explicit_predictions(pred, kernel), kernel.features(Y), Us, beta, R1,
                                              R2, eps, method, kw.get('regularizer', 1.0))
    hist = cal.history_
    close([h['audit_value'] for h in hist[:len(Us)]], values)
    close([h['square_loss'] for h in hist[:len(Us) + 1]], losses)
    # on the sample and on new points: transformed predictions and loss estimates
    Lp = Loss(kernel, rng.normal(size=(6, 2)), rng.normal(size=(4, 6)))
    Ux = Lp.coef @ kernel.features(Lp.atoms)
    for base, ref in ((pred, P), (new, replay(explicit_predictions(new, kernel), patches, beta, R2))):
        out = cal.transform(base)
        assert isinstance(out, Embedding) and out.n == base.n
        close(explicit_predictions(out, kernel), ref)
        close(out.loss_estimates(Lp), ref @ Ux.T)
        close(out.sq_norms(kernel), (ref ** 2).sum(1))
    # the square loss of the calibrated predictions, on the sample and on new outcomes
    close(cal.square_loss(pred, Y), np.mean(((P - kernel.features(Y)) ** 2).sum(1)))
    Ynew = np.random.default_rng(3).uniform(-1, 1, (new.n, 2))
    Pn = replay(explicit_predictions(new, kernel), patches, beta, R2)
    close(cal.square_loss(new, Ynew), np.mean(((Pn - kernel.features(Ynew)) ** 2).sum(1)))


def test_transform_of_sample_reproduces_fitted_square_loss_rbf():
    "Without a finite feature map: the transformed sample's square loss equals the last recorded one."
    pred, Y = make(120, d=3, seed=3)
    k = RBF(0.5)
    cal = DimFreeDeCal(kernel=k, n_actions=3, beta=10.0, eps=0.02, step='line-search', max_rounds=4,
                       n_starts=1, max_iter=40, early_stopping=False).fit(pred, Y)
    assert len(cal.rounds_) == 4
    close(cal.transform(pred).sq_error(k, Y).mean(), cal.history_[-1]['square_loss'])


# ----------------------------------------------------------------------------- the theorem after Algorithm 1
@pytest.mark.parametrize('kernel', [RBF(1.0), Polynomial(2, 1.0)], ids=['rbf', 'poly2'])
def test_theorem_theory_step(kernel):
    """Square loss never rises, at most 16 R1^2 R2^2 / eps^2 rounds, final audit value <= eps (the loop stops
    at 3 eps / 4); on the sample (no early stopping) each round lowers the square loss by at least
    2 eta v_t - eta^2 R1^2 for its audit value v_t, which is more than eps^2 / (2 R1^2) since v_t > 3 eps / 4."""
    R1, eps = 1.0, 0.15
    pred, Y = make(100, seed=4)
    cal = DimFreeDeCal(kernel=kernel, n_actions=3, beta=5.0, R1=R1, eps=eps, step='theory', max_iter=60,
                       early_stopping=False).fit(pred, Y)
    R2 = cal.R2_
    bound = 16 * R1 ** 2 * R2 ** 2 / eps ** 2
    losses = np.array([h['square_loss'] for h in cal.history_])
    assert len(cal.rounds_) >= 3, "the case must exercise several rounds"
    assert len(cal.rounds_) <= bound
    assert np.all(np.diff(losses) <= 1e-12)
    eta, v = eps / (2 * R1 ** 2), np.array([h['audit_value'] for h in cal.history_[:-1]])
    assert np.all(-np.diff(losses) >= 2 * eta * v - eta ** 2 * R1 ** 2 - 1e-12)
    assert np.all(-np.diff(losses) >= eps ** 2 / (2 * R1 ** 2) - 1e-12)
    assert cal.history_[-1]['audit_value'] <= 0.75 * eps <= eps
    assert all(h['audit_value'] > 0.75 * eps for h in cal.history_[:-1])


def test_line_search_never_raises_square_loss():
    pred, Y = make(100, seed=5)
    cal = DimFreeDeCal(kernel=RBF(1.0), n_actions=3, beta=5.0, R1=1.0, eps=0.05, step='line-search',
                       max_rounds=12, max_iter=60, early_stopping=False).fit(pred, Y)
    losses = np.array([h['square_loss'] for h in cal.history_])
    assert len(losses) >= 4 and np.all(np.diff(losses) <= 1e-12)
    # the exact line search beats the theory step on the same first round
    th = DimFreeDeCal(kernel=RBF(1.0), n_actions=3, beta=5.0, R1=1.0, eps=0.05, step='theory', max_rounds=1,
                      max_iter=60, early_stopping=False).fit(pred, Y)
    assert cal.history_[1]['square_loss'] <= th.history_[1]['square_loss'] + 1e-12


def test_split_sample_audits_fresh_parts():
    """sample='split': round t is audited (and its G_a, step and D_hat estimated) on the t-th of max_rounds
    disjoint parts of the sample only (the parts: a permutation by `seed`, split evenly); the square loss
    is still recorded on the whole sample."""
    pred, Y = make(120, seed=6)
    kernel, beta, R1, R2, T = Polynomial(2, 1.0), 5.0, 1.0, 4.5, 3
    kw = dict(kernel=kernel, n_actions=3, beta=beta, R1=R1, R2=R2, eps=0.01, max_rounds=T, n_starts=1, max_iter=40,
              step='line-search', early_stopping=False)
    sp = DimFreeDeCal(sample='split', seed=7, **kw).fit(pred, Y)
    assert len(sp.rounds_) == T
    parts = np.array_split(np.random.default_rng(7).permutation(120), T)
    P, Phi_y = project(explicit_predictions(pred, kernel), R2), kernel.features(Y)
    for t, part in enumerate(parts):
        assert np.isclose(sp.history_[t]['square_loss'], np.mean(((P - Phi_y) ** 2).sum(1)), rtol=TOL, atol=TOL)
        U = explicit_rules(sp, kernel)[t]
        k = quantal_response(P @ U.T, beta)
        w = np.zeros(120); w[part] = 1.0 / len(part)
        G = (w[:, None] * k).T @ (Phi_y - P)
        Gn = np.linalg.norm(G, axis=1)
        close(sp.history_[t]['audit_value'], R1 * Gn.sum())
        unit = R1 * G / Gn[:, None]
        eta = np.sum(G * unit) / np.sum(((w[:, None] * k).T @ k) * (unit @ unit.T))
        P = project(P + k @ (eta * unit), R2)
    close(sp.history_[T]['square_loss'], np.mean(((P - Phi_y) ** 2).sum(1)))
    with pytest.raises(ValueError, match='max_rounds'):
        DimFreeDeCal(sample='split', **{**kw, 'max_rounds': 100}).fit(pred, Y)


# ----------------------------------------------------------------------------- projection onto the ball
@pytest.mark.parametrize('cls', [DimFreeDeCal, ZhaoDeCal])
def test_norms_at_most_R2(cls):
    pred, Y = make(80, seed=7)
    k = Linear()
    R2 = 1.6                  # at least every ||phi(y)|| (1.58 here): a smaller R2 is refused
    cal = cls(kernel=k, n_actions=3, beta=5.0, R2=R2, eps=0.01, max_rounds=3, n_starts=1, max_iter=40,
              early_stopping=False).fit(pred, Y)
    assert len(cal.rounds_) == 3
    new = Embedding.from_points(np.random.default_rng(8).uniform(-3, 3, (200, 2)))
    for base in (pred, new):
        norms = np.sqrt(cal.transform(base).sq_norms(k))
        assert norms.max() <= R2 * (1 + 1e-10)
    # and the bound binds: some predictions sit on the sphere
    assert np.isclose(np.sqrt(cal.transform(new).sq_norms(k)).max(), R2, rtol=1e-8)


# ----------------------------------------------------------------------------- calibrated predictors
@pytest.mark.parametrize('cls', [DimFreeDeCal, ZhaoDeCal])
def test_calibrated_predictor_left_unchanged(cls):
    "Outcomes equal to the point forecasts: every residual is zero, the audit value is 0, no round runs."
    xs = np.random.default_rng(9).uniform(-1, 1, (100, 2))
    pred = Embedding.from_points(xs)
    k = Polynomial(2, 1.0)
    cal = cls(kernel=k, n_actions=3, eps=0.05).fit(pred, xs)
    assert len(cal.rounds_) == 0
    assert len(cal.history_) == 1 and cal.history_[0]['audit_value'] <= 1e-12
    new = Embedding.from_points(np.random.default_rng(10).uniform(-1, 1, (30, 2)))
    for base in (pred, new):
        close(explicit_predictions(cal.transform(base), k), explicit_predictions(base, k))


# ----------------------------------------------------------------------------- save / load
@pytest.mark.parametrize('cls,kw', [(DimFreeDeCal, dict(step='line-search')), (ZhaoDeCal, dict(regularizer=0.5))])
def test_save_load_round_trip_exact(tmp_path, cls, kw):
    pred, Y = make(60, seed=11)
    cal = cls(kernel=RBF(0.7), n_actions=3, beta=5.0, eps=0.01, max_rounds=3, n_starts=1, max_iter=30,
              **kw).fit(pred, Y)
    fn = tmp_path / 'cal.npz'
    cal.save(fn)
    back = load_calibrator(fn)
    assert type(back) is cls
    for k in ('n_actions', 'beta', 'R1', 'eps', 'max_rounds', 'sample', 'seed') + tuple(kw):
        assert getattr(back, k) == getattr(cal, k), k
    assert back.history_ == cal.history_
    new = Embedding.from_points(np.random.default_rng(12).uniform(-1, 1, (50, 2)))
    a, b = cal.transform(new), back.transform(new)
    for key in ('Z', 'W', 'V', 'theta', 'gamma'):
        assert np.array_equal(getattr(a, key), getattr(b, key)), key
    # the file is plain arrays: it loads without pickle
    with np.load(fn, allow_pickle=False) as f: assert 'version' in f.files


def test_load_refuses_bad_files(tmp_path):
    pred, Y = make(40, seed=13)
    cal = DimFreeDeCal(kernel=RBF(1.0), n_actions=2, eps=0.01, max_rounds=1, n_starts=1, max_iter=20).fit(pred, Y)
    fn = tmp_path / 'cal.npz'
    cal.save(fn)
    with np.load(fn) as f: arrays = {k: f[k] for k in f.files}
    np.savez(tmp_path / 'v2.npz', **{**arrays, 'version': np.array(FORMAT_VERSION + 1)})
    with pytest.raises(ValueError, match=f'version {FORMAT_VERSION + 1}'): load_calibrator(tmp_path / 'v2.npz')
    raw = fn.read_bytes()
    (tmp_path / 'cut.npz').write_bytes(raw[:len(raw) // 2])
    with pytest.raises(ValueError, match='not a deccal calibrator'): load_calibrator(tmp_path / 'cut.npz')
    (tmp_path / 'junk.npz').write_bytes(b'junk' * 100)
    with pytest.raises(ValueError, match='not a deccal calibrator'): load_calibrator(tmp_path / 'junk.npz')
    np.savez(tmp_path / 'other.npz', x=np.arange(3.0))
    with pytest.raises(ValueError, match='not a deccal calibrator'): load_calibrator(tmp_path / 'other.npz')
    # a member corrupted in place: the zip's CRC no longer matches
    bad = bytearray(raw)
    mid = len(bad) // 2
    bad[mid:mid + 64] = bytes(64)
    (tmp_path / 'flip.npz').write_bytes(bytes(bad))
    with pytest.raises(ValueError, match='not a deccal calibrator'): load_calibrator(tmp_path / 'flip.npz')
    with pytest.raises(ValueError, match='path'): load_calibrator(tmp_path / 'missing.npz')
    with pytest.raises(ValueError, match='not fitted'): DimFreeDeCal(kernel=RBF()).save(tmp_path / 'x.npz')


# ----------------------------------------------------------------------------- Algorithm 2 specifics
def test_zhao_unregularized_singular_is_clear_error():
    "A constant predictor: every x gets the same action probabilities, D_hat has rank one."
    rng = np.random.default_rng(14)
    x = rng.uniform(-1, 1, (100, 2))
    const = Embedding.from_points(np.zeros((100, 2)))
    with pytest.raises(ValueError, match='regularizer'):
        ZhaoDeCal(kernel=RBF(1.0), n_actions=3, beta=10.0, eps=0.01, regularizer=0.0, max_rounds=1).fit(const, x)
    # with the paper's regularizer the same fit runs, and its patch norms are bounded
    z = ZhaoDeCal(kernel=RBF(1.0), n_actions=3, beta=10.0, eps=0.01, max_rounds=1).fit(const, x)
    assert len(z.rounds_) == 1
    with pytest.raises(ValueError, match='regularizer'): ZhaoDeCal(kernel=RBF(), regularizer=-1.0).fit(const, x)
    with pytest.raises(ValueError, match='regularizer'): ZhaoDeCal(kernel=RBF(), regularizer=float('nan')).fit(const, x)


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize('cls', [DimFreeDeCal, ZhaoDeCal])
@pytest.mark.parametrize('arg', ['beta', 'R1', 'R2', 'eps'])
@pytest.mark.parametrize('value', [0.0, -1.0, float('nan'), float('inf')])
def test_non_positive_parameters(cls, arg, value):
    pred, Y = make(20, seed=15)
    est = cls(kernel=RBF(), **{arg: value})             # the constructor only stores; fit checks
    with pytest.raises(ValueError, match=f'^{arg}:'): est.fit(pred, Y)


@pytest.mark.parametrize('cls', [DimFreeDeCal, ZhaoDeCal])
def test_bad_input_names_argument(cls):
    pred, Y = make(30, seed=15)
    mk = lambda **kw: cls(kernel=RBF(), **{'max_rounds': 1, 'n_starts': 1, 'max_iter': 10, **kw})
    with pytest.raises(ValueError, match='^kernel:'): cls(kernel=None).fit(pred, Y)
    with pytest.raises(ValueError, match='^n_actions:'): mk(n_actions=0).fit(pred, Y)
    with pytest.raises(ValueError, match='^max_rounds:'): mk(max_rounds=-1).fit(pred, Y)
    with pytest.raises(ValueError, match='^sample:'): mk(sample='bootstrap').fit(pred, Y)
    with pytest.raises(ValueError, match='^Y:'): mk().fit(pred, Y[:5])                  # wrong number of rows
    with pytest.raises(ValueError, match='^Y:'): mk().fit(pred, Y[:, :1])               # wrong dimension
    with pytest.raises(ValueError, match='^Y:'): mk().fit(pred, Y[:, 0])        # 1-d outcomes for 2-d predictions
    Yn = Y.copy(); Yn[3, 1] = np.nan
    with pytest.raises(ValueError, match='^Y:.*NaN'): mk().fit(pred, Yn)
    with pytest.raises(ValueError, match='^Y:.*empty'): mk().fit(pred, np.zeros((0, 2)))
    with pytest.raises(ValueError, match='^pred:'): mk().fit(Y, Y)
    with pytest.raises(ValueError, match='^holdout:'): mk().fit(pred, Y, holdout=(pred,))
    with pytest.raises(ValueError, match='not fitted'): mk().transform(pred)
    cal = mk().fit(pred, Y)
    with pytest.raises(ValueError, match='^pred:'): cal.transform(Y)
    with pytest.raises(ValueError, match='^pred:'): cal.transform(Embedding.from_points(np.zeros((4, 3))))
    if cls is DimFreeDeCal:
        with pytest.raises(ValueError, match='^step:'): mk(step='newton').fit(pred, Y)


def test_history_records_holdout():
    pred, Y = make(100, seed=16)
    ph, Yh = make(300, seed=17)
    cal = DimFreeDeCal(kernel=RBF(1.0), n_actions=2, beta=5.0, eps=0.01, max_rounds=2, n_starts=1,
                       max_iter=30).fit(pred, Y, holdout=(ph, Yh))
    for h in cal.history_[:-1]:
        assert set(h) >= {'round', 'audit_value', 'square_loss', 'holdout_value'}
        assert np.isfinite(h['holdout_value'])


def test_verbose_progress(capsys):
    pred, Y = make(40, seed=18)
    DimFreeDeCal(kernel=RBF(1.0), n_actions=2, eps=0.01, max_rounds=2, n_starts=1, max_iter=20).fit(pred, Y)
    assert capsys.readouterr().err == ''
    DimFreeDeCal(kernel=RBF(1.0), n_actions=2, eps=0.01, max_rounds=2, n_starts=1, max_iter=20,
                 verbose=True).fit(pred, Y)
    lines = capsys.readouterr().err.splitlines()
    # stderr is not a terminal here: a line per audited round, then the summary line
    assert [l.split('round ')[1].split()[0] for l in lines[:-1]] == ['0/2', '1/2']
    assert lines[0].startswith('DimFreeDeCal [') and lines[-1].startswith('DimFreeDeCal  2 rounds')


@pytest.mark.parametrize('cls', [DimFreeDeCal, ZhaoDeCal])
def test_truncated_is_a_shorter_fit(cls):
    "cal.truncated(T) transforms exactly as a fit stopped by max_rounds=T (the rounds do not depend on when one stops)."
    pred, Y = make(80, seed=19)
    new = make(30, seed=20)[0]
    kw = dict(kernel=RBF(1.0), n_actions=2, beta=5.0, eps=1e-3, n_starts=1, max_iter=30, early_stopping=False)
    full = cls(max_rounds=4, **kw).fit(pred, Y)
    assert len(full.rounds_) == 4
    for T in (1, 3):
        a, b = full.truncated(T).transform(new), cls(max_rounds=T, **kw).fit(pred, Y).transform(new)
        assert np.array_equal(a.theta, b.theta) and np.array_equal(a.gamma, b.gamma)
    for T in (0, 2):     # the square loss after T rounds, as the fit recorded it
        assert abs(full.truncated(T).square_loss(pred, Y) - full.history_[T]['square_loss']) < TOL
    assert len(full.rounds_) == 4                                           # the original is untouched
    with pytest.raises(ValueError, match='T: must be an integer'):
        full.truncated(5)


@pytest.mark.parametrize('cls', [DimFreeDeCal, ZhaoDeCal])
def test_round_bound_overflow_is_inf_when_max_rounds_given(cls):
    "The theorem's bound is only a default for max_rounds: a huge R2 or a tiny eps gives inf, not an OverflowError."
    pred, Y = make(40, seed=21)
    for big in (dict(R2=1e200), dict(eps=1e-200)):
        cal = cls(kernel=Linear(), n_actions=2, max_rounds=1, early_stopping=False, **big).fit(pred, Y)
        assert cal.round_bound_ == float('inf') and len(cal.history_) >= 1
        with pytest.raises(ValueError, match='^max_rounds: the theorem'):
            cls(kernel=Linear(), n_actions=2, early_stopping=False, **big).fit(pred, Y)
