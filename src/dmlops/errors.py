"""The library's two error classes, and the labels that let one check speak to every layer.

A rule is checked once (in the operator family's planning module); the message names the
caller's own spelling of the field: ``max_pooling: output_sizes[1]`` for the functional API,
``MAX_POOLING2: output_tensor.sizes[3]`` for a description. The error also carries the
field it is about as data (``field``, ``index``, ``subfield``), and its message can be spelled
again in another caller's labels (``DmlError.text``): ``dmlops run`` names the JSON location
and DirectML's spelling from them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar, Union

__all__ = ["DmlError", "InvalidArgumentError", "UnsupportedError", "Names", "Message"]


# What a message names: a canonical field, an index in it and a sub-field (of a tensor:
# "sizes", "strides", "data_type", ...), the last two None where it names none.
Place = tuple[str, Union[int, None], Union[str, None]]


# A message's body: text and the places it names, in order.
_Parts = tuple[Union[str, Place], ...]
_E = TypeVar("_E", bound="DmlError")


class DmlError(Exception):
    """Base class of every error dmlops raises for a caller's mistake.

    An error of a validation knows its place: ``field`` (the canonical name, such as
    ``"output_sizes"``), ``index`` (a position in it, canonical: before the caller's offset)
    and ``subfield`` (such as a tensor's ``"sizes"`` or ``"data_type"``); each is None where
    the error is not about one. Where a message names several fields, the first is the place.
    """

    field: str | None = None
    index: int | None = None
    subfield: str | None = None
    names: Names | None = None      # the spelling of the message
    _parts: _Parts = ()

    def text(self, names: Names | None = None) -> str:
        """The message without its ``op: `` prefix, the fields it names spelled by ``names``
        (by default, the caller's own)."""
        if self.names is None:          # (made without Names: the message as it is)
            return str(self.args[0]) if self.args else ""
        spell = names or self.names
        return "".join(p if isinstance(p, str) else spell(*p) for p in self._parts)

    def prefixed(self: _E, prefix: str) -> _E:
        """The same error (class and place) with its message after ``prefix: ``; the place's
        spelling is then the prefix's caller's (``names`` becomes None)."""
        e = type(self)(f"{prefix}: {self}")
        e.field, e.index, e.subfield = self.field, self.index, self.subfield
        return e


class InvalidArgumentError(DmlError, ValueError):
    """A size, shape or numeric value that no feature level accepts."""


class UnsupportedError(DmlError, TypeError):
    """A data type, rank, operator or mode that the target level (or the library) lacks."""


# A message as a function of the spelling: ``lambda n: f"{n('strides', 0)} = 0 ..."``, so
# that it can be spelled again in another caller's labels (private-use characters mark each
# place while the template is made).
Message = Union[str, Callable[["Names"], str]]
_OPEN, _CLOSE = "\ue000", "\ue001"


class Names:
    """How one caller spells the canonical fields of an operator.

    ``fields`` maps a canonical field name to ``(label, index_offset)``: the label shown in
    messages and the offset added to an index, so that ``output_sizes`` given as full sizes is
    reported as ``output_sizes[3]`` and given as spatial sizes as ``output_sizes[1]``.
    ``subfields`` maps a tensor's sub-field (``"sizes"``) to its label (as given by default).
    """

    __slots__ = ("op", "fields", "subfields")

    def __init__(self, op: str, fields: Mapping[str, tuple[str, int]] | None = None,
                 subfields: Mapping[str, str] | None = None) -> None:
        self.op = op
        self.fields = dict(fields or {})
        self.subfields = dict(subfields or {})

    def __call__(self, field: str, index: int | None = None, subfield: str | None = None
                 ) -> str:
        """The label of ``field`` (``index`` in it, or in its ``subfield``)."""
        label, offset = self.fields.get(field, (field, 0))
        if subfield is not None:        # (an index of a sub-field is the sub-field's own)
            label, offset = f"{label}.{self.subfields.get(subfield, subfield)}", 0
        return label if index is None else f"{label}[{index + offset}]"

    def with_fields(self, **fields: tuple[str, int]) -> Names:
        merged = dict(self.fields)
        merged.update(fields)
        return Names(self.op, merged, self.subfields)

    def key(self) -> tuple[str, tuple[tuple[str, tuple[str, int]], ...]]:
        return (self.op, tuple(sorted(self.fields.items())))

    def invalid(self, message: Message, *, field: str | None = None, index: int | None = None,
                subfield: str | None = None) -> InvalidArgumentError:
        """An InvalidArgumentError ``op: message``; see ``error``."""
        return self.error(InvalidArgumentError, message, field=field, index=index,
                          subfield=subfield)

    def unsupported(self, message: Message, *, field: str | None = None,
                    index: int | None = None, subfield: str | None = None
                    ) -> UnsupportedError:
        """An UnsupportedError ``op: message``; see ``error``."""
        return self.error(UnsupportedError, message, field=field, index=index,
                          subfield=subfield)

    def error(self, cls: type[_E], message: Message, *, field: str | None = None,
              index: int | None = None, subfield: str | None = None) -> _E:
        """An error ``op: message`` whose place is the first field ``message`` spells (a
        function of the spelling), or ``field`` where given; ``subfield`` (alone) narrows the
        first field to a sub-field the message does not spell, such as its data type."""
        parts, places = self._parts(message)
        e = cls(f"{self.op}: " + "".join(p if isinstance(p, str) else self(*p) for p in parts))
        if field is not None:
            e.field, e.index, e.subfield = field, index, subfield
        elif places:
            e.field, e.index, e.subfield = places[0]
            if subfield is not None:
                e.subfield = subfield
        e.names, e._parts = self, parts
        return e

    def wrap(self, e: _E, field: str, subfield: str | None = None) -> _E:
        """A context-free error whose message starts with ``field``'s label, with this
        operator's prefix and ``field`` (narrowed to ``subfield``) as its place."""
        label, message = self(field), str(e)
        if not message.startswith(label):       # (not the label given: kept as it is)
            return self.error(type(e), message, field=field, subfield=subfield)
        rest = message[len(label):]
        return self.error(type(e), lambda n: n(field) + rest, subfield=subfield)

    def _parts(self, message: Message) -> tuple[_Parts, list[Place]]:
        """The body as text and places (a template), and the places in order."""
        if isinstance(message, str):
            return (message,), []
        places: list[Place] = []
        text, *marked = message(_Marking(self, places)).split(_OPEN)
        parts: list[str | Place] = [text]
        for k, piece in enumerate(marked):
            number, close, text = piece.partition(_CLOSE)
            if not close or number != str(k) or k >= len(places):
                # (a marker character in the caller's own text: the message as spelled)
                return (message(self),), places
            parts += [places[k], text]
        return tuple(parts), places


class _Marking(Names):
    """Names that writes a marker for each place instead of its label, and records it."""

    __slots__ = ("places",)

    def __init__(self, names: Names, places: list[Place]) -> None:
        super().__init__(names.op, names.fields, names.subfields)
        self.places = places

    def __call__(self, field: str, index: int | None = None, subfield: str | None = None
                 ) -> str:
        self.places.append((field, index, subfield))
        return f"{_OPEN}{len(self.places) - 1}{_CLOSE}"
