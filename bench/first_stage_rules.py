"""How `select_first_stage` should choose: by the Brier rule or by the given decision makers' out-of-fold gap.

Prints figures; it is not a test.  Usage:

    python bench/first_stage_rules.py                    # 40 splits, prints the tables
    python bench/first_stage_rules.py --write            # ... and writes bench/first_stage_rules_results.md
    python bench/first_stage_rules.py --seeds 2          # a quick look

The skeptic's 16 classification cells (bench/skeptic.py: digits, breast cancer, fair, make_classification; base
models logreg, gnb, hgb, rf; the same 40/30/30 splits, the same 200 random cost matrices with A = 5).  Only the
FIRST STAGE is compared, with no decision calibration round after it, so that the choice of the stage is seen
alone: on each split, `select_first_stage` chooses on the calibration split's probabilities

  * 'brier': without costs (the better of none and temperature by out-of-fold Brier score, a richer candidate
    only if it beats that by 2 paired standard errors);
  * 'gap': with costs = the 200 cost matrices (the candidate whose out-of-fold probabilities give them the
    lowest mean gap; the candidates are the eight named stages and, by default, every two of the five single
    stages averaged with weights in quarters),
  * 'named': the gap rule among the eight named stages only (weight_steps=1), to show what the weighted pairs add,

and the chosen stage, refitted on the whole calibration split, is scored on the test split by Zhao et al.'s mean
gap over the same 200 decision makers.  The baselines are the skeptic's: none and scikit-learn's
CalibratedClassifierCV(FrozenEstimator(base), method='sigmoid' / 'isotonic' / 'temperature'); 'best' is the
baseline with the lowest mean gap in the cell (chosen after the fact, so it is a hard reference).  Per cell:
each rule's mean gap minus the best baseline's, paired by split (mean ± standard error over splits), and the
paired difference 'gap' minus 'brier'.  The last number column scores the same two choices for 200 OTHER random
decision makers (drawn the same way, another seed), for whom the gap rule did not choose: does its lead carry over?
The columns 'gap rule - named only' compare the gap rule with and without the weighted pairs, the same way.
"""
from __future__ import annotations
import os
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults('OMP_WAIT_POLICY', 'OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS')
import argparse, sys, time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
# the thread settings this script had when it imported bench/skeptic.py or bench/sklearn_calibration.py here
# (for the libraries loaded from here on: scipy's OpenBLAS, scikit-learn's OpenMP)
thread_defaults()
from _measure import machine_info, mse                                 # noqa: E402
from _data import clf_datasets, CLF_MODELS, random_costs              # noqa: E402
from _scores import zhao_gaps                                          # noqa: E402
from _calibrators import BASELINES, split_and_baselines               # noqa: E402
from deccal.first_stage import select_first_stage                      # noqa: E402

RULES = ('brier', 'gap', 'named')


def cell(X, y, mname, seeds, costs, others):
    "Per split: the test mean gap of each baseline and each rule, and each rule's choice."
    out = []
    for seed in seeds:
        Pc, Pt, yc, yt, probs = split_and_baselines(X, y, mname, seed)
        rec = {b: zhao_gaps(P, yt, costs).mean() for b, P in probs.items()}
        for r in RULES:
            sel = select_first_stage(Pc, yc, seed=seed, costs=None if r == 'brier' else costs,
                                     weight_steps=1 if r == 'named' else 4)
            rec[r], rec[r + ' choice'] = zhao_gaps(sel.transform(Pt), yt, costs).mean(), sel.name
            rec[r + ' others'] = zhao_gaps(sel.transform(Pt), yt, others).mean()
        out.append(rec)
    return out



def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument('--seeds', type=int, default=40)
    ap.add_argument('--write', action='store_true')
    a = ap.parse_args(argv)
    t0 = time.time()
    DIFFS = (('gap', 'brier'), ('gap', 'named'))                       # paired differences of two rules
    lines, summary = [], {k: [] for k in (*RULES, *DIFFS, *[d + ('others',) for d in DIFFS])}
    head = ('| data | base | best baseline | its mean gap | brier rule - best | gap rule - best | named only - best '
            '| gap rule - brier rule | gap rule - brier rule, other decision makers '
            '| gap rule - named only | gap rule - named only, other decision makers '
            '| choices (brier rule) | choices (gap rule) |')
    lines += [head, '|' + '---|' * 13]
    for dname, (load, _, _) in clf_datasets().items():
        X, y = load()
        y = np.unique(y, return_inverse=True)[1]
        costs = random_costs(y.max() + 1)                  # the skeptic's
        others = random_costs(y.max() + 1, seed=54321)
        for mname in CLF_MODELS:
            recs = cell(X, y, mname, range(a.seeds), costs, others)
            best = min(BASELINES, key=lambda b: np.mean([r[b] for r in recs]))
            row = [dname, mname, best, f"{np.mean([r[best] for r in recs]):.4f}"]
            for r in RULES:
                m, s = mse([q[r] - q[best] for q in recs])
                summary[r].append((m, s))
                row.append(f"{m:+.4f} ± {s:.4f}")
            for d in DIFFS:
                for suffix in ('', ' others'):
                    m, s = mse([q[d[0] + suffix] - q[d[1] + suffix] for q in recs])
                    row.append(f"{m:+.4f} ± {s:.4f}")
                    summary[d + (('others',) if suffix else ())].append((m, s))
            for r in ('brier', 'gap'):
                ch = [q[r + ' choice'] for q in recs]
                row.append(', '.join(f"{nm} {ch.count(nm)}" for nm in dict.fromkeys(ch)))
            lines.append('| ' + ' | '.join(row) + ' |')
            print(lines[-1], flush=True)
    lines.append('')
    for r in RULES:
        ms = np.array(summary[r])
        lines.append(f"- {r} rule: mean over the 16 cells of (rule - best) {ms[:, 0].mean():+.5f}; within one paired "
                     f"se of the best (or below) in {int((ms[:, 0] <= ms[:, 1]).sum())} of 16; below the best by two "
                     f"in {int((ms[:, 0] < -2 * ms[:, 1]).sum())}")
        print(lines[-1])
    for d in DIFFS:
        for key, who in ((d, 'the given decision makers'), (d + ('others',), 'the other decision makers')):
            ms = np.array(summary[key])
            lines.append(f"- {d[0]} rule - {d[1]} rule, for {who}: below 0 in {int((ms[:, 0] < 0).sum())} of 16 "
                         f"cells, by more than two paired se in {int((ms[:, 0] < -2 * ms[:, 1]).sum())}; above by more "
                         f"than two in {int((ms[:, 0] > 2 * ms[:, 1]).sum())}; mean over the cells "
                         f"{ms[:, 0].mean():+.5f}")
            print(lines[-1])
    stamp = machine_info(['first_stage.py', 'decisions.py'])
    text = (f"# The first stage's rule: Brier or the decision makers' gap\n\n{stamp}\n\n"
            f"Produced by `python bench/first_stage_rules.py --write`: {a.seeds} splits per cell, means ± standard "
            f"errors over splits (paired by split); the first stage alone, no round; {time.time() - t0:.0f} s. "
            "What the columns mean: the docstring of bench/first_stage_rules.py.\n\n" + '\n'.join(lines) + '\n')
    if a.write:
        with open(os.path.join(REPO, 'bench', 'first_stage_rules_results.md'), 'w') as f: f.write(text)


if __name__ == '__main__':
    main()
