"""Benchmark: how far a whole fit moves from run to run, and where the Dask path falls within it.

Prints figures; it is not a test.  Usage:

    python bench/run_to_run.py             # n = 30,000, 10 rounds (a few minutes); writes bench/run_to_run_results.md
    python bench/run_to_run.py --n 100000  # another size, nothing written

A fit is a chain of searches (multi-start L-BFGS), and a search can turn a difference in the last digit of
its input into another local optimum, so two runs of the same fit on the same data need not give the same
rounds. This script measures that spread for the in-memory path, the same fit with 1 and with 2 BLAS threads
(OPENBLAS_NUM_THREADS, each in a fresh process), and runs the fit on Dask (a LocalCluster with 2 worker
processes of 1 thread, blocks of n/4 rows) with the same data and seed. Scenario as bench/audit_scale.py:
x ~ N(0, I_3), point forecasts 0.8 x, outcomes x + 0.3 N(0, I_3), RBF gamma = 0.5, 5 actions, beta = 10,
R1 = 1, eps = 0.02, line search, 10 rounds, early_stopping=False, search_max at its default (20,000), so the
fit takes the row-block path. Reported per run: the audit value of every round and the final square loss;
the spread is the largest relative difference between the two in-memory runs, round by round.
"""
from __future__ import annotations
import argparse, json, os, subprocess, sys, time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
from _measure import machine_info   # noqa: E402

SEED = 20240601
KW = dict(n_actions=5, beta=10.0, R1=1.0, eps=0.02, step='line-search', max_rounds=10, early_stopping=False)


def make_data(n, seed=SEED):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3))
    return 0.8 * x, x + 0.3 * rng.standard_normal((n, 3))


def one(n, mode):
    from deccal import Embedding, RBF, DimFreeDeCal
    px, y = make_data(n)
    t0 = time.perf_counter()
    if mode == 'dask':
        import dask.array as da
        from distributed import LocalCluster, Client
        from deccal.dask import DaskEmbedding
        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cl, Client(cl):
            t0 = time.perf_counter()
            c = DimFreeDeCal(RBF(0.5), **KW).fit(DaskEmbedding.from_points(da.from_array(px, chunks=n // 4)),
                                                 da.from_array(y, chunks=n // 4))
            secs = time.perf_counter() - t0
    else:
        c = DimFreeDeCal(RBF(0.5), **KW).fit(Embedding.from_points(px), y)
        secs = time.perf_counter() - t0
    return dict(mode=mode, n=n, seconds=secs, values=[h['audit_value'] for h in c.history_[:-1]],
                square_loss=c.history_[-1]['square_loss'], rank=c.rank_)


def run(n, mode):
    env = dict(os.environ, OPENBLAS_NUM_THREADS='1' if mode == 'mem1' else '2')
    out = subprocess.run([sys.executable, __file__, '--one', str(n), '--mode', mode], capture_output=True,
                         text=True, env=env)
    if out.returncode: raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument('--n', type=int)
    ap.add_argument('--one', type=int)
    ap.add_argument('--mode', default='mem2')
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(one(a.one, a.mode))); return
    n = a.n or 30_000
    runs = {m: run(n, m) for m in ('mem1', 'mem2', 'dask')}
    for m, r in runs.items():
        print(f"{m}: {r['seconds']:.1f} s, rank {r['rank']}, audit values {np.round(r['values'], 5).tolist()}, final "
              f"square loss {r['square_loss']:.6f}")
    v1, v2, vd = (np.array(runs[m]['values']) for m in ('mem1', 'mem2', 'dask'))
    k = min(len(v1), len(v2), len(vd))
    spread, off = float(np.abs(v1[:k] / v2[:k] - 1).max()), float(np.abs(vd[:k] / v2[:k] - 1).max())
    print(f"per-round audit values: 1 against 2 BLAS threads differ by up to {spread:.2e}; Dask against 2 threads by "
          f"up to {off:.2e}")
    if a.n is None:
        from deccal.runtime import atomic_write
        lines = ['# Run-to-run variation of a fit, and the Dask path', '', machine_info(('dimfree.py', 'dask.py')), '',
                 'Produced by `python bench/run_to_run.py` (n = 30,000; 10 rounds; see the script for the scenario).',
                 '', '| run | seconds | rank | final square loss | audit values per round |', '|---|---|---|---|---|']
        names = dict(mem1='in memory, 1 BLAS thread', mem2='in memory, 2 BLAS threads',
                     dask='Dask, LocalCluster 2 x 1 thread')
        for m, r in runs.items():
            lines.append(f"| {names[m]} | {r['seconds']:.1f} | {r['rank']} | {r['square_loss']:.6f} | "
                         f"{', '.join(f'{v:.5f}' for v in r['values'])} |")
        lines += ['', f"Largest relative difference of a round's audit value: 1 against 2 BLAS threads {spread:.2e}; "
                      f"Dask against in memory (2 threads) {off:.2e}.", '', '```json',
                  json.dumps(dict(runs=runs, spread=spread, dask_off=off)), '```', '']
        atomic_write(os.path.join(REPO, 'bench', 'run_to_run_results.md'), lambda f: f.write('\n'.join(lines).encode()))


if __name__ == '__main__':
    main()
