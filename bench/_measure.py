"""Measurement helpers shared by the benchmark scripts in bench/ (Linux /proc counters), the results page
(`emit_record`) and summaries over splits (`mse`, `paired`, `table`, `yn`).

Peak memory: VmHWM is reset by writing '5' to /proc/self/clear_refs, then read after the call.
Interference: CPU time used by other processes and hypervisor steal, from /proc/stat.
"""
from __future__ import annotations
import datetime, hashlib, json, os, platform, time

import numpy as np

GB = 1e9
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ----------------------------------------------------------------------------- memory counters
def _status_kb(key):
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith(key + ':'): return int(line.split()[1])
    raise KeyError(key)


def rss_bytes(): return _status_kb('VmRSS') * 1024
def hwm_bytes(): return _status_kb('VmHWM') * 1024


def reset_hwm():
    "Reset VmHWM to the current RSS; False if the kernel does not let us."
    try:
        with open('/proc/self/clear_refs', 'w') as f: f.write('5')
    except OSError: return False
    return hwm_bytes() <= rss_bytes() + (4 << 20)


# ----------------------------------------------------------------------------- CPU counters
def cpu_snapshot():
    "(wall, this process's CPU s, whole machine busy CPU s, steal CPU s) for detecting interference."
    hz = os.sysconf('SC_CLK_TCK')
    with open('/proc/stat') as f: v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal ...
    busy, steal = (v[0] + v[1] + v[2] + v[5] + v[6]) / hz, (v[7] if len(v) > 7 else 0) / hz
    t = os.times()
    return time.perf_counter(), t.user + t.system, busy, steal


def loadavg():
    with open('/proc/loadavg') as f: return [float(x) for x in f.read().split()[:3]]


def other_busy(seconds=1.0):
    "Fraction of the CPUs used by other processes over `seconds` (the caller sleeps meanwhile)."
    s0 = cpu_snapshot(); time.sleep(seconds); s1 = cpu_snapshot()
    return max(0.0, s1[2] - s0[2] - (s1[1] - s0[1])) / ((s1[0] - s0[0]) * len(os.sched_getaffinity(0)))


def wait_idle(max_wait, threshold=0.1):
    "Wait (up to max_wait s) until other processes use less than `threshold` of the CPUs; the time waited."
    t0 = time.perf_counter()
    while other_busy() > threshold and time.perf_counter() - t0 < max_wait: pass
    waited = time.perf_counter() - t0
    return waited if waited > 1.5 else 0.0


def disturbed(r):
    "Was a measurement disturbed by other processes (only judged on windows long enough for /proc/stat ticks)?"
    return r['window'] >= 1.0 and r['other_cpu'] > 0.05


# ----------------------------------------------------------------------------- reporting
def ft(t): return f"{t:.3f}" if t < 10 else f"{t:.1f}"
def fgb(b): return f"{b / GB:.3f}" if b < 10 * GB else f"{b / GB:.1f}"


def blas_threads():
    "Threads of the OpenBLAS libraries loaded in this process (numpy's and scipy's), read through ctypes."
    import ctypes
    import scipy.linalg  # noqa: F401  (loads scipy's OpenBLAS)
    out = []
    with open('/proc/self/maps') as f:
        libs = sorted({l.split()[-1] for l in f if 'openblas' in l.lower() and l.rstrip().endswith('.so')})
    for lib in libs:
        h = ctypes.CDLL(lib)
        for sym in ('scipy_openblas_get_num_threads64_', 'scipy_openblas_get_num_threads', 'openblas_get_num_threads'):
            if hasattr(h, sym):
                out.append(f"{os.path.basename(lib).split('-')[0]} {getattr(h, sym)()}"); break
    return ', '.join(out) or '?'


def source_sha(f):
    "sha256 (12 hex digits) of the deccal module `f` (e.g. 'dimfree.py') in this checkout."
    with open(os.path.join(REPO, 'deccal', f), 'rb') as fh: return hashlib.sha256(fh.read()).hexdigest()[:12]


def machine_info(sources=('kernels.py',)):
    "One line: date, the sha256 and mtime of the deccal modules measured, CPU, memory and library versions."
    import numba, scipy
    try:
        blas = np.show_config(mode='dicts')['Build Dependencies']['blas']
        blas = f"{blas.get('name')} {blas.get('version')}"
    except Exception: blas = '?'
    cpu = platform.processor() or '?'
    try:
        with open('/proc/cpuinfo') as fh:
            cpu = next(l.split(':', 1)[1].strip() for l in fh if l.startswith('model name'))
    except Exception: pass
    srcs = []
    for f in sources:
        stamp = (datetime.datetime.fromtimestamp(os.path.getmtime(os.path.join(REPO, 'deccal', f)))
                 .isoformat(timespec='seconds'))
        srcs.append(f"deccal/{f} sha256 {source_sha(f)} (modified {stamp})")
    try: bt = blas_threads()
    except Exception: bt = '?'
    return (f"{datetime.datetime.now().isoformat(timespec='seconds')} | {' | '.join(srcs)} | {cpu}, "
            f"os.cpu_count()={os.cpu_count()}, usable CPUs={len(os.sched_getaffinity(0))}, "
            f"memory {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / GB:.1f} GB | "
            f"Python {platform.python_version()}, numpy {np.__version__} ({blas}; OpenBLAS threads: {bt}), "
            f"numba {numba.__version__}, scipy {scipy.__version__}")


# ----------------------------------------------------------------------------- the results page
def emit_record(lines:list, blob, name:str, write:bool) -> str:
    """Close a results page with its JSON block (every figure, for the notebooks to read back), print it, and write
    it to bench/`name` when `write`."""
    text = '\n'.join(lines + ['```json', json.dumps(blob), '```', ''])
    print(text)
    if write:
        with open(os.path.join(REPO, 'bench', name), 'w') as f: f.write(text)
    return text



# ----------------------------------------------------------------------------- summaries over splits
def mse(v):
    "(mean, standard error over splits) of a list."
    v = np.asarray(v, float)
    return float(v.mean()), (float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else float('nan'))


def table(rows, head):
    "A markdown table: the header `head` and the rows (lists of strings)."
    return ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)] + ['| ' + ' | '.join(r) + ' |' for r in rows]


def paired(per:list, a:str, b:str, key:str):
    "(mean, paired se) over splits of a - b in column `key`; per: a list of per-split {name: columns}."
    return mse([r[a][key] - r[b][key] for r in per])


def yn(b): return 'yes' if b else 'NO'
