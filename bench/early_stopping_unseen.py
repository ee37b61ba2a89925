"""Benchmark: DimFreeDeCal's early-stopping defaults on two problems that were NOT used to choose them.

Prints figures; it is not a test.  Usage:

    python bench/early_stopping_unseen.py --write          # both problems, the default seeds; writes
                                                           # bench/early_stopping_unseen_results.md
    python bench/early_stopping_unseen.py --problems classes --seeds 2     # a small run, nothing written
    python bench/early_stopping_unseen.py --cache /tmp/x.jsonl --write     # keep finished seeds there and reuse them

Why.  The defaults `early_stopping=True, validation_fraction=0.2, n_iter_no_change=5` were chosen with
bench/early_stopping.py on four problems (planted RBF in R^3 with point forecasts shrunk by 0.7; the newsvendor with
8 forecast quantiles and MinKernel; Cobb-Douglas with ExpInner in R^4; the digits with a logistic regression and the
linear kernel), and the notebooks reported them on the same four.  Here they are judged on two others:

  1. classes: 4 classes, x ~ N(0, I_2), true class probabilities softmax(x W + b); the classifier reports
     softmax(2.5 (x W + b)), an over-confident classifier whose ranking is right (`Embedding.from_probs`, one-hot
     outcomes); Linear() kernel, n_actions=3, beta=10, R1=1, eps=0.02, n = 300.
  2. rbf5: x ~ U(-1, 1)^5, outcomes tanh(2 x) + 0.2 N(0, I_5), point forecasts x (right sign and order, wrong
     shape: too small in the middle, too large at the ends); RBF(0.25), n_actions=4, beta=10, R1=1, eps=0.03, n = 250.

Design.  For each problem and seed s: a calibration sample of n points, and two fresh samples of N points each that
no fit sees, F (to pick the best round in hindsight) and G (to score everything), all from numpy generators seeded
[problem, s, part].  Every fit uses step='line-search', seed=s, max_rounds=30 (the cap bench/early_stopping.py used;
the theorem's bound 16 R1^2 R2^2 / eps^2 is printed: it is in the hundreds or thousands).
  (a) base:      the base predictions.
  (b) default:   DimFreeDeCal with the default early stopping (20 % held out, patience 5).
  (c) paper:     early_stopping=False: the whole sample, stop when the in-sample audit value is <= 3 eps / 4, or at
                 the cap of 30 rounds.
  (d) hindsight: the run of (b) continued without patience (n_iter_no_change=1000, the same split, so its rounds
                 extend those of (b): checked), truncated after T rounds for every T; the T with the lowest fresh
                 decision calibration error on F (d-gap), and separately the T with the lowest square loss on F
                 (d-sq), each then scored on G.  Choosing on F and scoring on G keeps the hindsight choice honest.
Scores on G: the decision calibration error `cal.certify(G)` (the auditor searches one half of G for the worst pair,
the pair is re-measured on the other half: `holdout_value`, with its standard error), and the square loss
`cal.square_loss(G)` = E_hat ||p(x) - phi(y)||^2.
Reported: means over seeds with standard errors (sd / sqrt(seeds)); the paired differences (b) - (a), (b) - (c),
(b) - (d) per seed, with their standard errors over seeds.

The bias of the kept round's validation square loss.  `history_[best_round_]['holdout_square_loss']` is the lowest
of the rounds' held-out square losses on the validation part that also chose the round; against the kept
calibrator's square loss on G: mean difference (validation - fresh) with its standard error over seeds.  As a
control, the same difference at round 0 (no choice made: its mean should be 0), and the paired difference of the two
(which cancels the validation part's own luck, shared by all rounds).

No timings are recorded (the machine is shared).  Run with OPENBLAS_NUM_THREADS=1 (set here unless given).
"""
from __future__ import annotations
import os
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults('OMP_WAIT_POLICY', 'OPENBLAS_NUM_THREADS')
import argparse, json, sys

import numpy as np
import scipy.special

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
from _measure import machine_info, mse   # noqa: E402

import deccal                         # noqa: E402
from deccal import Embedding, DimFreeDeCal   # noqa: E402

CAP = 30                              # max_rounds of every fit


def classes(n, rng, temp=2.5):
    "An over-confident 4-class classifier: probabilities softmax(temp * logits), outcomes drawn from softmax(logits)."
    W = np.array([[1.0, -0.5, 0.0, -0.5], [0.0, 0.8, -0.8, 0.0]]); b = np.array([0.3, 0.0, -0.2, -0.1])
    x = rng.normal(size=(n, 2)); L = x @ W + b
    P_true, P = scipy.special.softmax(L, axis=1), scipy.special.softmax(temp * L, axis=1)
    t = (rng.uniform(size=(n, 1)) > np.cumsum(P_true, axis=1)).sum(axis=1)
    return Embedding.from_probs(P, np.eye(4)), np.eye(4)[t]


def rbf5(n, rng, d=5):
    "Point forecasts x of outcomes tanh(2 x) + 0.2 noise in R^5."
    x = rng.uniform(-1, 1, (n, d))
    return Embedding.from_points(x), np.tanh(2 * x) + 0.2 * rng.normal(size=(n, d))


PROBLEMS = dict(
    classes=dict(make=classes, n=300, N=2000, eps=0.02, kw=dict(kernel=deccal.Linear(), n_actions=3, beta=10.0, R1=1.0),
                 seeds=24),
    rbf5=dict(make=rbf5, n=250, N=1500, eps=0.03, kw=dict(kernel=deccal.RBF(0.25), n_actions=4, beta=10.0, R1=1.0),
              seeds=20))


def replay(hl, patience):
    "The round early stopping with this patience keeps, from the held-out square losses of every round."
    for t in range(len(hl)):
        if t - int(np.argmin(hl[:t + 1])) >= patience: return int(np.argmin(hl[:t + 1]))
    return int(np.argmin(hl))


def score(cal, G, seed):
    "(decision calibration error on G as certify measures it, its standard error, square loss on G)."
    r = cal.certify(*G, n_starts=2, seed=seed)
    return r.holdout_value, r.holdout_se, cal.square_loss(*G)


def one(problem, s):
    "Every figure of one seed of one problem, as a dict of plain numbers."
    P = PROBLEMS[problem]; pid = list(PROBLEMS).index(problem)
    make, n, N = P['make'], P['n'], P['N']
    (p, Y), F, G = (make(m, np.random.default_rng([pid, s, part])) for part, m in enumerate((n, N, N)))
    fkw = dict(eps=P['eps'], step='line-search', max_rounds=CAP, seed=s, **P['kw'])
    default = DimFreeDeCal(**fkw).fit(p, Y)                          # (b): the defaults
    paper = DimFreeDeCal(early_stopping=False, **fkw).fit(p, Y)      # (c): the paper's rule on the whole sample
    long = DimFreeDeCal(n_iter_no_change=1000, **fkw).fit(p, Y)      # (d): the same split, no patience
    hl = np.array([h['holdout_square_loss'] for h in long.history_])
    k = default.best_round_
    np.testing.assert_allclose(hl[:len(default.history_)], [h['holdout_square_loss'] for h in default.history_],
                               rtol=1e-10)
    assert k == replay(hl, default.n_iter_no_change), (problem, s, k)
    Tn = len(long.all_rounds_)
    fF = np.array([long.truncated(T).certify(*F, n_starts=2, seed=s).holdout_value for T in range(Tn + 1)])
    sqF = np.array([long.truncated(T).square_loss(*F) for T in range(Tn + 1)])
    sqG = np.array([long.truncated(T).square_loss(*G) for T in range(Tn + 1)])
    Tg, Ts = int(np.argmin(fF)), int(np.argmin(sqF))
    out = dict(problem=problem, seed=s, n=n, N=N, kept=k, ran=len(default.all_rounds_), stop=default.stop_reason_,
               paper_rounds=len(paper.rounds_), paper_stop=paper.stop_reason_, round_bound=float(paper.round_bound_),
               long_rounds=Tn, T_gap=Tg, T_sq=Ts, gapF_min=float(fF[Tg]), gapF=fF.tolist(), sqF=sqF.tolist(),
               sqG=sqG.tolist(), holdout_sq=hl.tolist())
    for name, cal in (('base', long.truncated(0)), ('default', default), ('paper', paper),
                      ('hind_gap', long.truncated(Tg)), ('hind_sq', long.truncated(Ts))):
        out[name] = [float(v) for v in score(cal, G, s)]
    np.testing.assert_allclose(out['default'][2], sqG[k], rtol=1e-8)   # (b) transforms as (d) truncated at k
    out['val_kept'], out['val_round0'] = float(hl[k]), float(hl[0])
    return out


def summarize(rows):
    "Means and standard errors over the seeds of one problem."
    S = dict(seeds=len(rows))
    for m in ('base', 'default', 'paper', 'hind_gap', 'hind_sq'):
        S[m] = dict(gap=mse([r[m][0] for r in rows]), gap_se_mean=float(np.mean([r[m][1] for r in rows])),
                    sq=mse([r[m][2] for r in rows]))
    for other in ('base', 'paper', 'hind_gap', 'hind_sq'):
        S[f'default-{other}'] = dict(gap=mse([r['default'][0] - r[other][0] for r in rows]),
                                     sq=mse([r['default'][2] - r[other][2] for r in rows]))
    S['hind_gap_F_minus_G'] = mse([r['gapF_min'] - r['hind_gap'][0] for r in rows])
    b_k = [r['val_kept'] - r['default'][2] for r in rows]
    b_0 = [r['val_round0'] - r['base'][2] for r in rows]
    S['bias_kept'], S['bias_round0'] = mse(b_k), mse(b_0)
    S['bias_kept_minus_round0'] = mse(np.subtract(b_k, b_0))
    S['kept'], S['ran'] = mse([r['kept'] for r in rows]), mse([r['ran'] for r in rows])
    S['stops'] = {k: sum(r['stop'] == k for r in rows) for k in sorted({r['stop'] for r in rows})}
    S['paper_rounds'] = mse([r['paper_rounds'] for r in rows])
    S['paper_stops'] = {k: sum(r['paper_stop'] == k for r in rows) for k in sorted({r['paper_stop'] for r in rows})}
    S['T_gap'], S['T_sq'] = mse([r['T_gap'] for r in rows]), mse([r['T_sq'] for r in rows])
    S['round_bound_min'] = min(r['round_bound'] for r in rows)
    return S


def f(ms, d=4): return f"{ms[0]:.{d}f} ± {ms[1]:.{d}f}"


def table(summaries):
    out = ["| problem (seeds) | predictor | rounds | decision calibration error on G | square loss on G |",
           "|---|---|---|---|---|"]
    for prob, S in summaries.items():
        rounds = dict(base='0', default=f"kept {S['kept'][0]:.1f} (ran {S['ran'][0]:.1f})",
                      paper=f"{S['paper_rounds'][0]:.1f}", hind_gap=f"{S['T_gap'][0]:.1f}",
                      hind_sq=f"{S['T_sq'][0]:.1f}")
        names = dict(base='(a) base', default='(b) default early stopping', paper='(c) paper rule, cap 30',
                     hind_gap='(d) hindsight, by gap on F', hind_sq='(d) hindsight, by square loss on F')
        for m in names:
            out.append(f"| {prob} ({S['seeds']}) | {names[m]} | {rounds[m]} | {f(S[m]['gap'])} | {f(S[m]['sq'])} |")
        for other in ('base', 'paper', 'hind_gap', 'hind_sq'):
            D = S[f'default-{other}']
            out.append(f"| {prob} | (b) - {names[other]} | | {f(D['gap'])} | {f(D['sq'])} |")
    out += ['', "| problem | validation - fresh square loss, kept round | same at round 0 | kept minus round 0 |",
            "|---|---|---|---|"]
    for prob, S in summaries.items():
        out.append(f"| {prob} | {f(S['bias_kept'])} | {f(S['bias_round0'])} | {f(S['bias_kept_minus_round0'])} |")
    return '\n'.join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--problems', default=','.join(PROBLEMS))
    ap.add_argument('--seeds', type=int, default=None, help='seeds 0..S-1 per problem (default: each problem\'s own)')
    ap.add_argument('--cache', default=None, help='a .jsonl file: finished seeds are appended and reused')
    ap.add_argument('--write', action='store_true')
    a = ap.parse_args()
    done = {}
    if a.cache and os.path.exists(a.cache):
        with open(a.cache) as fh:
            for line in fh:
                if line.strip(): j = json.loads(line); done[j['problem'], j['seed']] = j
    rows = {}
    for prob in a.problems.split(','):
        rows[prob] = []
        for s in range(a.seeds if a.seeds is not None else PROBLEMS[prob]['seeds']):
            j = done.get((prob, s)) or one(prob, s)
            if (prob, s) not in done and a.cache:
                with open(a.cache, 'a') as fh: fh.write(json.dumps(j) + '\n')
            rows[prob].append(j)
            print(f"{prob} seed {s}: kept {j['kept']} of {j['ran']}; gap on G base {j['base'][0]:.4f}, default "
                  f"{j['default'][0]:.4f}, paper {j['paper'][0]:.4f}, hindsight {j['hind_gap'][0]:.4f}", flush=True)
    summaries = {prob: summarize(r) for prob, r in rows.items()}
    text = '\n'.join(["# Early-stopping defaults on problems not used to choose them", '',
                      machine_info(('dimfree.py', 'audit.py')), '', table(summaries), '',
                      '```json', json.dumps(dict(problems={p: dict(n=PROBLEMS[p]['n'], N=PROBLEMS[p]['N'],
                                                                   eps=PROBLEMS[p]['eps'], cap=CAP) for p in rows},
                                                 summaries=summaries, rows=rows)), '```', ''])
    print(text[:text.index('```json')])
    if a.write:
        with open(os.path.join(REPO, 'bench', 'early_stopping_unseen_results.md'), 'w') as fh: fh.write(text)


if __name__ == '__main__':
    main()
