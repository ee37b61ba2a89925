"""The `deccal` command: one vocabulary of errors, file modes, signals, a closed stderr, output paths checked
before the work, the kernel registry, and the library's current API (verbose=)."""
import contextlib, io, os, shlex, signal, subprocess, sys
import numpy as np
import pytest
from deccal import cli, kernels
from deccal.runtime import available_memory, check_memory
from deccal.audit import search_bytes
from deccal.dimfree import DimFreeDeCal

PY = sys.executable


def run(*args):
    "Run the command in this process: (status, stdout, stderr)."
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err): rc = cli.main([str(a) for a in args])
    return rc, out.getvalue(), err.getvalue()


def one_line(err):
    "The single line the command wrote to stderr."
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture(scope='module')
def files(tmp_path_factory):
    "Tiny data: 60 point predictions in R^2, outcomes, new predictions, and a calibrator fitted on them."
    d = tmp_path_factory.mktemp('cli')
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (60, 2))
    np.savetxt(d / 'pred.csv', 0.6 * x, delimiter=',')
    np.savetxt(d / 'y.csv', x + 0.2 * rng.normal(size=(60, 2)), delimiter=',')
    np.savetxt(d / 'new.csv', rng.uniform(-1, 1, (10, 2)), delimiter=',')
    np.savetxt(d / 'p.csv', np.full((5, 3), 1 / 3), delimiter=',')
    np.savetxt(d / 'p_bad.csv', np.full((5, 3), 0.5), delimiter=',')
    np.savetxt(d / 'classes.csv', np.eye(3), delimiter=',')
    np.savetxt(d / 'classes2.csv', np.eye(2), delimiter=',')
    rc, out, err = run('calibrate', *CAL_ARGS(d), '--output', d / 'cal.npz', '--quiet')
    assert rc == 0, err
    return d


def CAL_ARGS(d):
    return ('--pred', d / 'pred.csv', '--y', d / 'y.csv', '--actions', 2, '--max-rounds', 2)


def AUDIT_ARGS(d):
    return ('--pred', d / 'pred.csv', '--y', d / 'y.csv', '--actions', 2)


# 1. one vocabulary of errors -------------------------------------------------------------------------

def test_a_bug_keeps_its_traceback(files, monkeypatch):
    "Only deccal's input errors become one line and status 2; any other exception (a ValueError included) is a bug."
    def broken(*a, **k): raise ValueError('an internal mistake')
    monkeypatch.setattr(cli, 'audit', broken)
    with pytest.raises(ValueError, match='an internal mistake'):
        cli.main([str(a) for a in ('audit', *AUDIT_ARGS(files), '--quiet')])


@pytest.mark.parametrize('call, option', [
    (lambda d: cli.read_predictions(d / 'p_bad.csv', 'probs', d / 'classes.csv'), '--pred'),
    (lambda d: cli.read_predictions(d / 'p.csv', 'probs', d / 'classes2.csv'), '--classes'),
    (lambda d: cli.read_predictions(d / 'p_bad.csv', 'probs', d / 'classes.csv', '--holdout-pred'), '--holdout-pred'),
    (lambda d: cli.read_array(d / 'missing.csv', '--y'), '--y'),
    (lambda d: cli.kernel_from_options('rbf', gamma=-1.0), '--gamma'),
    (lambda d: cli.kernel_from_options('poly', degree=0), '--degree'),
    (lambda d: cli.kernel_from_options('gauss'), '--kernel'),
])
def test_errors_carry_the_option(files, call, option):
    "An error the command re-labels is a DeccalError whose `arg` is the option."
    with pytest.raises(ValueError, match=f'^{option}: ') as ei: call(files)
    assert ei.value.arg == option
    from deccal.checks import DeccalError
    assert isinstance(ei.value, DeccalError)


def test_transform_errors_carry_the_option(files, tmp_path):
    (tmp_path / 'junk.npz').write_bytes(b'not a zip file')
    rc, out, err = run('transform', '--calibrator', tmp_path / 'junk.npz', '--pred', files / 'new.csv',
                       '--output', tmp_path / 't.npz')
    assert rc == 2 and one_line(err).startswith('deccal: error: --calibrator: ')
    np.savetxt(tmp_path / 'new3.csv', np.zeros((4, 3)), delimiter=',')      # the calibrator is on R^2
    rc, out, err = run('transform', '--calibrator', files / 'cal.npz', '--pred', tmp_path / 'new3.csv',
                       '--output', tmp_path / 't.npz')
    assert rc == 2 and one_line(err).startswith('deccal: error: --pred: '), err
    assert not list(tmp_path.glob('t.npz')) and not list(tmp_path.glob('.deccal-*'))


def test_library_errors_are_one_line(files):
    rc, out, err = run('audit', *AUDIT_ARGS(files), '--beta', -1, '--quiet')
    assert rc == 2 and one_line(err).startswith('deccal: error: --beta: must')   # the library's `beta`, by its option
    rc, out, err = run('calibrate', *AUDIT_ARGS(files)[:4], '--eps', 0, '--output', files / 'never.npz', '--quiet')
    assert rc == 2 and one_line(err).startswith('deccal: error: --eps: must'), err
    rc, out, err = run('demo', '--n', 10)
    assert rc == 2 and one_line(err).startswith('deccal: error: --n: ')
    assert run('--help')[0] == 0 and run('frobnicate')[0] == 2


# 2. file modes ---------------------------------------------------------------------------------------

@pytest.fixture
def umask022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(p): return os.stat(p).st_mode & 0o777


def test_outputs_get_the_mode_of_a_plain_open(files, tmp_path, umask022):
    "New outputs: 0666 less the umask (not a temporary file's 0600); an overwritten file keeps its mode."
    jobs = [('audit', *AUDIT_ARGS(files), '--quiet', '--report', tmp_path / 'r.json'),
            ('calibrate', *CAL_ARGS(files), '--quiet', '--output', tmp_path / 'c.npz'),
            ('transform', '--calibrator', files / 'cal.npz', '--pred', files / 'new.csv',
             '--output', tmp_path / 't.npz')]
    outs = [tmp_path / 'r.json', tmp_path / 'c.npz', tmp_path / 't.npz']
    for job in jobs: assert run(*job)[0] == 0
    assert [mode(p) for p in outs] == [0o644] * 3
    for p in outs: os.chmod(p, 0o664)
    for job in jobs: assert run(*job)[0] == 0
    assert [mode(p) for p in outs] == [0o664] * 3
    assert not list(tmp_path.glob('.deccal-*'))


def test_demo_outputs_get_the_mode_of_a_plain_open(tmp_path, umask022):
    rc, out, err = run('demo', '--n', 60, '--max-rounds', 1, '--types', 2, '--actions', 2, '--quiet',
                       '--out', tmp_path / 'demo')
    assert rc == 0, err
    files = sorted((tmp_path / 'demo').iterdir())
    assert [p.name for p in files] == ['reliability.png', 'report.json', 'rounds.png']
    assert [mode(p) for p in files] == [0o644] * 3
    assert (tmp_path / 'demo' / 'rounds.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


# 3. a CSV file with a byte-order mark ------------------------------------------------------------------

def test_csv_with_byte_order_mark(tmp_path):
    (tmp_path / 'bom.csv').write_bytes('\ufeff1,2\n3,4\n'.encode())
    np.testing.assert_array_equal(cli.read_array(tmp_path / 'bom.csv', '--y'), [[1., 2.], [3., 4.]])
    # with a header: the header goes, not a row
    (tmp_path / 'bomh.csv').write_bytes('\ufeffa,b\n1,2\n3,4\n'.encode())
    np.testing.assert_array_equal(cli.read_array(tmp_path / 'bomh.csv', '--y'), [[1., 2.], [3., 4.]])


# 4. signals ------------------------------------------------------------------------------------------

# Python code run before the command: the signal arrives while the output is being moved into place, when the
# temporary file is complete (only deccal's own temporary files trigger it, not e.g. Numba's cache)
SIGNAL_DURING_SAVE = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)   # even where the parent ignores SIGINT (a background job)
_replace = os.replace
def replace(src, dst, *a, **k):
    if os.path.basename(str(src)).startswith('.deccal-'):
        os.kill(os.getpid(), signal.{sig}); time.sleep(30)
    return _replace(src, dst, *a, **k)
os.replace = replace
from deccal.cli import main
sys.exit(main({args!r}))
"""


@pytest.mark.parametrize('sig, status, line', [('SIGTERM', 143, 'deccal: terminated'),
                                               ('SIGINT', 130, 'deccal: interrupted')])
def test_signal_during_save(files, tmp_path, sig, status, line):
    out = tmp_path / 'cal.npz'
    args = ['calibrate', *map(str, CAL_ARGS(files)), '--quiet', '--output', str(out)]
    r = subprocess.run([PY, '-c', SIGNAL_DURING_SAVE.format(sig=sig, args=args)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == status, r.stderr
    assert r.stderr.strip().splitlines() == [line]
    assert list(tmp_path.iterdir()) == []             # no temporary file, no half-written output


def test_sigterm_handler_is_restored(files):
    before = signal.getsignal(signal.SIGTERM)
    assert run('audit', *AUDIT_ARGS(files), '--quiet')[0] == 0
    assert signal.getsignal(signal.SIGTERM) is before


# 5. stderr closed ------------------------------------------------------------------------------------

def closed_stderr(*args):
    "Run the command in a shell with stderr closed (2>&-): (status, stdout)."
    code = f"import sys; from deccal.cli import main; sys.exit(main({[str(a) for a in args]!r}))"
    r = subprocess.run(['bash', '-c', f"{shlex.quote(PY)} -c {shlex.quote(code)} 2>&-"], capture_output=True,
                       text=True, timeout=120)
    return r.returncode, r.stdout


def test_closed_stderr(files, tmp_path):
    rc, out = closed_stderr('calibrate', *CAL_ARGS(files), '--output', tmp_path / 'c.npz')      # with progress bars
    assert rc == 0 and (tmp_path / 'c.npz').is_file() and 'wrote' in out
    rc, out = closed_stderr('audit', *AUDIT_ARGS(files), '--beta', -1)
    assert rc == 2 and out == ''                      # the error is not sent to stdout instead


# 6. output paths checked before the work --------------------------------------------------------------

@pytest.fixture
def no_work(monkeypatch):
    "Make every expensive step fail loudly: the tests below must stop before any of them."
    def fail(*a, **k): raise AssertionError('the work started before the output path was checked')
    monkeypatch.setattr(DimFreeDeCal, 'fit', fail)
    for name in ('read_array', 'load_calibrator', 'audit', 'demo_data'): monkeypatch.setattr(cli, name, fail)


@pytest.mark.parametrize('job, option', [
    (lambda d, t: ('calibrate', *CAL_ARGS(d), '--output', t / 'folder.npz'), '--output'),
    (lambda d, t: ('calibrate', *CAL_ARGS(d), '--output', t / 'missing' / 'c.npz'), '--output'),
    (lambda d, t: ('transform', '--calibrator', d / 'cal.npz', '--pred', d / 'new.csv', '--output', t / 'folder.npz'),
     '--output'),
    (lambda d, t: ('transform', '--calibrator', d / 'cal.npz', '--pred', d / 'new.csv',
                   '--output', t / 'missing' / 't.npz'), '--output'),
    (lambda d, t: ('audit', *AUDIT_ARGS(d), '--report', t / 'folder.npz'), '--report'),
    (lambda d, t: ('audit', *AUDIT_ARGS(d), '--report', t / 'missing' / 'r.json'), '--report'),
    (lambda d, t: ('demo', '--out', t / 'file.txt'), '--out'),
    (lambda d, t: ('demo', '--out', t / 'file.txt' / 'sub'), '--out'),
])
def test_output_path_checked_first(files, tmp_path, no_work, job, option):
    (tmp_path / 'folder.npz').mkdir(); (tmp_path / 'file.txt').write_text('x')
    rc, out, err = run(*job(files, tmp_path))
    assert rc == 2 and one_line(err).startswith(f'deccal: error: {option}: '), err


# 7. the kernel registry ------------------------------------------------------------------------------

def test_kernels_come_from_the_registry(monkeypatch):
    "A kernel added to deccal.kernels.KERNELS is a --kernel choice and is listed in the help."
    reg = dict(getattr(kernels, 'KERNELS', {}), lin2=kernels.Linear)
    monkeypatch.setattr(kernels, 'KERNELS', reg, raising=False)
    assert isinstance(cli.kernel_from_options('lin2'), kernels.Linear)
    h = cli.parser()._subparsers._group_actions[0].choices['audit'].format_help()
    assert 'lin2' in ' '.join(h.split())


def test_only_the_kernels_own_options_are_passed(files):
    assert cli.kernel_from_options('poly', gamma=-1.0, degree=3, c=0.5).get_params() == {'degree': 3, 'c': 0.5}
    assert cli.kernel_from_options('laplacian', gamma=0.5, degree=-4).get_params() == {'gamma': 0.5}
    rc, out, err = run('audit', *AUDIT_ARGS(files), '--kernel', 'rbf', '--gamma', -1, '--quiet')
    assert rc == 2 and one_line(err).startswith('deccal: error: --gamma: ')


# 8. the library's API: verbose -------------------------------------------------------------------------

def test_run_demo_verbose():
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        rep = cli.run_demo(n=60, max_rounds=1, n_types=2, n_actions=2, out_dir=None, stream=buf, verbose=False)
    assert err.getvalue() == '' and rep['rounds'].keys() == {'DimFreeDeCal', 'ZhaoDeCal'}
    with contextlib.redirect_stderr(err):
        cli.run_demo(n=60, max_rounds=1, n_types=2, n_actions=2, out_dir=None, stream=buf, verbose=True)
    assert 'DimFreeDeCal' in err.getvalue() and 'audit [' in err.getvalue()


# 9. checked before the work: writable outputs, no output that is an input, memory ---------------------

def permissions_enforced(folder):
    "Whether a 0o555 folder really refuses a new file (not for root, which ignores permissions)."
    probe = folder / 'probe'
    os.chmod(folder, 0o555)
    try: probe.write_text('x')
    except PermissionError: return True
    finally: os.chmod(folder, 0o755)
    probe.unlink(); return False


@pytest.fixture
def read_only(tmp_path):
    "A folder without write permission (ro/), one with a read-only file (ro_file/out.npz); skip as root."
    ro, rf = tmp_path / 'ro', tmp_path / 'ro_file'
    ro.mkdir(); rf.mkdir()
    if not permissions_enforced(ro): pytest.skip('permissions are not enforced (running as root)')
    for name in ('out.npz', 'r.json', 'report.json'): (rf / name).write_bytes(b'keep'); os.chmod(rf / name, 0o444)
    os.chmod(ro, 0o555)
    yield tmp_path
    os.chmod(ro, 0o755)


@pytest.mark.parametrize('job, option', [
    (lambda d, t: ('calibrate', *CAL_ARGS(d), '--output', t / 'ro' / 'c.npz'), '--output'),
    (lambda d, t: ('calibrate', *CAL_ARGS(d), '--output', t / 'ro_file' / 'out.npz'), '--output'),
    (lambda d, t: ('transform', '--calibrator', d / 'cal.npz', '--pred', d / 'new.csv', '--output', t / 'ro' / 't.npz'),
     '--output'),
    (lambda d, t: ('transform', '--calibrator', d / 'cal.npz', '--pred', d / 'new.csv',
                   '--output', t / 'ro_file' / 'out.npz'), '--output'),
    (lambda d, t: ('audit', *AUDIT_ARGS(d), '--report', t / 'ro' / 'r.json'), '--report'),
    (lambda d, t: ('audit', *AUDIT_ARGS(d), '--report', t / 'ro_file' / 'r.json'), '--report'),
    (lambda d, t: ('demo', '--out', t / 'ro'), '--out'),
    (lambda d, t: ('demo', '--out', t / 'ro' / 'new' / 'deeper'), '--out'),
    (lambda d, t: ('demo', '--out', t / 'ro_file'), '--out'),          # its report.json is read-only
])
def test_unwritable_output_refused_before_work(files, read_only, no_work, job, option):
    "An output that cannot be written: one line naming the option, status 2, before any work; nothing changed."
    rc, out, err = run(*job(files, read_only))
    assert rc == 2 and one_line(err).startswith(f'deccal: error: {option}: '), err
    assert 'writ' in err or 'read-only' in err
    assert all((read_only / 'ro_file' / f).read_bytes() == b'keep' for f in ('out.npz', 'r.json', 'report.json'))
    assert list((read_only / 'ro').iterdir()) == []


def test_output_that_is_an_input_refused(files, tmp_path, no_work):
    "--output (or --report) naming an input's file, however spelled, is refused before work; the input is intact."
    for name in ('pred.csv', 'new.csv', 'y.csv', 'cal.npz'): (tmp_path / name).write_bytes((files / name).read_bytes())
    os.link(tmp_path / 'cal.npz', tmp_path / 'hard.npz')
    np.savez(tmp_path / 'new.npz', np.loadtxt(files / 'new.csv', delimiter=','))
    os.symlink(tmp_path / 'new.npz', tmp_path / 'link.npz')
    t, before = tmp_path, {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    tr = ('transform', '--calibrator', t / 'cal.npz', '--pred', t / 'new.csv')
    cases = [((*tr, '--output', t / 'cal.npz'), '--output', '--calibrator'),
             ((*tr, '--output', t / 'sub' / '..' / 'cal.npz'), '--output', '--calibrator'),   # needs sub/ to exist
             ((*tr, '--output', t / 'hard.npz'), '--output', '--calibrator'),                  # a hard link
             (('transform', '--calibrator', t / 'cal.npz', '--pred', t / 'link.npz', '--output', t / 'new.npz'),
              '--output', '--pred'),                                                            # through a symlink
             (('calibrate', '--pred', f"{t / 'cal.npz'}:Y", '--y', t / 'y.csv', '--output', t / 'cal.npz'),
              '--output', '--pred'),                                                            # FILE.npz:KEY
             (('audit', '--pred', t / 'pred.csv', '--y', t / 'y.csv', '--report', t / 'y.csv'), '--report', '--y')]
    (t / 'sub').mkdir()
    for args, out_opt, in_opt in cases:
        rc, out, err = run(*args)
        line = one_line(err)
        assert rc == 2 and line.startswith(f'deccal: error: {out_opt}: ') and f'is also {in_opt}' in line, (args, err)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before


def test_transform_accepts_quiet(files, tmp_path):
    rc, out, err = run('transform', '--calibrator', files / 'cal.npz', '--pred', files / 'new.csv',
                       '--output', tmp_path / 't.npz', '--quiet')
    assert (rc, err) == (0, '') and cli.load_embedding(tmp_path / 't.npz').n == 10


def test_files_named_for_what_they_are(files, tmp_path):
    "A folder as --pred, a CSV as --calibrator, a calibrator as predictions: the message says what the file is."
    rc, out, err = run('audit', '--pred', tmp_path, '--y', files / 'y.csv', '--quiet')
    assert rc == 2 and one_line(err) == f"deccal: error: --pred: {str(tmp_path)!r} is a folder, not a file"
    rc, out, err = run('transform', '--calibrator', files / 'pred.csv', '--pred', files / 'new.csv',
                       '--output', tmp_path / 't.npz')
    line = one_line(err)
    assert rc == 2 and line.startswith('deccal: error: --calibrator: ') and 'pickle' not in line
    assert "must be the .npz file that a calibrator's `save` (or `deccal calibrate`) writes" in line
    rc, out, err = run('transform', '--calibrator', tmp_path, '--pred', files / 'new.csv',
                       '--output', tmp_path / 't.npz')
    assert rc == 2 and one_line(err).endswith('is a folder, not a file')
    with pytest.raises(ValueError, match=r"is a calibrator, not predictions: load it with deccal.load_calibrator"):
        cli.load_embedding(files / 'cal.npz')
    with pytest.raises(ValueError, match='is a folder, not a file'): cli.load_embedding(tmp_path)


@pytest.fixture
def no_search(monkeypatch):
    "The auditor, the fit and the demo's data fail loudly (the files are still read: n comes from them)."
    def fail(*a, **k): raise AssertionError('the arrays were allocated before the memory was checked')
    monkeypatch.setattr(DimFreeDeCal, 'fit', fail)
    for name in ('audit', 'demo_data'): monkeypatch.setattr(cli, name, fail)


@pytest.mark.parametrize('args, option', [
    (lambda d, t: ('audit', *AUDIT_ARGS(d)[:4], '--actions', 10**8), '--actions'),
    (lambda d, t: ('calibrate', *CAL_ARGS(d)[:4], '--actions', 10**8, '--output', t / 'c.npz'), '--actions'),
    (lambda d, t: ('demo', '--n', 10**9, '--out', t / 'demo'), '--n'),
    (lambda d, t: ('demo', '--d', 10**8, '--out', t / 'demo'), '--n'),
    (lambda d, t: ('demo', '--actions', 10**9, '--out', t / 'demo'), '--actions'),
])
def test_memory_checked_before_allocating(files, tmp_path, no_search, args, option):
    "Arrays larger than the memory available: refused with the estimate and the limit, before they are allocated."
    rc, out, err = run(*args(files, tmp_path), '--quiet')
    line = one_line(err)
    assert rc == 2 and line.startswith(f'deccal: error: {option}: '), err
    need, have = [float(x) for x in __import__('re').findall(r'([0-9.e+]+) GB', line)]
    assert need > have and abs(have * 1e9 - available_memory()) < 0.05 * available_memory()
    assert not (tmp_path / 'demo').exists() and not (tmp_path / 'c.npz').exists()


def test_memory_estimates(files):
    "The estimates are lower bounds of what is allocated (tracemalloc sees NumPy's arrays), and scale as stated."
    import tracemalloc
    from deccal.embedding import Embedding
    def peak(f):
        tracemalloc.start()
        try: f(); return tracemalloc.get_traced_memory()[1]
        finally: tracemalloc.stop()
    def demo_arrays():
        S, Y = cli.demo_data(n=1000); return S, Y, Embedding.from_samples(S)
    assert cli._demo_bytes(1000, 3) <= peak(demo_arrays) <= 2 * cli._demo_bytes(1000, 3)
    x = np.random.default_rng(1).uniform(-1, 1, (100, 2))
    assert peak(lambda: cli.audit(Embedding.from_points(x), x, kernels.RBF(1.0), n_actions=400, verbose=False)) \
        >= search_bytes(100, 400) == 16 * 100 * 400
    phys = os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE')
    assert 0 < available_memory() <= phys


def test_default_jobs_pass_the_memory_check():
    "The demo's defaults and a large but ordinary audit are far below the limit (no false refusal)."
    cli._check_demo_memory(3000, 3, 4, '--n', '--actions')
    check_memory(search_bytes(10**6, 10), '--actions', 'a million rows')


# 5. tables written by pandas ----------------------------------------------------------------------------

@pytest.mark.parametrize('kw', [dict(index=False), dict(), dict(header=False)], ids=['no index', 'index', 'no header'])
def test_pandas_tables_are_read_as_written(files, tmp_path, kw):
    "pandas' default header (0,1,...) and its index column are not data: the audit sees the 60 rows and 2 columns."
    pd = pytest.importorskip('pandas')
    for nm in ('pred', 'y'):
        A = np.loadtxt(files / f'{nm}.csv', delimiter=',')
        pd.DataFrame(A).to_csv(tmp_path / f'{nm}.csv', **kw)
        np.testing.assert_array_equal(cli.read_array(tmp_path / f'{nm}.csv', '--y'), A)
    rc, out, err = run('audit', '--pred', tmp_path / 'pred.csv', '--y', tmp_path / 'y.csv', '--actions', 2, '--quiet',
                       '--report', tmp_path / 'r.json')
    assert rc == 0, err
    import json
    rep = json.loads((tmp_path / 'r.json').read_text())
    assert rep['audit']['n'] == 60, rep


# 6. the system's refusals after the checks, and a closed pipe ---------------------------------------------

def test_a_refused_write_is_one_line(files, tmp_path, monkeypatch):
    "An OSError after the work (a full disk) ends with one line naming the file and status 1, not a traceback."
    import errno
    def full(*a, **k): raise OSError(errno.ENOSPC, 'No space left on device', str(tmp_path / 'cal.npz'))
    monkeypatch.setattr(DimFreeDeCal, 'save', full)
    rc, out, err = run('calibrate', *CAL_ARGS(files), '--quiet', '--output', tmp_path / 'cal.npz')
    assert rc == 1 and one_line(err) == f"deccal: error: {tmp_path / 'cal.npz'} No space left on device", err


def test_a_closed_pipe_is_quiet(files):
    "`deccal audit ... | true`: the reader is gone before the table is written; no traceback, status 141."
    code = "import sys; from deccal.cli import main; sys.exit(main(sys.argv[1:]))"
    cmd = ' '.join(shlex.quote(str(a)) for a in (PY, '-c', code, 'audit', *AUDIT_ARGS(files), '--quiet'))
    r = subprocess.run(['bash', '-c', cmd + ' | true; echo "status ${PIPESTATUS[0]}" >&2'], capture_output=True,
                       text=True, timeout=120)
    assert 'Traceback' not in r.stderr and 'BrokenPipe' not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1] == 'status 141', r.stderr


# 7. a calibrator applied to predictions of another kind ---------------------------------------------------

def test_transform_refuses_another_kind(files, tmp_path):
    "A calibrator fitted on point forecasts is not applied to samples: refused naming --kind, before any work."
    samples = np.random.default_rng(1).uniform(-1, 1, (10, 4))                 # 4 samples a row, d = 1
    np.savetxt(tmp_path / 'samples.csv', samples, delimiter=',')
    rc, out, err = run('transform', '--calibrator', files / 'cal.npz', '--pred', tmp_path / 'samples.csv',
                       '--kind', 'samples', '--output', tmp_path / 'out.npz')
    assert rc == 2 and one_line(err).startswith('deccal: error: --kind: the calibrator was fitted on points'), err
    assert not (tmp_path / 'out.npz').exists()
    rc, out, err = run('transform', '--calibrator', files / 'cal.npz', '--pred', files / 'new.csv',
                       '--output', tmp_path / 'ok.npz')
    assert rc == 0, err
