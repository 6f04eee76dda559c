"""The suite's own compile-first step (``_precompile``): when it runs, and that it runs."""

import types

import pytest

import _precompile


def _config(n, source=pytest.Config.ArgsSource.TESTPATHS, worker=False, most=4):
    config = types.SimpleNamespace(args_source=source,
                                   option=types.SimpleNamespace(numprocesses=n,
                                                                maxprocesses=most))
    if worker:
        config.workerinput = {}
    return config


def test_only_the_controller_of_a_parallel_whole_run_compiles_first(monkeypatch):
    monkeypatch.delenv("DMLOPS_TEST_PRECOMPILE", raising=False)
    assert _precompile.wanted(_config(2)) == 2
    assert _precompile.wanted(_config(8, most=4)) == 4
    assert _precompile.wanted(_config(2, worker=True)) == 0
    assert _precompile.wanted(_config(0)) == 0
    assert _precompile.wanted(_config(None)) == 0
    assert _precompile.wanted(_config(2, source=pytest.Config.ArgsSource.ARGS)) == 0
    monkeypatch.setenv("DMLOPS_TEST_PRECOMPILE", "0")
    assert _precompile.wanted(_config(2)) == 0


def test_groups_run_and_name_each_group_once():
    names = [name for name, _ in _precompile.GROUPS]
    assert len(names) == len(set(names))
    assert _precompile.run_group("padding, unpooling") > 0


def test_a_failed_step_leaves_no_marker(monkeypatch, tmp_path):
    monkeypatch.setenv("DMLOPS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_precompile, "GROUPS", [("no such", None)])
    said = []
    _precompile.precompile(1, say=said.append)
    assert "failed" in said[-1]
    assert not _precompile._marker().exists()
