"""The synthetic scale scenarios shared by the benchmark scripts in bench/ (fit_scale, dask_scale, audit_scale,
audit_crossover, transform, transform_bound, targets): point forecasts in R^3, x ~ N(0, I_3), predictions 0.8 x,
outcomes x + 0.3 N(0, I_3); and the one-measurement functions each runs in a fresh process.

  fit        `fit_one(n)`: a DimFreeDeCal fit of FIT_ROUNDS rounds (RBF(0.5), FIT_KW) after `warm_up`, timed, with
             `instrument`'s timers; `sources`, `blas_env` for the subprocesses.
  audit      `audit_one(n, method)`: one audit (RBF(0.5), AUDIT_KW) after warm-up audits.
  transform  `do_fit(path)`: the calibrator of ROUNDS rounds on N_FIT points (TRANSFORM_PARAMS), saved;
             `do_transform(path, T, m)`: REPEATS timed transforms of m fresh points (`new_points`) by it truncated
             to T rounds (`load`); `measure(fn)`: wall time, peak memory, other processes' share of one call.
"""
from __future__ import annotations
import json, os, time

import numpy as np

from _measure import rss_bytes, hwm_bytes, reset_hwm, cpu_snapshot, source_sha, GB

SEED = 20240601
FIT_KW = dict(n_actions=5, beta=10.0, R1=1.0, eps=0.02, step='line-search', early_stopping=False)
FIT_ROUNDS = 20
AUDIT_KW = dict(n_actions=5, beta=10.0, R1=1.0)
N_FIT, M_NEW, M_WARM, ROUNDS, REPEATS = 5000, 200_000, 1000, 50, 3
TRANSFORM_PARAMS = dict(n_actions=5, beta=10.0, R1=1.0, eps=1e-6, step='line-search', max_rounds=ROUNDS,
                        early_stopping=False)


def make_data(n, seed=SEED):
    "n point forecasts 0.8 x and outcomes x + 0.3 N(0, I_3), x ~ N(0, I_3), from `seed`: (predictions, outcomes)."
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3))
    return 0.8 * x, x + 0.3 * rng.standard_normal((n, 3))


def embedded_data(n, seed=SEED):
    "make_data with the predictions as an Embedding.from_points."
    from deccal import Embedding
    px, y = make_data(n, seed)
    return Embedding.from_points(px), y


# ----------------------------------------------------------------------------- fit
def instrument(progress=None):
    """Wrap deccal.dimfree's module-level helpers with timers (only in this process); returns the dict of seconds and
    calls.  `progress(event)`, if given, is called after the row state is built ('setup') and after each round's patch
    ('round')."""
    import deccal.dimfree as dfm
    import deccal.rounds as drm                      # the loop of rounds (search, basis, whitening, gathering)
    T = {}
    active = set()                   # timers running now: a call within one of the same name is not counted again
    def timed(name, f):
        def g(*a, **k):
            if name in active: return f(*a, **k)
            t = time.perf_counter(); active.add(name)
            try: return f(*a, **k)
            finally:
                active.discard(name)
                T[name] = T.get(name, 0.0) + time.perf_counter() - t
                T[name + '_calls'] = T.get(name + '_calls', 0) + 1
        return g
    drm.search_groups = timed('search', drm.search_groups)
    drm.make_basis = timed('basis', drm.make_basis)
    drm.whiten = timed('whiten', drm.whiten)
    drm.stack_search = timed('gather', drm.stack_search)            # each round: the blocks' search rows stacked
    build = dfm.LocalRows.build
    def build_rows(*a, **k):
        out = build(*a, **k)
        T['block_rows'] = sorted(set(out.sizes)) ; T['blocks'] = len(out.sizes)
        return out
    dfm.LocalRows.build = timed('build_rows', build_rows)   # a plain function on the class: LocalRows.build(...)
    if progress is not None:
        timed_build, rows_map = dfm.LocalRows.build, dfm.LocalRows.map
        def build_then_report(*a, **k):
            out = timed_build(*a, **k); progress('setup'); return out
        def map_then_report(self, method, *args):
            out = rows_map(self, method, *args)
            if method == 'patch': progress('round')
            return out
        dfm.LocalRows.build, dfm.LocalRows.map = build_then_report, map_then_report
    return T


def warm_up():
    "Fits on a few hundred points through both paths (in memory, and row blocks with search_max=300)."
    from deccal import Embedding, RBF, DimFreeDeCal
    px, y = make_data(300, 1)
    DimFreeDeCal(RBF(0.5), max_rounds=2, **FIT_KW).fit(Embedding.from_points(px), y)
    px, y = make_data(600, 2)
    DimFreeDeCal(RBF(0.5), max_rounds=2, search_max=300, exact_max=100, **FIT_KW).fit(Embedding.from_points(px), y)


def sources(names=('dimfree.py', 'audit.py', 'dask.py')):
    "sha256 (12 hex digits) of the deccal modules this process loaded (a change of the checkout mid-run shows here)."
    return {f: source_sha(f) for f in names}


def fit_one(n, max_rank=300, rounds=FIT_ROUNDS):
    "In this (fresh) process: a warm-up, then one timed fit of `rounds` rounds at n; its figures and timers."
    from deccal import Embedding, RBF, DimFreeDeCal
    src = sources()
    P = dict(on=False, t0=0.0, rss0=0, round=0)
    def progress(event):
        """A PROGRESS line on stdout (the parent reads them if it has to stop this run): elapsed time, peak memory so
        far."""
        if not P['on']: return
        P['round'] += event == 'round'
        print('PROGRESS ' + json.dumps(dict(event=event, round=P['round'], seconds=time.perf_counter() - P['t0'],
                                            peak_gb=(hwm_bytes() - P['rss0']) / GB)), flush=True)
    T = instrument(progress)
    warm_up()
    px, y = make_data(n)
    pred = Embedding.from_points(px)
    cal = DimFreeDeCal(RBF(0.5), max_rounds=rounds, max_rank=max_rank, **FIT_KW)
    T.clear()
    reset_hwm(); rss0 = rss_bytes()
    c0 = cpu_snapshot()
    t0 = time.perf_counter()
    P.update(on=True, t0=t0, rss0=rss0)
    cal.fit(pred, y)
    secs = time.perf_counter() - t0
    c1 = cpu_snapshot()
    peak = hwm_bytes() - rss0
    others = max(0.0, c1[2] - c0[2] - (c1[1] - c0[1])) / ((c1[0] - c0[0]) * len(os.sched_getaffinity(0)))
    R = len(cal.all_rounds_)
    h = cal.history_
    audits = [r['audit_value'] for r in h if r.get('audit_value') is not None]
    return dict(n=n, max_rank=max_rank, max_rounds=rounds, seconds=secs, rounds=R, rank=int(cal.rank_),
                peak_gb=peak / GB, peak_over_nr8=peak / (n * cal.rank_ * 8), square_loss=h[-1]['square_loss'],
                square_loss_0=h[0]['square_loss'], base_square_loss=cal.base_square_loss_,
                audit_first=audits[0] if audits else None, audit_last=audits[-1] if audits else None,
                stop_reason=cal.stop_reason_, path='rows' if n > cal.search_max else 'in-memory',
                captured_trace=cal.captured_trace_,
                basis_m=int(cal.basis_.m), cpu_s=c1[1] - c0[1], others_during=others, timers=dict(T), sources=src)


def blas_env(blas):
    "The environment of a subprocess: OpenBLAS limited to `blas` threads (None: OpenBLAS's default, one per core)."
    env = dict(os.environ)
    if blas: env['OPENBLAS_NUM_THREADS'] = str(blas)
    return env


# ----------------------------------------------------------------------------- audit
def audit_one(n, method):
    "In this (fresh) process: warm-up audits, then one timed audit at n with `method`; its figures."
    from deccal import Embedding, RBF, audit
    k = RBF(0.5)
    px, y = make_data(300, 1)
    for m in ('exact', 'randomized', 'landmarks'):                                   # warm-up
        audit(Embedding.from_points(px), y, k, method=m, **AUDIT_KW)
    px, y = make_data(n)
    pred = Embedding.from_points(px)
    reset_hwm(); rss0 = rss_bytes()
    t0 = time.perf_counter()
    r = audit(pred, y, k, method=method, **AUDIT_KW)
    secs = time.perf_counter() - t0
    info = {k: r.info.get(k) for k in ('method', 'rank_P', 'rank_R', 'landmarks', 'search_rows', 'passes')}
    return dict(n=n, seconds=secs, peak_gb=(hwm_bytes() - rss0) / 1e9, value=r.value,
                loss_atoms=int(r.loss.atoms.shape[0]), **info)


# ----------------------------------------------------------------------------- transform
def measure(fn):
    """Run fn(): its result, wall seconds, peak memory above the RSS before it (None if VmHWM cannot be reset), other
    processes' CPU share, and this process's CPU seconds."""
    ok = reset_hwm(); r0 = rss_bytes(); s0 = cpu_snapshot()
    out = fn()
    s1 = cpu_snapshot()
    wall = s1[0] - s0[0]
    other = max(0.0, (s1[2] - s0[2]) - (s1[1] - s0[1])) / (wall * len(os.sched_getaffinity(0)))
    return out, wall, (hwm_bytes() - r0) if ok else None, other, s1[1] - s0[1]


# ----------------------------------------------------------------------------- subprocess steps
def do_fit(path):
    "The transform's calibrator: a warm-up fit, then the timed fit of ROUNDS rounds on N_FIT points, saved to `path`."
    from deccal import DimFreeDeCal, RBF
    import deccal.persist  # noqa: F401  (it gives DimFreeDeCal its save)
    k = RBF(0.5)
    wp, wy = embedded_data(300, seed=1)
    DimFreeDeCal(k, **{**TRANSFORM_PARAMS, 'max_rounds': 2}).fit(wp, wy).transform(wp)          # warm-up
    pred, Y = embedded_data(N_FIT)
    cal, secs, peak, other, cpu = measure(lambda: DimFreeDeCal(k, **TRANSFORM_PARAMS).fit(pred, Y))
    T = len(cal.rounds_)
    h = cal.history_
    vals = [r['audit_value'] for r in h if r.get('audit_value') is not None]
    res = dict(seconds=secs, cpu_seconds=cpu, peak_bytes=peak, others_busy=other, rounds=T,
               all_rounds=len(cal.all_rounds_), stop_reason=cal.stop_reason_, first_audit=vals[0], last_audit=vals[-1],
               target=0.75 * TRANSFORM_PARAMS['eps'],
               square_loss_first=h[0]['square_loss'], square_loss_last=h[-1]['square_loss'], basis_atoms=cal.basis_.m,
               basis_outcome_atoms=len(cal.basis_.Y), basis_prediction_atoms=cal.basis_.P.n, rank=cal.rank_,
               captured_trace=cal.captured_trace_)
    if T == ROUNDS:
        # check: the transform of the calibration sample reproduces the fit's last square loss
        res['check_square_loss'] = float(cal.transform(pred).sq_error(k, Y).mean())
        cal.save(path)
    return res


def new_points(m, seed):
    "m fresh point forecasts 0.8 x, x ~ N(0, I_3) from `seed`."
    from deccal import Embedding
    return Embedding.from_points(0.8 * np.random.default_rng(seed).standard_normal((m, 3)))


def load(path, T):
    "The saved calibrator, truncated to T rounds."
    from deccal import load_calibrator
    cal = load_calibrator(path)
    return cal if T == len(cal.rounds_) else cal.truncated(T)


def do_transform(path, T, m):
    "Time REPEATS transforms of m fresh points by the saved calibrator truncated to T rounds (after a warm-up)."
    cal = load(path, T)
    cal.transform(new_points(M_WARM, SEED + 2))                  # warm-up (and the stacked rounds, cached)
    q = new_points(m, SEED + 3)
    runs = []
    for _ in range(REPEATS):
        out, secs, peak, other, cpu = measure(lambda: cal.transform(q))
        out_bytes = out.coef.nbytes + out.s.nbytes + out.gamma.nbytes + out.V.nbytes + out.F.nbytes
        shape = list(out.coef.shape)
        c0, t0 = time.process_time(), time.perf_counter()
        theta_shape = list(out.theta.shape)                   # theta built on this read (most callers never read it)
        theta_s, theta_cpu = time.perf_counter() - t0, time.process_time() - c0
        del out
        runs.append(dict(seconds=secs, cpu_seconds=cpu, peak_bytes=peak, others_busy=other, theta_seconds=theta_s,
                         theta_cpu_seconds=theta_cpu, theta_shape=theta_shape))
    secs = sorted(r['seconds'] for r in runs)
    return dict(T=T, TA=T * TRANSFORM_PARAMS['n_actions'], m=m, runs=runs, seconds=float(np.median(secs)), best=secs[0],
                points_per_s=m / float(np.median(secs)), best_points_per_s=m / secs[0],
                peak_bytes=max((r['peak_bytes'] or 0) for r in runs), out_bytes=out_bytes, coef_shape=shape,
                theta_seconds=float(np.median([r['theta_seconds'] for r in runs])),
                others_busy=max(r['others_busy'] for r in runs), basis_atoms=cal.basis_.m)
