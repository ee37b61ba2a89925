"""The classifier's fit does not depend on the form the same numbers come in.

A frozen naive Bayes on a 5-class problem, 1,500 calibration rows, the defaults (rounds are kept there, so every
discrete choice of the fit is exercised). The same rows given in Fortran order, as a DataFrame, permuted, multiplied
by 1 + 1e-15, or with equal sample weights give the same rounds kept and the same predictions, bit for bit: the
base probabilities are made canonical (`canonical_probabilities`), the rows are fitted in one order
(`canonical_order`), the layout is made C-contiguous and equal weights are the unweighted fit.
"""
import warnings

import numpy as np
import pytest

pytest.importorskip('sklearn')
pd = pytest.importorskip('pandas')
from sklearn.datasets import make_classification     # noqa: E402
from sklearn.frozen import FrozenEstimator            # noqa: E402
from sklearn.naive_bayes import GaussianNB            # noqa: E402

from deccal import DecisionCalibratedClassifier        # noqa: E402


def fit(model, X, y, Xt, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        est = DecisionCalibratedClassifier(model).fit(X, y, **kw)
    return est.predict_proba(pd.DataFrame(Xt) if hasattr(X, 'iloc') else Xt), est.calibrator_.best_round_


@pytest.fixture(scope='module')
def problem():
    "The model, the calibration rows, the test rows, and the fit on the rows as they are: (probabilities, kept)."
    X, y = make_classification(6000, 20, n_informative=8, n_classes=5, random_state=0)
    model = FrozenEstimator(GaussianNB().fit(X[:2000], y[:2000]))
    return model, X[2000:3500], y[2000:3500], X[3500:], fit(model, X[2000:3500], y[2000:3500], X[3500:])


@pytest.mark.parametrize('variant', ['F-order', 'DataFrame', 'permuted', '1e-15', 'equal weights'])
def test_same_numbers_same_fit(problem, variant):
    model, X, y, Xt, (P0, kept0) = problem
    assert kept0 > 0                                       # rounds are kept: the round count is a real choice here
    perm = np.random.default_rng(1).permutation(len(y))
    A, b, kw = {'F-order': (np.asfortranarray(X), y, {}), 'DataFrame': (pd.DataFrame(X), y, {}),
                'permuted': (X[perm], y[perm], {}), '1e-15': (X * (1 + 1e-15), y, {}),
                'equal weights': (X, y, dict(sample_weight=np.full(len(y), 3.0)))}[variant]
    P, kept = fit(model, A, b, Xt, **kw)
    assert kept == kept0
    np.testing.assert_array_equal(P, P0)
