"""README.md's python blocks, run as written, in order, in one fresh process (a reader copies them in this order):
each must run without an error. The Dask block is left out where Dask is not installed."""
import importlib.util, re, subprocess, sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / 'README.md'


def blocks():
    "The ```python blocks of README.md, in order."
    return re.findall(r'^```python\n(.*?)^```', README.read_text(encoding='utf-8'), flags=re.S | re.M)


def test_readme_has_python_blocks():
    assert len(blocks()) >= 5, 'README.md should show the package in python blocks'


@pytest.mark.skipif(importlib.util.find_spec('sklearn') is None, reason='the blocks need scikit-learn')
def test_readme_python_blocks_run(tmp_path):
    have_dask = importlib.util.find_spec('dask') is not None and importlib.util.find_spec('distributed') is not None
    code = [b for b in blocks() if have_dask or 'dask' not in b]
    script = tmp_path / 'readme_blocks.py'
    script.write_text('\n'.join(code), encoding='utf-8')
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"a README block failed:\n{r.stderr[-3000:]}"
