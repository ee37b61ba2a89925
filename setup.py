"""Setup for deccal, read from settings.ini (nbdev 2 layout).

Written without `pkg_resources`, which recent setuptools no longer ship.
"""
from configparser import ConfigParser
from pathlib import Path
import setuptools

here = Path(__file__).parent
cfg = ConfigParser(delimiters=['='])
cfg.read(here/'settings.ini', encoding='utf-8')
cfg = cfg['DEFAULT']

licenses = {'apache2': ('Apache Software License 2.0', 'OSI Approved :: Apache Software License')}
statuses = ['1 - Planning', '2 - Pre-Alpha', '3 - Alpha', '4 - Beta', '5 - Production/Stable', '6 - Mature', '7 - Inactive']
lic = licenses[cfg['license']]
min_python = cfg['min_python']
py_versions = ['3.10', '3.11', '3.12', '3.13']

setuptools.setup(
    name=cfg['lib_name'],
    version=cfg['version'],
    description=cfg['description'],
    long_description=(here/'README.md').read_text(encoding='utf-8'),
    long_description_content_type='text/markdown',
    author=cfg['author'], author_email=cfg['author_email'],
    license=lic[0],
    url=cfg['git_url'],
    keywords=cfg['keywords'].split(),
    classifiers=['Development Status :: ' + statuses[int(cfg['status'])],
                 'Intended Audience :: ' + cfg['audience'].title(),
                 'License :: ' + lic[1],
                 'Natural Language :: ' + cfg['language'].title()]
                + ['Programming Language :: Python :: ' + v for v in py_versions[py_versions.index(min_python):]],
    packages=setuptools.find_packages(include=[cfg['lib_name'], cfg['lib_name'] + '.*']),
    include_package_data=True,
    python_requires='>=' + min_python,
    install_requires=cfg['requirements'].split(),
    extras_require={'dev': cfg['dev_requirements'].split(), 'sklearn': cfg['sklearn_requirements'].split(),
                    'dask': cfg['dask_requirements'].split()},
    entry_points={'console_scripts': cfg['console_scripts'].split(),
                  'nbdev': [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"]},
    zip_safe=False,
)
