"""Benchmark: fitting `deccal.DimFreeDeCal` (Algorithm 1) and transforming new points with it.

Prints figures; it is not a test.  Usage:

    python bench/calibrate.py                  # the standard scenario; prints a markdown table
    python bench/calibrate.py --write          # ... and writes bench/calibrate_results.md
    python bench/calibrate.py --n 2000 --m 20000   # other sizes

Scenario: n = 5,000 point forecasts in R^3 (`Embedding.from_points`), RBF kernel with
gamma = 0.5, 5 actions, beta = 10, R1 = 1, step="line-search", until eps = 0.02 or 50 rounds; every other
parameter at its default.  Data (fixed seed): x ~ N(0, I_3), predictions 0.8 x (miscalibrated), outcomes
x + 0.3 N(0, I_3).
Targets: the fit in at most 60 s on 2 cores; transform of 100,000 new points with a calibrator fitted for
50 rounds (eps small enough that all 50 rounds run) at >= 10,000 points per second.

Peak memory: VmHWM reset by writing '5' to /proc/self/clear_refs before each timed call, read after it;
reported as VmHWM - VmRSS just before the call.  CPU time taken by other processes during each timed call
is read from /proc/stat and reported (the figures are unreliable when it is large).
"""
from __future__ import annotations
import os
# Many small BLAS calls and tiny parallel Numba loops: spinning worker threads starve the main thread on a
# shared 2-core machine (the same fit took 212 s instead of 16 s with another busy process). Set before
# NumPy and Numba load; `setdefault` keeps a value the user chose.
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults('OMP_WAIT_POLICY', 'OPENBLAS_NUM_THREADS')
import argparse, sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
from _measure import reset_hwm, hwm_bytes, rss_bytes, cpu_snapshot, machine_info, fgb   # noqa: E402

from deccal.dimfree import DimFreeDeCal          # noqa: E402
from deccal.embedding import Embedding           # noqa: E402
from deccal.kernels import RBF                   # noqa: E402

SEED = 20240601
D, GAMMA, ACTIONS, BETA, R1 = 3, 0.5, 5, 10.0, 1.0
FIT_TARGET_S, TRANSFORM_TARGET = 60.0, 10_000


def make_data(n, seed=SEED):
    "x ~ N(0, I_3); predictions 0.8 x; outcomes x + 0.3 N(0, I_3)."
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, D))
    return Embedding.from_points(0.8 * x), x + 0.3 * rng.standard_normal((n, D))


def measure(fn):
    "Run fn(); its result, wall seconds, peak memory above the RSS before it, and the CPU share other processes took."
    ok = reset_hwm()
    r0 = rss_bytes()
    s0 = cpu_snapshot()
    out = fn()
    s1 = cpu_snapshot()
    wall = s1[0] - s0[0]
    other = max(0.0, (s1[2] - s0[2]) - (s1[1] - s0[1])) / (wall * len(os.sched_getaffinity(0)))
    return out, wall, (hwm_bytes() - r0) if ok else float('nan'), other


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--n', type=int, default=5000, help='calibration sample size')
    ap.add_argument('--m', type=int, default=100_000, help='new points to transform')
    ap.add_argument('--rounds', type=int, default=50, help='rounds of the calibrator used for the transform')
    ap.add_argument('--write', action='store_true', help='write bench/calibrate_results.md')
    a = ap.parse_args(argv)

    kernel = RBF(GAMMA)
    common = dict(kernel=kernel, n_actions=ACTIONS, beta=BETA, R1=R1, step='line-search')
    # warm-up: Numba compilation / cache loading, thread pools
    wp, wy = make_data(300, seed=1)
    DimFreeDeCal(**common, eps=0.02, max_rounds=2).fit(wp, wy).transform(wp)  # (early stopping: also compiles its path)

    pred, Y = make_data(a.n)
    lines = [f"machine: {machine_info(('dimfree.py', 'audit.py'))}", '']
    lines += ['| run | figure | target | met |', '|---|---|---|---|']

    cal, t_fit, mem_fit, other_fit = measure(lambda: DimFreeDeCal(**common, eps=0.02, max_rounds=50).fit(pred, Y))
    h = cal.history_
    last = [x['audit_value'] for x in h if x['audit_value'] is not None][-1]
    lines.append(f"| fit n={a.n}, eps=0.02, max 50 rounds, default early stopping (20% held out) | {t_fit:.1f} s, "
                 f"{len(cal.all_rounds_)} rounds run ({cal.stop_reason_}), {cal.best_round_} kept; last audit value "
                 f"{last:.4f} (stop at {0.75 * 0.02:.3f}), square loss {h[0]['square_loss']:.4f} -> "
                 f"{h[cal.best_round_]['square_loss']:.4f}, held out {h[0]['holdout_square_loss']:.4f} -> "
                 f"{h[cal.best_round_]['holdout_square_loss']:.4f}; basis {cal.basis_.m} atoms, rank {cal.rank_}, "
                 f"captured trace of K_v {cal.captured_trace_:.5f}; peak memory {fgb(mem_fit)} GB; other processes "
                 f"{100 * other_fit:.0f}% CPU | <= {FIT_TARGET_S:.0f} s | {'yes' if t_fit <= FIT_TARGET_S else 'NO'} |")

    cal50, t50, mem50, other50 = measure(lambda: DimFreeDeCal(**common, eps=1e-4, max_rounds=a.rounds,
                                                              early_stopping=False).fit(pred, Y))
    lines.append(f"| fit n={a.n}, eps=1e-4, {a.rounds} rounds, no early stopping (for the transform) | {t50:.1f} s, "
                 f"{len(cal50.rounds_)} rounds; peak memory {fgb(mem50)} GB; other processes {100 * other50:.0f}% CPU "
                 "| - | - |")

    rng = np.random.default_rng(SEED + 1)
    new = Embedding.from_points(0.8 * rng.standard_normal((a.m, D)))
    out, t_tr, mem_tr, other_tr = measure(lambda: cal50.transform(new))
    rate = a.m / t_tr
    lines.append(f"| transform {a.m:,} new points, {len(cal50.rounds_)} rounds | {t_tr:.2f} s = {rate:,.0f} points/s; "
                 f"peak memory {fgb(mem_tr)} GB; other processes {100 * other_tr:.0f}% CPU "
                 f"| >= {TRANSFORM_TARGET:,} points/s | {'yes' if rate >= TRANSFORM_TARGET else 'NO'} |")
    # sanity: the transform reproduces the fitted state on the sample
    sq = cal50.transform(pred).sq_error(kernel, Y).mean()
    lines.append('')
    lines.append(f"check: transform of the sample has square loss {sq:.8f}, the fit recorded "
                 f"{cal50.history_[-1]['square_loss']:.8f}")
    text = '\n'.join(lines)
    print(text)
    if a.write:
        with open(os.path.join(REPO, 'bench', 'calibrate_results.md'), 'w') as f:
            f.write('# bench/calibrate.py\n\n' + text + '\n')


if __name__ == '__main__':
    main()
