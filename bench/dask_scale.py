"""Benchmark: the Dask path of `DimFreeDeCal.fit` and `audit` against the in-memory path (overhead, communication),
and a cost model for 10^9 rows.

Prints figures; it is not a test.  Usage:

    python bench/dask_scale.py                              # n = 1e5 (chunks 25,000) and 3e5 (chunks 50,000);
                                                            # writes bench/dask_scale_results.md
    python bench/dask_scale.py --n 100000 --chunk 25000     # one chosen size, nothing written
    python bench/dask_scale.py --cache /tmp/dask_scale.jsonl  # keep each finished case there; a rerun skips them

Scenario (as bench/fit_scale.py and bench/audit_scale.py): point forecasts in R^3, RBF gamma = 0.5, 5 actions,
beta = 10, R1 = 1; the fit with eps = 0.02, step='line-search', early_stopping=False and max_rounds = 10 (every
other parameter at its default: max_rank 300, search_max 20,000, seed 0); the audit with method='landmarks' and
its other defaults.  Data: x ~ N(0, I_3), predictions 0.8 x, outcomes x + 0.3 N(0, I_3); the same arrays (same
seed) in memory and, split into row chunks with `dask.array.from_array` and persisted on the workers before any
timing, on Dask (`DaskEmbedding.from_points`).

Each n runs in a fresh subprocess (`--one N --chunk C`) which starts `distributed.LocalCluster(n_workers=2,
threads_per_worker=1, dashboard_address=None)` and a `Client` (inside the `if __name__ == '__main__':` guard;
the workers get OPENBLAS/OMP_NUM_THREADS=1 from distributed's nanny; the subprocess, i.e. the client and the
in-memory runs, gets OPENBLAS_NUM_THREADS=1 too unless `--blas-threads` says otherwise).
Warm-up: in-memory and Dask fits and audits on a few hundred points (Numba compiles or loads its cache in the
client and in both workers).  Then, in this order: Dask's per-task overhead (1,000 no-op delayed tasks), the
in-memory fit, the Dask fit with max_rounds=0 (its one-off setup: the R2 pass, the basis, building and persisting
the row state, one square-loss pass), the Dask fit, the in-memory audit, the Dask audit.  Measured: wall time;
the client's `search_groups` time and its time stacking the search rows the blocks sent (`stack_search`;
deccal.dimfree's functions wrapped with timers in the client: no library code is changed); `dask_traffic_` /
`info['traffic']` (deccal's own count of the payload bytes,
`dask.sizeof`, sent to and received from the blocks); the bytes through the loopback interface (psutil; all of
the cluster's traffic -- client, scheduler and workers talk over 127.0.0.1 -- including Dask's own messages, and
anything else on this machine using loopback); the workers' peak memory (VmHWM reset before the fit); CPU used
by processes outside this cluster during each call ("others during").  The cost model for 10^9 rows on N
workers is computed from these measurements; its assumptions are written out in the results.
"""
from __future__ import annotations
import argparse, json, os, subprocess, sys, time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
from _measure import (rss_bytes, hwm_bytes, reset_hwm, other_busy, machine_info, cpu_snapshot, loadavg,   # noqa: E402
                      wait_idle)
from _scale import make_data, instrument, warm_up, sources, blas_env                                     # noqa: E402

CASES = [(100_000, 25_000), (300_000, 50_000)]
FIT = dict(n_actions=5, beta=10.0, R1=1.0, eps=0.02, step='line-search', early_stopping=False)
AUD = dict(n_actions=5, beta=10.0, R1=1.0, method='landmarks')
ROUNDS = 10
TIMEOUT = 60 * 60
IDLE_WAIT = 60            # seconds: before each case, wait up to this long for other processes to use < 10% of the CPUs
GB = 1e9
OUT = os.path.join(REPO, 'bench', 'dask_scale_results.md')


# ----------------------------------------------------------------------------- run on the workers (module-level:
# cloudpickled by value from __main__; the workers import _measure by name: a LocalCluster's processes inherit the
# client's sys.path, bench/ included)
def _noop(i): return i


def _worker_mem():
    "(VmHWM, VmRSS) in bytes, OPENBLAS_NUM_THREADS, process CPU seconds."
    t = os.times()
    return dict(hwm=hwm_bytes(), rss=rss_bytes(), blas=os.environ.get('OPENBLAS_NUM_THREADS'), cpu=t.user + t.system)


# ----------------------------------------------------------------------------- the subprocess
class Meter:
    "Wall time, CPU of the client and of the workers, loopback bytes, and other processes' CPU around one call."
    def __init__(self, client): self.client = client

    def _snap(self):
        import psutil
        lo = psutil.net_io_counters(pernic=True).get('lo')
        w = self.client.run(_worker_mem)
        return cpu_snapshot(), sum(v['cpu'] for v in w.values()), (lo.bytes_sent if lo else 0)

    def __call__(self, f, *a, reset=False, **k):
        if reset:
            self.client.run(reset_hwm); reset_hwm()
        rss0, w0 = rss_bytes(), self.client.run(_worker_mem)
        s0 = self._snap()
        t0 = time.perf_counter()
        out = f(*a, **k)
        secs = time.perf_counter() - t0
        s1 = self._snap()
        w1 = self.client.run(_worker_mem)
        wall = s1[0][0] - s0[0][0]
        own = (s1[0][1] - s0[0][1]) + (s1[1] - s0[1])
        others = max(0.0, s1[0][2] - s0[0][2] - own) / (wall * len(os.sched_getaffinity(0)))
        m = dict(seconds=secs, client_cpu=s1[0][1] - s0[0][1], workers_cpu=s1[1] - s0[1], loopback_bytes=s1[2] - s0[2],
                 others_during=others, client_peak_gb=(hwm_bytes() - rss0) / GB if reset else None,
                 workers_peak_gb=[(w1[k]['hwm'] - w0[k]['rss']) / GB for k in sorted(w1)] if reset else None,
                 workers_rss_gb=[w1[k]['rss'] / GB for k in sorted(w1)])
        return out, m


def one(n, chunk, rounds=ROUNDS):
    import dask, dask.array as da
    from distributed import LocalCluster, Client
    import deccal.dask as ddk
    from deccal import Embedding, RBF, DimFreeDeCal, audit
    from deccal.dask import DaskEmbedding
    src = sources()
    from _measure import blas_threads
    client_blas = blas_threads()
    marks = []                   # (time, search s, gather s so far) at each round's patch: the steady per-round figures
    def mark(event):
        if event == 'round': marks.append((time.perf_counter(), T.get('search', 0.0), T.get('gather', 0.0)))
    T = instrument(mark)                           # client-side timers: search_groups, stack_search, make_basis, whiten
    dmap = ddk._DaskRows.map
    def dask_map(self, method, *args):
        out = dmap(self, method, *args)
        if method == 'patch': mark('round')
        return out
    ddk._DaskRows.map = dask_map
    bt = {}
    build = ddk._DaskRows.build
    def dask_build(*a, **k):
        t = time.perf_counter()
        try: return build(*a, **k)
        finally: bt['seconds'] = bt.get('seconds', 0.0) + time.perf_counter() - t
    ddk._DaskRows.build = dask_build
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
    client = Client(cluster)
    meter = Meter(client)
    blas = sorted({v['blas'] for v in client.run(_worker_mem).values()}, key=str)
    k = RBF(0.5)

    def on_dask(px, y, c):
        dpx, dy = client.persist(da.from_array(px, chunks=(c, 3))), client.persist(da.from_array(y, chunks=(c, 3)))
        from distributed import wait
        wait([dpx, dy])
        return DaskEmbedding.from_points(dpx), dy

    # warm-up: both paths, in the client and in the workers
    warm_up()
    px, y = make_data(600, 2)
    dp, dyy = on_dask(px, y, 300)
    DimFreeDeCal(k, max_rounds=2, search_max=300, exact_max=100, **FIT).fit(dp, dyy)
    audit(dp, dyy, k, **AUD)
    audit(Embedding.from_points(px), y, k, **AUD)
    dask.compute(*[dask.delayed(_noop)(i) for i in range(50)])

    t0 = time.perf_counter()
    dask.compute(*[dask.delayed(_noop)(i) for i in range(1000)])
    per_task = (time.perf_counter() - t0) / 1000

    px, y = make_data(n)
    pred = Embedding.from_points(px)
    t0 = time.perf_counter(); dpred, dy = on_dask(px, y, chunk); persist_s = time.perf_counter() - t0
    res = dict(n=n, chunk=chunk, blocks=len(dpred.chunks), rounds_cap=rounds, per_task_s=per_task, persist_s=persist_s,
               workers_blas=blas, client_blas=client_blas, sources=src)

    def fit_record(cal, m, timers):
        h = cal.history_
        return dict(m, rounds=len(cal.all_rounds_), rank=int(cal.rank_),
                    audit_values=[r['audit_value'] for r in h if r.get('audit_value') is not None],
                    square_losses=[r['square_loss'] for r in h], search_s=timers.get('search', 0.0),
                    search_calls=timers.get('search_calls', 0), gather_s=timers.get('gather', 0.0),
                    basis_s=timers.get('basis', 0.0) + timers.get('whiten', 0.0),
                    build_rows_s=timers.get('build_rows', 0.0), traffic=getattr(cal, 'dask_traffic_', None),
                    stop_reason=cal.stop_reason_, marks=list(marks))

    T.clear(); marks.clear()
    cal, m = meter(DimFreeDeCal(k, max_rounds=rounds, **FIT).fit, pred, y, reset=True)
    res['fit_memory'] = fit_record(cal, m, T); del cal

    T.clear(); bt.clear(); marks.clear()
    cal, m = meter(DimFreeDeCal(k, max_rounds=0, **FIT).fit, dpred, dy)
    res['fit_dask_setup'] = dict(fit_record(cal, m, T), dask_build_call_s=bt.get('seconds', 0.0)); del cal

    T.clear(); bt.clear(); marks.clear()
    cal, m = meter(DimFreeDeCal(k, max_rounds=rounds, **FIT).fit, dpred, dy, reset=True)
    res['fit_dask'] = dict(fit_record(cal, m, T), dask_build_call_s=bt.get('seconds', 0.0)); del cal

    a, m = meter(audit, pred, y, k, reset=True, **AUD)
    res['audit_memory'] = dict(m, value=a.value, rank_P=a.info.get('rank_P'), rank_R=a.info.get('rank_R'),
                               search_rows=a.info.get('search_rows'))
    a, m = meter(audit, dpred, dy, k, reset=True, **AUD)
    res['audit_dask'] = dict(m, value=a.value, rank_P=a.info.get('rank_P'), rank_R=a.info.get('rank_R'),
                             search_rows=a.info.get('search_rows'), traffic=a.info.get('traffic'),
                             blocks=a.info.get('blocks'))
    client.close(); cluster.close()
    return res


# ----------------------------------------------------------------------------- the parent: tables and the cost model
def run(args, timeout=TIMEOUT, blas=1):
    out = subprocess.run([sys.executable, __file__] + args, capture_output=True, text=True, timeout=timeout,
                         env=blas_env(blas))
    if out.returncode: raise RuntimeError(out.stderr[-4000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def per_round(r):
    "Per-round figures of one case: times, traffic (setup subtracted), loopback bytes."
    fm, fd, su = r['fit_memory'], r['fit_dask'], r['fit_dask_setup']
    R, B = fd['rounds'], r['blocks']
    tr, tr0 = fd['traffic'], su['traffic']
    out = dict(R=R, B=B,
               mem_s=fm['seconds'] / fm['rounds'], dask_s=fd['seconds'] / R,
               mem_search=fm['search_s'] / fm['rounds'], dask_search=fd['search_s'] / R,
               mem_gather=fm['gather_s'] / fm['rounds'], dask_gather=fd['gather_s'] / R,
               sent=tr['sent'] / R, received=tr['received'] / R,                    # as the brief asks: totals / rounds
               # the setup's part taken out
               sent_rounds=(tr['sent'] - tr0['sent']) / R, received_rounds=(tr['received'] - tr0['received']) / R,
               lo=fd['loopback_bytes'] / R, lo_rounds=(fd['loopback_bytes'] - su['loopback_bytes']) / R)
    mem_setup = fm['basis_s'] + fm['build_rows_s']
    # the work on every row, per round
    out['mem_rows'] = (fm['seconds'] - mem_setup - fm['search_s'] - fm['gather_s']) / fm['rounds']
    # the same on Dask (setup: the max_rounds=0 fit)
    out['dask_rows'] = (fd['seconds'] - su['seconds'] - fd['search_s'] - fd['gather_s']) / R
    # steady state: between consecutive patches (round t's patch to round t+1's)
    for key, f in (('mem', fm), ('dask', fd)):
        mk = np.array(f.get('marks') or [])
        if len(mk) >= 3:
            d = np.diff(mk, axis=0)
            out[key + '_steady'] = float(d[:, 0].mean())
            # replaces the estimate above: time per round minus search and gathering
            out[key + '_rows'] = float((d[:, 0] - d[:, 1] - d[:, 2]).mean())
    a, b = fm['audit_values'], fd['audit_values']
    L = min(len(a), len(b))
    out['max_rel_audit'] = float(max(abs(x - y) / abs(x) for x, y in zip(a[:L], b[:L]))) if L else float('nan')
    out['rel_sq'] = abs(fm['square_losses'][-1] - fd['square_losses'][-1]) / fm['square_losses'][-1]
    return out


def cost_model(res):
    "The 10^9-row model: every input from the measurements (see the assumptions written beside it)."
    pr = {r['n']: per_round(r) for r in res}
    big = max(pr); P = pr[big]; rb = next(r for r in res if r['n'] == big)
    n_big = big
    # per-row work per round on 2 cores: the in-memory time per round without the search and the gathering, divided by n
    # (largest n); the Dask figure (2 workers x 1 thread, scheduling included) and the plain per-round time / n are kept
    # for comparison
    t_row_mem, t_row_dask, t_row_all = P['mem_rows'] / n_big, P['dask_rows'] / n_big, P['mem_s'] / n_big
    t_row = t_row_mem
    su = rb['fit_dask_setup']                    # setup per row on 2 cores (the max_rounds=0 Dask fit minus the
                                                 # client's basis), and the basis
    t_setup_row = max(su['seconds'] - su['basis_s'], 0) / n_big
    t_basis = su['basis_s']
    t_search = float(np.mean([pr[n]['dask_search'] for n in pr] + [pr[n]['mem_search'] for n in pr]))
    # stacking the 20,000 search rows in the client (in-memory figure)
    t_gather_client = float(np.mean([pr[n]['mem_gather'] for n in pr]))
    # traffic per round = a + b * blocks (least squares; exact with two cases)
    Bs = np.array([pr[n]['B'] for n in sorted(pr)], float)
    sent = np.array([pr[n]['sent_rounds'] for n in sorted(pr)])
    recv = np.array([pr[n]['received_rounds'] for n in sorted(pr)])
    if len(Bs) > 1 and np.ptp(Bs) > 0:
        bs, as_ = np.polyfit(Bs, sent, 1); br, ar = np.polyfit(Bs, recv, 1)
    else:
        rank0 = rb['fit_dask']['rank']; ar = 20_000 * 2 * rank0 * 8.0
        as_, bs, br = 0.0, sent[0] / Bs[0], max(recv[0] - ar, 0) / Bs[0]
    per_task_meas = float(np.median([r['per_task_s'] for r in res]))
    per_task = 1e-3                       # distributed's documented ~1 ms per task (a scheduler with a core of its own)
    rank = rb['fit_dask']['rank']
    # measured: worker peak / (its rows x r x 8)
    peak_ratio = [p / (r['n'] / 2 * rank * 8 / GB) for r in res for p in r['fit_dask']['workers_peak_gb']]
    n9, chunk9 = 1e9, 250_000
    B9 = int(n9 / chunk9)
    tasks_round = 3 * B9                     # per block and round: round_start (square loss, search rows), stats, patch
    bw = 1.25e9                                   # bytes/s: the client's link, 10 Gbit/s
    lat = 2 * 0.01                                # two synchronous client <-> cluster exchanges per round, 10 ms each
    rows = []
    for N in (10, 100, 1000):
        row_s = t_row * n9 / N                    # N workers of 2 cores, each at this machine's measured 2-core rate
        comm_bytes = (as_ + bs * B9) + (ar + br * B9)
        comm_s = comm_bytes / bw
        sched_s, sched_meas = tasks_round * per_task, tasks_round * per_task_meas
        base = t_search + t_gather_client + row_s + comm_s + lat
        # the R2 pass and the build (2 tasks per block), + 1 s to ship the basis
        setup = t_basis + t_setup_row * n9 / N + 2 * B9 * per_task + 1.0
        state = 3 * n9 * rank * 8 / N
        # + per-row vectors and raw data + one block's old coordinates per core
        peak = state + n9 / N * 96 + 2 * chunk9 * rank * 8
        rows.append(dict(N=N, blocks=B9, blocks_per_worker=B9 / N, search_s=t_search, gather_s=t_gather_client,
                         rows_s=row_s, comm_bytes=comm_bytes, comm_s=comm_s, sched_s=sched_s, sched_meas_s=sched_meas,
                         latency_s=lat, round_s=base + sched_s, round_meas_s=base + sched_meas, setup_s=setup,
                         rounds20_s=setup + 20 * (base + sched_s), rounds20_meas_s=setup + 20 * (base + sched_meas),
                         state_gb_per_worker=state / GB, peak_gb_per_worker=peak / GB))
    inputs = dict(t_row_mem=t_row_mem, t_row_dask=t_row_dask, t_row_all=t_row_all, t_row=t_row, t_setup_row=t_setup_row,
                  t_basis=t_basis, t_search=t_search, t_gather_client=t_gather_client, sent_a=as_, sent_b=bs, recv_a=ar,
                  recv_b=br, per_task=per_task, per_task_measured=per_task_meas, rank=rank, n=n9, chunk=chunk9,
                  blocks=B9, tasks_round=tasks_round, bandwidth=bw, latency=lat, from_n=n_big,
                  worker_peak_ratio=peak_ratio, mem_steady=P.get('mem_steady'), dask_steady=P.get('dask_steady'))
    return inputs, rows


def hb(b):
    for unit, s in (('GB', 1e9), ('MB', 1e6), ('kB', 1e3)):
        if abs(b) >= s: return f"{b / s:.2f} {unit}"
    return f"{b:.0f} B"


def write(res):
    from deccal.runtime import atomic_write
    L = ['# The Dask path against the in-memory path: overhead, communication, and a cost model for 10^9 rows', '',
         machine_info(('dimfree.py', 'dask.py', 'audit.py')), '',
         'Produced by `python bench/dask_scale.py`. `distributed.LocalCluster(n_workers=2, threads_per_worker=1)` on '
         'the same 2 cores as the client. Fit: eps 0.02, line search, max_rounds 10, early_stopping=False, other '
         "parameters at their defaults (max_rank 300, search_max 20,000, seed 0). Audit: method='landmarks', defaults "
         'otherwise. The same data and seed in memory and on Dask (input chunks persisted on the workers before '
         'timing). Traffic = deccal\'s own count (`dask_traffic_`, `info[\'traffic\']`, payload bytes by '
         "`dask.sizeof`); loopback = all bytes through 127.0.0.1 during the call (client, scheduler and workers, "
         f"Dask's messages included). Workers' OPENBLAS_NUM_THREADS: {res[0]['workers_blas']}; the client's (where the "
         f"in-memory fit and audit and every search run): {res[0].get('client_blas_threads') or 'OpenBLAS default'} "
         f"(OpenBLAS reports: {res[0].get('client_blas')}) -- one thread, as the workers, because with OpenBLAS's "
         "default 2 threads the search is up to ten times slower on these shared cores (bench/fit_scale_results.md).",
         '', '## Fit: in memory against Dask', '',
         '| n | blocks (rows) | in memory s | Dask s | Dask / memory | s/round memory / Dask | search s/round memory / '
         'Dask | gather s/round memory / Dask | rows s/round memory / Dask | Dask setup s (max_rounds=0) | rounds | '
         'max rel. diff of audit values | rel. diff final square loss | others during (memory / Dask) |',
         '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    for r in res:
        p, fm, fd = per_round(r), r['fit_memory'], r['fit_dask']
        L.append(f"| {r['n']:,} | {r['blocks']} ({r['chunk']:,}) | {fm['seconds']:.1f} | {fd['seconds']:.1f} | "
                 f"{fd['seconds'] / fm['seconds']:.2f} | {p['mem_s']:.2f} / {p['dask_s']:.2f} | {p['mem_search']:.2f} "
                 f"/ {p['dask_search']:.2f} | {p['mem_gather']:.3f} / {p['dask_gather']:.3f} | {p['mem_rows']:.2f} / "
                 f"{p['dask_rows']:.2f} | {r['fit_dask_setup']['seconds']:.1f} | {fm['rounds']} / {fd['rounds']} | "
                 f"{p['max_rel_audit']:.2e} | {p['rel_sq']:.2e} | {fm['others_during']:.0%} / "
                 f"{fd['others_during']:.0%} |")
    L += ['', '"rows s/round" = the time between consecutive patches minus the search and the gathering of the search '
          "rows in between, averaged over the rounds: the work done on every row per round (square loss, the rule's "
          'statistics, the patch and projection; on Dask also the scheduling and serialization). "s/round" = total '
          'time / rounds (setup included).', '',
          '## Fit: communication per round', '',
          '| n | blocks | sent / round | received / round | sent / (round, block) | received / (round, block) | setup: '
          'sent / received (max_rounds=0 fit) | per round without the setup: sent / received | loopback / round (all, '
          'without setup) | workers peak GB (each) | client peak GB (in memory fit) |',
          '|---|---|---|---|---|---|---|---|---|---|---|']
    for r in res:
        p, fd, su = per_round(r), r['fit_dask'], r['fit_dask_setup']
        L.append(f"| {r['n']:,} | {r['blocks']} | {hb(p['sent'])} | {hb(p['received'])} | {hb(p['sent'] / p['B'])} | "
                 f"{hb(p['received'] / p['B'])} | {hb(su['traffic']['sent'])} / {hb(su['traffic']['received'])} | "
                 f"{hb(p['sent_rounds'])} / {hb(p['received_rounds'])} | {hb(p['lo'])} ({hb(p['lo_rounds'])}) | "
                 f"{', '.join(f'{x:.2f}' for x in fd['workers_peak_gb'])} | {r['fit_memory']['client_peak_gb']:.2f} |")
    L += ['', '## Audit (landmarks): in memory against Dask', '',
          '| n | in memory s | Dask s | Dask / memory | value memory | value Dask | rel. diff | ranks P / R | traffic '
          'sent / received | loopback | others during (memory / Dask) |',
          '|---|---|---|---|---|---|---|---|---|---|---|']
    for r in res:
        am, ad = r['audit_memory'], r['audit_dask']
        L.append(f"| {r['n']:,} | {am['seconds']:.1f} | {ad['seconds']:.1f} | {ad['seconds'] / am['seconds']:.2f} | "
                 f"{am['value']:.5f} | {ad['value']:.5f} | {abs(ad['value'] - am['value']) / am['value']:.2e} | "
                 f"{ad['rank_P']} / {ad['rank_R']} | {hb(ad['traffic']['sent'])} / {hb(ad['traffic']['received'])} | "
                 f"{hb(ad['loopback_bytes'])} | {am['others_during']:.0%} / {ad['others_during']:.0%} |")
    L += ['', "Dask's overhead per task on this LocalCluster (1,000 no-op delayed tasks through `dask.compute`): "
          + ', '.join(f"{r['per_task_s'] * 1e3:.2f} ms (n = {r['n']:,} run)" for r in res)
          + '. Persisting the input chunks: '
          + ', '.join(f"{r['persist_s']:.1f} s (n = {r['n']:,})" for r in res) + '.', '']
    L += cost_lines(res)
    L += ['```json', json.dumps(dict(cases=res, per_round={r['n']: per_round(r) for r in res},
                                     cost_model=dict(zip(('inputs', 'rows'), cost_model(res))))), '```', '']
    atomic_write(OUT, lambda f: f.write('\n'.join(L).encode()))


def cost_lines(res):
    I, rows = cost_model(res)
    L = ['## Cost model: a 10^9-row fit on N workers of 2 cores', '',
         'Per round, the fit (`run_rounds` on Dask blocks) does, in sequence: one pass over every block '
         '(`Rows.round_start`) that returns its square loss and its share of the 20,000 search rows (S and T, 2 r '
         "numbers each); the search (L-BFGS, 2 random starts + the previous witness) on the client; one pass for the "
         "rule's statistics ((A, r) + (A, A) per block back); one patch pass (U and the directions, (A, r) each, to "
         'every block). So wall time per round = search and stacking the search rows (client; independent of n and N) '
         '+ rows (the work on every row, divided among the workers) + communication (client link) + scheduling (per '
         'task) + latency of the two synchronous exchanges.', '',
         'Measured inputs (this machine, from the runs above):', '',
         f"- work on every row per round: {I['t_row_mem'] * 1e6:.2f} us/row = (in-memory time per round - search - "
         f"gathering the search rows) / n at n = {I['from_n']:,}, between consecutive patches (the plain in-memory "
         f"time per round / n is {I['t_row_all'] * 1e6:.2f} us/row, but that counts the search, which does not grow "
         "with n, and the setup as row work); on Dask with 2 workers x 1 thread the same work took "
         f"{I['t_row_dask'] * 1e6:.2f} us/row (scheduling and serialization included). The model uses the in-memory "
         "figure for a 2-core worker;",
         f"- the search per round on the client: {I['t_search']:.2f} s (mean over the four fits; it runs on 20,000 "
         f"rows whatever n is), and stacking the search rows {I['t_gather_client']:.2f} s;",
         f"- traffic per round (setup taken out) = a + b x blocks: sent {hb(I['sent_a'])} + {hb(I['sent_b'])} x "
         f"blocks, received {hb(I['recv_a'])} + {hb(I['recv_b'])} x blocks (fitted through the cases; the fixed part "
         f"received is the search rows, 20,000 x 2 r x 8 bytes = {hb(20_000 * 2 * I['rank'] * 8)});",
         f"- Dask's overhead per task: {I['per_task_measured'] * 1e3:.2f} ms measured on this LocalCluster (1,000 "
         "no-op tasks; scheduler, client, two workers and other people's jobs on 2 cores); the model uses 1 ms "
         "(distributed's documentation: 'Each task suffers about 1ms of overhead', "
         'https://distributed.dask.org/en/latest/) and shows the measured figure as a pessimistic variant;',
         f"- setup: the basis on the client {I['t_basis']:.1f} s (constant), building the row state "
         f"{I['t_setup_row'] * 1e6:.2f} us/row per 2 cores (the max_rounds=0 Dask fit at n = {I['from_n']:,} minus its "
         "basis time);",
         f"- rank r = {I['rank']}; the workers' measured peak / (their rows x r x 8): "
         f"{', '.join(f'{x:.2f}' for x in I['worker_peak_ratio'])}.", '',
         'Assumptions:', '',
         '1. Each worker has 2 cores and processes rows at the in-memory rate measured here on 2 cores; the row work '
         'divides evenly over the N workers (equal blocks, no stragglers) and does not overlap the search.',
         f"2. Blocks of {I['chunk']:,} rows: {I['blocks']:,} blocks (one block's state, 3 x {I['chunk']:,} x r x 8 "
         f"bytes = {3 * I['chunk'] * I['rank'] * 8 / GB:.1f} GB); {I['tasks_round']:,} tasks per round (3 per block), "
         'all through one scheduler, serially, at the per-task overhead above; the traffic per block per round stays '
         'as measured (it depends on A and r, not on the rows in a block).',
         f"3. All traffic passes the client's link at {I['bandwidth'] * 8 / 1e9:.0f} Gbit/s; the workers' links are "
         "not the bottleneck (each block exchanges tens of kB per round). Two synchronous exchanges per round at "
         f"{I['latency'] / 2 * 1e3:.0f} ms each.",
         '4. The search costs what it cost here (same r, A, search_max, n_starts, max_iter; the L-BFGS iteration '
         'counts do not grow with n) on a client like this machine with one BLAS thread.',
         '5. The data are already on the workers in row chunks (reading them is not counted); nothing spills to disk.',
         "6. Memory per worker: the state 3 n r 8 / N bytes, plus about 96 bytes per row of per-row vectors and raw "
         "data, plus one block's old coordinates per core while it is patched (2 x chunk x r x 8 bytes).",
         "7. 20 rounds run (no early stop), plus the one-off setup (the R2 pass, the basis on the client, building the "
         "state at the per-row rate above / N, 2 tasks per block, 1 s to ship the basis).", '',
         '| N workers | blocks per worker | search + stacking s | rows s | traffic per round | comm. s | scheduling s '
         '(1 ms / measured) | per round s (1 ms / measured) | setup s | 20 rounds + setup (1 ms / measured) | state '
         'per worker | peak per worker (est.) |',
         '|---|---|---|---|---|---|---|---|---|---|---|---|']
    for r in rows:
        L.append(f"| {r['N']:,} | {r['blocks_per_worker']:,.0f} | {r['search_s'] + r['gather_s']:.1f} | "
                 f"{r['rows_s']:.1f} | {hb(r['comm_bytes'])} | {r['comm_s']:.2f} | {r['sched_s']:.0f} / "
                 f"{r['sched_meas_s']:.0f} | {r['round_s']:.1f} / {r['round_meas_s']:.1f} | {r['setup_s']:.0f} | "
                 f"{r['rounds20_s'] / 60:.1f} min / {r['rounds20_meas_s'] / 60:.1f} min | "
                 f"{r['state_gb_per_worker']:.1f} GB | {r['peak_gb_per_worker']:.1f} GB |")
    r10, r1k = rows[0], rows[-1]
    L += ['', f"Reading: at N = 10 the row work dominates ({r10['rows_s']:.0f} s per round) and each worker would need "
          f"about {r10['peak_gb_per_worker']:.0f} GB of memory (not an ordinary node: a smaller max_rank, or more "
          f"workers). At N = 1,000 the rows take {r1k['rows_s']:.0f} s per round, and the fixed costs dominate: the "
          f"scheduling of {I['tasks_round']:,} tasks per round ({r1k['sched_s']:.0f} s at 1 ms per task; larger blocks "
          f"cut it, at more memory per task) and the client's search ({I['t_search']:.1f} s per round). Communication "
          f"is small at any N: the {hb(I['recv_a'])} of search rows per round plus a few tens of kB per block.", '']
    return L


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument('--n', type=int)
    ap.add_argument('--chunk', type=int)
    ap.add_argument('--one', type=int)
    ap.add_argument('--rounds', type=int, default=ROUNDS)
    ap.add_argument('--blas-threads', type=int, default=1, help="the client's OPENBLAS_NUM_THREADS (0: OpenBLAS's "
                                                                "default); the workers get 1 from distributed")
    ap.add_argument('--cache', help='a JSON-lines file: each finished case is appended to it, and cases already in it '
                                    'are not run again')
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(one(a.one, a.chunk, a.rounds))); return
    cases = [(a.n, a.chunk or max(1, a.n // 4))] if a.n else CASES
    res = []
    done = {}
    if a.cache and os.path.exists(a.cache):
        with open(a.cache) as f:
            for line in f:
                q = json.loads(line); done[(q['n'], q['chunk'], q['rounds_cap'], q.get('client_blas_threads'))] = q
    for n, c in cases:
        key = (n, c, a.rounds, a.blas_threads or None)
        if key in done: r = done[key]; print(f"n = {n:,}: from {a.cache}")
        else:
            waited = wait_idle(IDLE_WAIT)
            busy = other_busy(1.0)
            r = run(['--one', str(n), '--chunk', str(c), '--rounds', str(a.rounds)], blas=a.blas_threads or None)
            r.update(others_busy=busy, waited_idle=waited, loadavg_before=loadavg(),
                     client_blas_threads=a.blas_threads or None)
            if a.cache:
                with open(a.cache, 'a') as f: f.write(json.dumps(r) + '\n')
        res.append(r)
        p = per_round(r)
        fm, fd, am, ad = r['fit_memory'], r['fit_dask'], r['audit_memory'], r['audit_dask']
        print(f"n = {n:,} ({r['blocks']} blocks of {c:,}): fit {fm['seconds']:.1f} s in memory, {fd['seconds']:.1f} s "
              f"on Dask (x{fd['seconds'] / fm['seconds']:.2f}; setup {r['fit_dask_setup']['seconds']:.1f} s); search "
              f"{p['mem_search']:.2f} / {p['dask_search']:.2f} s/round; audit values max rel. diff "
              f"{p['max_rel_audit']:.1e}; traffic/round sent {hb(p['sent'])}, received {hb(p['received'])}; audit "
              f"{am['seconds']:.1f} s / {ad['seconds']:.1f} s, values {am['value']:.5f} / {ad['value']:.5f} (others "
              f"busy {busy:.0%} before; during {fm['others_during']:.0%} / {fd['others_during']:.0%})", flush=True)
    if a.n is None:
        write(res)
        print('wrote', OUT)
    else:
        print('\n'.join(cost_lines(res)) if len(res) else '')


if __name__ == '__main__':
    main()
