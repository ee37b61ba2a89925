"""Benchmark: one run of the ERM auditor `deccal.audit.audit` as the sample size n grows.

Prints figures; it is not a test.  Usage:

    python bench/audit.py                 # n = 1,250 .. 20,000 (a few minutes); writes bench/audit_results.md
    python bench/audit.py --quick         # n = 1,250 and 2,500, smoke run
    python bench/audit.py --n 5000 10000  # chosen sizes
    python bench/audit.py --n 5000 --kw n_starts=3 max_iter=100   # audit() keyword arguments (for profiling)

Scenario: point forecasts in R^3 (`Embedding.from_points`), RBF kernel with gamma = 0.5,
5 actions, beta = 10, R1 = 1, every other audit() parameter at its default.  Data (fixed seed):
x ~ N(0, I_3), predictions 0.8 x (miscalibrated), outcomes x + 0.3 N(0, I_3).
Targets: n = 5,000 in at most 10 s on 2 cores; time growing no faster than n^2 up to n = 20,000;
no dense n x n matrix kept beyond the low-rank factors (peak memory well below 8 n^2 bytes for large n).

Every n runs in a fresh subprocess (`--one N`) so that its peak memory is not polluted by the others.
Inside it:

1. make the data; warm-up audits on n = 200 (one with the defaults, i.e. the exact path, and one with
   exact_max=0, i.e. the randomized path), so that Numba loads / compiles and thread pools start;
2. up to --repeat (3) timed audits, stopping early once --repeat-time (60) seconds of audits have been
   spent; wall clock (`time.perf_counter`), the best run is reported.  Before each run VmHWM is reset by
   writing '5' to /proc/self/clear_refs; the peak reported is (VmHWM during the audit - VmRSS just
   before it), max over runs.  Falls back to ru_maxrss if clear_refs is not writable.
3. the split of time comes from the same timed runs: the private helpers that `audit` calls
   (`_factors`, `_search`, `_witnesses`, and `_Grams.tile` / `_Grams.matmat` / `_Grams.dense`) are
   wrapped by timers for the duration of the benchmark (deccal itself is not changed).  "kernel blocks"
   is the time spent evaluating tiles of P and R (kernel evaluations, `_Grams.tile`); "products" is
   the rest of the passes over the blocks (the BLAS products with the sketch, in `matmat`/`dense`);
   "factor rest" is QR / eigh / trace computations inside `_factors`.  The peak memory of each phase
   is read from VmHWM too (reset at phase boundaries; the overall peak is the max over phases and gaps).
4. CPU time used by other processes, hypervisor steal and /proc/loadavg are recorded during the timed
   runs.  The driver waits (up to --max-wait s) for other processes to go idle before each n and
   measures again (up to --retries times) when others still took > 5% of the CPUs, until --time-budget
   seconds have passed; disturbed measurements are flagged.
"""
from __future__ import annotations
import argparse, functools, gc, json, math, os, resource, subprocess, sys, time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)   # use this checkout's deccal, wherever we are run from

from _measure import (rss_bytes, hwm_bytes, reset_hwm, cpu_snapshot, loadavg, other_busy,   # noqa: E402
                      wait_idle, disturbed, ft, fgb, blas_threads, machine_info)
SEED = 20240601
D, GAMMA, ACTIONS, BETA, R1 = 3, 0.5, 5, 10.0, 1.0
FULL_NS = [1250, 2500, 5000, 10000, 20000]
QUICK_NS = [1250, 2500]
TARGET_N, TARGET_S = 5000, 10.0
WELL_BELOW = 0.25   # "well below one dense n x n matrix": peak < this fraction of 8 n^2 bytes


def fcap(v):
    "A captured share of the trace, or '-' where the path has none (captured_R on the landmark path)."
    return '-' if v is None else f"{v:.6f}"


# ----------------------------------------------------------------------------- data
def make_data(n, seed=SEED):
    "x ~ N(0, I_3); predictions 0.8 x; outcomes x + 0.3 N(0, I_3)."
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, D))
    return 0.8 * x, x + 0.3 * rng.standard_normal((n, D))


# ----------------------------------------------------------------------------- instrumentation
class Probe:
    """Timers (and VmHWM readings) around the private helpers that `audit` calls.

    Patches module attributes of deccal.audit for the life of the subprocess; `audit` looks them up at
    call time, so the timed run is the real `audit(...)` call."""
    PHASES = ('_factors', '_search', '_witnesses')
    WHERE = {'_factors': ('low_rank_factors', 'landmark_factors'), '_search': ('search_groups', 'landmark_search'),
             '_witnesses': ('witness_losses', 'landmark_losses')}   # in audit: the dense-Gram and the landmark paths

    def __init__(self, hwm_ok, power=None):
        import importlib
        da = importlib.import_module('deccal.audit')   # the module (the package re-exports a function `audit`)
        wp = importlib.import_module('deccal.worst_pair')
        self.da, self.hwm_ok = da, hwm_ok
        self.reset()
        if power is not None:   # power iterations of the randomized factorization (not an audit() argument)
            da.low_rank_factors = functools.partial(da.low_rank_factors, power=power)
        for name in self.PHASES:
            for where in self.WHERE[name]: setattr(da, where, self._phase(name, getattr(da, where)))
        obj = wp._objective
        def counted(*a):
            self.nfev += 1
            return obj(*a)
        wp._objective = counted   # looked up by search_rule at call time: counts the search's function evaluations
        G = da.Grams
        G.tile = self._timed('block', G.tile)
        G.matmat = self._timed('matmat', G.matmat, count=True)
        G.dense = self._timed('dense', G.dense)
        G.traces = self._timed('traces', G.traces)

    def reset(self):
        self.t = {k: 0.0 for k in ('block', 'matmat', 'dense', 'traces') + self.PHASES}
        (self.n_matmat, self.nfev, self.peak_abs, self.phase_peak, self.phase_block,
         self.phase_pass) = 0, 0, 0, {}, {}, {}

    def _timed(self, key, f, count=False):
        @functools.wraps(f)
        def g(*a, **k):
            t = time.perf_counter()
            try: return f(*a, **k)
            finally:
                self.t[key] += time.perf_counter() - t
                if count: self.n_matmat += 1
        return g

    def _phase(self, key, f):
        @functools.wraps(f)
        def g(*a, **k):
            if self.hwm_ok: self.peak_abs = max(self.peak_abs, hwm_bytes()); rss0 = rss_bytes(); reset_hwm()
            t, b0, m0 = time.perf_counter(), self.t['block'], self.t['matmat'] + self.t['dense']
            try: return f(*a, **k)
            finally:
                self.t[key] += time.perf_counter() - t
                self.phase_block[key] = self.phase_block.get(key, 0.0) + self.t['block'] - b0
                self.phase_pass[key] = self.phase_pass.get(key, 0.0) + self.t['matmat'] + self.t['dense'] - m0
                if self.hwm_ok:
                    h = hwm_bytes()
                    self.peak_abs = max(self.peak_abs, h)
                    self.phase_peak[key] = max(self.phase_peak.get(key, 0), h - rss0)
                    reset_hwm()
        return g


# ----------------------------------------------------------------------------- one measurement
def run_one(n, repeat, repeat_time, kw, knobs):
    import importlib, numba
    from deccal.audit import audit
    from deccal.embedding import Embedding
    from deccal.kernels import RBF
    if knobs.get('memory_budget'):   # block size of the passes over P and R (module constant, patched in memory)
        # read at call time
        importlib.import_module('deccal.runtime').MEMORY_BUDGET = int(knobs['memory_budget'] * 2**20)
    kernel = RBF(GAMMA)
    Yhat, Y = make_data(n)
    pred = Embedding.from_points(Yhat)

    hwm_ok = reset_hwm()
    method_mem = 'VmHWM (clear_refs)' if hwm_ok else 'ru_maxrss'
    probe = Probe(hwm_ok, knobs.get('power'))

    t = time.perf_counter()
    wY, wP = make_data(200, SEED + 1)
    for extra in ({}, {'exact_max': 0}):   # both factorization paths
        audit(Embedding.from_points(wP), wY, kernel, n_actions=ACTIONS, beta=BETA, R1=R1, **{**kw, **extra})
    warm = time.perf_counter() - t

    runs = []
    gc.collect()
    rss_first = rss_bytes()
    snap0, load0 = cpu_snapshot(), loadavg()
    spent = 0.0
    for r in range(repeat):
        gc.collect()
        probe.reset()
        ru0 = resource.getrusage(resource.RUSAGE_SELF)
        rss0 = rss_bytes()
        if hwm_ok: reset_hwm()
        t = time.perf_counter()
        res = audit(pred, Y, kernel, n_actions=ACTIONS, beta=BETA, R1=R1, **kw)
        wall = time.perf_counter() - t
        ru1 = resource.getrusage(resource.RUSAGE_SELF)
        if hwm_ok: peak = max(probe.peak_abs, hwm_bytes()) - rss0
        else: peak = ru1.ru_maxrss * 1024 - rss_first
        tt, pb, pp = dict(probe.t), probe.phase_block, probe.phase_pass
        runs.append(dict(
            wall=wall, seconds=res.info['seconds'], value=res.value, search_value=res.info['search_value'],
            start_values=res.info['start_values'], method=res.info['method'],
            rank_P=res.info['rank_P'], rank_R=res.info['rank_R'],
            captured_P=res.info['captured_P'], captured_R=res.info.get('captured_R'),   # None on the landmark path
            factors=tt['_factors'], search=tt['_search'], witnesses=tt['_witnesses'], block=tt['block'],
            matmat=tt['matmat'], dense=tt['dense'], traces=tt['traces'],
            factors_block=pb.get('_factors', 0.0), factors_products=pp.get('_factors', 0.0) - pb.get('_factors', 0.0),
            factors_rest=tt['_factors'] - pp.get('_factors', 0.0),
            witnesses_block=pb.get('_witnesses', 0.0),
            n_matmat=probe.n_matmat, nfev=probe.nfev, peak=peak, phase_peak=dict(probe.phase_peak),
            minflt=ru1.ru_minflt - ru0.ru_minflt))
        spent += wall
        del res
        if spent >= repeat_time: break
    snap1, load1 = cpu_snapshot(), loadavg()
    wall, own, busy, steal = (b - a for a, b in zip(snap0, snap1))
    capacity = wall * len(os.sched_getaffinity(0))
    best = min(runs, key=lambda r: r['wall'])
    try: layer = numba.threading_layer()
    except Exception: layer = '?'
    info = dict(n=n, kw=kw, knobs=knobs, blas_threads=blas_threads(), runs=runs, best=best,
                times=[r['wall'] for r in runs], peak=max(r['peak'] for r in runs), dense_bytes=8 * n * n, warmup=warm,
                method_mem=method_mem, base_rss=rss_first, window=wall, other_cpu=max(0.0, busy - own) / capacity,
                steal=steal / capacity, own_cpu=own / capacity, load=[load0, load1], threading_layer=layer,
                numba_threads=numba.get_num_threads())
    print('RESULT ' + json.dumps(info), flush=True)


# ----------------------------------------------------------------------------- driver
def parse_kw(items):
    "audit() keyword arguments given as name=value (Python literals)."
    import ast
    kw = {}
    for it in items or ():
        k, _, v = it.partition('=')
        try: kw[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError): kw[k] = v
    return kw


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--n', type=int, nargs='+', default=None, help=f'sample sizes (default {FULL_NS})')
    ap.add_argument('--quick', action='store_true', help=f'n = {QUICK_NS}, a smoke run')
    ap.add_argument('--repeat', type=int, default=3, help='timed audits per n (best reported)')
    ap.add_argument('--repeat-time', type=float, default=60,
                    help='stop repeating once this many seconds of timed audits were spent on one n')
    ap.add_argument('--kw', nargs='*', default=None, metavar='NAME=VALUE',
                    help='keyword arguments passed to audit() (e.g. n_starts=3 max_iter=100 max_rank=100)')
    ap.add_argument('--blas-threads', type=int, default=None,
                    help='profiling: OPENBLAS_NUM_THREADS for the measurement subprocesses (default: unset)')
    ap.add_argument('--numba-threads', type=int, default=None,
                    help='profiling: NUMBA_NUM_THREADS for the measurement subprocesses (default: unset)')
    ap.add_argument('--memory-budget', type=float, default=None, metavar='MiB',
                    help='profiling: deccal.runtime.MEMORY_BUDGET (tile size of the passes; default 256 MiB), patched '
                         'in memory')
    ap.add_argument('--power', type=int, default=None,
                    help='profiling: power iterations of the randomized factorization (_factors(power=...), default 1)')
    ap.add_argument('--retries', type=int, default=1,
                    help='measure again (up to this many times) when other processes took > 5%% of the CPUs')
    ap.add_argument('--max-wait', type=float, default=60,
                    help='before each n, wait up to this many seconds for other processes to go idle')
    ap.add_argument('--time-budget', type=float, default=600,
                    help='after this many seconds, stop waiting for idle CPUs and stop retrying')
    ap.add_argument('--out', default=None,
                    help='also write the markdown results here (default: bench/audit_results.md for the full default '
                         'run)')
    ap.add_argument('--one', type=int, help=argparse.SUPPRESS)
    ap.add_argument('--kw-json', default='{}', help=argparse.SUPPRESS)
    ap.add_argument('--knobs-json', default='{}', help=argparse.SUPPRESS)
    args = ap.parse_args()
    kw = parse_kw(args.kw)
    knobs = {k: v for k, v in (('memory_budget', args.memory_budget), ('power', args.power)) if v is not None}
    env = dict(os.environ)
    for var, v in (('OPENBLAS_NUM_THREADS', args.blas_threads), ('NUMBA_NUM_THREADS', args.numba_threads)):
        if v is not None: env[var] = str(v); knobs[var] = v

    if args.one:
        run_one(args.one, args.repeat, args.repeat_time, json.loads(args.kw_json), json.loads(args.knobs_json))
        return

    ns = QUICK_NS if args.quick else (args.n or FULL_NS)
    info = machine_info(('audit.py', 'kernels.py'))
    print(info, flush=True)
    busy, load = other_busy(), loadavg()
    print(f"before the benchmark: load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"other processes use {100 * busy:.0f}% of the CPUs", flush=True)
    if busy > 0.1: print("WARNING: the machine is busy; timings will be disturbed.", flush=True)
    print(f"n = {ns}; RBF(gamma={GAMMA}), d = {D}, {ACTIONS} actions, beta = {BETA:g}, R1 = {R1:g}; "
          f"audit() keyword arguments: {kw or 'defaults'}" + (f"; profiling settings: {knobs}" if knobs else ''),
          flush=True)
    results, t_all = {}, time.perf_counter()
    for n in ns:
        cmd = [sys.executable, os.path.abspath(__file__), '--one', str(n), '--repeat', str(args.repeat),
               '--repeat-time', str(args.repeat_time), '--kw-json', json.dumps(kw), '--knobs-json', json.dumps(knobs)]
        r = None
        for attempt in range(1 + args.retries):
            late = time.perf_counter() - t_all > args.time_budget
            waited = 0.0 if late else wait_idle(args.max_wait)
            if waited: print(f"  (waited {waited:.0f} s for other processes to go idle)", flush=True)
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, env=env)
            line = [l for l in p.stdout.splitlines() if l.startswith('RESULT ')]
            if p.returncode or not line:
                print(f"  n={n}: FAILED (rc={p.returncode})\n{p.stdout}\n{p.stderr}", flush=True)
                r = None
                break
            r = json.loads(line[-1][7:])
            b = r['best']
            print(f"  n={n:6d} {b['method']:10s} runs {', '.join(ft(t) for t in r['times'])} s; "
                  f"best: factors {ft(b['factors'])} (kernel blocks {ft(b['factors_block'])}, products "
                  f"{ft(b['factors_products'])}, rest {ft(b['factors_rest'])}; {b['n_matmat']} matmat passes in all), "
                  f"search {ft(b['search'])} ({b['nfev']} evaluations), witnesses {ft(b['witnesses'])}; ranks P/R "
                  f"{b['rank_P']}/{b['rank_R']}; captured {b['captured_P']:.6f}/{fcap(b['captured_R'])}; value "
                  f"{b['value']:.4g} (search {b['search_value']:.4g}); peak {fgb(r['peak'])} GB (phases: "
                  f"{', '.join(f'{k[1:]} {fgb(v)}' for k, v in b['phase_peak'].items())}); dense n x n "
                  f"{fgb(r['dense_bytes'])} GB; minor faults {b['minflt']}; warm-up {r['warmup']:.1f} s; OpenBLAS "
                  f"threads {r['blas_threads']}, Numba {r['threading_layer']} {r['numba_threads']}; other processes "
                  f"{100 * r['other_cpu']:.0f}%, steal {100 * r['steal']:.0f}%, load {r['load'][0][0]:.2f} -> "
                  f"{r['load'][1][0]:.2f}", flush=True)
            if not disturbed(r) or late: break
            if attempt < args.retries: print("  disturbed by other processes: measuring again", flush=True)
        if r is not None: results[n] = r
    elapsed = time.perf_counter() - t_all

    rows = ['| n | method | time (s) | factors (s): kernel blocks / products / rest | search (s) | witnesses (s) '
            '| exponent vs previous n | value | rank P / R | captured trace P / R | peak increase (GB) | dense n x n '
            '(GB) | peak / dense | others\' CPU, load |',
            '|---:|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|']
    prev, exps = None, {}
    for n in ns:
        r = results.get(n)
        if r is None: rows.append(f"| {n} | failed |" + ' |' * 12); continue
        b = r['best']
        if prev is not None:
            exps[n] = math.log(b['wall'] / prev[1]) / math.log(n / prev[0])
        e = f"{exps[n]:.2f}" if n in exps else '-'
        rows.append(
            f"| {n} | {b['method']} | {ft(b['wall'])} | {ft(b['factors'])}: {ft(b['factors_block'])} / "
            f"{ft(b['factors_products'])} / {ft(b['factors_rest'])} | {ft(b['search'])} ({b['nfev']} ev.) | "
            f"{ft(b['witnesses'])} | {e} | {b['value']:.4f} | {b['rank_P']} / {b['rank_R']} | {b['captured_P']:.6f} / "
            f"{fcap(b['captured_R'])} | {fgb(r['peak'])} | {fgb(r['dense_bytes'])} | "
            f"{r['peak'] / r['dense_bytes']:.2f} | {100 * r['other_cpu']:.0f}%, "
            f"{r['load'][0][0]:.1f}-{r['load'][1][0]:.1f} |")
        prev = (n, b['wall'])
    table = '\n'.join(rows)

    verdicts = []
    if TARGET_N in results:
        t = results[TARGET_N]['best']['wall']
        verdicts.append(f"- n = {TARGET_N}: {ft(t)} s (target <= {TARGET_S:g} s on 2 cores): "
                        f"{'MET' if t <= TARGET_S else 'MISSED'}")
    for n, e in exps.items():
        verdicts.append(f"- growth up to n = {n}: exponent {e:.2f} (target <= 2): {'MET' if e <= 2.0 else 'MISSED'}")
    rnd = [n for n in ns if n in results and results[n]['best']['method'] == 'randomized']
    if len(rnd) >= 2:
        x = np.log([n for n in rnd]); y = np.log([results[n]['best']['wall'] for n in rnd])
        verdicts.append(f"- least-squares exponent over the randomized-path sizes {rnd}: {np.polyfit(x, y, 1)[0]:.2f}")
    budget = knobs.get('memory_budget', 256) * 2**20
    for n in ns:
        r = results.get(n)
        if r is None: continue
        q, b = r['peak'] / r['dense_bytes'], r['best']
        if b['method'] == 'exact':
            verdicts.append(f"- n = {n}: exact path (n <= exact_max = {r['kw'].get('exact_max', 1500)}) builds dense P "
                            f"and R ({fgb(2 * r['dense_bytes'])} GB together) and their eigendecompositions; peak "
                            f"{fgb(r['peak'])} GB = {q:.2f}x one dense n x n matrix (by design on this path)")
        elif b['method'] == 'landmarks':
            verdicts.append(f"- n = {n}: landmark path (chosen by method='auto'); peak "
                            f"{fgb(r['peak'])} GB = {q:.2f}x one dense n x n matrix (target for large n: well below, < "
                            f"{WELL_BELOW:g}x): {'MET' if q < WELL_BELOW else 'MISSED'}")
        elif 16.0 * n * n <= budget:
            verdicts.append(f"- n = {n}: randomized path; dense P and R ({fgb(2 * r['dense_bytes'])} GB together) fit "
                            f"in the {budget / 2**20:g} MiB budget, so they are computed once and kept; peak "
                            f"{fgb(r['peak'])} GB = {q:.2f}x one dense n x n matrix (by design)")
        else:
            verdicts.append(f"- n = {n}: randomized path, passes over tiles; peak {fgb(r['peak'])} GB = "
                            f"{q:.2f}x one dense n x n matrix (target for large n: well below, < {WELL_BELOW:g}x): "
                            f"{'MET' if q < WELL_BELOW else 'MISSED'}")
    noisy = [str(n) for n, r in results.items() if disturbed(r)]
    if noisy:
        verdicts.append(f"- Warning: other processes took > 5% of the CPUs during n = {', '.join(noisy)} "
                        f"(after up to {args.retries} retries); timings are inflated accordingly.")
    steal = max((r['steal'] for r in results.values() if r['window'] >= 1.0), default=0.0)
    if steal > 0.05:
        verdicts.append(f"- Note: hypervisor steal reached {100 * steal:.0f}% of CPU capacity during some "
                        "measurements.")
    any_r = next(iter(results.values()), None)
    layer = f"{any_r['threading_layer']}, {any_r['numba_threads']} threads" if any_r else '?'
    method = any_r['method_mem'] if any_r else '?'
    notes = (f"Scenario: point forecasts in R^3 (`Embedding.from_points`), `RBF(gamma={GAMMA})`, {ACTIONS} actions, "
             f"beta = {BETA:g}, R1 = {R1:g}; audit() keyword arguments: {kw or 'all defaults'}"
             f"{f'; profiling settings: {knobs}' if knobs else ''}. Data: x ~ N(0, I_3), "
             f"predictions 0.8 x, outcomes x + 0.3 N(0, I_3), seed {SEED}. Time = wall clock of `audit(...)`, best of "
             f"up to {args.repeat} runs (fewer once {args.repeat_time:g} s were spent) after warm-up audits on n = 200 "
             f"(both the exact and the randomized path). Split of time from the same run, by timers around "
             f"`_factors`, `_search`, `_witnesses`, `_Grams.tile` (kernel evaluations of tiles of P and R) and "
             f"`_Grams.matmat`/`dense`: within `_factors`, \"kernel blocks\" = time in `_Grams.tile` (kernel "
             f"evaluations of tiles of P and R), \"products\" = the rest of the passes over the blocks (BLAS "
             "products with the sketch, or filling dense P and R), \"rest\" = QR, eigh, traces. Exponent = log(t_n / "
             f"t_prev) / log(n / n_prev). Peak = peak RSS during the audit minus RSS just before it ({method}); "
             f"dense n x n = 8 n^2 bytes (1 GB = 1e9 bytes). Each n in a fresh subprocess. Numba threading layer: "
             f"{layer}. \"others' CPU\" = CPU used by other processes during the timed runs (share of 2 CPUs), "
             f"and the 1-min load average before-after. Total benchmark time {elapsed:.0f} s.")
    text = f"{info}\n\n{notes}\n\n{table}\n\nTargets:\n" + '\n'.join(verdicts)
    print('\n' + text, flush=True)
    out = args.out or (None if args.quick or args.n or kw or knobs else
                       os.path.join(os.path.dirname(os.path.abspath(__file__)), 'audit_results.md'))
    if out:
        with open(out, 'w') as fh: fh.write('# Auditor benchmark (bench/audit.py)\n\n' + text + '\n')
        print(f"\nwritten to {out}")


if __name__ == '__main__':
    main()
