"""The calibrators' API: scikit-learn's estimator conventions (parameters stored by the constructor, checked by
`fit`; get_params / set_params / clone), ZhaoDeCal's signature derived from DimFreeDeCal's, NotFittedError, the
radius R2 against the outcomes, the base predictor's square loss before the projection, `save` writing exactly
its path atomically, and `load_calibrator` checking a file's contents before trusting them (also files written
before the current format, in tests/data)."""
import os
os.environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')
os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')
import inspect
from pathlib import Path

import numpy as np
import pytest

from deccal.dimfree import DimFreeDeCal
from deccal.persist import load_calibrator
from deccal.embedding import Embedding
from deccal.kernels import Linear, RBF
from deccal.zhao import ZhaoDeCal

DATA = Path(__file__).parent / 'data'


def make(n, d=2, shrink=0.6, noise=0.3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, d))
    return Embedding.from_points(shrink * x), x + noise * rng.normal(size=(n, d))


FAST = dict(max_rounds=1, n_starts=1, early_stopping=False)
PRED, Y = make(30)


# ----------------------------------------------------------------------------- parameters checked by fit
BAD = [('n_actions', None), ('n_actions', float('nan')), ('n_actions', float('inf')), ('n_actions', 0),
       ('n_actions', '2'),
       ('n_actions', 2.5), ('beta', 0.0), ('beta', 'x'), ('R1', -1.0), ('R2', 0.0), ('R2', float('nan')), ('eps', 0.0),
       ('eps', float('inf')), ('step', 'newton'), ('sample', 'bootstrap'), ('max_rounds', -1), ('max_rounds', 1.5),
       ('max_rounds', True), ('seed', -1), ('seed', 1.5), ('seed', 'a'), ('n_starts', 0), ('max_iter', 0),
       ('exact_max', -1),
       ('trace_tol', 0.0), ('trace_tol', 1.0), ('trace_tol', 2.0), ('max_rank', 0), ('early_stopping', 'yes'),
       ('early_stopping', 1), ('validation_fraction', 0.0), ('validation_fraction', 1.0), ('validation_fraction', None),
       ('n_iter_no_change', 0), ('n_iter_no_change', 2.5)]


@pytest.mark.parametrize('cls', [DimFreeDeCal, ZhaoDeCal])
@pytest.mark.parametrize('arg,value', BAD, ids=[f'{a}={v!r}' for a, v in BAD])
def test_fit_checks_every_parameter(cls, arg, value):
    "The constructor stores any value; fit refuses a bad one with an error naming it, before any work."
    if cls is ZhaoDeCal and arg == 'step': pytest.skip('ZhaoDeCal has no step')
    est = cls(kernel=RBF(), **{**FAST, arg: value})
    assert getattr(est, arg) is value                                   # stored as given
    with pytest.raises(ValueError, match=f'^{arg}:') as e: est.fit(PRED, Y)
    assert e.value.arg == arg
    wrong_type = (arg == 'early_stopping' or value is None
                  or (isinstance(value, (str, bool)) and arg not in ('step', 'sample')))
    assert isinstance(e.value, TypeError) == wrong_type


@pytest.mark.parametrize('value', [-1.0, float('nan'), 'x'])
def test_fit_checks_regularizer(value):
    est = ZhaoDeCal(kernel=RBF(), regularizer=value, **FAST)
    with pytest.raises(ValueError, match='^regularizer:') as e: est.fit(PRED, Y)
    assert e.value.arg == 'regularizer'


@pytest.mark.parametrize('cls', [DimFreeDeCal, ZhaoDeCal])
def test_kernel_required_and_checked(cls):
    est = cls(kernel=None, **FAST)
    with pytest.raises(ValueError, match='^kernel:') as e: est.fit(PRED, Y)
    assert isinstance(e.value, TypeError) and e.value.arg == 'kernel'
    with pytest.raises(TypeError): cls()                                 # no default kernel
    with pytest.raises(TypeError): cls(RBF(), 2)                         # options are keyword-only
    with pytest.raises(TypeError): cls(RBF(), maxiter=10)                # renamed max_iter


@pytest.mark.parametrize('cls', [DimFreeDeCal, ZhaoDeCal])
def test_fit_returns_self_and_integral_floats_work(cls):
    est = cls(RBF(), n_actions=2.0, max_rounds=1.0, n_starts=1, early_stopping=False)
    assert est.fit(PRED, Y) is est and len(est.rounds_) == 1
    assert est.n_actions == 2.0 and isinstance(est.n_actions, float)    # the parameter is left as given


# ----------------------------------------------------------------------------- get_params / set_params / clone
@pytest.mark.parametrize('cls', [DimFreeDeCal, ZhaoDeCal])
def test_get_set_params_and_clone(cls):
    from sklearn.base import clone
    k = RBF(0.5)
    est = cls(k, eps=0.1, max_rounds=1, n_starts=1, early_stopping=False)
    names = [n for n in inspect.signature(cls).parameters]
    shallow = est.get_params(deep=False)
    assert sorted(shallow) == sorted(names) and shallow['kernel'] is k and shallow['eps'] == 0.1
    assert est.get_params()['kernel__gamma'] == 0.5
    assert ('regularizer' in shallow) == (cls is ZhaoDeCal) and ('step' in shallow) == (cls is DimFreeDeCal)
    assert est.set_params(eps=0.2, seed=3) is est and (est.eps, est.seed) == (0.2, 3)
    with pytest.raises(ValueError, match='bogus') as e: est.set_params(bogus=1)
    assert isinstance(e.value, TypeError) and e.value.arg == 'bogus'
    est.set_params(kernel__gamma=2.0)
    assert isinstance(est.kernel, RBF) and est.kernel.gamma == 2.0 and k.gamma == 0.5
    est.fit(PRED, Y)
    c = clone(est)
    assert type(c) is cls and c.get_params(deep=False).keys() == est.get_params(deep=False).keys()
    assert all(v == est.get_params(deep=False)[n] or n == 'kernel' for n, v in c.get_params(deep=False).items())
    assert c.kernel.gamma == 2.0 and not hasattr(c, 'rounds_')         # a clone is unfitted
    # the fitted calibrator keeps using the parameters it was fitted with
    new = make(10, seed=5)[0]
    before = est.transform(new).theta
    est.set_params(beta=1.0, kernel=RBF(9.0), n_actions=5)
    assert np.array_equal(est.transform(new).theta, before)


def test_zhao_signature_is_dimfree_without_step_with_regularizer():
    d = inspect.signature(DimFreeDeCal).parameters
    z = inspect.signature(ZhaoDeCal).parameters
    assert set(d) - set(z) == {'step'} and set(z) - set(d) == {'regularizer'}
    for name in set(d) & set(z):
        assert (d[name].kind, d[name].default) == (z[name].kind, z[name].default), name
    assert z['kernel'].default is inspect.Parameter.empty and z['regularizer'].kind is inspect.Parameter.KEYWORD_ONLY
    assert z['regularizer'].default == 1.0
    with pytest.raises(TypeError, match='step'): ZhaoDeCal(RBF(), step='theory')      # was accepted and ignored
    with pytest.raises(TypeError, match='bogus'): ZhaoDeCal(RBF(), bogus=1)
    est = ZhaoDeCal(RBF(), eps=0.2)
    assert all(getattr(est, n) == (0.2 if n == 'eps' else q.default) for n, q in z.items() if n != 'kernel')


# ----------------------------------------------------------------------------- NotFittedError
@pytest.mark.parametrize('cls', [DimFreeDeCal, ZhaoDeCal])
@pytest.mark.parametrize('call', ['transform', 'save', 'certify', 'truncated', 'rule_loss', 'square_loss'])
def test_not_fitted(cls, call, tmp_path):
    est = cls(RBF())
    args = dict(transform=(PRED,), save=(tmp_path / 'c.npz',), certify=(PRED, Y), truncated=(0,), rule_loss=(0,),
                square_loss=(PRED, Y))[call]
    with pytest.raises(ValueError, match=f'^{cls.__name__}: .*not fitted.*call fit') as e: getattr(est, call)(*args)
    assert isinstance(e.value, AttributeError) and e.value.arg == cls.__name__
    assert not (tmp_path / 'c.npz').exists()


# ----------------------------------------------------------------------------- R2 and the base square loss
def test_R2_below_the_outcomes_is_refused():
    k = Linear()
    y_max = float(np.sqrt(k.diag(Y).max()))
    with pytest.raises(ValueError, match='^R2:') as e:
        DimFreeDeCal(k, R2=0.5 * y_max, **FAST).fit(PRED, Y)
    assert e.value.arg == 'R2' and f'{y_max:.6g}' in str(e.value) and 'square loss' in str(e.value)
    with pytest.raises(ValueError, match='^R2:'): ZhaoDeCal(k, R2=1e-6, **FAST).fit(PRED, Y)
    for R2 in (y_max, y_max * (1 - 1e-12)):                              # at the largest norm, up to rounding: accepted
        assert DimFreeDeCal(k, R2=R2, **FAST).fit(PRED, Y).R2_ == R2


@pytest.mark.parametrize('cls', [DimFreeDeCal, ZhaoDeCal])
def test_base_square_loss_before_the_projection(cls, tmp_path):
    "Predictions far outside the ball: projecting (R2 = largest ||y||) lowers the square loss; the base's is recorded."
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (40, 2))
    pred, y = Embedding.from_points(3 * x), x + 0.1 * rng.normal(size=(40, 2))
    R2 = float(np.linalg.norm(y, axis=1).max())
    est = cls(Linear(), R2=R2, **FAST).fit(pred, y)
    base = float(np.mean(((3 * x - y) ** 2).sum(1)))
    assert abs(est.base_square_loss_ - base) < 1e-10 * base
    assert est.history_[0]['square_loss'] < 0.5 * base                  # the projection alone more than halves it here
    est.save(tmp_path / 'c.npz')
    assert load_calibrator(tmp_path / 'c.npz').base_square_loss_ == est.base_square_loss_


# ----------------------------------------------------------------------------- save
@pytest.fixture(scope='module')
def fitted():
    return DimFreeDeCal(RBF(), n_actions=2, eps=0.01, max_rounds=2, n_starts=1).fit(PRED, Y)


def test_save_writes_exactly_path(fitted, tmp_path):
    fitted.save(tmp_path / 'cal')
    assert sorted(os.listdir(tmp_path)) == ['cal']                     # no '.npz' added
    back = load_calibrator(tmp_path / 'cal')
    assert np.array_equal(back.transform(PRED).theta, fitted.transform(PRED).theta)


def test_save_into_missing_folder(fitted, tmp_path):
    with pytest.raises(ValueError, match='^path:') as e: fitted.save(tmp_path / 'missing' / 'c.npz')
    assert e.value.arg == 'path' and not (tmp_path / 'missing').exists()


def test_save_is_atomic(fitted, tmp_path, monkeypatch):
    "A failure while writing leaves an existing file as it was, and no partial or temporary file behind."
    fn = tmp_path / 'c.npz'
    fitted.save(fn)
    good = fn.read_bytes()

    def broken_savez(file, *a, **kw):
        (open(file, 'wb') if isinstance(file, (str, os.PathLike)) else file).write(b'partial')
        raise OSError('disk full')
    monkeypatch.setattr(np, 'savez', broken_savez)
    with pytest.raises(OSError, match='disk full'): fitted.save(fn)
    assert fn.read_bytes() == good and os.listdir(tmp_path) == ['c.npz']


# ----------------------------------------------------------------------------- load: files of the previous format
@pytest.mark.parametrize('name,cls', [('dimfree', DimFreeDeCal), ('zhao', ZhaoDeCal)])
def test_load_files_of_the_previous_format(name, cls):
    "Files written by the previous release (kernel by class name and (p0, p1), 'maxiter', Zhao's ignored 'step')."
    exp = np.load(DATA / 'calibrator_v2_expected.npz')
    cal = load_calibrator(DATA / f'calibrator_v2_{name}.npz')
    assert type(cal) is cls and cal.max_iter == 20 and cal.base_square_loss_ is None
    out = cal.transform(Embedding.from_points(exp['new_points']))
    # the same numbers up to rounding: the expected arrays were computed on another machine, whose BLAS may sum in
    # another order
    np.testing.assert_allclose(out.theta, exp[name + '_theta'], rtol=0, atol=1e-13)
    np.testing.assert_allclose(out.gamma, exp[name + '_gamma'], rtol=0, atol=1e-13)


# ----------------------------------------------------------------------------- load: inconsistent files
def _v2_arrays():
    with np.load(DATA / 'calibrator_v2_dimfree.npz') as f: return {k: f[k] for k in f.files}


def _edits():
    a = _v2_arrays()
    T, A, m = a['C'].shape
    return {
        'negative R2_': (dict(R2_=np.array(-1.0)), 'R2_'),
        'infinite R2_': (dict(R2_=np.array(np.inf)), 'R2_'),
        'fewer rounds in C': (dict(C=a['C'][:-1]), 'C has shape'),
        'more rounds in eta': (dict(eta=np.r_[a['eta'], 0.1]), 'shape'),
        'empty kernel params': (dict(kernel_params=np.zeros(0)), 'kernel_params'),
        'bad kernel param': (dict(kernel_params=np.array([-1.0, 0.0])), 'kernel'),
        'K not square': (dict(K=a['K'][:, :-1]), 'K has shape'),
        'K of another size': (dict(K=a['K'][:-1, :-1]), 'K has shape'),
        'NaN in Y': (dict(Y=np.where(np.arange(a['Y'].size).reshape(a['Y'].shape) == 3, np.nan, a['Y'])), 'NaN'),
        'NaN in D': (dict(D=a['D'] * np.nan), 'NaN'),
        'other number of actions': (dict(C=a['C'][:, :2], D=a['D'][:, :2], KD=a['KD'][:, :2]), 'actions'),
        'best_round_ inconsistent': (dict(best_round_=np.array(T - 1)), 'best_round_'),
        'bad parameter': (dict(params=np.array(str(a['params']).replace("'n_starts': 1", "'n_starts': 0"))),
                          'n_starts'),
    }


EDITS = _edits()


@pytest.mark.parametrize('case', list(EDITS))
def test_load_refuses_inconsistent_files(case, tmp_path):
    edit, words = EDITS[case]
    fn = tmp_path / 'bad.npz'
    np.savez(fn, **{**_v2_arrays(), **edit})
    with pytest.raises(ValueError, match='^path:') as e: load_calibrator(fn)
    reason = str(e.value).split(repr(str(fn)))[-1]        # what is wrong (the folder's name says the test's)
    assert e.value.arg == 'path' and words in reason, str(e.value)


def test_load_refuses_npy(tmp_path):
    np.save(tmp_path / 'x.npy', np.arange(3.0))
    with pytest.raises(ValueError, match='^path:.*not a deccal calibrator'): load_calibrator(tmp_path / 'x.npy')


def test_fit_sample_weight_scale_invariant_and_checked():
    import deccal
    rng = np.random.default_rng(3)
    mu = rng.uniform(0.2, 0.8, (150, 2)); Y = mu + 0.1 * rng.normal(size=(150, 2)) + [0.1, 0]
    pred = deccal.Embedding.from_points(mu)
    for cls in (deccal.DimFreeDeCal, deccal.ZhaoDeCal):
        kw = dict(n_actions=3, beta=10., R1=1., eps=0.02, max_rounds=3)
        a = cls(deccal.RBF(2.), **kw).fit(pred, Y)
        b = cls(deccal.RBF(2.), **kw).fit(pred, Y, sample_weight=np.full(150, 7.0))
        np.testing.assert_allclose([h['square_loss'] for h in b.history_], [h['square_loss'] for h in a.history_],
                                   rtol=1e-9)
        w = rng.uniform(0, 1, 150)
        c = cls(deccal.RBF(2.), **kw).fit(pred, Y, sample_weight=w)
        assert not np.isclose(c.history_[0]['square_loss'], a.history_[0]['square_loss'])
        for bad in (-w, np.zeros(150), w[:5], np.where(w > 0.5, np.inf, w)):
            with pytest.raises(deccal.DeccalError) as e: cls(deccal.RBF(2.), **kw).fit(pred, Y, sample_weight=bad)
            assert e.value.arg == 'sample_weight'
