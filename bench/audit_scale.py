"""Benchmark: the auditor `deccal.audit.audit` from n = 1,000 to 1,000,000, the landmark path above 20,000.

Prints figures; it is not a test.  Usage:

    python bench/audit_scale.py                    # n = 1e3 .. 1e6 (about 10 minutes);
                                                   # writes bench/audit_scale_results.md
    python bench/audit_scale.py --n 1000 100000    # chosen sizes, nothing written

Scenario (as bench/audit.py): point forecasts in R^3, RBF kernel gamma = 0.5, 5 actions, beta = 10, R1 = 1,
every other audit() parameter at its default (method='auto': exact up to n = 1,500, randomized sketches up to
20,000, landmarks above).  Data: x ~ N(0, I_3), predictions 0.8 x, outcomes x + 0.3 N(0, I_3).
Targets: n = 100,000 in at most 20 s and n = 1,000,000 in at most 3 minutes on 2 cores, peak memory at
1,000,000 at most 8 GB.  Also, at n = 5,000: the landmark path's value against the randomized path's (the
bar: within 2%).

Each n runs in a fresh subprocess (`--one N`): data, a warm-up audit on 300 points of each method (Numba
loads its cache, thread pools start), then one timed audit; peak memory = VmHWM during the audit - VmRSS
before it (VmHWM reset through /proc/self/clear_refs).  The time exponent is the least-squares slope of
log(time) on log(n) over the landmark sizes.
"""
from __future__ import annotations
import argparse, json, os, subprocess, sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
from _measure import other_busy, machine_info   # noqa: E402
from _scale import audit_one   # noqa: E402

NS = [1000, 3000, 10_000, 30_000, 100_000, 300_000, 1_000_000]


def run(n, method='auto'):
    out = subprocess.run([sys.executable, __file__, '--one', str(n), '--method', method],
                         capture_output=True, text=True)
    if out.returncode: raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument('--n', type=int, nargs='*')
    ap.add_argument('--one', type=int)
    ap.add_argument('--method', default='auto')
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(audit_one(a.one, a.method))); return
    ns = a.n or NS
    rows = []
    for n in ns:
        busy = other_busy(1.0)
        r = run(n); r['others_busy'] = busy; rows.append(r)
        print(f"n = {n:>9,}: {r['seconds']:8.2f} s, peak {r['peak_gb']:.3f} GB, {r['method']}, ranks "
              f"{r['rank_P']}/{r['rank_R']}, value {r['value']:.5f}, loss on {r['loss_atoms']} atoms (others busy "
              f"{busy:.0%})", flush=True)
    cmp = None
    if a.n is None:
        rz, lm = run(5000, 'randomized'), run(5000, 'landmarks')
        cmp = dict(randomized=rz, landmarks=lm)
        print(f"n = 5,000: randomized {rz['value']:.5f} in {rz['seconds']:.1f} s; landmarks {lm['value']:.5f} in "
              f"{lm['seconds']:.1f} s ({lm['value'] / rz['value'] - 1:+.3%})")
    big = [r for r in rows if r['method'] == 'landmarks']
    slope = (float(np.polyfit(np.log([r['n'] for r in big]), np.log([r['seconds'] for r in big]), 1)[0])
             if len(big) > 1 else float('nan'))
    print(f"time ~ n^{slope:.2f} over the landmark sizes")
    if a.n is None:
        from deccal.runtime import atomic_write
        lines = ['# The auditor from n = 1,000 to 1,000,000', '', machine_info(('audit.py', 'dimfree.py')), '',
                 'Produced by `python bench/audit_scale.py`. Scenario: point forecasts in R^3, RBF gamma = 0.5, 5 '
                 "actions, beta = 10, R1 = 1, audit's defaults (method 'auto'). Peak = VmHWM during the audit minus "
                 "VmRSS before it; r = rank_R.", '',
                 '| n | method | seconds | peak GB | peak / (n r 8 bytes) | ranks P / R | value | others busy |',
                 '|---|---|---|---|---|---|---|---|']
        for r in rows:
            lines.append(f"| {r['n']:,} | {r['method']} | {r['seconds']:.2f} | {r['peak_gb']:.3f} | "
                         f"{r['peak_gb'] * 1e9 / (r['n'] * r['rank_R'] * 8):.1f} | {r['rank_P']} / {r['rank_R']} | "
                         f"{r['value']:.5f} | {r['others_busy']:.0%} |")
        lines += ['', f"Time grows as n^{slope:.2f} over the landmark sizes (least squares on log-log).", '',
                  f"At n = 5,000: randomized {cmp['randomized']['value']:.5f} ({cmp['randomized']['seconds']:.1f} s), "
                  f"landmarks {cmp['landmarks']['value']:.5f} ({cmp['landmarks']['seconds']:.1f} s): "
                  f"{cmp['landmarks']['value'] / cmp['randomized']['value'] - 1:+.3%}.", '',
                  '```json', json.dumps(dict(rows=rows, compare_5000=cmp, slope=slope)), '```', '']
        out = os.path.join(REPO, 'bench', 'audit_scale_results.md')
        atomic_write(out, lambda f: f.write('\n'.join(lines).encode()))
        print('wrote', out)


if __name__ == '__main__':
    main()
