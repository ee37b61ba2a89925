"""Benchmark: fitting `deccal.DimFreeDeCal` from n = 1,000 to 1,000,000 rows (the row-block path `run_rounds` above
20,000).

Prints figures; it is not a test.  Usage:

    python bench/fit_scale.py                    # n = 1e3 .. 1e6 (about an hour); writes bench/fit_scale_results.md
                                                 # and bench/fit_scale.png
    python bench/fit_scale.py --n 1000 100000    # chosen sizes, nothing written
    python bench/fit_scale.py --profile          # cProfile of a 5-round fit at n = 100,000, printed, nothing written

Scenario (as bench/audit_scale.py): point forecasts in R^3 (`Embedding.from_points`), RBF kernel gamma = 0.5,
5 actions, beta = 10, R1 = 1, eps = 0.02, step='line-search', max_rounds=20, early_stopping=False (so 20 rounds
unless the auditor finds nothing above 3 eps / 4 first; the rounds run are reported); every other parameter at
its default (max_rank=300, search_max=20,000, sample='reuse', n_starts=2, max_iter=100).  Data: x ~ N(0, I_3),
predictions 0.8 x, outcomes x + 0.3 N(0, I_3).  Up to n = 20,000 `fit` runs in memory on the whole sample;
above, `run_rounds`: the basis from a pivoted Cholesky on 20,000 random rows, the state of every row in whitened
coordinates (three n x r arrays, r = rank_), each round's search on 20,000 random rows, the patch on all rows.
Targets: n = 100,000 in at most 60 s and n = 1,000,000 in at most 10 minutes on 2 cores; peak memory at
1,000,000 at most 8 GB (also given as a multiple of n r 8 bytes).  If r = 300 takes 1,000,000 over 8 GB, it is
run again with max_rank=200.  If 100,000 misses 60 s, a 5-round fit at 100,000 is profiled (cProfile) and where
the time goes is written to the results.

Each n runs in a fresh subprocess (`--one N`): a warm-up fit on 300 points (in-memory path) and one on 600 points
with search_max=300 (row-block path), so Numba's compile or cache load is excluded; then one timed fit.  Peak
memory = VmHWM during the fit - VmRSS before it (VmHWM reset through /proc/self/clear_refs).  Interference:
before each run the parent waits (up to 60 s; the first series waited up to 10 minutes) until other processes use
less than 10% of the CPUs (the checkout is shared); `others busy` = share of the CPUs other processes used in the
second before the run (as audit_scale.py), and `others during` = the same over the timed fit (whole-machine busy
CPU from /proc/stat minus this process's).
The fit's parts are timed by wrapping deccal.dimfree's module functions in the subprocess (no library code is
changed): the basis (`make_basis` + `whiten`), the row state (`LocalRows.build`), the searches (`search_groups`,
which runs `search_rule`) and stacking the search rows the blocks return (`stack_search`; records before this
change timed `gather_search`, which also took the rows from the blocks); the rest of the time is the per-round row
work (square loss, the search rows, the rule's statistics, the patch and projection of every row).  The time
exponent is the least-squares slope of log(time) on log(n) over n >= 30,000 (r = 300).  A run that takes more than
15 minutes is stopped and recorded.
"""
from __future__ import annotations
import argparse, json, os, re, subprocess, sys, time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
from _measure import other_busy, machine_info, loadavg, wait_idle, GB   # noqa: E402
from _scale import make_data, warm_up, fit_one, blas_env, FIT_KW, FIT_ROUNDS   # noqa: E402

NS = [1000, 3000, 10_000, 30_000, 100_000, 300_000, 1_000_000]
TIMEOUT = 15 * 60            # seconds: a run longer than this is stopped
IDLE_WAIT = 60               # seconds: before each run, wait up to this long for other processes to use < 10% of the
                             # CPUs (the machine stayed busy)
OUT = os.path.join(REPO, 'bench', 'fit_scale_results.md')
PNG = os.path.join(REPO, 'bench', 'fit_scale.png')


# ----------------------------------------------------------------------------- the subprocess
def profile_one(n=100_000, rounds=5, top=30):
    """cProfile of a `rounds`-round fit at n (after the warm-up); the top functions by own and cumulative time, and
    array shapes."""
    import cProfile, pstats, io, importlib
    # where the loop calls them
    dau, dfm = importlib.import_module('deccal.worst_pair'), importlib.import_module('deccal.rounds')
    from deccal import Embedding, RBF, DimFreeDeCal
    warm_up()
    shapes = {}
    def record(name, f, shape_of):
        def g(*a, **k):
            key = (name, shape_of(*a, **k)); shapes[key] = shapes.get(key, 0) + 1
            return f(*a, **k)
        return g
    dau._objective = record('audit._objective (SP, SR)', dau._objective, lambda v, SP, SR, *r: (SP.shape, SR.shape))
    dfm.search_groups = record('dimfree.search_groups (S, T)', dfm.search_groups,
                               lambda S, T, *r, **k: (S.shape, T.shape))
    for meth in ('stats', 'patch', 'square_loss_sum', 'take'):
        setattr(importlib.import_module('deccal.rows').Rows, meth,
                record(f'_Rows.{meth} (x per block)', getattr(importlib.import_module('deccal.rows').Rows, meth),
                       lambda self, *a, **k: self.x.shape))
    px, y = make_data(n)
    pred = Embedding.from_points(px)
    cal = DimFreeDeCal(RBF(0.5), max_rounds=rounds, **FIT_KW)
    pr = cProfile.Profile()
    t0 = time.perf_counter()
    pr.enable(); cal.fit(pred, y); pr.disable()
    secs = time.perf_counter() - t0
    st = pstats.Stats(pr)
    rows = []
    for (file, line, fn), (cc, nc, tt, ct, callers) in st.stats.items():
        rows.append(dict(func=(f"{os.path.relpath(file, REPO) if file.startswith(REPO) else os.path.basename(file)}"
                               f":{line}({fn})"),
                         ncalls=nc, tottime=tt, cumtime=ct))
    by_tot = sorted(rows, key=lambda r: -r['tottime'])[:top]
    by_cum = sorted(rows, key=lambda r: -r['cumtime'])[:top]
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats('cumulative').print_stats(25)
    return dict(n=n, rounds=len(cal.all_rounds_), seconds=secs, rank=int(cal.rank_), by_tottime=by_tot,
                by_cumtime=by_cum, shapes=[dict(what=k[0], shape=str(k[1]), calls=v)
                                           for k, v in sorted(shapes.items(), key=lambda kv: -kv[1])],
                text=s.getvalue())


# ----------------------------------------------------------------------------- the parent
def run(args, timeout=TIMEOUT, blas=None):
    """One subprocess; its last stdout line as JSON, or dict(timeout=True, progress=...) when stopped after `timeout`
    seconds."""
    t0 = time.perf_counter()
    try: out = subprocess.run([sys.executable, __file__] + args, capture_output=True, text=True, timeout=timeout,
                              env=blas_env(blas))
    except subprocess.TimeoutExpired as e:
        txt = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or '')
        prog = [json.loads(l[9:]) for l in txt.splitlines() if l.startswith('PROGRESS ')]
        return dict(timeout=True, seconds_waited=time.perf_counter() - t0, progress=prog)
    if out.returncode: raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def partial(r):
    """What a stopped run finished: (rounds done, seconds per round over them, setup seconds, peak GB so far), from
    its PROGRESS lines."""
    prog = r.get('progress') or []
    setup = next((p['seconds'] for p in prog if p['event'] == 'setup'), None)
    rnd = [p for p in prog if p['event'] == 'round']
    per = (rnd[-1]['seconds'] - setup) / len(rnd) if rnd and setup is not None else None
    peak = max((p['peak_gb'] for p in prog), default=None)
    return len(rnd), per, setup, peak


def bt(r): return r.get('blas_threads') or 'default (2)'
def series(rows, blas=None, max_rank=300):
    return [r for r in rows if r.get('blas_threads') == blas and r['max_rank'] == max_rank]


def fmt_row(r):
    if r.get('timeout'):
        done, per, setup, peak = partial(r)
        R = r.get('max_rounds', FIT_ROUNDS)
        est = '' if per is None else f" (est. {setup + per * R:.0f} s for {R})"
        per_s = '' if per is None else f"{per:.1f}"
        setup_s = '' if setup is None else f"{setup:.1f}"
        peak_s = '' if peak is None else f">= {peak:.3f}"
        ratio_s = '' if peak is None else f">= {peak * GB / (r['n'] * r['max_rank'] * 8):.2f} (r = max_rank)"
        return (f"| {r['n']:,} | {r['max_rank']} | {bt(r)} | stopped after {r['seconds_waited']:.0f} s, {done} rounds "
                f"done{est} | {per_s} | | | {setup_s} | {done} of {R} | | {peak_s} | {ratio_s} | | "
                f"{r['others_busy']:.0%} / ? |")
    t = r['timers']
    search = t.get('search', 0.0) / max(r['rounds'], 1)
    setup = t.get('basis', 0) + t.get('whiten', 0) + t.get('build_rows', 0)
    rest = (r['seconds'] - setup - t.get('search', 0) - t.get('gather', 0)) / max(r['rounds'], 1)
    return (f"| {r['n']:,} | {r['max_rank']} | {bt(r)} | {r['seconds']:.1f} | {r['seconds'] / max(r['rounds'], 1):.2f} "
            f"| {search:.2f} | {rest:.3f} | {setup:.1f} | {r['rounds']} | {r['rank']} | {r['peak_gb']:.3f} | "
            f"{r['peak_over_nr8']:.2f} | {r['square_loss']:.5f} | {r['others_busy']:.0%} / {r['others_during']:.0%} |")


def slope_of(rows, lo=30_000, blas=None):
    big = [r for r in series(rows, blas) if r['n'] >= lo and not r.get('timeout')]
    if len(big) < 2: return float('nan')
    return float(np.polyfit(np.log([r['n'] for r in big]), np.log([r['seconds'] for r in big]), 1)[0])


def saved():
    "The JSON block of the existing results file ({} if none)."
    try:
        with open(OUT) as f: return json.loads(re.search(r"```json\n(.*?)\n```", f.read(), re.S).group(1))
    except Exception: return {}


def audit_times():
    "The audit's (n, seconds) from bench/audit_scale_results.md, or [] when that file has none."
    try:
        with open(os.path.join(REPO, 'bench', 'audit_scale_results.md')) as f: txt = f.read()
        data = json.loads(re.search(r"```json\n(.*?)\n```", txt, re.S).group(1))
        return [(r['n'], r['seconds'], r['method']) for r in data['rows']]
    except Exception: return []


def plot(rows):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from deccal.runtime import atomic_write
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for blas, color, name in ((None, 'C0', 'OpenBLAS default (2 threads)'), (1, 'C2', 'OPENBLAS_NUM_THREADS=1')):
        ok = [r for r in series(rows, blas) if not r.get('timeout')]
        if not ok: continue
        ns, ts = np.array([r['n'] for r in ok]), np.array([r['seconds'] for r in ok])
        ax.loglog(ns, ts, 'o-', color=color, label=f'fit, 20 rounds, max_rank 300, {name}')
        big = ns >= 30_000
        if big.sum() > 1:
            a, b = np.polyfit(np.log(ns[big]), np.log(ts[big]), 1)
            xx = np.geomspace(ns[big].min(), ns[big].max(), 20)
            ax.loglog(xx, np.exp(b) * xx**a, '--', color=color, alpha=0.6,
                      label=f'  least squares over n >= 3e4: time ~ n^{a:.2f}')
    for r in rows:
        if not r.get('timeout'): continue
        done, per, setup, peak = partial(r)
        R = r.get('max_rounds', FIT_ROUNDS)
        ax.loglog([r['n']], [r['seconds_waited']], 'x', color='C3', ms=9,
                  label=f"n = {r['n']:,} (max_rank {r['max_rank']}, BLAS {bt(r)}) stopped at "
                        f"{r['seconds_waited']:.0f} s ({done} rounds)")
        if per: ax.loglog([r['n']], [setup + per * R], 'o', mfc='none', color='C3',
                          label=f"  its estimate for {R} rounds: {setup + per * R:.0f} s")
    for r in rows:
        if not r.get('timeout') and r['max_rank'] != 300:
            ax.loglog([r['n']], [r['seconds']], 's', color='C4',
                      label=f"fit, max_rank {r['max_rank']} (rank {r['rank']}), BLAS {bt(r)}")
    au = audit_times()
    if au:
        an, at = np.array([x[0] for x in au]), np.array([x[1] for x in au])
        lm = np.array([x[2] == 'landmarks' for x in au])
        a2 = np.polyfit(np.log(an[lm]), np.log(at[lm]), 1)[0] if lm.sum() > 1 else float('nan')
        ax.loglog(an, at, '^-', color='C1',
                  label=f'audit (bench/audit_scale_results.md); landmark sizes: time ~ n^{a2:.2f}')
    ax.axhline(60, color='grey', lw=0.6, ls='-.'); ax.text(1000, 63, 'target at 1e5: 60 s', fontsize=8, color='grey')
    ax.axhline(600, color='grey', lw=0.6, ls='-.')
    ax.text(1000, 630, 'target at 1e6: 10 min', fontsize=8, color='grey')
    ax.set_xlabel('n (rows)'); ax.set_ylabel('seconds'); ax.grid(True, which='both', alpha=0.3)
    ax.set_title('DimFreeDeCal.fit time against n (2 shared cores)')
    ax.legend(fontsize=7, loc='lower right')
    fig.tight_layout()
    atomic_write(PNG, lambda f: fig.savefig(f, format='png', dpi=120))
    plt.close(fig)


def objective_ab(reps=3, evals=20):
    """The audit objective on (20,000, 300) arrays (one L-BFGS evaluation of a round's search): ms per evaluation,
    OpenBLAS default against 1 thread, alternated."""
    code = ("import sys, time, importlib, numpy as np; sys.path.insert(0, %r); "
            "dau = importlib.import_module('deccal.worst_pair');"
            "rng = np.random.default_rng(0); "
            "SP, SR = 0.05 * rng.standard_normal((20000, 300)), 0.05 * rng.standard_normal((20000, 300));"
            "w = np.full(20000, 1 / 20000); v = 0.01 * rng.standard_normal(1500); "
            "dau._objective(v, SP, SR, w, 10.0, 1.0, 5);"
            "t = time.perf_counter(); [dau._objective(v, SP, SR, w, 10.0, 1.0, 5) for _ in range(%d)];"
            "print((time.perf_counter() - t) / %d * 1e3)") % (REPO, evals, evals)
    out = {'default': [], '1': []}
    for _ in range(reps):
        for blas in (None, 1):
            busy = other_busy(0.5)
            p = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=blas_env(blas))
            out['1' if blas else 'default'].append(dict(ms=float(p.stdout.strip().splitlines()[-1]), others_busy=busy))
    return out


def write(rows, profs, ab, done, notes=()):
    from deccal.runtime import atomic_write
    byn = {(r['n'], r['max_rank'], r.get('blas_threads')): r for r in rows}
    r5, r6, r6b = byn.get((100_000, 300, None)), byn.get((1_000_000, 300, None)), byn.get((1_000_000, 200, None))
    verdict = lambda ok: 'met' if ok else 'NOT met'
    lines = ['# DimFreeDeCal.fit from n = 1,000 to 1,000,000', '', machine_info(('dimfree.py', 'audit.py')), '',
             ('' if done else '**Partial: the run is still going or was interrupted; the rows below are those '
                              'finished.**'), '',
             'Produced by `python bench/fit_scale.py` (then `--finish`, and `--update --n ... --blas-threads 1` for '
             'the second series). Scenario: point forecasts in R^3, RBF gamma = 0.5, 5 actions, beta = 10, R1 = 1, '
             "eps = 0.02, step='line-search', max_rounds = 20, early_stopping=False, every other parameter at its "
             'default (max_rank 300, search_max 20,000, n_starts 2, max_iter 100). n <= 20,000: the in-memory path; '
             'above: `run_rounds`. Peak = VmHWM during the fit minus VmRSS before it; r = rank_. "s/round" = seconds / '
             'rounds run; "search s/round" = the `_search` calls (L-BFGS on 20,000 rows, or on all n up to 20,000) per '
             'round; "rows s/round" = (seconds - setup - search - gathering the search rows) / rounds, i.e. the work '
             'on every row per round (for n <= 20,000 everything but the search); "setup" = basis + whitening + '
             'building the row state. BLAS threads: OpenBLAS\'s default (2 threads on this machine; the main series, '
             'on which the targets are judged) or OPENBLAS_NUM_THREADS=1 in the subprocess. Others busy: share of the '
             '2 CPUs used by other processes in the second before / during the fit (other developers\' jobs ran on the '
             'same 2 cores throughout).', '',
             '| n | max_rank | BLAS threads | seconds | s/round | search s/round | rows s/round | setup s | rounds | '
             'rank_ | peak GB | peak / (n r 8) | final square loss | others busy (before / during) |',
             '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    lines += [fmt_row(r) for r in rows]
    lines += ['', f"Time grows as n^{slope_of(rows):.2f} over n >= 30,000 with OpenBLAS's default threads"
              + (f", n^{slope_of(rows, blas=1):.2f} with OPENBLAS_NUM_THREADS=1" if len(series(rows, 1)) > 1 else '')
              + ' (least squares on log-log, max_rank 300).', '']
    if r5 and not r5.get('timeout'):
        lines.append(f"Target n = 100,000 in <= 60 s: {verdict(r5['seconds'] <= 60)} ({r5['seconds']:.1f} s, of which "
                     f"the searches {r5['timers'].get('search', 0):.1f} s).")
    if r6:
        if r6.get('timeout'):
            done_, per, setup, peak = partial(r6)
            lines.append(f"Target n = 1,000,000 in <= 10 min: NOT met (stopped after {r6['seconds_waited']:.0f} s with "
                         f"{done_} of {r6.get('max_rounds', FIT_ROUNDS)} rounds done"
                         + (f"; setup {setup:.0f} s, then {per:.1f} s per round: about "
                            f"{setup + per * r6.get('max_rounds', FIT_ROUNDS):.0f} s for all rounds" if per else '')
                         + ').')
            if peak is not None:
                lines.append(f"Target peak memory at 1,000,000 <= 8 GB: {verdict(peak <= 8)} so far: {peak:.2f} GB = "
                             f"{peak * GB / (r6['n'] * r6['max_rank'] * 8):.2f} x n r 8 (r = max_rank = "
                             f"{r6['max_rank']}) when it was stopped.")
        else:
            lines.append(f"Target n = 1,000,000 in <= 10 min: {verdict(r6['seconds'] <= 600)} ({r6['seconds']:.0f} s = "
                         f"{r6['seconds'] / 60:.1f} min).")
            lines.append(f"Target peak memory at 1,000,000 <= 8 GB: {verdict(r6['peak_gb'] <= 8)} ({r6['peak_gb']:.2f} "
                         f"GB = {r6['peak_over_nr8']:.2f} x n r 8 bytes with r = {r6['rank']}; the state alone is 3 n "
                         f"r 8 = {3 * r6['n'] * r6['rank'] * 8 / GB:.2f} GB)"
                         + ('; so the max_rank=200 run was not needed.' if r6['peak_gb'] <= 8 and not r6b else '.'))
    if r6b:
        if r6b.get('timeout'):
            done_, per, setup, peak = partial(r6b)
            lines.append(f"With max_rank=200 at 1,000,000: stopped after {r6b['seconds_waited']:.0f} s with "
                         f"{done_} rounds done"
                         + (f" (setup {setup:.0f} s, {per:.1f} s per round: about "
                            f"{setup + per * r6b.get('max_rounds', FIT_ROUNDS):.0f} s for all rounds)" if per else '')
                         + (f"; peak so far {peak:.2f} GB = {peak * GB / (r6b['n'] * 200 * 8):.2f} x n r 8 (memory "
                            f"target {verdict(peak <= 8)})" if peak is not None else '') + '.')
        else:
            lines.append(f"With max_rank=200 at 1,000,000: {r6b['seconds']:.0f} s ({r6b['seconds'] / 60:.1f} min, time "
                         f"target {verdict(r6b['seconds'] <= 600)}), peak {r6b['peak_gb']:.2f} GB = "
                         f"{r6b['peak_over_nr8']:.2f} x n r 8 with r = {r6b['rank']} (memory target "
                         f"{verdict(r6b['peak_gb'] <= 8)}), final square loss {r6b['square_loss']:.5f}.")
    one_t = {r['n']: r for r in series(rows, 1) if not r.get('timeout')}
    if one_t:
        lines += ['', 'With OPENBLAS_NUM_THREADS=1 (same scenario, second series): ' + '; '.join(
            f"n = {n:,}: {r['seconds']:.1f} s (search {r['timers'].get('search', 0) / max(r['rounds'], 1):.2f} s/round)"
            for n, r in sorted(one_t.items())) + '.']
        for n, lim in ((100_000, 60), (1_000_000, 600)):
            if n in one_t: lines.append(f"  n = {n:,} within {lim} s with one BLAS thread: "
                                        f"{verdict(one_t[n]['seconds'] <= lim)} ({one_t[n]['seconds']:.1f} s).")
    lines += ['', 'Audit values (first round -> last round), stop reasons, base square loss: ' +
              '; '.join(f"n = {r['n']:,} (max_rank {r['max_rank']}, BLAS {bt(r)}): {r['audit_first']:.4f} -> "
                        f"{r['audit_last']:.4f}, {r['stop_reason']}, {r['base_square_loss']:.5f}" for r in rows
                        if not r.get('timeout')) + '.', '']
    srcs = sorted({json.dumps(r.get('sources'), sort_keys=True) for r in rows if r.get('sources')})
    lines.append('Library sources (sha256) the runs loaded: ' + (srcs[0] if len(srcs) == 1 else
                 f"**they changed during the runs** ({len(srcs)} versions: " + ' ; '.join(srcs) + ')') + '.')
    lines += ['', '![time against n](fit_scale.png)', '']
    if notes:
        lines += (['## Notes added to this file by someone else during the runs (kept as written)', '']
                  + [f"> {x}" for x in notes] + [''])
    if ab:
        d, o = [x['ms'] for x in ab['default']], [x['ms'] for x in ab['1']]
        bd, bo = [x['others_busy'] for x in ab['default']], [x['others_busy'] for x in ab['1']]
        lines += ['## One evaluation of the search objective: OpenBLAS threads', '',
                  "`deccal.audit._objective` on (20,000, 300) arrays (what each L-BFGS step of a round's search "
                  'evaluates: four (20,000 x 300) by (300 x 5)-sized products and a quantal response), 20 evaluations '
                  'per process, alternating OpenBLAS default / 1 thread, on the same shared machine: ms per evaluation',
                  '', '| OpenBLAS threads | ms per evaluation (each repetition) | others busy before each |',
                  '|---|---|---|',
                  f"| default (2) | {', '.join(f'{x:.0f}' for x in d)} | {', '.join(f'{b:.0%}' for b in bd)} |",
                  f"| 1 | {', '.join(f'{x:.0f}' for x in o)} | {', '.join(f'{b:.0%}' for b in bo)} |", '']
    for p in profs or []:
        lines += profile_lines(p)
    lines += ['```json', json.dumps(dict(rows=rows, slope=slope_of(rows), slope_blas1=slope_of(rows, blas=1),
                                         objective_ab=ab, notes=list(notes),
                                         profiles=[{k: v for k, v in p.items() if k != 'text'} for p in profs or []])),
              '```', '']
    atomic_write(OUT, lambda f: f.write('\n'.join(lines).encode()))


def reading(prof):
    "Where the time goes, in one paragraph, from the profile's numbers."
    R = max(prof['rounds'], 1)
    every = {}
    for r in prof['by_cumtime'] + prof['by_tottime']: every[r['func']] = r
    def find(tag, key='cumtime'):
        hit = [r for f, r in every.items() if tag in f]
        return (max(hit, key=lambda r: r[key]) if hit
                else dict(ncalls=float('nan'), cumtime=float('nan'), tottime=float('nan')))
    total, search, obj = find('(fit)')['cumtime'], find('(_search)')['cumtime'], find('(_objective)')
    rows = {k: find(f'({k})') for k in ('stats', 'patch', 'coords', 'sq_norms', 'square_loss_sum', 'take',
                                        '_pivoted_cholesky', 'eigh')}
    calls = obj['ncalls'] / R
    return (f"Reading: of {total / R:.1f} s per round, the search takes {search / R:.1f} s "
            f"({search / max(total, 1e-9):.0%}): {calls:.0f} evaluations of `audit._objective` per round (L-BFGS, 2 "
            "random starts + the previous witness, at most 100 iterations each) at "
            f"{obj['tottime'] / max(obj['ncalls'], 1) * 1e3:.0f} ms each, on the (20,000, 300) search rows S and T: "
            "four matrix products of a (20,000 x 300) matrix with a (300 x 5) or (20,000 x 5) one and a quantal "
            "response on (20,000, 5). The work on every row is the rest: the rule's statistics (`Rows.stats`, "
            f"{rows['stats']['cumtime'] / R:.2f} s per round), the patch and projection "
            f"({rows['patch']['cumtime'] / R:.2f} s), the square loss ({rows['square_loss_sum']['cumtime'] / R:.2f} "
            "s), with the coordinates gamma h + x rebuilt as an (n, r) temporary in each of them (`coords`, "
            f"{rows['coords']['ncalls'] / R:.0f} calls, {rows['coords']['tottime'] / R:.2f} s own time per round), on "
            "blocks of about 11,000 rows. One-off: the pivoted Cholesky for the basis "
            f"({rows['_pivoted_cholesky']['cumtime']:.1f} s) and the whitening's eigendecomposition "
            f"({rows['eigh']['cumtime']:.1f} s). (nan: the function is not among the 30 listed.)")


def profile_lines(prof):
    R = max(prof['rounds'], 1)
    out = [f"## Where the time goes at n = 100,000, OpenBLAS threads {prof.get('blas_threads') or 'default (2)'} "
           f"(cProfile, a {prof['rounds']}-round fit: {prof['seconds']:.1f} s under the profiler, rank {prof['rank']})",
           '', reading(prof), '',
           "Per round = the profile's time / rounds. Top functions by cumulative time (NumPy's matrix products run "
           'inside the Python function that calls them, so they count in its own time):', '',
           '| function | calls per round | cumulative s per round | own s per round |', '|---|---|---|---|']
    for r in prof['by_cumtime'][:22]:
        out.append(f"| `{r['func']}` | {r['ncalls'] / R:.1f} | {r['cumtime'] / R:.2f} | {r['tottime'] / R:.2f} |")
    out += ['', '(`bench/fit_scale.py:...(g)` is the wrapper that records the array shapes below and times the parts; '
            'it wraps `_search`, `make_basis`, `whiten`, `stack_search` and the `Rows` methods, so its cumulative time '
            'is theirs.)']
    out += ['', 'Top functions by own time:', '', '| function | calls per round | own s per round |', '|---|---|---|']
    for r in prof['by_tottime'][:15]:
        out.append(f"| `{r['func']}` | {r['ncalls'] / R:.1f} | {r['tottime'] / R:.2f} |")
    out += ['', 'Array shapes seen (calls over the whole profiled fit):', '', '| call | shape | calls |',
            '|---|---|---|']
    for s in prof['shapes'][:20]:
        out.append(f"| {s['what']} | {s['shape']} | {s['calls']} |")
    out.append('')
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument('--n', type=int, nargs='*')
    ap.add_argument('--one', type=int)
    ap.add_argument('--max-rank', type=int, default=300)
    ap.add_argument('--rounds', type=int, default=FIT_ROUNDS)
    ap.add_argument('--blas-threads', type=int, help='OPENBLAS_NUM_THREADS for the measured subprocesses (default: '
                                                     'OpenBLAS decides)')
    ap.add_argument('--profile', action='store_true', help='profile a 5-round fit at n = 100,000 and print it')
    ap.add_argument('--profile-one', type=int)
    ap.add_argument('--update', action='store_true', help='re-measure the sizes given by --n (at --max-rank, '
                                                          '--blas-threads) into the existing results file')
    ap.add_argument('--finish', action='store_true', help="on the results file's rows: the max_rank=200 run, the "
                                                          "profiles and the BLAS comparison if needed, then write")
    a = ap.parse_args(argv)
    if a.update and not a.n: ap.error('--update needs --n')
    if a.one:
        print(json.dumps(fit_one(a.one, a.max_rank, a.rounds))); return
    if a.profile_one:
        print(json.dumps(profile_one(a.profile_one, a.rounds))); return
    if a.profile:
        p = run(['--profile-one', '100000', '--rounds', '5'], blas=a.blas_threads)
        print(p['text']); print('\n'.join(profile_lines(p))); return
    full = a.n is None and not a.update and not a.finish
    rows, st = [], dict(profs=[], ab=None, notes=[])

    def measure(n, max_rank=300, blas=None):
        waited = wait_idle(IDLE_WAIT)
        busy = other_busy(1.0)
        r = run(['--one', str(n), '--max-rank', str(max_rank), '--rounds', str(a.rounds)], blas=blas)
        r.update(n=n, max_rank=max_rank, max_rounds=a.rounds, blas_threads=blas, others_busy=busy, waited_idle=waited,
                 loadavg_before=loadavg())
        rows[:] = [q for q in rows if (q['n'], q['max_rank'], q.get('blas_threads')) != (n, max_rank, blas)] + [r]
        rows.sort(key=lambda q: (q.get('blas_threads') or 0, q['max_rank'] != 300, q['n'], -q['max_rank']))
        if r.get('timeout'):
            done, per, setup, peak = partial(r)
            print(f"n = {n:>9,} (max_rank {max_rank}, BLAS {bt(r)}): stopped after {r['seconds_waited']:.0f} s with "
                  f"{done} rounds done (setup {setup} s, {per} s/round, peak so far {peak} GB)", flush=True)
        else:
            t = r['timers']
            print(f"n = {n:>9,} (max_rank {max_rank}, BLAS {bt(r)}): {r['seconds']:8.1f} s, {r['rounds']} rounds "
                  f"({r['seconds'] / max(r['rounds'], 1):.2f} s/round, search {t.get('search', 0):.1f} s), rank "
                  f"{r['rank']}, peak {r['peak_gb']:.3f} GB = {r['peak_over_nr8']:.2f} n r 8, square loss "
                  f"{r['square_loss']:.5f}, audit {r['audit_first']:.4f} -> {r['audit_last']:.4f} (others busy "
                  f"{busy:.0%} before, {r['others_during']:.0%} during)", flush=True)
        write(rows, st['profs'], st['ab'], False, st['notes']) if (full or a.update) else None
        return r

    if a.update or a.finish:                       # start from the rows (and profiles) already in the results file
        old = saved()
        rows[:] = old.get('rows', [])
        st['profs'] = old.get('profiles') or ([old['profile']] if old.get('profile') else [])
        st['ab'] = old.get('objective_ab')
        st['notes'] = old.get('notes') or []
    if a.update:
        for n in a.n: measure(n, a.max_rank, a.blas_threads)
    elif not a.finish:
        for n in a.n or NS: measure(n, a.max_rank, a.blas_threads)
    if full or a.finish:
        r6 = next((r for r in series(rows) if r['n'] == 1_000_000), None)
        peak6 = None if r6 is None else (partial(r6)[3] if r6.get('timeout') else r6['peak_gb'])
        if peak6 is not None and peak6 > 8: measure(1_000_000, 200)
        r5 = next((r for r in series(rows) if r['n'] == 100_000), None)
        if r5 is not None and (r5.get('timeout') or r5['seconds'] > 60):
            for blas in (None, 1):                 # where the time goes, with OpenBLAS's default threads and with one
                if any(p.get('blas_threads') == blas for p in st['profs']): continue
                p = run(['--profile-one', '100000', '--rounds', '5'], timeout=2 * TIMEOUT, blas=blas)
                p['blas_threads'] = blas; st['profs'].append(p)
                print(p.get('text', p), flush=True)
            if st['ab'] is None: st['ab'] = objective_ab(); print('objective ms per evaluation:', st['ab'], flush=True)
    print(f"time ~ n^{slope_of(rows):.2f} over n >= 30,000 (OpenBLAS default), n^{slope_of(rows, blas=1):.2f} (one "
          "thread)")
    if full or a.finish or a.update:
        write(rows, st['profs'], st['ab'], True, st['notes'])
        plot(rows)
        print('wrote', OUT, 'and', PNG)


if __name__ == '__main__':
    main()
