"""Benchmark: one audit of sample predictions (not a test).  Prints wall time, CPU time and peak memory.

    python bench/audit_samples.py                  # n = 2,000 contexts, B = 200 samples each, d = 3
    python bench/audit_samples.py 500 50 3         # n B d

Scenario: x ~ N(0, I_d); samples 0.8 x + 0.3 N(0, I_d) per context (`Embedding.from_samples`), outcomes
x + 0.3 N(0, I_d); `RBF(0.5)`, 3 actions, beta = 10, R1 = 1, every other audit() argument at its default
(with `verbose=True`, so the progress bar shows on stderr).  Peak memory = VmHWM of the process (the data
take about 150 MiB before the audit starts); a thread prints it every 10 s, so a run stopped by a time
limit (e.g. `timeout 150 python bench/audit_samples.py`) still shows how far memory had grown.
"""
import os, sys, time, json, threading, inspect
os.environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')
import numpy as np

def hwm():
    "Peak resident memory of this process (bytes)."
    for l in open('/proc/self/status'):
        if l.startswith('VmHWM'): return int(l.split()[1]) * 1024

t0 = time.perf_counter()
def watch():
    while True:
        time.sleep(10); print(f"  {time.perf_counter() - t0:.0f} s: peak {hwm() / 2**20:.0f} MiB", flush=True)
threading.Thread(target=watch, daemon=True).start()

from deccal.embedding import Embedding
from deccal.kernels import RBF
from deccal.audit import audit
n, B, d = (int(a) for a in sys.argv[1:4]) if len(sys.argv) > 3 else (2000, 200, 3)
rng = np.random.default_rng(0)
x = rng.normal(size=(n, d))
pred = Embedding.from_samples(0.8 * x[:, None, :] + 0.3 * rng.normal(size=(n, B, d)))
Y = x + 0.3 * rng.normal(size=(n, d))
base = hwm()
print(f"data ready: peak so far {base / 2**20:.0f} MiB", flush=True)
t0, c0 = time.perf_counter(), time.process_time()
kw = dict(n_actions=3, beta=10.0, R1=1.0, seed=0)
if 'verbose' in inspect.signature(audit).parameters: kw['verbose'] = True
res = audit(pred, Y, RBF(0.5), **kw)
print(json.dumps(dict(n=n, B=B, d=d, seconds=round(time.perf_counter() - t0, 1), cpu=round(time.process_time() - c0, 1),
                      peak_MiB=round(hwm() / 2**20), base_MiB=round(base / 2**20), value=res.value,
                      ranks=[res.info['rank_P'], res.info['rank_R']], method=res.info['method'], passes=res.info.get('passes'))), flush=True)
