"""Benchmark: Gram matrices with deccal's Numba kernels against a NumPy/BLAS reference.

Prints figures; it is not a test.  Usage:

    python bench/gram.py            # n = M = 20,000 (output 3.2 GB per matrix), a few minutes
    python bench/gram.py --quick    # n = 2,000, smoke run
    python bench/gram.py --n 10000

Every (kernel, d, path) measurement runs in a fresh subprocess (`--one ...`) so that its peak memory
is not polluted by the other measurements.  Inside it:

1. make the inputs A, B (n, d) (fixed seed, so both paths see the same data);
2. warm-up call on 256-point inputs (Numba loads / compiles, BLAS and OpenMP thread pools start);
3. pre-fault: allocate, touch and free an array 1.1x the output size.  On this VM, freed memory is soon
   handed back to the host (within ~0.05-2 s), and touching it again costs up to ~2 s per GB; without
   this step the first timed run measures the hypervisor rather than the code (see `--no-prefault`).
   Spikes of +1-2 s still hit single runs now and then, which is why the best run is reported;
4. `--repeat` (3) timed runs, wall clock (`time.perf_counter`); the best one is reported.  Before
   each run the peak-RSS counter VmHWM is reset by writing '5' to /proc/self/clear_refs; the peak
   reported is max over runs of (VmHWM after the call - VmRSS just before it).  If clear_refs is not
   writable, it falls back to ru_maxrss - VmRSS before the first run (and skips the pre-fault, which
   would otherwise set ru_maxrss).
5. 64 rows of the first run's result are compared (after the timed runs) with a direct evaluation.
6. CPU time used by other processes and hypervisor steal during the timed runs are read from /proc/stat.
   The driver waits (up to --max-wait s) for other processes to go idle before each measurement and
   measures again (up to --retries times) if others still took > 5% of the CPUs, until --time-budget
   seconds have passed; measurements still disturbed are flagged under the table.  The deccal functions
   that `gram` goes through (direct Numba loop or BLAS + Numba pass) are printed per measurement.

Note: "numba" below means deccal's public `Kernel.gram`, whatever code path it takes.

Data and parameters: A, B ~ N(0, I_d); RBF and Laplacian use gamma = 0.5 / d; ExpInner uses 0.3 * N(0, I)
points (max squared norm ~ 3, far below 700); MinKernel uses U[0, 1] points with d = 1;
Polynomial(degree=3, c=1).
"""
from __future__ import annotations
import argparse, gc, json, os, resource, subprocess, sys, time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)   # use this checkout's deccal, wherever we are run from

from _measure import (GB, rss_bytes, hwm_bytes, reset_hwm, cpu_snapshot, other_busy, wait_idle,   # noqa: E402
                      disturbed, ft, machine_info)
SEED = 20240601

# (kernel name, d) in table order
CASES = [('RBF', 1), ('RBF', 3), ('RBF', 10),
         ('Laplacian', 3), ('ExpInner', 3), ('MinKernel', 1), ('Linear', 3), ('Polynomial', 3)]
PATHS = ('numba', 'reference')
LABELS = {'RBF': 'RBF(gamma=0.5/d)', 'Laplacian': 'Laplacian(gamma=0.5/d)', 'ExpInner': 'ExpInner (0.3*N(0,I) points)',
          'MinKernel': 'MinKernel (U[0,1] points)', 'Linear': 'Linear', 'Polynomial': 'Polynomial(3, c=1)'}


# ----------------------------------------------------------------------------- inputs and kernels
def make_data(name, n, d, seed=SEED):
    rng = np.random.default_rng(seed + 1000 * d)
    if name == 'MinKernel':
        return rng.uniform(0, 1, (n, d)), rng.uniform(0, 1, (n, d))
    A, B = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    if name == 'ExpInner': A, B = 0.3 * A, 0.3 * B
    return A, B


def params(name, d):
    if name in ('RBF', 'Laplacian'): return {'gamma': 0.5 / d}
    if name == 'Polynomial': return {'degree': 3, 'c': 1.0}
    return {}


def numba_fn(name, d):
    import deccal.kernels as dk
    p = params(name, d)
    k = {'RBF': lambda: dk.RBF(p['gamma']), 'Laplacian': lambda: dk.Laplacian(p['gamma']),
         'ExpInner': dk.ExpInner, 'MinKernel': dk.MinKernel, 'Linear': dk.Linear,
         'Polynomial': lambda: dk.Polynomial(p['degree'], p['c'])}[name]()
    return k.gram


def reference_fn(name, d):
    "The NumPy/BLAS reference, written to allocate nothing but the output (where NumPy allows)."
    p = params(name, d)
    if name == 'RBF':
        g = p['gamma']
        def f(A, B):
            K = A @ B.T
            K *= 2 * g
            K -= g * (A * A).sum(1)[:, None]
            K -= g * (B * B).sum(1)[None, :]
            np.exp(K, out=K)
            return K
    elif name == 'Laplacian':
        from scipy.spatial.distance import cdist
        g = p['gamma']
        def f(A, B):
            K = cdist(A, B, 'cityblock')
            K *= -g
            np.exp(K, out=K)
            return K
    elif name == 'ExpInner':
        def f(A, B):
            K = A @ B.T
            np.exp(K, out=K)
            return K
    elif name == 'MinKernel':
        def f(A, B): return np.minimum(A[:, 0][:, None], B[:, 0][None, :])
    elif name == 'Linear':
        def f(A, B): return A @ B.T
    elif name == 'Polynomial':
        deg, c = p['degree'], p['c']
        def f(A, B):
            K = A @ B.T
            K += c
            np.power(K, deg, out=K)
            return K
    else: raise ValueError(name)
    return f


def direct(name, d, A, B):
    "Straightforward evaluation (broadcasting, no norm expansion) for a few rows: the accuracy check."
    p = params(name, d)
    if name == 'RBF': return np.exp(-p['gamma'] * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))
    if name == 'Laplacian': return np.exp(-p['gamma'] * np.abs(A[:, None, :] - B[None, :, :]).sum(-1))
    if name == 'MinKernel': return np.minimum(A[:, 0][:, None], B[:, 0][None, :])
    dot = (A[:, None, :] * B[None, :, :]).sum(-1)
    if name == 'Linear': return dot
    if name == 'Polynomial': return (dot + p['c']) ** p['degree']
    if name == 'ExpInner': return np.exp(dot)
    raise ValueError(name)


def deccal_calls(f, A, B):
    "Names of the Python-level functions of deccal.kernels that `f(A, B)` goes through (which code path)."
    seen = []
    target = os.path.join(REPO, 'deccal', 'kernels.py')
    def prof(frame, event, arg):
        if event == 'call' and frame.f_code.co_filename == target and frame.f_code.co_name not in seen:
            seen.append(frame.f_code.co_name)
    sys.setprofile(prof)
    try: f(A, B)
    finally: sys.setprofile(None)
    return seen


# ----------------------------------------------------------------------------- one measurement
def run_one(name, d, path, n, repeat, prefault):
    A, B = make_data(name, n, d)
    f = numba_fn(name, d) if path == 'numba' else reference_fn(name, d)
    out_bytes = 8 * n * n

    t = time.perf_counter(); f(A[:256], B[:256]); warm = time.perf_counter() - t
    calls = deccal_calls(f, A[:256], B[:256]) if path == 'numba' else []

    method = 'VmHWM (clear_refs)' if reset_hwm() else 'ru_maxrss'
    if prefault and method != 'ru_maxrss':
        buf = np.empty(int(1.1 * out_bytes) // 8); buf.fill(1.0); del buf

    times, peaks = [], []
    rows = np.arange(0, n, max(1, n // 64))[:64]
    gc.collect()
    rss_first = rss_bytes()
    snap0 = cpu_snapshot()
    for r in range(repeat):
        gc.collect()
        rss0 = rss_bytes()
        if method != 'ru_maxrss': reset_hwm()
        t = time.perf_counter()
        K = f(A, B)
        times.append(time.perf_counter() - t)
        if method != 'ru_maxrss': peaks.append(hwm_bytes() - rss0)
        else: peaks.append(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss_first)
        if r == 0: Krows = K[rows].copy()   # checked after the timed runs, to keep them back to back
        del K
    snap1 = cpu_snapshot()
    D = direct(name, d, A[rows], B)
    err = float(np.max(np.abs(Krows - D) / np.maximum(np.abs(D), 1e-300)))
    wall, own, busy, steal = (b - a for a, b in zip(snap0, snap1))
    capacity = wall * len(os.sched_getaffinity(0))
    info = dict(calls=calls, window=wall, other_cpu=max(0.0, busy - own) / capacity, steal=steal / capacity,kernel=name,
                d=d, path=path, n=n, times=times, best=min(times), peaks=peaks, peak=max(peaks), out_bytes=out_bytes,
                warmup=warm, max_rel_err=err, method=method, base_rss=rss_first)
    if path == 'numba':
        import numba
        try: info['threading_layer'] = numba.threading_layer()
        except Exception: info['threading_layer'] = '?'
        info['numba_threads'] = numba.get_num_threads()
    print('RESULT ' + json.dumps(info), flush=True)


# ----------------------------------------------------------------------------- driver
def fmt_peak(r):
    return f"{r['peak'] / GB:.2f} ({r['peak'] / r['out_bytes']:.2f}x)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--n', type=int, default=20000, help='points per side, n = M (default 20000)')
    ap.add_argument('--quick', action='store_true', help='n = 2000, a smoke run')
    ap.add_argument('--repeat', type=int, default=3, help='timed runs per measurement, best reported')
    ap.add_argument('--no-prefault', action='store_true', help='skip touching memory before the timed runs')
    ap.add_argument('--retries', type=int, default=2,
                    help='measure again (up to this many times) when other processes took > 5%% of the CPUs')
    ap.add_argument('--max-wait', type=float, default=60,
                    help='before each measurement, wait up to this many seconds for other processes to go idle')
    ap.add_argument('--time-budget', type=float, default=240,
                    help='after this many seconds, stop waiting for idle CPUs and stop retrying (keeps runs bounded)')
    ap.add_argument('--out', default=None,
                    help='also write the markdown results here (default: bench/gram_results.md for full runs)')
    ap.add_argument('--one', nargs=3, metavar=('KERNEL', 'D', 'PATH'), help=argparse.SUPPRESS)
    args = ap.parse_args()
    n = 2000 if args.quick else args.n

    if args.one:
        name, d, path = args.one
        run_one(name, int(d), path, n, args.repeat, not args.no_prefault)
        return

    info = machine_info(('kernels.py',))
    print(info, flush=True)
    busy = other_busy()
    if busy > 0.1:
        print(f"WARNING: other processes are using {100 * busy:.0f}% of the CPUs before the benchmark starts; "
              f"timings will be disturbed.", flush=True)
    print(f"n = M = {n}; output matrix {8 * n * n / GB:.2f} GB; best of {args.repeat} after a warm-up call; "
          f"each measurement in a fresh subprocess", flush=True)
    results = {}
    t_all = time.perf_counter()
    for name, d in CASES:
        for path in PATHS:
            cmd = [sys.executable, os.path.abspath(__file__), '--one', name, str(d), path, '--n', str(n),
                   '--repeat', str(args.repeat)] + (['--no-prefault'] if args.no_prefault else [])
            for attempt in range(1 + args.retries):
                late = time.perf_counter() - t_all > args.time_budget   # then no more waiting or retrying
                waited = 0.0 if late else wait_idle(args.max_wait)
                if waited: print(f"  (waited {waited:.0f} s for other processes to go idle)", flush=True)
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
                line = [l for l in p.stdout.splitlines() if l.startswith('RESULT ')]
                if p.returncode or not line:
                    print(f"  {name} d={d} {path}: FAILED (rc={p.returncode})\n{p.stdout}\n{p.stderr}", flush=True)
                    r = None
                    break
                r = json.loads(line[-1][7:])
                print(f"  {name:10s} d={d:<2d} {path:9s} runs {', '.join(ft(t) for t in r['times'])} s "
                      f"(median {ft(float(np.median(r['times'])))}); "
                      f"peaks {', '.join(f'{b / GB:.2f}' for b in r['peaks'])} GB; max rel err vs direct "
                      f"{r['max_rel_err']:.1e}; warm-up {r['warmup']:.2f} s; other processes "
                      f"{100 * r['other_cpu']:.0f}% and steal {100 * r['steal']:.0f}% of CPU capacity during the timed "
                      "runs"
                      + (f"; deccal path: {' > '.join(r['calls'])}" if r['calls'] else ''), flush=True)
                if not disturbed(r) or late: break
                if attempt < args.retries: print("  disturbed by other processes: measuring again", flush=True)
            if r is not None: results[name, d, path] = r
    elapsed = time.perf_counter() - t_all

    rows = ['| kernel | d | numba time (s) | reference time (s) | speed-up | numba peak (GB, x output) '
            '| reference peak (GB, x output) |',
            '|---|---:|---:|---:|---:|---:|---:|']
    for name, d in CASES:
        rn, rr = results.get((name, d, 'numba')), results.get((name, d, 'reference'))
        label = LABELS[name]
        rows.append(f"| {label} | {d} | {ft(rn['best'])} | " if rn else f"| {label} | {d} | failed | ")
        rows[-1] += f"{ft(rr['best'])} | " if rr else 'failed | '
        rows[-1] += f"{rr['best'] / rn['best']:.2f}x | " if rn and rr else '- | '
        rows[-1] += (fmt_peak(rn) if rn else '-') + ' | ' + (fmt_peak(rr) if rr else '-') + ' |'
    table = '\n'.join(rows)

    verdicts = []
    for name, d in CASES:
        rn, rr = results.get((name, d, 'numba')), results.get((name, d, 'reference'))
        if name == 'RBF' and rn and rr:
            s = rr['best'] / rn['best']
            verdicts.append(f"- RBF d={d}: speed-up {s:.2f}x (target >= 1.5x): {'MET' if s >= 1.5 else 'MISSED'}")
    for name, d in CASES:
        rn = results.get((name, d, 'numba'))
        if rn:
            q = rn['peak'] / rn['out_bytes']
            verdicts.append(f"- {name} d={d}: Numba peak {q:.2f}x output (target <= 1.2x): "
                            f"{'MET' if q <= 1.2 else 'MISSED'}")
    noisy = [f"{k[0]} d={k[1]} {k[2]}" for k, r in results.items() if disturbed(r)]
    if noisy:
        verdicts.append(f"- Warning: other processes took > 5% of the CPUs during: {', '.join(noisy)} "
                        f"(after up to {args.retries} retries); re-run for cleaner figures.")
    steal = max((r['steal'] for r in results.values() if r['window'] >= 1.0), default=0.0)
    if steal > 0.05:
        verdicts.append(f"- Note: hypervisor steal time reached {100 * steal:.0f}% of CPU capacity during some "
                        f"measurements (a shared host); timings vary accordingly.")
    method = next(iter(results.values()))['method'] if results else '?'
    layer = next((r['threading_layer'] + f", {r['numba_threads']} threads" for r in results.values()
                  if 'threading_layer' in r), '?')
    notes = (f"n = M = {n}, output {8 * n * n / GB:.2f} GB (1 GB = 1e9 bytes). Wall clock, best of {args.repeat} "
             f"after a warm-up call on 256 points{'' if args.no_prefault else ' and a pre-fault of 1.1x the output'}. "
             f"Peak = max over runs of peak RSS during the call minus RSS just before it ({method}), "
             f"each (kernel, d, path) in a fresh subprocess. Numba threading layer: {layer}. "
             f"Total benchmark time {elapsed:.0f} s.")
    text = f"{info}\n\n{notes}\n\n{table}\n\nTargets:\n" + '\n'.join(verdicts)
    if noisy:
        text = (f"**DISTURBED RUN: other processes were using the CPUs during {len(noisy)} of {len(results)} "
                f"measurements (listed under the table); these figures are not representative.**\n\n" + text)
    print('\n' + text, flush=True)
    out = args.out or (None if args.quick or n != 20000 else
                       os.path.join(os.path.dirname(os.path.abspath(__file__)), 'gram_results.md'))
    if out:
        with open(out, 'w') as fh: fh.write('# Gram matrix benchmark (bench/gram.py)\n\n' + text + '\n')
        print(f"\nwritten to {out}")


if __name__ == '__main__':
    main()
