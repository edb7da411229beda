"""Perl's arrays and hashes as a port reads them: ``elem``, ``PerlList``, ``PerlHash``, ``pop`` ...

* ``elem(array, index)`` is ``$array[$index]``: the index is Perl's number of
  whatever it is given (a form value ``"3abc"`` is 3, ``"-1"`` the last element,
  ``1.7`` is 1, ``"abc"`` is 0), negative counts from the end, and past either
  end reads as ``undef``.  ``PerlList`` (what ``readlines``, ``stat`` and
  ``lstat`` return) indexes the same way with ``[]``; assigning past its end
  grows it with ``undef``, before its start raises IndexError (Perl dies).
* ``PerlHash`` is a ``dict`` whose missing key reads as ``undef`` (without
  adding it, as Perl's rvalue ``$h{$k}``); a number key finds the entry stored
  under its Perl string (``h[1]`` finds ``"1"``).  ``hval(hash, key)`` does the
  same on any dict.
* ``pop(array)`` and ``shift(array)`` remove and return the last or first
  element, ``undef`` from an empty list; ``push(array, *items)`` and
  ``unshift(array, *items)`` return the new length, as in Perl.

Imports only ``perl.undef`` and, on first use, ``perl.text`` (a string's number).
"""

from __future__ import annotations

from .undef import undef

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, MutableSequence, Sequence


def perl_index(index: object) -> int:
    """Perl's array index for *index*: its number, truncated toward zero."""
    if type(index) is int:
        return index
    from .text import num

    value = num(index)
    if isinstance(value, float):
        if value != value:
            return 0
        if value in (float("inf"), float("-inf")):
            return 2**63 if value > 0 else -(2**63)  # past either end
        return int(value)
    return value


def elem(array: Sequence[object], index: object) -> object:
    """Perl's ``$array[$index]``: the element, or ``undef`` past either end."""
    position = perl_index(index)
    size = len(array)
    if position < 0:
        position += size
    if 0 <= position < size:
        return array[position]
    return undef


class PerlList(list):  # type: ignore[type-arg]
    """A list that reads like a Perl array: ``[i]`` takes Perl's index, past the end is undef.

    ``stat(missing)`` is an empty ``PerlList``: false, equal to ``[]``, and
    ``stat(missing)[9]`` is ``undef``, as ``(stat $f)[9]`` is in Perl.
    """

    __slots__ = ()

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        if type(index) is slice:
            return PerlList(list.__getitem__(self, index))
        try:
            return list.__getitem__(self, index)
        except IndexError:
            return undef
        except TypeError:  # "3abc", 1.5, None: Perl's number of it
            return elem(self, index)

    def __setitem__(self, index, value):  # type: ignore[no-untyped-def]
        """``$array[$index] = $value``: past the end grows the list with ``undef``, as Perl.

        An index before the start raises IndexError with Perl's message.
        """
        if type(index) is slice:
            list.__setitem__(self, index, value)
            return
        position = perl_index(index)
        size = len(self)
        if position < -size:
            raise IndexError(
                f"Modification of non-creatable array value attempted, subscript {position}"
            )
        if position >= size:
            self.extend([undef] * (position - size + 1))
        list.__setitem__(self, position, value)


def _key_text(number: float) -> str:
    """The string Perl makes of a number used as a hash key (``1.0`` -> ``"1"``)."""
    if isinstance(number, int) or (number.is_integer() and abs(number) < 1e15):
        return str(int(number))
    if number != number:
        return "NaN"
    if number in (float("inf"), float("-inf")):
        return "Inf" if number > 0 else "-Inf"
    return format(number, ".15g")


def hval(hash_: Mapping[object, object], key: object) -> object:
    """Perl's rvalue ``$hash{$key}``: the value, or ``undef`` (the key is not added)."""
    try:
        return hash_[key]
    except KeyError:
        pass
    if isinstance(key, (int, float)) and not isinstance(key, bool):
        text = _key_text(key)
        if text in hash_:
            return hash_[text]
    return undef


class PerlHash(dict):  # type: ignore[type-arg]
    """A dict whose missing keys read as ``undef``, as Perl's ``$h{$k}`` (never added)."""

    __slots__ = ()

    def __missing__(self, key: object) -> object:
        if isinstance(key, (int, float)) and not isinstance(key, bool):
            text = _key_text(key)
            if text in self:
                return dict.__getitem__(self, text)
        return undef


def pop(array: MutableSequence[object]) -> object:
    """Perl's ``pop``: remove and return the last element; ``undef`` if it is empty."""
    return array.pop() if array else undef


def shift(array: MutableSequence[object]) -> object:
    """Perl's ``shift``: remove and return the first element; ``undef`` if it is empty."""
    return array.pop(0) if array else undef


def push(array: MutableSequence[object], *items: object) -> int:
    """Perl's ``push``: append *items*; return the new number of elements."""
    array.extend(items)
    return len(array)


def unshift(array: MutableSequence[object], *items: object) -> int:
    """Perl's ``unshift``: put *items* in front, in order; return the new number of elements."""
    array[0:0] = items
    return len(array)
