"""The documentation site: built strictly with the README's command, then opened in a real
headless browser (Debian's Chromium driven by selenium) as a reader would open it.

The build runs once per session, in a copy of ``docs/`` and ``examples/`` (the gallery and the
API stubs it generates stay out of the checkout). Without Sphinx or Chromium the tests skip,
except in CI (``CI=true``), where a missing piece is a failure: ``.ci/run`` installs both.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

import pytest
from conftest import REPO_ROOT, require_data_files

CHROMIUM = Path(os.environ.get("CORESELECT_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("CORESELECT_CHROMEDRIVER", "/usr/bin/chromedriver"))
IN_CI = os.environ.get("CI", "").lower() == "true"
#: a page of each kind the site must render with its figures
PAGES = {
    "home": "index.html",
    "user guide": "guide/choosing-k.html",
    "API": "api/generated/coreselect.GDSSelector.html",
}


def missing(what: str) -> None:
    """Skip for want of ``what`` on a developer's machine; fail in CI, which installs it."""
    if IN_CI:
        pytest.fail(f"CI=true but {what} (.ci/run installs it)", pytrace=False)
    pytest.skip(what)


def readme_build_command() -> list[str]:
    """The README's docs build command, ``python -m sphinx ... docs OUT``, as argv."""
    text = (REPO_ROOT / "README.md").read_text()
    m = re.search(r"^(?:pip install -e '\.\[docs\]' && )?(python -m sphinx .+)$", text, re.M)
    assert m, "README.md no longer names the docs build command (python -m sphinx ...)"
    argv = shlex.split(m[1])
    assert "-W" in argv, f"the README's docs build is not strict (-W): {m[1]}"
    return argv


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    """The built site's folder, built once with the README's command in a copy of the docs."""
    try:
        import furo  # noqa: F401
        import myst_parser  # noqa: F401
        import sphinx  # noqa: F401
        import sphinx_gallery  # noqa: F401
    except ImportError as error:
        missing(f"the docs extra is not installed ({error.name}: pip install -e '.[docs]')")
    require_data_files()  # the examples load datasets by name
    root = tmp_path_factory.mktemp("site")
    shutil.copytree(REPO_ROOT / "docs", root / "docs", ignore=shutil.ignore_patterns(
        "auto_examples", "generated", "_build", "sg_execution_times.rst"))
    shutil.copytree(REPO_ROOT / "examples", root / "examples")
    (root / "src").symlink_to(REPO_ROOT / "src")
    argv = readme_build_command()
    out = Path(argv[-1])
    argv = [sys.executable, *argv[1:-1], str(root / "build" / out.name)]
    env = {**os.environ, "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, (f"the strict docs build failed ({shlex.join(argv)}):\n"
                                  f"{proc.stderr[-4000:]}\n{proc.stdout[-2000:]}")
    return root / "build" / out.name


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []
        self.srcs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"])
        if tag == "img" and a.get("src"):
            self.srcs.append(a["src"])


def broken_links(site: Path) -> list[str]:
    """Every internal link or image of the site whose file, or whose anchor, is missing."""
    parsed: dict[Path, _Links] = {}

    def parse(page: Path) -> _Links:
        if page not in parsed:
            p = _Links()
            p.feed(page.read_text(errors="replace"))
            parsed[page] = p
        return parsed[page]

    problems = []
    for page in sorted(site.rglob("*.html")):
        links = parse(page)
        for ref in links.hrefs + links.srcs:
            if urlsplit(ref).scheme or ref.startswith(("//", "mailto:", "javascript:")):
                continue  # external: nothing is fetched
            path, anchor = urldefrag(ref)
            target = (page.parent / unquote(path)).resolve() if path else page
            if target.is_dir():
                target = target / "index.html"
            where = f"{page.relative_to(site)} -> {ref}"
            if not target.is_file():
                problems.append(f"{where}: no such file")
            elif anchor and target.suffix == ".html" and unquote(anchor) not in parse(target).ids:
                problems.append(f"{where}: no such anchor")
    return problems


def test_no_internal_link_of_the_site_is_broken(site):
    problems = broken_links(site)
    assert not problems, f"{len(problems)} broken internal links:\n" + "\n".join(problems[:40])


def test_the_link_check_finds_a_broken_link(tmp_path):
    """The check itself: a missing page and a missing anchor are reported, a good link is not."""
    (tmp_path / "a.html").write_text('<h1 id="top">A</h1><a href="b.html#top">ok</a>'
                                     '<a href="gone.html">gone</a><a href="a.html#nowhere">x</a>'
                                     '<a href="https://example.org/x">external</a>')
    (tmp_path / "b.html").write_text('<p id="top">B</p><img src="_images/none.png">')
    assert broken_links(tmp_path) == ["a.html -> gone.html: no such file",
                                      "a.html -> a.html#nowhere: no such anchor",
                                      "b.html -> _images/none.png: no such file"]


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium from the distribution's packages, driven by selenium."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing("selenium is not installed (pip install -e '.[docs]')")
    if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
        missing(f"no {CHROMIUM} and {CHROMEDRIVER} (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,1600", "--allow-file-access-from-files"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()


WAIT_FOR_IMAGES = """
const done = arguments[arguments.length - 1];
const images = Array.from(document.images);
Promise.all(images.map(img => img.complete ? null :
    new Promise(r => { img.onload = r; img.onerror = r; }))).then(() =>
  done(images.map(img => [img.getAttribute('src'), img.naturalWidth])));
"""


@pytest.mark.parametrize("kind", list(PAGES))
def test_a_page_renders_with_its_figures(site, browser, kind, tmp_path):
    page = site / PAGES[kind]
    assert page.is_file(), f"the {kind} page {PAGES[kind]} was not built"
    browser.get(page.as_uri())
    browser.set_script_timeout(60)
    title = browser.title
    images = browser.execute_async_script(WAIT_FOR_IMAGES)
    browser.save_screenshot(str(tmp_path / f"{kind.replace(' ', '-')}.png"))
    body = browser.find_element("tag name", "article").text
    assert "coreselect" in title and len(body) > 200, f"{PAGES[kind]}: empty page ({title!r})"
    figures = [(src, width) for src, width in images if "_images/" in (src or "")]
    assert figures, f"{PAGES[kind]} shows no figure"
    unloaded = [src for src, width in figures if not width]
    assert not unloaded, f"{PAGES[kind]}: figures that did not load: {unloaded}"


#: the public modules whose ``__all__`` the API reference documents, name by name
PUBLIC_MODULES = ["coreselect", "coreselect.baselines", "coreselect.evaluation",
                  "coreselect.progress", "coreselect.errors", "coreselect.store",
                  "coreselect.datasets"]


def api_reference_names(folder: Path = REPO_ROOT / "docs" / "api") -> set[str]:
    """Every fully qualified name that an autosummary list or an ``auto*`` directive of the
    API reference pages documents."""
    names: set[str] = set()
    for page in sorted(folder.glob("*.md")):
        module, in_summary = None, False
        for line in page.read_text().splitlines():
            text = line.strip()
            if m := re.match(r"\.\. currentmodule:: (\S+)$", text):
                module, in_summary = m[1], False
            elif m := re.match(r"\.\. auto(?:data|function|class|exception|attribute)::\s+(\S+)",
                               text):
                names.add(m[1] if m[1].startswith("coreselect.") else f"{module}.{m[1]}")
                in_summary = False
            elif text.startswith(".. autosummary::"):
                in_summary = True
            elif in_summary and (m := re.match(r"^ {3}([A-Za-z_][\w.]*)\s*$", line)):
                names.add(f"{module}.{m[1]}")
            elif in_summary and text and not line.startswith("   "):
                in_summary = False
    return names


def _resolve(qualified: str):
    import importlib

    module, _, name = qualified.rpartition(".")
    return getattr(importlib.import_module(module), name, None)


def test_every_public_name_is_in_the_api_reference():
    """Each name a public module exports (its ``__all__``: classes, functions, constants) has
    an entry in docs/api/ (a class or function re-exported from another public module counts
    once, where it is documented)."""
    import importlib
    import types

    documented = api_reference_names()
    objects = {id(obj) for obj in map(_resolve, documented) if callable(obj)}
    absent = []
    for module in PUBLIC_MODULES:
        for name in importlib.import_module(module).__all__:
            obj = getattr(importlib.import_module(module), name)
            if name.startswith("__") or isinstance(obj, types.ModuleType):
                continue
            if f"{module}.{name}" not in documented and not (callable(obj) and id(obj) in objects):
                absent.append(f"{module}.{name}")
    assert not absent, "public names without an API entry: " + ", ".join(absent)
