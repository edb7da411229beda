"""Perl's ``undef`` as a value: ``undef`` and ``defined``.

Python's ``None`` prints as ``"None"`` in an f-string and fails in ``+`` and
``re.sub``; Perl's undef reads as ``""`` in a string, 0 as a number and false.
``undef`` is that value: one object, a ``str`` equal to ``""`` (so f-strings,
``+`` with a string, ``re.sub``, ``.split`` and ``print_`` take it as Perl takes
undef), false, 0 in arithmetic and numeric comparison (``undef + 1 == 1``,
``undef / 2 == 0``, ``2 / undef`` raises ZeroDivisionError where Perl dies,
``undef == 0``), ``format(undef, "d")`` is ``"0"``.  ``defined(x)`` is False for
``undef`` and ``None`` only (``x is undef`` tells it from a real ``""``).

The built-ins that read past what is there give ``undef``: ``split(...,
fields=N)``, ``elem``, ``PerlList`` and ``PerlHash`` reads, ``pop``/``shift`` of an
empty list, a ``split`` capture group that did not take part.  This module
imports nothing.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Union

    Number = Union[int, float]

_NUMERIC_FORMATS = frozenset("bcdeEfFgGnoxX%")


def _number(other: object) -> bool:
    return isinstance(other, (int, float))  # (bool too: Perl's true is 1)


class Undef(str):
    """The type of :data:`undef` (one instance): ``""`` as a string, 0 as a number, false."""

    __slots__ = ()
    _instance: Undef | None = None

    def __new__(cls) -> Undef:
        if cls._instance is None:
            cls._instance = str.__new__(cls, "")
        return cls._instance

    def __repr__(self) -> str:
        return "undef"

    def __str__(self) -> str:
        return ""

    def __format__(self, spec: str) -> str:
        if spec and spec[-1] in _NUMERIC_FORMATS:
            return format(0, spec)
        return format("", spec)

    def __int__(self) -> int:
        return 0

    def __float__(self) -> float:
        return 0.0

    def __neg__(self) -> int:
        return 0

    def __pos__(self) -> int:
        return 0

    def __add__(self, other: object) -> object:  # type: ignore[override]
        if _number(other):
            return 0 + other  # type: ignore[operator]
        return str.__add__(self, other)  # type: ignore[operator]

    def __radd__(self, other: object) -> object:
        if _number(other):
            return other + 0  # type: ignore[operator]
        return NotImplemented

    def __sub__(self, other: object) -> object:
        if _number(other):
            return 0 - other  # type: ignore[operator]
        return NotImplemented

    def __rsub__(self, other: object) -> object:
        if _number(other):
            return other - 0  # type: ignore[operator]
        return NotImplemented

    def __mul__(self, other: object) -> object:  # type: ignore[override]
        if _number(other):
            return 0 * other  # type: ignore[operator]
        return NotImplemented

    __rmul__ = __mul__  # type: ignore[assignment]

    def __truediv__(self, other: object) -> object:
        if _number(other):
            return 0 / other  # type: ignore[operator]  # ZeroDivisionError: Perl dies too
        return NotImplemented

    def __rtruediv__(self, other: object) -> object:
        if _number(other):
            return other / 0  # type: ignore[operator]  # Perl: "Illegal division by zero"
        return NotImplemented

    def __floordiv__(self, other: object) -> object:
        if _number(other):
            return 0 // other  # type: ignore[operator]
        return NotImplemented

    def __rfloordiv__(self, other: object) -> object:
        if _number(other):
            return other // 0  # type: ignore[operator]
        return NotImplemented

    def __mod__(self, other: object) -> object:  # type: ignore[override]
        if _number(other):
            return 0 % other  # type: ignore[operator]
        return str.__mod__(self, other)  # ("" % args: string formatting)

    def __rmod__(self, other: object) -> object:
        if _number(other):
            return other % 0  # type: ignore[operator]  # Perl: "Illegal modulus zero"
        return NotImplemented  # ("%s" % undef: the string's formatting)

    def __pow__(self, other: object) -> object:
        if _number(other):
            return 0**other  # type: ignore[operator]
        return NotImplemented

    def __rpow__(self, other: object) -> object:
        if _number(other):
            return other**0  # type: ignore[operator]
        return NotImplemented

    def __abs__(self) -> int:
        return 0

    def __round__(self, ndigits: int | None = None) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        if _number(other):
            return other == 0
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__

    def _compare(self, other: object) -> tuple[object, object]:
        return (0, other) if _number(other) else ("", other)

    def __lt__(self, other: object) -> bool:
        mine, theirs = self._compare(other)
        return mine < theirs  # type: ignore[operator,no-any-return]

    def __le__(self, other: object) -> bool:
        mine, theirs = self._compare(other)
        return mine <= theirs  # type: ignore[operator,no-any-return]

    def __gt__(self, other: object) -> bool:
        mine, theirs = self._compare(other)
        return mine > theirs  # type: ignore[operator,no-any-return]

    def __ge__(self, other: object) -> bool:
        mine, theirs = self._compare(other)
        return mine >= theirs  # type: ignore[operator,no-any-return]

    def __reduce__(self) -> str:
        return "undef"  # pickles as this module's global: one object stays one

    def __copy__(self) -> Undef:
        return self

    def __deepcopy__(self, memo: object) -> Undef:
        return self


#: Perl's undef: ``""`` in a string, 0 as a number, false; ``x is undef`` tests for it.
undef = Undef()


def defined(value: object) -> bool:
    """Perl's ``defined``: False for :data:`undef` and ``None``, True for anything else."""
    return value is not undef and value is not None
