"""Property-based tests of every public entry point, with hypothesis.

Each entry point is called with random inputs (shapes from empty to a few rows, dtypes from bool to
complex, NaN, infinities, the largest and smallest floats) in one argument while the others are valid.
The property: it either returns finite results of the right shape, or raises the documented error, a
`DeccalError` whose `.arg` names an argument of the call and whose message starts with that name. A
`TypeError`, `IndexError`, an error from inside NumPy or SciPy, or a NaN in a result fails the test.
Writing entry points must leave either the whole file or nothing, and no temporary file.

The examples are derandomized (the same on every run) and few per entry point: the whole file runs in
well under a minute.
"""
import io, warnings
from contextlib import redirect_stdout, redirect_stderr

import numpy as np
from hypothesis import given, settings, assume, event, HealthCheck, strategies as st
from hypothesis.extra import numpy as hnp

import deccal
from deccal.checks import DeccalError
from deccal.kernels import KERNELS, make_kernel
from deccal import lower_bound as lb

FAST = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
SLOW = settings(FAST, max_examples=100)

# --- strategies ---------------------------------------------------------------------------------
DTYPES = st.sampled_from([np.float64, np.float32, np.int64, np.complex128, np.bool_])
SPECIAL = [np.nan, np.inf, -np.inf, 1e300, -1e300, 1e-300, 0.0, -1.0]

def arrays(min_dims=0, max_dims=3, max_side=5, dtype=None):
    "Arrays of random dtype and shape; the elements include NaN, infinities and the extreme floats."
    return (DTYPES if dtype is None else st.just(dtype)).flatmap(
        lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0,
                                                   max_side=max_side)))

def good(shape, lo=0.05, hi=0.95):
    "Finite, moderate float arrays of a given shape (values in [lo, hi], inside every kernel's domain)."
    return hnp.arrays(np.float64, shape, elements=st.floats(lo, hi))

# a value for a scalar option: numbers good and bad, and things that are not numbers
SCALARS = st.one_of(st.sampled_from(SPECIAL + [0, 1, 2, 3, 0.5, 1.5, -2, 10**30]),
                    st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 50),
                    st.sampled_from([None, '2', 'x', True, False, (), [1, 2], np.float32(0.3), np.int64(2)]))

# --- the property -------------------------------------------------------------------------------
def documented(f, *args, **kw):
    """Call f; return its result, or None if it raised a DeccalError naming an argument.
    Any other exception propagates and fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter('error', np.exceptions.ComplexWarning if hasattr(np, 'exceptions') else np.ComplexWarning)
        try: out = f(*args, **kw)
        except DeccalError as e:
            assert e.arg and str(e).startswith(f"{e.arg}:"), f"message does not start with the argument: {e}"
            event(f"{getattr(f, '__name__', 'call')}: refused, {e.arg}")   # pytest --hypothesis-show-statistics
            return None
    event(f"{getattr(f, '__name__', 'call')}: returned")
    return out

def finite(a, shape=None):
    a = np.asarray(a, dtype=float)
    assert np.all(np.isfinite(a)), f"non-finite result: {a}"
    if shape is not None: assert a.shape == shape, f"shape {a.shape}, expected {shape}"
    return a

def emb_from(Y):
    "Point forecasts, or None if Y is not a valid (n, d) sample."
    return documented(deccal.Embedding.from_points, Y)

# --- kernels ------------------------------------------------------------------------------------
@FAST
@given(name=st.sampled_from(sorted(KERNELS)), A=arrays(), B=arrays())
def test_kernel_gram_paired_diag(name, A, B):
    k = make_kernel(name)
    G = documented(k.gram, A, B)
    if G is not None: finite(G, (len(A), len(B)))
    D = documented(k.diag, A)
    if D is not None: finite(D); assert D.ndim == 1 and (D >= 0).all()
    P = documented(k.paired, A, A)
    if P is not None: finite(P, D.shape if D is not None else None)

@FAST
@given(name=st.sampled_from(sorted(KERNELS)), param=st.sampled_from(['gamma', 'degree', 'c']), value=SCALARS)
def test_make_kernel(name, param, value):
    k = documented(make_kernel, name, **{param: value})
    if k is not None:
        assert isinstance(k, deccal.Kernel) and param in k.get_params()
        assert make_kernel(*deccal.kernels.kernel_spec(k)) == k

# --- losses -------------------------------------------------------------------------------------
@FAST
@given(R=arrays(), Y=arrays())
def test_linear_loss(R, Y):
    loss = documented(deccal.linear_loss, R)
    if loss is None: return
    v = documented(loss.value, Y)
    if v is not None: finite(v); assert v.shape[1] == loss.n_actions
    nrm = documented(loss.norms)
    if nrm is not None: finite(nrm, (loss.n_actions,))

@FAST
@given(alpha=arrays(max_side=4), Y=arrays(max_side=4))
def test_cobb_douglas_loss(alpha, Y):
    loss = documented(deccal.cobb_douglas_loss, alpha)
    if loss is None: return
    v = documented(loss.value, Y)
    if v is not None: finite(v); assert v.shape[1] == loss.n_actions

@FAST
@given(k1=arrays(max_dims=1), k2=arrays(max_dims=1), c=arrays(max_dims=1), y=arrays(max_dims=2))
def test_piecewise_linear_loss(k1, k2, c, y):
    loss = documented(deccal.piecewise_linear_loss, k1, k2, c)
    if loss is None: return
    v = documented(loss.value, y)
    if v is not None: finite(v); assert v.shape[1] == loss.n_actions

@SLOW
@given(points=arrays(max_side=6), ridge=SCALARS, max_norm=st.one_of(st.none(), SCALARS))
def test_fit_loss(points, ridge, max_norm):
    fn = lambda Y: np.stack([Y.sum(1), (Y ** 2).sum(1)], 1)
    loss = documented(deccal.fit_loss, fn, deccal.RBF(1.0), points, ridge=ridge, max_norm=max_norm)
    if loss is not None: assert np.isfinite(loss.sup_error) and np.isfinite(loss.norm_bound)

# --- predictions ------------------------------------------------------------------------------
@FAST
@given(Y=arrays())
def test_from_points(Y):
    p = emb_from(Y)
    if p is not None:                     # points beyond the kernel's arithmetic are refused by name, or finite
        k = deccal.RBF(1.0)
        sq, ev = documented(p.sq_norms, k), documented(p.evaluate, k, p.Z[:, 0])
        if sq is not None: finite(sq, (p.n,))
        if ev is not None: finite(ev, (p.n, p.n))

@FAST
@given(S=arrays(max_dims=4, max_side=4), weights=st.one_of(st.none(), arrays(max_side=4)))
def test_from_samples(S, weights):
    p = documented(deccal.Embedding.from_samples, S, weights)
    if p is None: return
    assert p.Z.shape[:2] == p.W.shape
    sq = documented(p.sq_norms, deccal.RBF(1.0))      # refused by name beyond the kernel's arithmetic, or finite
    if sq is not None: finite(sq, (p.n,))

@FAST
@given(P=arrays(), atol=st.one_of(st.just(1e-6), SCALARS))
def test_from_probs(P, atol):
    p = documented(deccal.Embedding.from_probs, P, atol=atol)
    if p is not None:
        th = finite(p.theta)
        assert (th >= 0).all() and np.allclose(th.sum(1), 1, atol=1e-12), "cleaned probabilities are probabilities"

@FAST
@given(n=st.integers(1, 4), P=st.data(), dust=st.floats(-1e-9, 1e-9))
def test_from_probs_accepts_rounding_dust(n, P, dust):
    q = P.draw(good((n, 3), 0.0, 1.0))
    q[:, -1] = 1 - q[:, :-1].sum(1) / max(q[:, :-1].sum(1).max(), 1) + dust   # a tail probability from 1 - sum
    q[:, :-1] /= max(q[:, :-1].sum(1).max(), 1)
    p = deccal.Embedding.from_probs(q)
    assert (p.theta >= 0).all() and np.allclose(p.theta.sum(1), 1, atol=1e-12)

@FAST
@given(F=arrays(), beta=SCALARS)
def test_decision_rules(F, beta):
    q = documented(deccal.quantal_response, F, beta)
    if q is not None: finite(q); assert np.allclose(q.sum(1), 1) and (q >= 0).all()
    b = documented(deccal.best_response, F)
    if b is not None: finite(b); assert (b.sum(1) == 1).all()

# --- decision calibration of a pair ------------------------------------------------------------
LOSS = deccal.linear_loss(np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]))

@FAST
@given(Yp=arrays(), Y=arrays(), beta=st.one_of(st.none(), SCALARS))
def test_gap_and_decce(Yp, Y, beta):
    p = emb_from(Yp)
    assume(p is not None)
    g = documented(deccal.gap_function, p, Y, LOSS, LOSS, beta)
    if g is not None: finite(g, (p.n,))
    e = documented(deccal.decision_calibration_error, p, Y, LOSS, LOSS, beta)
    if e is not None: assert np.isfinite(e) and e >= 0
    r = documented(deccal.no_type_regret, p, Y, LOSS, LOSS, beta)
    if r is not None: assert np.isfinite(r)

@SLOW
@given(n=st.integers(1, 6), Y=st.data(), beta=SCALARS, bins=SCALARS)
def test_reliability_bins(n, Y, beta, bins):
    Yp, Yo = Y.draw(good((n, 2))), Y.draw(good((n, 2)))
    rb = documented(deccal.reliability_bins, deccal.Embedding.from_points(Yp), Yo, LOSS, LOSS, beta, bins)
    if rb is not None: assert rb.weight.shape[0] == 3 and np.all(np.isfinite(rb.weight))

# --- audit -------------------------------------------------------------------------------------
OPTIONS = st.sampled_from(['n_actions', 'beta', 'R1', 'seed', 'n_starts', 'max_iter', 'exact_max', 'trace_tol',
                           'max_rank', 'delta', 'R2'])

@SLOW
@given(Yp=arrays(max_side=6), Y=arrays(max_side=6))
def test_audit_data(Yp, Y):
    p = emb_from(Yp)
    assume(p is not None)
    res = documented(deccal.audit, p, Y, deccal.RBF(1.0), n_actions=2, n_starts=1, max_iter=20)
    if res is not None: assert np.isfinite(res.value) and res.value >= 0 and res.G_norms.shape == (2,)

@SLOW
@given(n=st.integers(1, 8), data=st.data(), option=OPTIONS, value=SCALARS)
def test_audit_options(n, data, option, value):
    p, Y = deccal.Embedding.from_points(data.draw(good((n, 2)))), data.draw(good((n, 2)))
    kw = dict(n_actions=2, n_starts=1, max_iter=20)
    kw[option] = value
    res = documented(deccal.audit, p, Y, deccal.RBF(1.0), **kw)
    if res is not None: assert np.isfinite(res.value) and res.value >= 0
    cert = documented(deccal.certify, p, Y, deccal.RBF(1.0), **kw)
    if cert is not None: assert np.isfinite(cert.holdout_value) and np.isfinite(cert.rule_bound)

@SLOW
@given(n=st.integers(1, 8), data=st.data(), option=st.sampled_from(['n_actions', 'R1', 'seed', 'n_starts', 'max_iter']),
       value=SCALARS)
def test_audit_best_response(n, data, option, value):
    p, Y = deccal.Embedding.from_points(data.draw(good((n, 2)))), data.draw(good((n, 2)))
    res = documented(deccal.audit_best_response, p, Y, deccal.Linear(),
                     **{'n_starts': 1, 'betas': (1, 10), 'max_iter': 10, option: value})
    if res is not None: assert np.isfinite(res.value)

# --- calibrators: fit, transform, save, load ----------------------------------------------------
CAL_OPTIONS = st.sampled_from(['n_actions', 'beta', 'R1', 'R2', 'eps', 'step', 'max_rounds', 'sample', 'seed',
                               'n_starts', 'max_iter', 'exact_max', 'trace_tol', 'max_rank', 'early_stopping',
                               'validation_fraction',
                               'n_iter_no_change', 'regularizer'])

@SLOW
@given(cls=st.sampled_from([deccal.DimFreeDeCal, deccal.ZhaoDeCal]), n=st.integers(1, 12), data=st.data(),
       option=CAL_OPTIONS, value=st.one_of(SCALARS, st.sampled_from(['theory', 'line-search', 'reuse', 'split'])))
def test_calibrator_options(cls, n, data, option, value, tmp_path_factory):
    if option == 'regularizer' and cls is deccal.DimFreeDeCal: option = 'eps'
    if option == 'step' and cls is deccal.ZhaoDeCal:
        option = 'regularizer'   # Zhao has no step: Python's TypeError, by design
    p, Y = deccal.Embedding.from_points(data.draw(good((n, 2)))), data.draw(good((n, 2)))
    kw = dict(n_actions=2, max_rounds=2, n_starts=1, max_iter=10)
    kw[option] = value
    if option == 'max_rounds' and isinstance(value, (int, float)) and not isinstance(value, bool) and value > 3:
        kw[option] = 3
    cal = documented(lambda: cls(deccal.RBF(1.0), **kw).fit(p, Y))
    if cal is None: return
    out = cal.transform(deccal.Embedding.from_points(data.draw(good((3, 2)))))
    finite(out.sq_norms(deccal.RBF(1.0)), (3,))
    d = tmp_path_factory.mktemp('save')
    cal.save(d / 'cal.npz')
    back = deccal.load_calibrator(d / 'cal.npz')
    np.testing.assert_allclose(back.transform(p).theta, cal.transform(p).theta, rtol=1e-12, atol=1e-14)
    assert sorted(x.name for x in d.iterdir()) == ['cal.npz']

@SLOW
@given(Yp=arrays(max_side=6), Y=arrays(max_side=6))
def test_calibrator_data(Yp, Y):
    p = emb_from(Yp)
    # refused with an error naming the argument: a documented outcome (no assume(): too many are refused)
    if p is None: return
    cal = documented(lambda: deccal.DimFreeDeCal(deccal.RBF(1.0), max_rounds=2, n_starts=1, max_iter=10,
                                                 early_stopping=False).fit(p, Y))
    if cal is not None: finite(cal.transform(p).gamma, (p.n,))

@FAST
@given(blob=st.binary(max_size=300), suffix=st.sampled_from(['.npz', '.npy', '', '.txt']))
def test_load_calibrator_garbage(blob, suffix, tmp_path_factory):
    f = tmp_path_factory.mktemp('load') / f'x{suffix}'
    f.write_bytes(blob)
    assert documented(deccal.load_calibrator, f) is None

@SLOW
@given(key=st.sampled_from(['R2_', 'C', 'D', 'KD', 'eta', 'K', 'Y', 'kernel_params', 'gamma', 'best_round_']),
       value=arrays(max_side=4))
def test_load_calibrator_tampered(key, value, tmp_path_factory):
    "A saved calibrator with one array replaced: refused with a DeccalError, or it still calibrates to finite values."
    rng = np.random.default_rng(0)
    Yp, Y = rng.uniform(0.1, 0.9, (20, 2)), rng.uniform(0.1, 0.9, (20, 2))
    p = deccal.Embedding.from_points(Yp)
    cal = deccal.DimFreeDeCal(deccal.RBF(1.0), max_rounds=2, n_starts=1, max_iter=10, early_stopping=False).fit(p, Y)
    d = tmp_path_factory.mktemp('tamper')
    cal.save(d / 'a.npz')
    with np.load(d / 'a.npz', allow_pickle=False) as f: arrs = {k: f[k] for k in f.files}
    if value.dtype.kind == 'c': value = value.real
    arrs[key] = value
    with open(d / 'b.npz', 'wb') as fh: np.savez(fh, **arrs)
    back = documented(deccal.load_calibrator, d / 'b.npz')
    if back is not None: finite(back.transform(p).theta)

# --- lower bound --------------------------------------------------------------------------------
@SLOW
@given(P=arrays(max_side=6), Y=arrays(max_side=6), tol=st.one_of(st.just(1e-9), SCALARS))
def test_binary_decce(P, Y, tol):
    r = documented(lb.binary_decce, P, Y, tol=tol)
    if r is not None: assert np.isfinite(r.value) and r.value >= 0

@FAST
@given(f=st.sampled_from(['sample_D1', 'sample_D2']), n=SCALARS, d=SCALARS, eps=SCALARS,
       seed=st.one_of(st.just(0), SCALARS))
def test_lower_bound_samplers(f, n, d, eps, seed):
    out = documented(getattr(lb, f), n, d, eps, seed=seed)
    if out is not None:
        P, Y = out
        finite(P); finite(Y); assert P.shape == Y.shape

# --- the command line -----------------------------------------------------------------------------
from deccal import cli

@FAST
@given(text=st.text(alphabet='0123456789.,-eE nainf\n\ufeffxyz', max_size=80))
def test_read_csv(text, tmp_path_factory):
    f = tmp_path_factory.mktemp('csv') / 'a.csv'
    f.write_text(text, encoding='utf-8')
    a = documented(cli.read_array, str(f), '--y')
    if a is not None: finite(a); assert a.size > 0

@SLOW
@given(option=st.sampled_from(['--actions', '--beta', '--R1', '--seed', '--eps', '--max-rounds', '--gamma', '--R2',
                               '--validation-fraction', '--n-iter-no-change', '--kernel', '--degree', '--c']),
       value=st.sampled_from(['0', '-1', '1e300', 'nan', 'inf', '2', '0.5', 'x', '', '1e-300', 'poly', 'min']))
def test_cli_calibrate_options(option, value, tmp_path_factory):
    d = tmp_path_factory.mktemp('cli')
    rng = np.random.default_rng(1)
    np.savetxt(d / 'p.csv', rng.uniform(0.1, 0.9, (30, 2)), delimiter=',')
    np.savetxt(d / 'y.csv', rng.uniform(0.1, 0.9, (30, 2)), delimiter=',')
    argv = ['calibrate', '--pred', str(d / 'p.csv'), '--y', str(d / 'y.csv'), '--max-rounds', '2', '--quiet',
            '--output', str(d / 'c.npz'), option, value]
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err): rc = cli.main(argv)
    assert rc in (0, 2), (rc, err.getvalue())
    if rc == 2: assert err.getvalue().startswith('deccal: error:') and len(err.getvalue().strip().splitlines()) == 1
    files = sorted(x.name for x in d.iterdir())
    assert files == sorted(['p.csv', 'y.csv'] + (['c.npz'] if rc == 0 else [])), files
