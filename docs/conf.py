"""Sphinx configuration of dmlops's documentation site.

Build it with ``pip install ".[docs]"`` and ``sphinx-build -W -b html docs docs/_build/html``
(``tests/test_docs.py`` runs the same build, warnings as errors). The API pages are generated
by autosummary into ``docs/api/generated/`` and the gallery by sphinx-gallery from
``examples/gallery/`` into ``docs/auto_examples/``, both at build time (neither is in git).
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# The documentation's own helpers (the gallery's scraper, the API examples); the package as
# installed, else from the source tree (a development checkout whose kernels are built there).
sys.path.insert(0, str(DOCS / "_ext"))
try:
    import dmlops
except ImportError:
    sys.path.insert(0, str(ROOT / "src"))
    import dmlops

from api_examples import API_EXAMPLES, API_SUMMARIES  # noqa: E402

project = "dmlops"
author = "the dmlops authors"
copyright = "the dmlops authors"
release = version = dmlops.__version__

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "**.ipynb_checkpoints", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip", "auto_examples/*.json",
                    "auto_examples/*.md5", "auto_examples/*.codeobj.json"]
templates_path = ["_templates"]

# --- MyST (Markdown pages) -------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 3          # [text](page.md#a-heading) links resolve

# --- API reference: autosummary stubs, numpydoc rendering ------------------------------------
autosummary_generate = True
autosummary_imported_members = True
# Each stub gets a short example where the docstring has none (docs/_ext/api_examples.py;
# tests/test_docs.py runs them and checks that every public name has one).
# Names whose docstring is empty get a line of API_SUMMARIES; the enumerations and the
# classes with documented methods or properties list their members.
autosummary_context = {
    "api_examples": API_EXAMPLES,
    "api_summaries": API_SUMMARIES,
    "with_members": ["dmlops.DataType", "dmlops.FeatureLevel", "dmlops.PaddingMode",
                     "dmlops.TensorDesc", "dmlops.CompiledOperator"],
}
# Signatures without annotations: the docstrings say what each argument takes, and the
# annotations (protocols, TypeVars, Literal unions) are for type checkers (see the guide's
# "Backends, errors and types").
autodoc_typehints = "none"
autodoc_preserve_defaults = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()
# The docstrings are written as prose with doctest examples (STYLE.md: semantics first), not
# in numpydoc's sections; numpydoc renders them as the summary and extended summary.

add_module_names = False
python_display_short_literal_types = True

# Links into the peers' documentation are not needed to build; intersphinx stays offline
# (no inventories fetched: the build must work without a network).
intersphinx_mapping: dict[str, tuple[str, str | None]] = {}

# --- sphinx-gallery --------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples" / "gallery"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "image_scrapers": ("matplotlib", "gallery_support.figures_in_globals"),
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "gallery_support.GalleryOrder",
    "show_memory": False,
    "show_signature": False,
    "plot_gallery": "True",
    "abort_on_example_error": True,
    "reset_modules": ("matplotlib",),
    "write_computation_times": False,
}

# --- HTML --------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"dmlops {release}"
html_static_path = ["_static"]
html_css_files = ["dmlops.css"]
html_show_sourcelink = False
html_theme_options = {
    "navigation_depth": 2,
    "show_toc_level": 2,
    "header_links_before_dropdown": 8,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_sidebars = {"index": [], "getting-started": [], "auto_examples/index": []}


# --- signatures ------------------------------------------------------------------------------
def _signature(app, what, name, obj, options, signature, return_annotation):
    """``dmlops.onnx``'s module-level ``prepare``, ``run_model``, ... are classmethods of
    ``DmlBackend`` bound to the class: show their parameters as a caller passes them (autodoc
    would drop the first, taking it for ``cls``). ``CompiledOperator`` is made by
    ``compile_operator``, not by calling it: no constructor signature."""
    import inspect

    if name == "dmlops.CompiledOperator":
        return "", None
    if what == "function" and inspect.ismethod(obj) and inspect.isclass(obj.__self__):
        sig = inspect.signature(obj)
        params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
        return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty)), None
    return None


def setup(app):
    app.connect("autodoc-process-signature", _signature)
