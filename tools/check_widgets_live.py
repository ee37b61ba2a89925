#!/usr/bin/env python3
"""Check the newsvendor tutorial's ipywidgets explorer in a live JupyterLab, driven by headless Chromium.

    pip install jupyterlab selenium      # jupyterlab is not among deccal's dev extras (a manual check)
    python tools/check_widgets_live.py   # prints what it did; exit status 0 if the explorer worked

`nbdev_test` and the doc build run the explorer without a front end (the sliders' binding is tested in
the notebook, and the doc page shows the static figure). This script covers the rest: it starts
JupyterLab on a copy of nbs/10_tutorial_newsvendor.ipynb, runs all cells, waits for the
three sliders to render (the cells run by JupyterLab's 'Run All Cells' command), moves the 'order levels' slider
by typing into its readout, and waits for the
explorer's figure to be redrawn. It fails if a cell shows a traceback, if the sliders never render, or
if the figure does not change. A screenshot of the page after the update is written next to --out.

Needs Debian's chromium and chromium-driver (as tests/test_docs.py does).
"""
from __future__ import annotations

import argparse, shutil, subprocess, sys, tempfile, time, urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NB = '10_tutorial_newsvendor.ipynb'


def wait_for(cond, timeout, what, every=0.5):
    "Poll cond() until it returns something truthy; raise with `what` after `timeout` seconds."
    t0 = time.time()
    while time.time() - t0 < timeout:
        v = cond()
        if v: return v
        time.sleep(every)
    raise TimeoutError(f'{what}: not after {timeout} s')


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--port', type=int, default=8899)
    ap.add_argument('--out', default='widgets_live.png', help='screenshot of the page after the slider moved')
    ap.add_argument('--timeout', type=float, default=600, help='seconds to wait for all cells to run')
    a = ap.parse_args(argv)
    jupyter = shutil.which('jupyter', path=str(Path(sys.executable).parent)) or shutil.which('jupyter')
    chromium, driver_bin = shutil.which('chromium') or shutil.which('chromium-browser'), shutil.which('chromedriver')
    if not jupyter: print('jupyter not found: pip install jupyterlab'); return 2
    if not chromium or not driver_bin:
        print('chromium and chromedriver are needed (apt-get install chromium chromium-driver)'); return 2
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    work = Path(tempfile.mkdtemp(prefix='deccal-live-'))
    shutil.copy(ROOT/'nbs'/NB, work/NB)
    token = 'deccal-check'
    log = open(work/'jupyter.log', 'w')
    srv = subprocess.Popen([jupyter, 'lab', '--no-browser', f'--port={a.port}', f'--IdentityProvider.token={token}',
                            f'--ServerApp.root_dir={work}', '--allow-root', '--LabApp.news_url=',
                            '--LabApp.expose_app_in_browser=True',
                            '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate'],
                           stdout=log, stderr=subprocess.STDOUT)
    base = f'http://127.0.0.1:{a.port}'
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for o in ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--window-size=1400,2000',
              f'--user-data-dir={work/"chromium"}']:
        opts.add_argument(o)
    drv = None
    try:
        def up():
            try: return urllib.request.urlopen(f'{base}/api/status?token={token}', timeout=2).status == 200
            except OSError: return False
        wait_for(up, 60, 'JupyterLab server')
        drv = webdriver.Chrome(options=opts, service=Service(executable_path=driver_bin))
        drv.get(f'{base}/lab/tree/{NB}?token={token}')
        wait_for(lambda: drv.find_elements(By.CSS_SELECTOR, '.jp-Notebook .jp-Cell'), 120, 'the notebook to open')
        wait_for(lambda: 'Idle' in (drv.execute_script(
            "const e = document.querySelector('.jp-Notebook-ExecutionIndicator'); "
            "return e ? (e.getAttribute('data-status') || e.title || '') : ''") or '')
            or drv.find_elements(By.XPATH, "//*[contains(@class,'jp-StatusBar')]//*[contains(text(),'Idle')]"),
                 120, 'the kernel to start')
        print('notebook open, kernel idle')
        # run every cell through JupyterLab's own command (the app is exposed with --LabApp.expose_app_in_browser)
        wait_for(lambda: drv.execute_script(
                     "return !!(window.jupyterapp && window.jupyterapp.commands.hasCommand('notebook:run-all-cells'))"),
                 60, 'the JupyterLab application')
        drv.execute_script("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        t0 = time.time()
        print('running all cells ...')
        def tracebacks():
            return [e.text[:400] for e in drv.find_elements(By.CSS_SELECTOR, '.jp-OutputArea-output')
                    if 'Traceback' in e.text
                    or e.get_attribute('data-mime-type') == 'application/vnd.jupyter.stderr' and 'Error' in e.text]
        def sliders_or_error():
            if (err := tracebacks()): raise RuntimeError('a cell shows an error:\n' + err[0])
            found = drv.find_elements(By.CSS_SELECTOR, '.widget-slider, .widget-hslider')
            return found if len(found) >= 3 else None
        sliders = wait_for(sliders_or_error, a.timeout, 'the three sliders')
        print(f'sliders rendered after {time.time() - t0:.0f} s: '
              + ', '.join(s.find_element(By.CSS_SELECTOR, '.widget-label').text for s in sliders))

        def figure():
            imgs = drv.find_elements(By.CSS_SELECTOR, '.widget-interact img, .widget-output img')
            return imgs[-1].get_attribute('src') if imgs else None
        before = wait_for(figure, 120, "the explorer's figure")
        levels = [s for s in sliders if 'order levels' in s.text][0]
        readout = levels.find_element(By.CSS_SELECTOR, '.widget-readout')
        old = readout.text
        drv.execute_script("arguments[0].scrollIntoView({block: 'center'})", readout)
        readout.click()
        readout.send_keys(Keys.CONTROL, 'a')
        readout.send_keys('3', Keys.ENTER)
        t1 = time.time()
        after = wait_for(lambda: (f := figure()) and f != before and f, 120,
                         'the figure to be redrawn after the slider moved')
        print(f"'order levels' {old} -> {readout.text}: figure redrawn after {time.time() - t1:.1f} s "
              f"({len(before)} -> {len(after)} bytes of PNG data)")
        if (err := tracebacks()): raise RuntimeError('an error after the update:\n' + err[0])
        drv.save_screenshot(a.out)
        print(f'screenshot: {a.out}\nthe explorer works in a live JupyterLab')
        return 0
    except Exception as e:
        print(f'FAILED: {type(e).__name__}: {e}')
        if drv is not None: drv.save_screenshot(a.out); print(f'screenshot: {a.out}')
        print(f'JupyterLab log: {work/"jupyter.log"}')
        return 1
    finally:
        if drv is not None: drv.quit()
        srv.terminate()
        try: srv.wait(10)
        except subprocess.TimeoutExpired: srv.kill()


if __name__ == '__main__':
    sys.exit(main())
