"""Benchmark: fit times with deccal's own BLAS thread limit against the caller's settings, alone and beside a busy core.

Prints a table; it is not a test. Usage:

    python bench/threads.py            # DimFreeDeCal fit at n = 20,000 and the classifier on 1,500 rows; prints
    python bench/threads.py --write    # the same, and writes bench/threads_results.md
    python bench/threads.py --quick    # tiny sizes (n = 600, 300 rows, 2 rounds): checks that the script runs
    python bench/threads.py --quick --write --out /tmp/t.md   # ... and its --write (keep quick figures out of bench/)

deccal's public entry points run with one BLAS thread (`deccal.runtime.one_blas_thread`, reading
`deccal.runtime.BLAS_THREADS`). Settings compared, each in a fresh process with no OPENBLAS_NUM_THREADS in its
environment (so OpenBLAS starts one thread per core):

- 'deccal (own limit)': the package as shipped, nothing set by the caller;
- 'caller: 1 BLAS thread' and 'caller: 2 BLAS threads': the package's limit switched off
  (`deccal.runtime.BLAS_THREADS = None`, which leaves the caller's setting), the caller setting the threads with
  `threadpoolctl.threadpool_limits` around the fit: what a fit costs and gives when the caller's setting rules.

Each setting runs twice: alone, and while another process (a Python busy loop, started here and stopped after)
keeps one core busy. Workloads: DimFreeDeCal (x ~ N(0, I_3), point forecasts 0.8 x, outcomes x + 0.3 N(0, I_3),
RBF gamma = 0.5, 5 actions, beta = 10, eps = 0.02, line search, 5 rounds, early_stopping=False), and
DecisionCalibratedClassifier (LogisticRegression, its defaults, max_rounds=15) on the first rows of scikit-learn's
digits. Reported: the fit's wall seconds, and the largest difference of its results (the rounds' audit values;
the classifier's predict_proba on 200 other rows) from the package's own limit, alone.
"""
from __future__ import annotations
import argparse, json, os, subprocess, sys, time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
if HERE not in sys.path: sys.path.insert(0, HERE)
from _measure import machine_info, ft   # noqa: E402

SEED = 20240601
SETTINGS = {'own': 'deccal (own limit)', 'caller1': 'caller: 1 BLAS thread', 'caller2': 'caller: 2 BLAS threads'}
KW = dict(n_actions=5, beta=10.0, R1=1.0, eps=0.02, step='line-search', max_rounds=5, early_stopping=False)


def dimfree_fit(n:int, rounds:int) -> list:
    "Fit DimFreeDeCal on n points; the rounds' audit values."
    from deccal import Embedding, RBF, DimFreeDeCal
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((n, 3))
    c = DimFreeDeCal(RBF(0.5), **{**KW, 'max_rounds': rounds}).fit(Embedding.from_points(0.8 * x),
                                                                      x + 0.3 * rng.standard_normal((n, 3)))
    return [h['audit_value'] for h in c.history_ if h['audit_value'] is not None]


def classifier_fit(n:int, rounds:int) -> list:
    "Fit DecisionCalibratedClassifier on n rows of digits; predict_proba on the 200 rows after them, flattened."
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from deccal.estimators import DecisionCalibratedClassifier
    X, y = load_digits(return_X_y=True)
    X = X / 16
    m = DecisionCalibratedClassifier(LogisticRegression(), max_rounds=rounds, random_state=0).fit(X[:n], y[:n])
    return m.predict_proba(X[n:n + 200]).ravel().tolist()


WORKLOADS = {'dimfree': dimfree_fit, 'classifier': classifier_fit}


def one(workload:str, setting:str, n:int, rounds:int) -> dict:
    "In this (fresh) process: one fit under `setting`; its seconds and results."
    import deccal.runtime
    from threadpoolctl import threadpool_limits
    WORKLOADS[workload](min(n, 300), 1)                    # compile the Numba kernels outside the timing
    if setting == 'own': limit = None
    else: deccal.runtime.BLAS_THREADS, limit = None, int(setting[-1])
    t0 = time.perf_counter()
    with threadpool_limits(limit, 'blas'): out = WORKLOADS[workload](n, rounds)
    return dict(seconds=time.perf_counter() - t0, out=out)


def run(workload:str, setting:str, n:int, rounds:int, busy:bool) -> dict:
    "One measurement in a fresh process, optionally beside a busy-loop process on one core."
    env = {k: v for k, v in os.environ.items() if k not in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS',
                                                            'MKL_NUM_THREADS')}
    env['PYTHONPATH'] = os.pathsep.join([REPO] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep) if p])
    spin = subprocess.Popen([sys.executable, '-c', 'while True: pass']) if busy else None
    try:
        out = subprocess.run([sys.executable, __file__, '--one', workload, setting, str(n), str(rounds)],
                             capture_output=True, text=True, env=env)
    finally:
        if spin is not None: spin.kill(); spin.wait()
    if out.returncode: raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--quick', action='store_true', help='tiny sizes: check that the script runs')
    ap.add_argument('--write', action='store_true', help='write the table to --out')
    ap.add_argument('--out', default=os.path.join(HERE, 'threads_results.md'), help='file --write writes')
    ap.add_argument('--one', nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.quick and a.write and os.path.abspath(a.out) == os.path.join(HERE, 'threads_results.md'):
        ap.error('--quick figures are not for the record: give --out another file')
    if a.one:
        w, s, n, r = a.one
        print(json.dumps(one(w, s, int(n), int(r))))
        return
    sizes = ({'dimfree': (600, 2), 'classifier': (300, 2)} if a.quick
             else {'dimfree': (20000, 5), 'classifier': (1500, 15)})   # (n, rounds)
    rows = []
    for w, (n, r) in sizes.items():
        ref = None
        for busy in (False, True):
            for s, label in SETTINGS.items():
                res = run(w, s, n, r, busy)
                if ref is None: ref = np.asarray(res['out'])
                out = np.asarray(res['out'])
                diff = np.abs(out - ref).max() if out.shape == ref.shape else float('nan')
                rows.append(f"| {w} | {n:,} | {'yes' if busy else 'no'} | {label} | {ft(res['seconds'])} "
                            f"| {diff:.2g} |")
                print(rows[-1], flush=True)
    head = ["| workload | n | another process busy on one core | setting | fit seconds | max abs difference |",
            "|---|---|---|---|---|---|"]
    text = '\n'.join([
        "# Fit times under deccal's own BLAS limit and under the caller's settings", '',
        machine_info(('runtime.py', 'dimfree.py', 'estimators.py')), '',
        f"Produced by `python bench/threads.py{' --quick' if a.quick else ''} --write`; see the script for the "
        "scenario. 'max abs difference': of the results (audit values per round; predict_proba) from the first row "
        "of the same workload.", '', *head, *rows, ''])
    if a.write:
        with open(a.out, 'w') as f: f.write(text)
    print(text)


if __name__ == '__main__':
    main()
