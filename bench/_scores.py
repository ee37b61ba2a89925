"""Scores of predictions on test rows, shared by the benchmark scripts in bench/: Zhao et al.'s gap (plain, with its
noise floor and debiased), log loss, Brier, a team's cost under one matrix, and the columns the skeptic's benchmarks
report for one calibrator; `rounds`, what a fitted estimator's calibrator kept.
"""
from __future__ import annotations
import numpy as np


def zhao_gaps(V, y, costs):
    """Zhao et al.'s evaluation: for each cost matrix costs[k] (A, C), the best response to the predicted costs
    V @ costs[k].T; |mean predicted cost of the chosen actions - mean realized cost| per decision maker, shape (K,).
    V: (n, C) predictions (probabilities, or any vectors of R^C), y: (n,) class indices 0..C-1."""
    F = np.einsum('ic,kac->kia', V, costs)                      # predicted costs (decision makers, rows, actions)
    choice = F.argmin(2)
    pred_cost = np.take_along_axis(F, choice[:, :, None], 2)[:, :, 0]
    real_cost = costs[np.arange(len(costs))[:, None], choice, y[None, :]]
    return np.abs((real_cost - pred_cost).mean(1))


def gap_statistics(V, y, costs, block:int=16) -> dict:
    """Zhao et al.'s gap on test rows, with what noise alone gives.  Per decision maker k (costs[k], best response
    to V), d_i = paid - promised on row i:
      'gap'      |mean d|, the plain gap;
      'dgap2'    (mean d)^2 - var(d) / n, an unbiased estimate of the squared population gap (about 0 when V is
                 calibrated, whatever n);
      'floor'    sqrt(2 / pi) sd(d) / sqrt(n), what the plain gap of calibrated predictions is on average on n rows.
    Each a (K,) array; computed `block` decision makers at a time (the (block, n, A) arrays stay small)."""
    from deccal.decisions import cost_gap_rows
    V, y, costs = np.asarray(V, np.float64), np.asarray(y), np.asarray(costs, np.float64)
    out = {k: np.empty(len(costs)) for k in ('gap', 'dgap2', 'floor')}
    for k0 in range(0, len(costs), block):
        d = cost_gap_rows(V, y, costs[k0:k0 + block])
        n, m, v = d.shape[1], d.mean(1), d.var(1, ddof=1)
        out['gap'][k0:k0 + block], out['dgap2'][k0:k0 + block] = np.abs(m), m ** 2 - v / n
        out['floor'][k0:k0 + block] = np.sqrt(2 / np.pi * v / n)
    return out


def noise_floor(P, costs, seed:int, draws:int=5) -> dict:
    """Zhao et al.'s mean and max gap of probabilities P against labels drawn from themselves (`draws` draws, seeded
    by [seed, r]): what sampling noise alone gives on a test split of that size."""
    fl = [zhao_gaps(P, (P.cumsum(1) > np.random.default_rng([seed, r]).uniform(size=(len(P), 1))).argmax(1), costs)
          for r in range(draws)]
    return dict(mean_gap=float(np.mean([g.mean() for g in fl])), max_gap=float(np.mean([g.max() for g in fl])))


def brier(P, y):
    "Mean ||p(x) - e_y||^2 (the multiclass Brier score, summed over classes)."
    E = np.eye(P.shape[1])[y]
    return float(np.mean(np.sum((P - E)**2, axis=1)))


def log_loss_eps(P, y):
    "Mean -log p_y, probabilities clipped at machine epsilon (what scikit-learn's log_loss does)."
    eps = np.finfo(float).eps
    return float(np.mean(-np.log(np.clip(P[np.arange(len(y)), y], eps, 1.0))))


def team_columns(P, y, R, M):
    """A team's view of probabilities P (n, C) on labels y: 'gap', the mean over the cost matrices R (K, A, C) of
    |mean promised - mean paid| of their best responses; 'log_loss' (clipped at 1e-15); 'cost', the mean cost paid
    under the matrix M (A, C)."""
    from deccal.decisions import cost_matrix_gaps
    Pc = np.clip(P, 1e-15, 1)
    return dict(gap=float(cost_matrix_gaps(P, y, R).mean()), log_loss=float(-np.log(Pc[np.arange(len(y)), y]).mean()),
                cost=float(M[(P @ M.T).argmin(1), y].mean()))


def prob_metrics(V, P, y, costs, M, act, secs):
    """bench/skeptic.py's columns of one calibrator on one split; V: vectors for the decisions, P: probabilities,
    act: actions under the team's matrix M, secs: the fit time."""
    st = gap_statistics(V, y, costs)
    g = st['gap']
    return dict(mean_gap=float(g.mean()), max_gap=float(g.max()), dgap2=float(st['dgap2'].mean()),
                log_loss=log_loss_eps(P, y), brier=brier(P, y),
                accuracy=float((P.argmax(1) == y).mean()), zeros=float((P <= 0).any(1).mean()),
                cost=float(M[act, y].mean()), fit_s=secs)


def large_columns(V, P, act, y, costs, M, secs) -> dict:
    "bench/skeptic_large.py's columns of one calibrator on the test rows (see that script's docstring)."
    g = gap_statistics(V, y, costs)
    promised = (V @ M.T)[np.arange(len(y)), act]
    return dict(gap=float(g['gap'].mean()), floor=float(g['floor'].mean()), dgap2=float(g['dgap2'].mean()),
                log_loss=float(-np.log(np.clip(P[np.arange(len(y)), y], 1e-15, 1)).mean()),
                cost=float(M[act, y].mean()), team_gap=float(abs(promised.mean() - M[act, y].mean())), fit_s=secs)


def rounds(est):
    "{kept, run}: the rounds the estimator's calibrator kept and ran (a cross-fitted one: the mean over its folds)."
    c = getattr(est, 'calibrator_', None)
    try:
        run = np.mean(c.rounds_run_) if hasattr(c, 'rounds_run_') else len(c.all_rounds_)
        return dict(kept=float(c.best_round_), run=float(run))
    except (AttributeError, TypeError): return {}
