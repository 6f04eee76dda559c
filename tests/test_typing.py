"""The typed API (issue 30): ``mypy --strict`` passes on the package and on a typed use of
it (tests/typing/usage.py, which also runs), and rejects misuse that the types exist to
catch. Skipped only where mypy is missing (the test extra pins it)."""

import runpy
import textwrap
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parent.parent
USAGE = ROOT / "tests" / "typing" / "usage.py"

# each line marked "# error: TEXT" must draw an error that contains TEXT, on that line
MISUSE = textwrap.dedent('''
    import numpy as np
    from numpy.typing import NDArray

    import dmlops as dml

    x = np.zeros((1, 1, 4, 4), np.float32)
    dml.padding(x, 1, 1, mode="reflec")  # error: No overload variant of "padding"
    y: NDArray[np.float32] = dml.max_pooling(x, 2, output_indices=True)  # error: Incompatible
    z: NDArray[np.float32] = dml.max_pooling(x, 2)
    desc = dml.PaddingDesc(input_tensor=dml.TensorDesc("FLOAT32", (3,)),
                           output_tensor=dml.TensorDesc("FLOAT32", (5,)), start_padding=1,
                           end_padding=1)
    dml.compile_operator(desc, feature_level="7.0")  # error: "compile_operator" has
    dml.TensorDesc("FLOAT32", 3)  # error: Argument 2 to "TensorDesc" has incompatible type
''')


def test_mypy_strict_passes_on_the_package_and_rejects_misuse(tmp_path):
    """One mypy run (the project's [tool.mypy] settings) over the package, the usage example
    and the misuse; a fresh cache, so the run is cold, as in CI. (One test: two would run
    mypy once on each pytest worker.)"""
    misuse = tmp_path / "misuse.py"
    misuse.write_text(MISUSE)
    stdout, stderr, status = mypy_api.run([
        "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "cache"),
        "--no-error-summary", "--hide-error-context", "--no-pretty",
        str(ROOT / "src" / "dmlops"), str(USAGE), str(misuse)])
    assert not stderr, stderr
    lines = [line for line in stdout.splitlines() if ": error: " in line]
    # the package and the usage example pass
    assert [line for line in lines if "misuse.py" not in line] == []
    # each line marked "# error: TEXT" draws an error that contains TEXT, and no other line
    errors = [line for line in lines if line.startswith(str(misuse))]
    expected = {}
    for number, text in enumerate(MISUSE.splitlines(), 1):
        if "# error: " in text:
            expected[number] = text.split("# error: ")[1]
    for number, message in expected.items():
        found = [e for e in errors if f"misuse.py:{number}: error: " in e]
        assert any(message in e for e in found), (number, message, errors)
    assert {int(e.split(":")[1]) for e in errors} == set(expected), errors


def test_usage_example_runs():
    runpy.run_path(str(USAGE), run_name="__main__")
