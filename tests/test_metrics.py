"""deccal.metrics: the score against the paper's definition and by hand, weights, labels, the scorer, the display."""
import numpy as np
import pytest
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
import deccal
from deccal.metrics import decision_calibration_score, decision_calibration_gaps, DecisionReliabilityDisplay
from deccal.decisions import cost_stack


@pytest.fixture(scope='module')
def sample():
    rng = np.random.default_rng(3)
    P = rng.dirichlet(np.ones(3) * 0.7, 250)
    y = np.array([rng.choice(3, p=np.sqrt(p) / np.sqrt(p).sum()) for p in P])     # underconfident on purpose
    return P, y, rng.uniform(0, 1, (6, 4, 3))


@pytest.mark.parametrize('beta', [None, 3.0])
def test_equals_the_papers_error_of_the_pair(sample, beta):
    P, y, R = sample
    emb = deccal.Embedding.from_probs(P)
    paper = [deccal.decision_calibration_error(emb, np.eye(3)[y], deccal.linear_loss(r), deccal.linear_loss(r), beta)
             for r in R]
    np.testing.assert_allclose(decision_calibration_gaps(y, P, costs=R, beta=beta), paper, rtol=1e-10, atol=1e-14)
    assert decision_calibration_score(y, P, costs=R, beta=beta) == pytest.approx(np.mean(paper), rel=1e-10)
    assert decision_calibration_score(y, P, costs=R, beta=beta, aggregate='max') == pytest.approx(np.max(paper),
                                                                                                 rel=1e-10)


def test_brute_force_loop(sample):
    "An explicit loop over samples and decision makers, with the best response's lowest-index tie rule."
    P, y, R = sample
    P = np.round(P, 1)                                   # ties between actions happen
    ref = []
    for r in R:
        tot = 0.0
        for p, c in zip(P, y):
            f = [sum(r[a, j] * p[j] for j in range(3)) for a in range(4)]
            a = min(range(4), key=lambda i: (f[i], i))
            tot += r[a, c] - f[a]
        ref.append(abs(tot / len(P)))
    np.testing.assert_allclose(decision_calibration_gaps(y, P, costs=R), ref, rtol=1e-10, atol=1e-14)


def test_weights_labels_binary(sample):
    P, y, R = sample
    w = np.random.default_rng(0).integers(0, 3, len(y))
    assert decision_calibration_score(y, P, costs=R, sample_weight=w) == pytest.approx(
        decision_calibration_score(np.repeat(y, w), np.repeat(P, w, 0), costs=R), rel=1e-12)
    names = np.array(['c', 'a', 'b'])                     # string labels, columns given in a non-sorted order
    plain = decision_calibration_score(y, P, costs=R)
    assert decision_calibration_score(names[y], P, costs=R, labels=names) == pytest.approx(plain, rel=1e-12)
    perm = np.array([2, 0, 1])                             # columns permuted, labels saying which class each column is
    assert decision_calibration_score(y, P[:, perm], costs=R[:, :, perm], labels=perm) == pytest.approx(plain,
                                                                                                       rel=1e-12)
    assert decision_calibration_score(np.array(['u', 'v', 'w'])[y], P[:, perm], costs=R[:, :, perm],
                                      labels=np.array(['w', 'u', 'v'])) == pytest.approx(plain, rel=1e-12)
    p = P[:, 1] / P[:, :2].sum(1); yb = (y == 1).astype(int)
    assert (decision_calibration_score(yb, p, costs=R[:, :, :2])
            == decision_calibration_score(yb, np.column_stack([1 - p, p]), costs=R[:, :, :2]))


def test_bad_input_names_the_argument(sample):
    P, y, R = sample
    for kw, arg in ((dict(y_prob=P[:, :2]), 'y_prob'), (dict(y_prob=P[:5]), 'y_prob'),
                    (dict(costs=R[:, :, :2]), 'costs'),
                    (dict(labels=[0, 1, 7]), 'y_true'), (dict(beta=-1.0), 'beta'), (dict(aggregate='sum'), 'aggregate'),
                    (dict(sample_weight=np.zeros(len(y))), 'sample_weight'), (dict(n_costs=0), 'n_costs'),
                    (dict(sample_weight=np.ones(len(y) + 1)), 'sample_weight'),
                    (dict(sample_weight=np.r_[np.inf, np.ones(len(y) - 1)]), 'sample_weight'),
                    (dict(y_prob=np.where(P > 0.9, np.nan, P)), 'y_prob'), (dict(y_true=y[:0], y_prob=P[:0]), 'y_true'),
                    (dict(y_true=y.astype(float) + np.r_[np.nan, np.zeros(len(y) - 1)]), 'y_true'),
                    (dict(labels=[0, 1]), 'labels'), (dict(labels=[0, 1, 1]), 'labels'),
                    (dict(costs=np.ones((2, 4, 3)) * np.nan), 'costs'),
                    (dict(n_actions=0), 'n_actions'), (dict(n_costs=10**12), 'n_costs'),
                    (dict(random_state=-1), 'random_state'),
                    (dict(y_true=np.array(['a', 1] * 125, dtype=object)), 'y_true'), (dict(beta=np.inf), 'beta')):
        args = {'y_true': y, 'y_prob': P, **kw}
        with pytest.raises(deccal.DeccalError) as e:
            decision_calibration_score(args.pop('y_true'), args.pop('y_prob'), **args)
        assert e.value.arg == arg


def test_scorer_in_grid_search():
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import make_scorer
    from sklearn.model_selection import GridSearchCV
    from sklearn.model_selection import StratifiedKFold
    X, t = load_digits(return_X_y=True); X = X[:600] / 16; t = t[:600]
    sc = make_scorer(decision_calibration_score, greater_is_better=False, response_method='predict_proba',
                     labels=np.arange(10))
    gs = GridSearchCV(LogisticRegression(max_iter=2000), {'C': [0.1, 10.0]}, scoring=sc, cv=3).fit(X, t)
    assert gs.best_params_['C'] == 10.0                   # the weaker regularization is the better calibrated one here
    for i, C in enumerate(gs.cv_results_['param_C']):     # the scorer on split 0, by hand (cv=3: StratifiedKFold(3))
        fit_i, val_i = next(StratifiedKFold(3).split(X, t))
        m = LogisticRegression(C=C, max_iter=2000).fit(X[fit_i], t[fit_i])
        by_hand = -decision_calibration_score(t[val_i], m.predict_proba(X[val_i]), labels=m.classes_)
        assert gs.cv_results_['split0_test_score'][i] == pytest.approx(by_hand, rel=1e-10)
    m = gs.best_estimator_
    assert sc(m, X, t) == pytest.approx(-decision_calibration_score(t, m.predict_proba(X)), rel=1e-12)


def test_display_data_and_axes(sample):
    P, y, R = sample
    for beta in (None, 4.0):
        d = DecisionReliabilityDisplay.from_predictions(y, P, costs=R[0], beta=beta, bins=3, name='p')
        loss = deccal.linear_loss(R[0])
        ref = deccal.reliability_bins(deccal.Embedding.from_probs(P), np.eye(3)[y], loss, loss, beta, 3)
        for f in ('predicted', 'realized', 'se', 'weight'):     # equal but for from_probs dividing by row sums (an ulp)
            np.testing.assert_allclose(getattr(d.bins, f), getattr(ref, f), rtol=1e-12, atol=1e-15)
        for a, bar in enumerate(d.lines_):                      # what is drawn: points and their 2-standard-error bars
            ok = d.bins.weight[a] > 0
            np.testing.assert_array_equal(bar.lines[0].get_xydata(),
                                          np.column_stack([d.bins.predicted[a, ok], d.bins.realized[a, ok]]))
            seg = np.array(bar.lines[2][0].get_segments()).reshape(-1, 2, 2)   # (points, 2 ends, xy)
            ends = d.bins.realized[a, ok, None] + 2 * d.bins.se[a, ok, None] * [-1, 1]
            np.testing.assert_allclose(seg[:, :, 1].reshape(-1, 2), ends, rtol=1e-12)
    assert len(d.axes_) == 4 and len(d.lines_) == 4 and d.figure_ is d.axes_[0].figure
    again = DecisionReliabilityDisplay(d.bins, estimator_name='q').plot(axes=d.axes_)
    assert again.figure_ is d.figure_
    with pytest.raises(deccal.DeccalError) as e: DecisionReliabilityDisplay(d.bins).plot(axes=d.axes_[:3])
    assert e.value.arg == 'axes'
    plt.close('all')


class _Proba:
    "Duck-typed classifier: predict_proba and classes_ (string labels), no scikit-learn."
    def __init__(self, P): self.P, self.classes_ = P, np.array(['x', 'y', 'z'])
    def predict_proba(self, X): return self.P[np.asarray(X, int)[:, 0]]

class _Calibrated(_Proba):
    "Duck-typed DecisionCalibratedClassifier: calibrated vectors off the simplex, predict_proba on it."
    def calibrated_vectors(self, X): return 1.2 * self.predict_proba(X) - 0.1


def test_from_estimator_is_from_predictions_on_its_output(sample):
    P, y, R = sample
    X, names = np.arange(len(y))[:, None], np.array(['x', 'y', 'z'])[y]
    for est, response, out in ((_Proba(P), 'auto', P), (_Calibrated(P), 'auto', 1.2 * P - 0.1),
                               (_Calibrated(P), 'predict_proba', P)):
        a = DecisionReliabilityDisplay.from_estimator(est, X, names, costs=R[1], response=response, bins=4)
        b = DecisionReliabilityDisplay.from_predictions(names, out, costs=R[1], labels=est.classes_, bins=4)
        for f in ('predicted', 'realized', 'se', 'weight'):
            np.testing.assert_array_equal(getattr(a.bins, f), getattr(b.bins, f))
        assert a.estimator_name == type(est).__name__
    with pytest.raises(deccal.DeccalTypeError) as e:
        DecisionReliabilityDisplay.from_estimator(_Proba(P), X, names, costs=R[1], response='calibrated_vectors')
    assert e.value.arg == 'response'
    plt.close('all')


def test_no_sklearn_needed(monkeypatch):
    import importlib, sys
    monkeypatch.setitem(sys.modules, 'sklearn', None)
    monkeypatch.delitem(sys.modules, 'deccal.metrics', raising=False)
    m = importlib.import_module('deccal.metrics')
    assert m.decision_calibration_score([0, 1], [[0.8, 0.2], [0.3, 0.7]], costs=np.eye(2)) >= 0


def test_cost_stack_is_the_one_check_of_costs():
    "cost_stack: (A, C) becomes a (1, A, C) stack; the metric refuses bad costs with its message."
    R = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(cost_stack(R, 3), R[None])
    for bad in (np.ones((2, 4)), np.ones((1, 0, 3)), np.full((2, 3), np.nan), np.ones((1, 2, 2, 3))):
        with pytest.raises(deccal.DeccalError) as e: cost_stack(bad, 3)
        assert e.value.arg == 'costs'
        with pytest.raises(deccal.DeccalError) as m: decision_calibration_score([0, 1, 2], np.eye(3), costs=bad)
        assert str(m.value) == str(e.value)
