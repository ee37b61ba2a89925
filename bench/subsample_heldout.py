"""Benchmark: does the subsampled (row-block) path of DimFreeDeCal calibrate as well ON NEW DATA as the full path?

Prints figures; it is not a test.  Usage:

    python bench/subsample_heldout.py                      # every problem, 3 seeds (about 35 minutes on 2 busy cores);
                                                           # writes bench/subsample_heldout_results.md
    python bench/subsample_heldout.py --problems planted --seeds 0     # a part, nothing written
    python bench/subsample_heldout.py --cache /tmp/x.jsonl  # keep finished jobs (and pieces) there and reuse them

The question.  With more than `search_max` fitted rows (sample='reuse'), `DimFreeDeCal.fit` takes the row-block
path (`run_rounds`): the basis of atoms is chosen by a pivoted Cholesky on `search_max` random rows (not all rows),
and each round's auditor search runs on `search_max` random rows (not all), while the patch statistics (G_a, D_hat,
the line search) use every row.  With at most `search_max` rows the old path runs (basis and search on every row).
The bar: the held-out decision calibration of the calibrator fitted on the subsampled path is no worse than the
full path's, within noise.

Design.  For each problem and each seed s in {0, 1, 2}: draw a calibration sample of n = 8,000 points and a fresh
sample of 20,000 points from the same generator (numpy generators seeded [problem, s, 0] and [problem, s, 1]).
Fit, with the same seed s and every other parameter equal,
  (a) the full path:       search_max = n      (early stopping holds out 20%, so 6,400 rows are fitted <= n: old path)
  (b) the subsampled path: search_max = n // 4 (2,000 < 6,400: basis and each round's search on 2,000 random rows).
Early stopping stays at its default (validation_fraction 0.2, n_iter_no_change 5).  Measured on the fresh sample,
for the base predictions and for (a) and (b):
  * the held-out decision calibration error of `certify`: the fresh sample is split in halves (certify's own split,
    seed 0), the auditor searches one half for the worst pair (l, l') and the pair is re-measured on the other half:
    `holdout_value` and its standard error `holdout_se`.  The numbers are exactly those of `cal.certify(fresh_pred,
    fresh_Y)` (for the base predictions `deccal.certify(...)`), computed by the same audit call on the same split
    without `certify`'s last step, `rule_bound` (a bound this benchmark does not use, whose one pass over the n x n
    held-out Gram matrix of 10,000 rows costs 10 to 20 minutes with 32-member ensembles); the script checks the identity
    against `cal.certify` first, on a small planted problem.  The search method is audit's default ('auto':
    randomized sketches at 10,000 rows) on the planted problem, and 'landmarks' (linear in n) on the two tutorial
    problems, whose predictions are ensembles or quantile sets: there the randomized audit of 10,000 rows took 6.5
    minutes (newsvendor) and, extrapolated from 88 s at 2,000 rows (it grows as n^2), over half an hour (Cobb-Douglas)
    in trials with two BLAS threads; the landmark audit found the same witness strength (newsvendor, one calibrator:
    held-out 0.0131 against 0.0123 randomized, se 0.0012).  The same method for base, (a) and (b) within a problem.
  * the square loss E||p(x) - phi(y)||^2: `cal.square_loss(fresh_pred, fresh_Y)` (base: `fresh_pred.sq_error(kernel,
    fresh_Y).mean()`), with the standard error of the paired per-point difference (b) - (a) on the fresh sample
    (from `cal.transform(fresh_pred).sq_error`, checked to agree with `square_loss`).
Reported per problem: the mean and standard deviation over seeds of each number, the difference (b) - (a) with its
standard error across seeds (sd / sqrt(number of seeds)), the certify standard error of that mean difference
(sqrt(mean se_a^2 + mean se_b^2) / sqrt(number of seeds), treating the two audits as independent), and fit times
(wall seconds, with the share of the CPUs other processes used in the second before each fit).  Verdict: (b) is
within noise of (a) if the mean difference is at most 2 combined standard errors, combined = sqrt(se_seeds^2 +
se_certify^2) (this counts the measurement noise twice, as the spread over seeds already contains it: a lenient bar;
the table gives both parts, and with 3 seeds se_seeds has 2 degrees of freedom); (b) is better if the difference is
negative.

Problems (n = 8,000 for all: no fit took over 3 minutes on this machine, see the results):
  1. planted (bench/audit_scale.py's scenario): x ~ N(0, I_3), point forecasts 0.8 x (`Embedding.from_points`),
     outcomes x + 0.3 N(0, I_3); RBF(0.5), n_actions=5, beta=10, R1=1, eps=0.02, step='line-search', max_rounds=30.
     Also with ZhaoDeCal (regularizer 1, no step), same settings, both paths.
  2. Cobb-Douglas (the README's first example, nbs/index.ipynb): mu ~ U(0.2, 0.8)^3, outcomes mu + 0.1 N(0, I_3),
     a 32-member ensemble mu + [0.15, 0, 0] + 0.05 N(0, I_3) (`Embedding.from_samples`); ExpInner(), n_actions=4,
     beta=20, R1=1, eps=0.02, step='line-search', max_rounds=20 (the README's DimFreeDeCal call).
  3. newsvendor (nbs/10_tutorial_newsvendor.ipynb): context x ~ U(0, 1), demand y = 0.2 + 0.8 Beta(8 m, 8 (1 - m)),
     m = 0.25 + 0.5 x; the forecast: 8 quantiles (levels (b + 1/2)/8) of 0.2 + 0.8 Beta(40 m, 40 (1 - m))
     (`Embedding.from_samples`); MinKernel(), n_actions=4, beta=20, R1=1.5, R2=1, eps=0.02, step='line-search',
     max_rounds=15 (the tutorial's calibrator).

Each (problem, seed) runs in a fresh subprocess (`--one PROBLEM SEED`), which prints one JSON line; OpenBLAS runs one
thread unless OPENBLAS_NUM_THREADS says otherwise (as in bench/early_stopping.py: on 2 shared cores, two BLAS threads
slow the search's skinny products down).
"""
from __future__ import annotations
import os
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
# as bench/early_stopping.py: one BLAS thread (the cores are shared)
thread_defaults('OMP_WAIT_POLICY', 'OPENBLAS_NUM_THREADS')
import argparse, json, subprocess, sys, time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
from _measure import other_busy, machine_info   # noqa: E402

N_CAL, N_FRESH, SEEDS = 8000, 20_000, (0, 1, 2)
PROBLEMS = ('planted', 'cobb', 'newsvendor')


# ----------------------------------------------------------------------------- the problems
def planted(n, rng):
    x = rng.standard_normal((n, 3))
    from deccal import Embedding
    return Embedding.from_points(0.8 * x), x + 0.3 * rng.standard_normal((n, 3))


def cobb(n, rng, B=32):
    from deccal import Embedding
    mu = rng.uniform(0.2, 0.8, (n, 3))
    Y = mu + 0.1 * rng.normal(size=(n, 3))
    S = mu[:, None, :] + [0.15, 0, 0] + 0.05 * rng.normal(size=(n, B, 3))
    return Embedding.from_samples(S), Y


def newsvendor(n, rng, floor=0.2, B=8):
    import scipy.stats
    from deccal import Embedding
    levels = (np.arange(B) + 0.5) / B
    x = rng.uniform(0, 1, n); m = 0.25 + 0.5 * x
    y = floor + (1 - floor) * rng.beta(8 * m, 8 * (1 - m))
    S = floor + (1 - floor) * scipy.stats.beta.ppf(levels, 40 * m[:, None], 40 * (1 - m[:, None]))
    return Embedding.from_samples(S), y[:, None]


def setup(problem):
    "(generator, calibrator keywords, certify's search method, calibrators to run)."
    import deccal
    if problem == 'planted':
        return planted, dict(kernel=deccal.RBF(0.5), n_actions=5, beta=10.0, R1=1.0, eps=0.02,
                             max_rounds=30), 'auto', ('dimfree', 'zhao')
    if problem == 'cobb':
        return cobb, dict(kernel=deccal.ExpInner(), n_actions=4, beta=20.0, R1=1.0, eps=0.02,
                          max_rounds=20), 'landmarks', ('dimfree',)
    if problem == 'newsvendor':
        return newsvendor, dict(kernel=deccal.MinKernel(), n_actions=4, beta=20.0, R1=1.5, R2=1.0, eps=0.02,
                                max_rounds=15), 'landmarks', ('dimfree',)
    raise ValueError(problem)


# ----------------------------------------------------------------------------- measurements
def fresh_certify(q, Y, kernel, n_actions, beta, R1, method, seed=0, search_fraction=0.5):
    "`deccal.certify(q, Y, kernel, ...)` without its `rule_bound` step: the same split, the same audit call."
    from deccal import audit
    n = q.n
    ns = int(round(search_fraction * n))
    perm = np.random.default_rng([seed, 2]).permutation(n)
    s_, h_ = np.sort(perm[:ns]), np.sort(perm[ns:])
    t0 = time.perf_counter()
    r = audit(q[s_], Y[s_], kernel, n_actions=n_actions, beta=beta, R1=R1, seed=seed,
              holdout=(q[h_], Y[h_]), method=method)
    return dict(value=float(r.holdout_value), se=float(r.holdout_se), in_search=float(r.value),
                method=r.info.get('method'), seconds=time.perf_counter() - t0)


def check_identity():
    "fresh_certify gives cal.certify's holdout_value and holdout_se (small planted problem, default method)."
    import deccal
    rng = np.random.default_rng(99)
    p, Y = planted(800, rng); pf, Yf = planted(2000, rng)
    kw = dict(n_actions=5, beta=10.0, R1=1.0)
    cal = deccal.DimFreeDeCal(deccal.RBF(0.5), eps=0.02, step='line-search', max_rounds=5, **kw).fit(p, Y)
    ref = cal.certify(pf, Yf)
    mine = fresh_certify(cal.transform(pf), Yf, deccal.RBF(0.5), method='auto', **kw)
    base_ref = deccal.certify(pf, Yf, deccal.RBF(0.5), **kw)
    base = fresh_certify(pf, Yf, deccal.RBF(0.5), method='auto', **kw)
    out = dict(calibrated=(ref.holdout_value, ref.holdout_se, mine['value'], mine['se']),
               base=(base_ref.holdout_value, base_ref.holdout_se, base['value'], base['se']))
    for a, b, c, d in out.values():
        assert abs(a - c) <= 1e-12 * max(1, abs(a)) and abs(b - d) <= 1e-12 * max(1, abs(b)), out
    return out


def fit_one(cls_name, kw, search_max, seed, p, Y):
    import deccal
    cls = dict(dimfree=deccal.DimFreeDeCal, zhao=deccal.ZhaoDeCal)[cls_name]
    extra = dict(step='line-search') if cls_name == 'dimfree' else {}
    busy = other_busy(1.0)
    t0 = time.perf_counter()
    cal = cls(search_max=search_max, seed=seed, **extra, **kw).fit(p, Y)
    secs = time.perf_counter() - t0
    audits = [h['audit_value'] for h in cal.history_ if h['audit_value'] is not None]
    info = dict(search_max=search_max, n_fit=int(cal.n_fit_), path='rows' if cal.n_fit_ > search_max else 'full',
                seconds=secs, others_busy=busy, rounds_run=len(cal.all_rounds_), rounds_kept=int(cal.best_round_),
                stop=cal.stop_reason_, rank=int(cal.rank_), basis_atoms=int(cal.basis_.m),
                captured_trace=float(cal.captured_trace_), first_audit=audits[0] if audits else None,
                last_audit=audits[-1] if audits else None,
                val_sq_kept=float(cal.history_[cal.best_round_]['holdout_square_loss']))
    return cal, info


class _Parts:
    """Finished pieces of a job (the base measurement, each fitted arm) kept in a directory, so that a killed job
    resumes."""
    def __init__(self, path): self.path = path; path and os.makedirs(path, exist_ok=True)

    def get(self, key):
        if not self.path or not os.path.exists(os.path.join(self.path, key + '.json')): return None
        with open(os.path.join(self.path, key + '.json')) as f: info = json.load(f)
        err = os.path.join(self.path, key + '.npy')
        return info, (np.load(err) if os.path.exists(err) else None)

    def put(self, key, info, err=None):
        if not self.path: return
        if err is not None:
            with open(os.path.join(self.path, key + '.tmp.npy'), 'wb') as f: np.save(f, err)
            os.replace(os.path.join(self.path, key + '.tmp.npy'), os.path.join(self.path, key + '.npy'))
        with open(os.path.join(self.path, key + '.tmp'), 'w') as f: json.dump(info, f)
        os.replace(os.path.join(self.path, key + '.tmp'), os.path.join(self.path, key + '.json'))


def one(problem, seed, n_cal=N_CAL, n_fresh=N_FRESH, parts=None):
    "One (problem, seed): the base predictions and both paths of each calibrator, measured on the fresh sample."
    parts = _Parts(parts)
    gen, kw, method, calibrators = setup(problem)
    kernel = kw['kernel']
    ck = dict(n_actions=kw['n_actions'], beta=kw['beta'], R1=kw['R1'])
    pid = PROBLEMS.index(problem)
    p, Y = gen(n_cal, np.random.default_rng([pid, seed, 0]))
    pf, Yf = gen(n_fresh, np.random.default_rng([pid, seed, 1]))
    base = parts.get('base')
    if base is None:
        t0 = time.perf_counter()
        e0 = pf.sq_error(kernel, Yf)
        base = dict(certify=fresh_certify(pf, Yf, kernel, method=method, **ck), sq=float(e0.mean()),
                    sq_se=float(e0.std(ddof=1) / np.sqrt(len(e0))), piece_seconds=time.perf_counter() - t0)
        parts.put('base', base)
    else: base = base[0]
    out = dict(problem=problem, seed=seed, n=n_cal, n_fresh=n_fresh, method=method, base=base)
    arms = [(name, arm, sm) for name in calibrators for arm, sm in (('full', n_cal), ('sub', n_cal // 4))]
    warm = 0.0
    if any(parts.get(f'{name}_{arm}') is None for name, arm, _ in arms):
        t0 = time.perf_counter()
        for name in calibrators:                      # warm-up (Numba loads its cache): both paths on 600 rows, 1 round
            for sm in (600, 150): fit_one(name, dict(kw, max_rounds=1), sm, seed, p[:600], Y[:600])
        warm = time.perf_counter() - t0
    seconds = base['piece_seconds'] + warm
    for name in calibrators:
        res, errs = {}, {}
        for _, arm, sm in [a for a in arms if a[0] == name]:
            got = parts.get(f'{name}_{arm}')
            if got is not None:
                res[arm], errs[arm] = got; seconds += res[arm]['piece_seconds']; continue
            t_piece = time.perf_counter()
            cal, info = fit_one(name, kw, sm, seed, p, Y)
            t0 = time.perf_counter(); q = cal.transform(pf); info['transform_seconds'] = time.perf_counter() - t0
            info['certify'] = fresh_certify(q, Yf, kernel, method=method, **ck)
            info['sq'] = float(cal.square_loss(pf, Yf))
            errs[arm] = q.sq_error(kernel, Yf)
            info['sq_check'] = float(errs[arm].mean() - info['sq'])
            assert abs(info['sq_check']) <= 1e-8 * max(1.0, info['sq']), (problem, name, arm, info['sq_check'])
            info['piece_seconds'] = time.perf_counter() - t_piece
            seconds += info['piece_seconds']
            res[arm] = info
            parts.put(f'{name}_{arm}', info, errs[arm])
            print(f"[{problem} seed {seed} {name} {arm}] {info['path']} path, fit {info['seconds']:.0f} s "
                  f"(others busy {info['others_busy']:.0%}), kept {info['rounds_kept']}/{info['rounds_run']} "
                  f"({info['stop']}), rank {info['rank']}; fresh decCE {info['certify']['value']:.4f} (se "
                  f"{info['certify']['se']:.4f}), sq {info['sq']:.5f}; certify {info['certify']['seconds']:.0f} s",
                  file=sys.stderr, flush=True)
        d = errs['sub'] - errs['full']
        res['sq_diff_se'] = float(d.std(ddof=1) / np.sqrt(len(d)))
        out[name] = res
    out['job_seconds'] = seconds                       # compute time of the pieces (and of this process's warm-up)
    return out


def run(problem, seed, n_cal, n_fresh, parts=None):
    cmd = [sys.executable, __file__, '--one', problem, str(seed), '--n', str(n_cal), '--n-fresh', str(n_fresh)]
    if parts: cmd += ['--parts', os.path.join(parts, f'{problem}_{seed}_{n_cal}_{n_fresh}')]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if out.returncode: raise RuntimeError(f"{problem} seed {seed} failed (exit {out.returncode})")
    return json.loads(out.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- summary
def summarize(jobs, problem, name):
    "Per-(problem, calibrator) numbers over seeds."
    js = [j for j in jobs if j['problem'] == problem and name in j]
    k = len(js)
    arr = lambda f: np.array([f(j) for j in js], float)
    ms = lambda v: (float(v.mean()), float(v.std(ddof=1)) if k > 1 else float('nan'))
    s = dict(problem=problem, calibrator=name, seeds=[j['seed'] for j in js], k=k, method=js[0]['method'], n=js[0]['n'],
             n_fresh=js[0]['n_fresh'])
    s['base_dec'], s['base_dec_se'] = (ms(arr(lambda j: j['base']['certify']['value'])),
                                       float(np.sqrt(np.mean(arr(lambda j: j['base']['certify']['se'])**2))))
    s['base_sq'] = ms(arr(lambda j: j['base']['sq']))
    for arm in ('full', 'sub'):
        s[arm] = dict(dec=ms(arr(lambda j: j[name][arm]['certify']['value'])),
                      dec_se=float(np.sqrt(np.mean(arr(lambda j: j[name][arm]['certify']['se'])**2))),
                      sq=ms(arr(lambda j: j[name][arm]['sq'])), seconds=ms(arr(lambda j: j[name][arm]['seconds'])),
                      busy=float(arr(lambda j: j[name][arm]['others_busy']).mean()),
                      kept=[j[name][arm]['rounds_kept'] for j in js], run=[j[name][arm]['rounds_run'] for j in js],
                      stop=[j[name][arm]['stop'] for j in js], rank=[j[name][arm]['rank'] for j in js],
                      path=sorted({j[name][arm]['path'] for j in js}), n_fit=js[0][name][arm]['n_fit'],
                      search_max=js[0][name][arm]['search_max'])
    dd = arr(lambda j: j[name]['sub']['certify']['value'] - j[name]['full']['certify']['value'])
    se_seeds = float(dd.std(ddof=1) / np.sqrt(k)) if k > 1 else float('nan')
    se_cert = float(np.sqrt(s['full']['dec_se']**2 + s['sub']['dec_se']**2) / np.sqrt(k))
    comb = float(np.hypot(se_seeds, se_cert)) if k > 1 else se_cert
    s['dec_diff'] = dict(mean=float(dd.mean()), per_seed=dd.tolist(), se_seeds=se_seeds, se_certify=se_cert,
                         combined=comb, z=float(dd.mean() / comb))
    ds = arr(lambda j: j[name]['sub']['sq'] - j[name]['full']['sq'])
    sq_seeds = float(ds.std(ddof=1) / np.sqrt(k)) if k > 1 else float('nan')
    sq_paired = float(np.sqrt(np.mean(arr(lambda j: j[name]['sq_diff_se'])**2)) / np.sqrt(k))
    sq_comb = float(np.hypot(sq_seeds, sq_paired)) if k > 1 else sq_paired
    s['sq_diff'] = dict(mean=float(ds.mean()), per_seed=ds.tolist(), se_seeds=sq_seeds, se_paired=sq_paired,
                        combined=sq_comb, z=float(ds.mean() / sq_comb))
    s['verdict'] = verdict(s['dec_diff'])
    s['sq_verdict'] = verdict(s['sq_diff'])
    return s


def verdict(d):
    if d['mean'] < 0: return 'better' + (' (beyond noise)' if -d['mean'] > 2 * d['combined'] else ' (within noise)')
    return 'within noise' if d['mean'] <= 2 * d['combined'] else 'WORSE beyond noise'


def pm(v, f='.4f'): return f"{v[0]:{f}} ± {v[1]:{f}}"


def report(summaries, seconds, job_seconds, check):
    n, nf, k = summaries[0]['n'], summaries[0]['n_fresh'], summaries[0]['k']
    L = ['# Subsampled (row-block) path against the full path: decision calibration on new data', '',
         machine_info(('dimfree.py', 'audit.py', 'zhao.py')), '',
         f"Produced by `python bench/subsample_heldout.py` (the (problem, seed) jobs took {job_seconds / 60:.0f} "
         f"minutes in all; this invocation {seconds / 60:.0f} minutes, the rest reused from its --cache). n = {n:,} "
         f"calibration points (early stopping holds out 20%: {n - round(0.2 * n):,} fitted), fresh sample of {nf:,}, "
         f"seeds {summaries[0]['seeds']}. (a) full path: search_max = {n:,}; (b) subsampled path: search_max = "
         f"{n // 4:,} (basis and each round's search on {n // 4:,} of the {n - round(0.2 * n):,} fitted rows). Fresh "
         "decCE = certify's held-out value of the worst pair (search on half of the fresh sample, re-measured on the "
         "other half); ± is the standard deviation over seeds; 'certify se' is the root-mean-square of certify's own "
         "standard errors. Square loss: E||p(x) - phi(y)||^2 on the fresh sample.",
         '', f"Identity check (small planted problem): `cal.certify` holdout value / se {check['calibrated'][0]:.6f} / "
         f"{check['calibrated'][1]:.6f}, this script's {check['calibrated'][2]:.6f} / {check['calibrated'][3]:.6f}; "
         f"base {check['base'][0]:.6f} / {check['base'][2]:.6f}.", '',
         '| problem | calibrator | predictions | fresh decCE (mean ± sd) | certify se | fresh square loss (mean ± sd) '
         '| fit s (mean ± sd) | rounds kept / run | stop | rank |',
         '|---|---|---|---|---|---|---|---|---|---|']
    for s in summaries:
        lab = f"{s['problem']} ({'certify search: ' + s['method']})"
        L.append(f"| {lab} | {s['calibrator']} | base | {pm(s['base_dec'])} | {s['base_dec_se']:.4f} | "
                 f"{pm(s['base_sq'], '.5f')} | | | | |")
        for arm, nm in (('full', '(a) full'), ('sub', '(b) subsampled')):
            a = s[arm]
            L.append(f"| | | {nm} ({a['path'][0]}, search_max {a['search_max']:,}) | {pm(a['dec'])} | "
                     f"{a['dec_se']:.4f} | {pm(a['sq'], '.5f')} | {a['seconds'][0]:.0f} ± {a['seconds'][1]:.0f} "
                     f"(others busy {a['busy']:.0%}) | {', '.join(f'{k}/{r}' for k, r in zip(a['kept'], a['run']))} | "
                     f"{', '.join(a['stop'])} | {', '.join(map(str, a['rank']))} |")
    L += ['', f'(b) - (a), mean over seeds; se_seeds = sd / sqrt({k}) of the per-seed differences; se_certify = '
          f'sqrt(mean se_a^2 + mean se_b^2) / sqrt({k}); combined = sqrt(se_seeds^2 + se_certify^2) (for the square '
          'loss: the paired per-point standard error on the fresh sample in place of se_certify). Within noise: '
          'difference <= 2 combined.', '',
          '| problem | calibrator | decCE (b) - (a) | per seed | se_seeds | se_certify | combined | diff / combined | '
          'verdict | square loss (b) - (a) | se_seeds | se_paired | verdict |',
          '|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    for s in summaries:
        d, q = s['dec_diff'], s['sq_diff']
        L.append(f"| {s['problem']} | {s['calibrator']} | {d['mean']:+.4f} | "
                 f"{', '.join(f'{v:+.4f}' for v in d['per_seed'])} | {d['se_seeds']:.4f} | {d['se_certify']:.4f} | "
                 f"{d['combined']:.4f} | {d['z']:+.2f} | **{s['verdict']}** | {q['mean']:+.6f} | {q['se_seeds']:.6f} | "
                 f"{q['se_paired']:.6f} | {s['sq_verdict']} |")
    L += ['', 'Verdicts (held-out decision calibration, the bar):', '']
    for s in summaries:
        d = s['dec_diff']
        L.append(f"* {s['problem']}, {s['calibrator']}: (b) {s['sub']['dec'][0]:.4f} against (a) "
                 f"{s['full']['dec'][0]:.4f} (base {s['base_dec'][0]:.4f}): difference {d['mean']:+.4f}, {d['z']:+.2f} "
                 f"combined standard errors: **{s['verdict']}**; fit {s['sub']['seconds'][0]:.0f} s against "
                 f"{s['full']['seconds'][0]:.0f} s.")
    return L


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--one', nargs=2, metavar=('PROBLEM', 'SEED'))
    ap.add_argument('--problems', default=','.join(PROBLEMS))
    ap.add_argument('--seeds', default=','.join(map(str, SEEDS)))
    ap.add_argument('--n', type=int, default=N_CAL, help='calibration sample (smoke tests; nothing written unless the '
                                                         'default)')
    ap.add_argument('--n-fresh', type=int, default=N_FRESH)
    ap.add_argument('--cache', default=None, help='a JSON-lines file of finished (problem, seed) jobs, reused and '
                    'appended to; the finished pieces of unfinished jobs are kept in the directory CACHE.parts')
    # (--one) the directory of this job's finished pieces
    ap.add_argument('--parts', default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(one(a.one[0], int(a.one[1]), a.n, a.n_fresh, a.parts))); return
    t0 = time.perf_counter()
    check = check_identity()
    print(f"identity check: cal.certify {check['calibrated'][:2]}, fresh_certify {check['calibrated'][2:]}", flush=True)
    problems, seeds = a.problems.split(','), [int(s) for s in a.seeds.split(',')]
    done = {}
    if a.cache and os.path.exists(a.cache):
        with open(a.cache) as f:
            for line in f:
                if line.strip(): j = json.loads(line); done[j['problem'], j['seed']] = j
    jobs = []
    for problem in problems:
        for seed in seeds:
            if (problem, seed) in done:
                j = done[problem, seed]; print(f"{problem} seed {seed}: from the cache", flush=True)
            else:
                t1 = time.perf_counter(); j = run(problem, seed, a.n, a.n_fresh, a.cache and a.cache + '.parts')
                print(f"{problem} seed {seed}: {time.perf_counter() - t1:.0f} s", flush=True)
                if a.cache:
                    with open(a.cache, 'a') as f: f.write(json.dumps(j) + '\n')
            jobs.append(j)
    seconds = time.perf_counter() - t0
    summaries = [summarize(jobs, p, name) for p in problems for name in setup(p)[3]]
    job_seconds = float(sum(j['job_seconds'] for j in jobs))
    lines = report(summaries, seconds, job_seconds, check)
    print('\n'.join(lines))
    if a.problems == ','.join(PROBLEMS) and seeds == list(SEEDS) and (a.n, a.n_fresh) == (N_CAL, N_FRESH):
        from deccal.runtime import atomic_write
        lines += ['', '```json', json.dumps(dict(jobs=jobs, summaries=summaries, seconds=seconds,
                                                 job_seconds=job_seconds, identity_check=check)), '```', '']
        out = os.path.join(REPO, 'bench', 'subsample_heldout_results.md')
        atomic_write(out, lambda f: f.write('\n'.join(lines).encode()))
        print('wrote', out)


if __name__ == '__main__':
    main()
