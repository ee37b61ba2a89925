"""deccal.dask on a LocalCluster with two worker processes: the Dask path gives the in-memory path's numbers.

Where only the order of summation differs (a transform, one round's statistics, the auditor's G_a, a whole
audit) they agree to 1e-8 relative; whole fits follow the same rounds (checked round by round).
"""
import subprocess, sys
import numpy as np
import pytest

da = pytest.importorskip('dask.array')
distributed = pytest.importorskip('distributed')
import deccal
from deccal import Embedding, RBF, DimFreeDeCal, ZhaoDeCal, audit
from deccal.dask import DaskEmbedding, _DaskRows, _Coords
from deccal.rows import LocalRows, Rows, split_rows
from deccal.basis import make_basis, whiten
from deccal.audit import landmark_coords, landmark_G

N, CH = 1600, 400
FIT = dict(n_actions=3, beta=6.0, eps=0.005, step='line-search', max_rounds=5, search_max=600, max_rank=60, n_starts=1)


@pytest.fixture(scope='module')
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close(); cluster.close()


@pytest.fixture(scope='module')
def data():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(N, 3))
    px, y = 0.8 * x, x + 0.3 * rng.normal(size=(N, 3))
    return px, y, DaskEmbedding.from_points(da.from_array(px, chunks=CH)), da.from_array(y, chunks=CH)


def rel(a, b): return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(b)), 1e-300))


def test_split_rows_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(20):
        sizes = list(rng.integers(1, 7, rng.integers(1, 6)))
        idx = np.sort(rng.choice(sum(sizes), rng.integers(0, sum(sizes) + 1), replace=False))
        starts = np.cumsum([0] + sizes[:-1])
        want = [np.array([i - s for i in idx if s <= i < s + z]) for s, z in zip(starts, sizes)]
        got = split_rows(idx, sizes)
        assert len(got) == len(sizes) and all(np.array_equal(g, w) for g, w in zip(got, want))


def test_transform_stats_objective(client, data):
    px, y, dp, dy = data
    cal = DimFreeDeCal(RBF(0.5), early_stopping=False, **dict(FIT, search_max=20000))
    cal.fit(Embedding.from_points(px[:800]), y[:800])
    t_mem, t_dask = cal.transform(Embedding.from_points(px[800:])), cal.transform(dp[800:]).compute()
    assert rel(t_dask.theta, t_mem.theta) < 1e-8 and rel(t_dask.gamma, t_mem.gamma) < 1e-8
    basis, _ = make_basis(RBF(0.5), Embedding.from_points(px[:300]), y[:300], 0, 1e-8, 50)
    to_u, _ = whiten(basis.K, 1e-8, 50)
    w = np.random.default_rng(1).uniform(0.2, 2, N)
    loc = LocalRows.build(RBF(0.5), basis, to_u, Embedding.from_points(px), y, w)
    rem = _DaskRows.build(Rows, RBF(0.5), basis, to_u, dp, dy, da.from_array(w, chunks=CH))
    U = np.random.default_rng(2).normal(size=(3, to_u.shape[0])) * 0.2
    for i in range(3):
        assert rel(sum(q[i] for q in rem.each('stats', U, 6.0)), sum(q[i] for q in loc.each('stats', U, 6.0))) < 1e-8
    assert rel(sum(q[0] for q in rem.each('square_loss_sum')), sum(q[0] for q in loc.each('square_loss_sum'))) < 1e-8
    crd = _DaskRows.build(_Coords, RBF(0.5), basis, to_u, dp, dy, da.from_array(w / w.sum(), chunks=CH))
    SP, SR = landmark_coords(basis, to_u, Embedding.from_points(px), y)
    assert rel(sum(crd.each('G', U, 6.0)), landmark_G(SP, SR, w / w.sum(), U, 6.0)) < 1e-8   # the auditor's G_a


def test_audit_equal_with_weights_and_holdout(client, data):
    px, y, dp, dy = data
    w = np.random.default_rng(5).uniform(0, 2, N) / N
    kw = dict(n_actions=3, beta=6.0, method='landmarks', search_max=600, n_starts=2, max_rank=60,
              holdout=(Embedding.from_points(px[:300]), y[:300]))
    a = audit(Embedding.from_points(px), y, RBF(0.5), weights=w, **kw)
    b = audit(dp, dy, RBF(0.5), weights=da.from_array(w, chunks=CH), **kw)
    assert abs(b.value / a.value - 1) < 1e-8 and abs(b.holdout_value / a.holdout_value - 1) < 1e-8
    assert b.info['search_rows'] == 600 and b.info['blocks'] == N // CH
    g = deccal.gap_function(Embedding.from_points(px), y, b.loss, b.rule_loss, beta=6.0)
    assert b.value == pytest.approx(abs(w @ g), rel=1e-9)    # the value is the pair's exact weighted error on every row


@pytest.mark.parametrize('cls', [DimFreeDeCal, ZhaoDeCal])
def test_whole_fits_follow_the_same_rounds(client, data, cls):
    px, y, dp, dy = data
    sw = np.random.default_rng(6).uniform(0.5, 1.5, N)
    kw = {k: v for k, v in FIT.items() if cls is DimFreeDeCal or k != 'step'}
    a = cls(RBF(0.5), **kw).fit(Embedding.from_points(px), y, sample_weight=sw)
    b = cls(RBF(0.5), **kw).fit(dp, dy, sample_weight=da.from_array(sw, chunks=CH))
    assert len(a.history_) == len(b.history_) and a.best_round_ == b.best_round_ and a.stop_reason_ == b.stop_reason_
    for ha, hb in zip(a.history_, b.history_):                      # early stopping's held-out part: the same rows
        for k in ('square_loss', 'holdout_square_loss', 'audit_value', 'holdout_value'):
            if ha.get(k) is not None: assert hb[k] == pytest.approx(ha[k], rel=1e-7), (k, ha, hb)
    new = Embedding.from_points(px[:200])
    assert rel(b.transform(new).sq_norms(RBF(0.5)), a.transform(new).sq_norms(RBF(0.5))) < 1e-7
    assert b.dask_traffic_['rounds'] == len(b.all_rounds_) and b.dask_traffic_['received'] > 0


def test_traffic_does_not_grow_with_n(client):
    rng = np.random.default_rng(8)
    per_round = []
    for n in (1200, 2400):
        x = rng.normal(size=(n, 2))
        dp = DaskEmbedding.from_points(da.from_array(0.8 * x, chunks=n // 3))
        dy = da.from_array(x + 0.3 * rng.normal(size=(n, 2)), chunks=n // 3)
        f = DimFreeDeCal(RBF(0.5), early_stopping=False, **dict(FIT, max_rounds=2, search_max=500)).fit(dp, dy)
        per_round.append(f.dask_traffic_['received'] / f.dask_traffic_['rounds'])
    assert abs(per_round[1] / per_round[0] - 1) < 0.1, per_round


def test_errors(client, data):
    px, y, dp, dy = data
    with pytest.raises(deccal.DeccalError) as e: DimFreeDeCal(RBF(0.5), sample='split', max_rounds=2).fit(dp, dy)
    assert e.value.arg == 'sample'
    with pytest.raises(deccal.DeccalError) as e: audit(dp, dy, RBF(0.5), method='randomized')
    assert e.value.arg == 'method'
    with pytest.raises(deccal.DeccalTypeError) as e: DimFreeDeCal(RBF(0.5)).fit(Embedding.from_points(px), dy)
    assert e.value.arg == 'pred'
    with pytest.raises(deccal.DeccalError) as e: audit(dp, dy[:10], RBF(0.5))
    assert e.value.arg == 'Y'
    bad = y.copy(); bad[5, 0] = np.nan
    with pytest.raises(deccal.DeccalError) as e: audit(dp, da.from_array(bad, chunks=CH), RBF(0.5), method='landmarks')
    assert e.value.arg == 'Y'
    with pytest.raises(deccal.DeccalError) as e: DaskEmbedding(da.zeros((4, 1, 2)), da.ones((4, 3)))
    assert e.value.arg == 'W'


def test_import_without_dask_says_how_to_install():
    code = "import sys; sys.modules['dask'] = None\ntry:\n    import deccal.dask\nexcept ImportError as e: print(e)"
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == 'deccal.dask needs dask: pip install "deccal[dask]"', out


def test_huge_weights_are_the_same_weights(client, data):
    # weights of 1e307 overflowed their sum (inf) and passed the check; only their ratios matter, as in memory
    px, y, dp, dy = data
    kw = dict(FIT, max_rounds=2)
    a = DimFreeDeCal(RBF(0.5), **kw).fit(dp, dy, sample_weight=da.from_array(np.ones(N), chunks=CH))
    b = DimFreeDeCal(RBF(0.5), **kw).fit(dp, dy, sample_weight=da.from_array(np.full(N, 1e307), chunks=CH))
    assert len(a.history_) == len(b.history_)
    for ha, hb in zip(a.history_, b.history_):
        assert hb['square_loss'] == pytest.approx(ha['square_loss'], rel=1e-12)


def _filtered(a, keep, chunks):
    "a[keep] as Dask leaves it after a boolean filter and compute_chunk_sizes(): emptied blocks have size 0."
    return da.from_array(a, chunks=chunks)[da.from_array(keep, chunks=chunks)].compute_chunk_sizes()


def test_zero_size_chunks_give_what_the_rows_without_them_give(client, data):
    # a filter that empties whole blocks; deccal's error for unknown sizes advises compute_chunk_sizes(), which leaves
    # blocks of size 0: every block computation (the fit's state and sums, the weights, R2's maxima, the auditor's
    # coordinates and G_a, the transform) must give the numbers of the same rows without them, to 1e-12
    px, y, _, _ = data
    keep = np.ones(N, bool); keep[CH:2 * CH] = False; keep[3 * CH + 7:] = False    # block 1 and most of block 3 go
    sw = np.random.default_rng(9).uniform(0.5, 1.5, N)
    fx, fy, fw = (_filtered(a, keep, CH) for a in (px, y, sw))
    assert 0 in fx.chunks[0] and 0 in fy.chunks[0] and 0 in fw.chunks[0], fx.chunks
    dz = DaskEmbedding.from_points(fx)
    plain = tuple(c for c in fx.chunks[0] if c)
    dn = DaskEmbedding.from_points(da.from_array(px[keep], chunks=(plain, 3)))
    yn, wn = da.from_array(y[keep], chunks=(plain, 3)), da.from_array(sw[keep], chunks=(plain,))
    kw = dict(FIT, max_rounds=3, early_stopping=True)
    fits = {}
    for cls in (DimFreeDeCal, ZhaoDeCal):        # whole fits: the tolerance of the whole-fit test above (searches)
        kc = {k: v for k, v in kw.items() if cls is DimFreeDeCal or k != 'step'}
        a = fits[cls] = cls(RBF(0.5), **kc).fit(dz, fy, sample_weight=fw)
        b = cls(RBF(0.5), **kc).fit(dn, yn, sample_weight=sw[keep])
        assert len(a.history_) == len(b.history_) >= 2
        for ha, hb in zip(a.history_, b.history_):
            for k in ('square_loss', 'holdout_square_loss', 'audit_value'):
                if hb.get(k) is not None: assert ha[k] == pytest.approx(hb[k], rel=1e-7), (k, ha, hb)
    cal = fits[DimFreeDeCal]
    ta, tb = cal.transform(dz).compute(), cal.transform(dn).compute()          # one calibrator on both: 1e-12
    assert rel(ta.theta, tb.theta) <= 1e-12 and rel(ta.gamma, tb.gamma) <= 1e-12
    from deccal.dask import _maxima
    assert _maxima(RBF(0.5), dz, fy) == _maxima(RBF(0.5), dn, yn)
    basis, _ = make_basis(RBF(0.5), Embedding.from_points(px[:300]), y[:300], 0, 1e-8, 50)
    to_u, _ = whiten(basis.K, 1e-8, 50)
    U = np.random.default_rng(2).normal(size=(3, to_u.shape[0])) * 0.2
    Du = np.random.default_rng(4).normal(size=(3, to_u.shape[0])) * 0.05
    rz, rn = (_DaskRows.build(Rows, RBF(0.5), basis, to_u, p, q, w).map('patch', U, Du, 6.0, 1.0)
              for p, q, w in ((dz, fy, fw), (dn, yn, wn)))
    assert rz.sizes == rn.sizes == list(plain)
    for method, args in (('stats', (U, 6.0)), ('square_loss_sum', ())):
        for i in range(len(rn.each(method, *args)[0])):
            assert rel(sum(np.asarray(q[i]) for q in rz.each(method, *args)),
                       sum(np.asarray(q[i]) for q in rn.each(method, *args))) <= 1e-12, (method, i)
    idx = split_rows(np.arange(0, keep.sum(), 5), rz.sizes)
    assert all(rel(x[0], y_[0]) <= 1e-12 for x, y_ in zip(rz.each('take', per=idx), rn.each('take', per=idx)))
    cz, cn = (_DaskRows.build(_Coords, RBF(0.5), basis, to_u, p, q, w) for p, q, w in ((dz, fy, fw), (dn, yn, wn)))
    assert rel(sum(cz.each('G', U, 6.0)), sum(cn.each('G', U, 6.0))) <= 1e-12       # the auditor's G_a
    akw = dict(n_actions=3, beta=6.0, method='landmarks', search_max=300, n_starts=2, max_rank=60)
    a = audit(dz, fy, RBF(0.5), weights=fw / keep.sum(), **akw)
    assert a.info['blocks'] == len(plain)
    g = deccal.gap_function(Embedding.from_points(px[keep]), y[keep], a.loss, a.rule_loss, beta=6.0)
    assert a.value == pytest.approx(abs(sw[keep] / keep.sum() @ g), rel=1e-9)   # its pair's exact error, every row
    assert dz.chunks == dn.chunks == plain            # the empty blocks were dropped, the others kept as they were


def _never(b): raise RuntimeError("a block was computed")


@pytest.fixture
def local_client():
    # workers in this process, so that what they log reaches this process's logging
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=':0')
    c = distributed.Client(cluster)
    yield c
    c.close(); cluster.close()


def test_bad_values_on_workers_one_error_no_worker_log(local_client, data):
    import logging
    px, y, dp, dy = data
    records = []
    handler = logging.Handler(logging.DEBUG); handler.emit = records.append
    log = logging.getLogger('distributed'); log.addHandler(handler)
    loud = lambda: [(r.name, r.levelname, r.getMessage()[:200]) for r in records
                    if r.levelno >= logging.ERROR or 'Compute Failed' in r.getMessage()]
    try:
        bad = y.copy(); bad[[5, CH + 5, 3 * CH + 1], 0] = np.nan       # NaN in three of the four blocks
        by = da.from_array(bad, chunks=CH)
        zbad = px.copy(); zbad[2 * CH + 3, 1] = np.inf
        bz = DaskEmbedding.from_points(da.from_array(zbad, chunks=CH))
        calls = [(lambda: DimFreeDeCal(RBF(0.5), **FIT).fit(dp, by), 'Y'),
                 (lambda: ZhaoDeCal(RBF(0.5), max_rounds=2).fit(bz, dy), 'Z'),
                 (lambda: DimFreeDeCal(RBF(0.5), **FIT).fit(dp, dy, holdout=(dp, by)), 'holdout outcomes'),
                 (lambda: audit(dp, by, RBF(0.5), method='landmarks', landmark_rows=100), 'Y'),
                 (lambda: audit(bz, dy, RBF(0.5), method='landmarks', landmark_rows=100), 'Z')]
        for call, arg in calls:
            with pytest.raises(deccal.DeccalError) as e: call()
            assert not loud(), (arg, loud())                            # no worker logged the failure
            assert e.value.arg == arg and 'NaN or infinite' in str(e.value), (arg, e.value)
            assert e.value.__cause__ is None and e.value.__context__ is None
        # what can be checked on the client is, before any block is computed
        never = dy.map_blocks(_never, dtype=float)
        with pytest.raises(deccal.DeccalError) as e:
            DimFreeDeCal(RBF(0.5), **FIT).fit(dp, never, holdout=(Embedding.from_points(px[:9, :2]), y[:9, :2]))
        assert e.value.arg == 'holdout'
        with pytest.raises(deccal.DeccalError) as e:
            audit(dp, dy, RBF(0.5), method='landmarks', weights=da.from_array(np.r_[np.nan, np.ones(N - 1)], chunks=CH))
        assert e.value.arg == 'weights'
    finally:
        log.removeHandler(handler)
    assert not loud(), loud()

