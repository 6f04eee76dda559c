"""Pictures of the geometry (dmlops.explain, explain_text, `dmlops explain`).

The drawn geometry is checked through the figure's artists (each cell's patch and text names
itself in its gid), never through pixels; the geometry itself is cross-checked against what
the functions compute (a window's cells and divisor reproduce average and max pooling; a
padded cell's source is np.pad's).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dmlops
from dmlops import InvalidArgumentError, UnsupportedError
from dmlops._explain import geometry
from dmlops.cli import main
from dmlops.dxdispatch import load_model

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


# --------------------------------------------------------------------------------------------
# helpers: what the figure marks as what

def _coord(text: str) -> tuple:
    return tuple(int(v) for v in text.strip("()").split(","))


def marked(fig, prefix: str) -> set:
    """Coordinates of the artists whose gid is ``prefix:(...)``."""
    out = set()
    for a in fig.findobj(lambda a: str(a.get_gid()).startswith(prefix + ":(")):
        out.add(_coord(a.get_gid()[len(prefix) + 1:]))
    return out


def texts(fig, prefix: str) -> dict:
    """``{coordinate: text}`` of the texts whose gid is ``prefix:(...)``."""
    return {_coord(t.get_gid()[len(prefix) + 1:]): t.get_text()
            for t in fig.findobj(lambda a: str(a.get_gid()).startswith(prefix + ":("))}


def window(fig, output: tuple) -> set:
    """The cells marked as the window of ``output``."""
    head = f"window:({','.join(map(str, output))}):"
    return {_coord(a.get_gid()[len(head):])
            for a in fig.findobj(lambda a: str(a.get_gid()).startswith(head))}


def windows(fig) -> set:
    return {_coord(a.get_gid().split(":")[1])
            for a in fig.findobj(lambda a: str(a.get_gid()).startswith("window:"))}


def run_cli(capsys, *args):
    rc = main(list(args))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


# --------------------------------------------------------------------------------------------
# pooling: cells, windows, divisors

def test_ceil_mode_extra_output_reaches_a_phantom_cell():
    # input 5, window 2, stride 2: F = 2, remainder 1, so ceil mode adds output 2, whose
    # window is input 4 and the phantom position 5 (past the padding: not read, not counted)
    fig = dmlops.explain("average_pooling", (1, 1, 5), 2, strides=2, ceil_mode=True)
    assert marked(fig, "input") == {(x,) for x in range(5)}
    assert marked(fig, "padding") == set()
    assert marked(fig, "phantom") == {(5,)}
    assert marked(fig, "output") == {(0,), (1,)}
    assert marked(fig, "extra") == {(2,)}
    assert window(fig, (2,)) == {(4,), (5,)}
    assert texts(fig, "divisor") == {(0,): "÷2", (1,): "÷2", (2,): "÷1"}


def test_ceil_mode_in_2d_with_padding_and_phantom_cells():
    # the README's picture: 4 x 4, window 3, stride 2, padding 1 + 1, output 3 x 3 (F + 1):
    # the last window reads input 3, padding 4 and the phantom 5 in each dimension
    fig = dmlops.explain("average_pooling", (1, 1, 4, 4), 3, strides=2, start_padding=1,
                         end_padding=1, output_sizes=(3, 3), include_padding=True)
    grid = {(r, c) for r in range(-1, 6) for c in range(-1, 6)}
    phantom = {(r, c) for r, c in grid if 5 in (r, c)}
    inputs = {(r, c) for r, c in grid if 0 <= r < 4 and 0 <= c < 4}
    assert marked(fig, "phantom") == phantom
    assert marked(fig, "input") == inputs
    assert marked(fig, "padding") == grid - phantom - inputs
    assert windows(fig) == {(0, 0), (1, 1), (2, 2)}
    assert window(fig, (2, 2)) == {(r, c) for r in (3, 4, 5) for c in (3, 4, 5)}
    assert window(fig, (0, 0)) == {(r, c) for r in (-1, 0, 1) for c in (-1, 0, 1)}
    divisors = texts(fig, "divisor")
    assert (divisors[(0, 0)], divisors[(0, 2)], divisors[(2, 2)]) == ("÷9", "÷6", "÷4")
    assert marked(fig, "extra") == {(r, c) for r in range(3) for c in range(3) if 2 in (r, c)}


def test_ceil_mode_adds_no_output_that_would_start_in_the_end_padding():
    # input 4, window 2, stride 2, end padding 1: the remainder is 1, but the extra window
    # would start at 4, in the end padding (ONNX's and PyTorch's rule): no F + 1, no phantom
    fig = dmlops.explain("max_pooling", (1, 1, 4), 2, strides=2, end_padding=1, ceil_mode=True)
    assert marked(fig, "phantom") == set()
    assert marked(fig, "extra") == set()
    assert marked(fig, "output") == {(0,), (1,)}
    assert marked(fig, "padding") == {(4,)}


@pytest.mark.parametrize("include, expected", [(False, ["÷2", "÷3", "÷2"]),
                                               (True, ["÷3", "÷3", "÷3"])])
def test_include_padding_divisors(include, expected):
    fig = dmlops.explain("average_pooling", (1, 1, 3), 3, start_padding=1, end_padding=1,
                         include_padding=include)
    got = texts(fig, "divisor")
    assert [got[(o,)] for o in range(3)] == expected
    labels = texts(fig, "label")
    assert labels[(0,)] == f"output (0), divisor {expected[0][1:]}"


def test_dilation_leaves_holes_and_default_outputs_are_first_middle_last():
    # window 2 with dilation 3: offsets 0 and 3; F = (7 - 4) + 1 = 4 outputs
    fig = dmlops.explain("max_pooling", (1, 1, 7), 2, dilations=3)
    assert windows(fig) == {(0,), (2,), (3,)}
    assert window(fig, (0,)) == {(0,), (3,)}
    assert window(fig, (2,)) == {(2,), (5,)}
    assert window(fig, (3,)) == {(3,), (6,)}
    assert texts(fig, "divisor") == {}          # max pooling has none


def test_chosen_outputs_and_negative_indices():
    fig = dmlops.explain("lp_pooling", (1, 1, 4, 4), 2, outputs=[(0, 1), (-1, -1)])
    assert windows(fig) == {(0, 1), (2, 2)}
    assert marked(fig, "chosen") == {(0, 1), (2, 2)}


def test_padding_that_never_wins_is_labelled():
    # a window of padding alone: max pooling gives -inf there, average pooling +0.0
    fig = dmlops.explain("max_pooling", (1, 1, 2), 2, start_padding=2, outputs=[(0,)])
    assert window(fig, (0,)) == {(-2,), (-1,)}
    assert texts(fig, "label")[(0,)] == "output (0), no real element: -inf"


def test_gradients_draw_the_forward_windows():
    forward = geometry("average_pooling", (1, 1, 5), 2, strides=2, include_padding=True,
                       ceil_mode=True)
    grad = geometry("average_pooling_grad", (1, 1, 3), 2, input_sizes=(5,), strides=2,
                    include_padding=True)
    assert grad.kinds == forward.kinds and grad.divisors == forward.divisors
    assert [w.cells for w in grad.windows] == [w.cells for w in forward.windows]
    mgrad = geometry("max_pooling_grad", (1, 1, 5), (1, 1, 3), 2, strides=2)
    assert mgrad.kinds == forward.kinds
    assert [w.cells for w in mgrad.windows] == [w.cells for w in forward.windows]


def test_quantized_average_pooling_has_divisors():
    g = geometry("quantized_linear_average_pooling", (1, 1, 3, 3), 1.0, 0, 1.0, 0, 2,
                 end_padding=1, strides=2)
    assert g.divisors == {(0, 0): 4, (0, 1): 2, (1, 0): 2, (1, 1): 1}


def test_three_spatial_dimensions_draw_the_last_two():
    # the first spatial dimension is taken at output 0: its window (input 0 and one start
    # padding position) multiplies every divisor by 1 (real only) or 2 (with padding)
    for include, factor in ((False, 1), (True, 2)):
        g = geometry("average_pooling", (1, 1, 3, 4, 4), 2, start_padding=(1, 0, 0),
                     include_padding=include)
        assert set(len(c) for c in g.kinds) == {2}
        assert g.sizes == (4, 4) and g.output_sizes == (3, 3)
        assert g.divisors[(0, 0)] == 4 * factor
    assert any("last two of 3 spatial dimensions" in n for n in g.notes)


def test_values_are_written_into_the_cells():
    x = np.arange(1, 10).reshape(3, 3)
    fig = dmlops.explain("average_pooling", (1, 1, 3, 3), 2, values=x)
    assert texts(fig, "value") == {(r, c): str(x[r, c]) for r in range(3) for c in range(3)}
    fig = dmlops.explain("padding", (3,), 2, 1, mode="symmetric", values=[7, 8, 9])
    assert [texts(fig, "value")[(i,)] for i in range(-2, 4)] == ["8", "7", "7", "8", "9", "9"]


# --------------------------------------------------------------------------------------------
# padding: the element every cell copies, mode by mode, pads wider than the input

NUMPY_MODES = {"edge": "edge", "reflection": "reflect", "symmetric": "symmetric",
               "wrap": "wrap"}


@pytest.mark.parametrize("mode, expected", [
    # input 3, pads 5 + 5: wider than the input on both sides
    ("reflection", [1, 0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2, 1]),
    ("symmetric", [1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0, 0, 1]),
    ("wrap", [1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1]),
    ("edge", [0, 0, 0, 0, 0, 0, 1, 2, 2, 2, 2, 2, 2]),
])
def test_padding_sources_wider_than_the_input(mode, expected):
    fig = dmlops.explain("padding", (3,), 5, 5, mode=mode)
    got = texts(fig, "source")
    assert [got[(x,)] for x in range(-5, 8)] == [str(v) for v in expected]
    assert marked(fig, "input") == {(0,), (1,), (2,)}
    assert marked(fig, "padding") == {(x,) for x in range(-5, 8)} - {(0,), (1,), (2,)}
    assert expected == np.pad(np.arange(3), 5, mode=NUMPY_MODES[mode]).tolist()


def test_constant_padding_copies_nothing():
    fig = dmlops.explain("padding", (2, 2), 1, 1, mode="constant", value=7)
    assert set(texts(fig, "constant")) == marked(fig, "padding")
    assert set(texts(fig, "constant").values()) == {"7"}
    assert texts(fig, "source") == {(r, c): f"{r},{c}" for r in range(2) for c in range(2)}


@pytest.mark.parametrize("mode", ["edge", "reflection", "symmetric", "wrap", "constant"])
def test_padding_geometry_agrees_with_np_pad_and_dmlops_padding(mode):
    # every drawn cell's source, on inputs 2-D and 4-D with pads up to three times the input
    rng = np.random.default_rng(7)
    for _ in range(25):
        sizes = tuple(int(v) for v in rng.integers(2, 5, size=2))
        start = tuple(int(v) for v in rng.integers(0, 3 * min(sizes) + 1, size=2))
        end = tuple(int(v) for v in rng.integers(0, 3 * min(sizes) + 1, size=2))
        g = geometry("padding", (1, 1) + sizes, (0, 0) + start, (0, 0) + end, mode=mode)
        flat = np.arange(np.prod(sizes)).reshape(sizes)
        if mode == "constant":
            want = np.pad(flat, tuple(zip(start, end)), constant_values=-1)
        else:
            want = np.pad(flat, tuple(zip(start, end)), mode=NUMPY_MODES[mode])
        lib = dmlops.padding(flat.reshape((1, 1) + sizes), (0, 0) + start, (0, 0) + end,
                             mode=mode, value=-1)[0, 0]
        got = np.full(want.shape, -1)
        for (r, c), src in g.sources.items():
            if src is not None:
                got[r + start[0], c + start[1]] = np.ravel_multi_index(src, sizes)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, lib)


def test_padding_spec_example_reflection():
    # SPEC 3.9: input 4 x 4, StartPadding {1, 2}, EndPadding {3, 4}, REFLECTION
    x = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8]])
    g = geometry("padding", (1, 1, 4, 4), (0, 0, 1, 2), (0, 0, 3, 4), mode="reflection",
                 values=x)
    rows = [[int(x[g.sources[(r, c)]]) for c in range(-2, 8)] for r in range(-1, 7)]
    assert rows == [[7, 6, 5, 6, 7, 8, 7, 6, 5, 6], [3, 2, 1, 2, 3, 4, 3, 2, 1, 2]] * 4


# --------------------------------------------------------------------------------------------
# cross-check: the windows and divisors reproduce what the functions compute

def _cases(seed: int, count: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        k = int(rng.integers(1, 3))
        sizes = tuple(int(v) for v in rng.integers(1, 7, size=k))
        window = tuple(int(v) for v in rng.integers(1, 4, size=k))
        dilations = tuple(int(v) for v in rng.integers(1, 3, size=k))
        strides = tuple(int(v) for v in rng.integers(1, 4, size=k))
        start = tuple(int(v) for v in rng.integers(0, 3, size=k))
        end = tuple(int(v) for v in rng.integers(0, 3, size=k))
        if any((w - 1) * d + 1 > s + a + b
               for w, d, s, a, b in zip(window, dilations, sizes, start, end)):
            continue
        kw = dict(strides=strides, start_padding=start, end_padding=end,
                  dilations=dilations, ceil_mode=bool(rng.integers(0, 2)))
        yield (1, 1) + sizes, window, kw, rng.standard_normal((1, 1) + sizes)


@pytest.mark.parametrize("include", [False, True])
def test_windows_and_divisors_reproduce_average_pooling(include):
    seen = 0
    for sizes, window, kw, x in _cases(11 + include, 120):
        probe = geometry("average_pooling", sizes, window, include_padding=include, **kw)
        every = list(np.ndindex(*probe.output_sizes))
        g = geometry("average_pooling", sizes, window, include_padding=include,
                     outputs=every, **kw)
        y = dmlops.average_pooling(x.astype(np.float64), window, include_padding=include,
                                   output_sizes=g.output_sizes,
                                   **{k: v for k, v in kw.items() if k != "ceil_mode"})
        plane = x[0, 0]
        for w in g.windows:
            real = [c for c in w.cells if g.kinds[c] == "input"]
            assert len(real) == w.real
            want = sum(plane[c] for c in real) / w.divisor if w.divisor else 0.0
            assert y[(0, 0) + w.output] == pytest.approx(want, abs=1e-12), (sizes, window, kw)
            assert g.divisors[w.output] == w.divisor
            seen += 1
    assert seen > 200


def test_windows_reproduce_max_pooling():
    for sizes, window, kw, x in _cases(5, 80):
        probe = geometry("max_pooling", sizes, window, **kw)
        g = geometry("max_pooling", sizes, window,
                     outputs=list(np.ndindex(*probe.output_sizes)), **kw)
        y = dmlops.max_pooling(x, window, output_sizes=g.output_sizes,
                               **{k: v for k, v in kw.items() if k != "ceil_mode"})
        for w in g.windows:
            real = [x[0, 0][c] for c in w.cells if g.kinds[c] == "input"]
            assert y[(0, 0) + w.output] == (max(real) if real else -np.inf)


# --------------------------------------------------------------------------------------------
# the character diagram

def test_text_diagram_of_ceil_mode():
    text = dmlops.explain_text("average_pooling", (1, 1, 5), 2, strides=2, ceil_mode=True,
                               include_padding=True)
    lines = text.splitlines()
    assert lines[0] == ("average_pooling: window_size [2], strides [2], start_padding [0], "
                        "end_padding [0], include_padding true")
    assert "F + 1 in dimension 2: ceil mode" in lines[1]
    assert lines[3:6] == ["    A output (0), divisor 2", "    B output (1), divisor 2",
                          "    C output (2), divisor 1, 1 phantom"]
    assert lines[6].split() == ["|", "0", "1", "2", "3", "4", "|", "5"]
    assert lines[7].split() == ["|", ".A", ".A", ".B", ".B", ".C", "|", "xC"]
    assert lines[-1].split() == ["2", "2", "1"]


def test_text_diagram_of_2d_padding():
    text = dmlops.explain_text("padding", (2, 2), (1, 0), (0, 3), mode="wrap")
    lines = text.splitlines()
    assert lines[2] == "  dimension 1: pads wider than the input (n = 2): wrap repeats every n = 2"
    rows = [line.split() for line in lines[lines.index("  input index copied:") + 1:]]
    assert rows[0] == ["|", "0", "1", "|", "2", "3", "4"]
    assert rows[1] == ["-1", "|", "1,0", "1,1", "|", "1,0", "1,1", "1,0"]
    assert rows[3] == ["0", "|", "0,0", "0,1", "|", "0,0", "0,1", "0,0"]


# --------------------------------------------------------------------------------------------
# errors

def test_missing_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(UnsupportedError, match=r'^max_pooling: .*pip install "dmlops\[plot\]"'):
        dmlops.explain("max_pooling", (1, 1, 4, 4), 2)
    # the character diagram needs none
    assert dmlops.explain_text("max_pooling", (1, 1, 4, 4), 2).startswith("max_pooling:")


def test_import_dmlops_does_not_import_matplotlib():
    code = "import sys, dmlops; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""})
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("call, error, message", [
    (lambda: dmlops.explain("max_unpooling", (1, 1, 2, 2)), UnsupportedError,
     "no sliding window or padding"),
    (lambda: dmlops.explain("conv", (1, 1, 2, 2), 2), UnsupportedError,
     "not an operator explain draws"),
    (lambda: dmlops.explain("average_pooling", (1, 1, 4, 4), 5), InvalidArgumentError,
     r"^average_pooling: window_size\[0\] = 5 does not fit"),
    (lambda: dmlops.explain("average_pooling", (1, 1, 4, 4), 2, stride=2),
     InvalidArgumentError, "stride"),
    (lambda: dmlops.explain("average_pooling", (1, 1, 4, 4), 2, out=None),
     InvalidArgumentError, "out is not a geometry keyword"),
    (lambda: dmlops.explain("average_pooling", (1, 1, 4, 4), 2, outputs=[(3, 0)]),
     InvalidArgumentError, r"outputs\[0\]\[0\] = 3 is outside"),
    (lambda: dmlops.explain("average_pooling", (1, 1, 5), 2, output_sizes=3, ceil_mode=True),
     InvalidArgumentError, "not both"),
    (lambda: dmlops.explain("padding", (3,), 1, 1, ceil_mode=True), InvalidArgumentError,
     "ceil_mode applies"),
    (lambda: dmlops.explain("padding", (1, 3), 1, 1, mode="reflection"), InvalidArgumentError,
     "REFLECTION cannot pad dimension 0 of size 1"),
    (lambda: dmlops.explain("average_pooling", (1, 1, 200), 2), InvalidArgumentError,
     "at most 64 per dimension"),
    (lambda: dmlops.explain("average_pooling", (1, 1, 3), 2, values=[1, 2]),
     InvalidArgumentError, r"values has shape \(2,\)"),
    (lambda: dmlops.explain("average_pooling", (1, 1, 4), 2, ceil_mode="yes"),
     InvalidArgumentError, "ceil_mode = 'yes' must be a bool"),
    (lambda: dmlops.explain_text("average_pooling", (1, 1, 2**62, 4), 2),
     InvalidArgumentError, r"input_sizes = \[1, 1, 4611686018427387904, 4\] is more than an "
                           r"array can hold"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


# --------------------------------------------------------------------------------------------
# dmlops explain MODEL.json

def test_cli_writes_a_picture_and_prints_the_diagram(capsys, tmp_path):
    target = tmp_path / "ceil.png"
    rc, out, err = run_cli(capsys, "explain", str(EXAMPLES / "explain_ceil_mode.json"),
                           "-o", str(target), "--text")
    assert (rc, err) == (0, "")
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert list(tmp_path.iterdir()) == [target]
    assert "ceil_exclude (DML_OPERATOR_AVERAGE_POOLING): WindowSize [3, 3]" in out
    assert "ceil_include (DML_OPERATOR_AVERAGE_POOLING)" in out
    assert "IncludePadding true" in out


def test_cli_model_geometry_has_the_models_sizes_and_values():
    (g,), _ = _model("explain_ceil_mode.json", "ceil_include")
    assert g.output_sizes == (3, 3) and g.floor_sizes == (2, 2)
    assert g.divisors[(2, 2)] == 4
    assert g.values.tolist() == np.arange(1, 17).reshape(4, 4).tolist()
    pads, _ = _model("explain_padding_modes.json", None)
    assert [p.title.split()[0] for p in pads] == ["constant", "edge", "reflection", "symmetric",
                                                  "wrap"]
    assert [pads[2].sources[(x,)] for x in range(-5, 0)] == [(1,), (0,), (1,), (2,), (1,)]


def _model(name, dispatch):
    from dmlops._explain import model_geometries
    return model_geometries(load_model(EXAMPLES / name), dispatch)


def test_cli_text_needs_no_matplotlib(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    model = str(EXAMPLES / "explain_padding_modes.json")
    rc, out, err = run_cli(capsys, "explain", model, "--dispatch", "wrap", "--text")
    assert (rc, err) == (0, "")
    assert out.startswith("wrap (DML_OPERATOR_PADDING1): PaddingMode wrap")
    target = tmp_path / "p.png"
    rc, out, err = run_cli(capsys, "explain", model, "-o", str(target))
    assert rc == 2 and out == ""
    assert err.startswith("dmlops explain: error: ") and 'pip install "dmlops[plot]"' in err
    assert err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, message", [
    (["--dispatch", "nope", "--text"], "--dispatch: no dispatchable named 'nope'"),
    (["-o", "{tmp}/p.xyz"], "Matplotlib writes no .xyz pictures"),
    (["-o", "{tmp}/missing/p.png"], "FileNotFoundError"),
    ([], "give -o PICTURE.png, --text or both"),
])
def test_cli_errors_exit_2_and_write_nothing(capsys, tmp_path, args, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    rc, out, err = run_cli(capsys, "explain", str(EXAMPLES / "explain_ceil_mode.json"), *args)
    assert rc == 2 and out == ""
    assert err.startswith("dmlops explain: error: ") and message in err
    assert err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_cli_leaves_out_what_it_cannot_draw(capsys, tmp_path):
    model = json.loads((EXAMPLES / "roi_pooling.json").read_text())
    pool = json.loads((EXAMPLES / "average_pooling.json").read_text())
    (name,) = model["dispatchables"]
    model["dispatchables"]["avg"] = pool["dispatchables"]["avg_2x2"]
    model["resources"]["avg_out"] = pool["resources"]["output"]
    model["commands"].append({"type": "dispatch", "dispatchable": "avg", "bindings": {
        "InputTensor": {"name": "input", "elementCount": 9}, "OutputTensor": "avg_out"}})
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(model))
    rc, out, err = run_cli(capsys, "explain", str(path), "--text")
    assert rc == 0
    assert err == (f"dmlops explain: left out dispatchables.{name}: DML_OPERATOR_ROI_POOLING "
                   f"has no sliding window or padding to draw\n")
    assert out.startswith("avg (DML_OPERATOR_AVERAGE_POOLING)")
    assert out.count("DML_OPERATOR") == 1
    rc, out, err = run_cli(capsys, "explain", str(path), "--text", "--dispatch", name)
    assert rc == 2 and "has no sliding window" in err


def test_cli_model_too_large_to_draw(capsys, tmp_path):
    model = json.loads((EXAMPLES / "average_pooling.json").read_text())
    desc = model["dispatchables"]["avg_2x2"]["desc"]
    desc["InputTensor"]["Sizes"] = [1, 1, 3, 100]
    desc["OutputTensor"]["Sizes"] = [1, 1, 2, 99]
    model["resources"]["input"]["initialValues"]["valueCount"] = 300
    model["resources"]["output"]["initialValues"]["valueCount"] = 198
    path = tmp_path / "big.json"
    path.write_text(json.dumps(model))
    rc, out, err = run_cli(capsys, "explain", str(path), "--dispatch", "avg_2x2", "--text")
    assert rc == 2
    assert err.startswith("dmlops explain: error: dispatchables.avg_2x2: this input with its "
                          "padding would draw 3 x 100 cells")


def test_readme_pictures_and_diagram_are_the_commands(capsys):
    readme = (ROOT / "README.md").read_text()
    for name in ("explain_ceil_mode", "explain_padding_modes"):
        picture = ROOT / "docs" / f"{name}.png"
        assert f"dmlops explain examples/{name}.json -o docs/{name}.png" in readme
        assert f"](docs/{name}.png)" in readme
        assert picture.read_bytes()[:4] == b"\x89PNG" and picture.stat().st_size < 150_000
    command = "dmlops explain examples/explain_padding_modes.json --dispatch symmetric --text"
    block = readme.split(f"$ {command}\n", 1)[1].split("```", 1)[0]
    rc, out, _ = run_cli(capsys, *command.split()[1:2],
                         str(ROOT / command.split()[2]), *command.split()[3:])
    assert rc == 0 and out == block
