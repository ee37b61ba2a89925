"""The benchmark scripts' thread settings: one BLAS and OpenMP thread, and OpenMP threads that sleep when idle.

Each library reads its variables once, when it is loaded: numpy loads its OpenBLAS when it is imported, scipy and
scikit-learn load theirs (and OpenMP) later, and a subprocess inherits them all.  So a script calls `thread_defaults`
before it imports numpy, with the settings it wants from the start; a script that completes them later (for the
libraries loaded from there on) calls it again at that point.  Each setting is a default (`os.environ.setdefault`):
a variable the caller set keeps its value.  This module imports nothing but `os`, so importing it loads no library.
"""
from __future__ import annotations
import os

# one BLAS and OpenMP thread (the cores are shared), and OpenMP workers that sleep rather than spin while they wait
# (spinning workers starve the main thread on a shared machine)
THREAD_DEFAULTS = {'OMP_WAIT_POLICY': 'PASSIVE', 'OPENBLAS_NUM_THREADS': '1', 'OMP_NUM_THREADS': '1',
                   'MKL_NUM_THREADS': '1'}


def thread_defaults(*names):
    "Set each variable of `names` (all of `THREAD_DEFAULTS` if none is given) to its default, unless it is set."
    for name in names or THREAD_DEFAULTS: os.environ.setdefault(name, THREAD_DEFAULTS[name])
