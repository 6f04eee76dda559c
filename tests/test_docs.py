"""The documentation site builds, warnings as errors, and its examples run.

- ``sphinx-build -W --keep-going -b html docs <tmp>`` in a subprocess (the API pages are
  generated from the docstrings and the gallery's scripts run, at build time); the key pages
  must exist.
- The Markdown pages' examples (and the README's) are doctests: every ```pycon block of a page
  runs, in order, in one namespace per page (in a temporary working directory), its shown output checked. A page
  holds no ```python block, so that no Python example escapes the run (signatures are shown
  as ```text).
- Every ```console block's ``$ dmlops ...`` commands run from the repository root and print
  exactly the lines shown after them (blocks of commands that need a cluster, an object store
  or a placeholder file are ```sh, shown only).
- Every public name of ``dmlops``, ``dmlops.torch`` and ``dmlops.onnx`` has an example on its
  API page (its docstring's, or ``docs/_ext/api_examples.py``'s, which run here too; the
  docstrings' own run in tests/test_docstrings.py).
"""

from __future__ import annotations

import doctest
import importlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("sphinx")
pytest.importorskip("pydata_sphinx_theme")
pytest.importorskip("numpydoc")
pytest.importorskip("myst_parser")
pytest.importorskip("sphinx_gallery")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md"] + sorted(
    p for p in DOCS.rglob("*.md")
    if not {"_build", "auto_examples", "generated"} & set(p.relative_to(DOCS).parts))
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
FENCE = re.compile(r"^(`{3,})\s*([\w{}-]*)[^\n]*\n(.*?)^\1\s*$", re.S | re.M)


def blocks(page: Path, language: str) -> list[tuple[int, str]]:
    """(line number, text) of each fenced block of ``language`` on ``page``."""
    text = page.read_text()
    return [(text.count("\n", 0, m.start()) + 2, m[3]) for m in FENCE.finditer(text)
            if m[2] == language]


def run_doctest(text: str, name: str, path: str, lineno: int = 0,
                globs: dict | None = None) -> doctest.TestResults:
    test = doctest.DocTestParser().get_doctest(text, {} if globs is None else globs, name,
                                               path, lineno)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    runner.run(test, clear_globs=False)
    if globs is not None:         # (a DocTest runs in a copy of the namespace it is given)
        globs.update(test.globs)
    return runner.summarize(verbose=False)


def test_site_builds_without_warnings(tmp_path):
    # Built from a copy of docs/ (the gallery's scripts linked beside it, as in the
    # repository), so that the pages autosummary and sphinx-gallery generate into the source
    # folder land in tmp_path, not in the working tree, whoever else builds there.
    source = tmp_path / "repo" / "docs"
    shutil.copytree(DOCS, source, ignore=shutil.ignore_patterns(
        "_build", "generated", "auto_examples", "sg_execution_times.rst", "__pycache__"))
    (tmp_path / "repo" / "examples").mkdir()
    (tmp_path / "repo" / "examples" / "gallery").symlink_to(ROOT / "examples" / "gallery")
    site = tmp_path / "html"
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(source), str(site)],
        cwd=ROOT, env=dict(os.environ, MPLBACKEND="Agg"), capture_output=True, text=True,
        timeout=600)
    seconds = time.perf_counter() - start
    assert done.returncode == 0, f"sphinx-build failed:\n{done.stdout[-4000:]}\n{done.stderr[-8000:]}"
    print(f"sphinx-build: {seconds:.1f} s")

    for page in ("index.html", "getting-started.html", "semantics.html", "operator-map.html",
                 "differences.html", "benchmarks.html", "api/index.html",
                 "api/generated/dmlops.max_pooling.html", "auto_examples/index.html"):
        assert (site / page).is_file(), page
    api = (site / "api/generated/dmlops.max_pooling.html").read_text()
    assert "Maximum of the real elements of each window" in api and "output_indices" in api
    gallery = (site / "auto_examples/index.html").read_text()
    for script in sorted((ROOT / "examples/gallery").glob("plot_*.py")):
        assert (site / "auto_examples" / f"{script.stem}.html").is_file(), script.name
        assert script.stem in gallery
        assert list((site / "_images").glob(f"sphx_glr_{script.stem}_*.png")), script.name
    # every public name has its page
    for module in ("dmlops", "dmlops.torch", "dmlops.onnx"):
        for name in importlib.import_module(module).__all__:
            assert (site / "api/generated" / f"{module}.{name}.html").is_file(), (module, name)


def test_every_public_name_has_an_example():
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        from api_examples import API_EXAMPLES
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    missing = []
    for module in ("dmlops", "dmlops.torch", "dmlops.onnx"):
        for name in importlib.import_module(module).__all__:
            obj = getattr(importlib.import_module(module), name)
            own = callable(obj) and ">>>" in (obj.__doc__ or "")
            if not own and f"{module}.{name}" not in API_EXAMPLES:
                missing.append(f"{module}.{name}")
    assert not missing, missing


def _api_examples():
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        from api_examples import API_EXAMPLES
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    return sorted(API_EXAMPLES.items())


@pytest.mark.parametrize("name,text", _api_examples(), ids=[n for n, _ in _api_examples()])
def test_api_examples(name, text, tmp_path, monkeypatch):
    if name.startswith("dmlops.torch"):
        pytest.importorskip("torch")
    if name.startswith("dmlops.onnx"):
        pytest.importorskip("onnx")
    monkeypatch.chdir(tmp_path)
    result = run_doctest(text, name, str(DOCS / "_ext" / "api_examples.py"))
    assert result.attempted and result.failed == 0, name


def test_no_page_holds_an_untested_python_block():
    for page in PAGES:
        assert not blocks(page, "python"), \
            f"{page.name}: a ```python block (use ```pycon, run here)"


EXAMPLE_PAGES = [p for p in PAGES if blocks(p, "pycon")]


@pytest.mark.parametrize("page", EXAMPLE_PAGES,
                         ids=[str(p.relative_to(ROOT)) for p in EXAMPLE_PAGES])
def test_page_examples(page, tmp_path, monkeypatch):
    examples = blocks(page, "pycon")
    monkeypatch.chdir(tmp_path)
    globs: dict = {"__name__": "__docs__"}
    for lineno, text in examples:
        result = run_doctest(text, f"{page.name}:{lineno}", str(page), lineno, globs)
        assert result.failed == 0, f"{page.relative_to(ROOT)}, the block at line {lineno}"


def _console_commands():
    for page in PAGES:
        for lineno, text in blocks(page, "console"):
            parts = re.split(r"^\$ ", text, flags=re.M)[1:]
            for part in parts:
                command, _, output = part.partition("\n")
                yield pytest.param(command, output, id=f"{page.name}:{lineno}:{command[:40]}")


@pytest.mark.parametrize("command,output", list(_console_commands()))
def test_console_examples(command, output):
    argv = shlex.split(command)
    assert argv[0] == "dmlops", command
    done = subprocess.run([sys.executable, "-m", "dmlops", *argv[1:]], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == output, f"{command}\n{done.stdout}"
