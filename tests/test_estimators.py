"""deccal.estimators: scikit-learn's estimator checks, conventions, and checks against independent computations."""
import importlib, itertools, pickle, sys, warnings
import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression, LinearRegression
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import cross_val_predict
from sklearn.naive_bayes import GaussianNB
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.estimator_checks import check_estimator
import sklearn.exceptions
import deccal
from deccal.first_stage import AVERAGED_STAGES, FIRST_STAGES, FirstStageSelection, TemperatureScaling
from deccal.first_stage import select_first_stage
from deccal.first_stage import stratified_folds
from deccal.crossfit import CrossFitDeCal
from deccal.classifier import PROBA_FLOORS, canonical_probabilities
from deccal.estimator_base import canonical_order
from deccal.distributions import project_simplex
from deccal.estimators import DecisionCalibratedClassifier, DecisionCalibratedRegressor, _EXPECTED_FAILED_CHECKS


@pytest.mark.parametrize('est', [DecisionCalibratedClassifier(cv=3, max_rounds=5),
                                 DecisionCalibratedRegressor(cv=3, max_rounds=5)],
                         ids=lambda e: type(e).__name__)
def test_sklearn_estimator_checks(est):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        check_estimator(est, expected_failed_checks=_EXPECTED_FAILED_CHECKS[type(est).__name__])


def _brute_simplex(v):
    best = None
    for k in range(1, len(v) + 1):
        for S in itertools.combinations(range(len(v)), k):
            p = np.zeros(len(v)); S = list(S)
            p[S] = v[S] - (v[S].sum() - 1) / k
            if p.min() >= -1e-12 and (best is None or np.sum((p - v)**2) < np.sum((best - v)**2)): best = p
    return best


def test_project_simplex_brute_force():
    V = np.random.default_rng(7).normal(0, 2, (100, 4))
    np.testing.assert_allclose(project_simplex(V), np.array([_brute_simplex(v) for v in V]), atol=1e-12)


@pytest.fixture(scope='module')
def digits():
    X, t = load_digits(return_X_y=True); X = X / 16
    tr, ca, te = np.split(np.random.default_rng(0).permutation(len(t)), [500, 1000])
    clf = LogisticRegression(C=1e4, max_iter=3000).fit(X[tr], t[tr])
    return X, t, clf, ca, te


def test_classifier_improves_held_out(digits):
    X, t, clf, ca, te = digits
    costs = np.random.default_rng(1).uniform(0, 1, (100, 4, 10))
    def gap(V):
        F = np.einsum('ic,kac->kia', V, costs); ch = F.argmin(2)
        d = costs[np.arange(len(costs))[:, None], ch, t[te][None]] - np.take_along_axis(F, ch[:, :, None], 2)[:, :, 0]
        return np.abs(d.mean(1)).mean()
    cal = DecisionCalibratedClassifier(FrozenEstimator(clf), costs=costs[0]).fit(X[ca], t[ca])
    assert gap(cal.predict_proba(X[te])) < 0.7 * gap(clf.predict_proba(X[te]))


def test_predict_loss_action_explicit(digits):
    X, t, clf, ca, te = digits
    cal = DecisionCalibratedClassifier(FrozenEstimator(clf)).fit(X[ca], t[ca])
    R = np.random.default_rng(2).uniform(0, 1, (3, 10))
    # independent: the calibrator's own transform, read as explicit vectors, times the cost matrix
    emb = deccal.Embedding.from_probs(cal.start_probabilities(X[te]), atol=1e-4)    # after the first stage
    V = deccal.explicit_predictions(cal.calibrator_.transform(emb), deccal.Linear())
    np.testing.assert_allclose(cal.predict_loss(X[te], R), V @ R.T, rtol=1e-12)
    np.testing.assert_allclose(cal.predict_loss(X[te], deccal.linear_loss(R)), V @ R.T, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(cal.predict_action(X[te], R), (V @ R.T).argmin(1))
    assert (cal.predict(X[te]) == V.argmax(1)).all()


def test_defaults_rules(digits):
    X, t, clf, ca, te = digits
    R = np.random.default_rng(3).uniform(0, 1, (2, 3, 10))
    c = DecisionCalibratedClassifier(FrozenEstimator(clf), costs=R).fit(X[ca], t[ca])
    r1 = np.linalg.norm(R, axis=2).max()
    assert (c.n_actions_, c.R1_, c.beta_, c.eps_) == (3, pytest.approx(r1), pytest.approx(20 * np.sqrt(10) / r1),
                                                      pytest.approx(0.01 * r1))
    c = DecisionCalibratedClassifier(FrozenEstimator(clf)).fit(X[ca], t[ca])
    assert (c.n_actions_, c.R1_, c.beta_, c.eps_) == (10, pytest.approx(np.sqrt(10)), 20.0,
                                                      pytest.approx(0.01 * np.sqrt(10)))


def test_string_labels_and_pickle(digits):
    X, t, clf, ca, te = digits
    names = np.array(list('abcdefghij'))
    c = DecisionCalibratedClassifier(cv=3).fit(X[:600], names[t[:600]])
    assert list(c.classes_) == list('abcdefghij') and set(c.predict(X[te])) <= set(names)
    again = pickle.loads(pickle.dumps(c))
    np.testing.assert_array_equal(again.predict_proba(X[te]), c.predict_proba(X[te]))


def test_bad_input(digits):
    X, t, clf, ca, te = digits
    D = lambda **kw: DecisionCalibratedClassifier(FrozenEstimator(clf), **kw)
    for kw, arg in ((dict(costs=np.ones((3, 9))), 'costs'), (dict(costs=np.ones((3, 10)), n_actions=2), 'n_actions')):
        with pytest.raises(deccal.DeccalError) as e: D(**kw).fit(X[ca], t[ca])
        assert e.value.arg == arg
    # outside the declared constraints: scikit-learn's InvalidParameterError, a ValueError and a TypeError naming it
    for kw, arg in ((dict(method='x'), 'method'), (dict(eps=0), 'eps'), (dict(beta=np.inf), 'beta'),
                    (dict(validation_fraction=2), 'validation_fraction'), (dict(n_actions=0), 'n_actions'),
                    (dict(random_state=-1), 'random_state')):
        with pytest.raises(ValueError, match=f"The '{arg}' parameter of DecisionCalibratedClassifier must be") as e:
            D(**kw).fit(X[ca], t[ca])
        assert isinstance(e.value, TypeError)
    for E in (DecisionCalibratedClassifier, DecisionCalibratedRegressor):
        with pytest.raises(deccal.NotFittedError): E().predict(X[:2])
        with pytest.raises(sklearn.exceptions.NotFittedError): E().predict(X[:2])


def test_regressor_default_kernels():
    "1-D outcomes: the min kernel on the scaled outcome; several dimensions: RBF with the median heuristic."
    rng = np.random.default_rng(0)
    X = rng.normal(0, 1, (400, 2)); y = np.clip(0.5 + 0.2 * X[:, 0] + 0.1 * rng.normal(size=400), 0, 1)
    Y2 = np.c_[y, y ** 2]
    r = DecisionCalibratedRegressor(cv=3).fit(X, Y2)
    d2 = ((Y2[:, None] - Y2[None]) ** 2).sum(-1)[np.triu_indices(400, 1)]
    assert r.kernel_.gamma == pytest.approx(1 / np.median(d2[d2 > 0]))
    Z, W = r.atom_weights(X[:5])                   # the start: each prediction plus the residual rows (RBF: no clip)
    np.testing.assert_allclose(Z - r.estimator_.predict(X[:5])[:, None, :],
                               np.broadcast_to(r.residuals_, (5, 16, 2)), atol=1e-12)
    np.testing.assert_allclose(r.predict(X[:5]), np.einsum('ib,ibd->id', W, Z), atol=1e-12)   # the calibrated mean
    m = DecisionCalibratedRegressor(LinearRegression(), kernel='min', cv=3).fit(X, y)
    assert m.kernel_ == deccal.MinKernel() and m.outcome_scale_ is not None
    assert m.start_ in ('residual', 'mondrian', 'normalized') and set(m.start_report_) >= {'residual'}
    loss = deccal.piecewise_linear_loss([-0.5, -0.2], [0.5, 0.8], [0.3, 0.6])    # in the kernel's coordinates
    np.testing.assert_allclose(m.predict_loss(X[:20], loss), m.calibrated_embedding(X[:20]).loss_estimates(loss))
    with pytest.raises(deccal.DeccalError) as e: r.predict_loss(X[:5], loss)
    assert e.value.arg == 'loss'


def test_import_message_without_sklearn(monkeypatch):
    monkeypatch.setitem(sys.modules, 'sklearn', None)
    monkeypatch.delitem(sys.modules, 'deccal.estimators', raising=False)
    with pytest.raises(ImportError, match=r'deccal.estimators needs scikit-learn: pip install "deccal\[sklearn\]"'):
        importlib.import_module('deccal.estimators')


def test_regressor_defaults_from_losses():
    rng = np.random.default_rng(1)
    X = rng.normal(0, 1, (300, 2)); y = np.clip(0.4 + 0.2 * X[:, 0] + 0.1 * rng.normal(size=300), 0, 1)
    known = [deccal.piecewise_linear_loss(rng.uniform(-1, 0, 3), rng.uniform(0, 1, 3), rng.uniform(.1, .9, 3))
             for _ in range(4)]
    r = DecisionCalibratedRegressor(LinearRegression(), losses=known, cv=3).fit(X, y)
    r1 = max(np.sqrt(np.diag(l.inner())).max() for l in known)    # ||r(a)|| from the Gram matrix, not Loss.norms
    assert r.kernel_ == deccal.MinKernel() and r.n_actions_ == 3
    assert r.R1_ == pytest.approx(r1, rel=1e-10) and r.R2_ == pytest.approx(np.sqrt(y.max()), rel=1e-12)
    assert r.beta_ == pytest.approx(10 / (r1 * np.sqrt(y.max())))
    assert r.eps_ == pytest.approx(0.01 * r1 * np.sqrt(y.max()))
    for kw, arg in ((dict(losses=known, n_actions=2), 'n_actions'), (dict(losses=known, kernel='rbf'), 'kernel'),
                    (dict(losses=[known[0], deccal.linear_loss(np.ones((3, 1)))]), 'losses'),
                    (dict(losses=[]), 'losses')):
        with pytest.raises((deccal.DeccalError, deccal.DeccalTypeError)) as e:
            DecisionCalibratedRegressor(**kw).fit(X, y)
        assert e.value.arg == arg
    for kw, arg in ((dict(losses='newsvendor'), 'losses'), (dict(kernel='gauss'), 'kernel'),
                    (dict(n_samples=-1), 'n_samples'), (dict(estimator=deccal.Linear()), 'estimator')):
        with pytest.raises(ValueError, match=f"The '{arg}' parameter of DecisionCalibratedRegressor must be"):
            DecisionCalibratedRegressor(**kw).fit(X, y)


def test_dataframe_and_categorical_labels(digits):
    pd = pytest.importorskip('pandas')
    X, t, clf, ca, te = digits
    df = pd.DataFrame(X, columns=[f'p{i}' for i in range(64)])
    y = pd.Series(pd.Categorical(np.array(list('abcdefghij'))[t]))
    base = FrozenEstimator(LogisticRegression(max_iter=3000).fit(df.iloc[:500], y.iloc[:500]))
    c = DecisionCalibratedClassifier(base).fit(df.iloc[ca], y.iloc[ca])
    assert list(c.classes_) == list('abcdefghij') and list(c.feature_names_in_) == list(df.columns)
    assert c.predict_proba(df.iloc[te]).shape == (len(te), 10) and set(c.predict(df.iloc[te])) <= set('abcdefghij')
    with pytest.raises(ValueError, match='feature names'): c.predict(df.iloc[te, ::-1])


def test_sample_weight_reaches_the_calibrator(digits):
    X, t, clf, ca, te = digits
    w = np.random.default_rng(5).uniform(0, 2, len(ca))
    c = DecisionCalibratedClassifier(FrozenEstimator(clf), first_stage=None).fit(X[ca], t[ca], sample_weight=w)
    emb = lambda P: deccal.Embedding.from_probs(P, atol=1e-4)
    P, y, wo = _in_order(c, clf.predict_proba(X[ca]), t[ca], X[ca], w)
    hand = CrossFitDeCal(_calibrator_of(c), n_folds=5, seed=0).fit(emb(P), np.eye(10)[y], sample_weight=wo,
                                                                  folds=stratified_folds(y, 5, 0))
    V = deccal.explicit_predictions(hand.transform(emb(canonical_probabilities(clf.predict_proba(X[te])))),
                                    deccal.Linear())
    np.testing.assert_allclose(c.calibrated_vectors(X[te]), V, rtol=0, atol=1e-12)


def _calibrator_of(est, seed=0):
    "The DimFreeDeCal the estimator's defaults build, with its settled options (line search, shrinkage, auditor)."
    return deccal.DimFreeDeCal(deccal.Linear(), step='line-search', n_actions=est.n_actions_, beta=est.beta_,
                               R1=est.R1_, eps=est.eps_, max_rounds=50, seed=seed, learning_rate=0.5, n_starts=1,
                               max_iter=30)


def test_joblib_round_trip(digits, tmp_path):
    joblib = pytest.importorskip('joblib')
    X, t, clf, ca, te = digits
    c = DecisionCalibratedClassifier(FrozenEstimator(clf)).fit(X[ca], t[ca])
    joblib.dump(c, tmp_path / 'c.joblib')
    np.testing.assert_array_equal(joblib.load(tmp_path / 'c.joblib').predict_proba(X[te]), c.predict_proba(X[te]))


def _in_order(est, P, y, X, w=None):
    """The calibration rows as the estimator fits them: probabilities made canonical, rows in the canonical order
    (checked against the estimator's `calibration_order_`)."""
    P = canonical_probabilities(P)
    o = canonical_order(P, np.eye(P.shape[1])[y], X)
    np.testing.assert_array_equal(o, est.calibration_order_)
    return P[o], y[o], None if w is None else w[o]


def _by_hand(X, t, ca, te, est, stage=None, sample_weight=None):
    """The classifier's route by hand: out-of-fold GaussianNB probabilities (3 folds), made canonical and in the
    canonical order, `stage`, CrossFitDeCal."""
    kw = {} if sample_weight is None else dict(sample_weight=sample_weight)
    P = cross_val_predict(GaussianNB(), X[ca], t[ca], cv=3, method='predict_proba', params=kw)
    Pn = canonical_probabilities(GaussianNB().fit(X[ca], t[ca], **kw).predict_proba(X[te]))
    P, y, sample_weight = _in_order(est, P, t[ca], X[ca], sample_weight)
    if stage is not None: stage.fit(P, y, sample_weight); P, Pn = stage.transform(P), stage.transform(Pn)
    cf = CrossFitDeCal(_calibrator_of(est), n_folds=5, seed=0)
    cf.fit(deccal.Embedding.from_probs(P, atol=1e-4), np.eye(10)[y], sample_weight=sample_weight,
           folds=stratified_folds(y, 5, 0))
    return deccal.explicit_predictions(cf.transform(deccal.Embedding.from_probs(Pn, atol=1e-4)), deccal.Linear())


def test_regressor_has_no_first_stage():
    # the classifier's first_stage=None and 'auto' (the default) against the route by hand: 85e_estimator_checks
    assert 'first_stage' not in DecisionCalibratedRegressor().get_params()
    assert DecisionCalibratedClassifier().get_params()['first_stage'] == 'auto'


def test_first_stage_temperature_labels_and_weights(digits):
    X, t, clf, ca, te = digits
    # the route by hand with first_stage='temperature' and None, unweighted: 85e_estimator_checks; here labels of
    # another type and the weights
    c = DecisionCalibratedClassifier(GaussianNB(), cv=3, first_stage='temperature').fit(X[ca], t[ca])
    V = c.calibrated_vectors(X[te])
    assert isinstance(c.first_stage_, TemperatureScaling)
    names = np.array(list('abcdefghij'))                                    # labels of another type: the same stage
    s = DecisionCalibratedClassifier(GaussianNB(), cv=3, first_stage='temperature').fit(X[ca], names[t[ca]])
    np.testing.assert_array_equal(s.calibrated_vectors(X[te]), V)
    w = np.random.default_rng(6).uniform(0, 2, len(ca))                    # the weights reach the stage
    cw = DecisionCalibratedClassifier(GaussianNB(), cv=3, first_stage='temperature').fit(X[ca], t[ca], sample_weight=w)
    tw = TemperatureScaling()
    np.testing.assert_allclose(cw.calibrated_vectors(X[te]), _by_hand(X, t, ca, te, cw, tw, sample_weight=w),
                               rtol=0, atol=1e-10)
    assert cw.first_stage_.T_ == tw.T_
    assert abs(tw.T_ - c.first_stage_.T_) > 1e-3                           # the weights changed the temperature


def test_first_stage_auto_and_pickle(digits):
    X, t, clf, ca, te = digits
    c = DecisionCalibratedClassifier(GaussianNB(), cv=3, first_stage='auto', random_state=3).fit(X[ca], t[ca])
    P = cross_val_predict(GaussianNB(), X[ca], t[ca], cv=3, method='predict_proba')
    no_avg = [nm for nm in FIRST_STAGES if nm not in AVERAGED_STAGES]    # without costs: the averages left out
    sel = select_first_stage(P, t[ca], seed=3, candidates=no_avg)
    assert isinstance(c.first_stage_, FirstStageSelection) and c.first_stage_.name == sel.name
    np.testing.assert_allclose(c.calibrated_vectors(X[te]), _by_hand(X, t, ca, te, c, FIRST_STAGES[sel.name]()),
                               rtol=0, atol=1e-10)
    again = pickle.loads(pickle.dumps(c))
    np.testing.assert_array_equal(again.predict_proba(X[te]), c.predict_proba(X[te]))


@pytest.mark.parametrize('bad', ['platt', 'Temperature', 'auto ', 3, ('temperature',)])
def test_first_stage_bad_name(digits, bad):
    X, t, clf, ca, te = digits
    with pytest.raises(ValueError, match="The 'first_stage' parameter of DecisionCalibratedClassifier must be"):
        DecisionCalibratedClassifier(FrozenEstimator(clf), first_stage=bad).fit(X[ca], t[ca])


def test_sklearn_estimator_checks_with_a_first_stage():
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        check_estimator(DecisionCalibratedClassifier(cv=3, first_stage='temperature', max_rounds=5),
                        expected_failed_checks=_EXPECTED_FAILED_CHECKS['DecisionCalibratedClassifier'])


def test_costs_per_row(digits):
    X, t, clf, ca, te = digits
    c = DecisionCalibratedClassifier(FrozenEstimator(clf)).fit(X[ca], t[ca])
    Cn = np.random.default_rng(8).uniform(0, 1, (len(te), 4, 10))
    V = c.calibrated_vectors(X[te])
    np.testing.assert_allclose(c.predict_loss(X[te], Cn), np.stack([Cn[i] @ V[i] for i in range(len(te))]), rtol=1e-12)
    np.testing.assert_array_equal(c.predict_action(X[te], Cn), c.predict_loss(X[te], Cn).argmin(1))
    with pytest.raises(ValueError, match='^costs:'): c.predict_loss(X[te], Cn[:3])


def test_predict_proba_keeps_the_floor(digits):
    X, t, clf, ca, te = digits
    c = DecisionCalibratedClassifier(FrozenEstimator(clf), first_stage=None).fit(X[ca], t[ca])
    P = c.predict_proba(X[te])
    assert c.proba_floor_ in PROBA_FLOORS
    np.testing.assert_allclose(P.sum(1), 1, atol=1e-12)
    assert (P >= c.proba_floor_ / P.shape[1] - 1e-15).all()


def test_predict_proba_has_no_zeros_when_the_start_has():
    # a shallow tree's probabilities are 0 on many classes; whether or not rounds are kept, no class gets 0
    X, t = load_digits(return_X_y=True)
    tree = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X[:600], t[:600])
    assert (tree.predict_proba(X[600:]) == 0).any()
    for fs in (None, 'temperature'):
        c = DecisionCalibratedClassifier(FrozenEstimator(tree), first_stage=fs).fit(X[600:1200], t[600:1200])
        P = c.predict_proba(X[1200:])
        assert P.min() >= c.proba_floor_ / 10 - 1e-15 and P.min() > 0
        ll = -np.log(P[np.arange(len(P)), t[1200:]])
        assert ll.max() <= np.log(10 / PROBA_FLOORS[0]) + 1e-9


def test_regressor_distributions():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(700, 2))
    y = np.clip(0.5 + 0.2 * X[:, 0] + 0.15 * rng.standard_normal(700) * (1 + (X[:, 1] > 0)), 0, 1)
    base = FrozenEstimator(LinearRegression().fit(X[:300], y[:300]))
    r = DecisionCalibratedRegressor(base, kernel='min').fit(X[300:600], y[300:600])
    assert r.residuals_ is None and r.start_ in r.start_report_
    Z, W = r.atom_weights(X[600:])
    assert (W >= 0).all() and np.allclose(W.sum(1), 1)
    Q = r.predict_quantiles(X[600:], [0.05, 0.25, 0.5, 0.75, 0.95])
    assert (np.diff(Q, axis=1) >= 0).all()
    np.testing.assert_allclose(r.predict(X[600:]), (W * Z[:, :, 0]).sum(1), atol=1e-12)
    grid = np.linspace(0, 1, 11)
    F = r.predict_distribution(X[600:]).cdf(np.broadcast_to(grid, (100, 11)))
    assert (np.diff(F, axis=1) >= 0).all() and F.min() >= 0 and F.max() <= 1 + 1e-12


def test_class_with_zero_weight_keeps_the_model_probability():
    "A class shown only by rows of weight 0 is absent: its probability is the frozen model's, the rest rescaled."
    rng = np.random.default_rng(0)
    X = rng.normal(size=(900, 4)); y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 1).astype(int)
    model = FrozenEstimator(GaussianNB().fit(X[:300], y[:300]))
    w = (y[300:] != 2).astype(float)
    with pytest.warns(UserWarning, match=r'class\(es\) \[2\]'):
        est = DecisionCalibratedClassifier(model).fit(X[300:], y[300:], sample_weight=w)
    assert est.absent_classes_.tolist() == [2]
    V, P0 = est.calibrated_vectors(X[:50]), est.base_probabilities(X[:50])     # the model's, made canonical
    np.testing.assert_allclose(V[:, 2], P0[:, 2], rtol=0, atol=1e-12)
    np.testing.assert_allclose(V.sum(1), 1.0, rtol=0, atol=1e-9)
    with pytest.raises(deccal.DeccalError, match="y: has rows \\(of positive weight\\) of one class only, 0"):
        DecisionCalibratedClassifier(model).fit(X[300:], y[300:], sample_weight=(y[300:] == 0).astype(float))


def test_docstrings_name_every_parameter_and_fitted_attribute():
    "The numpydoc Parameters section names every parameter, the Attributes section every fitted attribute."
    import re
    from sklearn.linear_model import Ridge
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y, yr = (X[:, 0] + rng.normal(size=200) > 0).astype(int), X[:, 0] + rng.normal(size=200)
    clf, reg = FrozenEstimator(LogisticRegression().fit(X, y)), FrozenEstimator(Ridge().fit(X, yr))
    fitted = {DecisionCalibratedClassifier: DecisionCalibratedClassifier(clf, max_rounds=2).fit(X, y),
              DecisionCalibratedRegressor: DecisionCalibratedRegressor(reg, max_rounds=2).fit(X, yr)}
    for cls, est in fitted.items():
        doc = cls.__doc__
        params, attrs = doc.split('Parameters\n    ----------')[1].split('Attributes\n    ----------')
        attrs = attrs.split('Examples\n    --------')[0]
        heads = lambda sec: re.findall(r'^    (\w[\w, ]*) :', sec, re.M)      # the names before ' : '
        named = lambda sec: {n.strip() for line in heads(sec) for n in line.split(',')}
        assert set(cls().get_params()) <= named(params), set(cls().get_params()) - named(params)
        fit_attrs = {k for k in vars(est) if k.endswith('_') and not k.startswith('_')}
        assert fit_attrs <= named(attrs), fit_attrs - named(attrs)


def test_docstring_examples_run():
    "The Examples of the two estimators' docstrings run as written and print what they show."
    import doctest
    for cls in (DecisionCalibratedClassifier, DecisionCalibratedRegressor):
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        for t in doctest.DocTestFinder(recurse=False).find(cls, cls.__name__, globs={}):
            runner.run(t)
        assert runner.failures == 0 and runner.tries >= 5, (cls.__name__, runner.summarize())


def test_crossfit_docstring_names_every_parameter_and_fitted_attribute():
    "CrossFitDeCal's numpydoc sections name its parameters and fitted attributes; its example runs."
    import doctest, re
    from deccal import CrossFitDeCal, DimFreeDeCal, Embedding, Linear
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(3), 120)
    Y = np.eye(3)[(P.cumsum(1) < rng.uniform(size=(120, 1))).sum(1)]
    cf = CrossFitDeCal(DimFreeDeCal(Linear(), n_actions=3, max_rounds=2), n_folds=3).fit(Embedding.from_probs(P), Y)
    params, attrs = CrossFitDeCal.__doc__.split('Parameters\n    ----------')[1].split('Attributes\n    ----------')
    named = lambda sec: {n.strip() for line in re.findall(r'^    (\w[\w, ]*) :', sec, re.M) for n in line.split(',')}
    assert set(cf.get_params(deep=False)) <= named(params)
    assert {k for k in vars(cf) if k.endswith('_') and not k.startswith('_')} <= named(attrs.split('Examples')[0])
    runner = doctest.DocTestRunner()
    for t in doctest.DocTestFinder(recurse=False).find(CrossFitDeCal, 'CrossFitDeCal', globs={}): runner.run(t)
    assert runner.failures == 0 and runner.tries >= 5
