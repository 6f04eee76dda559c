"""DxDispatch JSON models: ``dmlops run model.json`` (SPEC 6, SPEC 7 "dmlops run").

A model has three members, as in DirectML's DxDispatch tool:

* ``resources``: name -> byte buffer, filled from ``initialValues`` read as
  ``initialValuesDataType`` (an array, ``{valueCount, value}``,
  ``{valueCount, valueStart, valueDelta}`` or ``{sourcePath}`` of a ``.npy``/``.dat``/``.bin``
  file), optionally enlarged by ``sizeInBytes``;
* ``dispatchables``: name -> ``{"type": "DML_OPERATOR_<NAME>", "desc": {...}}`` with the
  operator description's fields by their DirectML names;
* ``commands``: ``dispatch`` (bind resources to the operator's tensors and run it), ``print``
  and ``writeFile``.

The whole model is parsed and validated (every description compiled, every binding resolved
and its size checked) before anything runs; the commands then run in memory, and files are
written (and ``print``'s text shown) only after the last command succeeded, so a model that
fails writes nothing. A model that names zarr stores (a resource's ``sourcePath``, a
``writeFile`` target) runs lazily through Dask where its inputs are lazy (SPEC 6:
``_plan_laziness``, ``_zarrio``). Every problem is a :class:`ModelError` naming its JSON location, e.g.
``dispatchables.pool.desc.WindowSize: ...`` or ``commands[2].bindings.InputTensor: ...``.

Rules of this implementation where DxDispatch's own documentation is silent or differs:

* A binding reads the resource's bytes as the bound tensor's data type (no conversion).
  ``elementOffset`` / ``elementCount`` count elements of the resource's
  ``initialValuesDataType`` (``elementStride`` bytes each when given), as DxDispatch computes
  DirectML binding offsets; the bound range must hold the tensor's ``TotalTensorSizeInBytes``
  and start at a multiple of its element size (and of ``GuaranteedBaseOffsetAlignment``).
  An output may not overlap any other tensor bound in the same dispatch.
* Every tensor present in a description must be bound; optional tensors left out of the
  description (``OutputIndicesTensor``, zero points), or given as ``null``, must not be.
* ``print`` shows the initialised elements of a resource (not the padding that ``sizeInBytes``
  or 4-byte rounding added), in ``initialValuesDataType``. ``writeFile`` writes the same
  elements as a 1-D ``.npy`` (``.dat``/``.bin``: raw bytes); ``dimensions`` reshapes, and may
  name up to every element of the buffer.
* A number given as PADDING1's ``PaddingValue`` is a value of ``PaddingValueDataType`` (also
  for FLOAT16, where DxDispatch would store it as bits); the union form ``{"Float32": v}``
  must use the member of that type (``{"UInt16": bits}`` for FLOAT16, or ``{"Bytes": [...]}``).
* Array initialisers must hold values of their type: an integer type rejects fractions and
  out-of-range values rather than converting them; float types round to nearest.
* ``executionFlags`` and ``dmlCompileType`` of a dispatchable are checked and have no effect.

The modules follow a model's stages: ``_json`` (the file, JSON locations and value checks),
``_values``, ``_resources``, ``_dispatchables``, ``_commands`` and ``_model``; ``_files``
writes the results.
"""

from ._dispatchables import Dispatchable
from ._files import write_text
from ._json import ModelError, json_key
from ._model import Model, load_model, parse_model, run_model
from ._resources import NAME_MAX, PATH_MAX, Resource

__all__ = ["ModelError", "Model", "load_model", "run_model", "parse_model", "write_text",
           "json_key", "Resource", "Dispatchable", "NAME_MAX", "PATH_MAX"]
