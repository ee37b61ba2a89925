#!/usr/bin/env python3
"""Generate README.md from nbs/index.ipynb without Quarto (standard library only, any Python 3).

Markdown cells are copied as they are (the first one, "# Title\\n\\n> summary", included). Code
cells become ```python fences with their leading nbdev `#|` directive lines removed; cells that
nbdev keeps out of the docs are left out: `#| hide`, `#| export`, `#| exporti`, `#| default_exp`
(with or without the space after `#|`), and cells marked `#| include: false` or `#| echo: false`.
Lines ending in `#| hide_line` are dropped. Raw cells and outputs are not included: notebooks are
committed clean.

    python tools/make_readme.py          # write README.md
    python tools/make_readme.py --check  # exit 1 if README.md is out of step with the notebook
"""
import argparse, difflib, json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADER = '<!-- generated from nbs/index.ipynb by tools/make_readme.py: do not edit -->'

_DIRECTIVE = re.compile(r'^\s*#\s*\|(.*)$')           # `#| hide`, `#|hide`, `# | hide`
_HIDE_LINE = re.compile(r'#\|\s*hide_line\s*$')
_SKIP = {'hide', 'export', 'exporti', 'default_exp'}  # as nbdev's rm_export and hide_ processors
_SKIP_IF_FALSE = {'include', 'echo'}                  # Quarto options that keep the code out of the docs


def _source(cell):
    src = cell.get('source', '')
    return ''.join(src) if isinstance(src, list) else src


def _trim(text):
    "Drop blank lines at the start and trailing whitespace at the end."
    return re.sub(r'\A(?:[ \t]*\n)+', '', text).rstrip()


def _split_directives(lines):
    "The leading directive block of a code cell, as nbdev reads it: {name: [args]}, and the rest."
    directives, i = {}, 0
    while i < len(lines) and (not lines[i].strip() or _DIRECTIVE.match(lines[i])):
        m = _DIRECTIVE.match(lines[i])
        if m:
            words = m.group(1).strip().rstrip(':').replace(':', ': ').split()
            if words: directives[words[0].rstrip(':')] = [w.lower() for w in words[1:]]
        i += 1
    return directives, lines[i:]


def _fence(body, lang='python'):
    "A fence longer than any run of backticks in the body."
    runs = [len(r) for r in re.findall(r'`{3,}', body)]
    ticks = '`' * max([3] + [n + 1 for n in runs])
    return '{0}{1}\n{2}\n{0}'.format(ticks, lang, body)


def _code(src):
    "The markdown for one code cell, or None to leave it out."
    directives, rest = _split_directives(src.split('\n'))
    if _SKIP & set(directives): return None
    if any(directives.get(k) == ['false'] for k in _SKIP_IF_FALSE): return None
    body = _trim('\n'.join(l for l in rest if not _HIDE_LINE.search(l)))
    return _fence(body) if body else None


def render(nb_path):
    nb = json.loads(Path(nb_path).read_text(encoding='utf-8'))
    parts = [HEADER]
    for cell in nb.get('cells', []):
        src, kind = _source(cell), cell.get('cell_type')
        if kind == 'markdown': part = _trim(src) or None
        elif kind == 'code': part = _code(src)
        else: part = None  # raw cells (e.g. Quarto front matter) are not part of the README
        if part: parts.append(part)
    return '\n\n'.join(parts) + '\n'


def _rel(p):
    try: return str(Path(p).resolve().relative_to(Path.cwd().resolve()))
    except ValueError: return str(p)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--nb', default=str(ROOT / 'nbs' / 'index.ipynb'),
                   help='notebook to render (default: nbs/index.ipynb of this repo)')
    p.add_argument('--out', default=str(ROOT / 'README.md'),
                   help='markdown file to write or check (default: README.md of this repo)')
    p.add_argument('--check', action='store_true',
                   help='write nothing; exit 1 if --out differs from what would be generated')
    a = p.parse_args(argv)
    nb, out = Path(a.nb), Path(a.out)
    if not nb.is_file():
        print('make_readme: notebook {} not found'.format(_rel(nb)), file=sys.stderr)
        return 2
    try: text = render(nb)
    except (ValueError, KeyError, TypeError) as e:
        print('make_readme: cannot read {} as a notebook: {}'.format(_rel(nb), e), file=sys.stderr)
        return 2
    old = out.read_bytes().decode('utf-8') if out.is_file() else None
    if a.check:
        if old == text:
            print('{} is in step with {}'.format(_rel(out), _rel(nb)))
            return 0
        if old is None: print('make_readme: {} does not exist'.format(_rel(out)), file=sys.stderr)
        else:
            diff = list(difflib.unified_diff(old.splitlines(), text.splitlines(), 'current ' + _rel(out),
                                             'generated from ' + _rel(nb), lineterm='', n=1))
            more = ['... ({} more diff lines)'.format(len(diff) - 60)] if len(diff) > 60 else []
            print('\n'.join(diff[:60] + more),
                  file=sys.stderr)
        print('make_readme: {} is out of step with {}: run `python tools/make_readme.py` and commit it'
              .format(_rel(out), _rel(nb)), file=sys.stderr)
        return 1
    if old != text:
        with open(str(out), 'w', encoding='utf-8', newline='\n') as f: f.write(text)
        print('wrote {}'.format(_rel(out)))
    else: print('{} already in step with {}'.format(_rel(out), _rel(nb)))
    return 0


if __name__ == '__main__': sys.exit(main())
