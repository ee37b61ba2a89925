"""Hostile input to the entry points the property tests of test_properties.py do not reach: the scikit-learn
estimators (every option, the data, the cost matrices, the weights), the segment families of `Groups.from_features`,
and the command line fed tables as pandas writes them.

The property is the same as there: a call either returns finite results of the right shape or raises a `DeccalError`
whose `.arg` names the argument the user gave and whose message starts with it (or, for an estimator's parameter of
the wrong type, scikit-learn's own InvalidParameterError, which names it as scikit-learn users expect; for X and y,
scikit-learn's own validation of them, as every scikit-learn estimator does); any other exception (a TypeError from
inside NumPy, a Numba traceback, a MemoryError) fails the test. An option whose value would need more memory than
the machine has is refused before anything is allocated: a test that allocates past the machine fails (or is killed)
rather than passes.

The examples are derandomized (the same on every run): 60 per test, 360 in all, about ten seconds.
"""
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings, event, HealthCheck, strategies as st
from hypothesis.extra import numpy as hnp

pytest.importorskip('sklearn')
import deccal                                                   # noqa: E402
from deccal.checks import DeccalError                           # noqa: E402
from sklearn.utils._param_validation import InvalidParameterError   # noqa: E402  (a ValueError subclass)

HOSTILE = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# numbers good and bad, huge ones (an option of 10**9 or 10**30 must be refused, not allocated), and non-numbers
VALUES = st.one_of(st.sampled_from([np.nan, np.inf, -np.inf, 1e300, -1e300, 1e-300, 0.0, -1.0, 0, 1, 2, 3, 0.5,
                                    1.5, -2, 10**6, 10**9, 10**30]),
                   st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 50),
                   st.sampled_from([None, '2', 'x', 'auto', True, False, (), [1, 2], np.float32(0.3), np.int64(2)]))


def sklearn_validation(e:BaseException) -> bool:
    "Whether `e` came out of scikit-learn's input validation (validate_data, check_array, the label checks)."
    import traceback
    return isinstance(e, ValueError) and any('/sklearn/utils/' in fr.filename or fr.filename.endswith('sklearn/base.py')
                                             for fr in traceback.extract_tb(e.__traceback__))


def refused_or_returned(f, *args, names=None, sklearn_data=False, **kw):
    """Call f; None if it raised a DeccalError naming an argument (one of `names` if given), else its result. With
    `sklearn_data`, scikit-learn's own refusals of X and y (a ValueError from its validation) count as refusals."""
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        try: out = f(*args, **kw)
        except DeccalError as e:
            assert e.arg and str(e).startswith(f"{e.arg}:"), f"message does not start with the argument: {e}"
            if names is not None: assert e.arg in names, f"names {e.arg!r}, not one of {names}: {e}"
            event(f"refused: {e.arg}")
            return None
        except InvalidParameterError as e:        # scikit-learn's own check of an estimator's parameter, by name
            assert names is not None and any(f"'{nm}' parameter" in str(e) for nm in names), str(e)
            event('refused by scikit-learn')
            return None
        except ValueError as e:
            if not (sklearn_data and sklearn_validation(e)): raise
            event(f"refused by scikit-learn's validation: {str(e)[:40]}")
            return None
    event('returned')
    return out


@pytest.fixture(scope='module')
def problem():
    "60 rows of 3 classes, a frozen logistic regression, and a 2-class one."
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.frozen import FrozenEstimator
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] + rng.normal(size=60) > 0).astype(int) + (X[:, 1] > 0.8)
    yr = X[:, 0] + rng.normal(size=60)
    return dict(X=X, y=y, yr=yr, clf=FrozenEstimator(LogisticRegression().fit(X, y)),
                reg=FrozenEstimator(Ridge().fit(X, yr)))


CLF_OPTIONS = ['n_actions', 'beta', 'R1', 'eps', 'max_rounds', 'n_folds', 'learning_rate', 'min_gain_se',
               'validation_fraction', 'n_iter_no_change', 'max_segments', 'random_state', 'cv', 'method', 'segments',
               'first_stage', 'early_stopping', 'ensemble', 'verbose']


@HOSTILE
@given(option=st.sampled_from(CLF_OPTIONS), value=VALUES)
def test_classifier_options(problem, option, value):
    "Every option of DecisionCalibratedClassifier at a hostile value: refused naming it, or a valid fit."
    kw = dict(max_rounds=2, segments=None)
    kw[option] = value
    est = deccal.DecisionCalibratedClassifier(problem['clf'], **kw)
    fitted = refused_or_returned(est.fit, problem['X'], problem['y'], names={option})
    if fitted is not None:
        P = fitted.predict_proba(problem['X'][:7])
        assert P.shape == (7, 3) and np.all(np.isfinite(P)) and np.allclose(P.sum(1), 1)


@HOSTILE
@given(option=st.sampled_from(['n_actions', 'beta', 'R1', 'eps', 'max_rounds', 'n_folds', 'learning_rate',
                               'n_samples', 'kernel', 'segments', 'method', 'max_segments']), value=VALUES)
def test_regressor_options(problem, option, value):
    "Every numeric option of DecisionCalibratedRegressor at a hostile value: refused naming it, or a valid fit."
    kw = dict(max_rounds=2, segments=None, n_samples=16)
    kw[option] = value
    est = deccal.DecisionCalibratedRegressor(problem['reg'], **kw)
    fitted = refused_or_returned(est.fit, problem['X'], problem['yr'], names={option})
    if fitted is not None:
        m = fitted.predict(problem['X'][:5])
        assert m.shape == (5,) and np.all(np.isfinite(m))


SPECIAL = [np.nan, np.inf, -np.inf, 1e300, -1e300, 1e-300, 0.0, -1.0]


@HOSTILE
@given(which=st.sampled_from(['X', 'y', 'sample_weight']), data=st.data())
def test_classifier_data(problem, which, data):
    "X, y and sample_weight with NaN, infinities, extreme values, wrong shapes, one class, unseen labels, strings."
    X, y, w = problem['X'].copy(), problem['y'].copy(), None
    n = len(y)
    if which == 'X':
        X = data.draw(st.one_of(
            hnp.arrays(np.float64, st.sampled_from([(n, 3), (n, 2), (n - 1, 3), (n,), (0, 3)]),
                       elements=st.one_of(st.sampled_from(SPECIAL), st.floats(-3, 3))),
            st.just(np.full((n, 3), 'a', dtype=object))))
    elif which == 'y':
        y = data.draw(st.one_of(
            st.just(np.zeros(n, int)), st.just(np.full(n, 5)), st.just(y.astype(float) + 0.5),
            st.just(np.where(np.arange(n) == 3, np.nan, y.astype(float))), st.just(y[:-1]),
            st.just(np.array(['a', 'b', 'c'])[y]), st.just(y.reshape(-1, 1)), st.just(np.r_[y[:-1], 7])))
    else:
        w = data.draw(st.one_of(
            hnp.arrays(np.float64, st.sampled_from([(n,), (n - 1,), (n, 1)]),
                       elements=st.one_of(st.sampled_from(SPECIAL), st.floats(0, 3))),
            st.just(np.zeros(n)), st.just(np.full(n, 1e-300))))
    est = deccal.DecisionCalibratedClassifier(problem['clf'], max_rounds=2, segments=None)
    fitted = refused_or_returned(est.fit, X, y, sample_weight=w, names={'X', 'y', 'sample_weight', 'estimator'},
                                 sklearn_data=True)
    if fitted is not None:
        P = fitted.predict_proba(problem['X'][:5])
        assert np.all(np.isfinite(P)) and np.allclose(P.sum(1), 1)


@HOSTILE
@given(costs=st.one_of(
    hnp.arrays(np.float64, st.sampled_from([(3, 3), (4, 3), (2, 3, 3), (3, 2), (3,), (0, 3), (1, 3), (3, 3, 3, 1)]),
               elements=st.one_of(st.sampled_from(SPECIAL + [1e150, 1e-150]), st.floats(-2, 2))),
    st.just(np.zeros((3, 3))), st.just(np.full((3, 3), 'x', dtype=object)), st.just([[0, 1, 2]] * 3)))
def test_classifier_costs(problem, costs):
    "Cost matrices of every shape and scale: refused naming costs, or a fit whose actions are the matrix's rows."
    est = deccal.DecisionCalibratedClassifier(problem['clf'], costs=costs, max_rounds=2, segments=None)
    fitted = refused_or_returned(est.fit, problem['X'], problem['y'], names={'costs'})
    if fitted is not None:
        M = np.asarray(costs, float)
        a = fitted.predict_action(problem['X'][:5], M if M.ndim == 2 else M[0])
        assert a.shape == (5,) and a.min() >= 0 and a.max() < (M.shape[-2])


@HOSTILE
@given(option=st.sampled_from(['n_bins', 'depth', 'min_share', 'max_groups', 'columns', 'categorical']),
       value=VALUES)
def test_groups_from_features_options(option, value):
    "Groups.from_features with hostile options, 10**9 bins and depths among them: refused, or groups in seconds."
    rng = np.random.default_rng(1)
    X = {'a': rng.normal(size=300), 'b': rng.integers(0, 4, 300).astype(float), 'c': np.array(list('xyz'))[
        rng.integers(0, 3, 300)]}
    g = refused_or_returned(deccal.Groups.from_features, X, names={option}, **{option: value})
    if g is not None:
        M = g.membership(X)
        assert M.shape[0] == 300 and M[:, 0].all() and M.shape[1] == len(g.names)


@HOSTILE
@given(header=st.sampled_from(['none', 'numeric', 'names']), index=st.booleans(),
       values=hnp.arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 3)),
                         elements=st.one_of(st.floats(-5, 5), st.sampled_from([np.nan, np.inf, 1e300]))))
def test_cli_reads_tables_as_pandas_writes_them(header, index, values, tmp_path_factory):
    """A table written by pandas, with or without its header and index: read as the numbers it holds, or refused.
    (A one-row table written with its index and no header, `0,x`, cannot be told from two columns of data: the
    command-line notebook says it is read as data; it is left out here.)"""
    assume(not (header == 'none' and index and len(values) == 1))
    pd = pytest.importorskip('pandas')
    from deccal.cli import read_array
    path = tmp_path_factory.mktemp('csv') / 't.csv'
    df = pd.DataFrame(values, columns=[f'c{j}' for j in range(values.shape[1])] if header == 'names' else None)
    df.to_csv(path, index=index, header=header != 'none')
    A = refused_or_returned(read_array, str(path), '--pred', names={'--pred'})
    if A is not None:
        np.testing.assert_array_equal(np.asarray(A, float).reshape(values.shape), values)


def test_max_rounds_planned_past_the_work_budget(problem):
    "A million rounds without early stopping, at a tolerance that would not stop them: refused before the rounds."
    import time
    from deccal.checks import DeccalError
    est = deccal.DecisionCalibratedClassifier(problem['clf'], max_rounds=10**6, early_stopping=False, eps=1e-6,
                                              segments=None)
    t0 = time.perf_counter()
    with pytest.raises(DeccalError, match='max_rounds'): est.fit(problem['X'], problem['y'])
    assert time.perf_counter() - t0 < 60                  # refused up front, not after the rounds


@pytest.mark.parametrize('option,value,rows', [('n_starts', 10**6, 60), ('n_actions', 10**7, 60),
                                               ('max_rounds', 10**6, 60), ('exact_max', 10**6, 6000)])
def test_calibrator_plans_past_the_machine_refused(option, value, rows):
    "DimFreeDeCal asked for a million starts, ten million actions, a million rounds or an exact basis of 12,000 atoms."
    import time
    from deccal.checks import DeccalError
    rng = np.random.default_rng(0)
    P, y = rng.dirichlet(np.ones(3), rows), rng.integers(0, 3, rows)
    kw = dict(n_actions=3, beta=5.0, R1=1.0, eps=1e-6, early_stopping=False, max_rounds=2, search_max=10**5)
    kw[option] = value
    t0 = time.perf_counter()
    with pytest.raises(DeccalError, match=f'^{option}:'):
        deccal.DimFreeDeCal(deccal.Linear(), **kw).fit(deccal.Embedding.from_probs(P), np.eye(3)[y])
    assert time.perf_counter() - t0 < 30                  # refused before the work
