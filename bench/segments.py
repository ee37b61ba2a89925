"""Benchmark: decision calibration per segment on a planted problem, on held-out data, beside the usual calibrators.

Prints figures; it is not a test.  Usage:

    python bench/segments.py --write     # 10 splits of both scenarios; writes bench/segments_results.md
    python bench/segments.py --seeds 2   # a smoke run, nothing written

Data (binary labels, features z ~ 1.5 N(0, 1), a segment A or B with probability 1/2 each, and a pure-noise
feature N(0, 1)).  The model is frozen and predicts P(y = 1) = sigma(z) for every row.  Scenario 'segments': the
truth is sigma(z / 2) in segment A (the model over-confident there) and sigma(2 z) in segment B (under-confident):
the two segments receive the same predictions, so no map of the prediction alone can repair both.  Scenario
'no segment effect': the truth is sigma(z / 2) in both segments (a global over-confidence that temperature scaling
can repair).  Each seed draws 3,000 calibration rows and 3,000 test rows; every figure is measured on the test rows.
Scenario 'segments, shifted logit': the truth is sigma(z + 1) in segment A and sigma(z - 1) in B (the model too
low in A, too high in B): not a change of temperature, so a temperature per segment cannot repair it and the
patching rounds must.  Scenario 'segments, 10,000 calibration rows': 'segments' with 10,000 calibration rows
(the same 3,000 test rows' size): how much of deccal's excess over the true probabilities is the calibration
sample's size.

Calibrators, all fitted on the calibration rows: none (the model); the true probabilities (a calibrated predictor:
what sampling noise alone gives); CalibratedClassifierCV(FrozenEstimator(model), method='temperature' /
'isotonic'); a reference that is told the true segments: temperature scaling fitted within each segment (the
right parametric model here, so its excess over the true probabilities is what the calibration sample's size
allows); deccal's DecisionCalibratedClassifier(FrozenEstimator(model)) with its defaults (segments='auto':
found from the three features) and with segments=None; MCGrad (multicalibration by gradient boosting on the
features and the prediction; the segment as a 0/1 numeric feature) in its own venv, run through bench/skeptic.py's
worker (see that script for the venv), skipped with a note when it is missing.

Metric: Zhao et al.'s evaluation (bench/sklearn_calibration.zhao_gaps: 200 random decision makers with 5 actions and
cost entries uniform in [0, 1], each best-responding to the predictions; |mean predicted - mean realized cost|; the
mean over the decision makers), within each segment's test rows; 'worst' = the larger of the two segments';
also over every test row, and the log loss.  Means and standard errors over the seeds; paired differences (per
seed, then mean and standard error) of each calibrator's worst-segment gap minus the true probabilities'.
"""
from __future__ import annotations
import os, sys
import argparse, time, warnings

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path: sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'bench'))
# the thread settings this script had when it imported bench/skeptic.py or bench/sklearn_calibration.py here
# (for the libraries loaded from here on: scipy's OpenBLAS, scikit-learn's OpenMP)
from _threads import thread_defaults
thread_defaults()
from _measure import machine_info, emit_record, paired, mse                             # noqa: E402
from _data import ZSigmoidModel as Model     # noqa: E402  (the name nbs/13_tutorial_segments.ipynb reads)
from _scores import zhao_gaps                                          # noqa: E402
from _calibrators import run_mcgrad                                    # noqa: E402

import pandas as pd                                                    # noqa: E402
from sklearn.calibration import CalibratedClassifierCV                 # noqa: E402
from sklearn.frozen import FrozenEstimator                             # noqa: E402
from deccal.estimators import DecisionCalibratedClassifier             # noqa: E402

N_CAL, N_TEST, SEEDS = 3000, 3000, 10
# scenario -> (the truth's logit scale in A and in B, calibration rows)
SCENARIOS = {'segments': ((0.5, 2.0), N_CAL), 'no segment effect': ((0.5, 0.5), N_CAL),
             'segments, shifted logit': ((1.0, 1.0, 1.0, -1.0), N_CAL),
             'segments, 10,000 calibration rows': ((0.5, 2.0), 10_000)}
ORACLE = 'temperature per segment, told the segments'
METHODS = ('none', 'true probabilities', 'temperature', 'isotonic', 'deccal (no segments)', 'deccal', 'MCGrad', ORACLE)
MCGRAD = os.path.join(os.path.dirname(REPO), 'venv-mcgrad', 'bin', 'python')


def planted(n:int, seed:int, scales:tuple):
    "Features (z, segment, noise) as a DataFrame, labels, the true P(y = 1), the segment-A mask."
    rng = np.random.default_rng(seed)
    z, A = 1.5 * rng.normal(size=n), rng.uniform(size=n) < 0.5
    sa, sb, ca, cb = (*scales, 0.0, 0.0)[:4]            # the truth's logit: sa z + ca in A, sb z + cb in B
    t = 1 / (1 + np.exp(-np.where(A, sa * z + ca, sb * z + cb)))
    y = (rng.uniform(size=n) < t).astype(int)
    X = pd.DataFrame(dict(z=z, segment=np.where(A, 'A', 'B'), noise=rng.normal(size=n)))
    return X, y, t, A


def metrics(P, y, A, costs) -> dict:
    "Zhao et al.'s mean gap within A, within B, the worse of the two, over every row; the log loss."
    g = {s: float(zhao_gaps(P[m], y[m], costs).mean()) for s, m in (('A', A), ('B', ~A))}
    ll = float(-np.mean(np.log(np.clip(P[np.arange(len(y)), y], 1e-15, 1))))
    return dict(gap_A=g['A'], gap_B=g['B'], worst=max(g.values()), overall=float(zhao_gaps(P, y, costs).mean()),
                log_loss=ll)


def one_seed(seed:int, scales:tuple, costs, n_cal:int=N_CAL) -> tuple:
    "Every calibrator on one seed: {method: metrics}, MCGrad's inputs."
    Xc, yc, _, Ac = planted(n_cal, 2 * seed, scales)
    Xt, yt, tt, At = planted(N_TEST, 2 * seed + 1, scales)
    model = FrozenEstimator(Model().fit(Xc, yc))
    rows = {'none': metrics(model.predict_proba(Xt), yt, At, costs),
            'true probabilities': metrics(np.column_stack([1 - tt, tt]), yt, At, costs)}
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        for m in ('temperature', 'isotonic'):
            rows[m] = metrics(CalibratedClassifierCV(model, method=m).fit(Xc, yc).predict_proba(Xt), yt, At, costs)
        Pt = np.empty((N_TEST, 2))                    # a reference: a temperature fitted within each true segment
        for seg_c, seg_t in ((Ac, At), (~Ac, ~At)):
            ts = CalibratedClassifierCV(model, method='temperature').fit(Xc[seg_c], yc[seg_c])
            Pt[seg_t] = ts.predict_proba(Xt[seg_t])
        rows[ORACLE] = metrics(Pt, yt, At, costs)
        for name, kw in (('deccal (no segments)', dict(segments=None)), ('deccal', {})):
            t0 = time.process_time()
            est = DecisionCalibratedClassifier(model, **kw).fit(Xc, yc)
            rows[name] = metrics(est.predict_proba(Xt), yt, At, costs)
            rows[name].update(cpu_seconds=time.process_time() - t0, kept=float(est.calibrator_.best_round_),
                              segments=0 if est.segment_names_ is None else len(est.segment_names_),
                              first_stage=est.first_stage_.name)
    num = lambda X: np.column_stack([X['z'], X['segment'] == 'A', X['noise']]).astype(float)
    mc_in = (num(Xc), model.predict_proba(Xc)[:, 1], yc.astype(float), num(Xt), model.predict_proba(Xt)[:, 1])
    return rows, mc_in, (yt, At)


def summary(per:list, key:str) -> dict:
    "Mean and standard error over seeds of rows[method][key], per method present in every seed."
    out = {}
    for m in METHODS:
        v = [r[m][key] for r in per if key in r.get(m, {})]
        if len(v) == len(per) and v:
            out[m] = mse(v)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument('--seeds', type=int, default=SEEDS)
    ap.add_argument('--write', action='store_true')
    a = ap.parse_args(argv)
    costs = np.random.default_rng(2024).uniform(0, 1, (200, 5, 2))
    t_all, results = time.perf_counter(), {}
    for scen, (scales, n_cal) in SCENARIOS.items():
        per, mc = [], []
        for s in range(a.seeds):
            rows, mc_in, truth = one_seed(s, scales, costs, n_cal)
            per.append(rows); mc.append((mc_in, truth))
            print(f"{scen} seed {s}: " + ', '.join(f"{m} {r['worst']:.4f}" for m, r in rows.items()), flush=True)
        note = None
        if os.path.exists(MCGRAD):
            out, note = run_mcgrad(MCGRAD, [m for m, _ in mc])
            if out is not None:
                for rows, (p, secs), (_, (yt, At)) in zip(per, out, mc):
                    rows['MCGrad'] = metrics(np.column_stack([1 - p, p]), yt, At, costs)
                    rows['MCGrad']['cpu_seconds'] = secs
        else: note = f"no MCGrad venv at {MCGRAD}"
        results[scen] = dict(per=per, mcgrad_note=note)
    seconds = time.perf_counter() - t_all
    lines = ["# Decision calibration per segment: a planted problem, on held-out data", '',
             machine_info(('estimators.py', 'dimfree.py', 'segments.py')), '',
             f"Produced by `python bench/segments.py --write`; see the script for the scenario. {a.seeds} seeds; "
             f"{N_CAL:,} calibration (10,000 in the last scenario) and {N_TEST:,} test rows each; "
             f"total {seconds:.0f} s.", '']
    verdicts = {}
    for scen, res in results.items():
        per = res['per']
        lines += [f"## Scenario: {scen}", '', '| calibrator | worst segment | segment A | segment B | every row | '
                  'log loss | worst minus the true probabilities |', '|---|---|---|---|---|---|---|']
        cols = {k: summary(per, k) for k in ('worst', 'gap_A', 'gap_B', 'overall', 'log_loss')}
        for m in METHODS:
            if m not in cols['worst']: continue
            d = paired(per, m, 'true probabilities', 'worst')
            lines.append(f"| {m} | " + ' | '.join(f"{cols[k][m][0]:.4f} ± {cols[k][m][1]:.4f}" for k in cols)
                         + f" | {d[0]:+.4f} ± {d[1]:.4f} |")
        if res['mcgrad_note']: lines.append(f"\nMCGrad: {res['mcgrad_note']}")
        lines.append('')
        truth = cols['worst']['true probabilities'][0]
        dd = paired(per, 'deccal', 'true probabilities', 'worst')
        v = dict(deccal_within_noise=bool(dd[0] <= 2 * dd[1]), deccal_minus_truth=dd,
                 others_ratio={m: cols['worst'][m][0] / truth for m in METHODS[2:]
                               if m in cols['worst'] and m not in ('deccal', ORACLE)},
                 deccal_minus_oracle=paired(per, 'deccal', ORACLE, 'worst'))
        if scen == 'no segment effect':
            v['deccal_minus_no_segments'] = paired(per, 'deccal', 'deccal (no segments)', 'worst')
            v['deccal_minus_no_segments_overall'] = paired(per, 'deccal', 'deccal (no segments)', 'overall')
        verdicts[scen] = v
        lines += [f"deccal's worst segment minus the true probabilities': {dd[0]:+.4f} ± {dd[1]:.4f} "
                  f"({'within 2 SE: within noise' if v['deccal_within_noise'] else 'more than 2 SE above'}); "
                  "worst segment over the true probabilities' for " +
                  ', '.join(f"{m} {r:.1f}x" for m, r in v['others_ratio'].items()) + '.', '',
                  f"deccal minus the {ORACLE} (a parametric fit that knows the segments: what the calibration "
                  f"sample's size allows): {v['deccal_minus_oracle'][0]:+.4f} ± {v['deccal_minus_oracle'][1]:.4f}. "
                  "deccal's first stage: " + ', '.join(f"{nm} {c}" for nm, c in zip(*np.unique(
                      [r['deccal']['first_stage'] for r in per], return_counts=True))) + ' (seeds).', '']
        if scen == 'no segment effect':
            d1, d2 = v['deccal_minus_no_segments'], v['deccal_minus_no_segments_overall']
            lines += [f"deccal minus deccal without segments: worst segment {d1[0]:+.4f} ± {d1[1]:.4f}, every row "
                      f"{d2[0]:+.4f} ± {d2[1]:.4f}.", '']
        cpu = summary(per, 'cpu_seconds') if all('cpu_seconds' in r.get('deccal', {}) for r in per) else {}
        if 'deccal' in cpu: lines += [f"deccal's fit: {cpu['deccal'][0]:.2f} ± {cpu['deccal'][1]:.2f} s CPU "
                                      f"(without segments {cpu['deccal (no segments)'][0]:.2f} s).", '']
    blob = {scen: dict(per=res['per'], mcgrad_note=res['mcgrad_note'], verdict=verdicts[scen])
            for scen, res in results.items()}
    emit_record(lines, dict(seeds=a.seeds, n_cal=N_CAL, n_test=N_TEST, seconds=seconds, scenarios=blob),
                'segments_results.md', a.write)


if __name__ == '__main__':
    main()
