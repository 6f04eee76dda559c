"""The ``dmlops`` command and its DxDispatch model runner (SPEC 6, SPEC 7 "dmlops run").

Every example model runs and prints the SPEC's numbers; bad models exit with code 2, name the
JSON location of the problem, and write no file.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dmlops
from dmlops.cli import main
from dmlops.dxdispatch import ModelError, load_model, parse_model

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


# --------------------------------------------------------------------------------------------
# helpers

def run_cli(capsys, *args):
    rc = main(list(args))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def printed(out: str) -> dict:
    """``name: v1, v2, ...`` lines -> {name: [numbers]} (integers stay exact)."""
    found = {}
    for line in out.splitlines():
        name, sep, values = line.partition(": ")
        if sep:
            found[name] = [int(v) if v.lstrip("-").isdigit() else float(v)
                           for v in values.split(", ")]
    return found


def rows(*parts):
    """Concatenate rows given as lists, or as (row, repeat) pairs."""
    out = []
    for p in parts:
        if isinstance(p, tuple):
            out += p[0] * p[1]
        else:
            out += p
    return out


def write_model(tmp_path, model, name="model.json") -> Path:
    path = tmp_path / name
    path.write_text(model if isinstance(model, str) else json.dumps(model, indent=1))
    return path


def example(name) -> dict:
    return json.loads((EXAMPLES / name).read_text())


# --------------------------------------------------------------------------------------------
# every example, with the SPEC's literal numbers

N9 = [9] * 10
EDGE_1 = [1, 1, 1, 2, 3, 4, 4, 4, 4, 4]
EDGE_5 = [5, 5, 5, 6, 7, 8, 8, 8, 8, 8]
REFL_7 = [7, 6, 5, 6, 7, 8, 7, 6, 5, 6]
REFL_3 = [3, 2, 1, 2, 3, 4, 3, 2, 1, 2]
SYM_2 = [2, 1, 1, 2, 3, 4, 4, 3, 2, 1]
SYM_6 = [6, 5, 5, 6, 7, 8, 8, 7, 6, 5]
WRAP_7 = [7, 8, 5, 6, 7, 8, 5, 6, 7, 8]
WRAP_3 = [3, 4, 1, 2, 3, 4, 1, 2, 3, 4]

EXPECTED = {
    # SPEC 3.1: 2x2 window, stride 1, [[1,2,3],[4,5,6],[7,8,9]] -> [[3,4],[6,7]]; plus an end
    # padding of 1 with stride 2, padding excluded from / included in the divisor.
    "average_pooling.json": {
        "input": [1, 2, 3, 4, 5, 6, 7, 8, 9],
        "output": [3, 4, 6, 7],
        "avg_exclude": [3, 4.5, 7.5, 9],
        "avg_include": [3, 2.25, 3.75, 2.25],
    },
    # 2x2 window with dilation 2 over 1..16 (4x4): windows {1,3,9,11}, {2,4,10,12}, ...
    "average_pooling1_dilations.json": {"output": [6, 7, 10, 11]},
    # SPEC 3.3's arithmetic: (sum(x - 10) * 0.5 / 4) / 2, rounded half to even, + 5:
    # 5 -> 10, 7.5 -> 8 -> 13, 12.5 -> 12 -> 17, 15 -> 20
    "quantized_linear_average_pooling.json": {"output": [10, 13, 17, 20]},
    # padding never wins, even against negative values
    "max_pooling.json": {"output": [-1, -2, -4, -5]},
    # flat indices count the channel; ties go to the lowest index (7 at 4, 5 and 7 -> 4)
    "max_pooling1.json": {"values": [5, 7], "indices": [1, 4]},
    # SPEC 3.4
    "max_pooling2_indices.json": {"input": [1, 2, 3, 2, 4, 2, 5, 6, 7],
                                  "values": [4, 4, 6, 7], "indices": [4, 4, 7, 8]},
    # channels-last input (strides), ceil-mode output size F + 1
    "max_pooling2_channels_last_write_file.json": {
        "values": [8, 10, 14, 16, 9, 11, 15, 17], "indices": [4, 5, 7, 8, 13, 14, 16, 17]},
    # SPEC 3.5
    "max_pooling_grad.json": {"input_gradient": [1, 2, 4, 5],
                              "output_gradient": [0, 0, 0, 0, 3, 0, 0, 4, 5]},
    # SPEC 3.9's four examples
    "padding_constant.json": {"output": rows(N9, [9, 9, 1, 2, 3, 4, 9, 9, 9, 9],
                                             [9, 9, 5, 6, 7, 8, 9, 9, 9, 9],
                                             [9, 9, 1, 2, 3, 4, 9, 9, 9, 9],
                                             [9, 9, 5, 6, 7, 8, 9, 9, 9, 9], (N9, 3))},
    "padding_edge.json": {"output": rows((EDGE_1, 2), EDGE_5, EDGE_1, (EDGE_5, 4))},
    "padding_reflection.json": {"output": rows((REFL_7 + REFL_3, 4))},
    "padding_symmetric.json": {"output": rows(SYM_2, SYM_2, SYM_6, SYM_2, SYM_6, SYM_6, SYM_2,
                                              SYM_6)},
    # WRAP: x mod n in each dimension (rows 3,0,1,2,3,0,1,2; columns 2,3,0,1,...)
    "padding1_wrap.json": {"output": rows((WRAP_7 + WRAP_3, 4))},
    # a FLOAT16 PaddingValue given as a number is a value
    "padding1_float16.json": {"output": rows([0.5] * 5, [1, 2, 0.5, 0.5, 3, 4], [0.5] * 5)},
    # SPEC 3.2
    "average_pooling_grad.json": {"output_gradient": [0.25, 0.75, 0.5, 1, 2.5, 1.5, 0.75,
                                                      1.75, 1]},
    # P = 2 over [[1,0,3],[0,0,4],[6,8,8]]: 1, sqrt(9+16), sqrt(36+64), sqrt(16+64+64)
    "lp_pooling.json": {"output": [1, 5, 10, 12]},
    # P = 1, dilation 2 over -1..-16: |x| summed over {1,3,9,11}, {2,4,10,12}, ...
    "lp_pooling1_dilations.json": {"output": [24, 28, 40, 44]},
    # max pooling's indices fed to unpooling: each maximum back in its place, zeros elsewhere
    "max_unpooling.json": {"indices": [1, 6, 8, 15],
                           "unpooled": [0, 9, 0, 0, 0, 0, 8, 0, 7, 0, 0, 0, 0, 0, 0, 9]},
    # 0..15 (4x4): the whole input in 2x2 bins, then the 2x2 region at (1, 1) in 1x1 bins
    "roi_pooling.json": {"output": [5, 7, 13, 15, 5, 6, 9, 10]},
    # the README's pictures (dmlops explain). 1..16 (4x4), 3x3 window, stride 2, padding
    # 1 + 1, output 3 x 3 (F + 1): the last window is input 16, padding and phantom cells
    # (divisor 1 without padding, 4 with: 16 / 4); the first [1, 2, 5, 6] / 4 or / 9
    "explain_ceil_mode.json": {"avg_exclude": [3.5, 5, 6, 9.5, 11, 12, 13.5, 15, 16],
                               "avg_include": [1.5555556, 3.3333333, 2, 6.3333335, 11, 6, 4.5,
                                               7.5, 4]},
    # [1, 2, 3] padded 5 + 5, wider than the input, mode by mode
    "explain_padding_modes.json": {"reflection": [2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2],
                                   "constant": [0] * 5 + [1, 2, 3] + [0] * 5,
                                   "edge": [1] * 6 + [2] + [3] * 6,
                                   "symmetric": [2, 3, 3, 2, 1, 1, 2, 3, 3, 2, 1, 1, 2],
                                   "wrap": [2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2]},
}


def test_every_example_has_expectations():
    assert sorted(p.name for p in EXAMPLES.glob("*.json")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example(name, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)          # writeFile targets land here
    rc, out, err = run_cli(capsys, "run", str(EXAMPLES / name))
    assert (rc, err) == (0, "")
    got = printed(out)
    for resource, values in EXPECTED[name].items():
        assert got[resource] == values, resource


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_at_feature_level_6_4(name, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, out, err = run_cli(capsys, "run", str(EXAMPLES / name), "--feature-level", "6.4")
    assert (rc, err) == (0, "")
    assert printed(out)[next(iter(EXPECTED[name]))] == next(iter(EXPECTED[name].values()))


def test_example_write_file(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, _, err = run_cli(capsys, "run", str(EXAMPLES / "max_pooling2_channels_last_write_file.json"))
    assert (rc, err) == (0, "")
    values = np.load(tmp_path / "max_pooling2_values.npy")
    indices = np.load(tmp_path / "max_pooling2_indices.npy")
    assert values.dtype == np.float32 and indices.dtype == np.uint32
    np.testing.assert_array_equal(values, np.array([[[[8, 10], [14, 16]], [[9, 11], [15, 17]]]],
                                                   np.float32))
    np.testing.assert_array_equal(indices, np.array([[[[4, 5], [7, 8]], [[13, 14], [16, 17]]]],
                                                    np.uint32))
    # the same numbers as the functional API (channels-last input, ceil-mode output size)
    x = np.arange(18, dtype=np.float32).reshape(1, 3, 3, 2).transpose(0, 3, 1, 2)
    y, i = dmlops.max_pooling(x, 2, strides=2, output_sizes=(2, 2), output_indices=True)
    np.testing.assert_array_equal(values, y)
    np.testing.assert_array_equal(indices, i)


def test_python_dash_m(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"),
                                                      env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-m", "dmlops", "run",
                           str(EXAMPLES / "max_pooling2_indices.json")],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert printed(proc.stdout) == EXPECTED["max_pooling2_indices.json"]
    bad = write_model(tmp_path, "{")
    proc = subprocess.run([sys.executable, "-m", "dmlops", "run", str(bad)], capture_output=True,
                          text=True, cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == 2
    assert "invalid JSON" in proc.stderr and "Traceback" not in proc.stderr


def test_version_and_info(capsys):
    rc, out, _ = run_cli(capsys, "--version")
    assert rc == 0 and out.strip() == f"dmlops {dmlops.__version__}"
    rc, out, _ = run_cli(capsys, "info")
    assert rc == 0
    assert f"backends: {', '.join(dmlops.backends())}" in out
    levels = "1.0, 2.0, 2.1, 3.0, 3.1, 4.0, 4.1, 5.0, 5.1, 5.2, 6.0, 6.1, 6.2, 6.3, 6.4"
    assert levels in out
    for t in dmlops.DataType:
        assert t.name in out
    for name in dmlops.DESC_CLASSES:
        assert f"DML_OPERATOR_{name} " in out


def test_usage_errors_exit_2(capsys):
    assert run_cli(capsys, "run")[0] == 2
    assert run_cli(capsys, "frobnicate")[0] == 2
    assert run_cli(capsys)[0] == 2
    assert run_cli(capsys, "--help")[0] == 0


def test_missing_model_file(capsys, tmp_path):
    rc, _, err = run_cli(capsys, "run", str(tmp_path / "nope.json"))
    assert rc == 2 and "nope.json: no such file" in err


# --------------------------------------------------------------------------------------------
# bad models: exit code 2, the JSON location, no file written

def base_model():
    """The main example plus a writeFile, so that a failing model could write a file."""
    m = example("max_pooling2_indices.json")
    m["commands"].append({"type": "writeFile", "targetPath": "out.npy", "resource": "values"})
    return m


def desc(m):
    return m["dispatchables"]["max_pool"]["desc"]


def bindings(m):
    return m["commands"][0]["bindings"]


def padding_model():
    m = example("padding_constant.json")
    m["commands"].append({"type": "writeFile", "targetPath": "out.npy", "resource": "output"})
    return m


def quantized_model():
    m = example("quantized_linear_average_pooling.json")
    m["commands"].append({"type": "writeFile", "targetPath": "out.npy", "resource": "output"})
    return m


def _set(path_fn, **kv):
    def mutate(m):
        path_fn(m).update(kv)
    return mutate


def _zero_scale_in_later_dispatch(m):
    m["resources"]["zero"] = {"initialValuesDataType": "FLOAT32", "initialValues": [0]}
    later = copy.deepcopy(m["commands"][0])
    later["bindings"]["InputScaleTensor"] = "zero"
    m["commands"].append(later)          # commands[3]: after a print and a writeFile


BAD = {
    "unknown key": (base_model, _set(desc, Foo=1),
                    "dispatchables.max_pool.desc.Foo", "unknown key"),
    "wrong case key": (base_model, _set(desc, windowSize=[2, 2]),
                       "dispatchables.max_pool.desc.windowSize", "did you mean 'WindowSize'"),
    "WindowSize length": (base_model, _set(desc, WindowSize=[2, 2, 2]),
                          "dispatchables.max_pool.desc.WindowSize", "3 values"),
    "WindowSize too large": (base_model, _set(desc, WindowSize=[4, 4]),
                             "dispatchables.max_pool.desc.WindowSize[0]", "does not fit"),
    "output size": (base_model, _set(lambda m: desc(m)["OutputTensor"], Sizes=[1, 1, 1, 2]),
                    "dispatchables.max_pool.desc.OutputTensor.Sizes[2]", "does not fit"),
    "missing field": (base_model, lambda m: desc(m).pop("Strides"),
                      "dispatchables.max_pool.desc.Strides", "missing"),
    "DimensionCount": (base_model, _set(desc, DimensionCount=3),
                       "dispatchables.max_pool.desc.DimensionCount", "does not match"),
    "tensor DimensionCount": (base_model,
                              _set(lambda m: desc(m)["InputTensor"], DimensionCount=5),
                              "dispatchables.max_pool.desc.InputTensor.DimensionCount",
                              "does not match"),
    "TotalTensorSizeInBytes": (base_model,
                               _set(lambda m: desc(m)["InputTensor"], TotalTensorSizeInBytes=32),
                               "dispatchables.max_pool.desc.InputTensor.TotalTensorSizeInBytes",
                               "36"),
    "tensor DataType": (base_model, _set(lambda m: desc(m)["InputTensor"], DataType="FLOAT33"),
                        "dispatchables.max_pool.desc.InputTensor.DataType", "not a data type"),
    "type mismatch": (base_model, _set(lambda m: desc(m)["OutputTensor"], DataType="FLOAT16"),
                      "dispatchables.max_pool.desc.OutputTensor.DataType", "must match"),
    "indices type": (base_model,
                     _set(lambda m: desc(m)["OutputIndicesTensor"], DataType="INT8"),
                     "dispatchables.max_pool.desc.OutputIndicesTensor.DataType", "INT8"),
    "unknown operator": (base_model,
                         _set(lambda m: m["dispatchables"]["max_pool"], type="DML_OPERATOR_CONV"),
                         "dispatchables.max_pool.type", "not an operator"),
    "unknown resource in bindings": (base_model, _set(bindings, InputTensor="nope"),
                                     "commands[0].bindings.InputTensor", "no resource named"),
    "missing binding": (base_model, lambda m: bindings(m).pop("OutputTensor"),
                        "commands[0].bindings.OutputTensor", "nothing bound"),
    "unknown bind point": (base_model, _set(bindings, FilterTensor="input"),
                           "commands[0].bindings.FilterTensor", "no bind point"),
    "resource too small": (base_model,
                           _set(lambda m: m["resources"]["input"], initialValues=[1, 2, 3]),
                           "commands[0].bindings.InputTensor", "needs 36"),
    "binding past the end": (base_model,
                             _set(bindings, InputTensor={"name": "input", "elementOffset": 1}),
                             "commands[0].bindings.InputTensor", "needs 36"),
    "output overlaps input": (base_model, _set(bindings, OutputTensor="input"),
                              "commands[0].bindings.OutputTensor", "in place"),
    "sizeInBytes smaller": (base_model, _set(lambda m: m["resources"]["input"], sizeInBytes=32),
                            "resources.input.sizeInBytes", "smaller than the 36 bytes"),
    "resource DataType": (base_model,
                          _set(lambda m: m["resources"]["input"], initialValuesDataType="REAL"),
                          "resources.input.initialValuesDataType", "not a data type"),
    "value out of range": (base_model,
                           _set(lambda m: m["resources"]["indices"], initialValues=[0, -1, 0, 0]),
                           "resources.indices.initialValues[1]", "outside the range of UINT32"),
    "value not a number": (base_model,
                           _set(lambda m: m["resources"]["input"], initialValues=[1, "two"]),
                           "resources.input.initialValues[1]", "expected a number"),
    "sourcePath not found": (base_model,
                             _set(lambda m: m["resources"]["input"],
                                  initialValues={"sourcePath": "missing.npy"}),
                             "resources.input.initialValues.sourcePath", "not found"),
    "unknown command type": (base_model,
                             lambda m: m["commands"].insert(1, {"type": "show", "resource": "x"}),
                             "commands[1].type", "unknown command type"),
    "print unknown resource": (base_model,
                               lambda m: m["commands"].append({"type": "print",
                                                               "resource": "vals"}),
                               "commands[5].resource", "no resource named"),
    "unknown dispatchable": (base_model, _set(lambda m: m["commands"][0], dispatchable="pool"),
                             "commands[0].dispatchable", "no dispatchable named"),
    "writeFile dimensions": (base_model, _set(lambda m: m["commands"][4], dimensions=[2, 3]),
                             "commands[4].dimensions", "holds 4 FLOAT32 elements"),
    "missing commands": (base_model, lambda m: m.pop("commands"), "commands", "missing"),
    "duplicate key": (base_model,
                      lambda m: None,  # made by text replacement below
                      "dispatchables.max_pool.desc.Strides", "given twice"),
    "bad enum": (padding_model, _set(lambda m: m["dispatchables"]["pad"]["desc"],
                                     PaddingMode="DML_PADDING_MODE_MIRROR"),
                 "dispatchables.pad.desc.PaddingMode", "not a DML_PADDING_MODE"),
    "bad BOOL": (quantized_model, _set(lambda m: m["dispatchables"]["qavg"]["desc"],
                                       IncludePadding=2),
                 "dispatchables.qavg.desc.IncludePadding", "true, false, 0 or 1"),
    "optional tensor left out but bound": (
        quantized_model, lambda m: m["dispatchables"]["qavg"]["desc"].pop("InputZeroPointTensor"),
        "commands[0].bindings.InputZeroPointTensor", "leaves this optional tensor out"),
    "failing later command": (quantized_model, _zero_scale_in_later_dispatch,
                              "commands[4].bindings.InputScaleTensor", "greater than 0"),
    # the core's pooled_size[0] is the JSON object's Height
    "pooled size": (lambda: example("roi_pooling.json"),
                    _set(lambda m: m["dispatchables"]["roi_pool"]["desc"],
                         PooledSize={"Width": 2, "Height": 0}),
                    "dispatchables.roi_pool.desc.PooledSize.Height", "at least 1"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_model(case, capsys, tmp_path, monkeypatch):
    make, mutate, where, what = BAD[case]
    m = make()
    mutate(m)
    text = json.dumps(m, indent=1)
    if case == "duplicate key":
        text = text.replace('"Strides": [', '"Strides": [1, 1], "Strides": [', 1)
    monkeypatch.chdir(tmp_path)
    path = write_model(tmp_path, text)
    rc, out, err = run_cli(capsys, "run", str(path))
    assert rc == 2
    assert err.startswith(f"dmlops run: error: {where}: "), err
    assert what in err
    assert "Traceback" not in err
    assert out == ""                # a failing model writes nothing: no print lines either
    assert not (tmp_path / "out.npy").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["model.json"]      # not even a temp file


# The core's error carries its place (field, index): dmlops run locates it from that, not
# from its message's words. A rule text that names another field first, or none at all,
# still lands on the field the error is about; only the labels spelled by the naming rule
# are re-spelled in DirectML's names.
@pytest.mark.parametrize("message, given, text", [
    (lambda n: f"the strides and {n('window_size', 1)} disagree", {},
     "the strides and WindowSize[1] disagree"),
    ("the window does not fit", {"field": "window_size", "index": 1}, "the window does not fit"),
])
def test_json_location_is_the_place_the_error_carries(message, given, text, capsys, tmp_path,
                                                      monkeypatch):
    from dmlops import descs

    def refuse(planner, operands, params):
        raise descs._names(params["desc"]).invalid(message, **given)

    monkeypatch.setattr(descs, "planned", refuse)
    monkeypatch.chdir(tmp_path)
    rc, out, err = run_cli(capsys, "run", str(write_model(tmp_path, base_model())))
    assert (rc, out) == (2, "")
    assert err == f"dmlops run: error: dispatchables.max_pool.desc.WindowSize[1]: {text}\n"


def test_bad_json_names_line_and_column(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = json.dumps(base_model(), indent=1)
    text = text.replace('"WindowSize"', '"WindowSize",', 1)
    path = write_model(tmp_path, text)
    rc, _, err = run_cli(capsys, "run", str(path))
    line = text[:text.index('"WindowSize",')].count("\n") + 1
    assert rc == 2
    assert err.startswith(f"dmlops run: error: {path}:{line}:"), err
    assert "invalid JSON" in err
    assert not (tmp_path / "out.npy").exists()


def test_json_nan_literal_is_rejected(capsys, tmp_path):
    m = base_model()
    text = json.dumps(m).replace("[1, 2, 3, 2, 4, 2, 5, 6, 7]", "[1, 2, 3, 2, NaN, 2, 5, 6, 7]")
    rc, _, err = run_cli(capsys, "run", str(write_model(tmp_path, text)))
    assert rc == 2 and 'write "nan"' in err


@pytest.mark.parametrize("level, name, where, what", [
    ("6.1", "average_pooling1_dilations.json", "dispatchables.dilated_avg.type", "6.2"),
    ("6.3", "padding1_wrap.json", "dispatchables.pad.desc.PaddingMode", "WRAP needs feature level 6.4"),
    ("2.1", "padding_symmetric.json", "dispatchables.pad.desc.PaddingMode", "3.0"),
    ("2.0", "max_pooling2_indices.json", "dispatchables.max_pool.type", "2.1"),
    ("4.1", "max_pooling1.json", "dispatchables.global_max.desc.OutputIndicesTensor.DataType",
     "UINT64"),
    ("4.1", "padding1_float16.json", "dispatchables.pad.type", "5.0"),
])
def test_feature_level_errors(level, name, where, what, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, out, err = run_cli(capsys, "run", str(EXAMPLES / name), "--feature-level", level)
    assert rc == 2 and out == ""
    assert err.startswith(f"dmlops run: error: {where}: "), err
    assert what in err


def test_bad_options(capsys):
    model = str(EXAMPLES / "max_pooling2_indices.json")
    rc, _, err = run_cli(capsys, "run", model, "--feature-level", "7.0")
    assert rc == 2 and err.startswith("dmlops run: error: --feature-level: ")
    rc, _, err = run_cli(capsys, "run", model, "--backend", "nope")
    assert rc == 2 and err.startswith("dmlops run: error: --backend: ")


@pytest.mark.parametrize("backend", dmlops.backends())
def test_backend_option(backend, capsys):
    rc, out, err = run_cli(capsys, "run", str(EXAMPLES / "max_pooling2_indices.json"),
                           "--backend", backend)
    assert (rc, err) == (0, "")
    assert printed(out) == EXPECTED["max_pooling2_indices.json"]


# --------------------------------------------------------------------------------------------
# resources, bindings, print and writeFile

def model(resources, dispatchables=None, commands=()):
    return {"resources": resources, "dispatchables": dispatchables or {},
            "commands": list(commands)}


def run_model_text(capsys, tmp_path, m):
    return run_cli(capsys, "run", str(write_model(tmp_path, m)))


def test_initializers_and_print(capsys, tmp_path):
    m = model({
        "f16": {"initialValuesDataType": "DML_TENSOR_DATA_TYPE_FLOAT16",
                "initialValues": [65504, -4, "nan", "inf", "-inf", 0.5, -0.0]},
        "const": {"initialValuesDataType": "int8", "initialValues": {"valueCount": 3,
                                                                     "value": -128}},
        "seq": {"initialValuesDataType": "FLOAT32",
                "initialValues": {"valueCount": 4, "valueStart": 1, "valueDelta": 2.5}},
        "iseq": {"initialValuesDataType": "UINT64",
                 "initialValues": {"valueCount": 3, "valueStart": 2**64 - 3, "valueDelta": 1}},
        "padded": {"initialValuesDataType": "UINT8", "initialValues": [7], "sizeInBytes": 6},
    }, commands=[{"type": "print", "resource": r}
                 for r in ("f16", "const", "seq", "iseq", "padded")])
    rc, out, err = run_model_text(capsys, tmp_path, m)
    assert (rc, err) == (0, "")
    assert out.splitlines() == [
        "f16: 65504, -4, nan, inf, -inf, 0.5, -0",
        "const: -128, -128, -128",
        "seq: 1, 3.5, 6, 8.5",
        f"iseq: {2**64 - 3}, {2**64 - 2}, {2**64 - 1}",
        "padded: 7",                         # print shows the initialised elements only
    ]


def test_print_verbose(capsys, tmp_path):
    m = model({"a": {"initialValuesDataType": "FLOAT16", "initialValues": [1, -2]}},
              commands=[{"type": "print", "resource": "a", "verbose": True}])
    rc, out, _ = run_model_text(capsys, tmp_path, m)
    assert rc == 0
    assert out.splitlines() == ["a:", "[0] 1 (0x3C00)", "[1] -2 (0xC000)"]


def test_size_in_bytes_rounds_up_and_pads_with_zeros(tmp_path):
    m = model({"a": {"initialValuesDataType": "UINT8", "initialValues": [1, 2, 3],
                     "sizeInBytes": 5},
               "b": {"initialValuesDataType": "FLOAT16", "initialValues": [1, 2, 3]}})
    loaded = parse_model(m, tmp_path)
    assert len(loaded.resources["a"].data) == 8
    assert loaded.resources["a"].data.tolist() == [1, 2, 3, 0, 0, 0, 0, 0]
    assert len(loaded.resources["b"].data) == 8          # 6 bytes, rounded up to 4


def test_write_file_npy_and_raw(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    m = model({"a": {"initialValuesDataType": "INT16", "initialValues": [1, -2, 3],
                     "sizeInBytes": 12}},
              commands=[{"type": "writeFile", "targetPath": "flat.npy", "resource": "a"},
                        {"type": "writeFile", "targetPath": "sub/shaped.npy", "resource": "a",
                         "dimensions": [2, 3]},
                        {"type": "writeFile", "targetPath": "raw.bin", "resource": "a"}])
    rc, out, err = run_model_text(capsys, tmp_path, m)
    assert (rc, out, err) == (0, "", "")
    flat = np.load(tmp_path / "flat.npy")
    assert flat.dtype == np.int16 and flat.tolist() == [1, -2, 3]
    shaped = np.load(tmp_path / "sub" / "shaped.npy")        # dimensions may reach the padding
    assert shaped.tolist() == [[1, -2, 3], [0, 0, 0]]
    assert (tmp_path / "raw.bin").read_bytes() == np.array([1, -2, 3], np.int16).tobytes()


def test_write_file_snapshots_the_resource(capsys, tmp_path, monkeypatch):
    """writeFile writes the values the resource had at that command."""
    monkeypatch.chdir(tmp_path)
    m = example("max_pooling_grad.json")
    m["commands"].insert(0, {"type": "writeFile", "targetPath": "before.npy",
                             "resource": "output_gradient"})
    m["commands"].append({"type": "writeFile", "targetPath": "after.npy",
                          "resource": "output_gradient", "dimensions": [1, 1, 3, 3]})
    rc, _, err = run_model_text(capsys, tmp_path, m)
    assert (rc, err) == (0, "")
    assert np.load(tmp_path / "before.npy").tolist() == [0] * 9
    np.testing.assert_array_equal(np.load(tmp_path / "after.npy"),
                                  np.array([0, 0, 0, 0, 3, 0, 0, 4, 5], np.float32)
                                  .reshape(1, 1, 3, 3))


def test_source_path_model_folder_then_working_directory(capsys, tmp_path, monkeypatch):
    m = example("max_pooling2_indices.json")
    m["resources"]["input"] = {"initialValues": {"sourcePath": "x.npy"}}
    x = np.array([1, 2, 3, 2, 4, 2, 5, 6, 7], np.float32)
    (tmp_path / "models").mkdir()
    (tmp_path / "cwd").mkdir()
    path = write_model(tmp_path / "models", m)
    monkeypatch.chdir(tmp_path / "cwd")
    np.save(tmp_path / "cwd" / "x.npy", x)                   # found in the working directory
    rc, out, err = run_cli(capsys, "run", str(path))
    assert (rc, err) == (0, "")
    assert printed(out)["values"] == [4, 4, 6, 7]
    np.save(tmp_path / "models" / "x.npy", x * 10)           # the model's folder comes first
    rc, out, err = run_cli(capsys, "run", str(path))
    assert printed(out)["values"] == [40, 40, 60, 70]


def test_npy_header_checked_against_the_file_before_allocating(capsys, tmp_path):
    """A .npy whose header claims more values than the file holds (2^60 in 16 bytes) is an
    error naming the file and both sizes, exit 2, with nothing allocated for the claim."""
    fmt = np.lib.format
    for name, shape in (("huge.npy", (2**60,)), ("short.npy", (1000,))):
        with open(tmp_path / name, "wb") as f:
            fmt.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False,
                                           "shape": shape})
            f.write(bytes(16))
        m = example("max_pooling2_indices.json")
        m["resources"]["input"] = {"initialValues": {"sourcePath": name}}
        rc, out, err = run_model_text(capsys, tmp_path, m)
        assert rc == 2 and out == "", err
        assert (f"resources.input.initialValues.sourcePath: {str(tmp_path / name)!r}: its "
                f"header claims {shape[0]} values of float32") in err, err
        assert "the file holds 16 bytes of data" in err and "Traceback" not in err


def test_source_path_raw_and_type_checks(capsys, tmp_path):
    np.array([1, 2, 3, 2, 4, 2, 5, 6, 7], np.float32).tofile(tmp_path / "x.dat")
    np.save(tmp_path / "i.npy", np.arange(9, dtype=np.int32))
    m = example("max_pooling2_indices.json")
    m["resources"]["input"] = {"initialValuesDataType": "FLOAT32",
                               "initialValues": {"sourcePath": "x.dat"}}
    rc, out, err = run_model_text(capsys, tmp_path, m)
    assert (rc, err) == (0, "") and printed(out)["values"] == [4, 4, 6, 7]
    m["resources"]["input"] = {"initialValuesDataType": "FLOAT32",
                               "initialValues": {"sourcePath": "i.npy"}}
    rc, _, err = run_model_text(capsys, tmp_path, m)
    assert rc == 2 and "resources.input.initialValuesDataType: FLOAT32 differs" in err
    m["resources"]["input"] = {"initialValues": {"sourcePath": "x.dat"}}
    rc, _, err = run_model_text(capsys, tmp_path, m)
    assert rc == 2 and "resources.input.initialValuesDataType: missing" in err


def test_bindings_reinterpret_bytes(capsys, tmp_path):
    """A resource is a byte buffer: FLOAT32 bits given as UINT32 are read as floats, and an
    output resource typed UINT32 prints the bits the operator wrote."""
    m = example("max_pooling2_indices.json")
    bits = np.array([1, 2, 3, 2, 4, 2, 5, 6, 7], np.float32).view(np.uint32)
    m["resources"]["input"] = {"initialValuesDataType": "UINT32",
                               "initialValues": bits.tolist()}
    m["resources"]["values"] = {"initialValuesDataType": "UINT32",
                                "initialValues": {"valueCount": 4, "value": 0}}
    rc, out, err = run_model_text(capsys, tmp_path, m)
    assert (rc, err) == (0, "")
    expect = np.array([4, 4, 6, 7], np.float32).view(np.uint32).tolist()
    assert printed(out)["values"] == expect


def test_strided_bindings_with_offsets(capsys, tmp_path):
    """Padded rows, element offsets, and an output that writes only the elements its strides
    address."""
    m = model({
        "big": {"initialValuesDataType": "FLOAT32",
                "initialValues": [-9, -9, 1, 2, 3, -9, 2, 4, 2, -9, 5, 6, 7]},
        "out": {"initialValuesDataType": "FLOAT32",
                "initialValues": {"valueCount": 10, "value": -1}},
    }, {"mp": {"type": "MAX_POOLING", "desc": {
        "InputTensor": {"Type": "DML_TENSOR_TYPE_BUFFER",
                        "Desc": {"DataType": "FLOAT32", "Sizes": [1, 1, 3, 3],
                                 "Strides": [12, 12, 4, 1]}},
        "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 2, 2], "Strides": [4, 4, 3, 1]},
        "Strides": [1, 1], "WindowSize": [2, 2], "StartPadding": [0, 0],
        "EndPadding": [0, 0], "$schema": "ignored"}}},
        [{"type": "dispatch", "dispatchable": "mp",
          "bindings": {"InputTensor": {"name": "big", "elementOffset": 2},
                       "OutputTensor": [{"name": "out", "elementOffset": 2,
                                         "elementCount": 8}]}},
         {"type": "print", "resource": "out"}])
    rc, out, err = run_model_text(capsys, tmp_path, m)
    assert (rc, err) == (0, "")
    assert printed(out)["out"] == [-1, -1, 4, 4, -1, 6, 7, -1, -1, -1]


def test_misaligned_binding(capsys, tmp_path):
    m = example("max_pooling2_indices.json")
    m["resources"]["input"]["initialValuesDataType"] = "FLOAT32"
    m["resources"]["input"]["sizeInBytes"] = 64
    bindings(m)["InputTensor"] = {"name": "input", "elementOffset": 1, "elementStride": 2}
    rc, _, err = run_model_text(capsys, tmp_path, m)
    assert rc == 2
    assert err.startswith("dmlops run: error: commands[0].bindings.InputTensor: starts at byte 2")


def test_chained_dispatches(capsys, tmp_path):
    """An output of one dispatch is the input of the next; one dispatchable runs twice."""
    m = example("padding_edge.json")
    m["resources"]["pooled"] = {"initialValuesDataType": "FLOAT32",
                                "initialValues": {"valueCount": 20, "value": 0}}
    m["dispatchables"]["pool"] = {"type": "MAX_POOLING", "desc": {
        "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 8, 10]},
        "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 4, 5]},
        "DimensionCount": 2, "Strides": [2, 2], "WindowSize": [2, 2],
        "StartPadding": [0, 0], "EndPadding": [0, 0]}}
    m["commands"] = [m["commands"][0], m["commands"][0],
                     {"type": "dispatch", "dispatchable": "pool",
                      "bindings": {"InputTensor": "output", "OutputTensor": "pooled"}},
                     {"type": "print", "resource": "pooled"}]
    rc, out, err = run_model_text(capsys, tmp_path, m)
    assert (rc, err) == (0, "")
    padded = np.array(EXPECTED["padding_edge.json"]["output"]).reshape(8, 10)
    assert printed(out)["pooled"] == padded.reshape(4, 2, 5, 2).max(axis=(1, 3)).ravel().tolist()


@pytest.mark.parametrize("value, dt, expect", [
    ({"UInt16": 15360}, "FLOAT16", 1.0),          # FLOAT16 in the union: bits
    ({"Bytes": [0, 60]}, "FLOAT16", 1.0),
    (0.5, "FLOAT16", 0.5),                         # a number: a value
    ("-inf", "FLOAT32", -np.inf),
    ({"Float32": 2.5}, "FLOAT32", 2.5),
    ({"Int8": -128}, "INT8", -128),
    (-7, "INT32", -7),
    ({"UInt64": 2**64 - 1}, "UINT64", 2**64 - 1),
])
def test_padding1_value_forms(value, dt, expect, capsys, tmp_path):
    m = example("padding1_float16.json")
    d = m["dispatchables"]["pad"]["desc"]
    for t in ("InputTensor", "OutputTensor"):
        d[t]["DataType"] = dt
    d["PaddingValueDataType"] = dt
    d["PaddingValue"] = value
    m["resources"]["input"]["initialValuesDataType"] = dt
    m["resources"]["output"]["initialValuesDataType"] = dt
    rc, out, err = run_model_text(capsys, tmp_path, m)
    assert (rc, err) == (0, "")
    got = printed(out)["output"]
    assert got[0] == expect and got[5:7] == [1, 2]


@pytest.mark.parametrize("value, dt, where, what", [
    ({"Float32": 1.0}, "FLOAT16", "PaddingValue.Float32", '{"UInt16": ...}'),
    ({"Int8": 1, "UInt8": 1}, "INT8", "PaddingValue", "exactly one member"),
    ({"Int8": 200}, "INT8", "PaddingValue.Int8", "outside the range"),
    (10.6, "INT8", "PaddingValue", "not exactly representable"),
    (1e6, "FLOAT16", "PaddingValue", "overflows FLOAT16"),
    (True, "FLOAT32", "PaddingValue", "expected a number"),
])
def test_padding1_value_errors(value, dt, where, what, capsys, tmp_path):
    m = example("padding1_float16.json")
    d = m["dispatchables"]["pad"]["desc"]
    for t in ("InputTensor", "OutputTensor"):
        d[t]["DataType"] = dt
    d["PaddingValueDataType"] = dt
    d["PaddingValue"] = value
    m["resources"]["input"]["initialValuesDataType"] = dt
    m["resources"]["output"]["initialValuesDataType"] = dt
    rc, _, err = run_model_text(capsys, tmp_path, m)
    assert rc == 2
    assert err.startswith(f"dmlops run: error: dispatchables.pad.desc.{where}: "), err
    assert what in err


def test_padding1_value_overflow_is_an_error_not_a_warning(capsys, tmp_path):
    import warnings

    m = example("padding1_float16.json")
    m["dispatchables"]["pad"]["desc"]["PaddingValue"] = 70000
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rc, _, err = run_model_text(capsys, tmp_path, m)
    assert rc == 2 and "overflows FLOAT16" in err
    assert [str(w.message) for w in caught] == []


def test_padding_value_data_type_must_match(capsys, tmp_path):
    m = example("padding1_float16.json")
    m["dispatchables"]["pad"]["desc"]["PaddingValueDataType"] = "FLOAT32"
    rc, _, err = run_model_text(capsys, tmp_path, m)
    assert rc == 2
    assert err.startswith("dmlops run: error: dispatchables.pad.desc.PaddingValueDataType: ")


def test_enum_and_bool_spellings(capsys, tmp_path):
    m = example("padding_reflection.json")
    m["dispatchables"]["pad"]["desc"]["PaddingMode"] = "REFLECTION"
    m["dispatchables"]["pad"]["type"] = "PADDING"
    rc, out, _ = run_model_text(capsys, tmp_path, m)
    assert rc == 0 and printed(out) == EXPECTED["padding_reflection.json"]
    m = example("average_pooling.json")
    for name, value in (("avg_padded_exclude", 0), ("avg_padded_include", 1)):
        m["dispatchables"][name]["desc"]["IncludePadding"] = value
    rc, out, _ = run_model_text(capsys, tmp_path, m)
    assert rc == 0 and printed(out) == EXPECTED["average_pooling.json"]


def test_model_runs_are_independent(tmp_path):
    """A loaded model runs from its initial values every time."""
    import io
    m = example("max_pooling_grad.json")
    m["commands"].insert(1, copy.deepcopy(m["commands"][0]))
    loaded = parse_model(m, EXAMPLES)
    outs = []
    for _ in range(2):
        buf = io.StringIO()
        loaded.run(buf)
        outs.append(buf.getvalue())
    assert outs[0] == outs[1]
    assert printed(outs[0])["output_gradient"] == [0, 0, 0, 0, 3, 0, 0, 4, 5]


def test_model_error_api(tmp_path):
    with pytest.raises(ModelError) as info:
        load_model(tmp_path / "missing.json")
    assert info.value.path.endswith("missing.json")
    with pytest.raises(ModelError, match=r"^dispatchables\.max_pool\.desc\.WindowSize: "):
        m = example("max_pooling2_indices.json")
        desc(m)["WindowSize"] = [2]
        parse_model(m)


def test_dxdispatch_keys_without_effect(capsys, tmp_path):
    """executionFlags, dmlCompileType and the capitalised Desc are DxDispatch's; they are
    checked and change nothing."""
    m = example("max_pooling2_indices.json")
    d = m["dispatchables"]["max_pool"]
    d["Desc"] = d.pop("desc")
    d["executionFlags"] = ["DML_EXECUTION_FLAG_DISABLE_META_COMMANDS", "DESCRIPTORS_VOLATILE"]
    d["dmlCompileType"] = "DmlCompileGraph"
    rc, out, err = run_model_text(capsys, tmp_path, m)
    assert (rc, err) == (0, "") and printed(out) == EXPECTED["max_pooling2_indices.json"]
    d["executionFlags"] = ["FAST"]
    rc, _, err = run_model_text(capsys, tmp_path, m)
    assert rc == 2
    assert err.startswith("dmlops run: error: dispatchables.max_pool.executionFlags[0]: ")


def test_feature_level_as_hexadecimal(capsys, tmp_path, monkeypatch):
    # the error message offers 0x6400 as a spelling: on the command line it is the number
    monkeypatch.chdir(tmp_path)
    model = str(EXAMPLES / "max_pooling2_indices.json")
    rc, out, err = run_cli(capsys, "run", model, "--feature-level", "0x6400")
    assert (rc, err) == (0, "")
    rc, _, err = run_cli(capsys, "run", model, "--feature-level", "0x1000")
    assert rc == 2 and "needs feature level 2.1" in err
    rc, _, err = run_cli(capsys, "run", model, "--feature-level", "0x7000")
    assert rc == 2 and err.startswith("dmlops run: error: --feature-level: ")


def test_schema_ignored_among_resources_and_dispatchables(capsys, tmp_path):
    # SPEC 7: "$schema is ignored" (not taken for a resource or dispatchable's name)
    m = example("max_pooling2_indices.json")
    m["resources"]["$schema"] = "s"
    m["dispatchables"]["$schema"] = "s"
    rc, out, err = run_model_text(capsys, tmp_path, m)
    assert (rc, err) == (0, "")


def test_written_files_get_the_usual_mode(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    old = os.umask(0o022)
    try:
        rc, _, err = run_cli(capsys, "run",
                             str(EXAMPLES / "max_pooling2_channels_last_write_file.json"))
    finally:
        os.umask(old)
    assert (rc, err) == (0, "")
    assert (tmp_path / "max_pooling2_values.npy").stat().st_mode & 0o777 == 0o644


def test_optional_tensor_given_as_null_is_left_out(capsys, tmp_path, monkeypatch):
    """DirectML's optional tensors are null pointers: ``null`` in JSON leaves one out, as
    leaving out its key does (and then it must not be bound)."""
    monkeypatch.chdir(tmp_path)
    outs = []
    for how in ("pop", "null"):
        m = quantized_model()
        d = m["dispatchables"]["qavg"]["desc"]
        if how == "pop":
            d.pop("InputZeroPointTensor")
        else:
            d["InputZeroPointTensor"] = None
        for c in m["commands"]:
            if c["type"] == "dispatch":
                c["bindings"].pop("InputZeroPointTensor", None)
        rc, out, err = run_cli(capsys, "run", str(write_model(tmp_path, json.dumps(m))))
        assert rc == 0, err
        outs.append((out, np.load(tmp_path / "out.npy")))
    assert outs[0][0] == outs[1][0]
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    m = quantized_model()
    m["dispatchables"]["qavg"]["desc"]["InputZeroPointTensor"] = None
    rc, out, err = run_cli(capsys, "run", str(write_model(tmp_path, json.dumps(m))))
    assert rc == 2 and "leaves this optional tensor out" in err
    assert out == ""




def _write(resource, target):
    return {"type": "writeFile", "resource": resource, "targetPath": target}


@pytest.mark.parametrize("targets, source, where, what", [
    (["e.npy", "e.npy/f.npy"], None, "commands[5].targetPath",
     "would be inside .*e.npy', the file commands\\[4\\].targetPath writes"),
    (["e.npy/f.npy", "e.npy"], None, "commands[5].targetPath",
     "e.npy' is a folder of .*f.npy', the file commands\\[4\\].targetPath writes"),
    (["o\ud800.npy"], None, "commands[4].targetPath", "cannot be a file name on this system"),
    (["o\x00x.npy"], None, "commands[4].targetPath", "contains a NUL character"),
    (["a" * 300 + ".npy"], None, "commands[4].targetPath", "a file name of 304 bytes"),
    ([], "b" * 5000 + ".npy", "resources.input.initialValues.sourcePath",
     "a path of 5004 bytes, longer than 4096"),
    ([], "c" * 300 + ".npy", "resources.input.initialValues.sourcePath",
     "a file name of 304 bytes"),
])
def test_paths_the_system_cannot_take_are_refused_before_running(targets, source, where, what,
                                                                  capsys, tmp_path,
                                                                  monkeypatch):
    """Every such failure exits 2 with a located message and no traceback, before anything
    runs or is written (issue 28)."""
    monkeypatch.chdir(tmp_path)
    m = example("max_pooling2_indices.json")
    m["commands"] += [_write("values" if i == 0 else "indices", t) for i, t in enumerate(targets)]
    if source is not None:
        m["resources"]["input"] = {"initialValues": {"sourcePath": source}}
    rc, out, err = run_model_text(capsys, tmp_path, m)
    assert rc == 2 and out == "" and "Traceback" not in err
    assert err.startswith(f"dmlops run: error: {where}: "), err
    assert re.search(what, err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json"]


def _second_move_fails(monkeypatch):
    """os.replace in dmlops.dxdispatch._files failing at its second call (a full disk);
    returns the real one."""
    import dmlops.dxdispatch._files as dx
    real, calls = os.replace, []

    def failing(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(dx.os, "replace", failing)
    return real


def test_a_failed_move_removes_the_files_and_folders_already_made(capsys, tmp_path,
                                                                   monkeypatch):
    """Files are committed all or nothing: when a later move into place fails, the files
    already moved and the folders created are removed again, and the message says so."""
    import dmlops.dxdispatch._files as dx
    monkeypatch.chdir(tmp_path)
    m = example("max_pooling2_indices.json")
    m["commands"] += [_write("values", "out/a.npy"), _write("indices", "out/deeper/b.npy")]
    real = _second_move_fails(monkeypatch)
    rc, out, err = run_model_text(capsys, tmp_path, m)
    assert rc == 2 and out == "" and "Traceback" not in err
    assert ("commands[5].targetPath: cannot move" in err and "No space left on device" in err
            and "the 1 file(s) already written and 2 folder(s) made were removed again" in err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json"]
    monkeypatch.setattr(dx.os, "replace", real)
    rc, out, err = run_model_text(capsys, tmp_path, m)
    assert rc == 0 and sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.npy",
                                                                               "deeper"]


@pytest.mark.parametrize("spelling", ["sub/../x.npy", "sub/./deeper/../../x.npy"])
def test_a_target_through_a_missing_folder_leaves_no_folder(capsys, tmp_path, monkeypatch,
                                                             spelling):
    """A target spelled through a folder that does not exist (``sub/../x.npy``) names
    ``x.npy`` beside the model: a model that fails at a later move leaves no ``sub/``
    behind (issue 42)."""
    import dmlops.dxdispatch._files as dx
    monkeypatch.chdir(tmp_path)
    m = example("max_pooling2_indices.json")
    m["commands"] += [_write("values", spelling), _write("indices", "b.npy")]
    real = _second_move_fails(monkeypatch)
    rc, out, err = run_model_text(capsys, tmp_path, m)
    assert rc == 2 and "No space left on device" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json"]
    monkeypatch.setattr(dx.os, "replace", real)
    rc, out, err = run_model_text(capsys, tmp_path, m)
    assert rc == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["b.npy", "model.json",
                                                                      "x.npy"]


def test_print_of_a_name_the_output_cannot_encode(tmp_path):
    """A resource named with characters stdout's encoding lacks is printed with escapes."""
    import io
    m = example("max_pooling2_indices.json")
    m["resources"]["v\udc80é"] = m["resources"].pop("values")
    m["commands"][0]["bindings"]["OutputTensor"] = "v\udc80é"
    m["commands"][2]["resource"] = "v\udc80é"
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="ascii", errors="strict")
    parse_model(m).run(out)
    out.flush()
    assert "v\\udc80\\xe9: 4, 4, 6, 7" in raw.getvalue().decode("ascii")


def test_resources_beyond_memory_are_refused(capsys, tmp_path, monkeypatch):
    """A resource's size comes from the model's numbers (valueCount, sizeInBytes): past the
    machine's memory it is a located error, exit 2, not a process the system kills as the
    buffer fills (issue 28). The memory is taken to be 1 MiB here."""
    from dmlops import tensor
    monkeypatch.setattr(tensor, "memory_bytes", lambda: 1 << 20)
    for init, where, what in [
            ({"initialValuesDataType": "FLOAT32",
              "initialValues": {"valueCount": 2**20, "value": 0}},
             "resources.input.initialValues.valueCount", "1048576 values needs 4194304 bytes"),
            ({"initialValuesDataType": "FLOAT32",
              "initialValues": {"valueCount": 2**18, "valueStart": 0, "valueDelta": 1}},
             "resources.input.initialValues.valueCount", "262144 values needs 2097152 bytes"),
            ({"initialValuesDataType": "FLOAT32", "initialValues": [1, 2, 3, 2, 4, 2, 5, 6, 7],
              "sizeInBytes": 2**21}, "resources.input", "the resource needs 2097152 bytes")]:
        m = example("max_pooling2_indices.json")
        m["resources"]["input"] = init
        rc, out, err = run_model_text(capsys, tmp_path, m)
        assert rc == 2 and out == "" and "Traceback" not in err
        assert err.startswith(f"dmlops run: error: {where}: {what}"), err
        assert "more than this machine's 0.0 GiB of memory" in err
