"""The doc site: build it with tools/build_docs.py and open every page in headless Chromium.

Needs Debian's Chromium and its driver (`apt-get install chromium chromium-driver`); without them the
tests fail and say so. The site is built once per session, into a temporary folder (4-5 min on 2 cores);
`DECCAL_DOCS_SITE=_docs pytest tests/test_docs.py` checks an existing build instead (seconds).
"""
import json, os, re, shutil, subprocess, sys, tempfile
from fnmatch import fnmatch
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
NBS = ROOT/'nbs'
INSTALL = 'apt-get update && apt-get install -y chromium chromium-driver'
# the sidebar's order, the paper's: introduction, definitions, lower bound, uniform convergence and
# auditing, DimFreeDeCal, Zhao extension, tutorials, command line (then the namespace page)
ORDER = ['index.ipynb', '00_checks.ipynb', '01_kernels.ipynb', '02_losses.ipynb', '03_embedding.ipynb',
         '04_decisions.ipynb', '05_lower_bound.ipynb', '06_audit.ipynb', '07_uniform_convergence.ipynb',
         '08_dimfreedecal.ipynb', '09_zhao.ipynb', 'TUTORIALS', '90_cli.ipynb', '99_init.ipynb']
TUTORIAL = '1[0-9]_*.ipynb'
# a code cell that draws: pyplot calls, or plotting methods of axes and figures
_PLOT = re.compile(r'\bplt\.(plot|subplots?|figure|imshow|scatter|hist|bar|show|contourf?|pcolormesh|semilogy|loglog)\b'
                   r'|\bax\w*\.(plot|scatter|imshow|hist|bar|semilogy|loglog|contourf?)\(|\.plot\(')


def _directives(src):
    d = {}
    for line in src.splitlines():
        m = re.match(r'\s*#\s*\|\s*([\w-]+)\s*:?\s*(.*)$', line)
        if not m:
            if line.strip(): break
            continue
        d[m.group(1).lower()] = m.group(2).strip().lower()
    return d


def draws_figures(nb_path):
    "Does the notebook have a shown, executed cell (not hidden, not #| slow, not eval: false) that plots?"
    flags = set(_settings().get('tst_flags', '').split())
    for c in json.loads(nb_path.read_text(encoding='utf-8'))['cells']:
        if c['cell_type'] != 'code': continue
        src = ''.join(c['source'])
        d = _directives(src)
        if flags & d.keys() or {'hide', 'export', 'exporti'} & d.keys(): continue
        if d.get('eval') == 'false' or d.get('output') == 'false' or d.get('include') == 'false': continue
        if _PLOT.search(src): return True
    return False


def _settings():
    from configparser import ConfigParser
    cp = ConfigParser(delimiters=['='])
    cp.read(ROOT/'settings.ini', encoding='utf-8')
    return cp['DEFAULT']


def _notebooks():
    return sorted(p.name for p in NBS.glob('*.ipynb'))


# ------------------------------------------------------------------------------------- config, no browser
def test_sidebar_yml_lists_every_notebook_in_order():
    assert _settings().get('custom_sidebar') == 'True', 'settings.ini: custom_sidebar = True keeps nbs/sidebar.yml'
    listed, has_tutorials = [], False
    def walk(items):
        nonlocal has_tutorials
        for it in items:
            if isinstance(it, dict) and 'section' in it:
                if str(it['section']).lower() == 'tutorials': has_tutorials = True
                sub = it.get('contents') or []
                walk([sub] if isinstance(sub, str) else sub)
            else:
                listed.append(it['href'] if isinstance(it, dict) else it)
    walk(yaml.safe_load((NBS/'sidebar.yml').read_text(encoding='utf-8'))['website']['sidebar']['contents'])
    tutorials = [n for n in _notebooks() if fnmatch(n, TUTORIAL)]
    assert not tutorials or has_tutorials, (
        f'tutorials {tutorials} exist: add the "Tutorials" section to nbs/sidebar.yml '
        '(uncomment it there, before 90_cli.ipynb) so that nbdev_docs shows them too')
    missing = [n for n in _notebooks() if n not in listed and not fnmatch(n, TUTORIAL)]
    assert not missing, f'notebooks missing from nbs/sidebar.yml: {missing}'
    expected = [n for n in ORDER if n != 'TUTORIALS' and n in _notebooks()]
    assert [n for n in listed if n in expected] == expected, "nbs/sidebar.yml is not in the paper's order"
    assert len(listed) == len(set(listed)), 'a notebook is listed twice in nbs/sidebar.yml'
    quarto = yaml.safe_load((NBS/'_quarto.yml').read_text(encoding='utf-8'))
    assert quarto['project']['type'] == 'website' and 'sidebar.yml' in quarto['metadata-files']


# --------------------------------------------------------------------------------------------- the site
@pytest.fixture(scope='module')
def site():
    "Build the site once for this module: (folder, pages.json list, exit status, build output)."
    if os.environ.get('DECCAL_DOCS_SITE'):                     # a site built before, by the same script
        folder = (ROOT/os.environ['DECCAL_DOCS_SITE']).resolve()
        yield folder, json.loads((folder/'pages.json').read_text()), 0, ''
        return
    out = Path(tempfile.mkdtemp(prefix='deccal-site-'))
    r = subprocess.run([sys.executable, str(ROOT/'tools'/'build_docs.py'), '--out', str(out/'site')],
                       cwd=ROOT, capture_output=True, text=True, timeout=900)
    log = r.stdout + r.stderr
    pages = json.loads((out/'site'/'pages.json').read_text()) if (out/'site'/'pages.json').exists() else None
    yield out/'site', pages, r.returncode, log
    shutil.rmtree(out, ignore_errors=True)


@pytest.fixture(scope='module')
def browser():
    chromium = shutil.which('chromium') or shutil.which('chromium-browser')
    driver_bin = shutil.which('chromedriver')
    if not chromium or not driver_bin:
        pytest.fail(f'headless Chromium is needed to check the doc pages and is not installed '
                    f'(chromium: {chromium or "missing"}, chromedriver: {driver_bin or "missing"}). '
                    f'On Debian, as root: {INSTALL}', pytrace=False)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    profile = tempfile.mkdtemp(prefix='deccal-chromium-')
    for a in ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
              '--disable-background-networking', '--disable-component-update', '--disable-sync',
              '--disable-dev-shm-usage', f'--user-data-dir={profile}', '--window-size=1200,1600']:
        opts.add_argument(a)
    opts.set_capability('goog:loggingPrefs', {'browser': 'ALL'})
    drv = webdriver.Chrome(options=opts, service=Service(executable_path=driver_bin))  # no Selenium Manager download
    drv.set_page_load_timeout(60)
    yield drv
    drv.quit()
    shutil.rmtree(profile, ignore_errors=True)


def test_build_succeeds(site):
    folder, pages, rc, log = site
    assert rc == 0 and pages, f'python tools/build_docs.py failed (exit {rc}):\n{log[-6000:]}'


def test_sidebar_order_in_site(site, browser):
    folder, pages, rc, log = site
    assert pages, log[-3000:]
    got = [p['notebook'] for p in pages]
    tutorials = sorted(n for n in got if fnmatch(n, TUTORIAL))
    expected = []
    for n in ORDER:
        expected += tutorials if n == 'TUTORIALS' else [n] if n in got else []
    # the paper's order (other notebooks, e.g. 80_plots, may sit between), every notebook once
    assert [n for n in got if n in expected] == expected, got
    assert sorted(got) == _notebooks(), 'pages and notebooks differ'
    browser.get((folder/'index.html').as_uri())
    hrefs = browser.execute_script(
        "return [...document.querySelectorAll('nav.sidebar ul a')].map(a => a.getAttribute('href'))")
    assert hrefs == [p['page'] for p in pages]


@pytest.mark.parametrize('nb', _notebooks())
def test_page_renders(site, browser, nb):
    folder, pages, rc, log = site
    assert pages, f'no site was built:\n{log[-3000:]}'
    page = next((p for p in pages if p['notebook'] == nb), None)
    assert page, f'{nb} has no page in the built site'
    path = folder/page['page']
    browser.get_log('browser')                                 # drop messages of earlier pages
    browser.get(path.as_uri())
    from selenium.webdriver.support.ui import WebDriverWait
    WebDriverWait(browser, 30).until(lambda d: d.execute_script(
        "return document.readyState === 'complete' && [...document.images].every(i => i.complete)"))
    title = browser.title
    assert page['title'] in title, f'{page["page"]}: <title> is {title!r}'
    h1 = browser.execute_script("const h = document.querySelector('main h1'); return h ? h.textContent : null")
    assert h1 and h1.strip() == page['title'], f'{page["page"]}: main heading {h1!r}'
    imgs = browser.execute_script(
        "return [...document.querySelectorAll('main img')].map(i => [i.naturalWidth, i.naturalHeight, i.alt])")
    broken = [i for i, (w, h, _) in enumerate(imgs) if not (w > 0 and h > 0)]
    assert not broken, f'{page["page"]}: images {broken} of {len(imgs)} do not render'
    if draws_figures(NBS/nb):
        assert imgs, f'{page["page"]}: {nb} draws figures but the page shows none'
    errors = [e for e in browser.get_log('browser') if e.get('level') == 'SEVERE']
    assert not errors, f'{page["page"]}: browser errors: {errors}'
    bad = browser.execute_script("""
        return [...document.querySelectorAll('main pre.output, main div.output')]
          .filter(e => e.classList.contains('error')
                       || /Traceback \\(most recent call last\\)|^\\w*Error: /m.test(e.textContent))
          .map(e => e.textContent.slice(0, 500))""")
    assert not bad, f'{page["page"]}: error output in the rendered cells:\n' + '\n---\n'.join(bad)
    math_text = browser.execute_script("return document.querySelectorAll('main math').length")
    cells = json.loads((NBS/nb).read_text())['cells']
    if '$' in ''.join(''.join(c['source']) for c in cells if c['cell_type'] == 'markdown'):
        assert math_text > 0, f'{page["page"]}: the notebook has $math$ but the page no MathML'


def _public_methods():
    "(class, method name, notebook) for every public method a public deccal class defines itself (not properties)."
    import inspect, importlib
    import deccal
    out = []
    for cname in deccal.__all__:
        cls = getattr(deccal, cname)
        if not inspect.isclass(cls) or issubclass(cls, BaseException): continue
        for name, v in vars(cls).items():
            if name.startswith('_') or isinstance(v, property): continue
            f = v.__func__ if isinstance(v, (classmethod, staticmethod)) else v
            if not (inspect.isfunction(f) and f.__module__.startswith('deccal')): continue
            mod = importlib.import_module(f.__module__)      # where the method is defined (a @patch may be elsewhere)
            m = re.search(r'File to edit: \.\./nbs/(\S+\.ipynb)', Path(mod.__file__).read_text(encoding='utf-8'))
            out.append((cname, name, m.group(1)))
    return out


def test_every_public_method_has_an_api_entry(site):
    """Each public method of a public class has its API entry on its notebook's page: a heading `Class.method`
    (nbdev writes one for exported functions, classes and @patch methods; class-body methods need show_doc)."""
    folder, pages, rc, log = site
    assert pages, f'no site was built:\n{log[-3000:]}'
    page_of = {p['notebook']: folder/p['page'] for p in pages}
    html = {nb: path.read_text(encoding='utf-8') for nb, path in page_of.items()}
    methods = _public_methods()
    assert len(methods) > 30, methods                          # the inventory itself works
    missing = [f'{c}.{m} ({nb})' for c, m, nb in methods
               if not re.search(r'<h[1-6][^>]*>(?:\s|<[^>]+>)*' + re.escape(f'{c}.{m}') + r'(?:\s|<[^>]+>)*</h[1-6]>',
                                html[nb])]
    assert not missing, f'public methods without an API entry on the doc site: {missing}'
