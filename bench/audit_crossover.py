"""Benchmark: where `audit(method='auto')` should switch from the randomized sketches to the landmark path.

Prints figures; it is not a test.  Usage:

    python bench/audit_crossover.py            # prints the table
    python bench/audit_crossover.py --write    # ... and writes bench/audit_crossover_results.md

The scenario of bench/audit_scale.py (point forecasts in R^3, RBF gamma = 0.5, 5 actions, beta = 10, R1 = 1).  For
each n, `audit` runs with method 'randomized' and with 'landmarks' (and 'exact' up to 3,000 rows), each in a fresh
process after a warm-up that compiles Numba's functions, with one BLAS thread and one Numba thread, so that the
process's CPU time is the time on one idle core whatever else the machine runs.  The value is the audit's in-sample
value (the two paths estimate the same supremum; their difference is reported).
"""
from __future__ import annotations
import os
os.environ['OPENBLAS_NUM_THREADS'] = os.environ['OMP_NUM_THREADS'] = os.environ['NUMBA_NUM_THREADS'] = '1'
import argparse, json, subprocess, sys, time
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
from _measure import machine_info, loadavg                                  # noqa: E402
from _scale import make_data                                                # noqa: E402  (audit_scale's scenario)

NS = [1500, 3000, 5000, 10_000, 20_000]
KW = dict(n_actions=5, beta=10.0, R1=1.0, seed=0)


def one(n, method):
    from deccal import Embedding, RBF, audit
    k = RBF(0.5)
    px, y = make_data(300, 1)
    audit(Embedding.from_points(px), y, k, method=method, **KW)                # warm-up: Numba compiles
    px, y = make_data(n, 0)                                                # seed 0, as recorded
    c0, w0 = time.process_time(), time.perf_counter()
    r = audit(Embedding.from_points(px), y, k, method=method, **KW)
    return dict(n=n, method=method, cpu=time.process_time() - c0, wall=time.perf_counter() - w0, value=float(r.value))


def run(n, method):
    out = subprocess.run([sys.executable, __file__, '--one', str(n), '--method', method], capture_output=True,
                         text=True)
    if out.returncode: raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--n', type=int, nargs='*')
    ap.add_argument('--one', type=int)
    ap.add_argument('--method', default='randomized')
    ap.add_argument('--write', action='store_true')
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(one(a.one, a.method))); return
    rows = []
    for n in a.n or NS:
        for m in (('exact',) if n <= 3000 else ()) + ('randomized', 'landmarks'):
            r = run(n, m); r['load'] = loadavg()[0]; rows.append(r)
            print(f"n = {n:>7,} {m:10s}: {r['cpu']:7.2f} s CPU ({r['wall']:.2f} s wall), value {r['value']:.5f}, "
                  f"load {r['load']:.1f}", flush=True)
    if a.write:
        from deccal.runtime import atomic_write
        by = {(r['n'], r['method']): r for r in rows}
        lines = ["# Where the auditor's 'auto' switches to landmarks", '', machine_info(('audit.py',)), '',
                 'Produced by `python bench/audit_crossover.py --write`. One BLAS and one Numba thread; CPU seconds of '
                 'the audit call in a fresh process after a warm-up. Scenario of bench/audit_scale.py.', '',
                 '| n | exact CPU s | randomized CPU s | landmarks CPU s | randomized / landmarks | '
                 'value: landmarks vs '
                 'randomized |', '|---|---|---|---|---|---|']
        for n in dict.fromkeys(r['n'] for r in rows):
            ex, rz, lm = by.get((n, 'exact')), by[(n, 'randomized')], by[(n, 'landmarks')]
            lines.append(f"| {n:,} | {'' if ex is None else format(ex['cpu'], '.2f')} | {rz['cpu']:.2f} | "
                         f"{lm['cpu']:.2f} | {rz['cpu'] / lm['cpu']:.2f} | {lm['value'] / rz['value'] - 1:+.2%} |")
        lines += ['', '```json', json.dumps(rows), '```', '']
        out = os.path.join(REPO, 'bench', 'audit_crossover_results.md')
        atomic_write(out, lambda f: f.write('\n'.join(lines).encode()))
        print('wrote bench/audit_crossover_results.md')


if __name__ == '__main__':
    main()
