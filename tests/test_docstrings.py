"""The worked examples in the docstrings run, against the installed package."""

import doctest
import importlib
import pkgutil

import pytest

import dmlops

MODULES = sorted(m.name for m in pkgutil.walk_packages(dmlops.__path__, "dmlops.")
                 if m.name != "dmlops.__main__")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_docstrings_have_examples():
    # the public functions each carry a worked example
    for fn in (dmlops.average_pooling, dmlops.max_pooling, dmlops.max_pooling_grad,
               dmlops.quantized_linear_average_pooling, dmlops.padding,
               dmlops.pooling_output_sizes, dmlops.onnx_pads):
        assert ">>>" in (fn.__doc__ or ""), fn.__name__
