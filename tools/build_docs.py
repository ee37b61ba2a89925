#!/usr/bin/env python3
"""Build deccal's HTML doc site without Quarto: executed notebooks, figures, math, sidebar.

    python tools/build_docs.py              # -> _docs/index.html, _docs/kernels.html, ... (1-3 min on 2 cores)
    python tools/build_docs.py --out DIR    # somewhere else (tests/test_docs.py builds into a temp dir)
    python tools/build_docs.py --no-exec    # skip execution: pages without outputs (fast, for layout work)
    python tools/build_docs.py --render-only  # only re-render the HTML from the last build's _proc/

Where Quarto is installed, `nbdev_docs` builds the Quarto site (nbs/_quarto.yml, nbs/sidebar.yml) instead.
The notebooks are committed without outputs (settings.ini: clear_all = True), so a Quarto site shows
outputs and figures only if `_proc/` holds executed notebooks: run this script first, then `nbdev_docs`
(nbdev reuses the processed notebooks of `_proc/` that are newer than their sources).

Steps
1. Copy nbs/ to a temporary folder and execute every notebook there with execnb (as `nbdev_test`
   does: cells flagged with settings.ini's `tst_flags`, i.e. `#| slow`, and `#| eval: false` cells are
   skipped; the first error stops the notebook, and its traceback is kept as the cell's output), one
   fresh process per notebook (forked from a server that has imported the common libraries), two at a time
   (--jobs). The workers get a fixed thread setting, so that a build does not depend on the caller's
   environment (pytest's test modules set OPENBLAS_NUM_THREADS=1, and a tutorial's result once changed with
   it): each worker's BLAS, OpenMP and Numba use cpu_count // jobs threads, and idle OpenMP threads sleep
   (OMP_WAIT_POLICY=PASSIVE) instead of spinning against the other worker (two spinning workers on 2 cores
   once made a fit 10x slower). The processed notebooks cannot be executed themselves: nbdev's processing
   drops `#| hide` cells (where the notebooks import matplotlib and the fixtures) and the source of
   `#| export` cells.
2. Process each executed copy with nbdev's own processors (`nbdev.processors.FilterDefaults`, what
   `nbdev_proc_nbs` applies) into `_proc/`: `#| hide`/`#| export` cells removed, show_doc cells added,
   front matter from the title cell. `nbdev_proc_nbs` itself is not called: without Quarto it starts
   to download and install Quarto. One difference, reported in the output: cells that mix imports
   with other code are not re-run for show_doc (see `_tolerant_show_doc_eval`).
3. Render each processed notebook to one self-contained HTML page with a small renderer of our own
   (below), named as Quarto names it (`01_kernels.ipynb` -> `kernels.html`), with a sidebar in the
   order of nbs/sidebar.yml; notebooks named `1x_*.ipynb` not listed there go to a "Tutorials" section
   right after the Zhao extension (09_zhao); notebooks in neither go last.

Why our own renderer rather than nbconvert: nbconvert's HTML templates load MathJax and require.js from
a CDN, which fails offline (the pages must render, with no browser error, in tests/test_docs.py
without network), and its Markdown filter leaves the TeX for MathJax. Here the pages load nothing:
figures are embedded as base64 PNG (`<img src="data:image/png;base64,...">`), the CSS is inlined,
there is no JavaScript, and the `$...$`/`$$...$$` math is converted to MathML at build time by
latex2mathml (pure Python; Chromium and Firefox render MathML natively), so no MathJax/KaTeX files
need shipping. TeX that latex2mathml does not know is reported at the end of the build.

Dependencies added to settings.ini's dev_requirements for this script and its test:
- markdown-it-py, mdit-py-plugins: Markdown (CommonMark + tables) with `$` math and heading anchors;
- latex2mathml: TeX to MathML at build time (no math JavaScript, works offline);
- selenium: tests/test_docs.py drives Debian's headless Chromium through chromedriver
  (`apt-get install chromium chromium-driver`; selenium's own driver download is never used).
execnb, nbdev, PyYAML and Pygments (code highlighting) were already there.

The build exits with status 1 if a notebook raised (the pages are still written, showing the error).
"""
from __future__ import annotations

import argparse, fnmatch, html, json, os, re, shutil, sys, tempfile, time
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL_GLOB = '1[0-9]_*.ipynb'       # tutorials: 10_tutorial_newsvendor.ipynb, ...
TUTORIALS_AFTER = '09_zhao.ipynb'      # where the automatic "Tutorials" section goes


# ------------------------------------------------------------------------------------ execute, process
def _tolerant_show_doc_eval():
    """Make nbdev's show_doc processing skip cells that mix imports with other code.

    nbdev's `exec_show_docs` re-runs, in a fresh shell, every cell that imports something, to have
    the names for show_doc; a cell that also uses earlier variables then raises NameError and stops
    `nbdev_proc_nbs`/`nbdev_docs` (nbdev warns "Found cells containing imports and other code. See
    FAQ."). Such cells were executed already (step 1), with their outputs kept, so skipping them here
    loses nothing; the cells are reported, since nbdev_docs fails on them until they are split."""
    import ast
    import nbdev.processors as P
    orig, skipped = P._do_eval, []
    def _do_eval(cell):
        res = orig(cell)
        if res and not (cell.directives_.keys() & {'export', 'exports', 'exporti', 'exec_doc'}) \
                and not P._show_docs(cell.parsed_() or []) \
                and P._ast_contains(cell.parsed_(), (ast.Expr, ast.Assign)):
            first = next((l for l in cell.source.splitlines() if l.strip() and not l.lstrip().startswith('#|')), '')
            skipped.append(first[:60])
            return False
        return res
    P._do_eval = _do_eval
    return skipped


def _build_one(src: str, work: str, dst: str, skip_flags: list[str], execute: bool) -> tuple:
    """Execute notebook `work` (a copy of `src`, in its own folder) as nbdev_test does, then process
    it as nbdev_proc_nbs does into `dst`. Returns (name, seconds, error or None, mixed cells)."""
    os.environ['IN_TEST'] = '1'
    import warnings
    warnings.filterwarnings('ignore', message='Found cells containing imports')
    import matplotlib
    matplotlib.use('Agg')
    from execnb.nbio import read_nb, write_nb
    from execnb.shell import CaptureShell
    from fastcore.xtras import working_directory
    from nbdev.process import NBProcessor
    from nbdev.processors import FilterDefaults
    work, dst, t0, err = Path(work), Path(dst), time.time(), None
    if execute:
        nb = NBProcessor(work, rm_directives=False).nb            # directives parsed, kept in the source
        flags = set(skip_flags)
        def _no_eval(cell):
            if cell.cell_type != 'code': return True
            if 'nbdev_export' + '(' in cell.source: return True
            d = getattr(cell, 'directives_', {}) or {}
            if d.get('eval:', [''])[0].lower() == 'false': return True
            return bool(flags & d.keys())
        k = CaptureShell(work)
        try:
            with working_directory(work.parent): k.run_all(nb, exc_stop=True, preproc=_no_eval)
        except BaseException as e:                                # the error output stays in its cell
            err = f'{type(e).__name__}: {e}' + _error_context(nb)
        write_nb(nb, work)
    skipped = _tolerant_show_doc_eval()
    nb = read_nb(work)                                            # as nbdev.serve_drv.exec_nb does
    with working_directory(work.parent): FilterDefaults()(nb)
    dst.parent.mkdir(parents=True, exist_ok=True)
    write_nb(nb, dst)
    return Path(src).name, time.time() - t0, err, skipped


def _error_context(nb, lines:int=12) -> str:
    "Where a notebook raised: the failing cell's first line and the end of its traceback (ANSI codes removed)."
    for cell in nb.cells:
        for o in cell.get('outputs', []) or []:
            if o.get('output_type') == 'error':
                tb = _ANSI.sub('', '\n'.join(o.get('traceback', []))).strip().splitlines()
                first = next((l for l in cell.source.splitlines() if l.strip() and not l.startswith('#|')), '')
                return f'\n      in the cell starting {first[:80]!r}:\n' + '\n'.join('      ' + l for l in tb[-lines:])
    return ''


def execute_and_process(nbs_dir: Path, work: Path, proc: Path, jobs: int, skip_flags: list[str], execute: bool):
    "Execute the notebooks of `work` (a copy of `nbs_dir`) and process them into `proc`; return the errors."
    rel = sorted(p.relative_to(work) for p in work.rglob('*.ipynb')
                 if not any(q.startswith(('.', '_')) for q in p.relative_to(work).parts))
    times_file = proc/'.build_times.json'
    old_times = times_file.read_text() if times_file.exists() else '{}'
    if proc.exists(): shutil.rmtree(proc)
    proc.mkdir(parents=True)
    times_file.write_text(old_times)
    for f in ('_quarto.yml', '_brand.yml', 'nbdev.yml', 'sidebar.yml', 'styles.css'):   # as proc_nbs does
        if (work/f).exists(): shutil.copy2(work/f, proc/f)
    errors = []
    try: times = json.loads(times_file.read_text())             # the longest first: less idle at the end
    except (OSError, ValueError): times = {}
    rel.sort(key=lambda r: -times.get(str(r), 0))
    args = [(str(nbs_dir/r), str(work/r), str(proc/r), skip_flags, execute) for r in rel]
    # a fresh process per notebook (one task per child), as nbdev_test runs them, with a fixed
    # thread setting (the children inherit os.environ; numpy and Numba read it when first imported)
    threads = str(max(1, (os.cpu_count() or 1) // max(1, jobs)))
    for k in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS', 'NUMBA_NUM_THREADS'):
        os.environ[k] = threads
    os.environ['OMP_WAIT_POLICY'] = 'PASSIVE'
    os.environ['MPLBACKEND'] = 'Agg'
    # concurrent.futures rather than multiprocessing.Pool: a Pool's workers are daemonic and may not start
    # processes of their own, which a notebook starting a dask LocalCluster of worker processes needs.
    # Each notebook's process is forked from a server that has imported the libraries every notebook imports
    # (forkserver; nothing is run, so each child starts in the state a fresh import leaves): this saves each
    # notebook about 2 s of imports, about 40 s of a build's processor time. The server starts in the repository's
    # root (main() changes to it), first on its sys.path, so it finds tools/ there (as a namespace package; the
    # forkserver does not take the caller's sys.path).
    ctx = get_context('forkserver')
    ctx.set_forkserver_preload(['tools.build_docs_preload'])       # tools/build_docs_preload.py: the imports
    per_child = {'max_tasks_per_child': 1} if sys.version_info >= (3, 11) else {}
    with ProcessPoolExecutor(max(1, jobs), mp_context=ctx, **per_child) as pool:
        for name, secs, err, skipped in map(Future.result, as_completed(pool.submit(_build_one, *a) for a in args)):
            if execute: times[str(Path(name))] = round(secs, 1)
            print(f'  {"executed and " if execute else ""}processed {name:30s} {secs:6.1f} s'
                  + (f'  ERROR {err}' if err else ''), flush=True)
            if err: errors.append(f'{name}: {err}')
            if skipped:
                print(f'    note, {name}: {len(skipped)} cell(s) mix imports with other code; '
                      f'nbdev_docs/nbdev_proc_nbs re-run them '
                      f'alone for show_doc and fail if they use earlier names (give the imports a cell of their own): '
                      + '; '.join(repr(x) for x in skipped))
    if execute: times_file.write_text(json.dumps(times, indent=1, sort_keys=True) + '\n')
    proc.touch()
    return errors


# ------------------------------------------------------------------------------------------------ order
def _sidebar_items(contents, nbs: list[str]):
    "nbs/sidebar.yml contents -> [(section or None, [(label or None, notebook)])]; globs are expanded."
    out = []
    def files(entry):
        if isinstance(entry, dict): entry = entry.get('href') or entry.get('file') or ''
        entry = str(entry)
        if any(c in entry for c in '*?['): return sorted(n for n in nbs if fnmatch.fnmatch(n, entry))
        return [entry] if entry in nbs else []
    for item in contents or []:
        if isinstance(item, dict) and 'section' in item:
            sub = item.get('contents') or []
            if isinstance(sub, str): sub = [sub]
            pages = [(None, f) for e in sub for f in files(e)]
            if item.get('href') in nbs: pages.insert(0, (None, item['href']))
            if pages: out.append((str(item['section']), pages))
        else:
            label = item.get('text') if isinstance(item, dict) else None
            for f in files(item): out.append((None, [(label, f)]))
    return out


def site_order(nbs_dir: Path, nbs: list[str]):
    "The sidebar: nbs/sidebar.yml, then 1x_*.ipynb tutorials if not listed, then anything left over."
    import yaml
    sb = yaml.safe_load((nbs_dir/'sidebar.yml').read_text(encoding='utf-8')) if (nbs_dir/'sidebar.yml').exists() else {}
    groups = _sidebar_items(((sb or {}).get('website') or {}).get('sidebar', {}).get('contents'), nbs)
    listed = {f for _, pages in groups for _, f in pages}
    tutorials = [n for n in sorted(nbs) if fnmatch.fnmatch(n, TUTORIAL_GLOB) and n not in listed]
    if tutorials:
        at = next((i + 1 for i, (_, pages) in enumerate(groups) if any(f == TUTORIALS_AFTER for _, f in pages)),
                  len(groups))
        groups.insert(at, ('Tutorials', [(None, n) for n in tutorials]))
        listed |= set(tutorials)
    rest = [n for n in sorted(nbs) if n not in listed]
    if rest:
        print(f'  not in nbs/sidebar.yml, added last: {", ".join(rest)}')
        groups += [(None, [(None, n)]) for n in rest]
    return groups


def html_name(nb: str) -> str:
    "Quarto's output name: the numeric prefix dropped (01_kernels.ipynb -> kernels.html)."
    p = Path(nb)
    return str(p.with_name(re.sub(r'^\d+_', '', p.stem) + '.html'))


# ----------------------------------------------------------------------------------------------- render
_DIRECTIVE = re.compile(r'^\s*#\s*\|\s*([\w-]+)\s*:?\s*(.*?)\s*$')
_ANSI = re.compile(r'\x1B(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])')
_TEX_UNKNOWN = re.compile(r'<m[io]>\\(\w+)</m[io]>')
# TeX's named operators that latex2mathml leaves as `\name`: shown upright, as TeX does
_TEX_OPS = {'arg', 'deg', 'det', 'dim', 'exp', 'gcd', 'hom', 'ker', 'lg', 'ln', 'log', 'Pr', 'sgn', 'tr',
            'max', 'min', 'sup', 'inf', 'lim', 'limsup', 'liminf', 'argmax', 'argmin', 'sin', 'cos', 'tan', 'tanh'}


def _text(x) -> str: return ''.join(x) if isinstance(x, list) else (x or '')


def _slug(s: str) -> str:
    "Heading ids as Quarto makes them (what nbdev's doc links point to): lower case, spaces to dashes."
    s = re.sub(r'<[^>]+>', '', s).strip().lower()
    return re.sub(r'[^\w.\- ]', '', s).replace(' ', '-')


class Renderer:
    def __init__(self, site_url: str):
        from markdown_it import MarkdownIt
        from mdit_py_plugins.amsmath import amsmath_plugin
        from mdit_py_plugins.anchors import anchors_plugin
        from mdit_py_plugins.dollarmath import dollarmath_plugin
        from pygments.formatters import HtmlFormatter
        self.unknown_tex: dict[str, set] = {}
        self.page = ''
        self.md = (MarkdownIt('commonmark', {'html': True}).enable(['table', 'strikethrough'])
                   .use(dollarmath_plugin, allow_space=True, allow_digits=False, double_inline=True,
                        renderer=lambda tex, opts: self.math(tex, opts.get('display_mode', False)))
                   .use(amsmath_plugin, renderer=lambda tex: self.math(tex, True))
                   .use(anchors_plugin, min_level=1, max_level=6, slug_func=_slug))
        self.fmt = HtmlFormatter(nowrap=True)
        self.site_url = site_url.rstrip('/') + '/' if site_url else None

    def math(self, tex: str, display: bool) -> str:
        from latex2mathml.converter import convert
        try:
            out = convert(tex.strip(), display='block' if display else 'inline')
        except Exception:
            out = None
        if out:
            out = _TEX_UNKNOWN.sub(lambda m: f'<mi>{m.group(1)}</mi>' if m.group(1) in _TEX_OPS else m.group(0), out)
        unknown = _TEX_UNKNOWN.findall(out) if out else ['(unparsed)']
        if unknown:
            self.unknown_tex.setdefault(self.page, set()).update(unknown)
        if out is None:                                        # keep the TeX readable
            delim = '$$' if display else '$'
            out = f'<code class="tex">{html.escape(delim + tex + delim)}</code>'
        return out                                             # mdit-py-plugins wraps it in div/span.math

    def markdown(self, src: str) -> str: return self.md.render(src)

    def code(self, src: str) -> str:
        from pygments import highlight
        from pygments.lexers import PythonLexer
        return f'<pre class="source highlight"><code>{highlight(src, PythonLexer(), self.fmt)}</code></pre>'

    def output(self, o: dict, asis: bool) -> str:
        t = o.get('output_type')
        if t == 'stream':
            cls = 'stderr' if o.get('name') == 'stderr' else 'stdout'
            txt = _ANSI.sub('', _text(o.get('text')))
            return f'<pre class="output {cls}">{html.escape(txt)}</pre>' if txt.strip() else ''
        if t == 'error':
            tb = _ANSI.sub('', '\n'.join(o.get('traceback') or [f"{o.get('ename')}: {o.get('evalue')}"]))
            return f'<pre class="output error">{html.escape(tb)}</pre>'
        data, meta = o.get('data') or {}, o.get('metadata') or {}
        for mime in ('image/png', 'image/jpeg'):
            if mime in data:
                b64 = _text(data[mime]).replace('\n', '')
                m = meta.get(mime) or {}
                size = ''.join(f' {k}="{int(m[k])}"' for k in ('width', 'height') if k in m)
                return f'<figure class="output"><img src="data:{mime};base64,{b64}" alt="figure"{size}></figure>'
        if 'image/svg+xml' in data:
            return f'<figure class="output">{_text(data["image/svg+xml"])}</figure>'
        if 'text/html' in data and 'application/vnd.jupyter.widget-view+json' not in data:
            return f'<div class="output html">{_text(data["text/html"])}</div>'
        if 'text/markdown' in data:
            md = self.markdown(_text(data['text/markdown']))
            return md if asis else f'<div class="output markdown">{md}</div>'
        if 'text/latex' in data:
            tex = _text(data['text/latex']).strip().strip('$')
            return f'<div class="output">{self.math(tex, True)}</div>'
        if 'text/plain' in data:
            return f'<pre class="output text">{html.escape(_ANSI.sub("", _text(data["text/plain"])))}</pre>'
        return ''

    def cell(self, c: dict) -> str:
        if c['cell_type'] == 'markdown': return f'<section class="md">{self.markdown(_text(c["source"]))}</section>'
        if c['cell_type'] != 'code': return ''
        lines, opts = _text(c['source']).splitlines(), {}
        while lines and (m := _DIRECTIVE.match(lines[0])):
            opts[m.group(1).lower()] = m.group(2).strip('"\'').lower()
            lines.pop(0)
        if opts.get('include') == 'false': return ''
        src = '\n'.join(lines).strip('\n')
        show_src = src.strip() and opts.get('echo') != 'false'
        asis = opts.get('output') == 'asis'
        outs = '' if opts.get('output') == 'false' else ''.join(self.output(o, asis) for o in c.get('outputs', []))
        if not show_src and not outs.strip(): return ''
        body = ''
        if show_src:
            body = self.code(src)
            if 'code-fold' in opts:
                summary = html.escape(opts.get('code-summary') or 'Code').capitalize()
                opened = ' open' if opts["code-fold"] == "show" else ''
                body = f'<details{opened}><summary>{summary}</summary>{body}</details>'
        cls = 'cell showdoc' if asis else 'cell'
        return f'<div class="{cls}">{body}{outs}</div>'

    def links(self, page: str, known: dict[str, str]) -> str:
        "Doc links to the published site become relative; links to notebooks point to their pages."
        if self.site_url: page = page.replace(f'href="{self.site_url}', 'href="')
        def nb_link(m):
            target, anchor = m.group(1), m.group(2) or ''
            return f'href="{known.get(target, html_name(target))}{anchor}"'
        return re.sub(r'href="(?!https?:)([^"#]+\.ipynb)(#[^"]*)?"', nb_link, page)


def _front_matter(cells: list) -> tuple[dict, list]:
    import yaml
    if cells and cells[0]['cell_type'] == 'raw':
        src = _text(cells[0]['source']).strip()
        if src.startswith('---') and src.endswith('---'):
            return (yaml.safe_load(src.strip('-')) or {}), cells[1:]
    return {}, cells


CSS = """
*{box-sizing:border-box}
body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
 color:#212529;line-height:1.55;font-size:16px;display:flex;min-height:100vh}
a{color:#2780e3;text-decoration:none} a:hover{text-decoration:underline}
nav.sidebar{flex:0 0 260px;background:#f7f7f9;border-right:1px solid #e3e3e8;padding:1.2rem 1rem;
 position:sticky;top:0;height:100vh;overflow-y:auto;font-size:.92rem}
nav.sidebar .site{font-weight:700;font-size:1.25rem;display:block;margin-bottom:.2rem;color:#212529}
nav.sidebar .tagline{color:#6c757d;font-size:.8rem;margin-bottom:1rem}
nav.sidebar ul{list-style:none;margin:0;padding:0} nav.sidebar li{margin:.15rem 0}
nav.sidebar .section{font-weight:600;color:#495057;margin-top:.7rem}
nav.sidebar .section ul{font-weight:400;padding-left:.8rem;border-left:1px solid #dee2e6}
nav.sidebar a{color:#343a40;display:block;padding:.1rem .4rem;border-radius:4px}
nav.sidebar a.active{background:#2780e3;color:#fff}
main{flex:1;min-width:0;max-width:980px;padding:1.5rem 2.5rem 4rem}
header.title h1{margin:.2rem 0 .3rem;font-size:2.2rem}
header.title p.description{font-style:italic;font-size:1.2rem;color:#5a6268;margin:.2rem 0 1.2rem}
h2{margin-top:2rem;border-bottom:1px solid #eee;padding-bottom:.2rem} h3{margin-top:1.5rem}
pre{overflow-x:auto;font-size:.86rem;line-height:1.4;
    font-family:SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace}
section.md pre,pre.source{background:#f8f9fa;border:1px solid #e9ecef;border-radius:4px;padding:.6rem .8rem;
    margin:.3rem 0}
pre.output{margin:.2rem 0 .2rem .8rem;padding:.2rem .8rem;border-left:2px solid lightsalmon;background:none}
pre.output.stderr{border-left-color:#f0ad4e;color:#8a6d3b}
pre.output.error{border-left-color:#d9534f;background:#fdf2f2;color:#a94442}
code{font-family:SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:.9em}
:not(pre)>code{background:#f3f3f6;padding:.05rem .25rem;border-radius:3px;color:#7d12ba}
figure.output{margin:.4rem 0 .4rem .8rem} figure.output img{max-width:100%;height:auto}
table{border-collapse:collapse;margin:.6rem 0;font-size:.92rem} th,td{border:1px solid #dee2e6;padding:.25rem .6rem}
th{background:#f8f9fa}
blockquote{margin:.5rem 0;padding:.2rem 1rem;border-left:3px solid #dee2e6;color:#555}
.cell{margin-bottom:1rem} .cell.showdoc{border:1px solid #dee2e6;border-radius:6px;padding:.2rem 1rem;
 box-shadow:0 1px 2px rgba(0,0,0,.05);margin:1.2rem 0}
.cell.showdoc hr{display:none} .cell.showdoc h3,.cell.showdoc h4{margin-top:.6rem}
details summary{cursor:pointer;color:#6c757d;font-size:.9rem}
div.math{overflow-x:auto;margin:.6rem 0} math{font-size:1.1em}
code.tex{color:#a94442}
"""


def page_html(title, description, nav, body, extra_css, site_title) -> str:
    desc = f'<p class="description">{html.escape(description)}</p>' if description else ''
    t = title if title == site_title else f'{title} – {site_title}'
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(t)}</title>
<style>{CSS}{extra_css}</style></head>
<body>
{nav}
<main>
<header class="title"><h1 class="title">{html.escape(title)}</h1>{desc}</header>
{body}
</main>
</body></html>
"""


def nav_html(groups, titles, current, site_title, tagline) -> str:
    def link(label, nb):
        href = html_name(nb)
        cls = ' class="active"' if nb == current else ''
        return f'<li><a href="{href}"{cls}>{html.escape(label or titles.get(nb, nb))}</a></li>'
    parts = []
    for section, pages in groups:
        items = ''.join(link(lbl, nb) for lbl, nb in pages)
        parts.append(f'<li class="section">{html.escape(section)}<ul>{items}</ul></li>' if section else items)
    return (f'<nav class="sidebar"><a class="site" href="index.html">{html.escape(site_title)}</a>'
            f'<div class="tagline">{html.escape(tagline)}</div><ul>{"".join(parts)}</ul></nav>')


def render_site(proc: Path, out: Path, nbs_dir: Path, cfg) -> dict:
    "Render the processed notebooks of `proc` into `out`; return the list of pages."
    nbs = sorted(str(p.relative_to(proc)) for p in proc.rglob('*.ipynb'))
    groups = site_order(nbs_dir, nbs)
    order = [nb for _, pages in groups for _, nb in pages]
    r = Renderer(cfg.get('doc_host', '') + cfg.get('doc_baseurl', ''))
    site_title = cfg.get('title', cfg.get('lib_name', ''))
    from pygments.formatters import HtmlFormatter
    extra_css = HtmlFormatter(style='default').get_style_defs('.highlight') + '\n.highlight{background:#f8f9fa}\n'
    if (nbs_dir/'styles.css').exists(): extra_css += (nbs_dir/'styles.css').read_text(encoding='utf-8')
    docs = {}
    for nb in order:
        d = json.loads((proc/nb).read_text(encoding='utf-8'))
        fm, cells = _front_matter(d['cells'])
        docs[nb] = (fm, cells)
    titles = {nb: str(fm.get('title') or Path(nb).stem) for nb, (fm, _) in docs.items()}
    known = {nb: html_name(nb) for nb in nbs}
    if out.exists(): shutil.rmtree(out)
    out.mkdir(parents=True)
    pages = []
    for nb in order:
        fm, cells = docs[nb]
        r.page = nb
        body = '\n'.join(r.cell(c) for c in cells)
        nav = nav_html(groups, titles, nb, site_title, cfg.get('description', ''))
        page = r.links(page_html(titles[nb], str(fm.get('description') or ''), nav, body, extra_css, site_title), known)
        dest = out/html_name(nb)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(page, encoding='utf-8')
        pages.append({'notebook': nb, 'page': html_name(nb), 'title': titles[nb]})
    (out/'.nojekyll').touch()
    (out/'pages.json').write_text(json.dumps(pages, indent=1) + '\n', encoding='utf-8')
    for nb, cmds in r.unknown_tex.items():
        print(f'  note: {nb}: TeX not converted to MathML (shown as written): {", ".join(sorted(cmds))}')
    return {'pages': pages}


# ------------------------------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=None, help='output folder (default: settings.ini doc_path, _docs)')
    ap.add_argument('--jobs', type=int, default=min(2, os.cpu_count() or 1), help='notebooks executed at once')
    ap.add_argument('--no-exec', action='store_true', help='do not execute the notebooks (no outputs)')
    ap.add_argument('--render-only', action='store_true', help="only render the HTML from the last build's _proc/")
    a = ap.parse_args(argv)
    os.chdir(ROOT)
    from nbdev.config import get_config
    cfg = get_config()
    nbs_dir = Path(cfg.nbs_path)
    out = Path(a.out).resolve() if a.out else Path(cfg.doc_path)
    t0 = time.time()
    errors = []
    proc = Path(cfg.config_path)/'_proc'
    if a.render_only:
        if not any(proc.glob('*.ipynb')): sys.exit(f'{proc} has no processed notebooks: run without --render-only')
    else:
        with tempfile.TemporaryDirectory(prefix='deccal-docs-') as tmp:
            work = Path(tmp)/'nbs'
            shutil.copytree(nbs_dir, work,
                            ignore=shutil.ignore_patterns('.*', '_proc', '_docs', '_site', '__pycache__'))
            print(('executing (skipping cells flagged: ' + cfg.get('tst_flags', '') + ') and ' if not a.no_exec else '')
                  + f'processing the notebooks into {proc}, {a.jobs} at a time', flush=True)
            errors = execute_and_process(nbs_dir.resolve(), work, proc, a.jobs, cfg.get('tst_flags', '').split(),
                                         not a.no_exec)
    print(f'rendering HTML into {out}', flush=True)
    res = render_site(proc, out, nbs_dir, cfg)
    print(f'{len(res["pages"])} pages in {out} ({time.time() - t0:.0f} s); open {out/"index.html"}')
    if errors:
        print('notebooks that raised (their pages show the error):\n  ' + '\n  '.join(errors), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
