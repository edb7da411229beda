"""Perl's functions on bytes, ``pack("C")``, ``tr///`` and the CGI URL encoder as perlcompat calls.

``substr``, ``ord``, ``chr``, ``index``, ``rindex`` and ``tr`` count and cut Perl's bytes
(perlcompat's ``substr``/``tr``, or ``as_bytes(...)`` around Python's own): a port reads
the same bytes as text (UTF-8, ``surrogateescape``), where Python counts characters.
"""

from __future__ import annotations

import re

from .core import Core
from .exprs import bare, par, py_str
from .syntax import E, Unsupported

BYTES = {"substr", "ord", "chr", "index", "rindex"}


def _tr_list(text: str) -> str:
    """A ``tr`` list as a Python literal of Perl's source text (bytes when not ASCII)."""
    if not text.isascii():
        return repr(text.encode("utf-8", "surrogateescape"))
    if "\\" in text and '"' not in text and not text.endswith("\\") and text.isprintable():
        return 'r"' + text + '"'
    return py_str(text)


URL_ENCODE = re.compile(
    r"""sprintf\(\s*(["'])%%%02([xX])\1\s*,\s*(?:unpack\(\s*(["'])C\3\s*,\s*\$1\s*\)"""
    r"""|ord\(\s*\$1\s*\))\s*\)|(["'])%\4\s*\.\s*unpack\(\s*(["'])H2\5\s*,\s*\$1\s*\)"""
)


def url_encoder(match: str, repl: str) -> str | None:
    r"""``s/(\W)/sprintf("%%%02X", unpack("C", $1))/eg`` and kin: the hex format, or None."""
    m = URL_ENCODE.fullmatch(repl.strip())
    if (
        not m
        or '"' in match
        or not re.fullmatch(r"\((?:\\[Ww]|\[\^?[\x20-\x5c\x5e-\x7e]*\])\)", match)
    ):
        return None
    return "%%%02X" if m[2] == "X" else "%%%02x"


class Bytes(Core):
    """The bytes part of the translator (mixed into :class:`.stmts.Translator`)."""

    def intx(self, e: E) -> str:
        """*e* as a Python int (Perl's integer argument: the number's integer part)."""
        code, kind = self.numx(e)
        return code if kind == "num" else f"int({code})"

    def pack(self, args: list[E]) -> str:
        """``pack("C", n)``, ``pack("CCC", a, b, c)``, ``pack("C4", ...)``: bytes, each wrapped
        to 0..255 as Perl's ``C`` wraps it."""
        fmt = args[0] if args else None
        parts = self.concat_parts(fmt) if fmt is not None and fmt.k == "str" else []
        if fmt is None or not parts or any(kind != "lit" for _, kind in parts):
            raise Unsupported("pack with a computed template")
        text = "".join(code for code, _ in parts)
        m = re.fullmatch(r"(C+)|C(\d+)", text.replace(" ", ""))
        values = args[1:]
        count = len(m[1]) if m and m[1] else int(m[2]) if m else -1
        if count != len(values) or any(self.listy(v) for v in values):
            raise Unsupported(f"pack with the template {text!r}")
        items = ", ".join(f"{par(self.intx(v))} & 255" for v in values)
        return f"{self.use('from_bytes')}(bytes([{items}]))"

    def listy(self, e: E) -> bool:
        """*e* gives a list in list context (an array, a split, a readline ...)."""
        return (
            (e.k == "var" and e.a[0] in ("@", "%"))
            or e.k in ("readline", "qw", "blockop", "qx", "comma")
            or (e.k == "func" and e.a[0] in ("split", "keys", "values", "localtime", "sort"))
        )

    def bytes_func(self, name: str, args: list[E]) -> tuple[str, str]:
        """``substr``, ``ord``, ``chr``, ``index``, ``rindex`` on Perl's bytes."""
        if name == "substr":
            if len(args) not in (2, 3):
                raise Unsupported("substr with a replacement inside an expression")
            nums = ", ".join(self.intx(a) for a in args[1:])
            # perlcompat's substr gives None outside the string; Perl's undef prints as ""
            return (
                f"({self.use('substr')}({self.strx(args[0])}, {nums}) or {self.use('undef')})",
                "str",
            )
        if name == "ord":
            subject = self.strx(args[0]) if args else self.topic()
            return f'({self.use("as_bytes")}({bare(subject)}) or b"\\0")[0]', "num"
        if name == "chr":
            if len(args) != 1:
                raise Unsupported("chr without an argument")
            return f"{self.use('from_bytes')}(bytes([{self.intx(args[0])}]))", "str"
        if len(args) == 3 and name == "index":
            needle = args[1]
            if needle.k not in ("str", "lit") or not self.strx(needle).strip("\"'"):
                raise Unsupported("index from a position, of a string that may be empty")
            start = f", max({self.intx(args[2])}, 0)"
        elif len(args) == 2:
            start = ""
        else:
            raise Unsupported(f"{name} with {len(args)} arguments")
        b = self.use("as_bytes")
        find = "find" if name == "index" else "rfind"
        hay, sought = bare(self.strx(args[0])), bare(self.strx(args[1]))
        return f"{b}({hay}).{find}({b}({sought}){start})", "num"

    def tr(self, subject: str, search: str, replace: str, flags: str) -> str:
        """``tr/a/b/flags`` as perlcompat's ``tr`` call: Perl's bytes, ``(new_string, count)``."""
        if set(flags) - set("cdsr"):
            raise Unsupported(f"tr/// with /{flags}")
        extra = f", {py_str(flags)}" if flags.replace("r", "") else ""
        lists = f"{_tr_list(search)}, {_tr_list(replace)}"
        return f"{self.use('tr')}({subject}, {lists}{extra})"
