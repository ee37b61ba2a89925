"""How `select_first_stage` should pick among its scored candidates: the lowest out-of-fold gap, or a rule that
guards against the noise of that choice.

Prints figures; it is not a test.  Usage:

    python bench/first_stage_selection.py            # 40 splits per cell, two processes; prints the tables
    python bench/first_stage_selection.py --write    # ... and writes bench/first_stage_selection_results.md
    python bench/first_stage_selection.py --seeds 2  # a quick look

With `costs`, `select_first_stage` scores 35 candidates (the eight named stages and every two of the five single
stages mixed in quarters) by the given decision makers' out-of-fold mean gap and takes the lowest, among those
whose out-of-fold log loss is within 0.01 of the better simple one's.  On 171 calibration rows (breast cancer) that
minimum over 35 noisy scores is the choice most exposed to chance.  This script scores, on the skeptic's 16 cells
(bench/skeptic.py: the same 40/30/30 splits, the same 200 random cost matrices with A = 5, the same fixed cost
matrix M), the FIRST STAGE alone (no round), chosen by each of these rules on the same out-of-fold scores:

  * 'lowest': the lowest out-of-fold mean gap (today's rule; the script checks that it picks what
    `select_first_stage` picks);
  * 'simple 1 se' / 'simple 2 se': the simple choice (none or temperature, the lower log loss) unless the lowest
    beats it by more than one / two bootstrap standard errors of their paired difference (200 resamples of the
    calibration rows, the decision makers' mean gap recomputed on each: the one-standard-error rule of Breiman
    et al., 1984, with the simple choice as the default);
  * 'log loss within 1 se': among the candidates within one bootstrap se of the lowest, the lowest log loss;
  * 'bagged': the lowest of each bootstrap resample, the choices averaged with their frequencies (Breiman's
    bagging of the selection, as in Efron 2014, "Estimation and accuracy after model selection"); every candidate
    is a mixture of the five single stages, so the bag is one weighted mean of them;
  * 'bagged, log loss within 1 se': the same, each resample choosing by the 'log loss within 1 se' rule.

Each rule's choice, refitted on the whole calibration split, is scored on the test split: Zhao et al.'s mean gap
for the 200 decision makers, the same for 200 other ones (another seed), and the realized cost of acting on it
under M.  Per cell: (rule - best baseline) / its paired standard error, the best baseline (none, sigmoid,
isotonic, temperature) picked after the fact in the cell.  Summary per rule: cells within one se of the best (or
below), cells below it by two se, cells whose cost under M is within one se of the best baseline's, mean excess;
and the rule against 'lowest', paired by split, for both sets of decision makers.
"""
from __future__ import annotations
import os
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS')
import argparse, sys, time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
# the thread settings this script had when it imported bench/skeptic.py or bench/sklearn_calibration.py here
# (for the libraries loaded from here on: scipy's OpenBLAS, scikit-learn's OpenMP)
thread_defaults()
from _measure import machine_info, emit_record, mse                    # noqa: E402
from _data import clf_datasets, CLF_MODELS, fixed_costs, random_costs  # noqa: E402
from _scores import zhao_gaps                                          # noqa: E402
from _calibrators import BASELINES, split_and_baselines, candidates   # noqa: E402
from deccal.first_stage import SIMPLE_STAGES, stage_mean, log_loss_rows, select_first_stage   # noqa: E402
from deccal.decisions import cost_gap_rows                             # noqa: E402

RULES = {'lowest': 'lowest', 'simple1': 'simple 1 se', 'simple2': 'simple 2 se', 'll1': 'log loss within 1 se',
         'bag': 'bagged', 'bag_ll1': 'bagged, log loss within 1 se'}
N_BOOT = 200


def choices(oofs, yc, R, seed):
    "Each rule's choice: name -> weight (one name, or the bag's frequencies)."
    ll = {nm: float(log_loss_rows(p, yc).mean()) for nm, p in oofs.items()}
    top = min(ll[nm] for nm in SIMPLE_STAGES) + 0.01
    elig = [nm for nm in oofs if ll[nm] <= top]
    ref = min(SIMPLE_STAGES, key=ll.get)                       # the simple choice: always eligible
    n = len(yc)
    W = np.random.default_rng([seed, 77]).multinomial(n, np.full(n, 1 / n), size=N_BOOT) / n   # (B, n) resamples
    gap, G = {}, {}
    for nm in elig:
        r = cost_gap_rows(oofs[nm], yc, R)                     # (K, n): paid minus promised
        gap[nm], G[nm] = float(np.abs(r.mean(1)).mean()), np.abs(W @ r.T).mean(1)
    best = min(elig, key=gap.get)
    se = {nm: float(np.std(G[nm] - G[best], ddof=1)) for nm in elig}
    within = [nm for nm in elig if gap[nm] - gap[best] <= se[nm]]
    out = {'lowest': {best: 1.0},
           'simple1': {ref if gap[ref] - gap[best] <= se[ref] else best: 1.0},
           'simple2': {ref if gap[ref] - gap[best] <= 2 * se[ref] else best: 1.0},
           'll1': {min(within, key=ll.get): 1.0}}
    Gm = np.array([G[nm] for nm in elig])                      # (candidates, B)
    bag, bag_ll = {}, {}
    for b in range(N_BOOT):
        i = int(Gm[:, b].argmin())
        bag[elig[i]] = bag.get(elig[i], 0) + 1 / N_BOOT
        near = [nm for j, nm in enumerate(elig) if Gm[j, b] - Gm[i, b] <= se[nm]]
        c = min(near, key=ll.get)
        bag_ll[c] = bag_ll.get(c, 0) + 1 / N_BOOT
    out['bag'], out['bag_ll1'] = bag, bag_ll
    return out


def mix(weights, tests, parts):
    "The test probabilities of a mixture of candidates, as one weighted mean of the single stages."
    tot = {}
    for nm, w in weights.items():
        for q, wq in zip(*parts[nm]): tot[q] = tot.get(q, 0) + w * wq
    return stage_mean([tests[q] for q in tot], np.array(list(tot.values())))


def cell(job):
    dname, mname, seeds = job
    load, expensive, _ = clf_datasets()[dname]
    X, y = load()
    y = np.unique(y, return_inverse=True)[1]
    C = y.max() + 1
    costs = random_costs(C)                            # the skeptic's
    others = random_costs(C, seed=54321)
    M = fixed_costs(C, expensive)

    def scores(P, yt):
        return dict(gap=float(zhao_gaps(P, yt, costs).mean()), others=float(zhao_gaps(P, yt, others).mean()),
                    cost=float(M[(P @ M.T).argmin(1), yt].mean()))
    recs = []
    for seed in seeds:
        Pc, Pt, yc, yt, probs = split_and_baselines(X, y, mname, seed)
        rec = {b: scores(P, yt) for b, P in probs.items()}
        oofs, tests, parts = candidates(Pc, yc, Pt, seed)
        for r, wts in choices(oofs, yc, costs, seed).items():
            rec[r] = scores(mix(wts, tests, parts), yt)
            rec[r]['choice'] = max(wts, key=wts.get)
        rec['library agrees'] = select_first_stage(Pc, yc, seed=seed, costs=costs).name == rec['lowest']['choice']
        recs.append(rec)
    return dname, mname, recs



def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument('--seeds', type=int, default=40)
    ap.add_argument('--write', action='store_true')
    a = ap.parse_args(argv)
    t0 = time.time()
    from multiprocessing import Pool
    jobs = [(d, m, list(range(a.seeds))) for d in clf_datasets() for m in CLF_MODELS]
    with Pool(2) as pool: res = {(d, m): recs for d, m, recs in pool.imap(cell, jobs)}
    lines = ['| data | base | best baseline | its mean gap | ' + ' | '.join(RULES.values()) + ' |',
             '|' + '---|' * (4 + len(RULES))]
    summ = {r: dict(within=0, wins=0, cost_within=0, excess=[], vs=[], vs_others=[]) for r in RULES}
    cells = []
    for (d, m), recs in res.items():
        best = min(BASELINES, key=lambda b: np.mean([q[b]['gap'] for q in recs]))
        bestc = min(BASELINES, key=lambda b: np.mean([q[b]['cost'] for q in recs]))
        row, z = [d, m, best, f"{np.mean([q[best]['gap'] for q in recs]):.4f}"], {}
        for r in RULES:
            mu, s = mse([q[r]['gap'] - q[best]['gap'] for q in recs])
            mc, sc = mse([q[r]['cost'] - q[bestc]['cost'] for q in recs])
            S = summ[r]
            S['within'] += mu <= s; S['wins'] += mu < -2 * s; S['cost_within'] += mc <= sc; S['excess'].append(mu)
            S['vs'].append(mse([q[r]['gap'] - q['lowest']['gap'] for q in recs]))
            S['vs_others'].append(mse([q[r]['others'] - q['lowest']['others'] for q in recs]))
            z[r] = mu / s if s > 0 else 0.0
            row.append(f"{mu:+.4f} ± {s:.4f} ({z[r]:+.1f} se)")
        cells.append(dict(data=d, base=m, best=best, z=z, agrees=int(sum(q['library agrees'] for q in recs))))
        lines.append('| ' + ' | '.join(row) + ' |')
    lines.append('')
    summary = {}
    for r, label in RULES.items():
        S = summ[r]
        vs, vo = np.array(S['vs']), np.array(S['vs_others'])
        summary[r] = dict(label=label, within=int(S['within']), wins=int(S['wins']), cost_within=int(S['cost_within']),
                          excess=float(np.mean(S['excess'])), vs_mean=float(vs[:, 0].mean()),
                          vs_below=int((vs[:, 0] < -2 * vs[:, 1]).sum()), vs_above=int((vs[:, 0] > 2 * vs[:, 1]).sum()),
                          others_mean=float(vo[:, 0].mean()), others_below=int((vo[:, 0] < -2 * vo[:, 1]).sum()),
                          others_above=int((vo[:, 0] > 2 * vo[:, 1]).sum()))
        q = summary[r]
        lines.append(f"- {label}: within one se of the best baseline (or below) in {q['within']} of 16 cells, below it "
                     f"by two se in {q['wins']}; cost under M within one se of the best baseline's in "
                     f"{q['cost_within']}; mean excess in gap {q['excess']:+.5f}; against 'lowest', paired: mean "
                     f"{q['vs_mean']:+.5f}, below by two se in {q['vs_below']} cells, above in {q['vs_above']}; for "
                     f"other decision makers {q['others_mean']:+.5f}, {q['others_below']} below, {q['others_above']} "
                     "above")
    agree = sum(c['agrees'] for c in cells)
    lines.append(f"- 'lowest' picks what `select_first_stage` picks in {agree} of {a.seeds * len(cells)} splits.")
    head = ["# Picking the first stage from its out-of-fold scores: the lowest, or a guarded rule", '',
            machine_info(['first_stage.py', 'decisions.py']), '',
            f"Produced by `python bench/first_stage_selection.py --write`: {a.seeds} splits per cell, the first stage "
            f"alone (no round), {N_BOOT} bootstrap resamples; {time.time() - t0:.0f} s.  Each rule's mean gap minus "
            "the best baseline's, paired by split (mean ± se, and that in standard errors).  What the rules and "
            "columns are: the docstring of bench/first_stage_selection.py.", '']
    emit_record(head + lines, dict(seeds=a.seeds, summary=summary, cells=cells), 'first_stage_selection_results.md',
                a.write)


if __name__ == '__main__':
    main()
