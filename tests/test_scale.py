"""The auditor's landmark path (linear in n): exact value for the pair it returns, close to the exact path, checks."""
import sys
import numpy as np
import pytest
import deccal
from deccal import Embedding, RBF, audit, decision_calibration_error


@pytest.fixture(scope='module')
def data():
    rng = np.random.default_rng(11)
    x = rng.normal(size=(1500, 2))
    return Embedding.from_points(0.8 * x), x + 0.3 * rng.normal(size=(1500, 2))


KW = dict(kernel=RBF(0.5), n_actions=3, beta=8.0, R1=1.0, n_starts=2)


def test_landmarks_close_to_exact_and_value_is_exact(data):
    p, Y = data
    ex, lm = audit(p, Y, method='exact', **KW), audit(p, Y, method='landmarks', **KW)
    assert lm.info['method'] == 'landmarks' and abs(lm.value / ex.value - 1) < 0.02
    assert decision_calibration_error(p, Y, lm.loss, lm.rule_loss, beta=8.0) == pytest.approx(lm.value, rel=1e-10)
    assert lm.loss.atoms.shape[0] <= 2 * lm.info['landmarks']
    assert lm.rule_loss.atoms.shape[0] <= 2 * lm.info['landmarks']


def test_landmarks_holdout_and_weights(data):
    p, Y = data
    w = np.random.default_rng(0).uniform(0, 2, p.n); w /= w.sum()
    r = audit(p[:1000], Y[:1000], method='landmarks', weights=w[:1000] / w[:1000].sum(), holdout=(p[1000:], Y[1000:]),
              search_max=600, **KW)
    g = deccal.gap_function(p[:1000], Y[:1000], r.loss, r.rule_loss, beta=8.0)
    # the weighted error of the pair, on all rows
    assert r.value == pytest.approx(abs(np.sum(w[:1000] / w[:1000].sum() * g)), rel=1e-10)
    assert r.info['search_rows'] == 600 and np.isfinite(r.holdout_value)
    g_hold = deccal.gap_function(p[1000:], Y[1000:], r.loss, r.rule_loss, beta=8.0)
    assert r.holdout_value == pytest.approx(g_hold.mean(), rel=1e-12)


def test_method_checks(data):
    p, Y = data
    for kw, arg in ((dict(method='sketch'), 'method'), (dict(method='landmarks', landmark_rows=0), 'landmark_rows'),
                    (dict(method='landmarks', search_max=-1), 'search_max')):
        with pytest.raises(deccal.DeccalError) as e: audit(p[:100], Y[:100], **kw, **KW)
        assert e.value.arg == arg
    assert audit(p[:100], Y[:100], **KW).info['method'] == 'exact'


def test_fit_searches_a_part_and_patches_from_every_row():
    "Linear kernel, point forecasts in R^2: G_a = mean_i k(x_i, a) (y_i - p_i) explicitly; round 0 uses every row."
    rng = np.random.default_rng(4)
    x = rng.normal(size=(400, 2)); p, Y = Embedding.from_points(0.7 * x), x + 0.2 * rng.normal(size=(400, 2))
    c = deccal.DimFreeDeCal(deccal.Linear(), n_actions=3, beta=4.0, R1=1.0, eps=0.01, max_rounds=2,
                            early_stopping=False,
                            search_max=120).fit(p, Y)
    k = deccal.quantal_response(p.loss_estimates(c.rule_loss(0)), 4.0)
    G = (k[:, :, None] * (Y - x * 0.7)[:, None, :]).mean(0)          # (A, 2)
    assert c.history_[0]['audit_value'] == pytest.approx(np.linalg.norm(G, axis=1).sum(), rel=1e-9)
    with pytest.raises(deccal.DeccalError) as e: deccal.DimFreeDeCal(deccal.Linear(), search_max=0).fit(p, Y)
    assert e.value.arg == 'search_max'


def test_rows_path_stops_only_when_the_searched_part_is_below_the_target(monkeypatch):
    """The row-block fit stops at 3 eps / 4 only when both the value its search reached on the part and the found rule's
    value on every row are below it."""
    am = sys.modules['deccal.worst_pair']   # the module the rounds' search (search_groups) calls search_rule in
    rng = np.random.default_rng(4)
    x = rng.normal(size=(400, 2)); p, Y = Embedding.from_points(0.7 * x), x + 0.2 * rng.normal(size=(400, 2))
    kw = dict(n_actions=3, beta=4.0, R1=1.0, max_rounds=4, early_stopping=False, search_max=120)
    v0 = deccal.DimFreeDeCal(deccal.Linear(), eps=0.01, **kw).fit(p, Y).history_[0]['audit_value']   # on every row
    real = am.search_rule
    def fit(part_value, eps):
        # the part's value, as reported
        monkeypatch.setattr(am, 'search_rule', lambda *a, **k: (real(*a, **k)[0], [part_value]))
        return deccal.DimFreeDeCal(deccal.Linear(), eps=eps, **kw).fit(p, Y)
    easy, hard = 2 * v0 / 0.75, 1e-6 * v0          # 3 eps / 4 above round 0's value on every row / below any value
    c = fit(0.0, easy)
    assert c.stop_reason_ == 'target' and len(c.history_) == 1                     # both below: stops at round 0
    c = fit(10 * v0, easy)
    assert c.stop_reason_ == 'max_rounds' and len(c.history_) == kw['max_rounds'] + 1   # the part still shows a gap
    c = fit(0.0, hard)
    assert c.stop_reason_ == 'max_rounds'                                            # every row still shows a gap
