"""The same data give the same fit, whatever the caller's thread settings and the input's memory layout.

deccal runs its numerical work with one BLAS thread (`deccal.runtime.one_blas_thread` on the public entry points),
and converts every array input to C-contiguous float64 once, when it is checked. So a fit and its predictions
must agree to 1e-12 (in practice bit for bit) when the caller sets 1, 2 or 4 BLAS threads with threadpoolctl
around the calls, when Numba runs 1 or 2 threads, and when the same numbers come as a C array, a Fortran array, a
DataFrame, a strided slice or a float32 array holding exactly the same values.

Without the package's own BLAS limit (the code before `one_blas_thread`), 2 and 4 BLAS threads moved the
DimFreeDeCal fit below by about 1e-3 and the classifier's single-split predictions by 0.07 to 0.2: the auditor's
search amplifies the last-bit differences of work split over threads into other rules.

The data are small: a DimFreeDeCal fit on 300 points of R^2 (RBF kernel, 8 samples per prediction) and a
DecisionCalibratedClassifier on 600 rows of scikit-learn's digits (10 classes, LogisticRegression), on its default
path and on a single validation split (n_folds=None, first_stage=None, learning_rate=1), where the search
is most sensitive. In the classifier's layout tests the base model first makes its input a C-ordered float64 array
(see `layout_free_base`): the layout of what deccal hands to the base model is the base model's business.

No environment variable is set here: the tests are about the settings the caller leaves.
"""
import numba
import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_limits
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from deccal import DimFreeDeCal, Embedding, RBF
from deccal.estimators import DecisionCalibratedClassifier

TOL = 1e-12


def assert_same(a, b):
    "Elementwise agreement to TOL (absolute; the values compared are probabilities and weights of order 1)."
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape, (a.shape, b.shape)
    err = np.abs(a - b).max(initial=0.0)
    assert err <= TOL, f"largest difference {err:.3g} > {TOL:g}"


class numba_threads:
    "Run a block with Numba's thread count set to k, restored after."
    def __init__(self, k): self.k = k
    def __enter__(self): self.old = numba.get_num_threads(); numba.set_num_threads(self.k)
    def __exit__(self, *exc): numba.set_num_threads(self.old)


def needs_numba_threads(k):
    return pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < k, reason=f"Numba has fewer than {k} threads here")


# ----------------------------------------------------------------------------- DimFreeDeCal
def samples_data(n=300, B=8, d=2, seed=0):
    "Miscalibrated sample predictions: samples around 0.6 x, outcomes x plus noise; values float32 can hold."
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, d))
    S = 0.6 * x[:, None, :] + 0.2 * rng.normal(size=(n, B, d))
    Y = x + 0.3 * rng.normal(size=(n, d))
    f32 = lambda a: a.astype(np.float32).astype(np.float64)
    return f32(S[:200]), f32(Y[:200]), f32(S[200:])


def dimfree_run(S, Y, S_new):
    "Fit on (S, Y), return the audit values of the rounds and the calibrated predictions on S_new, flattened."
    cal = DimFreeDeCal(RBF(1.0), n_actions=3, eps=0.05, max_rounds=8, early_stopping=False)
    cal.fit(Embedding.from_samples(S), Y)
    out = cal.transform(Embedding.from_samples(S_new))
    values = [h['audit_value'] for h in cal.history_ if h['audit_value'] is not None]
    assert len(values) >= 3, values            # rounds were run: the comparison is about them
    return np.concatenate([values, out.W.ravel(), out.theta.ravel()])


@pytest.fixture(scope='module')
def dimfree_ref():
    S, Y, S_new = samples_data()
    with threadpool_limits(1, 'blas'): return dimfree_run(S, Y, S_new)


@pytest.mark.parametrize('blas', [2, 4])
def test_dimfree_blas_threads(dimfree_ref, blas):
    "The caller's BLAS threads (threadpoolctl around fit and transform) do not change the fit."
    S, Y, S_new = samples_data()
    with threadpool_limits(blas, 'blas'): got = dimfree_run(S, Y, S_new)
    assert_same(got, dimfree_ref)


@needs_numba_threads(2)
def test_dimfree_numba_threads(dimfree_ref):
    "Numba's parallel kernels write disjoint tiles: 1 and 2 Numba threads give the same fit."
    S, Y, S_new = samples_data()
    for k in (1, 2):
        with numba_threads(k), threadpool_limits(1, 'blas'): assert_same(dimfree_run(S, Y, S_new), dimfree_ref)


def _strided(a):
    "The same values as a non-contiguous view (every other entry of the last axis of a wider array)."
    wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],)); wide[..., ::2] = a
    return wide[..., ::2]


LAYOUTS = {'fortran': np.asfortranarray, 'strided': _strided, 'float32': lambda a: a.astype(np.float32)}


@pytest.mark.parametrize('layout', [*LAYOUTS, 'dataframe'])
def test_dimfree_layouts(dimfree_ref, layout):
    "Samples and outcomes in another layout (outcomes as a DataFrame) give the same fit."
    S, Y, S_new = samples_data()
    if layout == 'dataframe': args = S, pd.DataFrame(Y, columns=['a', 'b']), S_new
    else:
        f = LAYOUTS[layout]
        args = f(S), f(Y), f(S_new)
        assert not args[1].flags.c_contiguous or args[1].dtype != np.float64   # really another layout
    with threadpool_limits(1, 'blas'): assert_same(dimfree_run(*args), dimfree_ref)


# ----------------------------------------------------------------------------- DecisionCalibratedClassifier
PATHS = {'defaults': {},   # cross-fitted rounds, first stage 'auto'
         'single split': dict(n_folds=None, first_stage=None, learning_rate=1.0)}


def digits(n=600, n_new=300):
    "Digits scaled to [0, 1] (values float32 holds exactly): the first n rows to fit on, the next n_new to predict."
    X, y = load_digits(return_X_y=True)
    X = X / 16
    return X[:n], y[:n], X[n:n + n_new]


def classifier_run(X, y, X_new, path, estimator=None):
    "Fit the classifier (LogisticRegression base) and return predict_proba on X_new."
    est = LogisticRegression() if estimator is None else estimator
    m = DecisionCalibratedClassifier(est, max_rounds=15, random_state=0, **PATHS[path]).fit(X, y)
    return m.predict_proba(X_new)


@pytest.fixture(scope='module')
def classifier_ref():
    X, y, X_new = digits()
    with threadpool_limits(1, 'blas'): return {p: classifier_run(X, y, X_new, p) for p in PATHS}


@pytest.mark.parametrize('path', PATHS)
@pytest.mark.parametrize('blas', [2, 4])
def test_classifier_blas_threads(classifier_ref, blas, path):
    "The caller's BLAS threads around fit and predict_proba do not change the probabilities."
    X, y, X_new = digits()
    with threadpool_limits(blas, 'blas'): got = classifier_run(X, y, X_new, path)
    assert_same(got, classifier_ref[path])


@needs_numba_threads(2)
@pytest.mark.parametrize('path', PATHS)
def test_classifier_numba_threads(classifier_ref, path):
    X, y, X_new = digits()
    for k in (1, 2):
        with numba_threads(k), threadpool_limits(1, 'blas'):
            assert_same(classifier_run(X, y, X_new, path), classifier_ref[path])


def as_c_float64(X):
    "What the layout tests' base model does first: the features as one C-ordered float64 array."
    return np.ascontiguousarray(X, dtype=np.float64)


def layout_free_base():
    """LogisticRegression behind a step that hands it a C-ordered float64 array whatever the layout.

    deccal passes the features to the base model as they are given (a pipeline may need its DataFrame or sparse
    matrix), so the base model's own arithmetic may depend on the layout: LogisticRegression's predict_proba on a
    DataFrame (whose values NumPy sees in Fortran order) differs from the C array's in the last bit (about 7e-16),
    which the calibrator's search can amplify, and on float32 features it fits in float32, another model. With
    this base model the layouts reach deccal's own code unchanged, so any difference below is deccal's."""
    return make_pipeline(FunctionTransformer(as_c_float64), LogisticRegression())


@pytest.fixture(scope='module')
def layout_ref():
    X, y, X_new = digits()
    with threadpool_limits(1, 'blas'): return {p: classifier_run(X, y, X_new, p, layout_free_base()) for p in PATHS}


@pytest.mark.parametrize('path', PATHS)
@pytest.mark.parametrize('layout', [*LAYOUTS, 'dataframe'])
def test_classifier_layouts(layout_ref, layout, path):
    "Features as a Fortran array, a strided view, float32 or a DataFrame (fit and predict alike): same probabilities."
    X, y, X_new = digits()
    cols = [f'px{i}' for i in range(X.shape[1])]
    f = (lambda a: pd.DataFrame(a, columns=cols)) if layout == 'dataframe' else LAYOUTS[layout]
    with threadpool_limits(1, 'blas'):
        got = classifier_run(f(X), y, f(X_new), path, layout_free_base())
    assert_same(got, layout_ref[path])
