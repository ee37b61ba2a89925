"""Benchmark: how many points a second one core can transform at T = 50, A = 5, from this machine's own speed at the
transform's arithmetic, beside what the transform reaches (one thread; the default threads, idle and beside a busy
core).

Prints figures; it is not a test.  Usage:

    python bench/transform_bound.py            # prints
    python bench/transform_bound.py --write    # and writes bench/transform_bound_results.md

The calibrator is bench/transform.py's (its `do_fit`: 5,000 points in R^3, RBF gamma = 0.5, 50 rounds of 5 actions).
Its transform does, per point, as `_replay` and `_replay_rows` in deccal/dimfree.py are written:

- h(x): one kernel value per atom of the basis (m atoms);
- [C; D] h(x): 2 T A x m multiply-adds (BLAS dgemm on tiles of 64 points);
- the earlier rounds' share of each round's loss estimates and norms: A^2 T (T - 1) multiply-adds (BLAS between
  chunks of 10 rounds, loops within a chunk);
- each round's decisions and norm: A exponentials and about 2 A^2 + 8 A flops.

The script measures, on one thread, the speed of each kind of work at the shapes the transform uses: dgemm of a
tile, (64 x m) by (m x 2 T A); dgemm of a chunk's update, (64 x 10 A) by (10 A x T A / 2); the kernel's values
(`RBF.gram` of 20,000 points against the m atoms); the exponential of the decisions' loop (`math.exp` in Numba, as
`_replay_rows` calls it). The ceiling is the rate at which one
core would transform if every flop ran at those speeds and nothing else took time (no memory traffic, no loop
overhead): an upper bound on any implementation of this arithmetic.  It then measures the transform of 200,000 fresh
points (median of 3): on one thread (OPENBLAS_NUM_THREADS = NUMBA_NUM_THREADS = 1), and with deccal's default
threads on the idle machine and beside another process busy on one core (a Python busy loop).
"""
from __future__ import annotations
import json, os, subprocess, sys, tempfile, time
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults('OMP_WAIT_POLICY')   # as when its steps imported bench/transform.py (which sets it)

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
from _measure import machine_info, emit_record, other_busy, wait_idle   # noqa: E402

M_NEW, REPEATS, TILE, CHUNK = 200_000, 3, 64, 10
ONE_THREAD = {k: '1' for k in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS', 'NUMBA_NUM_THREADS')}


def best_rate(f, flops, reps, tries=5):
    "The best of `tries` timings of `reps` calls of f: flops per second."
    f()
    best = float('inf')
    for _ in range(tries):
        t = time.perf_counter()
        for _ in range(reps): f()
        best = min(best, (time.perf_counter() - t) / reps)
    return flops / best


def do_rates(path):
    "One thread: the speeds of the transform's kinds of work, and the flops a point needs."
    import numba as nb, math
    from _scale import load
    cal = load(path, 50)
    T, A = len(cal.rounds_), cal.params_['n_actions']
    m, d, TA = cal.basis_.m, cal.basis_.P.dim, len(cal.rounds_) * cal.params_['n_actions']
    rng = np.random.default_rng(0)
    H, CD = rng.standard_normal((TILE, m)), rng.standard_normal((m, 2 * TA))
    gemm = best_rate(lambda: H @ CD, 2.0 * TILE * m * 2 * TA, 200)
    K = CHUNK * A
    Ha, Bc = rng.standard_normal((TILE, K)), rng.standard_normal((K, TA // 2))
    gemm_chunk = best_rate(lambda: Ha @ Bc, 2.0 * TILE * K * (TA // 2), 2000)

    @nb.njit(cache=False)
    def exps(x, out):
        for i in range(x.shape[0]): out[i] = math.exp(x[i])
    x = -10.0 * rng.random(1_000_000); out = np.empty_like(x)
    exp_per_s = best_rate(lambda: exps(x, out), float(len(x)), 5)
    Z, atoms = rng.standard_normal((20_000, d)), rng.standard_normal((m, d))
    kernel = cal.params_['kernel']
    kernel_values_per_s = best_rate(lambda: kernel.gram(Z, atoms), float(len(Z) * m), 3)
    work = dict(kernel_values=m, gemm_flops=2 * 2 * TA * m, earlier_flops=2 * A * A * T * (T - 1),
                round_exps=TA, round_flops=T * (2 * A * A + 8 * A))
    seconds = (work['gemm_flops'] + work['round_flops']) / gemm + work['earlier_flops'] / gemm_chunk \
        + work['kernel_values'] / kernel_values_per_s + work['round_exps'] / exp_per_s
    CDm = np.vstack([r['C'] for r in cal.rounds_] + [r['D'] for r in cal.rounds_])     # [C; D]: (2 T A, m)
    sv = np.linalg.svd(CDm, compute_uv=False)
    return dict(cd_shape=list(CDm.shape), cd_rank=int(np.linalg.matrix_rank(CDm)), cd_condition=float(sv[0] / sv[-1]),
                T=T, A=A, m=m, d=d, gemm_flops_per_s=gemm, gemm_chunk_flops_per_s=gemm_chunk, exp_per_s=exp_per_s,
                kernel_values_per_s=kernel_values_per_s, work=work,
                flops_per_point=work['gemm_flops'] + work['earlier_flops'] + work['round_flops'],
                ceiling_seconds_per_point=seconds, ceiling_points_per_s=1.0 / seconds)


def do_transform(path):
    "The transform of M_NEW fresh points, median of REPEATS: wall and CPU seconds."
    from _scale import load, new_points, SEED
    cal = load(path, 50)
    cal.transform(new_points(1000, SEED + 2))
    q = new_points(M_NEW, SEED + 3)
    walls, cpus = [], []
    for _ in range(REPEATS):
        c0, t0 = time.process_time(), time.perf_counter()
        cal.transform(q)
        walls.append(time.perf_counter() - t0); cpus.append(time.process_time() - c0)
    w = float(np.median(walls))
    return dict(seconds=w, cpu_seconds=float(np.median(cpus)), points_per_s=M_NEW / w)


def sub(step, path, env=None):
    "Run one step in a fresh subprocess; its JSON result."
    out = subprocess.run([sys.executable, __file__, '--step', step, path], capture_output=True, text=True,
                         env={**os.environ, **(env or {})}, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv):
    if '--step' in argv:
        step, path = argv[argv.index('--step') + 1], argv[argv.index('--step') + 2]
        if step == 'fit':
            from _scale import do_fit
            print(json.dumps(do_fit(path)))
        else: print(json.dumps(do_rates(path) if step == 'rates' else do_transform(path)))
        return
    t_all = time.perf_counter()
    path = os.path.join(tempfile.mkdtemp(), 'cal.npz')
    fit = sub('fit', path)
    if fit['rounds'] != 50: raise SystemExit(f"the fit kept {fit['rounds']} rounds, not 50")
    wait_idle(120)
    rates = sub('rates', path, ONE_THREAD)
    one = sub('transform', path, ONE_THREAD)
    idle = sub('transform', path)
    busy_loop = subprocess.Popen([sys.executable, '-c', 'while True: pass'])
    try:
        time.sleep(1.0)
        busy = sub('transform', path)
    finally:
        busy_loop.kill()
    w, ceil = rates['work'], rates['ceiling_points_per_s']
    share = lambda r: f"| {r['points_per_s']:,.0f} | {r['points_per_s'] / ceil:.2f} |"
    K, TA = CHUNK * rates['A'], rates['T'] * rates['A']
    minutes = (time.perf_counter() - t_all) / 60
    lines = ['# The transform at T = 50 against what one core can do', '',
             machine_info(('dimfree.py', 'kernels.py')), '',
             f"Produced by `python bench/transform_bound.py --write` ({minutes:.1f} minutes); see the script's "
             "docstring for what is counted and measured.", '',
             f"Per point (T = {rates['T']}, A = {rates['A']}, m = {rates['m']} atoms, x in R^{rates['d']}): "
             f"{w['kernel_values']} kernel values, then {rates['flops_per_point']:,} flops: "
             f"[C; D] h {w['gemm_flops']:,}, the earlier rounds' share {w['earlier_flops']:,}, "
             f"the rounds' own {w['round_flops']:,} (and {w['round_exps']} exponentials). "
             f"[C; D] is {rates['cd_shape'][0]} x {rates['cd_shape'][1]} of rank {rates['cd_rank']} "
             f"(condition number {rates['cd_condition']:.3g}).", '',
             '| one thread | speed |', '|---|---|',
             f"| dgemm, a tile (64 x {rates['m']}) by ({rates['m']} x {2 * TA}) | "
             f"{rates['gemm_flops_per_s'] / 1e9:.1f} GFlop/s |",
             f"| dgemm, a chunk's update (64 x {K}) by ({K} x {TA // 2}) | "
             f"{rates['gemm_chunk_flops_per_s'] / 1e9:.1f} GFlop/s |",
             f"| the kernel's values (RBF) | {rates['kernel_values_per_s'] / 1e6:.0f} million a second |",
             f"| math.exp in Numba | {rates['exp_per_s'] / 1e6:.0f} million a second |", '',
             '| transform of 200,000 points | points per second | share of the one-core ceiling |', '|---|---|---|',
             f"| ceiling: one core, every flop at the speeds above, nothing else | {ceil:,.0f} | 1.00 |",
             '| one thread ' + share(one), '| default threads, idle ' + share(idle),
             '| default threads, another process busy on one core ' + share(busy), '']
    emit_record(lines, dict(fit=fit, rates=rates, one_thread=one, idle=idle, busy=busy, others_after=other_busy()),
                'transform_bound_results.md', '--write' in argv)


if __name__ == '__main__':
    main(sys.argv[1:])
