"""Calibrator files: a place that cannot be written is refused before the work, a file changed after `save` is
refused by its checksum, files of the previous versions still load, and other files are named for what they are."""
import os
from pathlib import Path
import numpy as np
import pytest
from deccal import persist
from deccal.checks import DeccalError
from deccal.embedding import Embedding
from deccal.kernels import RBF
from deccal.dimfree import DimFreeDeCal
from deccal.segments import Groups
from deccal.zhao import ZhaoDeCal

os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')
DATA = Path(__file__).parent / 'data'


@pytest.fixture(scope='module')
def fitted():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (50, 2))
    pred, Y = Embedding.from_points(0.6 * x), x + 0.2 * rng.normal(size=(50, 2))
    cal = DimFreeDeCal(RBF(1.0), n_actions=2, max_rounds=2, n_starts=1, max_iter=20, early_stopping=False)
    cal.fit(pred, Y)
    assert len(cal.rounds_) > 0
    return cal, Embedding.from_points(rng.uniform(-1, 1, (7, 2)))


def arrays_of(fn):
    with np.load(fn, allow_pickle=False) as f: return {k: f[k] for k in f.files}


def permissions_enforced(folder):
    "Whether a 0o555 folder really refuses a new file (not for root, which ignores permissions)."
    os.chmod(folder, 0o555)
    try: (folder / 'probe').write_text('x')
    except PermissionError: return True
    finally: os.chmod(folder, 0o755)
    (folder / 'probe').unlink(); return False


# 1. the place, checked before the work ------------------------------------------------------------------

def test_save_into_a_folder_without_write_permission(fitted, tmp_path, monkeypatch):
    ro = tmp_path / 'ro'; ro.mkdir()
    if not permissions_enforced(ro): pytest.skip('permissions are not enforced (running as root)')
    os.chmod(ro, 0o555)
    calls = []
    monkeypatch.setattr(np, 'savez', lambda *a, **k: calls.append(1))          # no work once refused
    try:
        with pytest.raises(DeccalError, match=r"^path: .* folder .* is not writable") as e:
            fitted[0].save(ro / 'c.npz')
    finally: os.chmod(ro, 0o755)
    assert e.value.arg == 'path' and str(ro / 'c.npz') in str(e.value) and calls == [] and list(ro.iterdir()) == []


def test_save_over_a_read_only_file(fitted, tmp_path):
    fn = tmp_path / 'kept.npz'
    fn.write_bytes(b'keep'); os.chmod(fn, 0o444)
    if not permissions_enforced(tmp_path): pytest.skip('permissions are not enforced (running as root)')
    with pytest.raises(DeccalError, match='is read-only') as e: fitted[0].save(fn)
    assert e.value.arg == 'path' and str(fn) in str(e.value) and fn.read_bytes() == b'keep'
    assert os.listdir(tmp_path) == ['kept.npz']


def test_save_over_a_writable_file_still_works(fitted, tmp_path):
    fn = tmp_path / 'c.npz'
    fn.write_bytes(b'old')
    fitted[0].save(fn)
    assert persist.load_calibrator(fn).best_round_ == fitted[0].best_round_


# 2. the checksum ---------------------------------------------------------------------------------------

def test_saved_file_holds_its_checksum(fitted, tmp_path):
    fitted[0].save(tmp_path / 'c.npz')
    a = arrays_of(tmp_path / 'c.npz')
    assert int(a['version']) == persist.FORMAT_VERSION == 6 and {4, 5, 6} <= set(persist.READS)
    assert str(a['checksum']) == persist.calibrator_checksum(a)
    assert len(str(a['checksum'])) == 64 and int(str(a['checksum']), 16) >= 0         # a sha256 in hex


@pytest.mark.parametrize('edit', ['Y', 'C', 'R2_', 'params'])
def test_consistent_edit_refused_by_the_checksum(fitted, tmp_path, edit):
    "An array changed and written back with np.savez, every array still consistent: refused, naming the path."
    cal, new = fitted
    cal.save(tmp_path / 'c.npz')
    a = arrays_of(tmp_path / 'c.npz')
    a[edit] = dict(Y=lambda v: v + 0.01, C=lambda v: v * 1.5, R2_=lambda v: v * 2,
                   params=lambda v: np.array(str(v).replace("'beta': 10.0", "'beta': 11.0")))[edit](a[edit])
    np.savez(tmp_path / 'edited.npz', **a)
    with pytest.raises(DeccalError, match='does not match its checksum') as e:
        persist.load_calibrator(tmp_path / 'edited.npz')
    assert e.value.arg == 'path' and str(tmp_path / 'edited.npz') in str(e.value)
    a['checksum'] = np.array(persist.calibrator_checksum(a))                  # re-signed: it loads, and differs
    np.savez(tmp_path / 'signed.npz', **a)
    back = persist.load_calibrator(tmp_path / 'signed.npz')
    changed = back.get_params()['beta'] != cal.beta if edit == 'params' else \
        not np.array_equal(back.transform(new).theta, cal.transform(new).theta)
    assert changed


def test_checksum_covers_names_dtypes_shapes_and_bytes():
    a = dict(x=np.arange(4.0), k=np.array('rbf'))
    base = persist.calibrator_checksum(a)
    assert persist.calibrator_checksum(dict(k=a['k'], x=a['x'])) == base                  # fixed order
    assert persist.calibrator_checksum({**a, 'checksum': np.array('x')}) == base           # itself left out
    for other in (dict(x=np.arange(4)), dict(x=np.arange(4.0).reshape(2, 2)), dict(x=np.arange(1.0, 5.0)),
                  dict(k=np.array('rbg'))):
        assert persist.calibrator_checksum({**a, **other}) != base, other
    assert persist.calibrator_checksum(dict(y=a['x'], k=a['k'])) != base


# 3. files of the previous versions --------------------------------------------------------------------

@pytest.mark.parametrize('name, cls', [('dimfree', DimFreeDeCal), ('zhao', ZhaoDeCal)])
def test_version_2_files_still_load(name, cls):
    "The version 2 files in tests/data (no checksum) load and transform as recorded."
    exp = np.load(DATA / 'calibrator_v2_expected.npz')
    assert 'checksum' not in arrays_of(DATA / f'calibrator_v2_{name}.npz')
    cal = persist.load_calibrator(DATA / f'calibrator_v2_{name}.npz')
    out = cal.transform(Embedding.from_points(exp['new_points']))
    assert type(cal) is cls
    np.testing.assert_allclose(out.theta, exp[name + '_theta'], rtol=0, atol=1e-13)


def test_version_3_file_still_loads(fitted, tmp_path):
    "A version 3 file (the same members, no checksum) loads to the same calibrator; a version 4 one must have it."
    cal, new = fitted
    cal.save(tmp_path / 'c.npz')
    a = arrays_of(tmp_path / 'c.npz')
    v3 = {k: v for k, v in a.items() if k not in ('checksum', 'group', 'n_groups_', 'groups_definition')}
    np.savez(tmp_path / 'v3.npz', **{**v3, 'version': np.array(3)})
    assert np.array_equal(persist.load_calibrator(tmp_path / 'v3.npz').transform(new).theta, cal.transform(new).theta)
    np.savez(tmp_path / 'v4.npz', **v3)
    with pytest.raises(DeccalError, match='version 4 or later but no checksum'):
        persist.load_calibrator(tmp_path / 'v4.npz')


def test_version_4_file_still_loads(fitted, tmp_path):
    "A version 4 file (a checksum, no rounds' groups: written before groups existed) loads to the same calibrator."
    cal, new = fitted
    cal.save(tmp_path / 'c.npz')
    a = {k: v for k, v in arrays_of(tmp_path / 'c.npz').items()
         if k not in ('checksum', 'group', 'n_groups_', 'groups_definition')}
    a['version'] = np.array(4)
    a['checksum'] = np.array(persist.calibrator_checksum(a))
    np.savez(tmp_path / 'v4.npz', **a)
    back = persist.load_calibrator(tmp_path / 'v4.npz')
    assert back.n_groups_ is None
    assert np.array_equal(back.transform(new).theta, cal.transform(new).theta)


def test_version_5_file_still_loads(tmp_path):
    "A version 5 file (rounds' groups, no groups' definition) loads as fitted with memberships, and transforms alike."
    rng = np.random.default_rng(4)
    x = rng.uniform(-1, 1, (80, 1))
    feats = {'x': x[:, 0], 'side': np.where(rng.uniform(size=80) < 0.5, 'l', 'r')}
    pred, Y = Embedding.from_points(0.5 * x), x + 0.2 * rng.normal(size=(80, 1))
    family = Groups.from_features(feats, n_bins=2)
    cal = DimFreeDeCal(RBF(1.0), n_actions=2, max_rounds=2, n_starts=1, max_iter=20, early_stopping=False)
    cal.fit(pred, Y, groups=family, features=feats)
    cal.save(tmp_path / 'c.npz')
    a = arrays_of(tmp_path / 'c.npz')
    assert int(a['version']) == 6 and str(a['groups_definition'])
    assert persist.load_calibrator(tmp_path / 'c.npz').groups_.to_dict() == family.to_dict()
    a = {k: v for k, v in a.items() if k not in ('checksum', 'groups_definition')}
    a['version'] = np.array(5)
    a['checksum'] = np.array(persist.calibrator_checksum(a))
    np.savez(tmp_path / 'v5.npz', **a)
    back = persist.load_calibrator(tmp_path / 'v5.npz')
    assert back.groups_ is None and back.n_groups_ == len(family)
    G = family.membership(feats)
    assert np.array_equal(back.transform(pred, G).theta, cal.transform(pred, features=feats).theta)
    with pytest.raises(DeccalError, match='features: this calibrator was fitted with memberships'):
        back.transform(pred, features=feats)


# 4. other files, named for what they are ----------------------------------------------------------------

def test_other_files_named_for_what_they_are(tmp_path):
    np.savetxt(tmp_path / 'c.csv', np.eye(2), delimiter=',')
    with pytest.raises(DeccalError, match=r"c.csv' is not a deccal calibrator file: it must be the .npz file") as e:
        persist.load_calibrator(tmp_path / 'c.csv')
    assert 'pickle' not in str(e.value)
    with pytest.raises(DeccalError, match='is a folder, not a file'): persist.load_calibrator(tmp_path)
    np.savez(tmp_path / 'e.npz', format=np.array('deccal-embedding'), Z=np.zeros((2, 1, 1)))
    with pytest.raises(DeccalError, match=r"holds predictions \(written by `deccal transform`"):
        persist.load_calibrator(tmp_path / 'e.npz')


@pytest.mark.parametrize('version', [2, 3, 4, 5])
def test_a_lowered_version_is_refused(fitted, tmp_path, version):
    "A saved file with its version lowered (the checksum left unchecked below 4) is refused: its members say newer."
    cal, new = fitted
    cal.save(tmp_path / 'c.npz')
    a = arrays_of(tmp_path / 'c.npz')
    a['C'] = 2 * a['C']                                  # the edit the lowered version would hide from the checksum
    np.savez(tmp_path / 'low.npz', **{**a, 'version': np.array(version)})
    with pytest.raises(DeccalError, match=f"says format version {version} but has the member"):
        persist.load_calibrator(tmp_path / 'low.npz')


def test_the_estimators_calibrator_saves_and_loads(tmp_path):
    "The default classifier's calibrator_ (a CrossFitDeCal) saved and loaded gives the same probabilities, bit for bit."
    from sklearn.datasets import make_classification
    from sklearn.frozen import FrozenEstimator
    from sklearn.naive_bayes import GaussianNB
    from deccal.crossfit import CrossFitDeCal
    from deccal.estimators import DecisionCalibratedClassifier
    X, y = make_classification(1500, 8, n_informative=5, n_classes=3, random_state=0)
    est = DecisionCalibratedClassifier(FrozenEstimator(GaussianNB().fit(X[:500], y[:500])), segments=None)
    est.fit(X[500:1200], y[500:1200])
    est.calibrator_.save(tmp_path / 'cal.npz')
    back = persist.load_calibrator(tmp_path / 'cal.npz')
    assert isinstance(back, CrossFitDeCal) and back.best_round_ == est.calibrator_.best_round_
    P = est.predict_proba(X[1200:])
    est.calibrator_ = back
    np.testing.assert_array_equal(est.predict_proba(X[1200:]), P)
