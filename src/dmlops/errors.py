"""The library's two error classes, and the labels that let one check speak to every layer.

A rule is checked once (in the operator family's planning module); the message names the
caller's own spelling of the field: ``max_pooling: output_sizes[1]`` for the functional API,
``MAX_POOLING2: output_tensor.sizes[3]`` for a description.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["DmlError", "InvalidArgumentError", "UnsupportedError", "Names"]


class DmlError(Exception):
    """Base class of every error dmlops raises for a caller's mistake."""


class InvalidArgumentError(DmlError, ValueError):
    """A size, shape or numeric value that no feature level accepts."""


class UnsupportedError(DmlError, TypeError):
    """A data type, rank, operator or mode that the target level (or the library) lacks."""


class Names:
    """How one caller spells the canonical fields of an operator.

    ``fields`` maps a canonical field name to ``(label, index_offset)``: the label shown in
    messages and the offset added to an index, so that ``output_sizes`` given as full sizes is
    reported as ``output_sizes[3]`` and given as spatial sizes as ``output_sizes[1]``.
    """

    __slots__ = ("op", "fields")

    def __init__(self, op: str, fields: Mapping[str, tuple[str, int]] | None = None) -> None:
        self.op = op
        self.fields = dict(fields or {})

    def __call__(self, field: str, index: int | None = None) -> str:
        label, offset = self.fields.get(field, (field, 0))
        return label if index is None else f"{label}[{index + offset}]"

    def with_fields(self, **fields: tuple[str, int]) -> Names:
        merged = dict(self.fields)
        merged.update(fields)
        return Names(self.op, merged)

    def key(self) -> tuple[str, tuple[tuple[str, tuple[str, int]], ...]]:
        return (self.op, tuple(sorted(self.fields.items())))

    def invalid(self, message: str) -> InvalidArgumentError:
        return InvalidArgumentError(f"{self.op}: {message}")

    def unsupported(self, message: str) -> UnsupportedError:
        return UnsupportedError(f"{self.op}: {message}")
