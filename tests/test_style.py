"""Lines within 120 characters in deccal/ and tests/, and an import graph of deccal/ that only goes down.

ruff checks the line length of tests/, tools/ and bench/; for deccal/ this test does, because nbdev 2.4.14 writes the
`__all__` list it generates with 120 characters after `__all__ = `, so its first line can reach 130: those lines
(and only those) are let through."""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / 'deccal'


def _generated_all(lines):
    "Line numbers (0-based) of the `__all__ = [...]` statement nbdev writes after `# %% auto #0`."
    out = set()
    for i, line in enumerate(lines):
        if line.startswith('__all__ = [') and i and lines[i - 1].startswith('# %% auto'):
            j = i
            while not lines[j].rstrip().endswith(']'): j += 1
            out.update(range(i, j + 1))
    return out


def test_lines_within_120_characters():
    long = []
    for f in sorted(PKG.glob('*.py')) + sorted((ROOT / 'tests').glob('*.py')):
        if f.name == '_modidx.py': continue          # nbdev's index of names, not code anyone reads
        lines = f.read_text(encoding='utf-8').splitlines()
        allowed = _generated_all(lines) if f.parent == PKG else set()
        long += [f"{f.relative_to(ROOT)}:{i + 1} ({len(line)})" for i, line in enumerate(lines)
                 if len(line) > 120 and i not in allowed]
    assert not long, f"lines over 120 characters: {long}"


def _imports(f):
    "The deccal modules a module imports, at module level and inside functions."
    out = set()
    for node in ast.walk(ast.parse(f.read_text(encoding='utf-8'))):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ''
            if node.level == 1 and mod: out.add(mod.split('.')[0])
            elif node.level == 1: out.update(a.name for a in node.names)
            elif mod.startswith('deccal.'): out.add(mod.split('.')[1])
            private = [a.name for a in node.names if a.name.startswith('_') and not a.name.startswith('__')]
            if (node.level == 1 or mod.startswith('deccal')) and private:
                raise AssertionError(f"{f.name} imports private names {private} from {mod or '.'}")
        elif isinstance(node, ast.Import):
            out.update(a.name.split('.')[1] for a in node.names if a.name.startswith('deccal.'))
    return out


def test_import_graph_has_no_cycle_and_no_private_name_crosses_a_module():
    mods = {f.stem: f for f in PKG.glob('*.py') if f.stem not in ('__init__', '_modidx')}
    graph = {m: _imports(f) & set(mods) - {m} for m, f in mods.items()}
    state = {}

    def visit(m, path):
        if state.get(m) == 'done': return
        assert state.get(m) != 'open', f"import cycle: {' -> '.join(path + [m])}"
        state[m] = 'open'
        for n in sorted(graph[m]): visit(n, path + [m])
        state[m] = 'done'
    for m in sorted(graph): visit(m, [])
    # attribute access to another module's private names: `mod._x` where mod is a deccal module imported by name
    for m, f in mods.items():
        src = f.read_text(encoding='utf-8')
        for other in graph[m]:
            bad = re.findall(rf"\b{other}\._[a-z]\w*", src)
            assert not bad, f"{m} reaches private names of {other}: {bad}"


def test_notebook_cells_have_unique_ids():
    "Every notebook is valid nbformat 4.5 in its cell ids: each cell has one, of the allowed characters, unique."
    import json, re
    for f in sorted((ROOT / 'nbs').glob('*.ipynb')):
        nb = json.loads(f.read_text(encoding='utf-8'))
        ids = [c.get('id') for c in nb['cells']]
        assert (nb['nbformat'], nb['nbformat_minor'] >= 5) == (4, True), f.name
        assert all(isinstance(i, str) and re.fullmatch(r'[A-Za-z0-9_-]{1,64}', i) for i in ids), f.name
        assert len(set(ids)) == len(ids), (f.name, [i for i in ids if ids.count(i) > 1])
