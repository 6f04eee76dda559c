"""A model's JSON: the file read, each location's path (``resources.x.initialValues``) and
the checks of JSON values, each failure a :class:`ModelError` at its location."""

from __future__ import annotations

import difflib
import json
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..dtypes import DataType, data_type
from ..errors import DmlError

if TYPE_CHECKING:
    from typing import TypeGuard


class ModelError(Exception):
    """A caller error in a DxDispatch model, at a JSON location (``path``)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(path, message)
        self.path = path
        self.message = message

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")


def json_key(path: str, name: str) -> str:
    """``path.name`` (``path["odd name"]`` when ``name`` is not identifier-like)."""
    if _IDENT.match(name):
        return f"{path}.{name}" if path else name
    return f"{path}[{json.dumps(name)}]"


def json_item(path: str, i: int) -> str:
    return f"{path}[{i}]"


class _Obj(dict[str, Any]):
    """A JSON object that remembers keys given twice (reported with their location)."""

    duplicates: tuple[Any, ...] = ()


def _object_pairs(pairs: Any) -> Any:
    obj = _Obj()
    dups = []
    for k, v in pairs:
        if k in obj:
            dups.append(k)
        obj[k] = v
    if dups:
        obj.duplicates = tuple(dups)
    return obj


def _reject_constant(name: Any) -> None:
    raise ValueError(f"{name} is not JSON; write \"nan\", \"inf\" or \"-inf\" as a string")


def describe(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def json_object(value: Any, path: str, what: str = "an object") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ModelError(path, f"expected {what}, got {describe(value)}")
    dups = getattr(value, "duplicates", ())
    if dups:
        raise ModelError(json_key(path, dups[0]), "key given twice in one object")
    return value


def check_keys(obj: dict[str, Any], path: str, allowed: Any, required: Any = ()) -> None:
    """Unknown keys are errors (``$schema`` is ignored); required keys must be present."""
    for k in obj:
        if k == "$schema" or k in allowed:
            continue
        close = [a for a in allowed if a.lower() == k.lower()] or \
            difflib.get_close_matches(k, list(allowed), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else \
            f"; expected {', '.join(sorted(allowed))}" if allowed else ""
        raise ModelError(json_key(path, k), f"unknown key {k!r}{hint}")
    for k in required:
        if k not in obj:
            raise ModelError(json_key(path, k), "missing (required)")


def json_list(value: Any, path: str, what: str = "an array") -> list[Any]:
    if not isinstance(value, list):
        raise ModelError(path, f"expected {what}, got {describe(value)}")
    return value


def json_str(value: Any, path: str, what: str = "a string") -> str:
    if not isinstance(value, str):
        raise ModelError(path, f"expected {what}, got {describe(value)}")
    return value


def is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def json_uint(value: Any, path: str, minimum: int = 0, maximum: int = 2**64 - 1) -> int:
    if not is_int(value):
        raise ModelError(path, f"expected a non-negative integer, got {describe(value)}")
    if value < minimum:
        raise ModelError(path, f"{value} must be at least {minimum}")
    if value > maximum:
        raise ModelError(path, f"{value} is larger than {maximum}")
    return value


def json_uint_list(value: Any, path: str, minimum: int = 0, maximum: int = 2**32 - 1) -> list[Any]:
    items = json_list(value, path, "an array of non-negative integers")
    return [json_uint(v, json_item(path, i), minimum, maximum) for i, v in enumerate(items)]


def json_bool(value: Any, path: str) -> bool:
    if isinstance(value, bool):
        return value
    if is_int(value) and value in (0, 1):
        return bool(value)
    raise ModelError(path, f"expected true, false, 0 or 1, got {describe(value)}")


_SPECIAL_FLOATS = {"nan": math.nan, "inf": math.inf, "+inf": math.inf, "-inf": -math.inf,
                   "infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf}


def json_number(value: Any, path: str, allow_special: Any = True) -> Any:
    """A JSON number (int or float, not bool), or "nan"/"inf"/"-inf" for a float."""
    if is_int(value) or isinstance(value, float):
        return value
    if allow_special and isinstance(value, str) and value.strip().lower() in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[value.strip().lower()]
    special = ', or "nan", "inf", "-inf"' if allow_special else ""
    raise ModelError(path, f"expected a number{special}, got {describe(value)}")


def json_data_type(value: Any, path: str) -> DataType:
    text = json_str(value, path, "a DML_TENSOR_DATA_TYPE name such as FLOAT32")
    try:
        return data_type(text)
    except DmlError:
        if text.strip().upper() in ("UNKNOWN", "DML_TENSOR_DATA_TYPE_UNKNOWN"):
            raise ModelError(path, "UNKNOWN (list initializers) is not supported; give one "
                                   "data type") from None
        if text.strip().upper().replace("DML_TENSOR_DATA_TYPE_", "") in ("UINT4", "INT4"):
            raise ModelError(path, f"{text} is not supported by dmlops") from None
        names = ", ".join(t.name for t in DataType)
        raise ModelError(path, f"{text!r} is not a data type; expected one of {names} "
                               f"(the DML_TENSOR_DATA_TYPE_ prefix is optional)") from None


def read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ModelError(str(path), "no such file") from None
    except IsADirectoryError:
        raise ModelError(str(path), "is a directory, not a model file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ModelError(str(path), f"cannot read: {e}") from None
    try:
        return json.loads(text, object_pairs_hook=_object_pairs,
                          parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise ModelError(f"{path}:{e.lineno}:{e.colno}", f"invalid JSON: {e.msg}") from None
    except ValueError as e:
        raise ModelError(str(path), f"invalid JSON: {e}") from None
    except RecursionError:
        raise ModelError(str(path), "invalid JSON: nested too deeply") from None
