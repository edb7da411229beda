"""Text from files and lock names made safe to print on a terminal, as GNU ``ls`` prints names.

A lock name, a file name or a Perl string may hold a newline (a fake row in a
table) or an escape sequence (``ESC[1A ESC[2K`` erases the row above,
``ESC[8m`` hides what follows, ``ESC]0;`` sets the window title).  :func:`quote`
leaves text without such characters as it is and otherwise prints it in GNU
``ls``'s default quoting on a terminal (``--quoting-style=shell-escape``):
``'a'$'\\n''b'``, which a shell reads back as the same text (in a message,
only the control characters: ``log$'\\033']0;x``).  Quoted: C0
controls, DEL, C1 controls, the Unicode line and paragraph separators, the bidi
embeddings, overrides and isolates (which reorder what follows), and bytes that
were not UTF-8 (surrogate escapes).  Imports nothing.
"""

from __future__ import annotations

_NAMED = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r"}


def _special(code: int) -> bool:
    return (
        code < 0x20
        or 0x7F <= code < 0xA0
        or code in (0x2028, 0x2029, 0x200E, 0x200F)
        or 0x202A <= code <= 0x202E
        or 0x2066 <= code <= 0x2069
        or 0xDC80 <= code <= 0xDCFF
    )


def _escaped(char: str) -> str:
    code = ord(char)
    if code in _NAMED:
        return _NAMED[code]
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte, kept by surrogateescape
        return f"\\{code - 0xDC00:03o}"
    return "".join(f"\\{byte:03o}" for byte in char.encode("utf-8"))


def quote(text: str, sentence: bool = False) -> str:
    """*text* as is, or, if it holds a control character, in ``ls``'s shell-escape quoting.

    With *sentence* (a message that quotes a name or Perl text), only the runs of
    control characters are written ``$'\033'``; the rest stays unquoted.
    """
    if not any(_special(ord(char)) for char in text):
        return text
    out: list[str] = []
    plain: list[str] = []
    special: list[str] = []

    def flush_plain() -> None:
        if plain and sentence:
            out.append("".join(plain))
        elif plain:
            out.append("'" + "".join(plain).replace("'", "'\\''") + "'")
        plain.clear()

    def flush_special() -> None:
        if special:
            out.append("$'" + "".join(special) + "'")
            special.clear()

    for char in text:
        if _special(ord(char)):
            flush_plain()
            special.append(_escaped(char))
        else:
            flush_special()
            plain.append(char)
    flush_plain()
    flush_special()
    return "".join(out)
