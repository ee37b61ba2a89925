"""The calibrators the benchmark scripts in bench/ compare deccal with: scikit-learn's baselines on a skeptic's split,
MCGrad (run in its own venv), and the first stage's scored candidates as `select_first_stage` makes them.

This file is also run as a script, in the MCGrad venv (`--mcgrad-worker IN OUT`): it then needs only numpy, pandas
and mcgrad, so nothing else is imported at its top.
"""
from __future__ import annotations
import os
import sys

BASELINES = ('none', 'sigmoid', 'isotonic', 'temperature')   # the 'best baseline' of a cell is chosen among these
CV = 5                                                        # select_first_stage's folds


# ----------------------------------------------------------------------------- MCGrad, in its own venv
def mcgrad_worker(path_in, path_out):
    """Run in the MCGrad venv (it needs torch, which deccal's venv does not have): for every split in the npz file,
    fit MCGrad on the calibration split (features + the base model's P(positive)) and predict on the test split."""
    import time
    import numpy as np
    import pandas as pd
    from mcgrad.methods import MCGrad
    d = np.load(path_in)
    out = {}
    for s in range(int(d['n'])):
        Xc, pc, yc, Xt, pt = (d[f'{k}{s}'] for k in ('Xc', 'pc', 'yc', 'Xt', 'pt'))
        cols = [f'f{j}' for j in range(Xc.shape[1])]
        frame = lambda X, p, y=None: pd.DataFrame({**{c: X[:, j] for j, c in enumerate(cols)}, 'prediction': p,
                                                   'label': np.zeros(len(p)) if y is None else y})
        t0 = time.perf_counter()
        m = MCGrad(random_state=s)
        m.fit(df_train=frame(Xc, pc, yc), prediction_column_name='prediction', label_column_name='label',
              numerical_feature_column_names=cols)
        secs = time.perf_counter() - t0
        out[f'p{s}'] = np.asarray(m.predict(df=frame(Xt, pt), prediction_column_name='prediction',
                                            numerical_feature_column_names=cols), float)
        out[f't{s}'] = np.array(secs)
    np.savez(path_out, **out)


if __name__ == '__main__' and len(sys.argv) > 1 and sys.argv[1] == '--mcgrad-worker':
    mcgrad_worker(sys.argv[2], sys.argv[3])
    sys.exit(0)


def run_mcgrad(python, splits):
    """splits: [(Xc, pc, yc, Xt, pt)]; MCGrad's test probabilities and fit seconds per split, or (None, reason).
    `python`: the Python of a venv with mcgrad installed (this file runs there as the worker)."""
    import subprocess, tempfile
    import numpy as np
    with tempfile.TemporaryDirectory() as tmp:
        fin, fout = os.path.join(tmp, 'in.npz'), os.path.join(tmp, 'out.npz')
        arrays = {'n': np.array(len(splits))}
        for s, sp in enumerate(splits):
            for k, v in zip(('Xc', 'pc', 'yc', 'Xt', 'pt'), sp): arrays[f'{k}{s}'] = v
        np.savez(fin, **arrays)
        env = {k: v for k, v in os.environ.items() if k not in ('PYTHONPATH',)}
        r = subprocess.run([python, os.path.abspath(__file__), '--mcgrad-worker', fin, fout], capture_output=True,
                           text=True, env=env)
        if r.returncode != 0: return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else 'failed'
        d = np.load(fout)
        return [(d[f'p{s}'], float(d[f't{s}'])) for s in range(len(splits))], None


# ----------------------------------------------------------------------------- baselines on a skeptic's split
def split_and_baselines(X, y, mname, seed):
    """The skeptic's split `seed`, its base model fitted on the training rows: the calibration and test probabilities
    Pc, Pt, labels yc, yt, and each baseline's test probabilities (none: Pt; the others fitted on the calibration
    rows)."""
    import warnings
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator
    from _data import CLF_MODELS, split
    tr, ca, te = split(y, seed)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        base = CLF_MODELS[mname]().fit(X[tr], y[tr])
        Pc, Pt, yc, yt = base.predict_proba(X[ca]), base.predict_proba(X[te]), y[ca], y[te]
        probs = {'none': Pt, **{m: CalibratedClassifierCV(FrozenEstimator(base), method=m).fit(X[ca], yc)
                                .predict_proba(X[te]) for m in BASELINES[1:]}}
    return Pc, Pt, yc, yt, probs


# ----------------------------------------------------------------------------- the first stage's candidates
def candidates(Pc, yc, Pt, seed):
    "Every candidate's out-of-fold probabilities (as select_first_stage makes them), test probabilities and parts."
    import numpy as np
    from deccal.first_stage import FIRST_STAGES, stratified_folds, stage_mean, weighted_pairs, averageable
    folds = stratified_folds(yc, CV, seed)
    oofs, tests, parts = {}, {}, {}
    singles = [nm for nm in FIRST_STAGES if averageable(nm)]
    for nm in singles:
        oof = np.empty_like(Pc)
        for k in range(CV):
            tr, te = folds != k, folds == k
            oof[te] = FIRST_STAGES[nm]().fit(Pc[tr], yc[tr]).transform(Pc[te])
        oofs[nm], tests[nm], parts[nm] = oof, FIRST_STAGES[nm]().fit(Pc, yc).transform(Pt), ((nm,), (1.0,))
    for nm in FIRST_STAGES:                                   # the named averages
        if nm in oofs or FIRST_STAGES[nm]().uses_groups: continue
        ps = tuple(nm.split('+'))
        oofs[nm], tests[nm] = stage_mean([oofs[q] for q in ps]), stage_mean([tests[q] for q in ps])
        parts[nm] = (ps, (1 / len(ps),) * len(ps))
    for nm, (ps, w) in weighted_pairs(singles, 4, set(oofs)).items():
        w = np.array(w)
        oofs[nm], tests[nm] = stage_mean([oofs[q] for q in ps], w), stage_mean([tests[q] for q in ps], w)
        parts[nm] = (ps, tuple(w))
    return oofs, tests, parts
