"""Imported once by the server that tools/build_docs.py forks each notebook's process from (multiprocessing's
forkserver): the libraries nearly every notebook imports, so that each notebook does not import them again (about 2 s
a notebook). Nothing is run beyond the imports, so each forked process starts in the state a fresh import leaves. A
module that fails to import, with any error, is skipped here: a notebook that needs it then fails on its own, with
its traceback (forkserver's own preload skips only ImportError, and any other error would stop the server and every
notebook with it)."""
import importlib

# the matplotlib backend, Agg, is set by build_docs.py in the environment the server inherits
for _name in ('numpy', 'scipy.optimize', 'scipy.special', 'scipy.stats', 'numba', 'matplotlib.pyplot',
              'sklearn.base', 'sklearn.model_selection', 'sklearn.linear_model', 'IPython', 'execnb.shell',
              'execnb.nbio', 'nbdev.process', 'nbdev.processors', 'nbdev.showdoc', 'deccal.estimators'):
    try: importlib.import_module(_name)
    except Exception: pass                                       # the notebook that needs it reports it
