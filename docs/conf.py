"""Sphinx configuration of the coreselect documentation site.

Build it (strict: every warning is an error) from the root of a clone::

    python -m sphinx -W --keep-going -b html docs build/html
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("MPLBACKEND", "Agg")

project = "coreselect"
author = "the coreselect developers"
copyright = "2026, the coreselect developers"

# Sphinx, not MkDocs: autodoc and autosummary read numpydoc docstrings of a scikit-learn style
# API, and sphinx-gallery runs the examples and shows their figures, as scikit-learn's site does.
extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# Fragments that a page splices in (docs/results/bench/*.md), the raw outputs of evaluation
# runs, and the notes on how the docs themselves are tested are not pages of the site.
exclude_patterns = [
    "_build",
    "mutation*.md",
    "results/README.md",
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.zip",
    "auto_examples/*.json",
    # the raw outputs of evaluation runs (results.csv, summary.md, plots); pages link the plots
    *sorted(f"results/{d.name}/*" for d in (DOCS / "results").iterdir()
            if d.is_dir() and d.name != "bench"),
]

html_theme = "furo"
html_title = "coreselect"
html_static_path: list[str] = []
templates_path = ["_templates"]

myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

autosummary_generate = True
# scikit-learn's metadata-routing setters are generated on every estimator: not ours to document
autodoc_default_options = {
    "members": True,
    "show-inheritance": True,
    "exclude-members": "set_fit_request,set_score_request,set_transform_request,"
                       "set_predict_request,set_partial_fit_request,set_output",
}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autoclass_content = "class"
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
# "Attributes" sections as fields: a documented property of the same name is not described twice
napoleon_use_ivar = True

# sphinx-gallery's configuration holds a function: the environment is rebuilt every time.
# The files benchmarks write are shown as they are: their tables may open with an H3.
# A type such as ``ndarray of shape (n_features,)`` names a size, not the property of that name
# that two classes document: an ambiguous cross-reference there is no broken link.
suppress_warnings = ["config.cache", "myst.header", "ref.python"]

# Nothing is fetched while building: no intersphinx, no remote images.
intersphinx_mapping: dict = {}


def _png_files_written(block, block_vars, gallery_conf):
    """Show every PNG an example block wrote in its working folder (the library's plotting
    functions write files, as the command line does), then move it out of the source tree."""
    from sphinx_gallery.scrapers import figure_rst

    folder = Path(block_vars["src_file"]).parent
    seen = block_vars.setdefault("pngs_seen", set())
    written = sorted(p for p in folder.glob("*.png") if p not in seen)
    targets = []
    for png, target in zip(written, block_vars["image_path_iterator"]):
        shutil.move(png, target)
        targets.append(target)
    return figure_rst(targets, gallery_conf["src_dir"])


sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "image_scrapers": ("matplotlib", _png_files_written),
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "plot_gallery": "True",
    "within_subsection_order": "ExampleTitleSortKey",
    # the API pages show the examples that use each name
    "backreferences_dir": "api/generated/backreferences",
    "doc_module": ("coreselect",),
    "prefer_full_module": set(),
}


_LINK = re.compile(r"\[(?P<text>[^\]]*)\]\((?P<target>[^)\s:#]+)(?P<anchor>#[^)]*)?\)")


def _mend_script_links(app, docname, source):
    """The result pages that benchmark scripts write quote tables written for
    ``results/bench/``, whose relative links point from there: point them from the page that
    quotes them, and show a link to a folder of raw outputs as its name."""
    if not docname.startswith("results/"):
        return
    here = (DOCS / docname).parent

    def mend(m):
        target = m["target"]
        if (here / target).is_file():
            return m[0]
        if (DOCS / "results" / "bench" / target).is_file():
            rel = os.path.relpath(DOCS / "results" / "bench" / target, here)
            return f"[{m['text']}]({rel}{m['anchor'] or ''})"
        if (here / target).is_dir():
            return f"`{m['text']}`"
        return m[0]

    source[0] = _LINK.sub(mend, source[0])
    if not re.match(r"\s*# ", source[0]):  # a file as a benchmark wrote it: name it
        source[0] = f"# {Path(docname).name.replace('_', ' ')}\n\n{source[0]}"


def _no_builtin_docstring(app, what, name, obj, options, lines):
    """A module constant (a dict, a tuple, a str) has no docstring of its own: autodoc would
    show its type's (``dict() -> new empty dictionary`` ...); show only what the page says."""
    type_doc = (type(obj).__doc__ or "").strip().splitlines()
    if what == "data" and type(obj).__module__ == "builtins" and type_doc and \
            [line.strip() for line in lines[:1]] == type_doc[:1]:
        lines.clear()


def setup(app):
    app.connect("source-read", _mend_script_links)
    app.connect("autodoc-process-docstring", _no_builtin_docstring)
